"""Deterministic work counts beside wall time: what each system computed for the timed units.

Why: on a shared machine wall time is noise around a signal; counts are the signal's shape and no neighbour can
move them (CodSpeed gates on counts for this reason). Beside every measured speed-up the tables put the ratio of
sequential decoder passes (the NAR papers' own argument) and of FLOPs, so a reader sees whether a speed-up is the
size the work predicts. Counted in the untimed reference pass, on exactly the units that are timed:

- **passes**: sequential decoder passes per unit (``System.last_iterations`` after each call; the declared
  ``describe().iterations`` where a system does not count), over every timed unit;
- **layer evaluations**: forward calls of the blocks of the model's layer stacks, i.e. of every module held in
  an ``nn.ModuleList`` (the encoder and decoder layers of every transformer implementation here), per unit;
- **FLOPs**: ``torch.utils.flop_counter.FlopCounterMode`` (matrix products, convolutions, attention; element-wise
  ops, softmax, layer norm and embedding lookups are NOT counted), plus 2·in·out per row of every quantized Linear
  (int8 ops count as FLOPs here), which the counter cannot see; a system that decodes outside torch (CTranslate2)
  has none;
- output tokens (whitespace), parameters, and the peak resident memory the pass added
  (:func:`bench.latency.memory.peak_memory`);
- CPU instructions (``perf stat -e instructions:u``) where the machine exposes a PMU, else the reason it does not.

Passes, tokens and memory come from the reference pass over every timed unit; layer evaluations, FLOPs and
instructions from a second, counted pass over the first ``counted_units`` units (the counters slow an AR decoder
several-fold, so they see a fixed sample, named in the record). Counts are a pure function of the models and the
units: two runs give the same numbers (a test holds this).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

FLOPS_NOTE = ("torch.utils.flop_counter.FlopCounterMode (matmul, conv, attention) + 2*in*out per row of quantized "
              "Linear layers; element-wise ops, softmax, norms and lookups are not counted")
LAYERS_NOTE = "forward calls of the modules held in an nn.ModuleList (the layer stacks)"


@dataclass(frozen=True)
class WorkCounts:
    """One system's counts over the timed units (``None`` with a reason where a count cannot be read)."""

    units: int
    sentences: int
    passes_per_unit: float | None
    layer_evals_per_unit: float | None
    flops_per_sentence: float | None
    output_tokens: int
    parameters: int
    peak_memory: dict[str, Any]
    instructions_per_sentence: float | None
    unreadable: dict[str, str]
    counted_units: int = 0  # the first units the FLOPs, layer evaluations and instructions were counted on

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _layer_blocks(models: Sequence[Any]) -> list[Any]:
    import torch

    blocks: list[Any] = []
    for model in models:
        for module in model.modules():
            if isinstance(module, torch.nn.ModuleList):
                blocks.extend(module)
    return blocks


def _quantized_linears(models: Sequence[Any]) -> list[Any]:
    """Linear layers that are not ``nn.Linear``: quantized ones (torch's dynamically quantized Linear, the harness's
    per-token ``Int8Linear``), whose integer matmul (``quantized::linear_dynamic``, ``torch._int_mm``)
    FlopCounterMode does not count; their 2·in·out per row is added by a hook."""
    import torch

    out = []
    for model in models:
        for module in model.modules():
            if ("Linear" in type(module).__name__ and not isinstance(module, torch.nn.Linear)
                    and isinstance(getattr(module, "in_features", None), int)
                    and isinstance(getattr(module, "out_features", None), int)):
                out.append(module)
    return out


