"""The fairseq baselines end to end (needs fairseq: `make test` installs it; missing, this module fails
loudly unless BENCH_SKIP_FAIRSEQ=1 says to skip it knowingly).

Unit checks run fairseq's own code (length offset, Mask-Predict schedule); the smoke tests train
each of the six systems for 20 updates of a 2-layer d=32 model on a toy copy split, then decode.
"""

from __future__ import annotations

import importlib.util
import os
import random
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

if importlib.util.find_spec("fairseq") is None:
    if os.environ.get("BENCH_SKIP_FAIRSEQ") == "1":
        pytest.skip("fairseq not installed and BENCH_SKIP_FAIRSEQ=1", allow_module_level=True)
    raise ImportError(
        "fairseq is not installed, so the six fairseq baselines would go untested: run `make fairseq` "
        "(`make test` does it, from a cached wheel), or set BENCH_SKIP_FAIRSEQ=1 to skip them knowingly."
    )
import torch

from bench.api.system import System
from bench.api.types import Example, TaskInfo
from systems.fairseq_nat.checkpoints import Manifest, UntrustedCheckpointError
from systems.fairseq_nat.presets import VARIANTS

WORDS = "what how why is the a best way to learn make money good india life people time".split()


def _pairs(n: int, seed: int) -> list[Example]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(4, 9))]
        out.append(Example(f"q{seed}-{i}", " ".join(words) + " ?", " ".join(words) + " ?"))
    return out


def test_length_offset_round_trip() -> None:
    """``--pred-length-offset``: src 30, tgt 12 -> class 110 -> predicted length 12 (fairseq's own code)."""
    from fairseq.models.nat.nonautoregressive_transformer import NATransformerDecoder

    pad = 1
    dec = SimpleNamespace(pred_length_offset=True, padding_idx=pad)
    enc = {
        "encoder_out": [torch.zeros(30, 1, 8)],
        "encoder_padding_mask": [torch.zeros(1, 30, dtype=torch.bool)],
    }
    tgt = torch.full((1, 15), pad)
    tgt[0, :12] = 5
    cls = NATransformerDecoder.forward_length_prediction(dec, None, enc, tgt_tokens=tgt)
    assert cls.tolist() == [110]
    length_out = torch.nn.functional.one_hot(cls, 256).float()
    assert NATransformerDecoder.forward_length_prediction(dec, length_out, enc).tolist() == [12]
    # clipped into [0, 255]
    long_tgt = torch.full((1, 200), 5)
    assert NATransformerDecoder.forward_length_prediction(dec, None, enc, tgt_tokens=long_tgt).tolist() == [
        255
    ]


