"""Journaled decoding: a killed decode resumes where it stopped, with the outputs of an unbroken one."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.runs.journal import decode_in_chunks

DATA = Path(os.environ.get("BENCH_DATA", Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))
KEY = {"run_id": "r1", "split_sha256": "abc", "harness": {"git_sha": "x", "dirty": False}}


@dataclass(frozen=True)
class Ex:
    id: str
    source: str


EXAMPLES = [Ex(f"e{i}", "w " * ((i * 7) % 13 + 1)) for i in range(50)]


class Decoder:
    """Upper-cases sources; counts what it saw; raises once it has decoded ``die_after`` chunks."""

    def __init__(self, die_after: int | None = None) -> None:
        self.seen: list[str] = []
        self.calls = 0
        self.die_after = die_after

    def __call__(self, chunk: list[Ex]) -> list[str]:
        if self.die_after is not None and self.calls == self.die_after:
            raise KeyboardInterrupt  # a kill mid-decode
        self.calls += 1
        self.seen += [ex.id for ex in chunk]
        return [f"{ex.id}:{ex.source.strip().upper()}" for ex in chunk]


def quiet(_msg: str) -> None:
    return None


def test_outputs_in_input_order_chunks_in_length_order(tmp_path: Path) -> None:
    dec = Decoder()
    got = decode_in_chunks(dec, EXAMPLES, tmp_path / "j.jsonl", KEY, chunk=8, say=quiet)
    assert got.outputs == [f"{ex.id}:{ex.source.strip().upper()}" for ex in EXAMPLES]
    assert got.resumed == 0 and dec.calls == 7  # ceil(50 / 8)
    lengths = [len(next(ex for ex in EXAMPLES if ex.id == i).source) for i in dec.seen]
    assert lengths == sorted(lengths)  # chunks follow source length, as batch decoders sort
    lines = (tmp_path / "j.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == {"journal": 1, **KEY, "n": 50} and len(lines) == 8


def test_killed_decode_resumes_with_identical_outputs(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    whole = decode_in_chunks(Decoder(), EXAMPLES, tmp_path / "whole.jsonl", KEY, chunk=8, say=quiet)
    with pytest.raises(KeyboardInterrupt):
        decode_in_chunks(Decoder(die_after=3), EXAMPLES, journal, KEY, chunk=8, say=quiet)
    msgs: list[str] = []
    second = Decoder()
    got = decode_in_chunks(second, EXAMPLES, journal, KEY, chunk=8, say=msgs.append)
    assert got.outputs == whole.outputs
    assert got.resumed == 24 and len(second.seen) == 26  # only the rest is decoded again
    assert "resuming: 24 of 50" in msgs[0]
    assert got.seconds >= 0


def test_torn_last_line_is_cut_and_that_chunk_redone(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    with pytest.raises(KeyboardInterrupt):
        decode_in_chunks(Decoder(die_after=2), EXAMPLES, journal, KEY, chunk=8, say=quiet)
    with journal.open("a") as fh:
        fh.write('{"pos": 16, "ids": ["e1", "e')  # killed mid-write
    again = Decoder()
    got = decode_in_chunks(again, EXAMPLES, journal, KEY, chunk=8, say=quiet)
    assert got.resumed == 16 and len(again.seen) == 34
    assert got.outputs == decode_in_chunks(Decoder(), EXAMPLES, tmp_path / "w.jsonl", KEY, chunk=8, say=quiet).outputs
    for line in journal.read_text().splitlines():
        json.loads(line)  # the journal is whole again


@pytest.mark.parametrize("change", ["key", "examples"])
def test_journal_of_another_run_is_not_reused(tmp_path: Path, change: str) -> None:
    journal = tmp_path / "j.jsonl"
    with pytest.raises(KeyboardInterrupt):
        decode_in_chunks(Decoder(die_after=2), EXAMPLES, journal, KEY, chunk=8, say=quiet)
    key = {**KEY, "harness": {"git_sha": "y", "dirty": False}} if change == "key" else KEY
    # another example set of the same size: the ids no longer continue the journal
    exs = EXAMPLES if change == "key" else [Ex(f"o{i}", ex.source) for i, ex in enumerate(EXAMPLES)]
    msgs: list[str] = []
    dec = Decoder()
    got = decode_in_chunks(dec, exs, journal, key, chunk=8, say=msgs.append)
    assert got.resumed == 0 and len(dec.seen) == 50
    if change == "key":
        assert "starting over" in msgs[0]


def test_wrong_output_count_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="returned 1 outputs for a chunk of 8"):
        decode_in_chunks(lambda chunk: ["x"], EXAMPLES, tmp_path / "j.jsonl", KEY, chunk=8, say=quiet)


def test_bench_run_resumes_a_killed_decode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end through `execute`: the record says how many outputs were read back, the outputs
    equal an unbroken run's, and the journal is gone once the record is written."""
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    from bench.runs import RunSpec, training_workdir
    from bench.runs.pipeline import execute
    from systems.baselines import CopySource

    spec = RunSpec("copy_source", "quora", budget="smoke", limit=300)
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    plain = CopySource.decode
    calls = {"n": 0}

    def dies_on_second_chunk(self: CopySource, examples: list) -> list[str]:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return plain(self, examples)

    monkeypatch.setattr(CopySource, "decode", dies_on_second_chunk)
    with pytest.raises(KeyboardInterrupt):
        execute(spec, results_dir=tmp_path / "results", say=quiet)
    workdir = training_workdir(spec, CopySource("smoke"))  # the trained model's, whatever the limit
    assert workdir.parent == tmp_path / "cache" / "runs"
    journal = workdir / "decode" / f"{spec.run_id}.jsonl"
    assert journal.is_file() and len(journal.read_text().splitlines()) == 2  # header + one chunk
    rec = execute(spec, results_dir=tmp_path / "results", say=quiet)
    assert rec["outputs"]["resumed"] == 128 and rec["outputs"]["n"] == 300
    assert not journal.exists()
    monkeypatch.setattr(CopySource, "decode", plain)
    fresh = execute(spec, results_dir=tmp_path / "fresh", say=quiet)
    assert fresh["outputs"]["sha256"] == rec["outputs"]["sha256"] and "resumed" not in fresh["outputs"]
