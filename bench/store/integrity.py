"""The checks a stored record must pass before any command shows a number from it: cheap, local to the file.

Two kinds, both read at load by the store's readers (:mod:`bench.store.records`, :mod:`bench.store.latency`):

- **internal consistency**: every number within its scale (metrics and CI bounds are x100, as
  :class:`bench.scoring.types.Scores` stores them, so in [0, 100]; counts are non-negative integers), a CI
  holds its point, ``n_examples`` is the number of outputs, a latency record's speed-ups are the ratios of
  the medians and means it stores (:func:`bench.latency.stats.paired_bootstrap_speedup`);
- **the digest**: the sha256 of the record's canonical JSON, written by the harness's one writer of each
  kind, so a hand edit that keeps every number plausible (27.69 -> 28.0) is still caught. A record without
  one is read only when that sha256 is pinned in ``bench/store/legacy.json`` (:mod:`bench.store.legacy`).

Neither is a proof: a record can be rewritten with a fresh digest. The deep check (re-deriving every
number from outputs, split and recipe) is; it can call these functions first. Each check returns
:class:`Problem` values (the field and what is wrong) and raises nothing, so a caller chooses the error.
See docs/integrity.md.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from bench.api.numbers import finite

#: a run record's metrics and their CI bounds are x100 (bench.scoring.types.Scores): every one is in this range
METRIC_RANGE = (0.0, 100.0)
#: the top-level field that holds a record's digest; it is not part of what it hashes
DIGEST_FIELD = "digest"
DIGEST_PREFIX = "sha256:"
#: relative tolerance of a stored ratio against the ratio of its stored parts (floats written by json round-trip
#: exactly; the ratio of ms means differs from the ratio of ns means in the last bits only)
RATIO_RTOL = 1e-9
#: fields of ``output_stats`` that are shares of the outputs (0..1)
SHARES = ("at_max_len", "distinct_ratio", "most_frequent_share", "reference_distinct_ratio", "repeated_trigram_rate")
#: a latency summary's fields in the order numpy's percentiles guarantee
ORDERED_MS = ("min_ms", "p50_ms", "p90_ms", "p99_ms")


class Problem(NamedTuple):
    """One failed check: the dotted field (``scores.mist.metrics.bleu4``) and what is wrong with it."""

    field: str
    what: str

    def __str__(self) -> str:
        return f"'{self.field}' {self.what}"


_num = finite  # the store's name for bench.api.numbers.finite


def _count(x: Any) -> bool:
    """A non-negative integer (an int, or a float with no fraction: JSON writers differ)."""
    return _num(x) and x >= 0 and float(x).is_integer()


def _close(a: float, b: float, rtol: float = RATIO_RTOL) -> bool:
    return math.isclose(a, b, rel_tol=rtol, abs_tol=1e-12)


def _interval(ci: Any, point: float, where: str, point_field: str, lo_bound: float = -math.inf,
              hi_bound: float = math.inf) -> Iterator[Problem]:
    """``ci`` (at ``where``) is two numbers [lo, hi] with lo <= point <= hi, inside [lo_bound, hi_bound]; a point
    outside is named by its own field (``point_field``), with the CI's."""
    if not (isinstance(ci, list | tuple) and len(ci) == 2 and all(_num(v) for v in ci)):
        yield Problem(where, f"must be two finite numbers [lo, hi], got {ci!r}")
        return
    lo, hi = ci
    if lo > hi:
        yield Problem(where, f"has lo {lo!r} > hi {hi!r}")
    elif not (lo <= point <= hi or _close(point, lo) or _close(point, hi)):
        yield Problem(point_field, f"is {point!r}, outside its CI '{where}' [{lo:.6g}, {hi:.6g}]")
    elif lo < lo_bound or hi > hi_bound:
        yield Problem(where, f"[{lo!r}, {hi!r}] is outside [{lo_bound:g}, {hi_bound:g}]")


