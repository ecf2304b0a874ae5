"""``compute_type`` (#60): the NAR and semi-NAR families decode at int8 (or, on a GPU, float16/bfloat16) when asked,
and exactly as trained otherwise; the setting reaches the model, is decode-only (an int8 run decodes the fp32 run's
trained model, under its own run id) and never touches a checkpoint."""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import pytest
from toy_training import qg_examples

from bench.api.types import TaskInfo
from bench.env.device import fit_on

torch = pytest.importorskip("torch")

from systems import build  # noqa: E402
from systems.compute import DecodeCompute, Int8Linear, check_device, quantize_linears  # noqa: E402
from systems.presets import COMPUTE_TYPES, check_compute_type, compute_twins, resolve_twin  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def task() -> TaskInfo:
    return TaskInfo("squad_qg", qg_examples(64, 0), qg_examples(16, 1), 464, 48)


# ---------------------------------------------------------------------------------------------- the int8 Linear
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")  # torch.ao's deprecation notices
def test_int8_linear_is_close_to_fp32_and_each_row_is_its_own() -> None:
    """Close to the fp32 layer, and exact row independence: a row's output is the same alone, in a batch with
    a much larger row, and beside padding (what per-tensor dynamic quantization breaks)."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(48, 40)
    q = Int8Linear.from_float(lin)
    x = torch.randn(3, 7, 48)
    with torch.no_grad():
        want = lin(x)
        got = q(x)
        assert got.shape == want.shape
        assert (got - want).abs().max().item() < 0.05 * want.abs().max().item()
        crowd = torch.cat([x[:1], 50 * torch.randn(1, 7, 48), torch.zeros(1, 7, 48)])
        assert torch.equal(q(crowd)[0], q(x[:1])[0])
        assert torch.equal(q(x[0, :3]), q(x[0])[:3])  # a token beside other tokens, or without them
        assert q(torch.zeros(0, 48)).shape == (0, 40)  # an empty batch (fairseq's LevT may pass one)
    per_tensor = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(lin), {torch.nn.Linear},
                                                        dtype=torch.qint8) if hasattr(torch, "ao") else None
    if per_tensor is not None:  # why not PyTorch's quantize_dynamic: its rows do depend on their batch
        with torch.no_grad():
            assert not torch.equal(per_tensor(crowd)[0], per_tensor(x[:1])[0])


def test_quantize_linears_replaces_exactly_the_linear_layers_once() -> None:
    class Special(torch.nn.Linear):
        pass

    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Sequential(torch.nn.Linear(8, 2)),
                                Special(2, 2), torch.nn.Embedding(5, 4))
    assert quantize_linears(model) == 2
    assert isinstance(model[0], Int8Linear) and isinstance(model[2][0], Int8Linear)
    assert type(model[3]) is Special and isinstance(model[4], torch.nn.Embedding)
    assert quantize_linears(model) == 0  # already int8: nothing left to replace


# ---------------------------------------------------------------------------------------------- the setting
@pytest.mark.parametrize("name", ["encoder_minilm_l6", "mist_minilm_l6", "fairseq_nat", "fairseq_cmlm",
                                  "fairseq_levt", "fairseq_inst", "fairseq_inat"])
def test_every_nar_family_takes_the_setting_and_refuses_an_unknown_value(name: str) -> None:
    assert build(name, "smoke").describe().config["compute_type"] == "float32"
    assert build(name, "smoke", {"compute_type": "int8"}).describe().config["compute_type"] == "int8"
    assert f"{name}_int8" in __import__("systems").SYSTEMS  # its registered twin
    with pytest.raises(ValueError) as err:
        build(name, "smoke", {"compute_type": "int4"})
    line = str(err.value)
    assert "\n" not in line and "compute_type='int4'" in line and ", ".join(COMPUTE_TYPES) in line


def test_twins_are_presets_with_the_compute_type_set() -> None:
    twins = compute_twins(["a", "b_c"])
    assert twins == {"a_int8": ("a", "int8"), "b_c_int8": ("b_c", "int8")}
    assert resolve_twin("a_int8", {"seed": 1}, twins) == ("a", {"seed": 1, "compute_type": "int8"})
    assert resolve_twin("a", {"seed": 1}, twins) == ("a", {"seed": 1})
    assert resolve_twin("a_int8", {"compute_type": "int8"}, twins)[0] == "a"
    with pytest.raises(ValueError, match="a_int8 is a at compute_type=int8; --set compute_type='float32' contra"):
        resolve_twin("a_int8", {"compute_type": "float32"}, twins)
    twin = build("fairseq_nat_int8", "smoke")
    assert twin.describe().name == "fairseq_nat_int8" and twin.cfg.system == "fairseq_nat"
    assert twin.model_siblings == ("fairseq_nat",) and build("fairseq_nat", "smoke").model_siblings == ()
    assert build("mist_bert_int8", "cpu").cpu_stand_in == "mist_minilm_l6_int8"
    assert build("mist_bert", "cpu").cpu_stand_in == "mist_minilm_l6"
    with pytest.raises(ValueError, match="choose one of"):
        check_compute_type("fp8", "x")


@pytest.mark.parametrize("name", ["mist_minilm_l6", "encoder_minilm_l6", "fairseq_nat", "fairseq_levt"])
def test_an_int8_quality_run_decodes_at_the_batch_the_meter_times(name: str) -> None:
    """int8 rounding grows a padded batch's float noise into other tokens (trained MIST: 6/300 items), so an int8
    run decodes item by item unless its batch size is set; float32 keeps its preset's batch."""
    from systems.presets import INT8_DECODE_BATCH_SIZE

    fp32 = build(name, "cpu").cfg.decode_batch_size
    assert fp32 > 1 and INT8_DECODE_BATCH_SIZE == 1
    assert build(f"{name}_int8", "cpu").cfg.decode_batch_size == 1
    assert build(name, "cpu", {"compute_type": "int8"}).describe().config["decode_batch_size"] == 1
    assert build(f"{name}_int8", "cpu", {"decode_batch_size": 16}).cfg.decode_batch_size == 16  # the user's
    assert build(name, "cpu", {"compute_type": "float32"}).cfg.decode_batch_size == fp32


