"""One HTML leaderboard page per task (reports/leaderboard-<task>.html), read at a glance.

The paper tables answer "does the reproduction match the paper"; a leaderboard answers "what is
best on this task". Its default view (:mod:`bench.report.board` builds the data) says what matters first:

- when a reference baseline (copy the source, lead-1/3: no training) scores above every ranked run of a
  group, the page's first lines say so, with both numbers (:func:`bench.report.ranking.reference_above_all`);
- one group per set of examples ("whole test split", "first 2,000 of test"), each ranked within
  itself, because numbers over different examples cannot be compared;
- one line per run, best first by the task's headline metric with its CI, in rank clusters ("1–3")
  formed over all pairs (``bench.report.clusters``: a higher cluster beats every lower one, Holm-corrected);
  each reference baseline is a marked line at its score's place among them, never ranked;
- compact columns — rank, system (linked to its record, with its badges: reference, submitted, degenerate),
  headline, budget, speed-up, the paper row it reproduces — a column no run of the page fills is left out, and
  every other metric and recipe is behind "details"; the examples a group scored are in its title;
- each speed-up keyed to a footnote under its group that names its device, threads, weights and batch size
  (:mod:`bench.report.timing_label`), never in a hover title only;
- a quality-versus-speed plot per group with a measured speed-up (inline SVG, labelled points, the
  Pareto front dashed); the signatures and definitions folded under "How this was measured".

From 390 px up, the rank, the system and the score with its CI are on screen without scrolling; from 800 px up,
so is the speed-up. A group's table wider than the screen scrolls sideways in its own box with the rank and the
system held at the left (:mod:`bench.report.html_page`), so every column stays reachable on a phone; a plot keeps
its natural size (readable labels) and scrolls in its own box too.

A few lines of inline JavaScript (no external assets: the page works offline) toggle the details,
filter by budget and re-sort a group by a column; the view lives in the URL fragment
(``#budget=cpu&sort=speedup``), so a filtered view is a link and headless Chromium shows exactly it.
Without JavaScript the page shows the ranked default view.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.report import html_escape
from bench.report.board import Board, build_board, display_name, run_settings
from bench.report.cells import DEGENERATE_MARK, fmt_num
from bench.report.compute_twins import TOLERANCE, change_line
from bench.report.html_page import head as page_head
from bench.report.html_page import record_link, scroll
from bench.report.ranking import (
    ALPHA,
    Ranked,
    RankedGroup,
    ReferenceLead,
    is_reference,
    metric_label,
    reference_above_all,
)
from bench.report.significance import SAMPLES, SEED, PairedBootstrap
from bench.report.spans import code, lit
from bench.report.stamp import BuildStamp
from bench.report.svg_plot import SVG_CSS, Point, quality_speed_svg
from bench.scoring.output_stats import summary as output_summary
from bench.store.pvalues import PValues

#: metrics of the details table, in this order (others follow, sorted)
DETAIL_METRICS = ("bleu1", "bleu2", "bleu3", "bleu4", "meteor", "rougeL", "rouge1", "rouge2", "exact_match")
ARCH_MARK = "†"  # a speed-up measured on the paper row's architecture, not on this run

_CSS = """
h2{margin:1.4em 0 .2em;font-size:1.2em}h2 small{font-weight:normal;color:#555}
p.lede{margin:.2em 0 .6em;max-width:80em}
p.first{margin:.3em 0 .6em;padding:.4em .6em;max-width:80em;background:#fff4e0;border-left:4px solid #c77700}
.controls{margin:.4em 0;display:flex;gap:1.5em;align-items:center;flex-wrap:wrap;font-size:14px}
table.board{border-collapse:collapse;margin:.4em 0;font-size:13px;width:100%;table-layout:fixed;min-width:var(--least)}
.board col.rank{width:4.2em}.board col.sys{width:16em}.board col.head{width:11.5em}
.board col.budget{width:5.5em}.board col.speed{width:7em}.board col.more{width:5.5em}
.board th,.board td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
.board th{background:#f3f3f3;white-space:nowrap}.board th.head{white-space:normal}.board th[data-sort]{cursor:pointer}
.board th.sorted{background:#dde8f5}
.board td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.board td.rank{font-weight:bold;white-space:nowrap}
.board td.sys,.board td.paper{overflow-wrap:anywhere}
.board .stick{position:sticky;z-index:1;background:#fff;box-shadow:inset -1px 0 #bbb}
.board .rank.stick{left:0}.board .sys.stick{left:4.2em}
.board th.stick{background:#f3f3f3}
.board .ci{color:#666;font-size:11px}.board .set{color:#555;font-size:11px}
.board sup.key{color:#555;font-size:10px;margin-left:1px}
.badge{display:inline-block;font-size:10px;padding:0 4px;border-radius:3px;background:#eee;color:#333;margin-left:4px}
.board .set.loss{color:#8a4b00;font-weight:bold}
.badge.sub{background:#e8f0fe}.badge.ref{background:#e4ecf7;border:1px solid #7a8ca3}
.badge.deg{background:#fff0d6;color:#8a4b00;font-weight:bold;border:1px solid #d9a55b}
tr.degenerate td,tr.degenerate td.stick{background:#fff8ec}
tr.reference td,tr.reference td.stick{background:#eef3fa;border-top:2px dashed #7a8ca3;border-bottom:2px dashed #7a8ca3}
tr.reference td.rank{font-weight:normal;font-style:italic;color:#3d4f66}
tr.details>td{background:#fafafa;font-size:12px}tr.details table{border-collapse:collapse;margin:.3em 0}
tr.details table td,tr.details table th{border:1px solid #ddd;padding:1px 5px}
tr.details ul{margin:.3em 0;padding-left:1.2em}tr.details li{overflow-wrap:anywhere}
button.more{font-size:11px;padding:0 5px}
.untested{color:#8a4b00;font-size:13px;margin:.2em 0}
p.timing-key{font-size:12px;color:#444;margin:.1em 0 .6em;max-width:80em}p.timing-key code{font-size:11px}
.plots{display:flex;flex-wrap:wrap}.plotbox{overflow-x:auto;max-width:100%}.plotbox svg.plot{max-width:none}
details.how{margin:1.5em 0;font-size:13px}details.how li{overflow-wrap:anywhere;margin:2px 0}
@media (max-width:700px){table.board{min-width:var(--least-narrow)}
.board col.rank{width:3.6em}.board .sys.stick{left:3.6em}.board col.sys{width:10em}.board col.head{width:11em}
.board col.speed{width:6.5em}
.controls{gap:.6em 1em}}
""".strip() + SVG_CSS

# Details toggles, the budget filter and per-group sorting; state in the fragment (#budget=cpu&sort=speedup&dir=asc).
_JS = """
(function(){
  function state(){var s={};location.hash.replace(/^#/,'').split('&').forEach(function(kv){
    var i=kv.indexOf('='); if(i>0){s[decodeURIComponent(kv.slice(0,i))]=decodeURIComponent(kv.slice(i+1));}});return s;}
  function set(k,v){var s=state(); if(v){s[k]=v;}else{delete s[k];}
    location.hash=Object.keys(s).map(function(k){return k+'='+encodeURIComponent(s[k]);}).join('&');}
  var tables=Array.prototype.slice.call(document.querySelectorAll('table.board'));
  tables.forEach(function(t){t._pairs=Array.prototype.slice.call(t.tBodies[0].rows).filter(function(r){
    return r.classList.contains('run');}).map(function(r){return [r,r.nextElementSibling];});});
  function apply(){
    var s=state(), budget=s.budget||'', col=s.sort||'', dir=s.dir==='asc'?1:-1;
    tables.forEach(function(t){
      var pairs=t._pairs.slice(), heads=t.tHead.rows[0].cells, idx=-1;
      for(var i=0;i<heads.length;i++){var c=heads[i].getAttribute('data-sort');
        heads[i].classList.toggle('sorted',!!col&&c===col); if(col&&c===col){idx=i;}}
      if(idx>=0){pairs.sort(function(a,b){
        var x=parseFloat(a[0].cells[idx].getAttribute('data-v')), y=parseFloat(b[0].cells[idx].getAttribute('data-v'));
        if(isNaN(x)){return isNaN(y)?0:1;} if(isNaN(y)){return -1;} return col==='rank'?(x-y)*-dir:(x-y)*dir;});}
      var body=t.tBodies[0];
      pairs.forEach(function(p){body.appendChild(p[0]); body.appendChild(p[1]);
        var show=!budget||p[0].getAttribute('data-budget')===budget;
        p[0].hidden=!show; if(!show){p[1].hidden=true;}});
    });
    var sel=document.getElementById('budget'); if(sel){sel.value=budget;}
  }
  document.addEventListener('click',function(ev){
    var b=ev.target.closest('button.more');
    if(b){var d=b.closest('tr').nextElementSibling; d.hidden=!d.hidden;
      b.setAttribute('aria-expanded',String(!d.hidden));}
    var th=ev.target.closest('th[data-sort]');
    if(th){var s=state(), c=th.getAttribute('data-sort');
      set('dir', s.sort===c&&s.dir!=='asc'?'asc':'desc'); set('sort',c);}
    if(ev.target.id==='expand-all'){var open=ev.target.getAttribute('aria-expanded')!=='true';
      ev.target.setAttribute('aria-expanded',String(open));
      ev.target.textContent=open?'hide all details':'show all details';
      tables.forEach(function(t){t._pairs.forEach(function(p){if(!p[0].hidden){p[1].hidden=!open;}});});}
  });
  var sel=document.getElementById('budget');
  if(sel){sel.addEventListener('change',function(){set('budget',sel.value);});}
  window.addEventListener('hashchange',apply); apply();
})();
""".strip()

e = html_escape.text  # every value on the page, from a record or not (attributes too: quotes are escaped)
_code = html_escape.inline  # text with `code` spans


def _badges(rec: dict, r: Ranked | None = None) -> str:
    """The marks beside a system's name: submitted, reference, degenerate (its reasons in the title)."""
    out = ""
    if rec.get("kind") == "external":
        out += '<span class="badge sub" title="outputs made elsewhere (bench submit), scored here">submitted</span>'
    if is_reference(rec):
        out += '<span class="badge ref" title="harness reference baseline: no training">reference</span>'
    if r is not None and r.degenerate:
        out += f'<span class="badge deg" title="{e("; ".join(r.flags), quote=True)}">{DEGENERATE_MARK}</span>'
    return out


@dataclass(frozen=True)
class Column:
    """One column of a board: its ``<col>`` class, sort key (``data-sort``), header text and widths (the CSS's)."""

    cls: str
    sort: str
    title: str | None  # None for the headline column: the headline's label
    width_em: float  # its width in the wide layout (the paper row's: the least it gets)
    narrow_em: float  # its width below 700 px (:data:`_CSS`'s media query)


RANK = Column("rank", "rank", "Rank", 4.2, 3.6)
SYSTEM = Column("sys", "", "System", 16, 10)
HEADLINE = Column("head", "headline", None, 11.5, 11)
BUDGET = Column("budget", "", "Budget", 5.5, 5.5)
SPEED = Column("speed", "speedup", "Speed-up", 7, 6.5)
PAPER = Column("paper", "", "Paper row", 14, 14)
MORE = Column("more", "", "", 5.5, 5.5)


def board_columns(board: Board) -> list[Column]:
    """The page's columns, the same in every group so the groups line up: a column no run of the page fills
    (no speed-up measured, no paper row reproduced) is left out, and so is the examples count (each group's
    title says it: a group is one set of examples)."""
    cols = [RANK, SYSTEM, HEADLINE, BUDGET]
    if board.speeds:
        cols.append(SPEED)
    if any(board.paper_rows.values()):
        cols.append(PAPER)
    return [*cols, MORE]


def speed_keys(board: Board) -> dict[str, str]:
    """Each distinct timing setting of the page's speed-ups (:meth:`TimingSetting.long`) -> its footnote key
    ("a", "b", ...), in the order the rows show them."""
    keys: dict[str, str] = {}
    for g in board.groups:
        for r in g.rows:
            sp = board.speeds.get(r.record["run_id"])
            if sp is not None and sp.setting is not None and sp.setting.long() not in keys:
                keys[sp.setting.long()] = "abcdefghijklmnopqrstuvwxyz"[len(keys) % 26]
    return keys


def _speed_cell(board: Board, rec: dict, keys: dict[str, str]) -> str:
    """The speed-up, † when timed on the paper row's architecture, and the key of the footnote under the group
    that names its device, threads, weights and batch size."""
    sp = board.speeds.get(rec["run_id"])
    if sp is None:
        return '<td class="num speed" data-v=""></td>'
    mark = "" if sp.own else ARCH_MARK
    invalid = sp.flag
    ci = f" (95% CI {sp.ci[0]:.2f}–{sp.ci[1]:.2f})" if sp.ci else ""
    setting = f"; {sp.setting.long()}" if sp.setting is not None else ""
    judged = f"; {sp.verdict}" if sp.verdict else ""
    work = f"; {sp.work}" if sp.work else ""
    title = e(f"{sp.mean:.2f}×{ci}{judged}{work}{setting}; " + sp.source.replace("`", ""), quote=True)
    key = keys.get(sp.setting.long()) if sp.setting is not None else None
    sup = f'<sup class="key">{e(key)}</sup>' if key else ""
    return (f'<td class="num speed" data-v="{sp.mean:.4f}" title="{title}">'
            f"{fmt_num(sp.mean)}×{mark}{invalid}{sup}</td>")


def _speed_footnote(board: Board, g: RankedGroup, keys: dict[str, str]) -> str:
    """Under a group's table: what each speed-up in it was timed on, by its key (visible, not a hover)."""
    used: dict[str, str] = {}
    arch = False
    for r in g.rows:
        sp = board.speeds.get(r.record["run_id"])
        if sp is None:
            continue
        arch = arch or not sp.own
        if sp.setting is not None:
            used[keys[sp.setting.long()]] = sp.setting.long()
    if not used and not arch:
        return ""
    parts = [f"<sup>{e(k)}</sup>&#8201;{_code(text)}" for k, text in sorted(used.items())]
    if arch:
        parts.append(f"{ARCH_MARK} timed on the architecture of the paper row the run reproduces, not on its "
                     "trained checkpoint")
    return f'<p class="timing-key">Speed-ups timed on: {"; ".join(parts)}.</p>'


def _rank_cell(g: RankedGroup, r: Ranked) -> str:
    title = e(_rank_note(g, r), quote=True)
    return f'<td class="rank stick" data-v="{r.position or ""}" title="{title}">{e(r.rank)}</td>'


def _paper_cell(board: Board, rec: dict) -> str:
    rows = board.paper_rows.get(rec["run_id"]) or []
    if not rows:
        return '<td class="paper"></td>'
    first = rows[0]
    more = f' <span class="set">+{len(rows) - 1} more</span>' if len(rows) > 1 else ""
    return (f'<td class="paper"><a href="index.html#{e(first.anchor)}" title="{e(first.table)}: {e(first.label)}">'
            f"{e(first.short)}</a>{more}</td>")


def _quality_change(board: Board, rec: dict) -> str:
    """A run decoded at int8 (or another compute type): its headline change against its float32 twin run."""
    change = board.quality_changes.get(rec["run_id"])
    if change is None or board.head is None:
        return ""
    loss = " loss" if change.beyond_tolerance else ""
    title = e(f"the same trained model decoded at float32: {change.twin_run_id}" if change.twin_run_id else
              "no float32 run of this model with the same settings is recorded", quote=True)
    return (f'<div class="set{loss}" title="{title}">'
            f"{e(change_line(change, metric_label(board.head.metric)))}</div>")


def _rank_note(g: RankedGroup, r: Ranked) -> str:
    """Why the run has this rank: the boundary below it (Holm-corrected), or why it has none."""
    if r.unranked:
        return r.unranked
    b = g.boundary_below(r)
    if b is None:
        return "last ranked run" if g.tested else "plain order by score (not tested)"
    drawn = "a cluster boundary" if b.drawn else "no boundary"
    nxt = f"; vs the next ranked run alone p = {r.p_next:.3f}" if r.p_next is not None else ""
    return (f"{drawn} below: largest paired-bootstrap p over the pairs it separates = {b.p:.3f}, "
            f"Holm-adjusted {b.p_holm:.3f} (α = {ALPHA}){nxt}")


def _same_outputs_note(r: Ranked) -> str:
    """A twin row's note: the owner's run hash only (its row is right above; the full id is in the title), so the
    note stays one short line in a phone's 10em system column instead of a run id wrapped over four lines."""
    if not r.same_as:
        return ""
    title = e(f"the same outputs as {r.same_as}: ranked once, under the run that keeps the rank", quote=True)
    return f'<div class="set" title="{title}">= outputs of …{e(r.same_as.rsplit("--", 1)[-1])} (above)</div>'


def _row(board: Board, g: RankedGroup, r: Ranked, columns: Sequence[Column], keys: dict[str, str],
         results: str | None) -> str:
    rec, spec = r.record, r.record["spec"]
    head = board.head
    classes = ["run"] + (["degenerate"] if r.degenerate else []) + (["reference"] if r.reference else [])
    classes += ["same-outputs"] if r.same_as else []
    classes += ["external"] if rec.get("kind") == "external" else []
    ci = head.ci(rec) if head else None
    value = "" if r.value is None else fmt_num(r.value) + (
        f' <span class="ci">[{fmt_num(ci[0])}, {fmt_num(ci[1])}]</span>' if ci else "")
    sets = run_settings(rec)
    cells = {
        "rank": _rank_cell(g, r),
        "sys": f'<td class="sys stick" title="{e(rec["run_id"])}">'
        f"{record_link(rec['run_id'], results, html_escape.breakable(display_name(rec)))}"
        f"{_badges(rec, r)}" + (f'<div class="set">{e(sets)}</div>' if sets else "")
        + _quality_change(board, rec) + _same_outputs_note(r) + "</td>",
        "head": f'<td class="num head" data-v="{"" if r.value is None else f"{r.value:.4f}"}">{value}</td>',
        "budget": f"<td>{e(spec['budget'])}</td>",
        "speed": _speed_cell(board, rec, keys),
        "paper": _paper_cell(board, rec),
        "more": '<td><button class="more" type="button" aria-expanded="false">details</button></td>',
    }
    return (f'<tr class="{" ".join(classes)}" data-budget="{e(spec["budget"])}" data-run="{e(rec["run_id"])}">'
            + "".join(cells[c.cls] for c in columns) + "</tr>\n"
            + f'<tr class="details" hidden><td colspan="{len(columns)}">{_details(board, g, r)}</td></tr>')


def _details(board: Board, g: RankedGroup, r: Ranked) -> str:
    """Every recipe and metric of the run, and the facts behind its line."""
    rec, spec = r.record, r.record["spec"]
    scores = rec["scores"]
    have = {m for sc in scores.values() for m in sc["metrics"]}
    metrics = [m for m in DETAIL_METRICS if m in have] + sorted(have - set(DETAIL_METRICS))
    grid = ("<table><tr><th>recipe</th>" + "".join(f"<th>{e(metric_label(m))}</th>" for m in metrics) + "</tr>"
            + "".join(f"<tr><td>{e(name)}</td>" + "".join(
                f"<td>{fmt_num(sc['metrics'][m]) if m in sc['metrics'] else ''}</td>" for m in metrics) + "</tr>"
                for name, sc in sorted(scores.items())) + "</table>")
    info = rec.get("system") or {}
    family = f" ({lit(info['family'])}, backbone {lit(info.get('backbone', '?'))})" if info.get("family") else ""
    sets = f"; settings {code(run_settings(rec))}" if run_settings(rec) else ""
    facts = [  # every value escaped for the report grammar as it goes in (bench.report.spans)
        f"system {code(spec['system'])}{family}; task {code(spec['task'])}, split {code(spec['split'])}, budget "
        f"{code(spec['budget'])}, seed {lit(spec.get('seed', '?'))}{sets}",
    ]
    stats = rec.get("output_stats")
    if stats and stats.get("n"):
        lead = f"{DEGENERATE_MARK.upper()} ({lit('; '.join(r.flags))}). Outputs" if r.flags else "Outputs"
        facts.append(f"{lead}: {lit(output_summary(stats))}")
    if r.unranked:
        facts.append(f"not ranked: {r.unranked}")
    elif g.tested:
        facts.append(f"rank {r.rank}: {_rank_note(g, r)}")
    sp = board.speeds.get(rec["run_id"])
    if sp is not None:
        facts.append(f"speed-up {sp.mean:.2f}×" + (f" [{sp.ci[0]:.2f}–{sp.ci[1]:.2f}]" if sp.ci else "")
                     + f": {sp.source}")
    change = board.quality_changes.get(rec["run_id"])
    if change is not None and board.head is not None:
        twin = f" (run `{change.twin_run_id}`)" if change.twin_run_id else ""
        facts.append(f"decoded at {change.compute_type}: {change_line(change, metric_label(board.head.metric))}"
                     f"{twin}; tolerance {TOLERANCE} points")
    rows = board.paper_rows.get(rec["run_id"]) or []
    if rows:
        facts.append("reproduces: " + "; ".join(f"{p.table}: {p.label}" for p in rows))
    if board.head and board.head.recipe in scores:
        facts.append(f"headline signature {code(scores[board.head.recipe]['signature'])}")
    rid = rec["run_id"]
    facts.append(f"record {code(f'results/{rid}.json')} (run {code(rid)})")
    return grid + "<ul>" + "".join(f"<li>{_code(f)}</li>" for f in facts) + "</ul>"


def _group(board: Board, g: RankedGroup, results: str | None) -> str:
    label = board.head.label if board.head else "score"
    columns, keys = board_columns(board), speed_keys(board)
    held = {"rank": "rank stick", "sys": "sys stick"}  # the columns held at the left while a narrow screen scrolls
    head = "".join(
        "<th" + (f' class="{held.get(c.cls, c.cls)}"') + (f' data-sort="{c.sort}"' if c.sort else "")
        + ">" + e(label if c.title is None else c.title) + "</th>"
        for c in columns
    )
    # the widths, the same in every group so the groups line up; the paper row takes the rest (at least its own)
    least = f"--least:{sum(c.width_em for c in columns):g}em;--least-narrow:{sum(c.narrow_em for c in columns):g}em"
    cols = "<colgroup>" + "".join(f'<col class="{c.cls}">' for c in columns) + "</colgroup>"
    items = ""
    if board.head is not None:  # the scoring items (one per key) behind the headline, when all runs agree
        recipe = board.head.recipe
        n_items = {int(r.record["scores"][recipe].get("n_items") or 0) for r in g.rows if recipe in r.record["scores"]}
        items = f"; {n_items.pop():,} scored items under {recipe}" if len(n_items) == 1 else ""
    parts = [f'<section class="group" id="{e(g.examples.slug)}">',
             f"<h2>{e(g.name[0].upper() + g.name[1:])} <small>({g.examples.n:,} examples{e(items)}; "
             f"{len(g.rows)} run{'s' if len(g.rows) != 1 else ''})</small></h2>"]
    if not g.tested and g.untested_reason:
        parts.append(f'<p class="untested">Ranks are a plain order by score: significance not tested here '
                     f"({_code(g.untested_reason)}).</p>")
    rows = "\n".join(_row(board, g, r, columns, keys, results) for r in g.rows)
    parts.append(scroll(f'<table class="board" data-group="{e(g.examples.slug)}" style="{least}">'
                        f"{cols}<thead><tr>{head}</tr></thead><tbody>\n{rows}\n</tbody></table>", g.name))
    parts.append(_speed_footnote(board, g, keys))
    parts.append("</section>")
    return "\n".join(p for p in parts if p)


def first_lines(board: Board) -> list[str]:
    """What a reader must see before the tables (HTML, escaped): one line per reference baseline (no training)
    that scores above every ranked run of a group, with its number and the best ranked run's in each such group,
    CIs included, and whether the CIs are apart."""
    head = board.head
    if head is None:
        return []

    def num(r: Ranked) -> str:
        ci = head.ci(r.record)
        ci_text = f' <span class="ci">[{fmt_num(ci[0])}, {fmt_num(ci[1])}]</span>' if ci else ""
        return fmt_num(r.value or 0.0) + ci_text

    by_ref: dict[str, list[tuple[RankedGroup, ReferenceLead]]] = {}
    for g in board.groups:
        for lead in reference_above_all(g, head):
            by_ref.setdefault(display_name(lead.reference.record), []).append((g, lead))
    out = []
    for name, leads in by_ref.items():
        where = " ".join(
            f"{e(g.name[0].upper() + g.name[1:])}: {num(lead.reference)} against the best ranked run, "
            f"<code>{e(display_name(lead.best.record))}</code>, {num(lead.best)}." for g, lead in leads)
        apart = {lead.cis_apart for _, lead in leads}
        cis = (" The 95 % CIs do not overlap." if apart == {True} else
               " Where the 95 % CIs overlap, <code>bench compare</code> tests the pair." if False in apart else "")
        out.append(f"<b>No ranked run beats the reference <code>{e(name)}</code> (no training).</b> {e(head.label)} "
                   f"— {where}{cis}")
    return out


def _plots(board: Board) -> str:
    if board.head is None:
        return ""
    svgs = []
    for g in board.groups:
        pts: list[Point] = []
        seen: dict[str, int] = {}
        for r in g.rows:
            sp = board.speeds.get(r.record["run_id"])
            if sp is None or r.value is None:
                continue
            label = " ".join(x for x in (display_name(r.record), run_settings(r.record)) if x)
            seen[label] = seen.get(label, 0) + 1
            label += f" #{seen[label]}" if seen[label] > 1 else ""
            pts.append(Point(label, sp.mean, r.value, r.degenerate, sp.own))
        if pts:
            svgs.append('<div class="plotbox">' + quality_speed_svg(g.name[0].upper() + g.name[1:], pts,
                                                                       board.head.label) + "</div>")
    if not svgs:
        body = (f"<p>No run of <code>{e(board.task)}</code> has a measured speed-up yet: neither its own timing "
                "nor one of the architecture of a paper row it reproduces (<code>bench latency --record</code>, "
                "docs/speed.md).</p>")
    else:
        body = (f'<div class="plots">{"".join(svgs)}</div><p class="set">Filled: speed-up measured on the run; '
                f"hollow blue ({ARCH_MARK}): measured on the architecture of the paper row it reproduces; hollow "
                "orange: degenerate (not on the front). Dashed: the Pareto front (no other point is both faster "
                "and better). What each speed-up was timed on: the footnote under its group's table.</p>")
    return f'<section id="quality-vs-speed"><h2>Quality vs speed</h2>{body}</section>'


def _how(board: Board, records: Sequence[dict]) -> str:
    """The notes a reader opens when needed: signatures, tests and definitions."""
    head = board.head
    notes: list[str] = []
    if head:
        sigs = sorted({r["scores"][head.recipe]["signature"] for r in records if head.recipe in r["scores"]})
        notes.append(f"Headline: {head.label}, ×100, from each run's record; the CI is the record's 95 % bootstrap "
                     f"interval. Signature(s): " + "; ".join(f"`{s}`" for s in sigs) + ".")
        notes.append(f"Rank clusters (WMT's all-pairs rule): runs sorted by the headline; every pair of ranked runs "
                     f"in a group is tested with `bench compare`'s paired bootstrap ({SAMPLES:,} resamples, seed "
                     f"{SEED}; two-sided) on the examples both scored, re-scored from the stored outputs at `bench "
                     "table` time. A boundary between two adjacent positions is drawn only when every run above it "
                     "differs from every run below it; its p is the largest p of the pairs it separates. The p-values "
                     "are corrected for the number of comparisons: Holm–Bonferroni over the group's n − 1 "
                     f"boundaries, a boundary drawn when its adjusted p < {ALPHA} (so the chance of any false boundary "
                     f"in a group is at most {ALPHA:.0%}). A cluster is the span of positions between drawn boundaries "
                     "(“1–3”); hover a rank for its boundary's p. `bench compare RUN_A RUN_B` prints any pair "
                     "(uncorrected).")
        notes.append("Ranked once: a run whose outputs are byte-identical (same sha256) to a ranked run's is that "
                     "run again (one model under two names); it is listed right under it, rank “=”, and left out of "
                     "the tests.")
    notes.append("Groups: runs over different examples (the whole split, or its first N with `bench run --limit N`) "
                 "are ranked separately; their numbers are not comparable. A group's title gives its examples; a "
                 "column no run of the page fills is left out.")
    notes.append(f"{DEGENERATE_MARK}: the run's most frequent output is more than 2 % of its outputs, or its outputs "
                 "are less than half as distinct as the references on the same examples; its number is shown but is "
                 "not evidence that the system learned, so it is never ranked above a healthy run (it is listed "
                 "unranked after them).")
    notes.append("Marked rows: “reference” is a harness baseline with no training (copy the source, lead-1, "
                 "lead-3), drawn as a marked line (rank “ref”) at its score's place among the ranked runs and never "
                 "ranked, in every group alike (its degeneracy is not flagged: it is not a learned model); when it "
                 "scores above every ranked run, the page's first lines say so; "
                 "“submitted” is outputs made elsewhere (`bench submit`), scored by the harness, never a "
                 "reproduction.")
    notes.append(f"Speed-up: mean latency of the AR baseline ÷ the run's, measured in one process (never "
                 f"copied); the letter beside it keys the footnote under its group that names the device, torch "
                 f"threads, weights and batch size it was timed with. {ARCH_MARK}: measured by `bench latency "
                 "--record` on the architecture of the paper row the run reproduces (the number that table's speed "
                 "column shows), not on this checkpoint; hover a cell for its record.")
    for lid in board.latency_ids:
        notes.append(f"Speed record: `results/latency/{lid}.json`.")
    if board.quality_changes:
        notes.append(f"Compute type: a run decoded at int8 (or another compute type than float32) shows its headline "
                     "change against its float32 twin, the run that decoded the same trained model with every other "
                     f"setting equal; a loss beyond {TOLERANCE} points is marked. docs/systems.md, “Optimized "
                     "decoding”.")
    notes.append("Paper row: the paper table row whose spec the run matches (system — the cpu substitute at the "
                 "cpu budget —, task, split, budget, settings and recipe); “details” lists every one.")
    return ('<details class="how"><summary>How this was measured</summary><ul>'
            + "".join(f"<li>{_code(n)}</li>" for n in notes) + "</ul></details>")


def _recipe_statement(board: Board) -> str:
    """The board's ranking recipe, and the paper tables that score this task with another one."""
    head = board.head
    assert head is not None
    text = (f"Ranking recipe: <code>{e(head.recipe)}</code> (the task's first default recipe), for every group on "
            "this page.")
    if board.other_recipes:
        tables = "; ".join(
            f'<a href="index.html#{e(o.anchor)}">{e(o.table)}</a> ('
            + ", ".join(f"<code>{e(r)}</code>" for r in o.recipes) + ")"
            for o in board.other_recipes)
        text += (f" Paper tables that score <code>{e(board.task)}</code> with another recipe (the paper's own "
                 f"protocol): {tables}. There a run shows another number than here, and two runs' p-value "
                 "can fall on the other side of α, so a paper table's order may differ from this board's.")
    return text


def task_page(task: str, records: Sequence[dict], latency_records: Sequence[dict] = (),
              data_dir: Path | None = None, test: PairedBootstrap | None = None,
              pvalues: PValues | None = None, stamp: BuildStamp | None = None, results: str | None = None,
              speed: str | None = None) -> str:
    """The leaderboard page of one task (``test``: the pair test, default ``bench compare``'s on stored outputs,
    with the p-values kept in ``pvalues``; ``stamp``: the build line; ``results``: the relative URL of the
    records, :func:`bench.report.html_page.results_href`, ``None`` for no record links; ``speed``: the task's speed
    page (:mod:`bench.report.speed_page`), linked when given)."""
    board = build_board(task, records, latency_records, data_dir, test, pvalues)
    mine = [r for r in records if r["spec"]["task"] == task]
    budgets = sorted({r["spec"]["budget"] for r in mine})
    options = '<option value="">all budgets</option>' + "".join(
        f'<option value="{e(b)}">{e(b)}</option>' for b in budgets)
    head = board.head
    lede = (
        f"Ranked by <b>{e(head.label)}</b> (×100, 95 % CI in brackets), best first. A rank such as “1–3” is a "
        "cluster: every run in a higher cluster beats every run in a lower one under <code>bench compare</code>'s "
        f"paired bootstrap, Holm-corrected (the notes at the foot of the page say how). Each group holds runs over "
        "the same examples; do not compare numbers across groups. Reference baselines (no training) are marked "
        f"lines at their score's place, never ranked; <b>{DEGENERATE_MARK}</b> runs are listed unranked after the "
        "ranked ones; a run with another's exact outputs is ranked once (“=”)."
        if head else "No scored run yet."
    )
    first = "".join(f'<p class="first">{line}</p>\n' for line in first_lines(board))
    recipe_note = f'<p class="lede">{_recipe_statement(board)}</p>\n' if head else ""
    return (
        page_head(f"bench leaderboard: {task}", _CSS)
        + f"<h1>Leaderboard: <code>{e(task)}</code></h1>\n" + first
        + f'<p class="lede">{lede}</p>\n' + recipe_note +
        f'<div class="controls"><label>Budget <select id="budget">{options}</select></label>'
        '<button id="expand-all" type="button" aria-expanded="false">show all details</button>'
        '<a href="index.html">Paper tables</a>'
        + (f' <a href="{e(speed)}">Speed (batch sizes)</a>' if speed else "") + "</div>\n"
        + "\n".join(_group(board, g, results) for g in board.groups) + "\n"
        + _plots(board) + "\n" + _how(board, mine) + "\n"
        + (stamp.html() if stamp is not None else "")
        + f"<script>{_JS}</script>\n</body></html>\n"
    )


def leaderboard_tasks(records: Sequence[dict]) -> list[str]:
    return sorted({r["spec"]["task"] for r in records})
