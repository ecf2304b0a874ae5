"""One run: its spec, identity, staleness and provenance, and the stages that run it into a record.

One JSON record per run under ``results/`` (HELM's ``run_spec.json`` beside its stats): every number sits next
to the spec, the harness version, the environment and the scorer signature that made it. The package, one job
per module:

- :mod:`bench.runs.spec`: :class:`RunSpec` and its range checks
- :mod:`bench.runs.identity`: the system a spec builds, its training spec and key, the model's owner and workdir
- :mod:`bench.runs.staleness`: a spec's complete record, and whether it is still what the spec runs today
- :mod:`bench.runs.paths`: where a run's record and outputs are, and how a record names a path
- :mod:`bench.runs.provenance`: the harness version, commit and dirty state
- :mod:`bench.runs.evaluation`: which examples a run evaluates, and its recipes checked up front
- :mod:`bench.runs.seeding`: the spec's seed in every generator
- :mod:`bench.runs.outputs`: the outputs file's text and hash; :mod:`bench.runs.reporter`: how a run says what it does
- :mod:`bench.runs.pipeline`: the stages (build, prepare, train, decode, score, time, record)
- :mod:`bench.runs.journal`, :mod:`bench.runs.lock`, :mod:`bench.runs.curves`, :mod:`bench.runs.lookup`: the
  resumable decode, run and workdir locks, training curves, finding a recorded run

This module re-exports the names other packages import from ``bench.runs``; code inside the package imports
from the module that defines a name.
"""

from bench.api.overrides import parse_overrides
from bench.api.paths import REPO_ROOT, RESULTS_DIR
from bench.runs.evaluation import check_recipes, first_examples
from bench.runs.identity import (
    build_system,
    model_spec,
    model_workdir,
    training_config,
    training_key,
    training_spec,
    training_workdir,
)
from bench.runs.outputs import sha256_text
from bench.runs.paths import display_path, outputs_path, record_path
from bench.runs.provenance import harness_info
from bench.runs.reporter import Reporter
from bench.runs.spec import RunSpec, check_limit, check_seed
from bench.runs.staleness import (
    completed_record,
    describe_changes,
    record_stale_reason,
    setting_changes,
    stale_reason,
)

__all__ = [
    "REPO_ROOT",
    "RESULTS_DIR",
    "Reporter",
    "RunSpec",
    "build_system",
    "check_limit",
    "check_recipes",
    "check_seed",
    "completed_record",
    "describe_changes",
    "display_path",
    "first_examples",
    "harness_info",
    "model_spec",
    "model_workdir",
    "outputs_path",
    "parse_overrides",
    "record_path",
    "record_stale_reason",
    "setting_changes",
    "sha256_text",
    "stale_reason",
    "training_config",
    "training_key",
    "training_spec",
    "training_workdir",
]

import typing

if not typing.TYPE_CHECKING:  # at run time `bench.runs.<module>` loads on first use (the docs' paths)
    from bench.api.lazy import submodules

    __getattr__ = submodules(__name__)
