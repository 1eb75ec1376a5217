"""What a collection holds and how its harvests went: ``harvester status DIR...``.

Per folder: resources by state status (``archived``, ``pending``, ``failed``…), failures by
reason, the WARC files and their bytes, the last runs from the run log (``runlog.py``), and
per site its endpoint (or ``crawl``) with each list's incremental bound; a records
repository's items by status (``records_archived``, ``records_deleted``…). ``unchanged`` is a
count of the last run (a revisit is archived as far as the state is concerned; in records
mode, the records listed again as they were, too). Several
folders (one job spread over several, as scale-out makes them) add up to a ``total``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from harvester.collection.folder import Collection
from harvester.storage import open_state
from harvester.storage.protocol import State

LAST_RUNS = 5
_PASSWORD = re.compile(r"^(\w+://[^:/@]+):[^@/]*@")
_URL = re.compile(r"\w+://\S+?(?=:?(?:\s|$))")


def status(folders: Sequence[Path], state_url: str | None = None) -> dict[str, Any]:
    """The status of each collection folder and their total; with ``state_url`` (a job's
    shared state, or one kept outside its folder) the resources are that state's, read once,
    with each worker's captures, and the folders give the WARC files and runs."""
    shared = state_url is not None
    collections = [folder_status(Collection.at(folder), not shared) for folder in folders]
    total: Counter[str] = Counter()
    for one in collections:
        total.update(one["resources"])
        total.update({"warc_files": one["warcs"]["files"], "warc_bytes": one["warcs"]["bytes"]})
    result: dict[str, Any] = {"collections": collections}
    if state_url is not None:
        result["job"] = job_status(state_url)
        total.update(result["job"]["resources"])
    result["total"] = dict(sorted(total.items()))
    return result


def job_status(state_url: str) -> dict[str, Any]:
    """What a state holds, whichever folders its workers wrote into."""
    shown = _PASSWORD.sub(r"\1:***@", state_url)  # never print a password
    job: dict[str, Any] = {"state": shown, "resources": {}, "failures": {}, "sites": []}
    with open_state(state_url) as state:
        _read_state(state, job)
        job["workers"] = {
            site["site"]: state.captures_by_worker(site["site"]) for site in job["sites"]
        }
    return job


def folder_status(collection: Collection, read_state: bool = True) -> dict[str, Any]:
    warcs = collection.warcs()
    runs = collection.runs.runs()
    result: dict[str, Any] = {
        "folder": str(collection.folder),
        "resources": {},
        "failures": {},
        "sites": [],
        "warcs": {
            "files": len(warcs),
            "bytes": sum(p.stat().st_size for p in warcs),
            "open": len(collection.open_warcs()),
        },
        "runs": [asdict(run) for run in runs[-LAST_RUNS:]],
    }
    if read_state:
        with collection.state() as state:
            if state is not None:
                _read_state(state, result)
    last = runs[-1].counts if runs else {}
    unchanged = int(last.get("unchanged", 0)) + int(last.get("unchanged_records", 0))
    result["resources"]["unchanged_last_run"] = unchanged
    return result


def _read_state(state: State, result: dict[str, Any]) -> None:
    resources: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    by_status: dict[str, Counter[str]] = {}
    for site in state.sites():
        counts = state.counts(site)
        resources.update(counts)
        for status, http_status, error in state.failures(site):
            cause = reason(status, http_status, error)
            failures[cause] += 1
            by_status.setdefault(status, Counter())[cause] += 1
        source = state.source(site)
        endpoint = source.endpoint if source else None
        if endpoint is not None:  # a records repository's items, by their status
            resources.update({f"records_{k}": n for k, n in state.items.counts(endpoint).items()})
        result["sites"].append(
            {"site": site, "endpoint": endpoint, "mode": "oai" if endpoint else "crawl"}
        )
    for entry in result["sites"]:
        entry["lists"] = _lists(state, entry["endpoint"])
    result["resources"] = dict(sorted(resources.items()))
    result["failures"] = dict(failures.most_common())
    result["failures_by_status"] = {k: dict(c.most_common()) for k, c in sorted(by_status.items())}


