"""`bench compare`'s result cached by content, so comparing two committed runs again takes a second, not the
METEOR start-up and 10,000 randomisation trials per metric (#47: 32 s on a busy 2-core box).

The key is the sha256 of everything the result depends on: both outputs, the split's examples (its sha256),
the recipe, the resampling (bootstrap, trials, seed, the CI) and the scoring code itself (a hash of
bench/scoring's sources), so an edit to any of them is a miss, never a stale hit. Each entry
holds the sha256 of its own result: an entry edited by hand fails that check and is recomputed, never shown.
The cache is not evidence (it lives in ``$BENCH_CACHE``, outside results/), and a caller that holds the runs'
records passes their stored numbers: a cached result that disagrees with them is recomputed as well.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from bench.api.numbers import finite
from bench.api.types import Split

#: the stored score and the cached one agree within this (scores ×100, as JSON floats round-trip)
TOLERANCE = 1e-6


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@cache
def code_version() -> str:
    """A hash of the scoring sources (recipes, tools, resampling): a change to any retires every entry."""

    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()


def cache_key(recipe: str, hyps_a: Sequence[str], hyps_b: Sequence[str], split: Split, **resampling: Any) -> str:
    """The sha256 naming one comparison's entry."""
    fields = {"recipe": recipe, "a": _sha("\n".join(hyps_a)), "b": _sha("\n".join(hyps_b)),
              "split": split.sha256, "task": split.task, "n": len(split), "resampling": resampling,
              "code": code_version()}
    return _sha(json.dumps(fields, sort_keys=True))


def cache_dir() -> Path:
    from bench.api.paths import cache_root

    return cache_root() / "compare"


def _result_sha(result: Any) -> str:
    return _sha(json.dumps(result, sort_keys=True))


def read_entry(path: Path) -> dict[str, Any] | None:
    """The cached result at ``path``, or None when it is missing, unreadable, not a well-formed result, edited (its
    hash fails) or filed under another key than its own (the key it was written under is in it, and must be the
    file's name: an intact entry of one comparison copied over another's would show the wrong pair's numbers).
    Read like every other input (:func:`bench.api.reading.read_json`): a FIFO, a device, a directory or a file over
    the caps of a record is a miss, never a hang or an unbounded read (:data:`bench.api.textfile.RECORD`: an entry is
    a few kB, and 256 MiB of ``[{},…]`` would take about 5 GB parsed)."""
    from bench.api.reading import read_json
    from bench.api.textfile import RECORD

    try:
        entry = read_json(path, limits=RECORD)
        result = entry["result"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(result, dict) or entry.get("sha256") != _result_sha(result) or not well_formed(result):
        return None
    if entry.get("key") != Path(path).stem:
        return None
    return result


def well_formed(result: Any) -> bool:
    """Whether ``result`` has the shape and sane numbers :func:`bench.scoring.compare` returns: per metric a finite
    ``a``, ``b`` and ``delta = a - b``, p-values in [0, 1] (or None), a CI of Δ as two ordered finite numbers.
    A hand-made entry with a matching hash (a forger's) that breaks any of it is recomputed, never shown."""
    if not isinstance(result, dict) or not isinstance(result.get("metrics"), dict):
        return False
    for side in ("a", "b"):
        scores = result.get(side)
        if not isinstance(scores, dict) or not isinstance(scores.get("metrics"), dict):
            return False
        if not all(finite(v) for v in scores["metrics"].values()):
            return False
    for m in result["metrics"].values():
        if not isinstance(m, dict) or not all(finite(m.get(k)) for k in ("a", "b", "delta")):
            return False
        if abs(m["a"] - m["b"] - m["delta"]) > 1e-6 * max(1.0, abs(m["a"]), abs(m["b"])):
            return False
        if any(m.get(k) is not None and not (finite(m[k]) and 0 <= m[k] <= 1) for k in ("p_bootstrap", "p_ar")):
            return False
        ci = m.get("ci95_a_minus_b")
        if ci is not None and not (isinstance(ci, list) and len(ci) == 2 and all(map(finite, ci))
                                   and ci[0] <= ci[1]):
            return False
    return True


def write_entry(path: Path, result: dict[str, Any]) -> None:
    """Best effort: a cache that cannot be written only costs the next run its time."""
    from bench.api.atomic import write_json_atomic

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, {"key": path.stem, "sha256": _result_sha(result), "result": result})
    except OSError:
        pass


def agrees(result: Mapping[str, Any], stored: Mapping[str, Mapping[str, Any] | None]) -> bool:
    """Whether ``result``'s per-run scores match the records' stored ones (``stored``: ``{"a": scores, "b":
    scores}``, each a record's ``scores[recipe]`` or None where the record has no such score)."""
    for side in ("a", "b"):
        rec = stored.get(side)
        if not rec or rec.get("signature") != (result.get(side) or {}).get("signature"):
            continue  # scored under another signature (older code): nothing to hold the cache to
        for metric, value in (rec.get("metrics") or {}).items():
            mine = ((result.get(side) or {}).get("metrics") or {}).get(metric)
            if mine is None or abs(float(mine) - float(value)) > TOLERANCE:
                return False
    return True


def cached_compare(recipe: str, hyps_a: Sequence[str], hyps_b: Sequence[str], split: Split, *,
                   session: Any = None, delta_ci: bool = True, bootstrap: int = 1000, ar_trials: int = 10000,
                   seed: int = 12345, stored: Mapping[str, Mapping[str, Any] | None] | None = None,
                   use_cache: bool = True, on_miss: Callable[[str, int], None] | None = None) -> dict[str, Any]:
    """:func:`bench.scoring.compare`, read from the cache when an intact entry with the same key agrees with
    ``stored`` (the records' scores of this recipe), else computed and cached. ``on_miss(recipe, n_items)`` is
    called before a computation, so a caller can say why this call takes a minute where the next takes a second."""
    from bench.scoring.api import compare

    key = cache_key(recipe, hyps_a, hyps_b, split, bootstrap=bootstrap, ar_trials=ar_trials, seed=seed,
                    delta_ci=delta_ci)
    path = cache_dir() / f"{key}.json"
    if use_cache:
        hit = read_entry(path)
        if hit is not None and agrees(hit, stored or {}):
            return hit
    if on_miss is not None:
        on_miss(recipe, len(split))
    result = compare(recipe, hyps_a, hyps_b, split, session=session, bootstrap=bootstrap, ar_trials=ar_trials,
                     seed=seed, delta_ci=delta_ci)
    if use_cache:
        write_entry(path, result)
    return result
