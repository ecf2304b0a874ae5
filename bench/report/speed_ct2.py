"""The "vs CT2" column of a speed view: each row's speed-up over fairseq_transformer decoded by CTranslate2.

Why: the papers' speed-ups are over fairseq's Python generator, a slow AR reference; the same checkpoint decoded
by CTranslate2 (``fairseq_transformer_ct2``, int8 on a CPU) is what one would deploy (Helcl et al. 2022). The
column reads the same latency record as the speed column (:mod:`bench.report.speed`), so both references were
timed in one interleaved measurement; the values come from :func:`bench.latency.versus.speedup_over`. The
compute type in the header is the one the record says the system ran (``describe()``'s
``config.ctranslate2.compute_type_used``), never assumed; a record without the system gives "—" and a note with
the command that adds it.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from bench.report.speed import SpeedSource, is_paired, system_speed_cell, timed_as

#: the system the column compares with, and the compute type the column is for
CT2_SYSTEM = "fairseq_transformer_ct2"
WANTED = "int8"
NONE = "—"
ROW_LABEL = "Transformer decoded by CTranslate2 (harness reference, not in the paper)"


def _plain(value: object) -> str:
    """A record's string as plain text: no backtick, so it cannot open a `code` span (md_escape does the rest)."""
    return str(value).replace("`", "'")


@dataclass(frozen=True)
class CT2Column:
    """What the column shows for one table: its header, whether the record timed the system, and how it ran."""

    header: str
    timed: bool
    compute_type: str | None  # as the record says the system ran; None: not recorded (or not timed)
    beam: str | None


def ct2_column(source: SpeedSource | None) -> CT2Column:
    """The column's header and the CTranslate2 settings the record names (none: the column is for int8)."""
    rec = source.record if source is not None else None
    entry = (rec.get("systems") or {}).get(CT2_SYSTEM) if rec is not None else None
    if entry is None:
        return CT2Column(f"vs CT2 {WANTED}", False, None, None)
    config = (entry.get("system") or {}).get("config") or {}
    found = config.get("ctranslate2")
    ct2: dict = found if isinstance(found, dict) else {}
    used = ct2.get("compute_type_used") or (ct2.get("compute_type") if ct2.get("compute_type") != "default" else None)
    compute = _plain(used) if used else None
    beam = _plain(config["beam"]) if config.get("beam") is not None else None
    header = f"vs CT2 {compute}" if compute else "vs CT2 (compute type not recorded)"
    return CT2Column(header, True, compute, beam)


def versus_cell(system: str | None, source: SpeedSource | None) -> str:
    """``X.XX× [lo–hi]`` over the CTranslate2 system for one row; "—" when the record has no such system."""
    from bench.latency.versus import speedup_over

    rec = source.record if source is not None else None
    if rec is None or CT2_SYSTEM not in (rec.get("systems") or {}):
        return NONE
    hit = timed_as(rec, system)
    if hit is None:
        return "not measured"
    timed, entry = hit
    ref = rec["systems"][CT2_SYSTEM]
    ok = entry.get("valid", True) and ref.get("valid", True) and rec.get("valid", True)
    invalid = "" if ok else " INVALID"
    if timed == CT2_SYSTEM:  # a paired record judges each speed-up, and the reference has none to judge
        return f"1.00× (reference){'' if is_paired(rec) else invalid}"
    v = speedup_over(rec, CT2_SYSTEM, timed)
    if isinstance(v, str):
        return _plain(v) + invalid
    if v.verdict is not None and v.ci95 is not None:  # a paired record: the speed-up's own verdict
        return f"{v.mean:.2f}× [{v.ci95[0]:.2f}–{v.ci95[1]:.2f}] {v.verdict}"
    if v.from_items and v.ci95 is not None:
        return f"{v.mean:.2f}× [{v.ci95[0]:.2f}–{v.ci95[1]:.2f}]{invalid}"
    return f"{v.mean:.2f}× (ratio of speed-ups){invalid}"


#: the column of the deployed frame on both sides: each row's system decoded at int8 (its ``_int8`` twin: the same
#: model, per-token int8 Linear layers) over CTranslate2 at int8, from the same paired record
INT8_HEADER = "int8 vs CT2 int8"
INT8_SUFFIX = "_int8"


def int8_twin(rec: dict, system: str | None) -> str | None:
    """The ``_int8`` twin the record timed for ``system`` (or for the system its row was timed as), else None."""
    hit = timed_as(rec, system)
    if hit is None:
        return None
    twin = hit[0] + INT8_SUFFIX
    return twin if twin in (rec.get("systems") or {}) else None


def int8_timed(source: SpeedSource | None) -> bool:
    """Whether the record behind a table's speed column timed any ``_int8`` twin beside CTranslate2."""
    rec = source.record if source is not None else None
    names = (rec.get("systems") or {}) if rec is not None else {}
    return CT2_SYSTEM in names and any(n.endswith(INT8_SUFFIX) for n in names)


def int8_cell(system: str | None, source: SpeedSource | None) -> str:
    """``X.XX× [lo–hi] VERDICT``: the row's system at int8 over CTranslate2 at int8; "—" without a twin."""
    from bench.latency.versus import speedup_over

    rec = source.record if source is not None else None
    if rec is None:
        return NONE
    if system == CT2_SYSTEM:
        return "1.00× (reference)"
    twin = int8_twin(rec, system)
    if twin is None:
        return NONE
    v = speedup_over(rec, CT2_SYSTEM, twin)
    if isinstance(v, str):
        return _plain(v)
    ci = f" [{v.ci95[0]:.2f}–{v.ci95[1]:.2f}]" if v.ci95 is not None else ""
    return f"{v.mean:.2f}×{ci}" + (f" {v.verdict}" if v.verdict else "") + f" (`{_plain(twin)}`)"


