"""The deployments docs/provider.md describes, run for real from the files it includes
(``deploy/``): nginx serving the files and proxying to ``oai-provider serve`` as the systemd
unit starts it, Apache httpd with mod_wsgi (Debian's packages), the systemd units checked by
``systemd-analyze verify`` and the ResourceSync timer's command run. Through each server:
every verb schema-valid, a list resumed to its end, and a harvest that archives every file.

Each server runs unprivileged (as ``nobody`` when the tests run as root) on a free loopback
port, from a temporary folder; the shipped files' example paths, URL and ports are replaced
by that folder's, nothing else.
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
import requests
from lxml import etree
from sickle import Sickle

from bench.crawl import nginx_binary
from tests.conftest import OAI, OAIClient
from tests.servers import HOST, RunningServer, free_port, wait_until_answers
from tests.sites import Manifest, make_site

REPO = Path(__file__).resolve().parent.parent
DEPLOY = REPO / "deploy"
DOCS = REPO / "docs" / "provider.md"
VENV = Path(sys.prefix)
APACHE = "/usr/sbin/apache2"  # `make sysdeps` installs apache2 and libapache2-mod-wsgi-py3
APACHE_MODULES = "/usr/lib/apache2/modules"
SHIPPED = [
    "provider.toml",
    "nginx.conf",
    "apache.conf",
    "provider.wsgi",
    "oai-provider.service",
    "oai-provider-resourcesync.service",
    "oai-provider-resourcesync.timer",
]


@dataclass
class Place:
    """A temporary deployment: its folder, site and ports, and the user its servers run as."""

    folder: Path
    site: Manifest
    port: int  # the public web server's
    app_port: int  # the provider's, behind it
    user: pwd.struct_passwd

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def shipped(self, name: str) -> str:
        """A file of deploy/, its example values replaced by this place's."""
        text = (DEPLOY / name).read_text()
        for example, here in (
            ("/var/www/site", str(self.site.root)),
            ("https://www.example.org", self.base_url),
            ("/var/lib/oai-provider", str(self.folder / "state")),
            ("/etc/oai-provider", str(self.folder / "etc")),
            ("/opt/coop-archive/.venv", str(VENV)),
            ("/opt/coop-archive", str(REPO)),
            ("127.0.0.1:8080", f"{HOST}:{self.app_port}"),
            ("port = 8080", f"port = {self.app_port}"),
            ("listen 80;", f"listen {HOST}:{self.port};"),
            ("*:80>", f"{HOST}:{self.port}>"),
        ):
            text = text.replace(example, here)
        return text

    def write(self, name: str, text: str) -> Path:
        path = self.folder / "etc" / name
        path.write_text(text)
        os.chown(path, self.user.pw_uid, self.user.pw_gid)
        return path

    def run_as(self, argv: list[str]) -> list[str]:
        if os.geteuid() != 0:
            return argv
        ids = [f"--reuid={self.user.pw_uid}", f"--regid={self.user.pw_gid}", "--clear-groups"]
        return ["setpriv", *ids, *argv]


@pytest.fixture
def place() -> Iterator[Place]:
    """A folder the service user owns, readable by every user (as /var/www is)."""
    user = pwd.getpwnam("nobody") if os.geteuid() == 0 else pwd.getpwuid(os.geteuid())
    folder = Path(tempfile.mkdtemp(prefix="deploy-"))
    try:
        site = make_site(folder / "www", pages=20, seed=11)
        for sub in ("etc", "state", "logs"):
            (folder / sub).mkdir()
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
            os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)
        yield Place(folder, site, free_port(), free_port(), user)
    finally:
        shutil.rmtree(folder)


