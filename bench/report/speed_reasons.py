"""A sweep's verdict as a count in the page's header and its reasons as a table at the end (#58: the speed pages
opened with a paragraph of some fifty "threads=1 B=8: … UNSTABLE: …" reasons, most of them one control's reading
repeated for every system of its cell).

The record keeps every reason as it was written (``invalid_reasons``, ``ms_reasons``); this module only groups
them for reading: one row per cell and reason, naming every system it applies to.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

#: "threads=1 B=8: fairseq_nat speed-up UNSTABLE: the A/A control read 0.966x, …" (bench.latency.sweep)
_REASON = re.compile(r"^threads=(\d+) B=(\d+): (.+?) (VALID|INCONCLUSIVE|UNSTABLE|INVALID): (.+)$", re.S)
_CELL = re.compile(r"^threads=(\d+) B=(\d+): (.+)$", re.S)
_ORDER = {"VALID": 0, "INCONCLUSIVE": 1, "UNSTABLE": 2, "INVALID": 3}


def verdict_counts(rec: dict[str, Any]) -> Counter[str]:
    """How many of the sweep's speed-up cells (every system but the baseline, at each B and thread count) came out
    VALID, INCONCLUSIVE, UNSTABLE or INVALID."""
    base = rec["spec"].get("baseline")
    return Counter(str((c.get("speedup") or {}).get("verdict") or c.get("verdict") or "–")
                   for c in rec["sweep"]["cells"] if c["system"] != base and c.get("speedup"))


def verdict_line(rec: dict[str, Any]) -> str:
    """The header's verdict: the overall word, the cells counted by verdict, and where the reasons are."""
    overall = rec.get("verdict") or ("VALID" if rec.get("valid") else "INVALID")
    counts = verdict_counts(rec)
    total = sum(counts.values())
    parts = [f"{counts[v]} {v}" for v in sorted(counts, key=lambda v: _ORDER.get(v, 9))]
    text = f"Verdict: speed-ups {overall}" + (f" ({', '.join(parts)} of {total} cells)" if total else "")
    text += f"; milliseconds {rec.get('ms_label', 'INDICATIVE')}"
    if rec.get("invalid_reasons") or rec.get("ms_reasons"):
        text += ". Why, cell by cell: “Why not VALID” at the end of this section"
    return text


def reason_rows(rec: dict[str, Any]) -> list[list[str]]:
    """Rows (threads, B, verdict, applies to, reason), one per cell and distinct reason, in cell order."""
    grouped: dict[tuple[int, int, str, str], list[str]] = {}
    loose: list[list[str]] = []
    for reason in rec.get("invalid_reasons") or []:
        m = _REASON.match(reason)
        if m is None:
            loose.append(["–", "–", "–", "–", reason])
            continue
        t, b, subject, verdict, why = m.groups()
        grouped.setdefault((int(t), int(b), verdict, why), []).append(subject.removesuffix(" speed-up"))
    for reason in rec.get("ms_reasons") or []:
        m = _CELL.match(reason)
        if m is None:
            loose.append(["–", "–", rec.get("ms_label", "INDICATIVE"), "milliseconds", reason])
            continue
        t, b, why = m.groups()
        grouped.setdefault((int(t), int(b), str(rec.get("ms_label", "INDICATIVE")), why), []).append("milliseconds")
    base = rec["spec"].get("baseline")
    every = {n for n in rec["spec"].get("systems") or [] if n != base}
    rows = [[str(t), str(b), verdict, _applies(list(dict.fromkeys(subjects)), every), why]
            for (t, b, verdict, why), subjects in sorted(grouped.items(), key=lambda kv: (kv[0][0], kv[0][1]))]
    return rows + loose


def _applies(subjects: list[str], every: set[str]) -> str:
    """The subjects of one reason, with "every speed-up" for all the record's systems (a control's reading)."""
    if len(every) > 1 and every <= set(subjects):
        rest = [s for s in subjects if s not in every]
        return ", ".join(["every speed-up", *rest])
    return ", ".join(subjects)


_SUBJECT = re.compile(r"^(.+?) (VALID|INCONCLUSIVE|UNSTABLE|INVALID): (.+)$", re.S)


def grouped_reasons(reasons: list[str], systems: list[str]) -> list[str]:
    """A latency record's reasons ("fairseq_nat speed-up UNSTABLE: …") with one line per distinct reason, naming
    every system it applies to ("every speed-up" when a control's reading applies to all of ``systems``)."""
    grouped: dict[tuple[str, str], list[str]] = {}
    loose = []
    for reason in reasons:
        m = _SUBJECT.match(reason)
        if m is None:
            loose.append(reason)
            continue
        subject, verdict, why = m.groups()
        grouped.setdefault((verdict, why), []).append(subject.removesuffix(" speed-up"))
    every = set(systems)
    return [f"{_applies(list(dict.fromkeys(subjects)), every)} {verdict}: {why}"
            for (verdict, why), subjects in grouped.items()] + loose


__all__ = ["grouped_reasons", "reason_rows", "verdict_counts", "verdict_line"]