def test_cmlm_remask_schedule() -> None:
    """Mask-Predict with max_iter 9 (10 passes): step s re-masks floor(10 * (1 - (s+1)/10)) of 10 tokens."""
    from fairseq.models.nat.cmlm_transformer import _skeptical_unmasking

    scores = torch.rand(1, 12)
    masks = torch.ones(1, 12, dtype=torch.bool)  # L = 12: bos + 10 tokens + eos
    max_step = 10
    counts = [
        int(_skeptical_unmasking(scores, masks, 1 - (s + 1) / max_step).sum()) for s in range(max_step - 1)
    ]
    assert counts == [10 * (10 - (s + 1)) // 10 for s in range(9)] == [9, 8, 7, 6, 5, 4, 3, 2, 1]  # exact


@pytest.fixture(scope="module")
def toy_task() -> TaskInfo:
    return TaskInfo("quora", _pairs(200, 0), _pairs(24, 1), 48, 32)


@pytest.fixture(scope="module")
def trained(toy_task: TaskInfo, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Train each system once per module, on demand; binarised data shared through one cache dir."""
    import os

    cache = tmp_path_factory.mktemp("fairseq_cache")
    old_env, old_threads = os.environ.get("BENCH_CACHE"), torch.get_num_threads()
    os.environ["BENCH_CACHE"] = str(cache)
    torch.set_num_threads(1)
    done: dict[str, tuple[System, Path]] = {}

    def get(name: str) -> tuple[System, Path]:
        if name not in done:
            from systems.fairseq_nat import system as fs

            work = tmp_path_factory.mktemp(name)
            sys_ = fs.make(name, "smoke", {"seed": 1, "threads": 1})
            sys_.fit(toy_task, work)
            done[name] = (sys_, work)
        return done[name]

    yield get
    torch.set_num_threads(old_threads)
    if old_env is None:
        os.environ.pop("BENCH_CACHE", None)
    else:
        os.environ["BENCH_CACHE"] = old_env


@pytest.mark.slow
@pytest.mark.parametrize("name", list(VARIANTS))
def test_smoke_train_and_decode(name: str, trained: Any, toy_task: TaskInfo) -> None:
    system, work = trained(name)
    assert isinstance(system, System)
    info = system.describe()
    train = info.config["train"]
    assert train["updates"] == 20
    first, last = train["first_loss"][1], train["losses"][-1][1]
    assert last < first, f"{name}: loss did not decrease ({first} -> {last})"
    manifest = Manifest(work / "checkpoints")
    assert "checkpoint_last.pt" in manifest.files
    assert (
        info.config["train"]["decoded_checkpoint"]["sha256"] == manifest.files["checkpoint_last.pt"]["sha256"]
    )
    dev = list(toy_task.dev[:6])
    outs = system.decode(dev)
    assert len(outs) == 6 and all(isinstance(o, str) for o in outs)
    assert "##" not in " ".join(outs) and "<unk>" not in " ".join(outs)  # pieces merged, masks dropped
    assert [system.decode_one(ex) for ex in dev[:3]] == outs[:3]  # same code path, same text
    assert system.last_iterations >= 1


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "iterations", "expected"),
    [
        ("fairseq_nat", 10, 1),  # one pass whatever the iteration setting
        ("fairseq_cmlm", 4, 4),  # forced: max_iter + 1 passes with max_iter = iterations - 1
        ("fairseq_inat", 3, 3),
        ("fairseq_levt", 5, 5),
    ],
)
def test_decoder_pass_counts(
    name: str, iterations: int, expected: int, trained: Any, toy_task: TaskInfo
) -> None:
    system, work = trained(name)
    system.cfg = replace(system.cfg, force_max_iter=True, iterations=iterations)
    system.load(work)
    for ex in toy_task.dev[:3]:
        system.decode_one(ex)
        assert system.last_iterations == expected
    literal = replace(system.cfg, iteration_convention="flag")
    system.cfg = literal
    system.load(work)
    system.decode_one(toy_task.dev[0])
    assert system.last_iterations == (1 if name == "fairseq_nat" else iterations + 1)


@pytest.mark.slow
def test_resume_skip_and_tamper(trained: Any, toy_task: TaskInfo) -> None:
    from systems import build

    _, work = trained("fairseq_nat")
    again = build("fairseq_nat", "smoke", {"seed": 1, "threads": 1})
    again.fit(toy_task, work)  # the same finished run: skipped, checkpoint verified and loaded
    assert again.describe().config["train"]["updates"] == 20
    longer = build("fairseq_nat", "smoke", {"seed": 1, "threads": 1, "max_update": 26})
    longer.fit(toy_task, work)  # resumes fairseq's own checkpoint_last.pt at update 20
    train = longer.describe().config["train"]
    assert train["resumed_from_sha256"] and train["updates"] == 26
    log = (work / "checkpoints" / "train.log").read_text()
    assert "Loaded checkpoint" in log
    ck = work / "checkpoints" / "checkpoint_last.pt"
    data = bytearray(ck.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte
    ck.write_bytes(bytes(data))
    with pytest.raises(UntrustedCheckpointError):
        longer.load(work)
    with pytest.raises(UntrustedCheckpointError):
        build("fairseq_nat", "smoke", {"seed": 1, "threads": 1, "max_update": 30}).fit(toy_task, work)


@pytest.mark.slow
def test_binarise_is_cached_by_content(tmp_path: Path) -> None:
    """Same examples + vocab -> the same binarised dir (not rebuilt); one changed pair -> a new one."""
    from systems.fairseq_nat.data import DONE, binarise
    from systems.fairseq_nat.presets import apply_overrides, preset

    cfg = apply_overrides(preset("fairseq_cmlm", "smoke"), {"vocab": "sentencepiece", "spm_vocab_size": 40})
    train, dev = _pairs(60, 0), _pairs(8, 1)
    first = binarise(cfg, train, dev, say=lambda _: None, root=tmp_path)
    stamp = (first.bin_dir.parent / DONE).stat().st_mtime_ns
    again = binarise(cfg, train, dev, say=lambda _: None, root=tmp_path)
    assert again == first and (first.bin_dir.parent / DONE).stat().st_mtime_ns == stamp
    assert first.spm_model is not None and (first.bin_dir / "train.src-tgt.src.bin").is_file()
    assert first.n_train == 60 and first.n_valid == 8
    changed = binarise(
        cfg, [*train[:-1], Example("x", "how to cook ?", "how do i cook ?")], dev, root=tmp_path
    )
    assert changed.key != first.key and changed.bin_dir != first.bin_dir


#: decoder passes when length-forced with the smoke presets' 10 iterations (AR: one per target position)
FORCED_PASSES = {"fairseq_nat": 1, "fairseq_inat": 10, "fairseq_cmlm": 10, "fairseq_levt": 10, "fairseq_inst": 10}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_random_weights_length_forced(name: str, tmp_path: Path) -> None:
    """weights=random builds the recipe's model without fairseq-train; forced_length L gives exactly
    L - 1 target tokens (+ </s>) with the preset's fixed pass count; free decoding is refused."""
    from systems.fairseq_nat import system as fs

    torch.set_num_threads(1)
    sys_ = fs.make(name, "smoke", {"weights": "random", "threads": 1})
    assert sys_.supports_forced_length and not sys_.needs_training
    sys_.fit(TaskInfo("squad_qg", (), (), 48, 32), tmp_path)
    assert not (tmp_path / "checkpoints").exists()  # nothing was trained
    info = sys_.describe()
    assert info.config["weights"] == "random" and "untrained" in info.backbone
    ex = Example("x", "what is the best way to learn how to cook rice at home ?", "how do i cook rice ?")
    for length in (2, 7, 12):
        out = sys_.decode_one(ex, forced_length=length)
        assert sys_.decoder.last_target_tokens == length - 1, (name, length)
        # real words, never specials the detokenizer strips (an untrained NAT echoes its <unk> canvas)
        assert out.strip() and "<unk>" not in out, (name, length, out)
        assert sys_.last_iterations == FORCED_PASSES.get(name, length), (name, length)
    again = fs.make(name, "smoke", {"weights": "random", "threads": 1})
    again.fit(TaskInfo("squad_qg", (), (), 48, 32), tmp_path / "again")
    assert again.decode_one(ex, forced_length=7) == sys_.decode_one(ex, forced_length=7)  # seeded build
    with pytest.raises(RuntimeError, match="length-forced"):
        sys_.decode_one(ex)


@pytest.mark.slow
def test_decode_only_overrides_reuse_the_finished_run(trained: Any, toy_task: TaskInfo) -> None:
    """The harness gives decode-only overrides the plain run's workdir; fit there must skip training."""
    from bench.runs import RunSpec, training_spec
    from systems import build

    _, work = trained("fairseq_transformer")
    shorter = build("fairseq_transformer", "smoke", {"seed": 1, "threads": 1, "beam": 2, "max_len_b": 12})
    spec = RunSpec("fairseq_transformer", "quora", overrides={"beam": 2, "max_len_b": 12})
    assert training_spec(spec, shorter) == RunSpec("fairseq_transformer", "quora")
    assert training_spec(RunSpec("fairseq_transformer", "quora", overrides={"lr": 1e-3}), shorter).overrides
    shorter.fit(toy_task, work)
    assert shorter.describe().config["train"]["updates"] == 20
    outs = shorter.decode(list(toy_task.dev[:4]))
    assert all(len(o.split()) <= 12 for o in outs)
