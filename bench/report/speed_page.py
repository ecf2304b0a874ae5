"""A task's efficiency page (``reports/speed-<task>.md`` and ``.html``) from its batch-size sweep records (#48).

Why a page of its own: the paper tables show one batch-1 speed-up per row; a sweep holds a grid (systems ×
batch sizes × thread counts) with throughput, memory, model size and energy, and the crossover where the AR
baseline catches up by batching. The newest sweep per (budget, weights, split) of a task whose design held is
shown, one section each, every speed-up with its own verdict (VALID, INCONCLUSIVE, UNSTABLE) and its pass and FLOP
ratios beside it; a sweep whose design broke (INVALID) is listed with its reasons, never shown as figures. Every
string from a record is data: cells go through :mod:`bench.report.md_escape` and
:mod:`bench.report.html_escape` (names as `code` spans, backticks removed), ids are checked at load.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.report import html_escape, md_escape
from bench.report import markdown as md
from bench.report.speed_reasons import reason_rows, verdict_line
from bench.report.views import TableView

#: the CTranslate2 decoder of the AR model: drawn as a second AR baseline where a sweep has it
CT2 = "fairseq_transformer_ct2"
RANDOM = "paper-size architecture, untrained weights, length-forced: speed only"
MIB = 1 << 20


def page_name(task: str, ext: str) -> str:
    return f"speed-{task}.{ext}"


def code(name: object) -> str:
    """A record's string as a `code` span (a backtick in it would end the span: it becomes ')."""
    return "`" + str(name).replace("`", "'") + "`"


def shown(rec: dict) -> bool:
    """Whether a sweep's figures are shown: its design held (its speed-ups carry their own verdicts)."""
    return rec.get("verdict", "VALID" if rec.get("valid") else "INVALID") != "INVALID"


def speed_records(sweeps: Sequence[dict]) -> dict[str, list[dict]]:
    """task -> the newest shown sweep per (split, budget, weights), oldest group first (``sweeps``: oldest first)."""
    newest: dict[tuple[str, str, str, str], dict] = {}
    for rec in sweeps:
        if shown(rec):
            spec = rec["spec"]
            newest[(spec["task"], spec["split"], spec["budget"], spec["weights"])] = rec
    out: dict[str, list[dict]] = {}
    for key in sorted(newest):
        out.setdefault(key[0], []).append(newest[key])
    return out


def invalid_records(sweeps: Sequence[dict], task: str) -> list[dict]:
    """The task's INVALID sweeps (a broken design): listed on its page with their reasons, never shown as figures."""
    return [r for r in sweeps if not shown(r) and r["spec"]["task"] == task]


def _invalid_lines(invalid: Sequence[dict]) -> list[str]:
    return [f"Not shown, INVALID: {code(r['sweep_id'])}: " + "; ".join(r["invalid_reasons"] or ["no reason given"])
            for r in invalid]


# ---------------------------------------------------------------- figures

def _cells(rec: dict) -> list[dict]:
    return sorted(rec["sweep"]["cells"], key=lambda c: (c["threads"], c["batch_size"],
                                                        rec["spec"]["systems"].index(c["system"])))


def _at(rec: dict, system: str, b: int, t: int) -> dict | None:
    return next((c for c in rec["sweep"]["cells"] if (c["system"], c["batch_size"], c["threads"]) == (system, b, t)),
                None)


def sum_ratio(base: dict, cell: dict) -> float:
    """Σ ``base``'s per-batch medians over Σ ``cell``'s (both timed on the same batches, paired): the sweep's S."""
    return sum(base["batch_ns"]) / sum(cell["batch_ns"])


def work_ratios(rec: dict, c: dict) -> str:
    """The baseline's decoder passes and FLOPs over the system's, at the cell's (threads, B): deterministic counts
    beside the measured speed-up (empty where the counts are unreadable)."""
    base = rec["spec"].get("baseline")
    group = next((g for g in rec["sweep"].get("groups") or [] if (g["threads"], g["batch_size"]) ==
                  (c["threads"], c["batch_size"])), None)
    if base is None or group is None or c["system"] == base:
        return ""
    from bench.latency.work import work_ratio

    work = group.get("work") or {}
    parts = []
    for key, label in (("passes_per_unit", "passes"), ("flops_per_sentence", "FLOPs")):
        v = work_ratio(work.get(base), work.get(c["system"]), key)
        if v is not None:
            parts.append(f"{label} {v:.2f}×")
    return "; ".join(parts)


