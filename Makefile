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
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false

.PHONY: install peers demo test browser screenshots bench clean

$(STAMP): pyproject.toml tests/plugin/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]' -e tests/plugin
	touch $(STAMP)

$(PEERS_STAMP): Makefile
	$(PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/python -m pip install -q --upgrade pip
	$(PEERS)/bin/python -m pip install -q $(PEER_PACKAGES)
	touch $(PEERS_STAMP)

install: $(STAMP)

peers: $(PEERS_STAMP)

demo: install
	$(BIN)/python -m prefect_agentenv.demo

test: install peers
	$(BIN)/python -m pytest -q -p no:cacheprovider

# The browser tests use the system's Chromium (Playwright never downloads one); without it they
# are skipped and say so. CI runs this before `make test`.
browser:
	command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)

# The screenshots of docs/reading-results.md, taken by the browser tests.
screenshots: install browser
	AGENTENV_SCREENSHOTS=$(CURDIR)/docs/images $(BIN)/python -m pytest -q -p no:cacheprovider tests/viewer/test_browser.py

bench: install
	$(BIN)/python benchmarks/engine_overhead.py

clean:
	rm -rf $(VENV) $(PEERS) .agentenv reports
