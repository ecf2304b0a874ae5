"""The speed view of a paper table: published speedup next to the one measured here, from a latency record.

Why a separate source: a speedup is only meaningful against a baseline timed in the same process,
so speed cells come from one ``bench latency --record`` measurement (results/latency/), not from
separate runs. The record used is, among those for the table's task whose baseline is the table's
1.0x row, the newest VALID GPU record (the papers' speedups were measured on GPUs), else the newest
record of any kind (CPU records stay usable where no GPU was measured); its machine (the GPU by
name, with its driver and clocks) and mode (length-forced, random weights, batch 1) are named in the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bench.papers import Row, Table, leading_number


@dataclass(frozen=True)
class SpeedSource:
    """The latency record a table's speed column is read from (None fields: nothing matched)."""

    task: str | None
    baseline: str | None
    record: dict | None


def speed_column(table: Table) -> tuple[str, str] | None:
    """(group id, column id) of the table's measured-speedup column, if it has one."""
    for g in table.groups:
        if g.kind == "latency":
            for c in g.columns:
                if c.metric == "speedup":
                    return g.id, c.id
    return None


def baseline_system(table: Table) -> str | None:
    """The system of the row printed as 1.0x (the paper's speed reference), if any."""
    col = speed_column(table)
    if col is None:
        return None
    for row in table.rows:
        if leading_number(row.reported.get(col[1])) == 1.0 and row.system:
            return row.system
    return None


def table_task(table: Table) -> str | None:
    groups = table.quality_groups()
    return groups[0].task if groups else None


def is_gpu_record(rec: dict) -> bool:
    """Whether the record was timed on a GPU (``settings.device`` is "cuda")."""
    return (rec.get("settings") or {}).get("device") == "cuda"


def find_source(table: Table, latency_records: Sequence[dict], budget: str | None) -> SpeedSource | None:
    """The preferred matching record (same task, same baseline; same budget when one is asked), or an empty source.

    Preferred: the newest VALID GPU record; failing that, the newest record (CPU or GPU, valid or not). A timing of
    recorded runs' own models (``bench latency --runs``) is not a paper row's: it speaks on those runs' board rows."""
    if speed_column(table) is None:
        return None
    task, base = table_task(table), baseline_system(table)
    found = [
        r for r in latency_records
        if r["spec"]["task"] == task and r.get("baseline") == base and base is not None and not r["spec"].get("runs")
        and (budget is None or r["spec"]["budget"] == budget)
    ]
    return SpeedSource(task, base, max(found, key=preference) if found else None)


def preference(rec: dict) -> tuple[bool, str, str]:
    """How a table prefers among the latency records of its task and baseline (the greatest wins): a VALID GPU
    record, then the newest (``created``, then the id)."""
    return (is_gpu_record(rec) and bool(rec.get("valid")), str(rec["created"]), str(rec["latency_id"]))


def timed_as(rec: dict, system: str | None) -> tuple[str, dict] | None:
    """(system timed, its entry) for ``system`` in a latency record: itself, or the stand-in it was timed as."""
    if system is None:
        return None
    if system in rec["systems"]:
        return system, rec["systems"][system]
    stand = rec.get("stand_ins", {}).get(system)
    if stand:
        return stand["timed_as"], rec["systems"][stand["timed_as"]]
    return None


def speed_cell(reported: str, row: Row, source: SpeedSource) -> str:
    """``reported / measured× [CI]`` (or ``/ not measured``) for one row."""
    return system_speed_cell(reported, row.system, source)


def system_speed_cell(reported: str, system: str | None, source: SpeedSource) -> str:
    """:func:`speed_cell` for a system rather than a paper row (the harness's CTranslate2 row has no paper row)."""
    rep = reported or "–"
    rec = source.record
    if rec is None:
        return rep
    hit = timed_as(rec, system)
    if hit is None:
        return f"{rep} / not measured"
    timed, entry = hit
    paired = is_paired(rec)
    if paired:  # a paired record: every speed-up carries its own verdict
        invalid = " INVALID" if entry.get("verdict") == "INVALID" and timed == source.baseline else ""
    else:
        invalid = "" if entry.get("valid", True) and rec.get("valid", True) else " INVALID"
    alias = f" (timed as `{timed}`)" if timed != system else ""
    if timed == source.baseline:
        return f"{rep} / 1.00× (baseline){alias}{invalid}"
    sp = entry.get("speedup")
    if not sp:
        return f"{rep} / no speedup{alias}{invalid}"
    lo, hi = sp["mean_ci95"]
    if paired:
        work = work_text(rec, str(source.baseline), timed)
        return f"{rep} / {sp['mean']:.2f}× [{lo:.2f}–{hi:.2f}] {sp.get('verdict', 'INVALID')}{work}{alias}"
    return f"{rep} / {sp['mean']:.2f}× [{lo:.2f}–{hi:.2f}]{alias}{invalid}"


def is_paired(rec: dict) -> bool:
    """Whether a latency record was timed in the paired design (schema 2: trials, A/A control, verdicts)."""
    return isinstance(rec.get("design"), dict) and isinstance(rec.get("trials"), dict)


