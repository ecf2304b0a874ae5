"""The training curve a run record carries, read from the files the trainers write.

Whether a short run had converged is visible only from its curve: training loss every N updates
and, at each checkpoint, the dev loss. The shared trainer writes ``train_log.jsonl`` and
``dev_log.jsonl`` in the run's workdir; fairseq writes its own ``train.log`` (``--log-format
simple``), whose ``train_inner`` and ``valid`` lines are read here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

MAX_POINTS = 200  # a record stays small: longer curves are thinned evenly (the last point is kept)
_FAIRSEQ = re.compile(r"(?:\| (valid) on 'valid' subset \||epoch \d+: +\d+ / \d+) .*?(?<![a-z_])loss[= ]([\d.]+)")
_UPDATES = re.compile(r"num_updates[= ](\d+)")


def _thin(points: list[list[float]]) -> list[list[float]]:
    if len(points) <= MAX_POINTS:
        return points
    step = len(points) / MAX_POINTS
    picked = [points[int(i * step)] for i in range(MAX_POINTS - 1)]
    return [*picked, points[-1]]


def _jsonl(path: Path, key: str) -> list[list[float]]:
    out: dict[int, float] = {}  # a resumed run rewrites steps it had logged before the kill: keep the last
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:  # a line torn by a kill, or not ours, is not a point of the curve
            row = json.loads(line)
            out[int(row["step"])] = round(float(row[key]), 5)
        except (ValueError, KeyError, TypeError, IndexError, RecursionError):
            continue
    return [[s, v] for s, v in sorted(out.items())]


def _fairseq(path: Path) -> dict[str, list[list[float]]]:
    train: dict[int, float] = {}
    dev: dict[int, float] = {}
    for line in path.read_text(errors="replace").splitlines():
        m, u = _FAIRSEQ.search(line), _UPDATES.search(line)
        if m and u:
            (dev if m.group(1) else train)[int(u.group(1))] = round(float(m.group(2)), 5)
    return {
        "train_loss": [[s, v] for s, v in sorted(train.items())],
        "dev_loss": [[s, v] for s, v in sorted(dev.items())],
    }


def training_curve(workdir: Path | str) -> dict[str, Any] | None:
    """``{"train_loss": [[step, loss], ...], "dev_loss": [[step, loss], ...]}`` or None (no training here)."""
    workdir = Path(workdir)
    curve: dict[str, list[list[float]]] = {}
    if (workdir / "train_log.jsonl").is_file():
        curve["train_loss"] = _jsonl(workdir / "train_log.jsonl", "loss")
        if (workdir / "dev_log.jsonl").is_file():
            curve["dev_loss"] = _jsonl(workdir / "dev_log.jsonl", "dev_loss")
    else:
        logs = sorted(workdir.rglob("train.log")) if workdir.is_dir() else []
        if logs:
            curve = _fairseq(logs[0])
    curve = {k: _thin(v) for k, v in curve.items() if v}
    return curve or None
