"""A run's identity and state: RunSpec, run ids, training keys and workdirs, staleness, provenance.

One JSON record per run under ``results/`` (HELM's ``run_spec.json`` beside its stats): every
number sits next to the spec, the harness version, the environment and the scorer signature that
made it. :mod:`bench.runs.pipeline` runs a spec stage by stage and writes its record (atomically; a
completed spec is not re-run unless forced).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from bench import __version__
from bench.api.errors import UserError
from bench.api.paths import REPO_ROOT, RESULTS_DIR, cache_root
from bench.store.records import check_outputs, read_record

SMOKE_EVAL_LIMIT = 200  # smoke runs decode the first 200 test examples: a pipeline check, not a score


#: the largest seed a run takes (numpy seeds its generator with [0, 2**32 - 1]; systems.presets.MAX_SEED)
MAX_SEED = 2**32 - 1


class SpecRangeError(UserError, ValueError):
    """A run's ``--limit`` or ``--seed`` out of range: refused when the spec is made, before any file,
    workdir or record exists (``--limit -1`` once decoded 29,999 examples and recorded "first -1")."""


def check_limit(limit: int | None) -> None:
    """``--limit N`` decodes the first N examples, so N is a count ≥ 1 (None: the whole split)."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise SpecRangeError(f"--limit {limit}: limit must be ≥ 1 (got {limit}); leave --limit out for the "
                             "whole split")


def check_seed(seed: int) -> None:
    """A seed numpy, torch and every family's config accept."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise SpecRangeError(f"--seed {seed}: seed must be in [0, {MAX_SEED}] (got {seed})")


@dataclass(frozen=True)
class RunSpec:
    """Everything that decides a run's outcome; its hash is the run's identity. Its numbers are checked when
    it is made, so every command that builds one (run, reproduce, queue, calibrate) refuses them up front."""

    system: str
    task: str
    split: str = "test"
    budget: str = "smoke"
    overrides: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 42
    limit: int | None = None  # decode/score only the first N examples of the split (a stated subset)

    def __post_init__(self) -> None:
        check_limit(self.limit)
        check_seed(self.seed)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["overrides"] = dict(sorted(self.overrides.items()))
        if self.limit is None:
            del out["limit"]  # keeps run ids of full-split runs independent of this field
        return out

    @property
    def run_id(self) -> str:
        digest = hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:8]
        return f"{self.system}--{self.task}--{self.split}--{self.budget}--s{self.seed}--{digest}"

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> RunSpec:
        return cls(
            system=obj["system"],
            task=obj["task"],
            split=obj.get("split", "test"),
            budget=obj.get("budget", "smoke"),
            overrides=dict(obj.get("overrides", {})),
            seed=int(obj.get("seed", 42)),
            limit=obj.get("limit"),
        )


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``["steps=100", "decode=mist_iter"]`` -> typed dict (JSON literals where they parse)."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"Override '{item}' must look like key=value (e.g. steps=100).")
        key, raw = item.split("=", 1)
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out


#: what runs write, not code: a run that re-records (``--force``) a committed record must not make the
#: next run in the same worktree look "dirty" (the flag says whether the *code* differs from the commit)
DATA_PATHSPECS = (":(exclude)results", ":(exclude)reports")


def harness_info() -> dict[str, Any]:
    """Version and git SHA of the harness, with a dirty flag (uncommitted changes to the code)."""
    sha, dirty = "unknown", None
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", *DATA_PATHSPECS],
            cwd=REPO_ROOT, capture_output=True, text=True, check=True,
        ).stdout
        dirty = bool(status.strip())
    except (OSError, subprocess.CalledProcessError):
        pass
    return {"version": __version__, "git_sha": sha, "dirty": dirty}


def code_state(harness: Mapping[str, Any]) -> dict[str, Any]:
    """The harness commit, plus a hash of the uncommitted diff when the tree is dirty: what a
    resumed decode must share with the session that started it."""
    state = {"git_sha": harness.get("git_sha"), "dirty": harness.get("dirty")}
    if harness.get("dirty"):
        try:
            diff = subprocess.run(["git", "diff", "HEAD", "--no-color", "--", ".", *DATA_PATHSPECS],
                                  cwd=REPO_ROOT, capture_output=True, check=True).stdout
            state["diff_sha256"] = hashlib.sha256(diff).hexdigest()
        except (OSError, subprocess.CalledProcessError):
            state["diff_sha256"] = None
    return state


def record_path(spec: RunSpec, results_dir: Path = RESULTS_DIR) -> Path:
    return Path(results_dir) / f"{spec.run_id}.json"


def outputs_path(spec: RunSpec, results_dir: Path = RESULTS_DIR) -> Path:
    return Path(results_dir) / "outputs" / f"{spec.run_id}.txt"


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
    from bench.api.errors import UserError
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
    return _workdir(*model_spec(spec, system))


def _workdir(spec: RunSpec, key: str) -> Path:
    return cache_root() / "runs" / f"{spec.system}--{spec.task}--{spec.budget}--s{spec.seed}--cfg{key}"


def load_record(path: Path) -> dict[str, Any]:
    """A record file as written (bench.store.records is its one reader)."""
    return read_record(path)


def completed_record(spec: RunSpec, results_dir: Path = RESULTS_DIR) -> dict[str, Any] | None:
    """The spec's complete record, unless it is stale (:func:`stale_reason`): a stale record is not done."""
    rec = _complete(spec, results_dir)
    return rec if rec is not None and stale_reason(rec, spec) is None else None


