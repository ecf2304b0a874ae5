"""A run builds its system once: the object checked against an existing record is the one placed, fitted,
decoded and described in the new record (a second build could differ from the first, and costs a build)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

DATA = Path(os.environ.get("BENCH_DATA", Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))


def test_a_run_builds_its_system_once_fresh_skipped_and_stale(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    import systems
    from bench.api.types import TaskInfo
    from bench.runs.paths import record_path
    from bench.runs.pipeline import execute
    from bench.runs.spec import RunSpec
    from systems.baselines import CopySource

    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    built: list[Any] = []
    used: list[tuple[str, Any]] = []
    real_build, real_place, real_fit, real_decode = systems.build, CopySource.place, CopySource.fit, CopySource.decode

    def counting_build(name: str, budget: str, overrides: dict | None = None) -> Any:
        built.append(real_build(name, budget, overrides))
        return built[-1]

    def placed(self: CopySource, device: str) -> None:
        used.append(("place", self))
        real_place(self, device)

    def fitted(self: CopySource, task: TaskInfo, workdir: Path) -> None:
        used.append(("fit", self))
        real_fit(self, task, workdir)

    def decoded(self: CopySource, examples: list) -> list[str]:
        used.append(("decode", self))
        return real_decode(self, examples)

    monkeypatch.setattr(systems, "build", counting_build)
    monkeypatch.setattr(CopySource, "place", placed)
    monkeypatch.setattr(CopySource, "fit", fitted)
    monkeypatch.setattr(CopySource, "decode", decoded)
    spec = RunSpec("copy_source", "quora", budget="smoke", limit=20)
    results = tmp_path / "results"
    said: list[str] = []

    execute(spec, results_dir=results, say=said.append)  # a fresh run
    assert len(built) == 1
    assert {what for what, _ in used} == {"place", "fit", "decode"}
    assert all(system is built[0] for _, system in used)

    built.clear()
    execute(spec, results_dir=results, say=said.append)  # complete and up to date: skipped
    assert len(built) == 1 and said[-1].startswith("[skip]")

    # the preset moved since the record: the stale check and the re-run share one build
    path = record_path(spec, results)
    rec = json.loads(path.read_text())
    rec["system"]["config"] = {"window": 1}
    from bench.store import integrity  # an older harness's record: written (and sealed) with its own config

    path.write_text(json.dumps(integrity.sealed(integrity.unsealed(rec))))
    monkeypatch.setattr(CopySource, "training_settings", lambda self, task: {"window": 2}, raising=False)
    built.clear()
    used.clear()
    execute(spec, results_dir=results, say=said.append)
    assert any(line.startswith("[stale]") and "window: 1 -> 2" in line for line in said)
    assert len(built) == 1
    assert used and all(system is built[0] for _, system in used)