def work_text(rec: dict, baseline: str, system: str) -> str:
    """`` (passes 10.0×, FLOPs 2.3×)``: the baseline's deterministic work over the system's, beside its speed-up."""
    from bench.latency.work import work_ratio

    work = rec.get("work") or {}
    parts = [f"{label} {v:.1f}×" for key, label in (("passes_per_unit", "passes"), ("flops_per_sentence", "FLOPs"))
             if (v := work_ratio(work.get(baseline), work.get(system), key)) is not None]
    return f" ({', '.join(parts)})" if parts else ""


def speed_preamble(source: SpeedSource) -> str:
    """One line naming where the measured speedups come from (machine, mode) — or that there are none."""
    if source.record is None:
        return (
            f"Speed: published only; no latency record for task `{source.task}` with baseline "
            f"`{source.baseline}` under `results/latency/` (measure with `bench latency --record --results-dir "
            "results`)."
        )
    rec, spec = source.record, source.record["spec"]
    where = machine(rec)
    stats = next(iter(rec["systems"].values()))["stats"]
    verdict = rec.get("verdict") or ("VALID" if rec["valid"] else "INVALID")
    if is_paired(rec):
        design = rec["design"]
        line = (
            f"Speed: published / measured here on {where} ({timing_mode(rec)}; budget `{spec['budget']}` sizes; "
            f"{design['units']} items, each timed by every system back to back in a random order, in "
            f"{design['rounds']} reshuffled rounds). Measured = Σ over items of `{source.baseline}`'s per-item median "
            f"÷ the row's, paired-bootstrap 95% CI in brackets, then the speed-up's verdict (VALID: CI within "
            f"±5 %, per-round ratios within 15 %, A/A control within 3 %; else INCONCLUSIVE or UNSTABLE; "
            f"docs/latency.md) and the baseline's decoder passes and FLOPs over the row's (deterministic counts; "
            f"FLOPs of matmul/attention only); record `results/latency/{rec['latency_id']}.json`, speed-ups {verdict}."
        )
        aa = rec.get("aa")
        if isinstance(aa, dict):
            lo, hi = aa["mean_ci95"]
            line += (f" A/A control: `{aa['system']}` timed as two arms read {aa['mean']:.3f}× [{lo:.3f}–{hi:.3f}] "
                     f"({aa['verdict']}).")
        line += f" Milliseconds {rec.get('ms_label', 'INDICATIVE')}"
        line += (": " + "; ".join(rec.get("ms_reasons") or []) + "." if rec.get("ms_reasons") else
                 " (the canaries held).")
        from bench.report.speed_reasons import grouped_reasons

        timed = [n for n in rec["spec"].get("systems") or [] if n != rec["spec"].get("baseline")]
        reasons = grouped_reasons(list(rec.get("invalid_reasons") or []), timed)
        if reasons:
            line += " Not VALID because: " + "; ".join(reasons) + "."
    else:
        line = (
            f"Speed: published / measured here on {where} ({timing_mode(rec)}; budget `{spec['budget']}` sizes; "
            f"{stats['n']} items per system in {rec['settings']['rounds']}+ interleaved rounds). Measured = mean "
            f"latency of `{source.baseline}` ÷ the row's, paired-bootstrap 95% CI in brackets; record "
            f"`results/latency/{rec['latency_id']}.json`, verdict {verdict}."
        )
        if not rec["valid"]:
            line += " INVALID: " + "; ".join(rec.get("invalid_reasons") or ["no reason given"]) + "."
    stand = rec.get("stand_ins") or {}
    if stand:
        line += " Rows timed as another system: " + "; ".join(
            f"`{row}` as `{v['timed_as']}` ({v.get('basis', 'declared')})" for row, v in sorted(stand.items())
        ) + "."
    return line


def timing_mode(rec: dict) -> str:
    """How a latency record timed its systems, e.g. "length-forced, random weights, batch 1"."""
    spec = rec["spec"]
    mode = ["length-forced" if spec["length_forced"] else "free-running lengths"]
    if spec["weights"] == "random":
        mode.append("random weights")
    elif spec["weights"] == "trained":
        mode.append("the runs' trained models")
    return ", ".join([*mode, "batch 1"])


def machine(rec: dict) -> str:
    """The timing device in words: the CPU model and its torch threads, or the GPU with driver and clocks."""
    fp = rec.get("fingerprint_before") or {}
    threads = fp.get("torch_threads")
    thread_text = f"{threads} torch thread{'' if threads == 1 else 's'}" if threads else ""
    if not is_gpu_record(rec):
        return rec["device"] + (f", {thread_text}" if thread_text else "")
    from bench.env.fingerprint import describe_gpu_state

    parts = []
    state = fp.get("gpu_state")
    if state and state.get("source") != "unreadable":
        parts.append(describe_gpu_state(state, with_name=False) + " at start")
        warm = ((rec.get("canary") or {}).get("warmup") or {}).get("gpu_state_after")
        if warm and warm.get("source") != "unreadable" and warm.get("sm_mhz"):
            parts.append(f"SM {warm['sm_mhz']:g} MHz after warm-up")
    elif fp.get("gpu_driver"):
        parts.append(f"driver {fp['gpu_driver']}")
    else:
        parts.append("driver and clocks unreadable")
    host = f"host {fp.get('cpu') or 'CPU'}" + (f", {thread_text}" if thread_text else "")
    return f"GPU {rec['device']} ({'; '.join([*parts, host])})"