def _x(v: float) -> str:
    return f"{v:.2f}×"


def _rate(c: dict) -> str:
    lo, hi = c["sentences_per_s_ci95"]
    return f"{c['sentences_per_s']:.3g} [{lo:.3g}–{hi:.3g}]"


def _speedup(rec: dict, c: dict) -> str:
    base = rec["spec"].get("baseline")
    if base is None:
        return "no baseline"
    if c["system"] == base:
        return "1.00× (baseline)"
    sp = c.get("speedup")
    if not sp:
        return "not compared (latency probe)"
    lo, hi = sp["mean_ci95"]
    verdict = sp.get("verdict") or c.get("verdict") or ""
    return f"{_x(sp['mean'])} [{lo:.2f}–{hi:.2f}] {verdict}".rstrip()


def _vs(rec: dict, c: dict, other: str) -> str:
    if c["system"] == other:
        return "1.00×"
    ref = _at(rec, other, c["batch_size"], c["threads"])
    return "–" if ref is None else _x(sum_ratio(ref, c))


def _memory(c: dict) -> str:
    mem = c["peak_memory"]
    if "peak_bytes" not in mem:
        return f"unreadable ({mem['method']})"
    added = mem.get("added_bytes")
    more = f", +{added / MIB:.1f} in the pass" if isinstance(added, int | float) else ""
    return f"{mem['peak_bytes'] / MIB:.1f}{more} ({mem['method']})"


def energy_text(c: dict) -> str:
    """J/sentence where measured, else the record's status (``unreadable: <why>``, ``not measured ...``)."""
    en = c["energy"]
    if en["status"] == "measured":
        return f"{en['j_per_sentence']:.3g} J"
    return str(en["status"])


def _batched(c: dict) -> str:
    if c["batch_size"] == 1:
        return "single (B=1)"
    return "yes" if c["batched_decode"] else "NO: per-item loop (not a batched decode)"


def _size(m: dict) -> tuple[str, str, str]:
    disk = m.get("checkpoint_bytes")
    disk_text = f"{disk / 1e6:.1f} MB" if isinstance(disk, int) else str(disk)
    return f"{m['parameters']:,}", f"{m['parameter_bytes'] / 1e6:.1f} MB", disk_text


def best_batch(rec: dict, system: str, t: int) -> dict | None:
    """The cell of ``system`` at ``t`` threads with the largest sentences/s."""
    mine = [c for c in rec["sweep"]["cells"] if c["system"] == system and c["threads"] == t]
    return max(mine, key=lambda c: (c["sentences_per_s"], -c["batch_size"])) if mine else None


def quality(records: Sequence[dict], task: str, system: str) -> tuple[float, str, dict] | None:
    """(value, metric label, record) of the newest scored record of ``system`` on ``task`` under the
    leaderboard's headline metric (:func:`bench.report.ranking.headline`)."""
    from bench.report.ranking import headline

    mine = [r for r in records if r["spec"]["task"] == task]
    head = headline(task, mine)
    if head is None:
        return None
    found = [r for r in mine if r["spec"]["system"] == system and r.get("kind") != "external"
             and head.value(r) is not None]
    if not found:
        return None
    rec = max(found, key=lambda r: (str(r.get("created")), r["run_id"]))
    return float(head.value(rec) or 0.0), head.label, rec


# ---------------------------------------------------------------- views

