"""``fairseq_transformer_ct2`` (#50): the fairseq Transformer's own model, converted once and decoded by CTranslate2.

On a smoke model (20 updates of a 2-layer d=32 Transformer on a toy copy split): the conversion (once, keyed by
the checkpoint's sha256, refused for a tampered checkpoint), the output-equality check (float32 outputs equal
fairseq's at beam 1 and at the preset's beam), forced length (bucketed by length), weights=random, and the
training key it shares with ``fairseq_transformer``. Needs fairseq and ctranslate2 (`make fairseq`).
"""

from __future__ import annotations

import importlib.util
import os
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("fairseq") is None or importlib.util.find_spec("ctranslate2") is None:
    if os.environ.get("BENCH_SKIP_FAIRSEQ") == "1":
        pytest.skip("fairseq/ctranslate2 not installed and BENCH_SKIP_FAIRSEQ=1", allow_module_level=True)
    raise ImportError("fairseq or ctranslate2 is not installed, so fairseq_transformer_ct2 would go untested: run "
                      "`make fairseq` (it installs the [ct2] extra), or set BENCH_SKIP_FAIRSEQ=1 to skip knowingly.")

from bench.api.types import Example, TaskInfo
from bench.latency import memory
from systems import build
from systems.fairseq_ct2.convert import CT2_DIR, DONE
from systems.fairseq_ct2.decode import ct2_device, fairseq_blocks_ngrams
from systems.fairseq_nat.checkpoints import UntrustedCheckpointError

pytestmark = pytest.mark.usefixtures("one_torch_thread")

WORDS = "what how why is the a best way to learn make money good india life people time".split()
NAME = "fairseq_transformer_ct2"
BASE = {"seed": 1, "threads": 1}


def _pairs(n: int, seed: int) -> list[Example]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(4, 9))]
        out.append(Example(f"q{seed}-{i}", " ".join(words) + " ?", " ".join(words) + " ?"))
    return out


@pytest.fixture(scope="module")
def toy_task() -> TaskInfo:
    return TaskInfo("squad_qg", tuple(_pairs(200, 0)), tuple(_pairs(32, 1)), 48, 32)


