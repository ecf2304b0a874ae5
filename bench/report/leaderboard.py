"""One HTML leaderboard page per task (reports/leaderboard-<task>.html): every record of the task.

The paper tables answer "does the reproduction match the paper"; a leaderboard answers "what is
best on this task", so it lists every record (runs at every budget and submitted outputs) with
every metric of the task's default recipes, the degeneracy flag, and the speed where measured.

Sorting and the budget filter are a few lines of inline JavaScript (no external assets: the page
works offline). Their state lives in the URL fragment (``#sort=unilm:bleu4&dir=desc&budget=cpu``),
so a sorted, filtered view is a link, and headless Chromium (``--dump-dom page.html#...``) shows
exactly what a reader would: the tests check the order and the filter that way.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from bench.output_stats import degeneracy
from bench.report.cells import fmt_num

#: metrics shown per recipe (BLEU-1..3 stay in the records and the protocol-sensitivity table)
SHOWN_METRICS = ("bleu4", "meteor", "rougeL", "rouge1", "rouge2", "exact_match")

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:120em}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3;cursor:pointer;white-space:nowrap}
th.sorted{background:#dde8f5}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.degenerate td{color:#8a5a00}
tr.external td:first-child::after{content:" (submitted)";color:#555}
code{background:#f3f3f3;padding:0 2px}
""".strip()

# Sort rows by the column named in the fragment, filter by budget; clicking a header toggles its order.
_JS = """
(function(){
  var table=document.getElementById('leaderboard'), body=table.tBodies[0];
  var rows=Array.prototype.slice.call(body.rows);
  function state(){var s={};location.hash.replace(/^#/,'').split('&').forEach(function(kv){
    var i=kv.indexOf('='); if(i>0){s[decodeURIComponent(kv.slice(0,i))]=decodeURIComponent(kv.slice(i+1));}});return s;}
  function apply(){
    var s=state(), col=s.sort, dir=s.dir==='asc'?1:-1, budget=s.budget||'';
    var heads=table.tHead.rows[0].cells, idx=-1;
    for(var i=0;i<heads.length;i++){heads[i].className=heads[i].getAttribute('data-col')===col?'sorted':'';
      if(heads[i].getAttribute('data-col')===col){idx=i;}}
    var shown=rows.filter(function(r){return !budget||r.getAttribute('data-budget')===budget;});
    if(idx>=0){shown.sort(function(a,b){
      var x=a.cells[idx].getAttribute('data-v'), y=b.cells[idx].getAttribute('data-v');
      if(x===null||x===''){return 1;} if(y===null||y===''){return -1;}
      var nx=parseFloat(x), ny=parseFloat(y);
      if(!isNaN(nx)&&!isNaN(ny)){return (nx-ny)*dir;} return x<y?-dir:(x>y?dir:0);});}
    while(body.firstChild){body.removeChild(body.firstChild);}
    shown.forEach(function(r){body.appendChild(r);});
    var sel=document.getElementById('budget'); if(sel){sel.value=budget;}
  }
  function set(k,v){var s=state(); if(v){s[k]=v;}else{delete s[k];}
    location.hash=Object.keys(s).map(function(k){return k+'='+encodeURIComponent(s[k]);}).join('&');}
  Array.prototype.forEach.call(table.tHead.rows[0].cells,function(th){th.addEventListener('click',function(){
    var s=state(), c=th.getAttribute('data-col');
    set('dir', s.sort===c&&s.dir!=='asc'?'asc':'desc'); set('sort',c);});});
  var sel=document.getElementById('budget');
  if(sel){sel.addEventListener('change',function(){set('budget',sel.value);});}
  window.addEventListener('hashchange',apply); apply();
})();
""".strip()


def leaderboard_tasks(records: Sequence[dict]) -> list[str]:
    return sorted({r["spec"]["task"] for r in records})


def _columns(records: Sequence[dict], task: str) -> list[tuple[str, str]]:
    """(recipe, metric) columns: the task's default recipes in order, the metrics any record has."""
    from bench.data import TASKS

    recipes = list(TASKS.get(task).default_recipes) if task in TASKS else []
    recipes += sorted({name for r in records for name in r["scores"]} - set(recipes))
    have = {(name, m) for r in records for name, sc in r["scores"].items() for m in sc["metrics"]}
    return [(rc, m) for rc in recipes for m in SHOWN_METRICS if (rc, m) in have]