def test_ctranslate2_at_int8_decodes_its_quality_run_item_by_item_too() -> None:
    ct2 = build("fairseq_transformer_ct2", "cpu")  # "default": int8 on a CPU
    assert ct2.quality_batch_size == 1 and ct2.describe().config["decode_batch_size"] == 1
    assert build("fairseq_transformer_ct2", "cpu", {"compute_type": "int8_float32"}).quality_batch_size == 1
    fp32 = build("fairseq_transformer_ct2", "cpu", {"compute_type": "float32"})
    assert fp32.quality_batch_size == fp32.cfg.decode_batch_size > 1
    assert build("fairseq_transformer_ct2", "cpu", {"decode_batch_size": 8}).quality_batch_size == 8


def test_a_device_that_cannot_run_the_compute_type_is_refused_in_one_line() -> None:
    check_device("int8", "cpu", "x")
    check_device("float16", "cuda:1", "x")
    check_device("float32", "cuda", "x")
    with pytest.raises(ValueError, match=r"^x: compute_type=int8 runs on cpu, not on cuda:0; there choose float32 or "
                                         r"float16 or bfloat16 \(--set compute_type=...\)$"):
        check_device("int8", "cuda:0", "x")
    with pytest.raises(ValueError, match="compute_type=bfloat16 runs on cuda, not on cpu; there choose float32 or"):
        check_device("bfloat16", "cpu", "x")
    system = build("encoder_minilm_l6", "smoke", {"compute_type": "float16"})
    with pytest.raises(ValueError, match="float16 runs on cuda"):
        system.place("cpu")  # before any training: the harness places a system before it fits it


def test_half_precision_is_an_autocast_on_the_gpu() -> None:
    """The GPU path, as far as a CPU can check it: float16/bfloat16 leave the weights alone and decode under
    ``torch.autocast`` of the run's device with that dtype (not run on a GPU here)."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 4))
    for compute, dtype in (("float16", torch.float16), ("bfloat16", torch.bfloat16)):
        dc = DecodeCompute(compute, "x")
        assert dc.prepare(model, "cuda:0") is model and type(model[0]) is torch.nn.Linear
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a CPU build of torch warns that CUDA autocast is off
            ctx = dc.context("cuda:0")
        assert isinstance(ctx, torch.autocast) and ctx.device == "cuda" and ctx.fast_dtype == dtype


def test_the_decode_runs_inside_the_compute_types_autocast(task: TaskInfo, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The wiring of the GPU path, exercised on the CPU: with bfloat16 allowed on a CPU for the test, every Linear
    of the NAR decode runs under autocast at bfloat16, and the weights stay fp32."""
    import systems.compute

    monkeypatch.setitem(systems.compute.RUNS_ON, "bfloat16", ("cpu", "cuda"))
    system = build("encoder_minilm_l6", "smoke", {"compute_type": "bfloat16", "steps": 2})
    fit_on(system, task, tmp_path / "w", "cpu")
    seen: list[tuple[bool, object]] = []
    for m in system.model.modules():
        if type(m) is torch.nn.Linear:
            m.register_forward_hook(lambda _m, _i, out: seen.append((torch.is_autocast_enabled("cpu"), out.dtype)))
    system.decode_one(task.dev[0])
    assert seen and all(on and dtype == torch.bfloat16 for on, dtype in seen)
    assert all(p.dtype == torch.float32 for p in system.model.parameters())