@contextlib.contextmanager
def counting(models: Sequence[Any]) -> Iterator[dict[str, float]]:
    """Hooks counting layer-block calls and quantized-Linear FLOPs, and the FLOP counter, while the body runs."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    tally = {"layers": 0.0, "qflops": 0.0, "flops": 0.0}
    handles = []

    def on_block(_m: Any, _inp: Any, _out: Any) -> None:
        tally["layers"] += 1

    def on_qlinear(m: Any, inp: Any, _out: Any) -> None:
        x = inp[0] if isinstance(inp, tuple) and inp else None
        if isinstance(x, torch.Tensor) and x.dim() >= 1:
            rows = x.numel() // max(1, x.shape[-1])
            tally["qflops"] += 2.0 * rows * m.in_features * m.out_features

    for block in _layer_blocks(models):
        handles.append(block.register_forward_hook(on_block))
    for lin in _quantized_linears(models):
        handles.append(lin.register_forward_hook(on_qlinear))
    counter = FlopCounterMode(display=False)
    try:
        with counter:
            yield tally
    finally:
        for h in handles:
            h.remove()
        tally["flops"] = float(counter.get_total_flops()) + tally["qflops"]


@functools.lru_cache(maxsize=4)
def instructions_unreadable(perf: str | None = None) -> str | None:
    """None when ``perf stat -e instructions:u`` counts on this machine, else why not (no perf, no PMU, denied).
    Probed once per process (a machine does not grow a PMU mid-run)."""
    exe = perf or shutil.which("perf")
    if exe is None:
        return "perf is not installed (Debian: linux-perf)"
    try:
        proc = subprocess.run([exe, "stat", "-x,", "-e", "instructions:u", "true"], capture_output=True, text=True,
                              timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"perf stat did not run: {exc}"
    text = proc.stderr + proc.stdout
    if "<not supported>" in text:
        return "perf stat reports instructions:u <not supported>: the VM exposes no PMU"
    if "<not counted>" in text or proc.returncode != 0:
        line = (text.strip().splitlines() or ["no output"])[-1]
        return f"perf stat could not count instructions:u ({line.strip()[:120]})"
    return None


def _count_instructions(run: Callable[[], object], perf: str) -> int | None:
    """Instructions (user) this process retired while ``run`` ran, from ``perf stat -p``."""
    with tempfile.NamedTemporaryFile("r", suffix=".perf") as out:
        proc = subprocess.Popen([perf, "stat", "-x,", "-e", "instructions:u", "-o", out.name, "-p", str(os.getpid())],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            run()
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=20)
        for line in Path(out.name).read_text().splitlines():
            parts = line.split(",")
            if len(parts) > 2 and parts[2].startswith("instructions") and parts[0].strip().isdigit():
                return int(parts[0])
    return None


def count_work(system: Any, decode_units: Callable[[int | None], Sequence[Sequence[str]]], sentences: int,
               counted: tuple[int, int], device: str, instructions: str | None,
               ) -> tuple[WorkCounts, list[list[str]]]:
    """Run ``decode_units(None)`` (every timed unit once, in unit order; returns each unit's outputs: the untimed
    reference the timed outputs must equal) under the memory sampler, then ``decode_units(k)`` (the first ``k``
    units, ``counted = (k, their sentences)``) under the FLOP and layer counters, which slow decoding several-fold.

    ``instructions``: None when this machine counts ``instructions:u`` (:func:`instructions_unreadable`, probed
    once per run), else why it does not. Decoder passes are the caller's to fill in (it reads them per unit)."""
    from bench.latency.memory import peak_memory

    models = list(system.models())
    unreadable: dict[str, str] = {}
    result: list[list[str]] = []
    tally: dict[str, float] = {}

    def run() -> None:
        result.extend([list(x) for x in decode_units(None)])

    memory = peak_memory(run, device).to_json()
    units = len(result)
    k, k_sentences = counted
    if models:
        with counting(models) as t:
            decode_units(k)
        tally.update(t)
    else:
        why = "the system decodes outside torch (no torch modules to count)"
        unreadable["flops"] = unreadable["layer_evals"] = why
    params = sum(int(p.numel()) for m in models for p in m.parameters())
    own = system.weights_footprint()
    if own is not None:
        params = int(own["parameters"])
    instr: float | None = None
    if instructions is None:
        count = _count_instructions(lambda: decode_units(k), shutil.which("perf") or "perf")
        instr = None if count is None else count / max(1, k_sentences)
        if count is None:
            unreadable["instructions"] = "perf stat gave no count"
    else:
        unreadable["instructions"] = instructions
    tokens = sum(len(t.split()) for unit in result for t in unit)
    return WorkCounts(
        units=units, sentences=sentences, passes_per_unit=None,
        layer_evals_per_unit=(tally["layers"] / k if models and k else None),
        flops_per_sentence=(tally["flops"] / k_sentences if models and k_sentences else None),
        output_tokens=tokens, parameters=params, peak_memory=memory, instructions_per_sentence=instr,
        unreadable=unreadable, counted_units=k,
    ), result


def work_ratio(base: dict[str, Any] | None, own: dict[str, Any] | None, key: str) -> float | None:
    """Baseline's count ÷ the system's (the orientation of a speed-up: > 1 means the system does less)."""
    if not base or not own:
        return None
    a, b = base.get(key), own.get(key)
    if not isinstance(a, int | float) or not isinstance(b, int | float) or b <= 0:
        return None
    return float(a) / float(b)


__all__ = ["FLOPS_NOTE", "LAYERS_NOTE", "WorkCounts", "count_work", "counting", "instructions_unreadable", "work_ratio"]