# ---------------------------------------------------------------- run records (results/<run_id>.json)

def record_problems(rec: Mapping[str, Any]) -> list[Problem]:
    """What is inconsistent in a complete run record's numbers (its scores, counts, statistics, timings,
    latency block); [] when nothing is. Types the schema check already refused are reported, never raised."""
    return [*_count_problems(rec), *_score_problems(rec), *_stats_problems(rec), *_timing_problems(rec),
            *_run_latency_problems(rec.get("latency"))]


def _count_problems(rec: Mapping[str, Any]) -> Iterator[Problem]:
    data, outputs = rec.get("data") or {}, rec.get("outputs") or {}
    n = data.get("n_examples") if isinstance(data, Mapping) else None
    if isinstance(data, Mapping) and "n_examples" in data and not (_count(n) and n is not None and n > 0):
        yield Problem("data.n_examples", f"must be a positive integer (the examples scored), got {n!r}")
        n = None
    n_out = outputs.get("n") if isinstance(outputs, Mapping) else None
    if isinstance(outputs, Mapping) and "n" in outputs:
        if not _count(n_out):
            yield Problem("outputs.n", f"must be a non-negative integer (lines in the outputs file), got {n_out!r}")
            n_out = None
        elif n is not None and n_out != n:
            yield Problem("data.n_examples", f"is {n!r} but the record has {n_out!r} outputs ('outputs.n')")
    for recipe, sc in _mapping(rec.get("scores")):
        items = sc.get("n_items") if isinstance(sc, Mapping) else None
        if items is None:
            continue
        limit = n_out if n_out is not None else n
        if not _count(items):
            yield Problem(f"scores.{recipe}.n_items", f"must be a non-negative integer, got {items!r}")
        elif limit is not None and items > limit:
            yield Problem(f"scores.{recipe}.n_items", f"is {items!r}, more than the {limit!r} outputs scored")


def _mapping(x: Any) -> Iterator[tuple[str, Any]]:
    return iter(x.items()) if isinstance(x, Mapping) else iter(())


def _score_problems(rec: Mapping[str, Any]) -> Iterator[Problem]:
    lo, hi = METRIC_RANGE
    for recipe, sc in _mapping(rec.get("scores")):
        if not isinstance(sc, Mapping):
            continue
        metrics, cis = sc.get("metrics"), sc.get("ci")
        for name, value in _mapping(metrics):
            where = f"scores.{recipe}.metrics.{name}"
            if not _num(value):
                yield Problem(where, f"must be a finite number, got {value!r}")
            elif not lo <= value <= hi:
                yield Problem(where, f"is {value!r}, outside [{lo:g}, {hi:g}] (scores are x100)")
            elif isinstance(cis, Mapping) and name in cis:
                yield from _interval(cis[name], value, f"scores.{recipe}.ci.{name}", where, lo, hi)
        if cis is not None and not isinstance(cis, Mapping):
            yield Problem(f"scores.{recipe}.ci", "must be an object of metric -> [lo, hi]")
        for name in sorted(set(cis or {}) - set(metrics or {}) if isinstance(cis, Mapping) else ()):
            yield Problem(f"scores.{recipe}.ci.{name}", "has no metric of that name beside it")


def _stats_problems(rec: Mapping[str, Any]) -> Iterator[Problem]:
    stats, outputs = rec.get("output_stats"), rec.get("outputs")
    if not isinstance(stats, Mapping):
        return
    for name in SHARES:
        v = stats.get(name)
        if v is not None and not (_num(v) and 0.0 <= v <= 1.0):
            yield Problem(f"output_stats.{name}", f"must be a share in [0, 1], got {v!r}")
    ratio = stats.get("length_ratio")
    if ratio is not None and not (_num(ratio) and ratio >= 0):
        yield Problem("output_stats.length_ratio", f"must be a non-negative number, got {ratio!r}")
    n, n_out = stats.get("n"), outputs.get("n") if isinstance(outputs, Mapping) else None
    if n is not None and _count(n_out) and n != n_out:
        yield Problem("output_stats.n", f"is {n!r} but the record has {n_out!r} outputs ('outputs.n')")