def _complete(spec: RunSpec, results_dir: Path) -> dict[str, Any] | None:
    """The spec's complete record; one whose outputs were edited since scoring is refused with the file and
    the fix (:func:`bench.store.records.check_outputs`), never taken as done (``--force`` does not ask)."""
    path = record_path(spec, results_dir)
    if not path.exists():
        return None
    rec = load_record(path)
    if rec.get("status") != "complete":
        return None
    check_outputs(rec, path)
    return rec


def _comparable(config: Mapping[str, Any]) -> dict[str, Any]:
    drop = RUNTIME_FIELDS | {"train"}  # "train": what a fit reported, not a setting
    return json.loads(json.dumps({k: v for k, v in config.items() if k not in drop}, sort_keys=True, default=str))


def record_stale_reason(rec: Mapping[str, Any]) -> str | None:
    """:func:`stale_reason` of a record against its own spec; submitted (external) records are never stale."""
    return stale_reason(rec, RunSpec.from_json(rec["spec"])) if rec.get("kind", "run") == "run" else None


def stale_reason(rec: Mapping[str, Any], spec: RunSpec) -> str | None:
    """Why ``rec`` is not what ``spec`` runs today, or None.

    Run ids hash the spec, and a spec names a budget whose preset is code: after a calibration moves a
    preset, the same `bench run` line has the same run id, and its old record would be taken as done
    (and shown in tables) although the run would now use other settings. A record is stale when a
    setting the system resolves to today (preset + overrides, before training) differs from the one
    the record stored; settings the record does not have, that are decided at fit time, or that only
    a fit reports are not compared (so a preset change inside such a setting goes unnoticed).
    """
    try:
        changed = setting_changes(rec, spec)
    except Exception:  # a system that no longer builds cannot make a record stale
        return None
    if not changed:
        return None
    return f"made with other settings than the {spec.budget} preset resolves to today: {describe_changes(changed)}"


def describe_changes(changed: Sequence[tuple[str, Any, Any]], shown: int = 6) -> str:
    """``setting: recorded -> today`` for the first ``shown`` of :func:`setting_changes`, and how many more."""
    text = "; ".join(f"{k}: {a!r} -> {b!r}" for k, a, b in changed[:shown])
    return text + (f" (+{len(changed) - shown} more)" if len(changed) > shown else "")


def setting_changes(rec: Mapping[str, Any], spec: RunSpec, system: Any = None) -> list[tuple[str, Any, Any]]:
    """(setting, recorded, resolved today) for each setting of ``rec`` that ``spec`` (built as ``system``)
    resolves to otherwise today, sorted; raises what building the system raises."""
    from bench.data import task_info

    now = _comparable((system or build_system(spec)).training_settings(task_info(spec.task)))
    then = _comparable((rec.get("system") or {}).get("config") or {})
    # None: decided at fit time, nothing to compare yet; a nested setting (the NAR family's per-task
    # ``size``) is compared on the keys both sides have, so a field added since does not flag old records
    return sorted(_changes(now, then))


def _changes(now: Mapping[str, Any], then: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any, Any]]:
    """(setting, then, now) for each setting both sides have that differs; None now is not compared."""
    out: list[tuple[str, Any, Any]] = []
    for k in now.keys() & then.keys():
        a, b = then[k], now[k]
        if b is None:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            out += _changes(b, a, f"{prefix}{k}.")
        elif a != b:
            out.append((f"{prefix}{k}", a, b))
    return out


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def outputs_to_text(outputs: list[str]) -> str:
    bad = [i for i, line in enumerate(outputs) if "\n" in line or "\r" in line]
    if bad:
        raise ValueError(f"System produced outputs with a newline inside (items {bad[:5]}); outputs are one per line.")
    return "".join(line + "\n" for line in outputs)


Reporter = Callable[[str], None]


def display_path(path: Path) -> str:
    """Repo-relative when inside the checkout (records stay portable), else absolute."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def check_recipes(task: Any) -> None:
    """Every recipe the task records must be registered, checked before ``fit`` (not after hours of training)."""
    from bench.scoring import RECIPES

    for name in task.default_recipes:
        RECIPES.get(name)  # unknown: a RegistryError naming the close match and the known recipes


def eval_limit(spec: RunSpec) -> int | None:
    """How many test examples a run decodes: the spec's limit, else 200 for smoke, else the whole
    split (None)."""
    if spec.limit is not None:
        return spec.limit
    if spec.budget == "smoke":
        return SMOKE_EVAL_LIMIT
    return None


def first_examples(split: Any, limit: int | None) -> Any:
    """The first ``limit`` examples as a partial split with its own hash and a note saying so."""
    if limit is None or limit >= len(split):
        return split
    from dataclasses import replace

    examples = split.examples[:limit]
    digest = hashlib.sha256(json.dumps([ex.id for ex in examples]).encode() + split.sha256.encode()).hexdigest()
    note = f"first {limit:,} of {len(split):,} examples of {split.task}/{split.name}"
    return replace(split, examples=examples, sha256=digest, partial=True,
                   note=f"{note}; {split.note}" if split.note else note)


def seed_everything(seed: int) -> None:
    """Python, numpy and (when a system already imported it) torch, from the spec's seed."""
    import random

    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:
        pass
    import sys

    if "torch" in sys.modules:  # seed torch only if a system already needs it; never import it here
        sys.modules["torch"].manual_seed(seed)