# ---------------------------------------------------------------------------------------------- it reaches the model
def _linears(model: object) -> tuple[int, int]:
    mods = list(model.modules())  # type: ignore[attr-defined]
    return sum(type(m) is torch.nn.Linear for m in mods), sum(isinstance(m, Int8Linear) for m in mods)


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_nar_setting_reaches_the_model_and_leaves_the_checkpoint_alone(task: TaskInfo, tmp_path: Path) -> None:
    """float32: the trained model untouched (no Int8Linear, the head as trained); int8: every Linear layer of the
    decoded model quantized, the vocabulary projection included, after the model is placed; the workdir's
    checkpoints are byte for byte what training wrote."""
    work = tmp_path / "w"
    fp32 = build("encoder_minilm_l6", "smoke", {"steps": 2})
    fit_on(fp32, task, work, "cpu")
    before = _digest(work)
    n_linear, n_int8 = _linears(fp32.model)
    assert n_linear > 0 and n_int8 == 0 and fp32.model.token_head.decoder.bias is None
    want = fp32.decode(list(task.dev))

    int8 = build("encoder_minilm_l6_int8", "smoke", {"steps": 2})
    fit_on(int8, task, work, "cpu")  # finds the finished training, loads it, quantizes the model placed
    assert _linears(int8.model) == (0, n_linear)
    assert isinstance(int8.model.token_head.decoder, Int8Linear)  # the vocabulary projection too
    got = int8.decode(list(task.dev))
    assert len(got) == len(want) and [int8.decode_one(ex) for ex in task.dev[:4]] == got[:4]
    assert _digest(work) == before  # no checkpoint written from the int8 model
    own = int8.weights_footprint()
    assert fp32.weights_footprint() is None and own is not None
    n_fp32 = sum(p.numel() for p in fp32.model.parameters())
    assert own["parameters"] == n_fp32 + int8.model.token_head.decoder.bias.numel()  # the folded head bias
    assert n_fp32 < own["parameter_bytes"] < 4 * n_fp32 and "int8" in own["parameter_bytes_note"]
    assert _linears(fp32.model)[1] == 0  # the fp32 system's model is another object, untouched


def test_the_fairseq_setting_reaches_the_model(task: TaskInfo, tmp_path: Path) -> None:
    """Every fairseq Linear quantized, and every attention on fairseq's own path (the fused one would read the
    fp32 weights past the int8 modules); float32 keeps both as built."""
    pytest.importorskip("fairseq", reason="fairseq baselines need `make fairseq`")
    from fairseq.modules.multihead_attention import MultiheadAttention

    for name, int8 in (("fairseq_cmlm", False), ("fairseq_cmlm_int8", True)):
        system = build(name, "smoke", {"weights": "random"})
        fit_on(system, task, tmp_path / name, "cpu")
        model = system.models()[0]
        n_linear, n_int8 = _linears(model)
        attn = [m.skip_embed_dim_check for m in model.modules() if isinstance(m, MultiheadAttention)]
        assert attn and all(a == int8 for a in attn)
        assert (n_int8 > 0 and n_linear == 0) if int8 else (n_int8 == 0 and n_linear > 0)
        assert len(system.decode_one(task.dev[0], forced_length=6).split()) <= 6


# ---------------------------------------------------------------------------------------------- decode-only identity
def test_an_int8_run_has_its_own_id_and_decodes_the_fp32_runs_model() -> None:
    from bench.runs import RunSpec, build_system, model_spec, training_workdir

    fp32 = RunSpec("encoder_minilm_l6", "quora", budget="cpu")
    by_set = RunSpec("encoder_minilm_l6", "quora", budget="cpu", overrides={"compute_type": "int8"})
    twin = RunSpec("encoder_minilm_l6_int8", "quora", budget="cpu")
    assert len({fp32.run_id, by_set.run_id, twin.run_id}) == 3  # three runs, three outputs files
    workdir = training_workdir(fp32, build_system(fp32))
    for spec in (by_set, twin):
        assert training_workdir(spec, build_system(spec)) == workdir  # one trained model
        assert model_spec(spec, build_system(spec))[0].run_id == fp32.run_id  # trained by the fp32 run
    fs = RunSpec("fairseq_nat", "quora", budget="cpu")
    fs_twin = RunSpec("fairseq_nat_int8", "quora", budget="cpu")
    assert training_workdir(fs_twin, build_system(fs_twin)) == training_workdir(fs, build_system(fs))