def _timing_problems(rec: Mapping[str, Any]) -> Iterator[Problem]:
    for name, v in _mapping(rec.get("timings")):
        if not (_num(v) and v >= 0):
            yield Problem(f"timings.{name}", f"must be a non-negative number of seconds, got {v!r}")


def _run_latency_problems(lat: Any) -> Iterator[Problem]:
    """A run record's ``latency`` block (its baseline's times are not in it: the ratio is checked where both
    are, in the latency record)."""
    if not isinstance(lat, Mapping):
        return
    yield from _latency_stats(lat.get("stats"), "latency.stats")
    for point, ci in (("speedup_mean", "speedup_ci95"), ("speedup_median", "speedup_median_ci95")):
        v = lat.get(point)
        if v is None:
            continue
        if not (_num(v) and v > 0):
            yield Problem(f"latency.{point}", f"must be a positive ratio, got {v!r}")
        elif lat.get(ci) is not None:
            yield from _interval(lat[ci], v, f"latency.{ci}", f"latency.{point}", 0.0)


def _latency_stats(stats: Any, where: str) -> Iterator[Problem]:
    """One system's single-stream summary (bench.latency.stats.summarize): positive times in percentile order."""
    if not isinstance(stats, Mapping):
        return
    for name, v in stats.items():
        if name == "mean_iterations" and v is None:
            continue
        if not (_num(v) and v >= 0):
            yield Problem(f"{where}.{name}", f"must be a non-negative finite number, got {v!r}")
            return
    if "n" in stats and not (_count(stats["n"]) and stats["n"] > 0):
        yield Problem(f"{where}.n", f"must be a positive integer (items timed), got {stats['n']!r}")
    present = [k for k in ORDERED_MS if k in stats]
    for a, b in zip(present, present[1:], strict=False):
        if stats[a] > stats[b] and not _close(stats[a], stats[b]):
            yield Problem(f"{where}.{b}", f"is {stats[b]!r}, below {a} {stats[a]!r} (percentiles only increase)")
    if "min_ms" in stats and "mean_ms" in stats and stats["mean_ms"] < stats["min_ms"] \
            and not _close(stats["mean_ms"], stats["min_ms"]):  # the mean of equal values may lose an ulp
        yield Problem(f"{where}.mean_ms", f"is {stats['mean_ms']!r}, below min_ms {stats['min_ms']!r}")


# ---------------------------------------------------------------- latency records (results/latency/*.json)

def latency_record_problems(rec: Mapping[str, Any]) -> list[Problem]:
    """What is inconsistent in a latency record: each system's summary, and each speed-up against the ratio
    of the baseline's stored mean (median) to the system's (the meter computes exactly that ratio)."""
    systems = rec.get("systems")
    if not isinstance(systems, Mapping):
        return []
    out: list[Problem] = []
    for name, entry in systems.items():
        if isinstance(entry, Mapping):
            out += _latency_stats(entry.get("stats"), f"systems.{name}.stats")
    base = systems.get(rec.get("baseline")) if isinstance(rec.get("baseline"), str) else None
    base_stats = base.get("stats") if isinstance(base, Mapping) else None
    for name, entry in systems.items():
        sp = entry.get("speedup") if isinstance(entry, Mapping) else None
        if isinstance(sp, Mapping):
            out += _speedup_problems(sp, base_stats, entry.get("stats"), f"systems.{name}.speedup")
    out += _gate_problems(rec, systems)
    return out