def started(
    argv: list[str], url: str, log: Path, env: dict[str, str] | None = None
) -> RunningServer:
    with log.open("ab") as err:
        process = subprocess.Popen(
            argv,
            cwd="/",
            env={**os.environ, **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    server = RunningServer(process, HOST, 0)
    try:
        wait_until_answers(url, process, 60)
    except Exception:
        server.stop()
        raise RuntimeError(log.read_text()[-3000:]) from None
    return server


def exec_start(unit: str) -> list[str]:
    (line,) = [x for x in unit.splitlines() if x.startswith("ExecStart=")]
    return shlex.split(line.removeprefix("ExecStart="))


# -- what every deployment must pass ----------------------------------------------------


def check_provider(base_url: str, site: Manifest, out: Path) -> None:
    """Every verb schema-valid, a list resumed to its end, and a harvest of every file."""
    oai = OAIClient(SimpleNamespace(url=base_url))  # type: ignore[arg-type]
    assert oai.get(verb="Identify").findtext(f".//{OAI}baseURL") == base_url + "/oai"
    assert_schemas_served(oai.get(verb="ListMetadataFormats"), base_url)
    assert oai.get(verb="ListSets").findall(f".//{OAI}setSpec")
    root = oai.get(verb="ListIdentifiers", metadataPrefix="oai_dc")
    listed = [h.text for h in root.iter(f"{OAI}identifier")]
    for _ in range(len(site.public)):  # bounded: a page holds an item at least
        token = root.findtext(f".//{OAI}resumptionToken")
        if not token:
            break
        root = oai.get(verb="ListIdentifiers", resumptionToken=token)
        listed += [h.text for h in root.iter(f"{OAI}identifier")]
    assert len(listed) == len(set(listed)) == len(site.public)
    for prefix in ("oai_dc", "http_header", "oai_didl"):
        assert oai.get(verb="ListRecords", metadataPrefix=prefix).findall(f".//{OAI}record")
        got = oai.get(verb="GetRecord", identifier=listed[0], metadataPrefix=prefix)
        assert got.findtext(f".//{OAI}identifier") == listed[0]
    assert oai.error_code(verb="GetRecord", identifier="x", metadataPrefix="oai_dc") == (
        "idDoesNotExist"
    )
    assert {h.identifier for h in Sickle(base_url + "/oai").ListIdentifiers(
        metadataPrefix="oai_dc")} == set(listed)  # fmt: skip
    harvested = subprocess.run(
        [str(VENV / "bin" / "harvester"), "harvest", base_url, "--out", str(out), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert harvested.returncode == 0, harvested.stderr[-3000:]
    summary = harvested.stdout
    assert re.search(rf'"fetched": {len(site.public)}\b', summary), summary
    assert re.search(r'"failed": 0\b', summary), summary
    verified = subprocess.run(
        [str(VENV / "bin" / "harvester"), "verify", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr


def assert_schemas_served(formats: etree._Element, base_url: str) -> None:
    """Each format's schema of this project's own (``http_header``) is served at the URL
    ListMetadataFormats gives, through the deployment, and is the schema of its namespace."""
    listed = formats.findall(f".//{OAI}metadataFormat")
    assert {f.findtext(f"{OAI}metadataPrefix") for f in listed} >= {"oai_dc", "http_header"}
    own = [f for f in listed if (f.findtext(f"{OAI}schema") or "").startswith(base_url)]
    assert [f.findtext(f"{OAI}metadataPrefix") for f in own] == ["http_header"]
    for fmt in own:
        answer = requests.get(fmt.findtext(f"{OAI}schema") or "", timeout=30)
        assert answer.status_code == 200, answer.url
        schema = etree.fromstring(answer.content)
        assert schema.get("targetNamespace") == fmt.findtext(f"{OAI}metadataNamespace")


# -- nginx in front of `oai-provider serve` ---------------------------------------------

NGINX_MAIN = """pid {folder}/logs/nginx.pid;
error_log {folder}/logs/nginx-error.log;
events {{ worker_connections 64; }}
http {{
    include /etc/nginx/mime.types;
    access_log {folder}/logs/nginx-access.log;
    client_body_temp_path {folder}/state/body;
    proxy_temp_path {folder}/state/proxy;
    fastcgi_temp_path {folder}/state/fastcgi;
    uwsgi_temp_path {folder}/state/uwsgi;
    scgi_temp_path {folder}/state/scgi;
    include {site};
}}
"""


def test_nginx_serves_the_files_and_proxies_to_the_unit_s_provider(
    place: Place, tmp_path: Path
) -> None:
    place.write("provider.toml", place.shipped("provider.toml"))
    unit = place.shipped("oai-provider.service")
    site = place.write("nginx-site.conf", place.shipped("nginx.conf"))
    main = place.write("nginx.conf", NGINX_MAIN.format(folder=place.folder, site=site))
    provider_url = f"http://{HOST}:{place.app_port}"
    logs = place.folder / "logs"
    nginx = [nginx_binary(), "-p", str(place.folder), "-c", str(main), "-g", "daemon off;"]
    with (
        started(place.run_as(exec_start(unit)), provider_url + "/oai", logs / "provider.log"),
        started(place.run_as(nginx), place.base_url + "/index.html", logs / "nginx.log"),
    ):
        check_provider(place.base_url, place.site, tmp_path / "collection")
        for path in ("/.well-known/resourcesync", "/capabilitylist.xml", "/resourcelist.xml"):
            assert_answers(place.base_url + path, "<urlset")
    access = (logs / "nginx-access.log").read_text()
    assert '"GET /oai?verb=ListIdentifiers' in access


def assert_answers(url: str, needle: str) -> None:
    answer = requests.get(url, timeout=30)
    assert answer.status_code == 200 and needle in answer.text, url


# -- Apache httpd with mod_wsgi ---------------------------------------------------------

APACHE_MAIN = """ServerRoot {folder}
PidFile {folder}/logs/apache.pid
ErrorLog {folder}/logs/apache-error.log
LogFormat "%h %l %u %t \\"%r\\" %>s %b" common
CustomLog {folder}/logs/apache-access.log common
LoadModule mpm_event_module {modules}/mod_mpm_event.so
LoadModule authz_core_module {modules}/mod_authz_core.so
LoadModule mime_module {modules}/mod_mime.so
LoadModule dir_module {modules}/mod_dir.so
LoadModule alias_module {modules}/mod_alias.so
LoadModule wsgi_module {modules}/mod_wsgi.so
TypesConfig /etc/mime.types
DirectoryIndex index.html
WSGISocketPrefix {folder}/state/wsgi
Listen {host}:{port}
Include {site}
"""


def test_apache_serves_the_files_and_mod_wsgi_the_provider(place: Place, tmp_path: Path) -> None:
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert Path(f"{APACHE_MODULES}/mod_wsgi.so-{version}").exists(), (
        "mod_wsgi embeds another Python"
    )
    config = place.write("provider.toml", place.shipped("provider.toml"))
    site = place.write("apache-site.conf", place.shipped("apache.conf"))
    main = place.write(
        "apache2.conf",
        APACHE_MAIN.format(
            folder=place.folder, modules=APACHE_MODULES, host=HOST, port=place.port, site=site
        ),
    )
    argv = place.run_as([APACHE, "-f", str(main), "-DFOREGROUND"])
    env = {"OAI_PROVIDER_CONFIG": str(config)}
    log = place.folder / "logs" / "apache.log"
    with started(argv, place.base_url + "/index.html", log, env):
        check_provider(place.base_url, place.site, tmp_path / "collection")
        for path in ("/.well-known/resourcesync", "/capabilitylist.xml", "/resourcelist.xml"):
            assert_answers(place.base_url + path, "<urlset")
    access = (place.folder / "logs" / "apache-access.log").read_text()
    assert '"GET /oai?verb=ListIdentifiers' in access


# -- the systemd units ------------------------------------------------------------------


def test_the_units_pass_systemd_analyze_verify(place: Place) -> None:
    folder = place.folder / "units"
    folder.mkdir()
    names = ["oai-provider.service", "oai-provider-resourcesync.service"]
    names.append("oai-provider-resourcesync.timer")
    for name in names:
        text = place.shipped(name).replace("User=oai-provider", "User=nobody")
        (folder / name).write_text(text.replace("Group=oai-provider", "Group=nogroup"))
    done = subprocess.run(
        ["systemd-analyze", "verify", *(str(folder / n) for n in names)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_the_resourcesync_unit_s_command_writes_the_documents(place: Place) -> None:
    argv = exec_start(place.shipped("oai-provider-resourcesync.service"))
    done = subprocess.run(
        place.run_as(argv), capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    root = place.site.root
    assert (root / ".well-known" / "resourcesync").is_file()
    assert (root / "resourcelist.xml").is_file()
    assert (place.folder / "state" / "resourcesync").is_dir()


# -- the documentation ------------------------------------------------------------------


@pytest.mark.parametrize("name", SHIPPED)
def test_docs_include_each_shipped_file_verbatim(name: str) -> None:
    docs = DOCS.read_text()
    text = (DEPLOY / name).read_text()
    assert f"deploy/{name}" in docs
    assert text.strip() in docs, f"docs/provider.md does not hold deploy/{name} as it is"
