# The two set-up commands a newcomer runs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false

.PHONY: install demo test bench clean

$(STAMP): pyproject.toml tests/plugin/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]' -e tests/plugin
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/python -m prefect_agentenv.demo

test: install
	$(BIN)/python -m pytest -q -p no:cacheprovider

bench: install
	$(BIN)/python benchmarks/engine_overhead.py

clean:
	rm -rf $(VENV) .agentenv reports
