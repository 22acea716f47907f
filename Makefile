# Kaleido: every target a newcomer needs. `make help` lists them.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
JOBS   ?= 2
SIM    ?= icarus

.PHONY: help setup test test-fast bench tables clean

help:
	@echo "make setup      create .venv and install the project and every tool it uses"
	@echo "make test       run the whole default test suite (bootstraps .venv on a fresh clone)"
	@echo "make test-fast  golden-model tests only (no simulators)"
	@echo "make bench      benchmarks -> build/bench/*.json (not timed tests)"
	@echo "make tables     regenerate the measured tables in docs/ from the golden model"
	@echo "make clean      remove build/ (generated files)"

$(STAMP): pyproject.toml scripts/setup.sh
	PYTHON=$(PYTHON) bash scripts/setup.sh
	@touch $(STAMP)

setup: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -n $(JOBS) tb

test-fast: $(STAMP)
	$(PY) -m pytest -n $(JOBS) -m "not rtl" tb

bench: $(STAMP)
	$(PY) -m kaleido.bench.golden --out build/bench/golden.json

tables: $(STAMP)
	$(PY) -m kaleido.bench.tables --out docs/GOLDEN_TABLE.md --csv build/tables/golden.csv

clean:
	rm -rf build
