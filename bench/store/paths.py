"""Where each kind of JSON lives under a results folder: the layout of ``results/``, in one place.

::

    results/<run_id>.json                                   run records (kind ``run``) and submissions (``external``)
    results/outputs/<run_id>.txt                            the outputs a record scored (text, not JSON)
    results/calibration/<system>--<task>--<budget>.json     calibration summaries (kind ``calibration``) ...
    results/calibration/<run_id>.json                       ... beside their grid points' run records
    results/latency/<latency_id>.json                       latency records (kind ``latency``)
    results/ordering/<paper>-table<N>--<group>--<budget>.json  orderings (kind ``ordering``)
    results/significance/pvalues.json                       the leaderboards' stored p-values

Every name a file name is built from here is checked against the one identifier rule first
(:func:`bench.api.names.identifier`): a name is never a path, so no file of a kind lands outside its folder.
"""

from __future__ import annotations

from pathlib import Path

from bench.api.names import identifier

OUTPUTS_DIR = "outputs"
CALIBRATION_DIR = "calibration"
LATENCY_DIR = "latency"
SWEEP_DIR = "sweep"
ORDERING_DIR = "ordering"
SIGNIFICANCE_DIR = "significance"
PVALUES_FILE = "pvalues.json"


def run_record_file(results_dir: Path | str, run_id: str) -> Path:
    """A run record (or a submission's external record) of ``run_id``."""
    return Path(results_dir) / f"{identifier(run_id, 'run id')}.json"


def outputs_text_file(results_dir: Path | str, run_id: str) -> Path:
    """The outputs of ``run_id`` as scored, one per line (kept beside the records)."""
    return Path(results_dir) / OUTPUTS_DIR / f"{identifier(run_id, 'run id')}.txt"


def calibration_dir(results_dir: Path | str) -> Path:
    """The folder of the calibration sweeps: their summaries and their grid points' run records."""
    return Path(results_dir) / CALIBRATION_DIR


def calibration_summary_file(results_dir: Path | str, system: str, task: str, budget: str) -> Path:
    """The summary of the sweeps of ``system`` on ``task`` at ``budget``."""
    return calibration_dir(results_dir) / f"{_names(system=system, task=task, budget=budget)}.json"


def latency_dir(results_dir: Path | str) -> Path:
    return Path(results_dir) / LATENCY_DIR


def latency_record_file(results_dir: Path | str, latency_id: str) -> Path:
    """One ``bench latency --record`` measurement."""
    return latency_dir(results_dir) / f"{identifier(latency_id, 'latency id')}.json"


def sweep_dir(results_dir: Path | str) -> Path:
    return Path(results_dir) / SWEEP_DIR


def sweep_record_file(results_dir: Path | str, sweep_id: str) -> Path:
    """One ``bench latency --batch-sizes --record`` sweep."""
    return sweep_dir(results_dir) / f"{identifier(sweep_id, 'sweep id')}.json"


def ordering_dir(results_dir: Path | str) -> Path:
    return Path(results_dir) / ORDERING_DIR


def ordering_file(results_dir: Path | str, paper: str, table: str, group: str, budget: str) -> Path:
    """The ordering of one column block of a paper table at ``budget``."""
    block = _names(table=table, group=group, budget=budget)
    return ordering_dir(results_dir) / f"{identifier(paper, 'paper')}-table{block}.json"


def significance_dir(results_dir: Path | str) -> Path:
    return Path(results_dir) / SIGNIFICANCE_DIR


def pvalues_file(results_dir: Path | str) -> Path:
    """Where the p-values of the records in ``results_dir`` are kept (committed beside them)."""
    return significance_dir(results_dir) / PVALUES_FILE


def _names(**names: str) -> str:
    """The identifiers ``names`` joined by ``--``, each checked (its keyword names it in the error)."""
    return "--".join(identifier(value, key) for key, value in names.items())
