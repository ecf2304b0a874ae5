"""The speed page per task (#48): sweep records checked at load and re-derived by --deep, the page rendered from a
real smoke sweep (tests/fixtures/sweep: `bench latency --task squad_qg --budget smoke --weights random --systems
fairseq_transformer,fairseq_nat --baseline fairseq_transformer --batch-sizes 1,4 --threads 1 --n 8 --rounds 2
--max-rounds 3 --time-budget-s 30 --min-batches 4 --record`, its digest removed so tests may edit it),
covered by `bench table --check`, hostile strings escaped."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from bench.report import render_all
from bench.report import speed_page as sp
from bench.report.markdown import parse_tables
from bench.store.ids import sweep_record_id
from bench.store.integrity import sealed, unsealed
from bench.store.sweeps import SweepRecordError, load_sweep_records, read_sweep_record, write_sweep_record

FIXTURE = next((Path(__file__).parent / "fixtures" / "sweep").glob("*.json"))
HOSTILE = "<script>alert(1)</script>|x"


@pytest.fixture
def record() -> dict:
    return unsealed(json.loads(FIXTURE.read_text()))  # the record as readers hand it on (the fixture is sealed)


def _results(tmp_path: Path, *recs: dict) -> Path:
    results = tmp_path / "results"
    (results / "sweep").mkdir(parents=True)
    for rec in recs:
        (results / "sweep" / f"{rec['sweep_id']}.json").write_text(json.dumps(sealed(rec)))  # as the writer seals it
    return results


def _rename(rec: dict, old: str, new: str) -> dict:
    """The record with system ``old`` called ``new`` everywhere it is named."""
    rec = copy.deepcopy(rec)
    spec, sw = rec["spec"], rec["sweep"]
    spec["systems"] = [new if s == old else s for s in spec["systems"]]
    if spec["baseline"] == old:
        spec["baseline"] = new
    for c in sw["cells"]:
        c["system"] = new if c["system"] == old else c["system"]
    for key in ("agreement", "models"):
        sw[key] = {new if k == old else k: v for k, v in sw[key].items()}
    sw["crossover"] = {t: {new if k == old else k: v for k, v in per.items()} for t, per in sw["crossover"].items()}
    rec["systems"] = {new if k == old else k: v for k, v in rec["systems"].items()}
    names = {old: new, f"aa:{old}": f"aa:{new}"}
    for g in sw["groups"]:
        g["design"]["arms"] = [names.get(a, a) for a in g["design"]["arms"]]
        g["trials"]["arm"] = [names.get(a, a) for a in g["trials"]["arm"]]
        for key in ("reference_hashes", "work"):
            g[key] = {names.get(k, k): v for k, v in g[key].items()}
        if g.get("aa") and g["aa"]["system"] == old:
            g["aa"]["system"] = new
    return rec


# ---------------------------------------------------------------- the store

def test_the_real_sweep_loads_and_a_written_one_is_sealed(record: dict, tmp_path: Path) -> None:
    assert read_sweep_record(FIXTURE)["sweep_id"] == record["sweep_id"]
    path = write_sweep_record(tmp_path, record)
    assert json.loads(path.read_text())["digest"].startswith("sha256:")
    assert load_sweep_records(tmp_path) == [record]
    stored = json.loads(path.read_text())
    stored["sweep"]["cells"][1]["sentences_per_s"] *= 1.01  # plausible, inside its CI: only the digest sees it
    path.write_text(json.dumps(stored))
    with pytest.raises(SweepRecordError, match=r"'digest' does not match") as err:
        load_sweep_records(tmp_path)
    assert path.name in str(err.value)


@pytest.mark.parametrize(("edit", "field"), [
    (lambda r: r["sweep"]["cells"][0].update(system="other"), "sweep.cells[0].system"),
    (lambda r: r["sweep"]["cells"][0].update(batch_size=7), "sweep.cells[0].batch_size"),
    (lambda r: r["sweep"]["cells"][0].update(threads=9), "sweep.cells[0].threads"),
    (lambda r: r["sweep"]["cells"][2].update(sentences_per_s=float("inf")), "sweep.cells[2].sentences_per_s"),
    (lambda r: r["sweep"]["cells"][1]["speedup"].update(median=-2.0), "sweep.cells[1].speedup.median"),
    (lambda r: r["sweep"]["cells"][1].update(batch_ns=[0, 5]), "sweep.cells[1].batch_ns"),
    (lambda r: r["sweep"]["models"]["fairseq_nat"].update(parameters=1e20), "sweep.models.fairseq_nat.parameters"),
    (lambda r: r["sweep"]["agreement"]["fairseq_nat"].update(agreed=99), "sweep.agreement.fairseq_nat"),
    (lambda r: r["sweep"]["models"]["fairseq_nat"].update(parameter_bytes_note=["x"]),
     "sweep.models.fairseq_nat.parameter_bytes_note"),
    (lambda r: r["spec"].update(task="../../etc"), "spec.task"),
])
def test_a_bad_record_is_refused_naming_file_and_field(record: dict, tmp_path: Path, edit, field: str) -> None:
    edit(record)
    results = _results(tmp_path, record)
    with pytest.raises(SweepRecordError) as err:
        load_sweep_records(results)
    assert f"'{field}'" in str(err.value) and record["sweep_id"] in str(err.value)


# ---------------------------------------------------------------- --deep

def test_the_real_sweep_derives_again_and_an_edited_figure_fails_deep(record: dict, tmp_path: Path) -> None:
    from bench.latency.rederive_sweep import rederive_sweep
    from bench.report.deep import deep_check

    assert rederive_sweep(record).differences == []
    cell = record["sweep"]["cells"][3]  # fairseq_nat at B=4
    lo, hi = cell["sentences_per_s_ci95"]
    cell["sentences_per_s"] = round((cell["sentences_per_s"] + hi) / 2, 3)  # inside its CI: load accepts it
    record["sweep"]["cells"][1]["speedup"]["median"] *= 1.02
    found = deep_check(_results(tmp_path, record), jobs=1)
    fields = sorted(d.field for d in found.differences)
    assert fields == ["sentences_per_s", "speedup.median"], [str(d) for d in found.differences]
    assert all(record["sweep_id"] in d.where for d in found.differences)
    assert found.counts["sweep records"] == 1


def test_an_edited_crossover_fails_deep(record: dict) -> None:
    from bench.latency.rederive_sweep import rederive_sweep

    record["sweep"]["crossover"]["1"]["fairseq_nat"] = 4
    (diff,) = rederive_sweep(record).differences
    assert diff.field == "sweep.crossover.1.fairseq_nat" and diff.recomputed == "none up to B_max=4"


# ---------------------------------------------------------------- the page

def test_the_page_renders_from_the_real_sweep_and_check_covers_it(record: dict, tmp_path: Path) -> None:
    results, reports = _results(tmp_path, record), tmp_path / "reports"
    render_all(results, reports)
    md, html = (reports / "speed-squad_qg.md").read_text(), (reports / "speed-squad_qg.html").read_text()
    for text in (md, html):
        assert record["sweep_id"] in text and "paper-size architecture, untrained weights, length-forced" in text
        assert "latency (1 thread)" in text and record["harness"]["git_sha"][:12] in text
        assert "single (B=1)" in text and "NO: per-item loop" not in text  # both decode real padded batches
        assert "none up to B=4" in text and "not measured (--energy not given)" in text
        assert "8.3× vs" in text  # MIST Table 1's claim for fairseq_nat, next to ours
    assert f"../results/sweep/{record['sweep_id']}.json" in md and f"../results/sweep/{record['sweep_id']}.json" in html
    assert html.count("<svg") == 3 and "sentences/s (log)" in html
    header, rows = parse_tables(md)[0]
    assert len(rows) == 4 and header[0] == "System"
    nat4 = next(r for r in rows if r[0] == "`fairseq_nat`" and r[1] == "4")
    cell = record["sweep"]["cells"][3]
    assert nat4[6] == f"{cell['speedup']['mean']:.2f}× [{cell['speedup']['mean_ci95'][0]:.2f}–" \
                      f"{cell['speedup']['mean_ci95'][1]:.2f}] {cell['verdict']}"
    assert nat4[7].startswith("passes ") and "FLOPs " in nat4[7]  # the work counts beside the wall-time ratio
    assert "speed-squad_qg.md" in (reports / "mist-table1.md").read_text()
    assert render_all(results, reports, check=True) == []
    # a hand edit of either page fails --check, naming the file
    (reports / "speed-squad_qg.md").write_text(md.replace("none up to B=4", "B=2"))
    (reports / "speed-squad_qg.html").write_text(html.replace("VALID", "fine"))
    problems = render_all(results, reports, check=True)
    assert any("speed-squad_qg.md: differs" in p for p in problems)
    assert any("speed-squad_qg.html: differs" in p for p in problems)


def test_the_rendering_is_deterministic(record: dict) -> None:
    assert sp.html_page("squad_qg", [record], []) == sp.html_page("squad_qg", [copy.deepcopy(record)], [])


def test_a_system_name_that_is_no_identifier_is_refused_before_any_page(record: dict, tmp_path: Path) -> None:
    """A record's system names become parts of report names: a hostile one is refused at load (#57), so no page
    is built from it."""
    from bench.store.sweeps import SweepRecordError

    results = _results(tmp_path, _rename(record, "fairseq_nat", HOSTILE))
    with pytest.raises(SweepRecordError, match="not an identifier"):
        render_all(results, tmp_path / "reports")
    assert not (tmp_path / "reports" / "speed-squad_qg.md").exists()


def _invalid(record: dict, reason: str) -> dict:
    """``record`` with one cell INVALID (a system problem, as the meter writes it), every verdict word agreeing: a
    sweep's verdicts are checked against each other at load (bench.store.verdicts)."""
    bad = copy.deepcopy(record)
    sw = bad["sweep"]
    cell = next(c for c in sw["cells"] if c.get("speedup"))
    cell["verdict"] = cell["speedup"]["verdict"] = "INVALID"
    cell["speedup"]["reasons"] = [reason]
    words = {"valid": False, "verdict": "INVALID", "ms_label": "INDICATIVE",
             "invalid_reasons": [f"threads={cell['threads']} B={cell['batch_size']}: {reason}"]}
    bad.update(words)
    sw.update(words)
    return bad


