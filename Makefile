# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
# Each creates .venv when missing and installs the package with its test group.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: demo test lint bench sysdeps clean

# pywb, the replay system the tests replay collections in (tests/pywb.py), pins old
# dependencies: it gets a virtual environment of its own.
PYWB := .pywb/bin/wayback
$(PYWB):
	test -x .pywb/bin/python || $(PY) -m venv .pywb
	.pywb/bin/python -m pip install --quiet 'pywb>=2.8'

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	touch $(STAMP)

# System tools the tests drive for real: wget as a peer client, chromium as a browser, nginx
# serving a static site, PostgreSQL (initdb, pg_ctl) for the throwaway clusters of the
# postgresql:// state's tests (tests/pgcluster.py), Apache with mod_wsgi and
# systemd-analyze for the provider's deployments (tests/test_provider_deploy.py); file
# (libmagic), ExifTool, pdfinfo and mediainfo, the provider's built-in plugins
# (server_module/plugins/builtins.py).
PGBIN := $(lastword $(sort $(wildcard /usr/lib/postgresql/*/bin)))
sysdeps:
	@command -v wget >/dev/null || { apt-get update -qq && apt-get install -y -qq wget; }
	@command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium; }
	@command -v nginx >/dev/null || test -x /usr/sbin/nginx || \
		{ apt-get update -qq && apt-get install -y -qq nginx-light; }
	@command -v initdb >/dev/null || test -x "$(PGBIN)/initdb" || \
		{ apt-get update -qq && apt-get install -y -qq postgresql; }
	@test -e /usr/lib/apache2/modules/mod_wsgi.so || \
		{ apt-get update -qq && apt-get install -y -qq apache2 libapache2-mod-wsgi-py3; }
	@command -v systemd-analyze >/dev/null || { apt-get update -qq && apt-get install -y -qq systemd; }
	@command -v file >/dev/null || { apt-get update -qq && apt-get install -y -qq file; }
	@command -v exiftool >/dev/null || \
		{ apt-get update -qq && apt-get install -y -qq libimage-exiftool-perl; }
	@command -v pdfinfo >/dev/null || { apt-get update -qq && apt-get install -y -qq poppler-utils; }
	@command -v mediainfo >/dev/null || { apt-get update -qq && apt-get install -y -qq mediainfo; }

demo: $(STAMP)
	$(BIN)/harvester demo --out demo-out

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: $(STAMP) $(PYWB) sysdeps lint
	$(BIN)/python -m pytest -q

bench: $(STAMP) sysdeps
	$(BIN)/python -m bench $(NAME)

clean:
	rm -rf $(VENV) .pywb demo-out bench/out
