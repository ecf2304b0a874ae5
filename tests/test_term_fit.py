"""#47 "fits a terminal": the everyday commands at 80 columns (and a wide terminal) never print a line wider than
the terminal, nor break a number, a CI, a run id or a path; the terminal leaderboard and `bench ls runs`; `bench
status` knows `--limit` runs; compare's cache never shows an edited entry or one that contradicts a record."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bench.api.paths import RESULTS_DIR
from bench.cli import app
from bench.cli import common as ui
from bench.env.term_layout import Rows, folded, stacked

SHOW = "copybert_selfcopy--squad_qg--test--cpu--s42--9b7c5e3b"
OTHER = "copybert_twohop--squad_qg--test--cpu--s42--b908abb6"
RUN_ID = re.compile(r"[a-z0-9_]+--[a-z0-9_]+--[a-z0-9-]+--[a-z]+(?:--s\d+)?--[0-9a-f]{8}")


def _run(monkeypatch: pytest.MonkeyPatch, width: int, *args: str) -> str:
    """The command's output at ``width`` columns: no line wider, except a value longer than the width (a path, a
    run id) printed whole on a line of its own."""
    monkeypatch.setattr(ui.console, "_width", width)
    monkeypatch.setattr(ui.err_console, "_width", width)
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    too_wide = [line for line in result.output.splitlines() if len(line) > width and len(line.split()) != 1]
    assert too_wide == [], f"lines wider than {width}: {too_wide[:3]}"
    return result.output


def _whole(value: str, out: str) -> bool:
    """``value`` appears in ``out`` as one unbroken token (not cut with "…", not wrapped inside)."""
    return value in out.split() or any(value == tok.strip("`.,;:()") for tok in out.split())


def _record(run_id: str) -> dict[str, Any]:
    return json.loads((RESULTS_DIR / f"{run_id}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("width", [80, 200])
def test_show_keeps_cis_run_id_and_paths_whole(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    out = _run(monkeypatch, width, "show", SHOW, "-n", "0")
    rec = _record(SHOW)
    assert SHOW in out and rec["outputs"]["path"] in out
    for recipe, sc in rec["scores"].items():
        assert recipe in out
        for lo, hi in sc["ci"].values():
            assert f"[{lo:.2f}, {hi:.2f}]" in out  # one unit, on one line
    assert "items: the units a recipe scores" in " ".join(out.split())


def test_items_note_only_where_a_recipe_groups_examples(monkeypatch: pytest.MonkeyPatch) -> None:
    """#58: the grouping note printed under XSum scores too, where one item is one example."""
    out = _run(monkeypatch, 120, "show", "lead1--xsum--test-available--cpu--s42--8b590636", "-n", "0")
    assert "rouge155" in out and "items:" not in out
    out = _run(monkeypatch, 120, "show", "copy_source--quora--test--cpu--s42--af654a53", "-n", "0")
    assert "one per distinct key" in " ".join(out.split())


