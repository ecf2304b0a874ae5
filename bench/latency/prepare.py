"""Build the systems a ``bench latency`` call times: per-system overrides, untrained models, stand-ins.

Why here and not in the CLI: which systems get a model (and how) decides what a speed column
means, so the rules are one tested function: ``weights=random`` systems are built untrained at
their configured (paper) size with ``fit`` (0 updates, no download); systems that need no
training (reference baselines, ``init_from``) are loaded; recorded runs' own models come loaded
(``loaders``: ``bench latency --runs``); anything else is refused, because this command trains
nothing. Stand-ins let one timed system speak for another row, explicitly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.api.overrides import parse_override

RANDOM = "random"


@dataclass
class PreparedLatency:
    """The systems a ``bench latency`` call times, built and fitted or loaded: their ``describe()``, their
    overrides, and the checked stand-ins (row system -> timed system)."""

    systems: dict[str, Any]
    infos: dict[str, Any]
    overrides: dict[str, dict[str, Any]]
    stand_ins: dict[str, str] = field(default_factory=dict)
    stand_in_basis: dict[str, str] = field(default_factory=dict)


def parse_system_overrides(items: Sequence[str], names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``["weights=random", "fairseq_cmlm.iterations=4"]`` -> per-system overrides.

    ``key=value`` applies to every system; ``system.key=value`` to that one (it must be timed). Each item
    is read as every ``--set`` is (:func:`bench.api.overrides.parse_override`: JSON literals where they
    parse, ``4``, ``true``, ``{"hidden": 32}``, else strings); a later item wins.
    """
    out: dict[str, dict[str, Any]] = {n: {} for n in names}
    for item in items:
        key, value = parse_override(item, "key=value or system.key=value (e.g. weights=random)")
        if "." in key:
            system, name = key.split(".", 1)
            if system not in out:
                raise ValueError(f"--set '{item}': '{system}' is not among the timed systems ({', '.join(names)}).")
            out[system][name] = value
        else:
            for n in names:
                out[n][key] = value
    return out


def parse_stand_ins(items: Sequence[str], names: Sequence[str]) -> dict[str, str]:
    """``["mist_bert=encoder_bert"]`` -> {row system: timed system}; the timed one must be timed here."""
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise ValueError(
                f"--stand-in '{item}' must look like ROW_SYSTEM=TIMED_SYSTEM (e.g. mist_bert=encoder_bert)."
            )
        row, timed = (s.strip() for s in item.split("=", 1))
        if timed not in names:
            raise ValueError(f"--stand-in '{item}': '{timed}' is not among the timed systems ({', '.join(names)}).")
        if row in names:
            raise ValueError(f"--stand-in '{item}': '{row}' is timed itself; a stand-in is for a system not timed.")
        out[row] = timed
    return out


def prepare(
    names: Sequence[str],
    budget: str,
    overrides: Mapping[str, Mapping[str, Any]],
    task: str,
    workroot: Path,
    stand_ins: Mapping[str, str] | None = None,
    data_dir: Path | None = None,
    say: Callable[[str], None] = print,
    device: str = "cpu",
    loaders: Mapping[str, Callable[[str], Any]] | None = None,
) -> PreparedLatency:
    """Build every system in ``names`` on ``device`` (resolved by the caller: every timed model and
    input must sit there); see the module docstring for which get a model and how. ``loaders[name](device)``
    gives a system already holding its trained model, placed (``bench latency --runs``:
    :mod:`bench.workflows.trained_latency`); it is taken as given."""
    from bench.data import TASKS, load_split, task_info
    from bench.env.device import fit_on
    from systems import build

    TASKS.get(task)  # an unknown task is a one-line error before anything is built
    loaded = {n: load(device) for n, load in (loaders or {}).items() if n in names}
    built = {n: loaded[n] if n in loaded else build(n, budget, dict(overrides.get(n, {}))) for n in names}
    no_random = [n for n in names if _is_random(overrides.get(n, {})) and not built[n].supports_random_weights]
    if no_random:
        from bench.api.errors import UserError

        able = [n for n in names if built[n].supports_random_weights]
        raise UserError(
            f"weights=random (paper-size architecture, untrained) is not a mode of {', '.join(no_random)}: "
            "their factories read `weights` differently or not at all. Set it only for the systems that "
            f"support it ({', '.join(able) or 'none of the timed ones'}; e.g. --set {able[0] if able else 'SYSTEM'}"
            ".weights=random), or time a trained run with `bench run --latency-n N`."
        )
    need_train = [n for n in names if _is_random(overrides.get(n, {})) and built[n].needs_training]
    train: Sequence[Any] = ()
    if need_train:
        train = load_split(task, "train", data_dir=data_dir).examples
    info = task_info(task, train)
    for n in names:
        system = built[n]
        if n in loaded:
            continue
        if _is_random(overrides.get(n, {})) or not _needs_training(system):
            say(f"[build] {n} ({budget} budget{', untrained' if _is_random(overrides.get(n, {})) else ''}) on {device}")
            fit_on(system, info, workroot / n, device)
        else:
            raise ValueError(
                f"'{n}' needs a trained model and `bench latency` trains nothing. Time a trained run with "
                f"`bench run --system {n} --latency-n N`, time recorded runs' own models with `--runs RUN_ID,...` "
                "(paired against a trained baseline run), or time its paper-size "
                "architecture untrained with --weights random (length-forced)."
            )
    infos = {n: built[n].describe() for n in names}
    checked, basis = _check_stand_ins(stand_ins or {}, budget, overrides, infos)
    return PreparedLatency(built, infos, {n: dict(overrides.get(n, {})) for n in names}, checked, basis)


def _needs_training(system: Any) -> bool:
    """Reference systems (copy, null probe) and systems that say so need no training; others do."""
    return bool(system.needs_training) and system.describe().family != "reference"


def _is_random(ov: Mapping[str, Any]) -> bool:
    return ov.get("weights") == RANDOM


def _check_stand_ins(
    stand_ins: Mapping[str, str], budget: str, overrides: Mapping[str, Mapping[str, Any]], infos: Mapping[str, Any]
) -> tuple[dict[str, str], dict[str, str]]:
    """A stand-in must build under the same overrides with the same family, passes and encoder shape."""
    from systems import build

    basis: dict[str, str] = {}
    for row, timed in stand_ins.items():
        ov = dict(overrides.get(timed, {}))
        other = build(row, budget, ov).describe()
        mine = infos[timed]
        problems = []
        if other.family != mine.family:
            problems.append(f"family {other.family} vs {mine.family}")
        if other.iterations != mine.iterations:
            problems.append(f"iterations {other.iterations} vs {mine.iterations}")
        theirs, ours = dict(other.config), dict(mine.config)
        for key in ("tiny", "size", "arch", "decode"):
            if key not in theirs or key not in ours:  # e.g. sizes a system only fills in when fitted
                continue
            a, b = theirs[key], ours[key]
            if a != b:
                problems.append(f"{key} {a!r} vs {b!r}")
        if problems:
            raise ValueError(
                f"--stand-in {row}={timed}: the two do not decode the same way under these overrides "
                f"({'; '.join(problems)}); time '{row}' itself."
            )
        shape = dict(mine.config).get("shape") or dict(mine.config).get("tiny") or "same"
        basis[row] = (
            f"same family ({mine.family}), decoder passes ({mine.iterations}) and architecture ({shape}) as "
            f"'{timed}' under the same overrides; declared with --stand-in"
        )
    return dict(stand_ins), basis