def test_hostile_strings_are_escaped(record: dict, tmp_path: Path) -> None:
    """Free text a record carries (a checkpoint note in a table cell, a verdict's reason) is escaped."""
    hostile = copy.deepcopy(record)
    hostile["sweep"]["models"]["fairseq_nat"]["checkpoint_bytes"] = HOSTILE
    bad = _invalid(record, "<img src=x onerror=alert(1)> | [x](javascript:alert(1))")
    bad.update(sweep_id=record["sweep_id"] + "-bad", created="2026-11-29T00:00:00+00:00")
    results, reports = _results(tmp_path, hostile, bad), tmp_path / "reports"
    render_all(results, reports)
    md, html = (reports / "speed-squad_qg.md").read_text(), (reports / "speed-squad_qg.html").read_text()
    assert "<script" not in html and "<img" not in html and "&lt;script&gt;" in html and "&lt;img" in html
    outside_code = re.sub(r"`[^`]*`", "", md)  # a code span shows its text literally (CommonMark): no markup there
    assert not re.search(r"(?<!\\)<(script|img)|(?<!\\)\]\(javascript", outside_code)
    assert "\\<img" in md  # the reason is shown, escaped
    for header, rows in parse_tables(md):  # a | in a name is escaped: no row gains a cell
        assert all(len(r) == len(header) for r in rows)
    assert "\\<script>alert(1)\\</script>\\|x" in md  # the note is shown, escaped, in its one cell
    assert "Not shown, INVALID" in md and "Not shown, INVALID" in html


