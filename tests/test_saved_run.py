"""systems.saved_run: a trained run's workdir read back for init_from, and its error messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from systems.backbone import Backbone, WordPieceTokenizer, tiny_backbone, tiny_vocab  # noqa: E402
from systems.saved_run import open_run, write_run_files  # noqa: E402
from systems.training import save_checkpoint  # noqa: E402

META = "toy_model.json"


def _run(workdir: Path, steps: tuple[int, ...] = (3,)) -> Backbone:
    """A finished toy run: meta, vocab and one complete checkpoint per step (the last one wins)."""
    workdir.mkdir(parents=True, exist_ok=True)
    tok = WordPieceTokenizer(tiny_vocab(["river", "city"]), lowercase=False)
    model = tiny_backbone(vocab_size=tok.vocab_size, hidden=16, layers=1, heads=2, seed=1)
    meta = {"lowercase": False, "backbone_config": model.config.to_hf(), "variant": "toy"}
    write_run_files(workdir, META, tok, meta)
    for step in steps:
        with torch.no_grad():
            model.embeddings.word_embeddings.weight.fill_(float(step))
        save_checkpoint(workdir / "checkpoints", step, model, None, None)
    return model


def _fix_named(msg: str, via: str = "init_from") -> None:
    assert "bench run" in msg and f"{via}=<workdir of a finished run>" in msg, msg


def test_round_trip_loads_the_newest_checkpoint(tmp_path: Path) -> None:
    trained = _run(tmp_path, steps=(2, 5))
    run = open_run(tmp_path, META, "Toy", keys=("variant",))
    assert run.checkpoint == "step-5" and run.meta["variant"] == "toy"
    tok = run.tokenizer()
    assert tok.lowercase is False and tok.vocab == WordPieceTokenizer(tmp_path / "vocab.txt").vocab
    model = run.load(lambda backbone: backbone)
    assert not model.training
    for name, value in trained.state_dict().items():
        assert torch.equal(model.state_dict()[name], value), name


def test_best_weights_win_over_checkpoints(tmp_path: Path) -> None:
    from safetensors.torch import save_model

    trained = _run(tmp_path)
    assert open_run(tmp_path, META, "Toy", best="best").checkpoint == "step-3"  # no best/ yet
    (tmp_path / "best").mkdir()
    save_model(trained, str(tmp_path / "best" / "model.safetensors"))
    assert open_run(tmp_path, META, "Toy", best="best").checkpoint == "best"


def test_missing_meta_names_the_file_and_the_override(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as err:
        open_run(tmp_path / "nope", META, "Toy", via="mix_from")
    msg = str(err.value)
    assert str(tmp_path / "nope" / META) in msg and "finished Toy run" in msg
    _fix_named(msg, "mix_from")


def test_corrupt_or_foreign_meta_is_a_clear_error(tmp_path: Path) -> None:
    _run(tmp_path)
    (tmp_path / META).write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON") as err:
        open_run(tmp_path, META, "Toy")
    assert str(tmp_path / META) in str(err.value)
    _fix_named(str(err.value))
    (tmp_path / META).write_text(json.dumps({"lowercase": True}))
    with pytest.raises(ValueError, match=r"lacks \['backbone_config', 'size'\]") as err:
        open_run(tmp_path, META, "Toy", keys=("size",))
    _fix_named(str(err.value))
    (tmp_path / META).write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a Toy run's meta file"):
        open_run(tmp_path, META, "Toy")


def test_missing_vocab_or_checkpoint_is_a_clear_error(tmp_path: Path) -> None:
    _run(tmp_path, steps=())
    with pytest.raises(FileNotFoundError, match="no complete checkpoint under") as err:
        open_run(tmp_path, META, "Toy")
    _fix_named(str(err.value))
    with pytest.raises(FileNotFoundError, match="no best/model.safetensors and no complete checkpoint"):
        open_run(tmp_path, META, "Toy", best="best")
    (tmp_path / "vocab.txt").unlink()
    with pytest.raises(FileNotFoundError, match="vocab.txt not found"):
        open_run(tmp_path, META, "Toy")


def test_unfinished_checkpoint_is_skipped_and_corrupt_weights_are_named(tmp_path: Path) -> None:
    _run(tmp_path, steps=(2, 4))
    (tmp_path / "checkpoints" / "step-4" / "COMPLETE").unlink()  # killed mid-save
    run = open_run(tmp_path, META, "Toy")
    assert run.checkpoint == "step-2"
    run.weights.write_bytes(b"\x00garbage")
    with pytest.raises(ValueError, match="cannot load it into a Toy model") as err:
        run.load(lambda backbone: backbone)
    assert str(run.weights) in str(err.value)
    _fix_named(str(err.value))