def _gate_problems(rec: Mapping[str, Any], systems: Mapping[str, Any]) -> Iterator[Problem]:
    """A gated record (``--quiet-gate``) says so in its settings, its signature and its gate block, and the
    gate's counts cover exactly the items each system kept: a gate cannot be added or dropped by hand."""
    settings = rec.get("settings")
    tol = settings.get("quiet_gate") if isinstance(settings, Mapping) else None
    gate = rec.get("quiet_gate")
    if tol is None and gate is None:
        return
    if not (_num(tol) and tol > 0 and isinstance(gate, Mapping) and gate.get("tolerance") == tol):
        yield Problem("quiet_gate", "settings.quiet_gate (a positive tolerance) and the quiet_gate block (what the "
                                    "gate did, with the same tolerance) must come together")
        return
    sig = rec.get("signature")
    if isinstance(sig, str) and f"gate:{tol:g}" not in sig.split("|"):
        yield Problem("signature", f"does not name the quiet gate (gate:{tol:g}) its settings record")
    fastest, reference = gate.get("fastest_ms"), gate.get("reference_ms")
    if fastest is not None and not (_num(fastest) and _num(reference) and 0 < fastest <= reference):
        yield Problem("quiet_gate.fastest_ms", f"must be a positive reading no slower than reference_ms "
                                               f"{reference!r}, got {fastest!r}")
    counts = gate.get("systems")
    trials = rec.get("trials")
    for name, entry in systems.items():
        if isinstance(trials, Mapping) and isinstance(trials.get("arm"), list):  # paired: every timing is kept
            kept: int | None = sum(1 for a in trials["arm"] if a == name)
        else:
            timings = entry.get("timings") if isinstance(entry, Mapping) else None
            lat = timings.get("latencies_ns") if isinstance(timings, Mapping) else None
            kept = len(lat) if isinstance(lat, list) else None
        yield from gate_count_problems(counts.get(name) if isinstance(counts, Mapping) else None,
                                       f"quiet_gate.systems.{name}", kept, "the system kept {} timed items")


def gate_count_problems(c: Any, where: str, kept: int | None, kept_says: str) -> Iterator[Problem]:
    """What the quiet gate did for one system (latency record) or cell (sweep): non-negative integer counts,
    whose accepted + ungated are exactly the ``kept`` timings (``kept_says`` names them, e.g. "the cell timed
    {} batches"). One rule for both record kinds."""
    if not (isinstance(c, Mapping) and all(isinstance(c.get(k), int) and not isinstance(c.get(k), bool)
                                           and c[k] >= 0 for k in ("accepted", "retimed", "ungated"))):
        yield Problem(where, "needs non-negative integer accepted, retimed and ungated")
    elif kept is not None and c["accepted"] + c["ungated"] != kept:
        yield Problem(where, f"accepted + ungated is {c['accepted'] + c['ungated']}, but {kept_says.format(kept)}")


def _speedup_problems(sp: Mapping[str, Any], base: Any, own: Any, where: str) -> Iterator[Problem]:
    for point, part, ci in (("mean", "mean_ms", "mean_ci95"), ("median", "p50_ms", "median_ci95")):
        v = sp.get(point)
        if v is None:
            continue
        if not (_num(v) and v > 0):
            yield Problem(f"{where}.{point}", f"must be a positive ratio, got {v!r}")
            continue
        if isinstance(base, Mapping) and isinstance(own, Mapping) and _num(base.get(part)) and _num(own.get(part)) \
                and own[part] > 0:
            want = base[part] / own[part]
            if not _close(v, want):
                yield Problem(f"{where}.{point}", f"is {v!r}, but the baseline's {part} over this system's is "
                                                  f"{want!r}")
                continue
        if sp.get(ci) is not None:
            yield from _interval(sp[ci], v, f"{where}.{ci}", f"{where}.{point}", 0.0)


# ---------------------------------------------------------------- orderings (results/ordering/*.json)

#: a pair's delta is the difference of its rows' values, each rounded to 4 decimals by the writer
DELTA_ATOL = 2e-4