def test_ls_tasks_one_line_per_split_and_whole_names(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _run(monkeypatch, 80, "ls", "tasks")
    for name in ("quora", "squad_qg", "squad_qg_reversed", "xsum", "validation-available", "test-available"):
        assert re.search(rf"(^|\s){re.escape(name)}(\s|$)", out, re.M), name
    xsum = [ln for ln in out.splitlines() if re.match(r"^(xsum)?\s+(train|validation|test)", ln)]
    assert 6 <= len(xsum) <= 12  # not 27
    _run(monkeypatch, 80, "ls", "recipes")
    _run(monkeypatch, 80, "ls", "systems")


@pytest.mark.parametrize("width", [80, 200])
def test_ls_runs_lists_every_record_with_its_headline(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    out = _run(monkeypatch, width, "ls", "runs")
    ids = {p.stem for p in RESULTS_DIR.glob("*.json")}
    assert ids and ids <= set(RUN_ID.findall(out))
    assert "BLEU-4" in out and "ROUGE-2" in out
    only = _run(monkeypatch, width, "ls", "runs", "--task", "xsum", "--budget", "cpu")
    assert set(RUN_ID.findall(only)) == {i for i in ids if "--xsum--" in i and "--cpu--" in i}
    assert CliRunner().invoke(app, ["ls", "runs", "--system", "nope"]).exit_code == 2
    assert CliRunner().invoke(app, ["ls", "tasks", "--task", "xsum"]).exit_code == 2


@pytest.mark.parametrize("width", [80, 200])
def test_leaderboard_names_its_recipe_and_ranks_as_the_page(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    from bench.report.term_views import terminal_board

    out = _run(monkeypatch, width, "leaderboard", "squad_qg")
    assert "under the scoring recipe nqg" in " ".join(out.split())
    board, groups = terminal_board("squad_qg", RESULTS_DIR)
    for g, group in zip(board.groups, groups, strict=True):
        assert [row[0] for row in group.rows] == [r.rank for r in g.rows]  # the HTML board's ranks
        for row in group.rows:
            assert row[3] in out  # the CI, whole
            if width > 150:
                assert row[-1] in out  # the run id, whole
    assert "board" in {c.name for c in app.registered_commands}
    assert CliRunner().invoke(app, ["leaderboard", "no_such_task"]).exit_code == 2


def test_leaderboard_takes_its_task_as_other_commands_do(monkeypatch: pytest.MonkeyPatch) -> None:
    """`bench leaderboard --task quora` (as `ls runs`, `export`, `latency` take it) is `bench leaderboard quora`."""
    by_option = _run(monkeypatch, 80, "leaderboard", "--task", "squad_qg")
    assert by_option == _run(monkeypatch, 80, "leaderboard", "squad_qg")
    for args in (["leaderboard"], ["leaderboard", "quora", "--task", "xsum"]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2 and "bench leaderboard" in result.output and "Traceback" not in result.output


def test_ls_systems_says_when_it_leaves_the_family_out(monkeypatch: pytest.MonkeyPatch) -> None:
    narrow, wide = _run(monkeypatch, 80, "ls", "systems"), _run(monkeypatch, 200, "ls", "systems")
    assert re.search(r"^copy_source\s+reference\s", wide, re.M)
    if not re.search(r"^copy_source\s+reference\s", narrow, re.M):  # left out at 80 columns: said so
        assert "family (AR, NAR, semi-NAR, reference): left out" in " ".join(narrow.split())


def test_status_knows_subset_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _run(monkeypatch, 80, "status", "mist:6", "--budget", "cpu")
    assert "done on a subset" in out and "first 2,000 examples" in out
    subset_ids = [i for i in RUN_ID.findall(out) if _record(i)["spec"].get("limit")]
    assert len(subset_ids) >= 4
    last = out.strip().splitlines()[-1]
    assert "done on a subset" in last and "9 not started" not in last


def test_reproduce_dry_run_and_fetch_keep_run_ids_and_paths_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.launch.plan import plan_table

    out = _run(monkeypatch, 80, "reproduce", "mist:6", "--budget", "cpu", "--dry-run")
    for job in plan_table("mist", "6", "cpu", RESULTS_DIR):
        assert job.run_id in out
    wide = _run(monkeypatch, 200, "reproduce", "mist:6", "--budget", "cpu", "--dry-run")
    assert all(job.run_id in wide for job in plan_table("mist", "6", "cpu", RESULTS_DIR))
    fetched = _run(monkeypatch, 80, "fetch", "--table", "mist:1", "--dry-run")
    assert "https://huggingface.co" in fetched and "$BENCH_CHECKPOINTS/unilm1.2-base-uncased/" in fetched


def _fake_result(delta_sign: int = 1) -> dict[str, Any]:
    sig = "qg:nqg|key:du-sentence|refs:du2017|agg:last|hyp:none|meteor:1.5-coco|boot:1000,seed:12345|v:0.1"
    side = {"signature": sig, "metrics": {"bleu4": 14.317}, "ci": {}, "n_items": 946}
    return {"recipe": "nqg", "signature": sig + "|ar:10000", "n_items": 946, "delta_is": "a - b", "a": side,
            "b": {**side, "metrics": {"bleu4": 13.73}},
            "metrics": {"bleu4": {"a": 14.317, "b": 13.73, "delta": delta_sign * 0.587, "p_bootstrap": 0.021,
                                  "p_ar": 0.036, "ci95_a_minus_b": [0.03, 1.16]}}}


def test_compare_fits_and_its_json_delta_has_the_tables_sign(monkeypatch: pytest.MonkeyPatch) -> None:
    import bench.scoring.compare_cache as cc

    monkeypatch.setattr(cc, "cached_compare", lambda *a, **k: _fake_result())
    out = _run(monkeypatch, 80, "compare", SHOW, OTHER)
    assert SHOW in out and OTHER in out and "[+0.03, +1.16]" in out and "+0.59" in out
    assert "so is the JSON's `delta`" in out
    raw = CliRunner().invoke(app, ["compare", SHOW, OTHER, "--json"])
    assert json.loads(raw.output)["metrics"]["bleu4"]["delta"] > 0  # a − b, as "+0.59" above


def test_compare_cache_hits_and_refuses_edited_or_contradicted_entries(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    import bench.scoring.api as api
    import bench.scoring.compare_cache as cc
    from bench.api.types import Example, Split

    monkeypatch.setenv("BENCH_CACHE", str(tmp_path))
    calls: list[int] = []

    def fake(*args: Any, **kwargs: Any) -> dict[str, Any]:
        calls.append(1)
        return _fake_result()

    monkeypatch.setattr(api, "compare", fake)
    split = Split("squad_qg", "test", (Example("1", "s", "t"),), "ab" * 32)
    args = ("nqg", ["x"], ["y"], split)
    first = cc.cached_compare(*args)
    assert cc.cached_compare(*args) == first and len(calls) == 1  # a hit
    assert cc.cached_compare("nqg", ["x"], ["z"], split) and len(calls) == 2  # other outputs: a miss
    entry = next(tmp_path.glob("compare/*.json"))
    edited = json.loads(entry.read_text())
    edited["result"]["metrics"]["bleu4"]["a"] = 99.0  # edited by hand
    for path in tmp_path.glob("compare/*.json"):
        path.write_text(json.dumps(edited))
    assert cc.cached_compare(*args)["metrics"]["bleu4"]["a"] == 14.317 and len(calls) == 3
    stored = {"a": {**first["a"], "metrics": {"bleu4": 10.0}}, "b": None}  # a record says otherwise
    cc.cached_compare(*args, stored=stored)
    assert len(calls) == 4


def test_layout_never_breaks_an_atomic_value() -> None:
    sig = "qg:unilm-tok|key:answer[SEP]paragraph-lc(bench,no-key-file)|refs:raw-question-bert-basic-lc|agg:last"
    lines = folded(sig, 40)
    assert "".join(lines) == sig and all(part in "".join(lines) for part in sig.split("|"))
    assert all(len(line) <= 40 or "|" not in line[:-1] for line in lines)
    rows = Rows(["job", "run id", "detail"], atomic=(0, 1))
    rows.add("mist_1/squad", "mist_minilm_l6--squad_qg--test--cpu--s42--8f0152e2", "a long detail " * 8)
    text = [t.plain for t in stacked(rows, 60)]
    assert "mist_minilm_l6--squad_qg--test--cpu--s42--8f0152e2" in "\n".join(text)


@pytest.mark.parametrize("width", [80, 200])
def test_run_prints_its_record_path_and_workdir_whole_and_says_where_it_went(monkeypatch: pytest.MonkeyPatch,
                                                                             tmp_path: Path, width: int) -> None:
    monkeypatch.chdir(tmp_path)  # paths are said relative to the working directory
    monkeypatch.setenv("BENCH_RESULTS", str(tmp_path / "workspace"))
    out = _run(monkeypatch, width, "run", "--system", "copy_source", "--task", "quora", "--limit", "20")
    (record,) = (tmp_path / "workspace").glob("copy_source--quora--*.json")
    assert _whole(f"workspace/{record.name}", out), out
    # the outputs file said from here, as the record path is (the stored label is checkout-relative or absolute)
    assert _whole(f"workspace/outputs/{record.stem}.txt", out), out
    assert "Not committed" in out and _whole(record.stem, out)
    assert f"bench promote {record.stem}" in [line.strip() for line in out.splitlines()]  # copied whole, one line


def test_run_brief_prints_the_headline_and_the_show_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`make demo`'s runs: one headline line each, not every recipe's table (#58: the demo printed 501 lines)."""
    monkeypatch.chdir(tmp_path)
    out = _run(monkeypatch, 80, "run", "--brief", "--system", "copy_source", "--task", "quora", "--limit", "20",
               "--results-dir", "mine")
    (record,) = (tmp_path / "mine").glob("copy_source--quora--*.json")
    rec = json.loads(record.read_text(encoding="utf-8"))
    bleu = rec["scores"]["mist-quora"]["metrics"]["bleu4"]
    flat = " ".join(out.split())
    assert f"BLEU-4 (mist-quora): {bleu:.2f} [" in flat
    assert f"bench show {record.stem[-8:]} --results-dir mine" in flat  # the short id, and where it was written
    assert "signature" not in flat and "meteor" not in flat.lower()  # no recipe table


@pytest.mark.parametrize("width", [80, 200])
def test_validate_prints_every_path_whole(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    from bench.workflows.validate import run_checks

    monkeypatch.setattr(ui.console, "_width", width)
    result = CliRunner().invoke(app, ["validate"])
    out = result.output
    assert "…" not in out
    too_wide = [line for line in out.splitlines() if len(line) > width and len(line.split()) != 1]
    assert too_wide == []
    for check in run_checks():
        for token in check.detail.split():
            if token.startswith("/"):
                assert _whole(token, out), token


def test_status_without_a_target_lists_the_targets(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _run(monkeypatch, 80, "status")
    for ref in ("mist:1", "mist:6", "copybert:1", "erniegen:4"):
        assert re.search(rf"(^|\s){re.escape(ref)}(\s|$)", out, re.M), ref
    assert "bench status mist:1" in " ".join(out.split())


def test_ls_runs_tells_runs_apart_by_their_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    out = " ".join(_run(monkeypatch, 80, "ls", "runs", "--system", "mist_minilm_l6").split())
    for settings in ("decode=mist_iter iterations=6", "decode=mist_iter iterations=3",
                     "decode=mask_predict iterations=6", "decode=mask_predict iterations=3"):
        assert settings in out
    assert "results/ (committed)" in out


def test_show_and_compare_take_the_short_ids_the_pages_show(monkeypatch: pytest.MonkeyPatch) -> None:
    import bench.scoring.compare_cache as cc

    short = SHOW.rsplit("--", 1)[1]
    assert SHOW in _run(monkeypatch, 200, "show", short, "-n", "0")
    monkeypatch.setattr(cc, "cached_compare", lambda *a, **k: _fake_result())
    out = _run(monkeypatch, 200, "compare", short, OTHER.rsplit("--", 1)[1])
    assert SHOW in out and OTHER in out
    ambiguous = CliRunner().invoke(app, ["show", "copybert_"])
    assert ambiguous.exit_code == 2 and "give more of it" in ambiguous.output
    assert len([ln for ln in ambiguous.output.splitlines() if ln.strip()]) <= 3


def test_help_lists_each_command_in_filled_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """`bench --help` at 80 columns: a command's summary fills its lines (typer's rich mode kept the docstring's own
    line breaks, so "or recipes, or" stood alone with "the recorded runs" on the next line)."""
    out = _run(monkeypatch, 80, "--help")
    panel = out[out.index("Commands"):]
    rows = [line[2:].rstrip("│ ") for line in panel.splitlines()[1:] if line.startswith("│")]
    text = [(row[:12].strip(), row[13:]) for row in rows]  # (command name or "", its summary's text on this line)
    width = max(len(t) for _, t in text)
    for (_, line), (name, following) in zip(text, text[1:], strict=False):
        if not name and following:  # the same command's summary goes on: the word would not fit the line above
            assert len(line) + 1 + len(following.split()[0]) > width, (line, following)


def test_a_paper_table_cell_longer_than_the_line_is_broken_between_words_and_indented() -> None:
    """MIST Table 3's "Speed ... (timed as encoder_bert)" cell is wider than 80 columns: it went to rich, which
    wrapped it at the margin with no indent; a long model name too."""
    from bench.report.term_table import _blocks

    speed = "6.2× / 5.04× [4.82–5.28] UNSTABLE (passes 10.2×, FLOPs 2.8×) (timed as encoder_bert)"
    model = "Transformer decoded by CTranslate2 (harness reference, not in the paper)"
    lines = [t.plain for t in _blocks(["Model", "System", "BLEU-4", "Speed"],
                                      [[model, "fairseq_transformer_ct2", "9.33", speed]], 2, None, 80)]
    assert all(len(line) <= 80 for line in lines), lines
    assert "fairseq_transformer_ct2" in " ".join(lines).split() and "encoder_bert)" in " ".join(lines).split()
    speed_at = next(i for i, line in enumerate(lines) if "Speed" in line)
    assert lines[speed_at].startswith("  Speed") and lines[speed_at + 1].startswith("    ")