def test_ctranslate2_keeps_its_own_compute_type() -> None:
    """fairseq_transformer_ct2 shares fairseq_transformer's config: its compute_type is CTranslate2's, and the
    PyTorch one is not recorded beside it (one compute type per record)."""
    config = build("fairseq_transformer_ct2", "smoke", {"compute_type": "int8"}).describe().config
    assert "compute_type" not in config and config["ctranslate2"]["compute_type"] == "int8"


@pytest.mark.slow
def test_an_int8_smoke_model_decodes_like_its_fp32_self(tmp_path: Path) -> None:
    """Quality on a trained smoke model (the smoke preset's tiny encoder, 400 updates so that its outputs vary with
    the source): the int8 outputs agree with fp32's on at least 90 % of the items, and BLEU-4 against the
    references moves by at most the boards' tolerance (0.5). Measured: 99.2 % identical (119 of 120), BLEU-4 moved
    by 0.000001 points (this toy task scores near 0: the check is the agreement)."""
    from bench.report.compute_twins import TOLERANCE
    from bench.scoring.agreement import identical_outputs
    from bench.scoring.coco import bleu_corpus, cook_bleu

    train = TaskInfo("squad_qg", qg_examples(2000, 3), qg_examples(16, 1), 464, 48)
    settings = {"steps": 400, "train_examples": 2000}
    fp32 = build("encoder_minilm_l6", "smoke", settings)
    fit_on(fp32, train, tmp_path / "w", "cpu")
    int8 = build("encoder_minilm_l6_int8", "smoke", settings)
    fit_on(int8, train, tmp_path / "w", "cpu")  # the fp32 model, found trained
    items = qg_examples(120, 7)
    a, b = fp32.decode(items), int8.decode(items)
    assert len(set(a)) >= 0.1 * len(items), "the fp32 outputs hardly vary: agreement would prove nothing"
    agree = identical_outputs(a, b)["rate"]

    def bleu4(hyps: list[str]) -> float:
        return 100 * bleu_corpus([cook_bleu(h, [ex.target]) for h, ex in zip(hyps, items, strict=True)])[3]

    delta = bleu4(b) - bleu4(a)
    assert agree >= 0.9, f"int8 agrees with fp32 on {agree:.0%} of the items"
    assert abs(delta) <= TOLERANCE, f"BLEU-4 moved by {delta:+.2f} (tolerance {TOLERANCE})"

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


@pytest.mark.slow
def test_bench_run_of_the_int8_twin_decodes_the_fp32_runs_model(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end at the smoke budget: the twin trains nothing, decodes the fp32 run's checkpoint (its record
    names that workdir and training run), writes its own outputs under its own run id, and records int8."""
    import os

    if not Path(os.environ.get("BENCH_DATA", DATA)).is_dir():
        pytest.skip("no data dir")
    from bench.runs import RunSpec
    from bench.runs.pipeline import execute

    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    quiet = lambda _m: None  # noqa: E731
    tiny = {"steps": 4, "train_examples": 64}
    fp32 = execute(RunSpec("encoder_minilm_l6", "quora", budget="smoke", overrides=tiny, limit=8),
                   results_dir=tmp_path / "results", say=quiet)
    workdir = Path(fp32["model"]["workdir"])
    trained = _digest(workdir / "checkpoints")
    said: list[str] = []
    int8 = execute(RunSpec("encoder_minilm_l6_int8", "quora", budget="smoke", overrides=tiny, limit=8),
                   results_dir=tmp_path / "results", say=said.append)
    assert int8["model"] == fp32["model"] and _digest(workdir / "checkpoints") == trained
    assert any("encoder_minilm_l6's model" in line for line in said)
    assert int8["run_id"] != fp32["run_id"] and int8["outputs"]["path"] != fp32["outputs"]["path"]
    assert int8["system"]["config"]["compute_type"] == "int8" and fp32["system"]["config"]["compute_type"] == "float32"
    assert int8["system"]["name"] == "encoder_minilm_l6_int8" and int8["outputs"]["n"] == 8