def ordering_problems(data: Mapping[str, Any]) -> list[Problem]:
    """What is inconsistent in an ordering (bench.workflows.ordering): values on the metric scale, p-values in
    [0, 1], Kendall's tau-b and its CI in [-1, 1], and each pair's delta the difference of its rows' values."""
    out: list[Problem] = []
    lo, hi = METRIC_RANGE
    values: dict[str, float] = {}
    for i, row in enumerate(data.get("rows") or []):
        for key in ("reproduced", "reported"):
            v = row.get(key) if isinstance(row, Mapping) else None
            if v is not None and not (_num(v) and lo <= v <= hi):
                out.append(Problem(f"rows[{i}].{key}", f"is {v!r}, outside [{lo:g}, {hi:g}] (scores are x100)"))
        if isinstance(row, Mapping) and _num(row.get("reproduced")):
            values[str(row.get("row"))] = row["reproduced"]
    tau, ci = data.get("tau_b"), data.get("tau_ci95")
    if _num(tau) and not -1.0 <= tau <= 1.0:
        out.append(Problem("tau_b", f"is {tau!r}, outside [-1, 1]"))
    if isinstance(ci, list) and len(ci) == 2 and all(_num(v) for v in ci) and not -1.0 <= ci[0] <= ci[1] <= 1.0:
        out.append(Problem("tau_ci95", f"{ci!r} is not an interval inside [-1, 1]"))
    for where, items in (("pairs", data.get("pairs")), ("reference.rows", (data.get("reference") or {}).get("rows"))):
        for i, item in enumerate(items or []):
            p = item.get("p_bootstrap") if isinstance(item, Mapping) else None
            if p is not None and not (_num(p) and 0.0 <= p <= 1.0):
                out.append(Problem(f"{where}[{i}].p_bootstrap", f"must be a p-value in [0, 1], got {p!r}"))
    for i, pair in enumerate(data.get("pairs") or []):
        if not isinstance(pair, Mapping):
            continue
        a, b, d = values.get(str(pair.get("higher"))), values.get(str(pair.get("lower"))), pair.get("reproduced_delta")
        if a is not None and b is not None and _num(d) and abs((a - b) - d) > DELTA_ATOL:
            out.append(Problem(f"pairs[{i}].reproduced_delta", f"is {d!r}, but its rows' values differ by {a - b:.4f}"))
    return out + list(_ranking_problems(data))


def _ranking_problems(data: Mapping[str, Any]) -> Iterator[Problem]:
    """The verdict of an ordering, derived from its rows (``bench order`` computes it so): the pairs are the
    adjacent rows in the paper's order (the rows with a reported number, highest first), each ``reported_delta``
    their reported numbers' difference, and ``tau_b`` Kendall's τ-b of reported against reproduced values (checked
    where no two reproduced values are so close that their 4-decimal rounding could tie them). A τ-b of 1 typed
    over a broken ordering was shown as "the order survives" until ``--deep``."""
    rows = [r for r in data.get("rows") or [] if isinstance(r, Mapping)]
    ranked = [r for r in rows if _num(r.get("reported")) and _num(r.get("reproduced"))]
    tau, pairs = data.get("tau_b"), [p for p in data.get("pairs") or [] if isinstance(p, Mapping)]
    if tau is None:
        if pairs:
            yield Problem("pairs", "are listed, but 'tau_b' is null (an ordering of fewer rows than it ranks)")
        return
    want = [(str(a.get("row")), str(b.get("row"))) for a, b in zip(ranked, ranked[1:], strict=False)]
    have = [(str(p.get("higher")), str(p.get("lower"))) for p in pairs]
    if have != want:
        yield Problem("pairs", f"are {have}, but the adjacent rows in the paper's order are {want}")
        return
    for i, (a, b) in enumerate(zip(ranked, ranked[1:], strict=False)):
        d = pairs[i].get("reported_delta")
        if _num(d) and abs((a["reported"] - b["reported"]) - d) > DELTA_ATOL:
            yield Problem(f"pairs[{i}].reported_delta", f"is {d!r}, but the reported numbers differ by "
                                                        f"{a['reported'] - b['reported']:.4f}")
    ys = [r["reproduced"] for r in ranked]
    if isinstance(tau, float) and math.isnan(tau):  # undefined only when the rows tie (stored values tie or not)
        defined = _tau_b([r["reported"] for r in ranked], ys)
        if defined is not None:
            yield Problem("tau_b", f"is NaN (undefined), but its rows' reported and reproduced values give "
                                   f"{defined:.4f}")
        return
    if not _num(tau) or any(0 < abs(p - q) < 1e-3 for i, p in enumerate(ys) for q in ys[i + 1:]):
        return
    fresh = _tau_b([r["reported"] for r in ranked], ys)
    if fresh is not None and abs(round(fresh, 4) - tau) > 1e-4 + 1e-12:
        yield Problem("tau_b", f"is {tau!r}, but its rows' reported and reproduced values give {fresh:.4f}")


