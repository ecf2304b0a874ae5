"""Checkpoint safety: only files this harness wrote (same sha256) are ever unpickled (no fairseq needed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from systems.fairseq_nat.checkpoints import (
    UNSAFE_ENV,
    Manifest,
    UntrustedCheckpointError,
    read_verified,
    unsafe_pickle_load,
)


def _write(p: Path, data: bytes) -> Path:
    p.write_bytes(data)
    return p


def test_manifest_records_and_verifies(tmp_path: Path) -> None:
    last = _write(tmp_path / "checkpoint_last.pt", b"weights-1")
    _write(tmp_path / "notes.pt", b"not a fairseq checkpoint name")
    m = Manifest(tmp_path)
    assert m.record_new() == ["checkpoint_last.pt"]
    assert set(Manifest(tmp_path).files) == {"checkpoint_last.pt"}  # persisted; foreign names ignored
    assert Manifest(tmp_path).verify(last) == m.files["checkpoint_last.pt"]["sha256"]
    assert read_verified(last, Manifest(tmp_path)) == b"weights-1"
    assert m.record_new() == []  # unchanged files are not re-hashed


def test_tampered_or_unknown_checkpoints_are_refused(tmp_path: Path) -> None:
    last = _write(tmp_path / "checkpoint_last.pt", b"weights-1")
    m = Manifest(tmp_path)
    m.record_new()
    last.write_bytes(b"weights-2")  # same size, new bytes
    with pytest.raises(UntrustedCheckpointError, match="differs from the one recorded"):
        Manifest(tmp_path).verify(last)
    best = _write(tmp_path / "checkpoint_best.pt", b"dropped in by someone else")
    with pytest.raises(UntrustedCheckpointError, match="not in"):
        Manifest(tmp_path).verify(best)
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    copy = _write(elsewhere / "checkpoint_last.pt", b"weights-1")
    with pytest.raises(UntrustedCheckpointError):
        m.verify(copy)  # a recorded name in another directory is not the recorded file


def test_rewritten_checkpoint_is_rehashed_and_removed_ones_dropped(tmp_path: Path) -> None:
    last = _write(tmp_path / "checkpoint_last.pt", b"a")
    inter = _write(tmp_path / "checkpoint_1_10.pt", b"b")
    m = Manifest(tmp_path)
    m.record_new()
    old = m.files["checkpoint_last.pt"]["sha256"]
    last.write_bytes(b"longer bytes")
    inter.unlink()
    _write(tmp_path / "checkpoint_1_20.pt", b"c")
    assert sorted(m.record_new()) == ["checkpoint_1_20.pt", "checkpoint_last.pt"]
    assert set(m.files) == {"checkpoint_last.pt", "checkpoint_1_20.pt"}
    assert m.files["checkpoint_last.pt"]["sha256"] != old


def test_unsafe_flag_is_scoped_to_the_block(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(UNSAFE_ENV, raising=False)
    with unsafe_pickle_load():
        assert os.environ[UNSAFE_ENV] == "1"
    assert UNSAFE_ENV not in os.environ
    monkeypatch.setenv(UNSAFE_ENV, "0")
    with pytest.raises(RuntimeError), unsafe_pickle_load():
        raise RuntimeError("load failed")
    assert os.environ[UNSAFE_ENV] == "0"  # restored after an error too


def test_subprocess_env_never_inherits_the_flag(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """run_tool strips the flag unless it is granted for that one call."""
    import sys

    from systems.fairseq_nat import proc

    monkeypatch.setenv(UNSAFE_ENV, "1")
    monkeypatch.setattr(
        proc,
        "tool_argv",
        lambda tool, args: [sys.executable, "-c", f"import os; print(os.environ.get('{UNSAFE_ENV}'))"],
    )
    seen: list[str] = []
    proc.run_tool("x", [], tmp_path / "a.log", seen.append)
    proc.run_tool("x", [], tmp_path / "b.log", seen.append, extra_env={UNSAFE_ENV: "1"})
    assert seen == ["None", "1"]
    monkeypatch.setattr(
        proc, "tool_argv", lambda tool, args: [sys.executable, "-c", "import sys; sys.exit(3)"]
    )
    with pytest.raises(proc.FairseqToolError, match="status 3"):
        proc.run_tool("x", [], tmp_path / "c.log")


def test_wordpiece_lines(tmp_path: Path) -> None:
    """Token lines for fairseq-preprocess and back to text (no fairseq needed)."""
    from systems.fairseq_nat.vocab import WordPieceLines, write_fairseq_dict

    wp = WordPieceLines()
    (line,) = wp.encode(["How do I learn embeddings ?"], max_len=None)
    assert "##" in line and wp.decode(line + " <unk> [SEP]") == "how do i learn embeddings ?"
    assert len(wp.encode(["one two three four"], max_len=2)[0].split()) == 2
    d = write_fairseq_dict(wp.vocab_txt, tmp_path / "dict.txt").read_text().splitlines()
    assert d[0] == "[PAD] 1" and len(d) == 30522


def test_sentencepiece_lines(tmp_path: Path) -> None:
    pytest.importorskip("sentencepiece")  # part of the [fairseq] extra
    from systems.fairseq_nat.vocab import SentencePieceLines

    texts = [f"what is the best way to learn {w} ?" for w in ("python", "math", "music", "art")] * 20
    sp = SentencePieceLines.train(texts, tmp_path / "spm", vocab_size=60)
    (enc,) = sp.encode(["What is the best way to learn music ?"], max_len=None)
    assert sp.decode(enc) == "what is the best way to learn music ?"


def test_checkpoint_deleted_by_fairseq_while_recording_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fairseq's --keep-interval-updates deletes old checkpoints while the harness hashes the new ones
    (a real cpu run crashed on this): a file that vanishes between listing and hashing is simply gone."""
    import systems.fairseq_nat.checkpoints as ck

    old = _write(tmp_path / "checkpoint_1_200.pt", b"old")
    _write(tmp_path / "checkpoint_1_400.pt", b"new")
    real = ck.sha256_file

    def vanishing(p: Path) -> str:
        if p.name == old.name:
            old.unlink()
            raise FileNotFoundError(p)
        return real(p)

    monkeypatch.setattr(ck, "sha256_file", vanishing)
    m = Manifest(tmp_path)
    assert m.record_new() == ["checkpoint_1_400.pt"]
    assert set(Manifest(tmp_path).files) == {"checkpoint_1_400.pt"}