def _lists(state: State, endpoint: str | None) -> list[dict[str, Any]]:
    lists = []
    for key in state.lists.known():
        if key.endpoint != endpoint:
            continue
        pos = state.lists.position(key)
        lists.append(
            {
                "set": key.set_spec or "",
                "prefix": key.prefix,
                "from": pos.harvested_until,
                "state": pos.state,
            }
        )
    return lists


def reason(status: str, http_status: int | None, error: str | None) -> str:
    """A failure's reason, shared by every resource that failed the same way.

    >>> reason("failed", 404, "HTTP 404 Not Found")
    'HTTP 404'
    >>> reason("abandoned", None, "cannot reach http://h/x: Connection refused")
    'cannot reach URL: Connection refused'
    >>> reason("gone", 410, None)
    'HTTP 410'
    """
    if http_status:
        return f"HTTP {http_status}"
    return _URL.sub("URL", error or status).strip()[:120]


def render(report: dict[str, Any]) -> str:
    """The status as lines for people; :func:`status`'s dict is the ``--json`` form."""
    lines: list[str] = []
    for one in report["collections"]:
        lines += _render_one(one)
    if "job" in report:
        job = report["job"]
        lines.append(f"job {job['state']}: " + _pairs(job["resources"]))
        lines += _failure_lines(job)
        for site, workers in job["workers"].items():
            lines.append(f"  site {site}: " + _pairs({w or "-": n for w, n in workers.items()}))
    if len(report["collections"]) > 1 or "job" in report:
        lines.append("total: " + _pairs(report["total"]))
    return "\n".join(lines)


def _render_one(one: dict[str, Any]) -> list[str]:
    warcs = one["warcs"]
    lines = [
        f"{one['folder']}: " + _pairs(one["resources"]),
        f"  warcs: {warcs['files']} files, {warcs['bytes']} bytes"
        + (f", {warcs['open']} open" if warcs["open"] else ""),
    ]
    lines += _failure_lines(one)
    for site in one["sites"]:
        lines.append(f"  site {site['site']}: {site['endpoint'] or 'crawl'}")
        for item in site["lists"]:
            what = f"set {item['set']}" if item["set"] else "all sets"
            lines.append(f"    list {what} ({item['prefix']}): from {item['from'] or '-'}")
    for run in one["runs"]:
        counts = run["counts"]
        records = counts.get("mode") == "records"  # an auto run that turned to records mode
        keys = _RECORDS_RUN_KEYS if records else _KEYS_OF.get(run["mode"], _RUN_KEYS)
        done = _pairs({k: counts[k] for k in keys if k in counts}) or "unfinished"
        if run.get("interrupted"):
            done = "interrupted (killed; repaired since)"
        elif run.get("exit") is not None:
            done += f" exit={run['exit']}"
        lines.append(f"  run {run['start']} .. {run['end'] or '?'} {run['mode']}: {done}")
    return lines


_RUN_KEYS = ("listed", "fetched", "unchanged", "deleted", "failed", "gone", "bytes")
_CRAWL_RUN_KEYS = tuple(key for key in _RUN_KEYS if key != "listed")  # a crawl lists nothing
_RECORDS_RUN_KEYS = ("records", "unchanged_records", "deleted", "broken", "lists_failed")
_KEYS_OF = {"crawl": _CRAWL_RUN_KEYS, "oai-records": _RECORDS_RUN_KEYS}


def _failure_lines(found: dict[str, Any]) -> list[str]:
    """``failed``, ``gone`` and ``abandoned`` resources by reason (harvester/failures.py)."""
    by_status = found.get("failures_by_status", {})
    return [f"  {s} {n}: {cause}" for s, causes in by_status.items() for cause, n in causes.items()]


def _pairs(values: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in values.items())
