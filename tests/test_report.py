"""Renderer golden tests on tests/fixtures/records, record validation and the --check gate."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from bench.report import (
    RecordError,
    ReportCheckError,
    load_records,
    render_all,
    render_table,
    table_command,
)
from bench.report.cells import fmt_delta
from bench.report.markdown import parse_tables
from bench.store.integrity import sealed

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "records"
MIST_RUN = "mist_minilm_l6--squad_qg--test--cpu--s42--fixture01"


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return load_records(FIXTURES)


def _grid(markdown: str) -> tuple[list[str], dict[str, list[str]]]:
    """The single table of a rendered paper table: header and rows keyed by 'Section|Model'."""
    [(header, rows)] = parse_tables(markdown)
    model = header.index("Model")
    return header, {"|".join(r[: model + 1]): r for r in rows}


# --- records ------------------------------------------------------------------------------------
def test_load_records_skips_failed_and_sorts(records):
    assert [r["run_id"] for r in records] == [
        "encoder_minilm_l6--squad_qg--test--cpu--s42--fixture02",
        "erniegen_base--squad_qg_reversed--test--cpu--s1--fixture03",
        MIST_RUN,
    ]
    assert load_records(FIXTURES / "missing") == []


def _write(tmp_path: Path, rec: dict, name: str = "r.json") -> Path:
    (tmp_path / name).write_text(json.dumps(sealed(rec)), encoding="utf-8")  # as the harness's writer seals it
    return tmp_path


@pytest.mark.parametrize(
    "mutate,message",
    [
        (
            lambda r: r["scores"]["mist"]["metrics"].__setitem__("bleu4", "10.0"),
            r"scores\.mist\.metrics\.bleu4",
        ),
        (lambda r: r["spec"].pop("task"), r"spec\.task"),
        (lambda r: r.__setitem__("schema", 2), "'schema' must be 1"),
        (lambda r: r["scores"]["mist"].pop("signature"), r"scores\.mist\.signature"),
        (lambda r: r["latency"].__setitem__("speedup_mean", "fast"), r"latency\.speedup_mean"),
    ],
)
def test_bad_record_names_file_and_field(tmp_path, records, mutate, message):
    rec = copy.deepcopy(next(r for r in records if r["run_id"] == MIST_RUN))
    mutate(rec)
    _write(tmp_path, rec, "bad-run.json")
    with pytest.raises(RecordError, match=message) as err:
        load_records(tmp_path)
    assert "bad-run.json" in str(err.value)


def test_invalid_json_and_duplicate_ids(tmp_path, records):
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    with pytest.raises(RecordError, match=r"broken\.json: not valid JSON"):
        load_records(tmp_path)
    (tmp_path / "broken.json").unlink()
    _write(tmp_path, records[0], f"{records[0]['run_id']}.json")
    _write(tmp_path, records[0], "b.json")  # one id in two files: the copy is refused by its name (#57)
    with pytest.raises(RecordError, match=r"b\.json: holds run_id .* one id is one file"):
        load_records(tmp_path)


# --- golden tables, cell by cell ------------------------------------------------------------------
def test_golden_mist_table1_cpu(records):
    header, rows = _grid(render_table("mist", "1", records, "cpu"))
    assert header == ["Section", "Model", "System", "ROUGE-L", "BLEU-4", "METEOR", "Iter.", "Speed", "vs CT2 int8",
                      "Status"]
    assert rows["NAR|MIST(MiniLM) †"] == [
        "NAR",
        "MIST(MiniLM) †",
        "mist_minilm_l6",
        "43.87(+2.17) / 40.25 (cpu) / −3.62",
        "12.98(+1.43) / 10.00 (cpu) / −2.98",
        "18.93(+1.62) / 15.50 (cpu) / −3.43",
        "1 / 1 (cpu) / ±0",
        "8.3× / 5.50× (cpu) / −2.80×",
        "—",
        "run [2]",
    ]
    assert rows["NAR|Encoder MiniLM init †"] == [
        "NAR",
        "Encoder MiniLM init †",
        "encoder_minilm_l6",
        "41.70 / 38.00 (cpu, partial) / −3.70",
        "11.55 / 9.00 (cpu, partial) / −2.55",
        "17.31 / 14.00 (cpu, partial) / −3.31",
        "1 / not timed (cpu, partial)",
        "8.3× / not timed (cpu, partial)",
        "—",
        "run [1]",
    ]
    assert rows["NAR|Encoder random init †"] == [
        "NAR",
        "Encoder random init †",
        "encoder_random",
        "23.42",
        "1.70",
        "7.37",
        "1",
        "8.3×",
        "—",
        "not run",
    ]
    assert rows["NAR|MIST(UniLM) †"][2:] == [
        "—",
        "47.13(+0.79)",
        "16.40(+0.40)",
        "21.68(+0.58)",
        "1",
        "8.3×",
        "—",
        "cannot run here: the cpu budget has only the MiniLM-L6 backbone (see the MiniLM row)",
    ]
    assert rows["AR|Transformer(Vaswani et al. 2017) ‡"][-1] == "not run"
    assert rows["NAR|BANG(Qi et al. 2020a) ‡"][-1].startswith("cannot run here: BANG checkpoint")
    context = rows["|Copy the source (harness reference, not in the paper)"]
    assert context[-1] == "not run: `bench run --system copy_source --task squad_qg --budget cpu`"
    ct2 = rows["AR|Transformer decoded by CTranslate2 (harness reference, not in the paper)"]
    assert ct2[2:] == ["fairseq_transformer_ct2", "", "", "", "", "–", "—", "not timed: see the vs CT2 note"]
    assert len(rows) == 20


def test_reference_baseline_row_shows_the_run_over_the_column_s_examples(records):
    """A copy-the-source run appears under the paper's rows, on the examples the column's runs used."""
    base = next(r for r in records if r["run_id"] == MIST_RUN)  # whole split, bleu4 10.00

    def copy_run(run_id: str, bleu4: float, n: int | None) -> dict:
        out = copy.deepcopy(base)
        out.update(run_id=run_id)
        out["spec"] = {**out["spec"], "system": "copy_source", "overrides": {}, "limit": n}
        out["data"] = {**out["data"], "partial": n is not None, "n_examples": n or base["data"]["n_examples"]}
        out["scores"]["mist"]["metrics"]["bleu4"] = bleu4
        return out

    runs = [base, copy_run("copy-whole", 4.25, None), copy_run("copy-300", 7.0, 300)]
    header, rows = _grid(render_table("mist", "1", runs, "cpu"))
    row = rows["|Copy the source (harness reference, not in the paper)"]
    assert row[header.index("BLEU-4")] == "– / 4.25" and row[-1] == "reference; run [2]"
    text = render_table("mist", "1", runs, "cpu")
    assert "`copy-whole`: reference baseline `copy_source`, no training; task `squad_qg`, split `test`" in text
    # a column whose only run is over 300 examples gets the baseline over the same 300 (or nothing)
    partial = copy.deepcopy(base)
    partial["spec"] = {**partial["spec"], "limit": 300}
    partial["data"] = {**partial["data"], "partial": True, "n_examples": 300}
    header, rows = _grid(render_table("mist", "1", [partial, runs[1]], "cpu"))
    assert rows["|Copy the source (harness reference, not in the paper)"][header.index("BLEU-4")] == ""
    header, rows = _grid(render_table("mist", "1", [partial, *runs[1:]], "cpu"))
    assert rows["|Copy the source (harness reference, not in the paper)"][header.index("BLEU-4")] == "– / 7.00"


def test_golden_mist_table1_footnotes(records):
    text = render_table("mist", "1", records, "cpu")
    assert f"- [2] run `{MIST_RUN}`: system `mist_minilm_l6` (cpu substitute for `mist_minilm`)" in text
    assert "quality `qg:mist|fixture`; latency `lat:single-stream|fixture` on fixture-cpu" in text
    assert "speedup vs `fairseq_transformer` (95% CI 5.10–5.90)" in text
    assert "PARTIAL split (first 2000 test questions)" in text
    assert (
        "‡ Published number computed with recipe `unilm` (quoted from GLGE), not this table's `mist`" in text
    )


def test_golden_erniegen_table4_best_budget(records):
    header, rows = _grid(render_table("erniegen", "4", records, None))
    assert header == ["Section", "Model", "System", "BLEU-4", "METEOR", "ROUGE-L", "Status"]
    assert rows["Reversed test↔dev split|ERNIE-GEN-BASE"][2:] == [
        "erniegen_base",
        "23.52 / 12.35 (cpu) / −11.17",
        "25.61 / 18.00 (cpu) / −7.61",
        "51.45 / 42.00 (cpu) / −9.45",
        "run [1]",
    ]
    assert rows["Du et al. split|ERNIE-GEN-BASE"][2:] == [
        "erniegen_base",
        "22.28",
        "25.13",
        "50.58",
        "not run (paper: ERNIE-GEN base weights (Paddle, needs a torch port) are not available offline)",
    ]
    assert rows["Du et al. split|UNILM-LARGE [Dong et al., 2019] ‡"][3:6] == ["22.12", "25.06", "51.07"]


def test_paper_budget_ignores_cpu_runs(records):
    _, rows = _grid(render_table("erniegen", "4", records, "paper"))
    assert rows["Reversed test↔dev split|ERNIE-GEN-BASE"][3:] == [
        "23.52",
        "25.61",
        "51.45",
        "cannot run here: ERNIE-GEN base weights (Paddle, needs a torch port) are not available offline",
    ]


def test_match_needs_the_rows_recipe(records):
    rec = copy.deepcopy(next(r for r in records if r["spec"]["system"] == "erniegen_base"))
    del rec["scores"]["unilm-tok"]
    _, rows = _grid(render_table("erniegen", "4", [rec], "cpu"))
    assert rows["Reversed test↔dev split|ERNIE-GEN-BASE"][3:] == ["23.52", "25.61", "51.45", "not run"]


def test_match_needs_exact_overrides_and_newest_wins(records):
    base = next(r for r in records if r["run_id"] == MIST_RUN)
    old, new = copy.deepcopy(base), copy.deepcopy(base)
    for rec, rid, created, b4 in (
        (old, "a-old", "2026-01-01T00:00:00+00:00", 17.0),
        (new, "b-new", "2026-02-01T00:00:00+00:00", 18.5),
    ):
        rec.update(run_id=rid, created=created)
        rec["spec"]["overrides"] = {"iterations": 3, "decode": "mist_iter"}
        rec["scores"]["mist"]["metrics"]["bleu4"] = b4
    text6 = render_table("mist", "6", [old, new], "cpu")
    [(header, rows)] = parse_tables(text6)
    by_label_iter = {(r[0], r[2]): r for r in rows}
    row = by_label_iter[("MIST", "3")]
    assert row[header.index("SQuAD1.1 (BLEU-4)")] == "18.12 / 18.50 (cpu) / +0.38"
    assert row[header.index("XSum (ROUGE-2)")] == "12.46"
    assert row[-1].startswith("SQuAD1.1: run [1]; XSum: cannot run here: no XSum training set here")
    assert "newest of 2 matching runs" in text6
    assert by_label_iter[("Mask-Predict", "3")][header.index("SQuAD1.1 (BLEU-4)")] == "16.73"
    # The same runs (decoded with 3 iterations) must not stand for Table 1's single-pass row.
    _, rows1 = _grid(render_table("mist", "1", [old, new], "cpu"))
    assert rows1["NAR|MIST(MiniLM) †"][-1] == "not run"
    # ... while the plain single-pass run is iteration 1 of both methods.
    [(header, rows)] = parse_tables(render_table("mist", "6", [base], "cpu"))
    col = header.index("SQuAD1.1 (BLEU-4)")
    assert [r[col] for r in rows if r[2] == "1"] == ["16.09 / 10.00 (cpu) / −6.09"] * 2


def test_whole_split_run_beats_a_newer_partial_one(records):
    full = copy.deepcopy(next(r for r in records if r["run_id"] == MIST_RUN))
    probe = copy.deepcopy(full)
    probe.update(run_id="z-probe", created="2099-01-01T00:00:00+00:00")
    probe["data"] = {**probe["data"], "partial": True, "n_examples": 300}
    probe["scores"]["mist"]["metrics"]["bleu4"] = 99.0
    text = render_table("mist", "1", [full, probe], "cpu")
    header, rows = _grid(text)
    assert rows["NAR|MIST(MiniLM) †"][header.index("BLEU-4")] == "12.98(+1.43) / 10.00 (cpu) / −2.98"
    assert "whole-split run preferred over newer partial ones (2 matching runs)" in text
    # alone, the partial run is shown, and labelled partial
    _, rows = _grid(render_table("mist", "1", [probe], "cpu"))
    assert rows["NAR|MIST(MiniLM) †"][header.index("BLEU-4")] == "12.98(+1.43) / 99.00 (cpu, partial) / +86.02"
    # two partial runs: the one over more examples, and the footnote says so (not "whole-split")
    bigger = copy.deepcopy(probe)
    bigger.update(run_id="a-bigger", created="2025-01-01T00:00:00+00:00")
    bigger["data"]["n_examples"] = 2000
    bigger["scores"]["mist"]["metrics"]["bleu4"] = 11.0
    text = render_table("mist", "1", [probe, bigger], "cpu")
    _, rows = _grid(text)
    assert rows["NAR|MIST(MiniLM) †"][header.index("BLEU-4")] == "12.98(+1.43) / 11.00 (cpu, partial) / −1.98"
    assert "of 2 matching runs, the one over the most examples" in text and "whole-split" not in text


def test_a_column_compares_runs_over_the_same_examples(records):
    """Table 6 decodes 3 iterations on a --limit subset: its single-pass rows must then show the
    single-pass run on that subset, while Table 1 keeps the whole-split single-pass run."""
    full = copy.deepcopy(next(r for r in records if r["run_id"] == MIST_RUN))

    def subset(rec: dict, run_id: str, bleu4: float, **overrides: object) -> dict:
        out = copy.deepcopy(rec)
        out.update(run_id=run_id, created="2025-03-01T00:00:00+00:00")  # older than the whole-split run
        out["spec"] = {**out["spec"], "limit": 300, "overrides": dict(overrides)}
        out["data"] = {**out["data"], "partial": True, "n_examples": 300}
        out["scores"]["mist"]["metrics"]["bleu4"] = bleu4
        return out

    single = subset(full, "s-single", 9.0)
    iter3 = subset(full, "s-iter3", 9.5, decode="mist_iter", iterations=3)
    runs = [full, single, iter3]
    [(header, rows)] = parse_tables(render_table("mist", "6", runs, "cpu"))
    col = header.index("SQuAD1.1 (BLEU-4)")
    cells = {(r[0], r[2]): r[col] for r in rows}
    assert cells[("MIST", "1")] == cells[("Mask-Predict", "1")] == "16.09 / 9.00 (cpu, partial) / −7.09"
    assert cells[("MIST", "3")] == "18.12 / 9.50 (cpu, partial) / −8.62"
    assert "the one over the examples every row of this column has" in render_table("mist", "6", runs, "cpu")
    header, rows1 = _grid(render_table("mist", "1", runs, "cpu"))
    assert rows1["NAR|MIST(MiniLM) †"][header.index("BLEU-4")] == "12.98(+1.43) / 10.00 (cpu) / −2.98"
    # no subset shared by every row: each row shows its own best run
    [(header, rows)] = parse_tables(render_table("mist", "6", [full, iter3], "cpu"))
    cells = {(r[0], r[2]): r[col] for r in rows}
    assert cells[("MIST", "1")] == "16.09 / 10.00 (cpu) / −6.09"
    assert cells[("MIST", "3")] == "18.12 / 9.50 (cpu, partial) / −8.62"


def test_protocol_sensitivity_spread(rendered):
    tables = parse_tables((rendered / "protocol-sensitivity.md").read_text(encoding="utf-8"))
    header, rows = tables[0]
    assert header == [
        "Run",
        "System",
        "Task/split",
        "Budget",
        "Recipe",
        "bleu1",
        "bleu4",
        "meteor",
        "rougeL",
        "Signature",
    ]
    mist_rows = [r for r in rows if r[0] == MIST_RUN]
    assert [r[4] for r in mist_rows] == ["mist", "nqg", "unilm", "spread (max − min)"]
    assert mist_rows[0][5:] == ["40.12", "10.00", "15.50", "40.25", "qg:mist|fixture"]
    assert mist_rows[-1][5:] == ["1.50", "0.75", "0.25", "0.38", ""]
    runs_header, runs = tables[1]
    speed = {r[0]: r[runs_header.index("Speedup")] for r in runs}
    assert (
        speed[MIST_RUN] == "5.50×" and speed["encoder_minilm_l6--squad_qg--test--cpu--s42--fixture02"] == ""
    )


def test_fmt_delta():
    assert fmt_delta(-4.09) == "−4.09"
    assert fmt_delta(0.004) == "±0.00"
    assert fmt_delta(1.5, unit="×") == "+1.50×"


# --- render_all / --check ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reports")
    render_all(FIXTURES, out)
    return out


def test_render_all_writes_every_report(rendered):
    names = {p.name for p in rendered.iterdir()}
    for t in (
        [f"mist-table{i}.md" for i in range(1, 8)]
        + ["copybert-table1.md"]
        + [f"erniegen-table{i}.md" for i in range(2, 9)]
    ):
        assert t in names
    for n in (
        "index.html",
        "protocol-sensitivity.md",
        "mist-table6-iterations.png",
        "pareto-squad_qg.png",
        "pareto-xsum.png",
        "pareto-quora.png",
        "pareto-squad_qg.json",
    ):
        assert n in names
    assert (rendered / "pareto-squad_qg.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    side = json.loads((rendered / "pareto-squad_qg.json").read_text(encoding="utf-8"))
    assert side["runs"] == [
        {"device": "fixture-cpu", "label": "mist_minilm_l6 (cpu)", "run_id": MIST_RUN, "x": 5.5, "y": 10.0}
    ]
    assert {"label": "MIST(UniLM)", "x": 8.3, "y": 16.4} in side["paper"]
    assert (rendered / "mist-table1.md").read_text(encoding="utf-8") == render_table(
        "mist", "1", load_records(FIXTURES), None
    )


def test_check_passes_then_catches_each_kind_of_drift(rendered, tmp_path):
    assert render_all(FIXTURES, rendered, check=True) == []
    work = tmp_path / "reports"
    render_all(FIXTURES, work)  # not a copy of `rendered`: record links are relative to where pages are written
    md = work / "copybert-table1.md"
    md.write_text(md.read_text(encoding="utf-8").replace("19.37", "19.73"), encoding="utf-8")
    (work / "pareto-quora.png").unlink()
    (work / "pareto-old_task.json").write_text("{}", encoding="utf-8")
    (work / "notes-by-hand.md").write_text("not ours", encoding="utf-8")
    problems = render_all(FIXTURES, work, check=True)
    assert len(problems) == 3
    msg = "\n".join(problems)
    assert "copybert-table1.md: differs" in msg and "19.73" in msg
    assert "pareto-quora.png: missing" in msg
    assert "pareto-old_task.json: stale" in msg
    assert md.read_text(encoding="utf-8").count("19.73") == 1  # check mode wrote nothing
    with pytest.raises(ReportCheckError, match="run `bench table` and commit"):
        table_command(check=True, results_dir=FIXTURES, reports_dir=work)


def test_check_fails_when_records_change(rendered, tmp_path):
    results = tmp_path / "results"
    shutil.copytree(FIXTURES, results)
    path = results / f"{MIST_RUN}.json"
    rec = json.loads(path.read_text(encoding="utf-8"))
    rec["scores"]["mist"]["metrics"]["bleu4"] = 10.5
    path.write_text(json.dumps(sealed(rec)), encoding="utf-8")  # re-sealed: the check sees the reports differ
    msg = "\n".join(render_all(results, rendered, check=True))
    assert "mist-table1.md: differs" in msg and "pareto-squad_qg.json: differs" in msg
    assert "protocol-sensitivity.md: differs" in msg and "index.html: differs" in msg


def test_table_command(rendered):
    text = table_command("mist", "4", "cpu", results_dir=FIXTURES)
    assert "| MIST | mist_minilm_l6 | 46.49 / 40.25 (cpu) / −6.24 |" in text
    assert "up to date" in table_command(check=True, results_dir=FIXTURES, reports_dir=rendered)
    with pytest.raises(ValueError, match="--table needs --paper"):
        table_command(table="1", results_dir=FIXTURES)


def test_a_harness_row_shows_its_run_marked_as_not_in_the_paper(records):
    """ERNIE-GEN Table 4's noise ablation: no reported value, its run shown, a § note saying why it is there."""
    rec = copy.deepcopy(next(r for r in records if r["spec"]["system"] == "erniegen_base"))
    rec.update(run_id="erniegen_base--squad_qg--test--cpu--s42--noise0")
    rec["spec"].update(task="squad_qg", overrides={"noise_prob": 0.0})
    text = render_table("erniegen", "4", [rec], "cpu")
    _, rows = _grid(text)
    row = rows["Du et al. split|ERNIE-GEN-BASE, no fine-tuning noise (ρf = 0) §"]
    assert row[3].startswith("– / ") and "(cpu" in row[3] and row[-1].startswith("run [")
    assert "ERNIE-GEN-BASE, no fine-tuning noise (ρf = 0) §: not in the paper; added by the harness" in text
    # the paper's own row is not matched by the ablation's run (overrides are matched exactly)
    assert rows["Du et al. split|ERNIE-GEN-BASE"][3] == "22.28"
    plain = render_table("erniegen", "4", [], "cpu")
    assert _grid(plain)[1]["Du et al. split|ERNIE-GEN-BASE, no fine-tuning noise (ρf = 0) §"][-1] == "not run"


def test_harness_rows_must_not_report_and_must_name_a_system(tmp_path):
    from bench.papers import PaperDataError, parse_paper_file

    base = {"paper": "mist", "title": "t", "citation": "c", "source": "s", "tables": [{
        "id": "1", "title": "T", "role": "reproduce",
        "groups": [{"id": "g", "task": "quora", "split": "test", "recipe": "mist-quora",
                    "columns": [{"id": "b", "label": "B", "metric": "bleu4"}]}],
        "rows": [{"id": "abl", "label": "ablation", "system": "unilm", "harness": "why", "reported": {"b": "1.0"}}],
    }]}
    path = tmp_path / "p.yaml"
    import yaml

    path.write_text(yaml.safe_dump(base), encoding="utf-8")
    with pytest.raises(PaperDataError, match="harness row"):
        parse_paper_file(path, "mist")
    del base["tables"][0]["rows"][0]["reported"]
    path.write_text(yaml.safe_dump(base), encoding="utf-8")
    assert parse_paper_file(path, "mist").tables[0].rows[0].harness == "why"
