"""The mission's own command on XSum: `bench run --system mist_unilm --task xsum` once a corpus is supplied.

The full XSum corpus is not on this machine, so the test writes one: every official id, with the
4,034 + 1,079 recovered documents where they exist and a stand-in document elsewhere (the test
split's stand-ins repeat their gold summary inside other text). `$BENCH_XSUM` points at it, a
private `$BENCH_CACHE` keeps the built splits apart, and the run goes through the real CLI:
smoke training of the mist_unilm recipe, decoding of the first test documents, and scoring under
every XSum recipe (Perl ROUGE-1.5.5 included).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("BENCH_DATA", REPO / ".." / "shared" / "data"))


def _write_corpus(path: Path) -> int:
    split_ids = json.loads((DATA / "xsum" / "XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json").read_text())
    gold = (DATA / "xsum" / "gold-test-sentences.txt").read_text(encoding="utf-8").splitlines()
    recovered = {}
    for line in (DATA / "xsum" / "documents-recovered.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        recovered[str(rec["id"])] = rec
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for split, ids in split_ids.items():
            for i, doc_id in enumerate(map(str, ids)):
                rec = recovered.get(doc_id)
                summary = gold[i] if split == "test" else (rec or {}).get("summary") or f"summary of story {doc_id} ."
                document = rec["document"] if rec else f"the bbc reports story {doc_id} . {summary} more follows ."
                fh.write(json.dumps({"id": doc_id, "document": document, "summary": summary}) + "\n")
                n += 1
    return n


@pytest.mark.skipif(shutil.which("perl") is None, reason="Perl ROUGE-1.5.5 needs perl")
def test_mist_unilm_on_a_supplied_xsum_corpus(tmp_path: Path) -> None:
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    corpus = tmp_path / "xsum-full"
    corpus.mkdir()
    assert _write_corpus(corpus / "xsum.jsonl") == 204_045 + 11_332 + 11_334
    env = {
        **os.environ,
        "BENCH_XSUM": str(corpus),
        "BENCH_CACHE": str(tmp_path / "cache"),
        "OMP_NUM_THREADS": "1",
    }
    results = tmp_path / "results"
    cmd = [
        sys.executable,
        "-m",
        "bench",
        "run",
        "--system",
        "mist_unilm",
        "--task",
        "xsum",
        "--budget",
        "smoke",
        "--limit",
        "24",
        "--threads",
        "1",
        "--results-dir",
        str(results),
    ]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [path] = results.glob("mist_unilm--xsum--test--smoke--*.json")
    rec = json.loads(path.read_text())
    assert rec["spec"]["split"] == "test" and rec["data"]["n_examples"] == 24 and rec["data"]["partial"]
    assert set(rec["scores"]) == {"rouge155", "rouge-pltrdy", "rouge-score"}
    for recipe in rec["scores"].values():
        assert {"rouge1", "rouge2", "rougeL"} <= set(recipe["metrics"])
    assert rec["output_stats"]["n"] == 24 and rec["training_curve"]["train_loss"]
    assert rec["system"]["config"]["train"]["steps"] > 0
