"""What a `bench run` line leaves to the harness, settled before any file is written: which split trains the
model (:func:`with_training_split`) and, at the cpu budget, whether the system's weights are here or its cpu
stand-in must run instead (:func:`check_weights_here`).

Why before the run: both change what is run, so both belong in the spec (and the run id) or in a one-line
refusal, never in a half-made workdir.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.api.errors import UserError
from bench.runs.identity import build_system
from bench.runs.spec import RunSpec


class StandInNeeded(UserError, ValueError):
    """A cpu run of a system whose paper backbone has no offline copy, where a stand-in is declared."""


def with_training_split(spec: RunSpec, data_dir: Path | str | None = None, system: Any = None) -> RunSpec:
    """``spec`` with the split that trains its model (:func:`bench.data.training.training_split`); a system that
    trains nothing keeps ``train_split`` unset. Raises ``DataError`` (one line) where the budget needs training
    data this machine lacks."""
    from bench.data.training import training_split

    system = system if system is not None else build_system(spec)
    if not system.needs_training:
        return spec
    return replace(spec, train_split=training_split(spec.task, spec.budget, data_dir))


def stand_in_for(spec: RunSpec, system: Any = None) -> str | None:
    """The registered system that runs in ``spec.system``'s place: at the cpu budget, when the system declares a
    ``cpu_stand_in`` and its own weights are not here; else None."""
    if spec.budget != "cpu":
        return None
    system = system if system is not None else build_system(spec)
    if system.cpu_stand_in is None or system.missing_weights() is None:
        return None
    return str(system.cpu_stand_in)


def check_weights_here(spec: RunSpec, *, use_stand_in: bool = False, system: Any = None) -> RunSpec:
    """``spec`` as it can run here: unchanged, or (``use_stand_in``: `bench run --stand-in`) the same spec under
    the stand-in's name, which is recorded as itself. Without ``use_stand_in`` a needed stand-in is a
    :class:`StandInNeeded` naming it and the command that runs it."""
    system = system if system is not None else build_system(spec)
    stand_in = stand_in_for(spec, system)
    if stand_in is None:
        return spec
    if use_stand_in:
        return replace(spec, system=stand_in)
    raise StandInNeeded(
        f"{spec.system}'s backbone {system.missing_weights()} has no offline copy, so it cannot run at the cpu "
        f"budget here; its cpu stand-in is {stand_in}: `bench run --system {stand_in} --task {spec.task} --budget "
        f"cpu` (or add --stand-in); its own weights come with `bench fetch --system {spec.system}` where there is "
        "internet."
    )


def budgets_here(name: str) -> tuple[list[str], str | None]:
    """The budgets registered system ``name`` can run at on this machine (it builds there and reports no missing
    weights; the paper budget still wants a GPU to finish in time), and its cpu stand-in where it declares one and
    its own cpu weights are not here. Building loads no weights, so this is cheap."""
    from bench.api.system import BUDGETS
    from systems import build

    here: list[str] = []
    stand_in = None
    for budget in BUDGETS:
        try:
            system = build(name, budget, {"seed": RunSpec.seed})  # as a run builds it: seed always
        except (ValueError, UserError):  # a budget the system has no preset for, or settings it requires
            continue
        if system.missing_weights() is None:
            here.append(budget)
        elif budget == "cpu" and system.cpu_stand_in:
            stand_in = str(system.cpu_stand_in)
    return here, stand_in


def needs_here(name: str) -> tuple[list[str], str, str]:
    """The modules registered system ``name`` needs that this Python lacks (fairseq, ctranslate2), the command that
    installs them ([] and "" when it has all it imports), and the family its ``describe()`` states (what a plugin
    registered through an entry point, which carries no family, is listed under). Building loads nothing."""
    from systems import build

    try:
        system = build(name, "smoke", {"seed": RunSpec.seed})
    except (ValueError, UserError):
        return [], "", ""
    try:
        family = str(system.describe().family)
    except Exception:  # a plugin's describe() that needs fit first: listed without a family, never a crash
        family = ""
    return system.missing_modules(), system.install_command, family


def resolve_here(spec: RunSpec, data_dir: Path | str | None = None, *,
                 use_stand_in: bool = False) -> tuple[RunSpec, list[tuple[str, str, str]]]:
    """The spec as it can run here (its cpu stand-in where asked for, else a one-line refusal naming it; the split
    that trains it) and a note ``(label, value, why)`` for each way it is not the plain one, for the CLI to say."""
    notes: list[tuple[str, str, str]] = []
    resolved = check_weights_here(spec, use_stand_in=use_stand_in)
    if resolved.system != spec.system:
        notes.append(("stand-in", resolved.system, f"runs for {spec.system} (its backbone is not here)"))
    resolved = with_training_split(resolved, data_dir, build_system(resolved))
    if resolved.train_split:
        notes.append(("training split", resolved.train_split, f"(the task's train split is not here; a "
                      f"{resolved.budget} run is a plumbing check)"))
    return resolved, notes
