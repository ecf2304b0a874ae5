"""A run record's scores derived again from its raw inputs: the deep half of ``bench table --check --deep``.

Why: a record is a claim. Its scores, confidence intervals and output statistics are recomputed here from
the outputs file (checked against the record's sha256), the split (checked against the sha256 *pinned in
code*, never against the cache's own manifest, which an edit can make agree) and the recipe, through the
very function ``bench run`` and ``bench rescore`` score with (:func:`bench.scoring.score_split`). Nothing
the record says about its numbers is read as an input; every difference is returned, none is fixed.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import Any

from bench.api.errors import UserError
from bench.api.types import Split, encode
from bench.runs.evaluation import first_examples
from bench.store.differences import Difference, compare_numbers
from bench.store.examples import spec_limit


class SplitTamperedError(UserError, ValueError):
    """A cached split whose examples are not the ones its task pins (or a fresh build gives)."""


def verified_split(task: str, split: str, data_dir: Path | str | None = None,
                   cache_dir: Path | str | None = None) -> Split:
    """The split as :func:`bench.data.load_split` gives it, after hashing the examples it holds.

    The hash is taken over the examples actually loaded (canonical JSONL, :func:`bench.api.types.encode`),
    and compared with the task's pinned sha256; a split without a pinned hash is built again from the raw
    files (checked against ``SHA256SUMS``) in a scratch cache and compared with that build.
    """
    from bench.data import TASKS, load_split
    from bench.data.cache import cache_root, task_cache_dir

    loaded = load_split(task, split, data_dir=data_dir, cache_dir=cache_dir)
    actual = hashlib.sha256(encode(loaded.examples)).hexdigest()
    t = TASKS.get(task)
    expected = t.split(split).sha256
    source = "pinned in bench/data/tasks.py"
    if not expected:
        with tempfile.TemporaryDirectory(prefix="bench-deep-split-") as scratch:
            expected = hashlib.sha256(encode(load_split(task, split, data_dir=data_dir, cache_dir=scratch).examples)
                                      ).hexdigest()
        source = "built again from the checked raw files"
    if actual != expected:
        where = task_cache_dir(cache_root(cache_dir), t.name, t.version)
        raise SplitTamperedError(
            f"{where}: the cached {task}/{split} split hashes to {actual[:12]}…, not the {expected[:12]}… "
            f"{source}; the cache was edited. Fix: delete {where} and run `bench data build {task}`."
        )
    return loaded if loaded.sha256 == actual else Split(loaded.task, loaded.name, loaded.examples, actual,
                                                       loaded.partial, loaded.note)


def rederive_scores(rec: dict[str, Any], split: Split, session: Any = None) -> list[Difference]:
    """Every score, CI, item count and signature of ``rec``, and its output statistics, recomputed from its
    outputs and ``split`` (the whole verified split; the spec's ``--limit`` prefix is taken here, never the
    ``data`` block's count, which a forger can make fit a cherry-picked prefix)."""
    from bench.runs.lookup import outputs_of
    from bench.scoring import score_split
    from bench.scoring.output_stats import output_stats

    rid = str(getattr(rec, "source", None) or rec.get("run_id"))  # the file read (--deep names it), else the id
    data = rec.get("data") or {}
    try:
        outputs = outputs_of(rec)  # the one line rule (split_lines), as the scorer reads them
    except (UserError, OSError, UnicodeDecodeError) as exc:
        return [Difference(rid, "outputs", (rec.get("outputs") or {}).get("path"), " ".join(str(exc).split()))]
    scored = first_examples(split, spec_limit(rec.get("spec") or {}))  # the spec's examples, not what 'data' says
    out: list[Difference] = []
    if scored.sha256 != data.get("split_sha256"):
        return [Difference(rid, "data.split_sha256", data.get("split_sha256"), scored.sha256)]
    if len(outputs) != len(scored):
        return [Difference(rid, "outputs (lines)", len(scored), len(outputs))]
    out += compare_numbers(rid, "data.n_examples", data.get("n_examples"), len(scored))
    out += compare_numbers(rid, "outputs.n", (rec.get("outputs") or {}).get("n"), len(outputs))
    for recipe, stored in sorted((rec.get("scores") or {}).items()):
        fresh = score_split(recipe, outputs, scored, session=session).to_json()
        out += _compare_scores(f"{rid}", recipe, stored if isinstance(stored, dict) else {}, fresh)
    stats = rec.get("output_stats")
    if stats:
        fresh_stats = output_stats(outputs, [ex.target for ex in scored.examples])
        for key in sorted(set(stats) | set(fresh_stats)):
            a, b = stats.get(key), fresh_stats.get(key)
            if isinstance(b, str) or isinstance(a, str):
                if a != b:
                    out.append(Difference(rid, f"output_stats.{key}", a, b))
            else:
                out += compare_numbers(rid, f"output_stats.{key}", a, b)
    return out


def _compare_scores(rid: str, recipe: str, stored: dict[str, Any], fresh: dict[str, Any]) -> list[Difference]:
    out: list[Difference] = []
    if stored.get("signature") != fresh["signature"]:
        out.append(Difference(rid, f"{recipe} signature", stored.get("signature"), fresh["signature"]))
    out += compare_numbers(rid, f"{recipe} n_items", stored.get("n_items"), fresh["n_items"])
    metrics, ci = stored.get("metrics") or {}, stored.get("ci") or {}
    for m in sorted(set(metrics) | set(fresh["metrics"])):
        out += compare_numbers(rid, f"{recipe} {m}", metrics.get(m), fresh["metrics"].get(m))
    for m in sorted(set(ci) | set(fresh["ci"])):
        out += compare_numbers(rid, f"{recipe} {m} 95% CI", ci.get(m), fresh["ci"].get(m))
    return out
