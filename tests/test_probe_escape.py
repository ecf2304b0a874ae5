"""#46 §3 and §5: user text is data. Hostile strings (``<script>``, ``<img onerror>``, ``[x](javascript:…)``, a
newline forging a table row, ``|``, ``[red]x``, ``[/bold]``, bidi overrides, escape sequences) in ``--meta``,
system names, run ids, ``--set`` keys, paths and stored outputs, through ``bench table`` (markdown and HTML),
``show``, ``compare``, ``export`` and ``submit``, on copies of committed records in the case's own folder.

Each probe checks the exit code, that there is no traceback, that the message names the field where the
command refuses, that the output shows the text as text, and that nothing under the checkout's results/,
reports/ and caches changed (byte-identical) and nothing in the case's folder but what the command writes.
Run as ``bench`` processes, like tests/test_bad_input_probe.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bench.api.text import BIDI_CONTROLS
from bench.data.cache import cache_root
from bench.store.ids import run_id_of
from bench.store.integrity import sealed

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
SPLITS = cache_root()

pytestmark = pytest.mark.slow  # about 15 `bench` processes

RUN = "copy_source--quora--test--cpu--s42--af654a53"  # a run record whose outputs are committed (2,000 lines)
TWIN = "copy_source--quora--test--cpu--s42--bc548792"  # another copy_source quora record (compare)
SUB = "convs2s_xsum--xsum--test-refs--external--d7438ac2"  # a submission record (meta)
HOSTILE = ("<script>alert(1)</script><img src=x onerror=alert(2)>[x](javascript:alert(3)) | `tick` [red]red "
           "[/bold] \u202eevil\u2066 \x1b[2J x \\`<img src=x onerror=alert(9)>` ``<b>``")  # #57: \ before a backtick
FORGED = "a\n| forged | row |"
INVISIBLE = set(BIDI_CONTROLS + "\u2028\u2029\x1b")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _edit(work: Path, run_id: str, change: Callable[[dict], None]) -> None:
    path = work / "results" / f"{run_id}.json"
    rec = json.loads(path.read_text(encoding="utf-8"))
    change(rec)
    rec = sealed(rec)  # a contributor's edit with a fresh digest (#57): what reaches the renderers past the seal
    if rec["run_id"] != run_id:  # renamed to the id its edited spec gives it (an id is its content's, #57)
        path.unlink()
        path = path.with_name(f"{rec['run_id']}.json")
    path.write_text(json.dumps(rec, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _hostile_spec() -> dict:
    spec = json.loads((REPO / "results" / f"{RUN}.json").read_text(encoding="utf-8"))["spec"]
    return {**spec, "overrides": {"k" + HOSTILE: FORGED}}


#: the run record with hostile overrides, under the id they give it (a forger who edits a spec renames the record)
HOSTILE_RUN = run_id_of(_hostile_spec())


def _hostile_outputs(work: Path, run_id: str, source: str | None = None) -> None:
    """Its outputs with hostile first lines (one per line: the harness refuses \\n and \\r inside), kept where its
    run id puts them and named by an absolute path, with the sha256 re-sealed: a contributor's hand edit."""
    src = REPO / "results" / "outputs" / f"{source or run_id}.txt"
    lines = src.read_text(encoding="utf-8").split("\n")
    lines[0], lines[1] = HOSTILE, "[/bold] closes nothing \u2028 [red]x"
    dest = work / "results" / "outputs" / f"{run_id}.txt"
    dest.write_text("\n".join(lines), encoding="utf-8")

    def seal(rec: dict) -> None:
        rec["outputs"]["path"] = str(dest)
        rec["outputs"]["sha256"] = _sha(dest)

    _edit(work, run_id, seal)


def _hostile_names(work: Path) -> None:
    """System, family and overrides of the run record, and every meta of the submission, hostile."""
    def run(rec: dict) -> None:
        # (spec.system is a name a file name is built from: an identifier, checked at load, #57; probed below)
        rec["system"]["family"] = FORGED + HOSTILE
        rec["spec"] = _hostile_spec()
        rec["run_id"] = HOSTILE_RUN
        if rec["outputs"].get("path"):
            rec["outputs"]["path"] = f"results/outputs/{HOSTILE_RUN}.txt"

    def sub(rec: dict) -> None:
        # (submission.name is part of its id, and a name: refused at load since #57, like spec.system below)
        rec["submission"]["meta"] = {"what": FORGED + HOSTILE, "k" + HOSTILE: "[x](javascript:alert(1))"}

    _edit(work, RUN, run)
    _edit(work, SUB, sub)


