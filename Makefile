# The two set-up commands a newcomer runs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# Genuine third-party peers (the AgentEnv framework's SDKs) pin a2a-sdk 0.3 and mcp 1.x, which
# cannot share a venv with ours; they get their own, and tests start them as separate processes.
PEERS := .venv-peers
PEERS_STAMP := $(PEERS)/.installed-stamp
PEER_PACKAGES := agentenv-framework==0.9.1364 agentenv-framework-protocol==0.1.379
# The genuine Harbor package: its TaskConfig is the reference the Harbor task parser is checked against
# (tests/documents/harbor/test_harbor_peer.py). Harbor needs Python >= 3.12, so it gets a venv of its own,
# made with the first Python 3.12 found (pyenv's, else python3.12 on the PATH); none found: the test skips.
HARBOR_VENV := .venv-harbor
HARBOR_STAMP := $(HARBOR_VENV)/.installed-stamp
HARBOR_PACKAGE := harbor==0.25.0
HARBOR_PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3) $(shell command -v python3.12 2>/dev/null))
# A third-party A2A agent installed as a venv console script, as a user's first agent often is: on a Python
# other than the runner's (pyenv's 3.12 where there is one), so confinement must find that Python by itself.
# Its wheels are kept beside it: the tests build a venv of their own under /tmp from them, offline.
DUMMY_A2A := .dummy-a2a
DUMMY_A2A_STAMP := $(DUMMY_A2A)/.installed-stamp
DUMMY_A2A_PACKAGE := dummy-a2a==0.6.4
DUMMY_A2A_PYTHON ?= $(firstword $(wildcard $(shell pyenv root 2>/dev/null)/versions/3.12*/bin/python3) $(PYTHON))
# The coding-agent harnesses `make test` runs AgentEnv's smoke tasks with, each installed once into a
# folder of its own (`agent install` leaves one that is already there as pinned alone).
HARNESSES := opencode codex pi openhands claude-code
export PREFECT_AGENTENV_HARNESS_DIR ?= $(CURDIR)/.agentenv/harnesses
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false

.PHONY: install install-test peers harbor-peer harnesses demo test browser system-tools docker-install docker-up docker-down \
	screenshots bench clean

# The package alone (what `make demo` runs); the test extras and the test-only step types
# (tests/plugin, registered through the entry-point group) only for `make test`.
TEST_STAMP := $(VENV)/.installed-test-stamp

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $(STAMP)

$(TEST_STAMP): $(STAMP) pyproject.toml tests/plugin/pyproject.toml
	$(BIN)/python -m pip install -q -e '.[test]' -e tests/plugin
	touch $(TEST_STAMP)

$(PEERS_STAMP): Makefile
	$(PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/python -m pip install -q --upgrade pip
	$(PEERS)/bin/python -m pip install -q $(PEER_PACKAGES)
	touch $(PEERS_STAMP)

$(HARBOR_STAMP): Makefile
	@if [ -z "$(HARBOR_PYTHON)" ]; then echo "no Python 3.12 here: the Harbor cross-check tests will skip"; else \
		$(HARBOR_PYTHON) -m venv $(HARBOR_VENV) && $(HARBOR_VENV)/bin/python -m pip install -q --upgrade pip && \
		$(HARBOR_VENV)/bin/python -m pip install -q $(HARBOR_PACKAGE) && touch $(HARBOR_STAMP); fi

$(DUMMY_A2A_STAMP): Makefile
	rm -rf $(DUMMY_A2A)
	$(DUMMY_A2A_PYTHON) -m venv $(DUMMY_A2A)/venv
	$(DUMMY_A2A)/venv/bin/python -m pip install -q $(DUMMY_A2A_PACKAGE)
	$(DUMMY_A2A)/venv/bin/python -m pip download -q -d $(DUMMY_A2A)/wheels $(DUMMY_A2A_PACKAGE)
	touch $(DUMMY_A2A_STAMP)

install: $(STAMP)

install-test: $(TEST_STAMP)

peers: $(PEERS_STAMP) $(DUMMY_A2A_STAMP)

harbor-peer: $(HARBOR_STAMP)

# All at once (~30 s from warm npm and uv caches; OpenCode's grep tool wants Debian's ripgrep).
harnesses: install-test
	$(BIN)/python -m prefect_agentenv.cli agent install $(HARNESSES)

demo: install
	@# The demo's Run form must not offer the test-only step types a `make test` installed here.
	@if $(BIN)/python -m pip show -q agentenv-teststeps 2>/dev/null; then \
		$(BIN)/python -m pip uninstall -q -y agentenv-teststeps && rm -f $(TEST_STAMP); fi
	$(BIN)/python -m prefect_agentenv.demo $(DEMO_ARGS)

# The linter and the type checker run first, beside the harness installs (which mostly wait on the
# registries): a lint or type error fails `make test` before pytest starts.
test: install-test peers harbor-peer
	$(MAKE) --no-print-directory -j3 harnesses lint typecheck
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --durations=15

# The browser tests use the system's Chromium (Playwright never downloads one); without it they
# are skipped and say so. CI runs this before `make test`.
browser:
	command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)

# What the harnesses take from the system: ripgrep for OpenCode's grep tool, tmux for OpenHands'
# terminal. CI runs this before `make test`, as it does `make browser`.
system-tools:
	command -v rg >/dev/null && command -v tmux >/dev/null || (apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ripgrep tmux)

# Image mode's tests (the docker launcher, run_container_unit_tests_verifier) need a docker daemon and
# the local test image; without a daemon they are skipped and say so. CI runs docker-up before
# `make test` and docker-down after it, whatever the tests did (tests/docker/daemon.sh).
docker-install:
	tests/docker/daemon.sh install

# Starts dockerd (no bridge network) unless one answers, then builds the test image unless it is there.
docker-up: docker-install
	tests/docker/daemon.sh start

# Stops the daemon docker-up started, by its PID; one it found running is left alone.
docker-down:
	tests/docker/daemon.sh stop

# The screenshots of docs/reading-results.md, taken by the browser tests.
screenshots: install-test browser
	AGENTENV_SCREENSHOTS=$(CURDIR)/docs/images $(BIN)/python -m pytest -q -p no:cacheprovider tests/viewer/test_browser.py

bench: install
	$(BIN)/python benchmarks/engine_overhead.py

.PHONY: typecheck lint

# The test plugin is checked as a plugin author's checker would check it (--strict), importing
# only prefect_agentenv.plugin: the toolkit's types must carry a plugin through.
typecheck: install-test
	$(BIN)/python -m mypy
	MYPYPATH=tests/plugin $(BIN)/python -m mypy --strict --follow-imports=silent -p agentenv_teststeps

lint: install-test
	$(BIN)/python -m ruff check prefect_agentenv tests benchmarks examples

clean:
	rm -rf $(VENV) $(PEERS) $(HARBOR_VENV) $(DUMMY_A2A) .agentenv reports