@pytest.fixture(scope="module")
def workdir(toy_task: TaskInfo, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One smoke fairseq_transformer, trained once for the module (fairseq_transformer_ct2 converts it)."""
    work = tmp_path_factory.mktemp("fairseq_transformer")
    build("fairseq_transformer", "smoke", BASE).fit(toy_task, work)
    return work


def _ct2(toy_task: TaskInfo, work: Path, **overrides: Any) -> Any:
    system = build(NAME, "smoke", {**BASE, **overrides})
    system.fit(toy_task, work)
    return system


def test_it_shares_fairseq_transformer_s_training_key_and_workdir() -> None:
    from bench.runs.identity import build_system, model_spec
    from bench.runs.spec import RunSpec

    for budget in ("smoke", "cpu"):
        ours = RunSpec(NAME, "quora", budget=budget, overrides={"compute_type": "float32", "beam": 1})
        theirs = RunSpec("fairseq_transformer", "quora", budget=budget)
        (trained, key), (their_trained, their_key) = (model_spec(s, build_system(s)) for s in (ours, theirs))
        assert (trained.system, key) == ("fairseq_transformer", their_key)  # its model, not a second training
        assert trained.run_id == their_trained.run_id


def test_settings_are_checked_in_one_line() -> None:
    system = build(NAME, "smoke")
    assert system.settings.resolved_compute_type("cpu") == "int8"
    assert system.settings.resolved_compute_type("cuda") == "float16"
    assert build(NAME, "cpu").cfg.beam == build("fairseq_transformer", "cpu").cfg.beam  # the paper's beam
    with pytest.raises(ValueError, match="compute_type='int4'; choose one of"):
        build(NAME, "smoke", {"compute_type": "int4"})
    with pytest.raises(ValueError, match=r"Unknown override\(s\) \['beams'\] for fairseq_transformer_ct2"):
        build(NAME, "smoke", {"beams": 2})
    with pytest.raises(ValueError, match="intra_threads"):
        build(NAME, "smoke", {"intra_threads": 0})


def test_device_placement_maps_to_ctranslate2_s_device_argument() -> None:
    assert ct2_device("cuda:1") == ("cuda", 1)
    assert ct2_device("cuda") == ("cuda", 0)
    assert ct2_device("cpu") == ct2_device("cpu:1") == ("cpu", 0)
    with pytest.raises(ValueError, match="--device cpu"):
        ct2_device("mps")


def test_conversion_runs_once_per_checkpoint_and_refuses_a_tampered_one(
    toy_task: TaskInfo, workdir: Path, tmp_path: Path
) -> None:
    system = _ct2(toy_task, workdir)
    sha = system.converted["sha256"]
    out = workdir / CT2_DIR / sha[:16]
    assert Path(system.converted["dir"]) == out and (out / DONE).is_file() and (out / "model.bin").is_file()
    assert system.converted["checkpoint"] == "checkpoint_last.pt"
    stamp = (out / "model.bin").stat().st_mtime_ns
    _ct2(toy_task, workdir, compute_type="float32")  # another compute type: the same conversion, not redone
    assert (out / "model.bin").stat().st_mtime_ns == stamp
    assert [p.name for p in (workdir / CT2_DIR).iterdir()] == [sha[:16]]

    copy = tmp_path / "copy"
    shutil.copytree(workdir, copy, ignore=shutil.ignore_patterns(CT2_DIR))
    with (copy / "checkpoints" / "checkpoint_last.pt").open("ab") as fh:
        fh.write(b"\0")
    with pytest.raises(UntrustedCheckpointError):
        _ct2(toy_task, copy)


@pytest.mark.parametrize("beam", [1, 4])
def test_float32_outputs_equal_fairseq_s(toy_task: TaskInfo, workdir: Path, beam: int) -> None:
    """The output-equality check: the same checkpoint, float32, fairseq's generator settings -> the same text
    (beam 4 too on this model; CTranslate2 issue #11 allows small beam differences, none occur here)."""
    items = _pairs(40, 3)
    fairseq = build("fairseq_transformer", "smoke", {**BASE, "beam": beam})
    fairseq.fit(toy_task, workdir)
    ours = _ct2(toy_task, workdir, compute_type="float32", beam=beam)
    expected = fairseq.decode(items)
    assert ours.decode(items) == expected
    assert [ours.decode_one(ex) for ex in items[:5]] == expected[:5]
    int8 = _ct2(toy_task, workdir, beam=beam)  # the default on a CPU: decodes, its outputs are scored, not held
    assert len(int8.decode(items)) == len(items)
    assert int8.describe().config["ctranslate2"]["compute_type_used"] == "int8"


def test_the_no_repeat_rule_follows_fairseq_s_cpu_generator() -> None:
    """fairseq 0.12's Python n-gram blocker is handed the padded buffer and bans nothing; sliced, it would."""
    import torch
    from fairseq.ngram_repeat_block import NGramRepeatBlock

    tokens = torch.full((1, 10), 1)
    tokens[0, :5] = torch.tensor([2, 7, 8, 7, 8])  # the next 7 repeats the trigram "7 8 7"
    banned = []
    for buffer in (tokens, tokens[:, :5]):
        lprobs = torch.zeros(1, 20)
        NGramRepeatBlock(3)(buffer, lprobs, 1, 1, 4)
        banned.append((lprobs == -float("inf")).nonzero()[:, 1].tolist())
    assert banned == [[], [7]]
    assert not fairseq_blocks_ngrams("cpu")


class _Recorder:
    """Wraps the translator to see each CTranslate2 call's options and hypotheses."""

    def __init__(self, real: Any) -> None:
        self.real, self.calls = real, []

    def translate_batch(self, sources: Any, **options: Any) -> Any:
        results = self.real.translate_batch(sources, **options)
        self.calls.append((len(sources), options, [len(r.hypotheses[0]) for r in results]))
        return results


def test_forced_length_is_exact_and_batches_bucket_by_length(toy_task: TaskInfo, workdir: Path) -> None:
    system = _ct2(toy_task, workdir)
    items = _pairs(5, 4)
    system.decode_one(items[0], forced_length=7)
    assert system.last_iterations == 7
    recorder = _Recorder(system.decoder.translator(system.device, system.cfg.threads))
    system.decoder._translator = recorder
    system.decode_one(items[0], forced_length=6)
    system.decode_forced(items, [3, 5, 3, 9, 5])
    summary = [(n, o["min_decoding_length"], o["max_decoding_length"], lens) for n, o, lens in recorder.calls]
    assert summary == [(1, 6, 6, [6]), (2, 3, 3, [3, 3]), (2, 5, 5, [5, 5]), (1, 9, 9, [9])]
    assert system.last_iterations == 3 + 5 + 9
    # the sweep's batch is the same bucketed call set (a real batched decode), and free decoding is one call
    assert system.batched_decode
    recorder.calls.clear()
    assert system.decode_batch(items, [3, 5, 3, 9, 5]) == system.decode_forced(items, [3, 5, 3, 9, 5])
    assert [n for n, _, _ in recorder.calls[:3]] == [2, 2, 1]
    with pytest.raises(ValueError, match="one per"):
        system.decode_batch(items, [3])


def test_random_weights_convert_the_untrained_model_for_timing(tmp_path: Path) -> None:
    task = TaskInfo("squad_qg", (), (), 48, 32)
    system = build(NAME, "smoke", {"weights": "random", "threads": 1})
    assert not system.needs_training
    system.fit(task, tmp_path / "a")
    out = system.decode_one(Example("e", "what is the best way ?", "x"), forced_length=5)
    assert len(out.split()) <= 5 and system.last_iterations == 5
    with pytest.raises(RuntimeError, match="length-forced"):
        system.decode_one(Example("e", "what is it ?", "x"))
    again = build(NAME, "smoke", {"weights": "random", "threads": 1})
    again.fit(task, tmp_path / "b")
    assert again.converted["sha256"] == system.converted["sha256"]  # seeded: the same untrained weights
    # models() is empty (CTranslate2 holds the weights), yet the sweep's model size is the fairseq model's
    fairseq = build("fairseq_transformer", "smoke", {"weights": "random", "threads": 1})
    fairseq.fit(task, tmp_path / "c")
    size = memory.model_size(system, None)
    assert not system.models() and size["parameters"] == memory.model_size(fairseq, None)["parameters"] > 0
    assert size["parameter_bytes"] == size["parameters"] and "int8 weights" in size["parameter_bytes_note"]