def _tau_b(x: list[float], y: list[float]) -> float | None:
    """Kendall's τ-b (``bench.workflows.ordering.kendall_tau_b`` on one sample); None when undefined."""
    sx = [math.copysign(1, x[i] - x[j]) if x[i] != x[j] else 0 for i in range(len(x)) for j in range(i + 1, len(x))]
    sy = [math.copysign(1, y[i] - y[j]) if y[i] != y[j] else 0 for i in range(len(y)) for j in range(i + 1, len(y))]
    den = math.sqrt(sum(1 for v in sx if v) * sum(1 for v in sy if v))
    return sum(a * b for a, b in zip(sx, sy, strict=True)) / den if den > 0 else None


# ---------------------------------------------------------------- digests

def digest(rec: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of ``rec``'s canonical JSON (sorted keys, no spaces, UTF-8), without its digest field:
    the same for the dict a writer holds and the dict read back from its file."""
    body = {k: v for k, v in rec.items() if k != DIGEST_FIELD}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True)
    return DIGEST_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()


def sealed(rec: Mapping[str, Any]) -> dict[str, Any]:
    """``rec`` with its digest (what a writer stores)."""
    return {**{k: v for k, v in rec.items() if k != DIGEST_FIELD}, DIGEST_FIELD: digest(rec)}


def unsealed(rec: dict[str, Any]) -> dict[str, Any]:
    """``rec`` without its digest: what readers hand on (the digest is the file's, not part of the record)."""
    return {k: v for k, v in rec.items() if k != DIGEST_FIELD} if DIGEST_FIELD in rec else rec


def digest_problem(rec: Mapping[str, Any]) -> Problem | None:
    """None when the digest ``rec`` carries fits its content, or when it carries none and its content is one of
    the records committed before digests (pinned by content in ``bench/store/legacy.json``:
    :mod:`bench.store.legacy`); a missing digest alone never makes a record legacy (docs/integrity.md)."""
    if DIGEST_FIELD not in rec:
        from bench.store.legacy import MANIFEST, is_pinned

        if is_pinned(digest(rec)):
            return None
        return Problem(DIGEST_FIELD, f"is missing, and the record is none of those committed before digests (pinned "
                                     f"by content in {MANIFEST.parent.parent.name}/{MANIFEST.parent.name}/"
                                     f"{MANIFEST.name})")
    stored = rec[DIGEST_FIELD]
    if not isinstance(stored, str) or not stored.startswith(DIGEST_PREFIX):
        return Problem(DIGEST_FIELD, f"must be '{DIGEST_PREFIX}<hex>', got {stored!r}")
    if stored != digest(rec):
        return Problem(DIGEST_FIELD, "does not match the record's content: a field was changed after the "
                                     "harness wrote it")
    return None