def test_a_record_without_a_baseline(record: dict, tmp_path: Path) -> None:
    record["spec"]["baseline"] = None
    record["sweep"]["crossover"] = {}
    for c in record["sweep"]["cells"]:
        c["speedup"] = None
    record["sweep_id"] = sweep_record_id(record)  # a sweep of another spec: its own id (bench.store.ids)
    results, reports = _results(tmp_path, record), tmp_path / "reports"
    render_all(results, reports)
    md = (reports / "speed-squad_qg.md").read_text()
    assert "Baseline: none (no speed-ups or crossovers)" in md and "No baseline in this sweep" in md
    assert "no baseline" in md
    assert render_all(results, reports, check=True) == []


def test_an_unreadable_energy_counter_shows_its_reason(record: dict) -> None:
    record["sweep"]["cells"][2]["energy"] = {"status": "unreadable: /sys/class/powercap is not readable (EACCES)"}
    record["sweep"]["cells"][3]["energy"] = {"status": "measured", "covers": "package", "window_s": 10.0,
                                             "repeats": 3, "sentences": 96, "idle_w": 5.0, "joules": 40.0,
                                             "joules_above_idle": 12.0, "j_per_sentence": 0.125}
    md, html = sp.markdown_page("squad_qg", [record], [], None), sp.html_page("squad_qg", [record], [])
    for text in (md, html):
        assert "unreadable: /sys/class/powercap is not readable (EACCES)" in text and "0.125 J" in text


