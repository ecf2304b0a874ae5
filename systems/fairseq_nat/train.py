"""``fairseq-train`` as a resumable subprocess whose log drives a progress bar and the checkpoint manifest."""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from systems.fairseq_nat.checkpoints import UNSAFE_ENV, Manifest
from systems.fairseq_nat.proc import run_tool

LAST = "checkpoint_last.pt"
_UPDATES = re.compile(r"num_updates[= ](\d+)")  # "=" in train_inner lines, " " in epoch summaries
_LOSS = re.compile(r"\bloss=([0-9.]+)")


def command_id(args: Sequence[str], data_key: str) -> str:
    """What makes two training runs the same: the fairseq arguments (paths excluded) and the data."""
    return hashlib.sha256(json.dumps([list(args), data_key]).encode()).hexdigest()


class _Progress:
    """A rich bar over updates when attached to a terminal; otherwise every N-th log line is echoed."""

    def __init__(self, total: int | None, say: Callable[[str], None]) -> None:
        self.total, self.say = total, say
        self.bar: Any = None
        self.losses: list[tuple[int, float]] = []
        self.updates = 0

    def __enter__(self) -> _Progress:
        if sys.stderr.isatty():
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(
                TextColumn("fairseq-train"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("loss {task.fields[loss]}"),
                TimeRemainingColumn(),
                transient=False,
            )
            self.bar.__enter__()
            self.task = self.bar.add_task("train", total=self.total, loss="-")
        return self

    def line(self, text: str) -> None:
        m = _UPDATES.search(text)
        if m and "| train" in text:
            self.updates = int(m.group(1))
            loss = _LOSS.search(text)  # per-interval losses only (train_inner), not epoch averages
            if loss:
                self.losses.append((self.updates, float(loss.group(1))))
            if self.bar is not None:
                self.bar.update(self.task, completed=self.updates, loss=loss.group(1) if loss else "-")
                return
        if self.bar is None and (
            "| train" in text
            or "Saved checkpoint" in text
            or "| ERROR |" in text
            or "done training" in text
            or "Traceback" in text
        ):
            self.say("  [fairseq] " + text.split(" | ", 3)[-1])

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)


def run_training(
    args: Sequence[str],
    recipe_id: str,
    data_key: str,
    save_dir: Path,
    total_updates: int | None,
    say: Callable[[str], None] = print,
    extra_env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Train (or resume, or skip when this exact run already finished); returns a summary for the record.

    A ``checkpoint_last.pt`` left by an interrupted run is resumed only if the manifest vouches for it.
    """
    save_dir.mkdir(parents=True, exist_ok=True)
    manifest = Manifest(save_dir)
    run_id = command_id([recipe_id], data_key)
    recorded = manifest.data.get("run")
    if recorded and recorded.get("data_key") != data_key:
        raise RuntimeError(
            f"{save_dir} holds checkpoints trained on other data (key {recorded['data_key'][:12]} vs "
            f"{data_key[:12]}); use a fresh workdir or delete it."
        )
    done = manifest.data.get("completed")
    if done and done.get("run_id") == run_id and (save_dir / LAST).is_file():
        manifest.verify(save_dir / LAST)
        say(f"[fairseq] training already complete in {save_dir} ({done['updates']} updates); not re-run")
        return done
    env: dict[str, str] = dict(extra_env or {})  # e.g. CUDA_VISIBLE_DEVICES: the run's one GPU
    last = save_dir / LAST
    resumed_from = None
    if last.is_file():
        manifest.verify(last)  # raises unless this harness wrote exactly these bytes
        env[UNSAFE_ENV] = "1"  # the child process alone may unpickle the verified checkpoint
        resumed_from = manifest.files[LAST]["sha256"]
        say(f"[fairseq] resuming from {last} (sha256 {resumed_from[:12]}... verified)")
    manifest.data["run"] = {"data_key": data_key, "run_id": run_id}
    manifest.data.pop("completed", None)
    manifest.save()
    t0 = time.perf_counter()
    with _Progress(total_updates, say) as prog:

        def on_line(text: str) -> None:
            prog.line(text)
            if "Saved checkpoint" in text:
                manifest.record_new()

        run_tool("train", args, save_dir / "train.log", on_line, env)
    manifest.record_new()
    if not last.is_file():
        raise RuntimeError(f"fairseq-train finished without writing {last}; see {save_dir / 'train.log'}")
    summary = {
        "run_id": run_id,
        "updates": prog.updates,
        "train_s": round(time.perf_counter() - t0, 1),
        "losses": prog.losses[-5:],
        "first_loss": prog.losses[0] if prog.losses else None,
        "resumed_from_sha256": resumed_from,
        "checkpoints": {k: v["sha256"] for k, v in manifest.files.items()},
    }
    manifest.data["completed"] = summary
    manifest.save()
    return summary
