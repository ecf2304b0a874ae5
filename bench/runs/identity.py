"""Which model a run trains and where it lives: the system a spec builds, the spec and settings that decide
its trained model (decode-only overrides and the evaluated split left out), the training key, the registered
system that owns the model, and the workdir it is trained in and found again."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.api.errors import UserError
from bench.api.paths import cache_root
from bench.runs.spec import RunSpec

#: config fields that decide how fast a run goes or what it prints, not what it learns
RUNTIME_FIELDS = frozenset({"threads", "progress"})


def build_system(spec: RunSpec) -> Any:
    """The system ``spec`` runs (preset + overrides + seed); building loads no weights."""
    from systems import build

    return build(spec.system, spec.budget, {**dict(spec.overrides), "seed": spec.seed})


def training_spec(spec: RunSpec, system: Any) -> RunSpec:
    """The spec that decides the trained model: ``spec`` without the overrides ``system`` declares decode-only.

    A system lists in ``decode_only_overrides`` the settings that change decoding but not training
    (e.g. the NAR family's ``decode``/``iterations``), so `bench run --set decode=mist_iter` reuses
    the checkpoint of the plain run instead of training a second, identical model. Training never
    reads the evaluated split, so the spec is the test split's: a calibration point decoded on dev
    and the test run of the same settings share one trained model.
    """
    decode_only = set(system.decode_only_overrides)
    kept = {k: v for k, v in spec.overrides.items() if k not in decode_only}
    return replace(spec, task=training_task(spec.task, system), overrides=kept, limit=None, split="test")


def training_task(task: str, system: Any) -> str:
    """The task whose training split trains ``system`` for ``task``: its ``train_from`` (the same examples)
    when the system's weights do not depend on the dev split, so one model serves both; else ``task``."""
    from bench.data import TASKS

    base = TASKS.get(task).train_from if task in TASKS else None
    return base if base and not system.selects_on_dev else task


def training_config(system: Any, task: str) -> dict[str, Any]:
    """The resolved settings that decide the model trained on ``task``: the system's config (preset +
    overrides, resolved for the task where the budget sizes runs per task) without its decode-only and
    runtime fields."""
    from bench.data import task_info

    drop = set(system.decode_only_overrides) | RUNTIME_FIELDS
    return {k: v for k, v in system.training_settings(task_info(task)).items() if k not in drop}


def training_key(system: Any, task: str) -> str:
    """A short hash of :func:`training_config`: equal exactly when two runs train the same model."""
    text = json.dumps(training_config(system, task), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def model_owner(trained: RunSpec, system: Any, key: str) -> str:
    """The registered system whose workdir holds the model ``trained`` (a :func:`training_spec`) trains: the
    first of ``system.model_siblings`` that, built with the same budget, overrides and seed, resolves to the
    same training key, else ``trained.system`` itself.

    Two names, one model: a family whose variants differ only in settings (CopyBERT) may resolve two
    of them to identical training settings under a budget, e.g. its SpanBERT row at the cpu budget,
    which has no SpanBERT weights offline and so trains exactly the self-copy row's model. Trained
    once, it is decoded by both, and each record names the workdir and the run that trained it.
    """
    from systems import SYSTEMS, build

    for name in system.model_siblings:
        if name not in SYSTEMS:
            raise ValueError(f"{trained.system}: model_siblings names '{name}', which is not a registered system; "
                             "list registered names only")
        if name == trained.system:
            break  # only a sibling listed before this system owns its model
        try:
            other = build(name, trained.budget, {**dict(trained.overrides), "seed": trained.seed})
        except (ValueError, UserError):  # an override or budget the sibling refuses: not the same model
            continue
        if other.needs_training and training_key(other, trained.task) == key:
            return name
    return trained.system


def model_spec(spec: RunSpec, system: Any) -> tuple[RunSpec, str]:
    """The spec that trains ``spec``'s model (:func:`training_spec`, under its :func:`model_owner`'s
    name) and its training key: the workdir, and the run named in the record as its trainer."""
    trained = training_spec(spec, system)
    key = training_key(system, trained.task)
    return replace(trained, system=model_owner(trained, system, key)), key


def training_workdir(spec: RunSpec, system: Any) -> Path:
    """Where ``spec``'s model is trained (resumably) and found again, keyed by what training resolves to.

    The key is the *resolved* config, not the spec: the spec names a budget, and the budget's preset
    is code that changes (a calibration picks new values). Keyed by the spec, the same `bench run`
    line after a preset change would resume the old preset's checkpoints under the new preset's
    name. Keyed by the config, it trains afresh; and a calibration point (preset + ``--set lr=…``)
    and the later run of a preset that adopted those values share one model, as they should.
    """
    return model_workdir(*model_spec(spec, system))


def model_workdir(trained: RunSpec, key: str) -> Path:
    """The workdir of the model that ``trained`` and ``key`` (what :func:`model_spec` returns) name: for a
    caller that already has them; :func:`training_workdir` goes from a run's own spec."""
    task = f"{trained.task}@{trained.train_split}" if trained.train_split else trained.task  # what trained it
    return cache_root() / "runs" / f"{trained.system}--{task}--{trained.budget}--s{trained.seed}--cfg{key}"