def header_lines(rec: dict) -> list[str]:
    """What the section measured: device, threads and tracks, cores, bucket, budget, weights, build, verdict."""
    sw, spec = rec["sweep"], rec["spec"]
    tracks: dict[int, str] = {}
    for c in sw["cells"]:
        tracks.setdefault(c["threads"], c["track"])
    weights = RANDOM if spec["weights"] == "random" else f"{spec['weights']} weights"
    build = rec.get("harness") or {}
    sha = str(build.get("git_sha") or "unknown")
    lines = [
        f"Device: {code(rec['device'])} ({code(sw['device'])}); {sw['cores']} core{'' if sw['cores'] == 1 else 's'}; "
        "threads: "
        + "; ".join(f"{t} = {tracks.get(t, '?')}" for t in sw["threads"]),
        f"Task {code(spec['task'])}, split {code(spec['split'])}, budget {code(spec['budget'])}; weights: {weights}; "
        f"batch sizes {', '.join(str(b) for b in sw['batch_sizes'])}; bucket {code(sw['bucket'])}; "
        f"{'length-forced' if sw.get('length_forced') else 'free-running lengths'}; seed {sw.get('seed')}",
        f"Baseline: {code(spec['baseline']) if spec.get('baseline') else 'none (no speed-ups or crossovers)'}; "
        f"harness build {code(sha[:12])}" + (" (uncommitted changes)" if build.get("dirty") else "")
        + f"; created {code(rec['created'])}",
        verdict_line(rec),
    ]
    for g in sw.get("groups") or []:
        aa = g.get("aa")
        if aa:
            lo, hi = aa["mean_ci95"]
            lines.append(f"A/A control at threads={g['threads']}, B={g['batch_size']}: {code(aa['system'])} timed as "
                         f"two arms read {aa['mean']:.3f}× [{lo:.3f}–{hi:.3f}], {aa['verdict']} "
                         f"({g['design']['rounds']} paired rounds of {g['design']['units']} batches)")
    for why in rec.get("agreement_reasons") or []:
        lines.append(f"Batched ≠ single: {why}")
    gate = sw.get("quiet_gate")
    if gate:
        retimed = sum((c.get("quiet_gate") or {}).get("retimed", 0) for c in sw["cells"])
        batches = sum(len(c["batch_ns"]) for c in sw["cells"])
        lines.append(f"Quiet gate {gate['tolerance']:g} (docs/latency.md): every batch timed in a quiet window of "
                     f"the canary probe; {retimed} timing(s) discarded and re-timed over {batches} kept batches")
    return lines


def cell_view(rec: dict) -> TableView:
    """Systems × batch sizes × threads."""
    spec = rec["spec"]
    base = spec.get("baseline")
    ct2 = CT2 in spec["systems"] and base != CT2
    header = ["System", "B", "threads", "batched decode", "sentences/s [95% CI]", "tokens/s",
              f"speed-up vs {code(base)} (same B) [95% CI] verdict" if base else "speed-up"]
    if base:
        header.append("work ratio (passes, FLOPs)")
    if ct2:
        header.append(f"speed-up vs {code(CT2)} (same B)")
    header += ["p90 ms/batch", "peak memory MiB (method)", "J/sentence"]
    rows = []
    empty = False
    for c in _cells(rec):
        tokens = f"{c['tokens_per_s']:.3g}"
        if not c.get("tokens"):
            tokens, empty = "0 (outputs empty ‡)", True
        row = [code(c["system"]), str(c["batch_size"]), str(c["threads"]), _batched(c), _rate(c), tokens,
               _speedup(rec, c)]
        if base:
            row.append(work_ratios(rec, c))
        if ct2:
            row.append(_vs(rec, c, CT2))
        row += [f"{c['batch_p90_ms']:.1f}", _memory(c), energy_text(c)]
        rows.append(row)
    return TableView(f"cells-{rec['sweep_id']}", "Throughput by batch size and threads", [], header, rows,
                     ["Sentences/s and tokens/s: totals over the whole timed set (per batch, the median over the "
                      "paired rounds); 95% CI: bootstrap over batches. Speed-up: Σ of the baseline's per-batch medians "
                      "÷ the system's, every system timing each batch back to back in a random order each round "
                      "(paired bootstrap CI over batches); its verdict (docs/latency.md): VALID, INCONCLUSIVE (CI too "
                      "wide or the A/A control off by > 3 %), UNSTABLE (per-round ratios apart > 15 % or the A/A CI "
                      "excludes 1). Work ratio: the baseline's sequential decoder passes and FLOPs per batch ÷ the "
                      "system's (deterministic counts; FLOPs count matmul/attention only).",
                      "A row marked NO in 'batched decode' looped over the items one by one: its throughput is not "
                      "that of a batched decode.",
                      *(["‡ Every output of this row was the empty string, so its tokens/s is no rate: an untrained "
                         "NAT, iNAT or CMLM timed length-forced before the forcing barred special tokens echoed its "
                         "<unk> canvas, which the detokenizer strips (its timed decoder passes are the same)."]
                        if empty else [])])


