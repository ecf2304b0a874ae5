# Two commands on a fresh machine: `make demo` (main job on the embedded default data) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
BENCH  := $(VENV)/bin/bench
STAMP  := $(VENV)/.installed

.PHONY: setup demo test test-fast bench lint clean

setup: $(STAMP)

# torch is installed first and pinned to the local CPU build so the range in pyproject never pulls CUDA.
$(STAMP): pyproject.toml
	bash scripts/install-system-deps.sh
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "torch==2.13.0"
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

# The demo writes to .cache/demo so that results/ keeps only the committed evidence of real runs.
DEMO := .cache/demo
demo: setup
	$(BENCH) validate
	$(BENCH) data build
	$(BENCH) run --system copy_source --task squad_qg --budget smoke --results-dir $(DEMO)/results
	$(BENCH) run --system copy_source --task quora --budget smoke --results-dir $(DEMO)/results
	$(BENCH) run --system lead1 --task xsum --budget smoke --results-dir $(DEMO)/results
	$(BENCH) run --system unilm --task squad_qg --budget smoke --results-dir $(DEMO)/results
	$(BENCH) run --system mist_minilm_l6 --task squad_qg --budget smoke --results-dir $(DEMO)/results
	$(BENCH) table --budget smoke --results-dir $(DEMO)/results --reports-dir $(DEMO)/reports
	@echo "demo reports: $(DEMO)/reports (committed tables from real runs: reports/)"

test: setup
	$(PY) -m pytest -q -n 2 --dist loadfile

test-fast: setup
	$(PY) -m pytest -q -n 2 --dist loadfile -m "not slow"

# Every benchmark prints its figures and its target; all run, then the ones that missed are listed.
bench: setup
	@failed=""; for f in benchmarks/bench_*.py; do echo "== $$f"; $(PY) $$f || failed="$$failed $$f"; done; \
	if [ -n "$$failed" ]; then echo "targets missed by:$$failed"; exit 1; fi

lint: setup
	$(VENV)/bin/ruff check bench systems tests benchmarks

clean:
	rm -rf .cache .pytest_cache .ruff_cache