def int8_note(source: SpeedSource) -> str:
    """What the int8 column is: both sides optimized as deployed, beside the paper's frame (fp32 vs fairseq)."""
    return (f"{INT8_HEADER}: the row's system decoded at `compute_type=int8` (its `_int8` twin: the same model, every "
            f"Linear layer int8 with per-token activations, batch-independent; docs/systems.md) over `{CT2_SYSTEM}` at "
            "int8, timed in the same paired record and judged by the same rules as the Speed column: the deployed "
            "frame on both sides, beside the paper's (fp32 against fairseq's generator). The int8 twins' quality "
            "change is on the task's leaderboard; '—' where the record timed no twin for the row.")


def ct2_row(source: SpeedSource, section: str | None, blanks: int) -> list[str]:
    """The harness's CTranslate2 row: its speed-up over the paper's baseline and the reference 1.00× beside it.

    ``section``: the baseline row's (None: the table has no Section column); ``blanks``: the empty cells between
    the System column and the speed column."""
    col = ct2_column(source)
    cells = ([section] if section is not None else []) + [ROW_LABEL, CT2_SYSTEM] + [""] * blanks
    cells.append(system_speed_cell("", CT2_SYSTEM, source))
    cells.append(versus_cell(CT2_SYSTEM, source))
    if col.timed:
        how = ", ".join(x for x in (col.compute_type, f"beam {col.beam}" if col.beam else None) if x)
        cells.append(f"speed only ({how or 'settings not recorded'}); its quality is on the task's leaderboard")
    else:
        cells.append("not timed: see the vs CT2 note")
    return cells


def timing_command(source: SpeedSource) -> str:
    """The ``bench latency`` call that times the record's systems again with the CTranslate2 system added."""
    rec = source.record
    if rec is None:
        base = source.baseline or "fairseq_transformer"
        return (f"bench latency --task {source.task} --budget paper --weights random --baseline {base} --systems "
                f"{base},<the table's other systems>,{CT2_SYSTEM} --set {CT2_SYSTEM}.compute_type={WANTED} --record "
                "--results-dir results")
    spec, settings = rec["spec"], rec.get("settings") or {}
    systems = [s for s in spec["systems"] if s != CT2_SYSTEM] + [CT2_SYSTEM]
    args = ["bench", "latency", "--task", spec["task"], "--split", spec["split"], "--budget", spec["budget"]]
    args += ["--weights", "random"] if spec.get("weights") == "random" else (
        ["--length-forced"] if spec.get("length_forced") else [])
    args += ["--baseline", str(spec["baseline"]), "--systems", ",".join(systems)]
    args += ["--n", str(spec["n"]), "--rounds", str(spec["rounds"])]
    if settings.get("min_items") is not None:
        args += ["--min-items", str(settings["min_items"])]
    if settings.get("device"):
        args += ["--device", str(settings["device"])]
    for row, timed in sorted((spec.get("stand_ins") or {}).items()):
        args += ["--stand-in", f"{row}={timed}"]
    args += ["--set", f"{CT2_SYSTEM}.compute_type={WANTED}", "--record", "--results-dir", "results"]
    return _plain(shlex.join(args))


def versus_note(source: SpeedSource) -> str:
    """What the column is and where its numbers come from; without the system, the command that adds it."""
    col = ct2_column(source)
    if not col.timed:
        where = ("the table has no latency record" if source.record is None
                 else f"`results/latency/{source.record['latency_id']}.json` did not time `{CT2_SYSTEM}`")
        return (f"vs CT2 {WANTED}: the row's speed-up over `{CT2_SYSTEM}` (the baseline's checkpoint decoded by "
                f"CTranslate2 at compute type {WANTED}) timed in the same measurement; {NONE} because {where}. "
                f"To fill it: `{timing_command(source)}`.")
    assert source.record is not None
    rec = source.record
    how = ", ".join(x for x in (f"compute type {col.compute_type}" if col.compute_type else
                                "compute type not recorded", f"beam {col.beam}" if col.beam else None) if x)
    items = all(isinstance((e.get("timings") or {}).get("latencies_ns"), list) for e in rec["systems"].values())
    derived = ("mean latency of `{0}` ÷ the row's, paired-bootstrap 95% CI from both systems' per-item times in "
               "the record" if items else
               "the ratio of the two speed-ups over `{1}` (the record keeps no per-item times, so no CI)")
    if is_paired(rec):
        derived += (", judged by the same rules as the Speed column (its own CI and per-round ratios, the record's "
                    "A/A and known-ratio controls)")
    line = (f"{col.header}: the row's speed-up over `{CT2_SYSTEM}` ({how}) timed in the same record as the Speed "
            f"column: " + derived.format(CT2_SYSTEM, _plain(source.baseline)) + ".")
    if col.compute_type != WANTED:
        line += (f" Not {WANTED}: the record's `{CT2_SYSTEM}` ran "
                 f"{col.compute_type or 'an unrecorded compute type'}; for {WANTED}: `{timing_command(source)}`.")
    return line
