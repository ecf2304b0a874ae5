"""The Hugging Face seq2seq adapter: presets and refusals, the BERT2BERT warm start, end-to-end smoke runs, resume."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench.api.errors import UserError
from systems import build
from systems.hf_seq2seq import VARIANTS

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("BENCH_DATA", REPO / ".." / "shared" / "data"))


def quiet(_msg: str) -> None:
    return None


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_variant_builds_at_smoke_as_a_tiny_random_model(name: str) -> None:
    system = build(name, "smoke")
    info = system.describe()
    assert info.family == "AR" and info.iterations == "n" and info.budget == "smoke"
    assert info.backbone in ("tiny-bart", "tiny-bert2bert") and info.config["model"] == info.backbone
    assert json.loads(json.dumps(info.config)) == info.config  # plain JSON
    assert system.model is None  # describe() and build load nothing


def test_cpu_bert2bert_preset_is_the_offline_minilm() -> None:
    cfg = build("bert2bert_minilm_l6", "cpu").describe().config
    assert cfg["model"] == "bert2bert:minilm-l6"
    assert (cfg["max_source_len"], cfg["max_target_len"], cfg["batch_size"], cfg["lr"]) == (96, 32, 16, 2e-4)
    assert (cfg["steps"], cfg["train_examples"]) == (2000, 32_000)  # the Quora calibration point's
    assert cfg["beam_size"] == 1 and cfg["max_decode_len"] == cfg["max_target_len"]
    assert "Rothe" in build("bert2bert_minilm_l6", "cpu").describe().citation


def test_generic_preset_needs_a_model_beyond_smoke() -> None:
    for budget in ("cpu", "paper"):
        with pytest.raises(ValueError, match="--set model=facebook/bart-large"):
            build("hf_seq2seq", budget)
    system = build("hf_seq2seq", "cpu", {"model": "bert2bert:minilm-l6"})
    assert system.describe().backbone == "bert2bert:minilm-l6" and "Rothe" in system.describe().citation
    assert "t5-small" in build("hf_seq2seq", "paper", {"model": "t5-small"}).describe().citation


def test_budgets_a_variant_does_not_offer_are_refused_with_the_reason() -> None:
    with pytest.raises(UserError, match="does not fit a 2-core CPU budget.*bert2bert_minilm_l6"):
        build("bart_large", "cpu")
    with pytest.raises(ValueError, match="not a paper row"):  # a UserError that is also a ValueError
        build("bert2bert_minilm_l6", "paper")


def test_bart_large_paper_preset_is_fairseqs_recipe() -> None:
    system = build("bart_large", "paper")
    cfg = system.describe().config
    assert cfg["model"] == "facebook/bart-large" and "Lewis" in system.describe().citation
    train = {k: cfg[k] for k in ("lr", "steps", "warmup", "schedule", "label_smoothing", "weight_decay",
                                 "max_grad_norm", "precision")}
    assert train == {"lr": 3e-5, "steps": 20_000, "warmup": 500, "schedule": "linear", "label_smoothing": 0.1,
                     "weight_decay": 0.01, "max_grad_norm": 0.1, "precision": "fp16"}
    search = {k: cfg[k] for k in ("beam_size", "length_penalty", "no_repeat_ngram", "min_len", "max_decode_len")}
    assert search == {"beam_size": 6, "length_penalty": 1.0, "no_repeat_ngram": 3, "min_len": 10, "max_decode_len": 60}


def test_overrides_are_checked_before_anything_runs() -> None:
    with pytest.raises(ValueError, match=r"Unknown override\(s\) \['beams'\].*known: .*beam_size"):
        build("hf_seq2seq", "smoke", {"beams": 2})
    with pytest.raises(ValueError, match="expected int"):
        build("bert2bert_minilm_l6", "smoke", {"steps": "many"})
    with pytest.raises(ValueError, match="beam_size=0"):
        build("bert2bert_minilm_l6", "smoke", {"beam_size": 0})


def test_decode_only_overrides_reuse_the_trained_model() -> None:
    from bench.runs import training_key

    plain = build("bert2bert_minilm_l6", "cpu")
    assert training_key(build("bert2bert_minilm_l6", "cpu", {"beam_size": 2, "no_repeat_ngram": 3}), "quora") == (
        training_key(plain, "quora")
    )
    assert training_key(build("bert2bert_minilm_l6", "cpu", {"lr": 5e-5}), "quora") != training_key(plain, "quora")


def test_bert2bert_is_warm_started_from_the_package_on_both_sides() -> None:
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file

    from bench.api.checkpoints import minilm_dir
    from systems.hf_seq2seq.system import build_model

    torch.set_num_threads(1)
    model, tok = build_model("bert2bert:minilm-l6", seed=0)
    ref = load_file(str(minilm_dir() / "model.safetensors"))
    assert torch.equal(model.encoder.embeddings.word_embeddings.weight, ref["embeddings.word_embeddings.weight"])
    query = "encoder.layer.3.attention.self.query.weight"
    assert torch.equal(model.decoder.bert.get_parameter(query), ref[query])  # the decoder is BERT too
    assert model.config.decoder.is_decoder and model.config.decoder.add_cross_attention
    assert model.decoder.bert.encoder.layer[0].crossattention is not None  # new, randomly initialised
    assert model.generation_config.decoder_start_token_id == tok.cls_token_id
    assert model.generation_config.eos_token_id == tok.sep_token_id


@pytest.fixture(scope="module")
def split_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One private $BENCH_CACHE for the module: the Quora splits are built once, not per test."""
    return tmp_path_factory.mktemp("bench-cache")