def test_ct2_is_a_second_baseline_column_and_curve(record: dict) -> None:
    ct2 = copy.deepcopy(record)
    extra = [dict(copy.deepcopy(c), system=sp.CT2) for c in record["sweep"]["cells"]
             if c["system"] == "fairseq_transformer"]
    ct2["spec"]["systems"].append(sp.CT2)
    ct2["sweep"]["cells"] += extra
    ct2["sweep"]["models"][sp.CT2] = ct2["sweep"]["models"]["fairseq_transformer"]
    md = sp.markdown_page("squad_qg", [ct2], [], None)
    header, rows = parse_tables(md)[0]
    assert f"speed-up vs `{sp.CT2}` (same B)" in header
    col = header.index(f"speed-up vs `{sp.CT2}` (same B)")
    assert {r[col] for r in rows if r[0] == f"`{sp.CT2}`"} == {"1.00×"}
    assert sp.html_page("squad_qg", [ct2], []).count('stroke-dasharray="6 3"') >= 4  # both AR curves dashed
    ct2["sweep"]["models"][sp.CT2] = {**ct2["sweep"]["models"][sp.CT2],
                                     "parameter_bytes_note": "parameters x 1 byte(s) (int8 weights)"}
    assert f"`{sp.CT2}` parameter MB: `parameters x 1 byte(s) (int8 weights)`." in sp.markdown_page(
        "squad_qg", [ct2], [], None)


def test_quality_comes_from_the_newest_scored_record_and_names_its_budget(record: dict) -> None:
    run = {"run_id": "fairseq_nat--squad_qg--test--cpu--s42--0123abcd", "created": "2026-11-01T00:00:00+00:00",
           "spec": {"system": "fairseq_nat", "task": "squad_qg", "split": "test", "budget": "cpu"},
           "scores": {"unilm": {"metrics": {"bleu4": 12.5}}}}
    md = sp.markdown_page("squad_qg", [record], [run], None)
    assert "12.50 BLEU-4 (unilm) from `fairseq_nat--squad_qg--test--cpu--s42--0123abcd`" in md
    assert "budget `cpu`" in md and "Not on the quality plots (no quality record): `fairseq_transformer`" in md
    assert "Quality vs B=1 speed" in sp.html_page("squad_qg", [record], [run])


def test_the_leaderboard_links_its_speed_page() -> None:
    from bench.report.leaderboard import task_page

    assert 'href="speed-squad_qg.html"' in task_page("squad_qg", [], speed="speed-squad_qg.html")
    assert "speed-" not in task_page("squad_qg", [])


def test_the_verdict_is_a_count_and_its_reasons_a_table_grouped_per_cell(record: dict) -> None:
    """#58: the header held every reason in one paragraph, a control's reading repeated for each system."""
    from bench.report.speed_page import header_lines, reasons_view
    from bench.report.speed_reasons import verdict_counts

    rec = copy.deepcopy(record)
    rec["spec"]["systems"] = [*rec["spec"]["systems"], "encoder_bert"]  # two speed-ups: a control's row names both
    others = [n for n in rec["spec"]["systems"] if n != rec["spec"]["baseline"]]
    control = "the A/A control read 0.966x, more than 3% from 1"
    rec.update(verdict="UNSTABLE", invalid_reasons=[f"threads=1 B=8: {n} speed-up UNSTABLE: {control}" for n in others]
               + ["threads=1 B=8: A/A control UNSTABLE: " + control, "a reason of no cell"],
               ms_reasons=["threads=1 B=1: device canary drift 84% > 25%"], ms_label="INDICATIVE")
    (verdict,) = [line for line in header_lines(rec) if line.startswith("Verdict:")]
    counts = verdict_counts(rec)
    assert sum(counts.values()) == len([c for c in rec["sweep"]["cells"] if c["system"] != rec["spec"]["baseline"]
                                        and c.get("speedup")])
    assert f"of {sum(counts.values())} cells" in verdict and control not in verdict and "Why not VALID" in verdict
    view = reasons_view(rec)
    assert view is not None and view.header == ["threads", "B", "verdict", "applies to", "reason"]
    assert ["1", "1", "INDICATIVE", "milliseconds", "device canary drift 84% > 25%"] in view.rows
    shared = [r for r in view.rows if r[4] == control]
    assert len(shared) == 1 and shared[0][:4] == ["1", "8", "UNSTABLE", "every speed-up, A/A control"]
    assert view.rows[-1] == ["–", "–", "–", "–", "a reason of no cell"]  # kept, never dropped
    assert reasons_view({**rec, "invalid_reasons": [], "ms_reasons": []}) is None


def test_a_latency_records_reasons_are_one_line_per_distinct_reason() -> None:
    from bench.report.speed_reasons import grouped_reasons

    x2 = "the known-ratio control read 1.959x, outside 2 ± 3%"
    reasons = [f"{n} speed-up UNSTABLE: {x2}" for n in ("a", "b")] + ["a speed-up UNSTABLE: per-round 1.21 > 1.15",
                                                                      "free text"]
    assert grouped_reasons(reasons, ["a", "b"]) == [f"every speed-up UNSTABLE: {x2}",
                                                    "a UNSTABLE: per-round 1.21 > 1.15", "free text"]
    assert grouped_reasons(reasons[:1], ["a", "b"]) == [f"a UNSTABLE: {x2}"]
