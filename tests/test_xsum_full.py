"""#58: XSum builds from what `bench fetch --data` gets alone. The full corpus is served by the local stand-in for
the hub (tests/test_fetch.py) in the format of the hub's parquet export, over every official id of the pinned
split file; the data folder holds what the public sources give (the split file and the gold test lines, as
`bench fetch --data` lands them, with their SHA256SUMS lines) and no xsum/documents-recovered.jsonl. The real
task then builds its full splits with their official counts, its pinned test-refs split, runs a system on its
full test split, and says in one line why the recovered-document splits are not there."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_fetch import FakeHub, FakeRepo, _parquet, hub, only_localhost  # noqa: F401  (fixtures)

from bench.data import xsum
from bench.data.sources import default_data_dir, read_sums

SHARED = default_data_dir()
pytestmark = pytest.mark.skipif(not (SHARED / xsum.SPLIT_JSON).is_file(), reason="needs the shared XSum split file")


def _fetched_root(tmp_path: Path) -> Path:
    """A data folder as `bench fetch --data` leaves it for XSum: the pinned split file and gold lines, each with
    the SHA256SUMS line the public-source catalogue pins, and nothing recovered."""
    root = tmp_path / "data"
    sums = read_sums(SHARED)
    lines = []
    for rel in (xsum.SPLIT_JSON, xsum.GOLD):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SHARED / rel, root / rel)
        lines.append(f"{sums[rel]}  ./{rel}")
    (root / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    return root


def _serve_full_corpus(fake: FakeHub, root: Path) -> None:
    """EdinburghNLP/xsum as the hub holds it: a script-only main branch and the parquet export, one file per split,
    records (document, summary, id) over every official id (documents made up: two short sentences each)."""
    ids = json.loads((root / xsum.SPLIT_JSON).read_text())
    gold = (root / xsum.GOLD).read_text().splitlines()
    repo = FakeRepo()
    repo.add("main", {"xsum.py": b"# a loading script\n"})
    export = {}
    for split in xsum.FULL_SPLITS:
        rows = [{"document": f"story {i} opens here .\nit ends here .",
                 "summary": gold[n] if split == "test" else f"summary of {i}", "id": str(i)}
                for n, i in enumerate(ids[split])]
        export[f"default/{split}/0000.parquet"] = _parquet(rows)
    repo.add("refs/convert/parquet", export)
    fake.repos["datasets", xsum.HUB_DATASET] = repo


@pytest.mark.slow
def test_xsum_builds_and_runs_from_the_fetched_full_corpus_without_recovered_documents(
        hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    from typer.testing import CliRunner

    from bench.cli import app
    from bench.data import default_eval_split, load_split
    from bench.data.api import split_missing
    from bench.workflows import fetch

    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))  # the split cache of this data, not the checkout's
    root = _fetched_root(tmp_path)
    _serve_full_corpus(hub, root)
    out = fetch.fetch_xsum(root)
    assert out.status == "fetched", out.detail
    assert "train 204,045 / validation 11,332 / test 11,334" in out.detail
    assert not (root / xsum.RECOVERED).exists()

    counts = {name: len(load_split("xsum", name, data_dir=root)) for name in (*xsum.FULL_SPLITS, "test-refs")}
    assert counts == {"train": 204_045, "validation": 11_332, "test": 11_334, "test-refs": 11_334}
    assert default_eval_split("xsum", root) == "test"
    why = split_missing("xsum", "test-available", root)
    assert why is not None and str(root / xsum.RECOVERED) in why and "--split test" in why

    results = tmp_path / "results"
    run = CliRunner().invoke(app, ["run", "--system", "lead1", "--task", "xsum", "--limit", "40", "--data-dir",
                                   str(root), "--results-dir", str(results)])
    assert run.exit_code == 0, run.output
    record = json.loads(next(results.glob("lead1--xsum--test--*.json")).read_text())
    assert record["spec"]["split"] == "test" and record["data"]["n_examples"] == 40
    assert record["scores"]["rouge155"]["metrics"]["rouge2"] >= 0


def test_a_missing_recovered_file_is_optional_and_a_missing_corpus_names_the_fetch(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch
                                                                                  ) -> None:
    """Without the full corpus and the recovered documents, XSum still builds its pinned test-refs split; asking for
    a split whose source is absent is one line naming `bench fetch --data` and the folder it writes."""
    from bench.api.errors import DataError
    from bench.data import build, load_split

    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("BENCH_XSUM", raising=False)
    root = _fetched_root(tmp_path)
    assert build("xsum", root) == {"test-refs": 11_334}
    with pytest.raises(DataError) as exc:
        load_split("xsum", "test", data_dir=root)
    assert "`bench fetch --data --data-dir" in str(exc.value) and str(root / "xsum" / "full") in str(exc.value)
    with pytest.raises(DataError, match="documents-recovered.jsonl"):
        load_split("xsum", "test-available", data_dir=root)