def system_view(rec: dict, records: Sequence[dict]) -> TableView:
    """Per system: model size, bs-1 latency, batched-vs-single agreement, quality where recorded."""
    sw, spec = rec["sweep"], rec["spec"]
    t1 = min(sw["threads"])
    rows = []
    for name in spec["systems"]:
        m = sw["models"].get(name) or {}
        params, mb, disk = _size(m) if "parameters" in m else ("–", "–", "–")
        one = _at(rec, name, 1, t1)
        p90 = f"{one['batch_p90_ms']:.1f}" if one else "not swept at B=1"
        a = sw["agreement"].get(name) or {}
        agree = (f"{a['rate']:.0%} ({a['agreed']}/{a['compared']})" if a.get("rate") is not None
                 else "not compared")
        q = quality(records, spec["task"], name)
        qtext = "no quality record" if q is None else (
            f"{q[0]:.2f} {q[1]} from {code(q[2]['run_id'])} (budget {code(q[2]['spec']['budget'])})")
        rows.append([code(name), params, mb, disk, p90, agree, qtext])
    notes = [f"bs-1 p90: per sentence at B=1 and {t1} thread(s). Agreement: the share of items whose batched "
             "output equals the B=1 output (padding or length prediction can change it)."]
    for name in spec["systems"]:
        how = (sw["models"].get(name) or {}).get("parameter_bytes_note")
        if isinstance(how, str):
            notes.append(f"{code(name)} parameter MB: {code(' '.join(how.split()))}.")
    if spec["weights"] == "random":
        notes.append("These weights are untrained (speed only): the quality column is the newest scored record of "
                     "the same system name on this task, at that record's own budget.")
    return TableView(f"systems-{rec['sweep_id']}", "Systems", [],
                     ["System", "parameters", "parameter MB", "checkpoint on disk", "bs-1 p90 ms/sentence",
                      "batched = single", "quality"], rows, notes)


def crossover_view(rec: dict) -> TableView:
    base = rec["spec"].get("baseline")
    rows = []
    for t, per in sorted((rec["sweep"].get("crossover") or {}).items(), key=lambda kv: int(kv[0])):
        for name, b in sorted(per.items()):
            text = (f"B={b}: the smallest B at which {code(base)} reaches {code(name)}'s sentences/s"
                    if isinstance(b, int) else f"none up to B={str(b).rsplit('=', 1)[-1]}")
            rows.append([str(t), code(name), text])
    notes = [] if base else ["No baseline in this sweep: no crossovers."]
    return TableView(f"crossover-{rec['sweep_id']}", "Crossovers", [], ["threads", "System", "crossover"], rows,
                     notes)