@dataclass(frozen=True)
class Probe:
    name: str
    args: tuple[str, ...]
    codes: tuple[int, ...] = (0,)
    names: str = ""  # what the message must name
    shows: tuple[str, ...] = ()  # text the output must show literally
    writes: tuple[str, ...] = ()  # paths under the case's folder the command may write (prefixes)
    setup: Callable[[Path], None] | None = field(default=None, compare=False)


def _both(work: Path) -> None:
    _hostile_names(work)
    _hostile_outputs(work, HOSTILE_RUN, RUN)


RES = ("--results-dir", "{work}/results")
PROBES = [
    Probe("table writes inert markdown and HTML", ("table", *RES, "--reports-dir", "{work}/reports", "--prune"),
          writes=("reports/",), setup=_hostile_names),
    Probe("show prints outputs and names as text", ("show", HOSTILE_RUN, *RES, "-n", "3"),
          shows=("[red]red [/bold]", "[/bold] closes nothing", "<script>alert(1)</script>", "\\u202eevil"),
          setup=_both),
    Probe("compare of hostile runs", ("compare", HOSTILE_RUN, TWIN, *RES), codes=(0, 2), setup=_both),
    Probe("export of hostile records", ("export", *RES, "--out", "{work}/out.csv"), writes=("out.csv",),
          setup=_hostile_names),
    Probe("show of a run id with markup", ("show", "[/bold][red]x", *RES), codes=(2,), names="[/bold][red]x"),
    Probe("show of a record whose system name holds markup", ("show", RUN, *RES), codes=(2,), names="'spec.system'",
          setup=lambda work: _edit(work, RUN, lambda rec: rec["spec"].update(system="copy_source" + HOSTILE))),
    Probe("show of a record path with markup", ("show", "{work}/[/x]no.json", *RES), codes=(2,), names="[/x]no.json"),
    Probe("refile with a --set key holding markup", ("refile", RUN, "--set", "[/bold]=1", *RES), codes=(2,),
          names="[/bold]"),
    Probe("run with a --set key holding markup", ("run", "--system", "unilm", "--task", "quora", "--budget",
                                                  "smoke", "--limit", "5", "--set", "[/x]=1", *RES),
          codes=(2,), names="[/x]"),
    Probe("run of a system name holding markup", ("run", "--system", "[red]x[/bold]", "--task", "quora", *RES),
          codes=(2,), names="[red]x[/bold]"),
    Probe("score of a missing path holding markup", ("score", "--task", "quora", "--hyp", "{work}/[/red]h.txt"),
          codes=(1, 2), names="[/red]h.txt"),
    Probe("submit --meta with a newline", ("submit", "--name", "mine", "--task", "quora", "--hyp", "{work}/hyp.txt",
                                           "--meta", "note=a\n| forged | row |", *RES),
          codes=(2,), names="--meta note"),
    Probe("submit --meta with a bidi override", ("submit", "--name", "mine", "--task", "quora", "--hyp",
                                                 "{work}/hyp.txt", "--meta", "who=\u202eevil", *RES),
          codes=(2,), names="--meta who"),
    Probe("submit --meta with a markup key", ("submit", "--name", "mine", "--task", "quora", "--hyp",
                                              "{work}/hyp.txt", "--meta", "<script>=1", *RES),
          codes=(2,), names="--meta key '<script>'"),
    Probe("submit --meta too long", ("submit", "--name", "mine", "--task", "quora", "--hyp", "{work}/hyp.txt",
                                     "--meta", "src=" + "x" * 501, *RES), codes=(2,), names="--meta src"),
    Probe("submit --name with markup", ("submit", "--name", "[red]x", "--task", "quora", "--hyp", "{work}/hyp.txt",
                                        *RES), codes=(2,), names="--name '[red]x'"),
]