@pytest.mark.parametrize("name", ["hf_seq2seq", "bert2bert_minilm_l6"])
def test_smoke_run_end_to_end_then_resume_trains_nothing(
    name: str, split_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    import torch

    from bench.runs import RunSpec, training_workdir
    from bench.runs.pipeline import execute
    from systems.training.checkpoint import list_checkpoints

    monkeypatch.setenv("BENCH_CACHE", str(split_cache))
    torch.set_num_threads(1)
    spec = RunSpec(name, "quora", budget="smoke", limit=16)
    rec = execute(spec, results_dir=tmp_path / "results", say=quiet)
    assert rec["status"] == "complete" and rec["outputs"]["n"] == 16
    lines = (tmp_path / "results" / "outputs" / f"{spec.run_id}.txt").read_text().split("\n")
    assert len(lines) == 17 and lines[-1] == ""  # 16 lines, each newline-terminated, none inside an output
    assert rec["system"]["config"]["train"]["steps"] == 20 and rec["training_curve"]["dev_loss"]

    work = training_workdir(spec, build(name, "smoke", {"seed": spec.seed}))
    log = (work / "train_log.jsonl").read_text()
    ckpts = [p.name for p in list_checkpoints(work / "checkpoints")]
    assert ckpts == ["step-20"]
    again = execute(spec, results_dir=tmp_path / "results", say=quiet, force=True)  # fit again, same workdir
    assert (work / "train_log.jsonl").read_text() == log  # nothing trained
    assert [p.name for p in list_checkpoints(work / "checkpoints")] == ckpts
    assert json.loads((work / "fit.json").read_text())["resumed_from"] == 20
    assert again["outputs"]["sha256"] == rec["outputs"]["sha256"]  # the final checkpoint was loaded


def test_decode_one_equals_batched_decode_and_refuses_a_forced_length(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from toy_training import qg_examples

    from bench.api.errors import LengthForcedUnsupported
    from bench.api.types import TaskInfo

    torch.set_num_threads(1)
    exs = qg_examples(32, 0)
    system = build("hf_seq2seq", "smoke", {"steps": 4, "train_examples": None, "beam_size": 2,
                                           "no_repeat_ngram": 2})
    system.fit(TaskInfo("toy", exs, exs[:8], 32, 16), tmp_path)
    batched = system.decode(exs[:6])
    assert [system.decode_one(ex) for ex in exs[:6]] == batched
    assert all("\n" not in out and out == " ".join(out.split()) for out in batched)
    with pytest.raises(LengthForcedUnsupported):
        system.decode_one(exs[0], forced_length=3)


def test_prophetnet_paper_preset_is_glges_script_and_refuses_cpu() -> None:
    cfg = build("prophetnet_large", "paper").describe().config
    assert cfg["model"] == "microsoft/prophetnet-large-uncased"
    assert (cfg["lr"], cfg["warmup"], cfg["schedule"], cfg["max_grad_norm"]) == (1e-4, 1000, "inverse_sqrt", 0.1)
    assert (cfg["beam_size"], cfg["length_penalty"], cfg["no_repeat_ngram"]) == (4, 1.0, 3)
    with pytest.raises(UserError, match="does not fit a 2-core CPU budget"):
        build("prophetnet_large", "cpu")


def test_a_local_prophetnet_directory_trains_and_decodes(tmp_path: Path) -> None:
    """The ProphetNet rows' model class through the adapter, offline: a random 2-layer ProphetNet over the
    MiniLM vocabulary saved as a local directory is loaded by path, takes a teacher-forced step (main-stream
    loss) and generates text."""
    import torch
    from transformers import AutoTokenizer, ProphetNetConfig, ProphetNetForConditionalGeneration

    from bench.api.checkpoints import resolve_checkpoint
    from systems.hf_seq2seq.system import _Collate, _loss_module, _pad_id, _start_id, build_model

    tok = AutoTokenizer.from_pretrained(str(resolve_checkpoint("minilm-l6")))
    cfg = ProphetNetConfig(
        vocab_size=len(tok), hidden_size=32, encoder_ffn_dim=64, decoder_ffn_dim=64, num_encoder_layers=2,
        num_decoder_layers=2, num_encoder_attention_heads=2, num_decoder_attention_heads=2, ngram=2,
        max_position_embeddings=64, pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id,
        eos_token_id=tok.sep_token_id, decoder_start_token_id=tok.sep_token_id,
    )
    torch.manual_seed(0)
    ProphetNetForConditionalGeneration(cfg).save_pretrained(tmp_path / "tiny-prophetnet")
    tok.save_pretrained(tmp_path / "tiny-prophetnet")

    hf, tok2 = build_model(str(tmp_path / "tiny-prophetnet"), seed=0)
    assert type(hf).__name__ == "ProphetNetForConditionalGeneration"
    pairs = [(tok2.encode("what is a cat ?"), tok2.encode("what is a dog ?")[1:])] * 2
    batch = _Collate(_pad_id(hf, tok2), _start_id(hf), 1)(pairs, None)
    loss = _loss_module()(hf, _pad_id(hf, tok2), 0.1)(batch)
    loss.backward()
    assert torch.isfinite(loss) and hf.get_input_embeddings().weight.grad is not None
    out = hf.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=5)
    assert out.shape[0] == 2 and isinstance(tok2.decode(out[0], skip_special_tokens=True), str)


def test_answer_window_reads_the_answers_neighbourhood_on_qg_and_the_head_elsewhere() -> None:
    """A long paragraph whose answer sits past ``max_source_len`` pieces: the head would never show the model
    the answer's sentence; the answer window does, and a task without answers keeps its head and its key."""
    pytest.importorskip("transformers")
    from bench.api.types import Example
    from bench.runs import training_key
    from systems.hf_seq2seq.system import build_model

    filler = " ".join(["the river runs to the sea"] * 30)
    paragraph = f"{filler} beyonce was born in houston in 1981 . {filler}"
    start = paragraph.index("houston")
    ex = Example("q0", f"houston [SEP] {paragraph}", "where was beyonce born ?",
                 {"paragraph": paragraph, "answer": "houston", "answer_start": str(start)})
    system = build("bert2bert_minilm_l6", "smoke", {"source_window": "answer", "max_source_len": 24})
    _, system.tok = build_model("tiny-bert2bert", 0)
    tok = system.tok
    ids = system._sources([ex])[0]
    assert len(ids) == 24 and ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id
    text = tok.decode(ids[1:-1])
    assert text.startswith("houston [SEP]") and "beyonce was born in houston" in text
    head = build("bert2bert_minilm_l6", "smoke", {"max_source_len": 24})
    head.tok = tok
    assert "beyonce" not in tok.decode(head._sources([ex])[0])
    plain = Example("p0", "how do i learn python ?", "what is the best way to learn python ?")
    assert system._sources([plain]) == head._sources([plain])  # no answer fields: the head

    cpu, cpu_head = build("bert2bert_minilm_l6", "cpu"), build("bert2bert_minilm_l6", "cpu", {"source_window": "head"})
    assert cpu.describe().config["source_window"] == "answer"
    assert training_key(cpu, "quora") == training_key(cpu_head, "quora")  # Quora has no answer: same model
    assert training_key(cpu, "squad_qg") != training_key(cpu_head, "squad_qg")
    with pytest.raises(ValueError, match="source_window='middle'.*'head' or 'answer'"):
        build("bert2bert_minilm_l6", "cpu", {"source_window": "middle"})
