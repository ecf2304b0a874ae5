"""Where each kind of JSON lives under a results folder: the layout of ``results/``, in one place.

::

    results/<run_id>.json                                   run records (kind ``run``) and submissions (``external``)
    results/outputs/<run_id>.txt                            the outputs a record scored (text, not JSON)
    results/calibration/<system>--<task>--<budget>.json     calibration summaries (kind ``calibration``) ...
    results/calibration/<run_id>.json                       ... beside their grid points' run records
    results/latency/<latency_id>.json                       latency records (kind ``latency``)
    results/ordering/<paper>-table<N>--<group>--<budget>.json  orderings (kind ``ordering``)
    results/significance/pvalues.json                       the leaderboards' stored p-values
"""

from __future__ import annotations

from pathlib import Path

OUTPUTS_DIR = "outputs"
CALIBRATION_DIR = "calibration"
LATENCY_DIR = "latency"
SWEEP_DIR = "sweep"
ORDERING_DIR = "ordering"
SIGNIFICANCE_DIR = "significance"
PVALUES_FILE = "pvalues.json"


def run_record_file(results_dir: Path | str, run_id: str) -> Path:
    """A run record (or a submission's external record) of ``run_id``."""
    return Path(results_dir) / f"{run_id}.json"


def outputs_text_file(results_dir: Path | str, run_id: str) -> Path:
    """The outputs of ``run_id`` as scored, one per line (kept beside the records)."""
    return Path(results_dir) / OUTPUTS_DIR / f"{run_id}.txt"


def calibration_dir(results_dir: Path | str) -> Path:
    """The folder of the calibration sweeps: their summaries and their grid points' run records."""
    return Path(results_dir) / CALIBRATION_DIR


def calibration_summary_file(results_dir: Path | str, system: str, task: str, budget: str) -> Path:
    """The summary of the sweeps of ``system`` on ``task`` at ``budget``."""
    return calibration_dir(results_dir) / f"{system}--{task}--{budget}.json"


def latency_dir(results_dir: Path | str) -> Path:
    return Path(results_dir) / LATENCY_DIR


def latency_record_file(results_dir: Path | str, latency_id: str) -> Path:
    """One ``bench latency --record`` measurement."""
    return latency_dir(results_dir) / f"{latency_id}.json"


def sweep_dir(results_dir: Path | str) -> Path:
    return Path(results_dir) / SWEEP_DIR


def sweep_record_file(results_dir: Path | str, sweep_id: str) -> Path:
    """One ``bench latency --batch-sizes --record`` sweep."""
    return sweep_dir(results_dir) / f"{sweep_id}.json"


def ordering_dir(results_dir: Path | str) -> Path:
    return Path(results_dir) / ORDERING_DIR


def ordering_file(results_dir: Path | str, paper: str, table: str, group: str, budget: str) -> Path:
    """The ordering of one column block of a paper table at ``budget``."""
    return ordering_dir(results_dir) / f"{paper}-table{table}--{group}--{budget}.json"


def pvalues_file(results_dir: Path | str) -> Path:
    """Where the p-values of the records in ``results_dir`` are kept (committed beside them)."""
    return Path(results_dir) / SIGNIFICANCE_DIR / PVALUES_FILE