def _cell(text: str, value: Any = None, numeric: bool = False) -> str:
    v = "" if value is None else html.escape(str(value), quote=True)
    cls = ' class="num"' if numeric else ""
    return f'<td{cls} data-v="{v}">{html.escape(text)}</td>'


def _settings(spec: dict) -> str:
    """What tells two records of one system apart: its overrides (``--set``)."""
    return " ".join(f"{k}={v}" for k, v in sorted((spec.get("overrides") or {}).items()))


def _row(rec: dict, columns: Sequence[tuple[str, str]]) -> str:
    spec, data = rec["spec"], rec.get("data") or {}
    external = rec.get("kind") == "external"
    stats = rec.get("output_stats") or {}
    flagged = bool(degeneracy(stats))
    name = (rec.get("submission") or {}).get("name", spec["system"]) if external else spec["system"]
    n = data.get("n_examples")
    examples = ("" if n is None else f"{n:,}") + (" (partial)" if data.get("partial") else "")
    cells = [
        _cell(name, name),
        _cell("submitted" if external else "run", "submitted" if external else "run"),
        _cell(spec["budget"], spec["budget"]),
        _cell(spec["split"], spec["split"]),
        _cell(_settings(spec), _settings(spec)),
        _cell(str((rec.get("system") or {}).get("family", "")), (rec.get("system") or {}).get("family", "")),
        _cell(examples, n, numeric=True),
    ]
    for recipe, metric in columns:
        value = ((rec["scores"].get(recipe) or {}).get("metrics") or {}).get(metric)
        cells.append(_cell("" if value is None else fmt_num(value), value, numeric=True))
    distinct = stats.get("distinct_ratio")
    cells.append(_cell("" if distinct is None else f"{distinct:.1%}" + (" ⚠ degenerate" if flagged else ""),
                       distinct, numeric=True))
    speed = (rec.get("latency") or {}).get("speedup_mean")
    cells.append(_cell("" if speed is None else f"{fmt_num(speed)}×", speed, numeric=True))
    cells.append(_cell(rec["run_id"], rec["run_id"]))
    classes = " ".join(c for c in ("external" if external else "", "degenerate" if flagged else "") if c)
    return (f'<tr data-budget="{html.escape(spec["budget"])}"' + (f' class="{classes}"' if classes else "")
            + ">" + "".join(cells) + "</tr>")


def task_page(task: str, records: Sequence[dict]) -> str:
    """The leaderboard page of one task."""
    e = html.escape
    mine = sorted((r for r in records if r["spec"]["task"] == task), key=lambda r: r["run_id"])
    columns = _columns(mine, task)
    head = [("name", "System / submission"), ("kind", "Kind"), ("budget", "Budget"), ("split", "Split"),
            ("settings", "Settings"), ("family", "Family"), ("examples", "Examples")]
    head += [(f"{rc}:{m}", f"{m} ({rc})") for rc, m in columns]
    head += [("distinct", "Distinct outputs"), ("speedup", "Speedup"), ("run", "Record")]
    budgets = sorted({r["spec"]["budget"] for r in mine})
    options = '<option value="">all budgets</option>' + "".join(
        f'<option value="{e(b)}">{e(b)}</option>' for b in budgets)
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>bench leaderboard: {e(task)}</title>'
        f"<style>{_CSS}</style></head><body>\n"
        f"<h1>Leaderboard: <code>{e(task)}</code></h1>\n"
        "<p>Every record of this task under <code>results/</code>: runs at every budget and submitted outputs "
        "(<code>bench submit</code>; scored by the harness, never a reproduction). Metrics ×100 under each "
        "recipe's signature (see the record). ⚠ degenerate: most frequent output &gt; 2 % of outputs or "
        "fewer than half the references' distinct outputs: not evidence of learning. Click a header to sort; "
        "the view is in the address (e.g. <code>#sort=...&amp;dir=desc&amp;budget=cpu</code>). "
        '<a href="index.html">Paper tables</a>.</p>\n'
        f'<p><label>Budget <select id="budget">{options}</select></label></p>\n'
        '<table id="leaderboard"><thead><tr>'
        + "".join(f'<th data-col="{e(k)}">{e(label)}</th>' for k, label in head)
        + "</tr></thead><tbody>\n" + "\n".join(_row(r, columns) for r in mine) + "\n</tbody></table>\n"
        f"<script>{_JS}</script>\n</body></html>\n"
    )