def claims_view(rec: dict) -> TableView | None:
    """One line per paper speed claim on this task: the paper's speed-up, ours at B=1 against the paper's
    baseline, ours at the system's best batch against the baseline at that same B."""
    from bench.papers import all_tables, leading_number
    from bench.report.speed import baseline_system, speed_column, table_task

    spec, sw = rec["spec"], rec["sweep"]
    t1 = min(sw["threads"])
    rows, unswept = [], 0
    for table in all_tables():
        col = speed_column(table)
        if col is None or table_task(table) != spec["task"]:
            continue
        base = baseline_system(table)
        for row in table.rows:
            paper = leading_number(row.reported.get(col[1]))
            if paper is None or not row.system or row.system == base:
                continue
            if row.system not in spec["systems"]:
                unswept += 1
                continue
            ours1 = ourbest = "not swept"
            one, b1 = _at(rec, row.system, 1, t1), _at(rec, base, 1, t1) if base else None
            if one and b1:
                ours1 = _x(sum_ratio(b1, one))
            best = best_batch(rec, row.system, t1)
            ref = _at(rec, base, best["batch_size"], t1) if best and base else None
            if best and ref:
                ourbest = f"{_x(sum_ratio(ref, best))} at B={best['batch_size']}"
            rows.append([f"{table.ref}", code(row.system), f"{paper:g}× vs {code(base)}", ours1, ourbest])
    if not rows and not unswept:
        return None
    notes = ["Ours: median batch time of the paper's baseline ÷ the system's, on the same batches; best batch: the "
             "B with the system's largest sentences/s."]
    if unswept:
        notes.append(f"{unswept} more paper speed claim(s) on this task name systems this sweep did not time.")
    return TableView(f"claims-{rec['sweep_id']}", "Paper speed claims", [],
                     ["table", "System", "paper", f"ours, B=1, {t1} thread(s)", "ours, best batch"], rows, notes)


def reasons_view(rec: dict) -> TableView | None:
    """Why each cell is not VALID, one row per cell and distinct reason (bench.report.speed_reasons)."""
    rows = reason_rows(rec)
    if not rows:
        return None
    return TableView(f"why-{rec['sweep_id']}", "Why not VALID", [],
                     ["threads", "B", "verdict", "applies to", "reason"], rows,
                     ["A control's reading (the A/A or the known-ratio arm) makes every speed-up of its cell "
                      "UNSTABLE, so it is one row naming them all. docs/latency.md defines each verdict."])


def views(rec: dict, records: Sequence[dict]) -> list[TableView]:
    out = [cell_view(rec), system_view(rec, records), crossover_view(rec)]
    claims, why = claims_view(rec), reasons_view(rec)
    return out + [v for v in (claims, why) if v is not None]


def _record_href(rec: dict, results: str | None) -> str | None:
    return None if results is None else f"{results}sweep/{rec['sweep_id']}.json"


# ---------------------------------------------------------------- plots

def throughput_plot(rec: dict) -> str:
    from bench.report.speed_svg import Mark, Series, throughput_svg

    spec, sw = rec["spec"], rec["sweep"]
    base = spec.get("baseline")
    series = []
    for t in sw["threads"]:
        for name in spec["systems"]:
            pts = tuple((c["batch_size"], c["sentences_per_s"]) for c in _cells(rec)
                        if c["system"] == name and c["threads"] == t)
            if pts:
                series.append(Series(f"{name} ({t} thr)", pts, baseline=name in (base, CT2)))
    marks = []
    for t, per in (sw.get("crossover") or {}).items():
        for name, b in sorted(per.items()):
            cell = _at(rec, base, b, int(t)) if isinstance(b, int) and base else None
            if cell:
                marks.append(Mark(f"{name} ({t} thr)", b, cell["sentences_per_s"]))
    return throughput_svg(f"Throughput vs batch size: {spec['task']} ({spec['budget']})", series, marks)


def pareto_plots(rec: dict, records: Sequence[dict]) -> tuple[str, list[str]]:
    """Quality against absolute speed (B=1 sentences/s, and best-batch sentences/s); the systems without a
    quality record, listed."""
    from bench.report.svg_plot import Point, quality_speed_svg

    spec, sw = rec["spec"], rec["sweep"]
    t1 = min(sw["threads"])
    one_pts, best_pts, missing, label = [], [], [], "quality"
    for name in spec["systems"]:
        q = quality(records, spec["task"], name)
        if q is None:
            missing.append(name)
            continue
        label = q[1]
        one, best = _at(rec, name, 1, t1), best_batch(rec, name, t1)
        tag = f"{name} ({q[2]['spec']['budget']})"
        if one:
            one_pts.append(Point(tag, one["sentences_per_s"], q[0]))
        if best:
            best_pts.append(Point(f"{tag} B={best['batch_size']}", best["sentences_per_s"], q[0]))
    svg = (quality_speed_svg("Quality vs B=1 speed", one_pts, label, f"sentences/s at B=1, {t1} thread(s) "
                             "(1000 ÷ ms/sentence)", " sent/s")
           + quality_speed_svg("Quality vs best-batch throughput", best_pts, label,
                               f"sentences/s at the best B, {t1} thread(s)", " sent/s"))
    return svg, missing