def _work(tmp_path: Path) -> Path:
    """The case's folder: copies of the three records (and their committed outputs), a copy of reports/, a
    3-line hypothesis file and the cache (links to the built splits)."""
    work = tmp_path / "work"
    (work / "results" / "outputs").mkdir(parents=True)
    for rid in (RUN, TWIN, SUB):
        shutil.copy(REPO / "results" / f"{rid}.json", work / "results" / f"{rid}.json")
    shutil.copytree(REPO / "reports", work / "reports")
    (work / "hyp.txt").write_text("a question ?\nanother one ?\na third ?\n")
    (work / "cache").mkdir()
    if SPLITS.is_dir():
        shutil.copytree(SPLITS, work / "cache" / "splits", copy_function=os.link)
    return work


def _tree(root: Path, skip: Path | None = None) -> dict[str, object]:
    out: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        if skip is not None and (base == skip or skip in base.parents):
            continue
        for name in sorted(dirnames + filenames):
            path = base / name
            rel = str(path.relative_to(root))
            out[rel] = ("link", os.readlink(path)) if path.is_symlink() else (
                "dir" if path.is_dir() else _sha(path))
    return out


def _state(work: Path) -> dict[str, dict[str, object]]:
    return {"results/": _tree(REPO / "results"), "reports/": _tree(REPO / "reports"),
            ".cache/launch": _tree(REPO / ".cache" / "launch"), "work": _tree(work, skip=work / "cache")}


def _check_reports(reports: Path) -> None:
    """Every markdown report renders (markdown-it, GFM tables) to no tag from the data, the hostile text shown as
    text; every HTML page holds no tag from it either."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table").enable("strikethrough")
    seen = 0
    for path in sorted(reports.glob("*.md")):
        html = md.render(path.read_text(encoding="utf-8"))
        assert not re.search(r"<(script|img|iframe)\b|<[a-z][^>]*\son\w+\s*=|href=\"javascript", html, re.I), path
        assert not INVISIBLE & set(html), path
        assert "<td>| forged" not in html and "<td>forged</td>" not in html, path
        seen += html.count("&lt;script&gt;alert(1)&lt;/script&gt;")
    # the hostile names reached the reports, as text (a family, an override, a submission's name and meta: the
    # names file names are built from are identifiers since #57, refused at load, probed above)
    assert seen >= 1
    for path in sorted(reports.glob("*.html")):
        text = path.read_text(encoding="utf-8")
        assert len(re.findall(r"<script\b", text)) <= 1, path  # a leaderboard's own script, nothing more
        assert not re.search(r"<[a-z][^>]*\son\w+\s*=|href=\"javascript", text, re.I), path
        assert not INVISIBLE & set(text), path


@pytest.mark.parametrize("probe", PROBES, ids=[p.name for p in PROBES])
def test_user_text_is_data(probe: Probe, tmp_path: Path) -> None:
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    work = _work(tmp_path)
    if probe.setup is not None:
        probe.setup(work)
    args = [a.replace("{work}", str(work)) for a in probe.args]
    env = {**os.environ, "BENCH_CACHE": str(work / "cache"), "COLUMNS": "400", "HOME": str(tmp_path / "home")}
    env.pop("BENCH_INCLUDE", None)
    before = _state(work)
    proc = subprocess.run([sys.executable, "-m", "bench", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out[-3000:]
    assert proc.returncode in probe.codes, f"exit {proc.returncode}, expected {probe.codes}:\n{out[-3000:]}"
    assert probe.names in " ".join(out.split()), f"the message does not name {probe.names!r}:\n{out[-3000:]}"
    for text in probe.shows:
        assert text in out, f"{text!r} is not shown as text:\n{out[-3000:]}"
    assert not INVISIBLE & set(out), "an invisible character reached the terminal"
    after = _state(work)
    for where in before:
        allowed = probe.writes if where == "work" else ()
        changed = sorted(k for k in set(before[where]) | set(after[where])
                         if before[where].get(k) != after[where].get(k) and not k.startswith(allowed))
        assert not changed, f"{where} written: {changed[:5]}"
    if "table" in probe.args:
        _check_reports(work / "reports")
