"""Quora and XSum splits: counts, partial naming, gold-line alignment, full-XSum readers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.data import DataError, data_dir, load_split
from bench.data.xsum import full_splits, read_full


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.getbasetemp() / "bench-data-cache"


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def test_quora_counts_and_pairs(cache_dir: Path) -> None:
    root = data_dir()
    for split, stem, count in (("train", "train", 100_000), ("dev", "val", 2_797), ("test", "test", 30_000)):
        s = load_split("quora", split, cache_dir=cache_dir)
        assert len(s) == count and not s.partial
        assert s.sources() == _lines(root / f"quora/duji2019/{stem}.src")
        assert s.targets() == _lines(root / f"quora/duji2019/{stem}.tgt")


def test_xsum_partial_splits_are_marked(cache_dir: Path) -> None:
    avail = load_split("xsum", "test-available", cache_dir=cache_dir)
    val = load_split("xsum", "validation-available", cache_dir=cache_dir)
    refs = load_split("xsum", "test-refs", cache_dir=cache_dir)
    assert (len(avail), len(val), len(refs)) == (4_034, 1_079, 11_334)
    assert avail.partial and "4,034 of 11,334" in avail.note
    assert val.partial and "1,079 of 11,332" in val.note
    assert not refs.partial and "references only" in refs.note
    assert all(ex.source == "" for ex in refs.examples)
    assert all(ex.source for ex in avail.examples)
    assert sum(ex.fields["has_reference"] == "0" for ex in val.examples) == 79


def test_xsum_targets_are_gold_lines_by_test_index(cache_dir: Path) -> None:
    root = data_dir()
    gold = _lines(root / "xsum/gold-test-sentences.txt")
    ids = json.loads((root / "xsum/XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json").read_text())["test"]
    refs = load_split("xsum", "test-refs", cache_dir=cache_dir)
    assert refs.targets() == gold and [ex.id for ex in refs.examples] == ids
    avail = load_split("xsum", "test-available", cache_dir=cache_dir)
    index = [int(i) for i in avail.field("test_index")]
    assert index == sorted(index)
    for ex, i in zip(avail.examples, index, strict=True):
        assert ex.id == ids[i] and ex.target == gold[i]
    assert sum(ex.fields["summary_matches_gold"] == "1" for ex in avail.examples) == 4_033


def test_xsum_full_split_missing_is_a_clear_error(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCH_XSUM", raising=False)
    with pytest.raises(DataError, match="needs the full XSum corpus.*test-available"):
        load_split("xsum", "test", cache_dir=cache_dir)


def _mini_split() -> dict[str, list[str]]:
    return {"train": ["1", "2"], "validation": ["3"], "test": ["4", "5"]}


def test_full_xsum_from_summary_files(tmp_path: Path) -> None:
    folder = tmp_path / "bbc-summary-data"
    folder.mkdir()
    for i in "12345":
        (folder / f"{i}.summary").write_text(
            f"[SN]URL[SN]\nhttp://x/{i}\n\n[SN]TITLE[SN]\nT{i}\n\n[SN]FIRST-SENTENCE[SN]\nSummary {i}.\n\n"
            f"[SN]RESTBODY[SN]\nBody {i} one.\n\nBody {i} two.\n",
            encoding="utf-8",
        )
    records, files = read_full(tmp_path)
    assert len(files) == 5 and records["3"] == ("Body 3 one.\nBody 3 two.", "Summary 3.")
    out = full_splits(records, _mini_split(), ["gold four", "gold five"], tmp_path)
    assert [ex.id for ex in out["test"]] == ["4", "5"]
    assert out["test"][1].fields["gold"] == "gold five" and out["test"][1].fields["test_index"] == "1"
    assert out["train"][0].source == "Body 1 one.\nBody 1 two." and out["train"][0].target == "Summary 1."


def test_full_xsum_from_jsonl_and_missing_ids(tmp_path: Path) -> None:
    rows = [{"id": i, "document": f"doc {i}", "summary": f"sum {i}"} for i in "1234"]
    (tmp_path / "all.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    records, _ = read_full(tmp_path)
    assert records["2"] == ("doc 2", "sum 2")
    with pytest.raises(DataError, match="lacks 1 of 2 test ids"):
        full_splits(records, _mini_split(), ["g4", "g5"], tmp_path)
    (tmp_path / "bad.jsonl").write_text(json.dumps({"id": "9", "document": "d"}) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"bad\.jsonl:1.*summary"):
        read_full(tmp_path)