# ---------------------------------------------------------------- pages

def markdown_page(task: str, recs: Sequence[dict], records: Sequence[dict], results: str | None,
                  invalid: Sequence[dict] = ()) -> str:
    """``reports/speed-<task>.md``: each record's header and tables (the plots are the HTML page's)."""
    line = md_escape.line
    out = [md.GENERATED, "", f"# Speed: {line(code(task))}", "",
           "- " + line("Batch-size sweeps (`bench latency --batch-sizes`); the plots are on "
                       f"`{page_name(task, 'html')}`."),
           *[f"- {line(x)}" for x in _invalid_lines(invalid)], ""]
    for rec in recs:
        out += [f"## Sweep {line(code(rec['sweep_id']))}", ""]
        href = _record_href(rec, results)
        if href is not None:  # the id and the folder are checked names (bench.store.sweeps.SWEEP_ID)
            out += [f"- Record: [`{rec['sweep_id']}`]({href})"]
        out += [f"- {line(p)}" for p in header_lines(rec)]
        missing = pareto_plots(rec, records)[1]
        if missing:
            out.append("- " + line("Not on the quality plots (no quality record): "
                                   + ", ".join(code(n) for n in missing)))
        out.append("")
        out += [md.view_markdown(v, level=3) for v in views(rec, records)]
    return "\n".join(out).rstrip("\n") + "\n"


_CSS = """
table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top;min-width:4.5em}
td.long{min-width:15em}td.longer{min-width:28em}
th{background:#f3f3f3;font-weight:600}
li{margin:2px 0;overflow-wrap:anywhere}
details.how{font-size:13px;margin:.3em 0 1em}details.how summary{cursor:pointer;color:#235}
.plots{display:flex;flex-wrap:wrap}
""".strip()


def html_page(task: str, recs: Sequence[dict], records: Sequence[dict], stamp: Any = None,
              results: str | None = None, invalid: Sequence[dict] = ()) -> str:
    """``reports/speed-<task>.html``: as :func:`markdown_page`, with the throughput and quality plots."""
    from bench.report.html import view_html
    from bench.report.html_page import head
    from bench.report.speed_svg import SPEED_SVG_CSS
    from bench.report.svg_plot import SVG_CSS

    e, inline = html_escape.text, html_escape.inline
    parts = [head(f"bench speed: {task}", f"{_CSS}\n{SVG_CSS}{SPEED_SVG_CSS}"),
             f"<h1>Speed: <code>{e(task)}</code></h1>\n",
             f'<p>Batch-size sweeps (<code>bench latency --batch-sizes</code>). '
             f'<a href="leaderboard-{e(task)}.html">Leaderboard</a> · <a href="index.html">Paper tables</a></p>\n']
    if invalid:
        parts.append("<ul>" + "".join(f"<li>{inline(x)}</li>" for x in _invalid_lines(invalid)) + "</ul>\n")
    for rec in recs:
        parts.append(f"<h2>Sweep {html_escape.run_id(rec['sweep_id'])}</h2>\n<ul>")
        href = _record_href(rec, results)
        if href is not None:
            parts.append(f'<li>Record: <a href="{html_escape.attr(href)}"><code>{e(rec["sweep_id"])}</code></a></li>')
        parts += [f"<li>{inline(p)}</li>" for p in header_lines(rec)]
        parts.append("</ul>\n")
        svg, missing = pareto_plots(rec, records)
        parts.append(f'<div class="plots">{throughput_plot(rec)}{svg}</div>\n')
        if missing:
            parts.append("<p>Not on the quality plots (no quality record): "
                         + ", ".join(f"<code>{e(n)}</code>" for n in missing) + "</p>\n")
        parts += [view_html(v) + "\n" for v in views(rec, records)]
    parts.append(stamp.html() if stamp is not None else "")
    parts.append("</body></html>\n")
    return "".join(parts)


__all__ = ["html_page", "markdown_page", "page_name", "speed_records"]
