"""The "vs CT2" column of MIST Tables 1-3: each row's speed-up over fairseq_transformer_ct2 in the same latency
record, derived from the per-item times (or, without them, the labelled ratio of the two speed-ups); "—" and
the `bench latency` command that adds the system where the record lacks it; the header names the compute type
the record says the system ran; hostile record strings stay text; the deep check catches an edited value."""

from __future__ import annotations

import copy
import re

import pytest
from test_latency_table import EXAMPLES, Sleepy, _as_valid, _record, timed
from test_text_escape import HOSTILE, _assert_inert, _md_html, _page

from bench.latency import measure
from bench.latency.record import LatencySpec, build_record
from bench.latency.rederive import rederive_latency
from bench.latency.stats import paired_bootstrap_speedup
from bench.report import render_table
from bench.report.markdown import parse_tables

CT2 = "fairseq_transformer_ct2"


def _ct2_info(compute_type_used: object = "int8", beam: object = 4) -> dict:
    """What ``describe()`` of the CTranslate2 system puts in a record (systems/fairseq_ct2/system.py)."""
    return {"name": CT2, "family": "AR", "iterations": "n", "backbone": "random, decoded by CTranslate2",
            "budget": "paper", "config": {"beam": beam, "ctranslate2": {
                "decodes_model_of": "fairseq_transformer", "compute_type": "default",
                "compute_type_used": compute_type_used}}}


def _ct2_record(info: dict | None = None) -> dict:
    base = "fairseq_transformer"
    rep = timed(lambda: measure(
        {base: Sleepy(20000), CT2: Sleepy(8000), "fairseq_nat": Sleepy(2000), "encoder_bert": Sleepy(4000)},
        EXAMPLES, baseline=base, n=6, rounds=2, warmup_items=1, warmup_s=0.0, min_items=1, min_duration_s=0.0,
        length_forced=True, progress=False, bootstrap_resamples=200,
    ))
    spec = LatencySpec(task="squad_qg", split="test", budget="paper",
                       systems=(base, CT2, "fairseq_nat", "encoder_bert"), baseline=base, n=6, rounds=2,
                       length_forced=True, weights="random", stand_ins={"mist_bert": "encoder_bert"})
    rec = build_record(spec, rep, {CT2: info or _ct2_info()}, {"mist_bert": "same shape"}, {"git_sha": "abc"},
                       created="2026-01-02T03:04:05+00:00")
    return _as_valid(rec, True)


@pytest.fixture(scope="module")
def record() -> dict:
    return _ct2_record()


def _table(rec: dict) -> tuple[list[str], dict[str, list[str]], str]:
    md = render_table("mist", "1", [], None, [rec])
    ((header, rows),) = [t for t in parse_tables(md) if "Model" in t[0]]
    return header, {r[1]: r for r in rows}, md


def _independent(rec: dict, system: str) -> str:
    """The paired bootstrap of the CTranslate2 system's per-item medians over ``system``'s (each item's median over
    the record's rounds, from its trials), with the record's seed; exact timings on the fake clock: VALID."""
    import numpy as np

    t = rec["trials"]
    units, rounds = rec["design"]["units"], rec["design"]["rounds"]

    def medians(arm: str) -> list[float]:
        m = np.full((rounds, units), np.nan)
        for r, u, a, w in zip(t["round"], t["unit"], t["arm"], t["wall_ns"], strict=True):
            if a == arm:
                m[r, u] = w
        return list(np.median(m, axis=0))

    n_resamples = rec["systems"]["fairseq_nat"]["speedup"]["n_resamples"]
    sp = paired_bootstrap_speedup(medians(CT2), medians(system), n_resamples, rec["settings"]["seed"])
    return f"{sp.mean:.2f}× [{sp.mean_ci95[0]:.2f}–{sp.mean_ci95[1]:.2f}] VALID"


def test_the_column_is_the_paired_bootstrap_over_the_ct2_items(record: dict) -> None:
    header, rows, md = _table(record)
    at = header.index("vs CT2 int8")
    assert header[at - 1] == "Speed" and header[-1] == "Status"
    assert rows["NAT(Gu et al. 2017) ‡"][at] == _independent(record, "fairseq_nat")
    assert rows["MIST(BERT) †"][at] == _independent(record, "encoder_bert")  # a stand-in reads its timed system
    assert rows["Transformer(Vaswani et al. 2017) ‡"][at] == _independent(record, "fairseq_transformer")
    assert rows["CMLM(Ghazvininejad et al. 2019) ‡"][at] == "not measured"
    ct2 = rows["Transformer decoded by CTranslate2 (harness reference, not in the paper)"]
    sp = record["systems"][CT2]["speedup"]
    assert ct2[2] == CT2 and ct2[at] == "1.00× (reference)"
    assert ct2[at - 1] == f"– / {sp['mean']:.2f}× [{sp['mean_ci95'][0]:.2f}–{sp['mean_ci95'][1]:.2f}] VALID"
    assert "int8, beam 4" in ct2[-1]
    assert len({len(r) for r in rows.values()}) == 1  # every row, the harness's too, has the extra cell
    assert "paired-bootstrap 95% CI from both systems' per-item times" in md


def test_without_per_item_times_the_ratio_of_speed_ups_says_so(record: dict) -> None:
    legacy = _schema1(record)
    header, rows, md = _table(legacy)
    at = header.index("vs CT2 int8")
    nat, ct2 = (legacy["systems"][n]["speedup"]["mean"] for n in ("fairseq_nat", CT2))
    assert rows["NAT(Gu et al. 2017) ‡"][at] == f"{nat / ct2:.2f}× (ratio of speed-ups)"
    assert "the record keeps no per-item times, so no CI" in md


def _schema1(record: dict) -> dict:
    """The record as the block design wrote it before paired trials and per-item times (schema 1)."""
    legacy = copy.deepcopy(record)
    legacy["schema"] = 1
    for key in ("design", "trials", "rounds", "aa", "reference_hashes", "work", "design_reasons"):
        legacy.pop(key, None)
    for entry in legacy["systems"].values():
        del entry["timings"]
    return legacy


def test_a_record_without_ct2_shows_a_dash_and_the_command_that_adds_it() -> None:
    rec = _as_valid(_record(), True)
    header, rows, md = _table(rec)
    at = header.index("vs CT2 int8")
    assert {r[at] for r in rows.values() if not r[1].startswith(("Copy the source", "`"))} == {"—"}
    assert "not timed" in rows["Transformer decoded by CTranslate2 (harness reference, not in the paper)"][-1]
    command = ("bench latency --task squad_qg --split test --budget paper --weights random --baseline "
               "fairseq_transformer --systems fairseq_transformer,fairseq_nat,encoder_bert,fairseq_transformer_ct2 "
               "--n 6 --rounds 2 --min-items 1 --device cpu --stand-in mist_bert=encoder_bert "
               "--set fairseq_transformer_ct2.compute_type=int8 --record --results-dir results")
    assert f"`{command}`" in md and f"did not time `{CT2}`" in md


def test_no_latency_record_still_names_the_column_and_the_command() -> None:
    header, rows, md = _table_without_records()
    assert "vs CT2 int8" in header and "the table has no latency record" in md
    assert "--set fairseq_transformer_ct2.compute_type=int8 --record" in md


def _table_without_records() -> tuple[list[str], dict[str, list[str]], str]:
    md = render_table("mist", "2", [], None, [])
    ((header, rows),) = [t for t in parse_tables(md) if "Model" in t[0]]
    return header, {r[1]: r for r in rows}, md


@pytest.mark.parametrize(("used", "header"), [("float32", "vs CT2 float32"), (None, "vs CT2 (compute type not "
                                                                                   "recorded)")])
def test_the_header_names_the_compute_type_the_record_says(record: dict, used: str | None, header: str) -> None:
    rec = copy.deepcopy(record)
    ct2 = rec["systems"][CT2]["system"]["config"]["ctranslate2"]
    ct2["compute_type_used"] = used
    heads, rows, md = _table(rec)
    assert header in heads and "vs CT2 int8" not in heads
    assert "Not int8" in md and "compute_type=int8 --record" in md


def test_hostile_record_strings_stay_text(record: dict) -> None:
    from bench.report.html import view_html
    from bench.report.views import build_table_view

    rec = copy.deepcopy(record)
    rec["systems"][CT2]["system"]["config"]["ctranslate2"]["compute_type_used"] = HOSTILE
    rec["systems"][CT2]["system"]["config"]["beam"] = HOSTILE
    md = render_table("mist", "1", [], None, [rec])
    assert not re.search(r"(?<!\\)<(script|img)|(?<!\\)\]\(javascript", md)
    rendered = _page(_md_html(md))
    _assert_inert(rendered)
    assert "<script>alert(1)</script>" in "".join(rendered.text)  # shown as data
    for line in md.splitlines():
        assert not line.startswith(("| forged", "# heading", "> quote")), line
    from bench.papers import get_table

    _assert_inert(_page(view_html(build_table_view(get_table("mist", "1"), [], None, [rec]))))


def test_the_deep_check_catches_an_edited_value_behind_the_column(record: dict) -> None:
    assert rederive_latency(record).differences == []
    slower = copy.deepcopy(record)
    slower["systems"][CT2]["timings"]["latencies_ns"][0] *= 3  # a stored median, edited: not what the trials give
    fields = {d.field for d in rederive_latency(slower).differences}
    assert {"stats.mean_ms", f"{CT2}: per-unit medians over rounds"} <= fields
    trial = copy.deepcopy(record)  # the column's evidence itself, edited: every ratio derived from it moves
    arm = trial["trials"]["arm"]
    for k in range(len(arm)):
        if arm[k] == CT2:
            trial["trials"]["wall_ns"][k] *= 3
    fields = {d.field for d in rederive_latency(trial).differences}
    assert {f"{CT2}: per-unit medians over rounds", "speedup.mean", "speedup.per_round"} <= fields
    relabelled = copy.deepcopy(record)
    relabelled["systems"][CT2]["system"]["config"]["ctranslate2"]["compute_type_used"] = "float32"
    (diff,) = rederive_latency(relabelled).differences
    assert diff.field == "system.config.ctranslate2.compute_type_used" and diff.stored == "float32"
    asked = copy.deepcopy(record)
    asked["spec"]["overrides"] = {CT2: {"compute_type": "float32"}}
    assert {d.field for d in rederive_latency(asked).differences} == {
        "system.config.ctranslate2.compute_type", "system.config.ctranslate2.compute_type_used"}
    legacy = _schema1(record)
    assert rederive_latency(legacy).differences == []
    legacy["systems"][CT2]["speedup"]["mean"] *= 1.5  # the fallback's ratio reads it: caught by the stored means
    (diff,) = rederive_latency(legacy).differences
    assert f"systems.{CT2}" in diff.where and diff.field.startswith("speedup.mean")


def test_the_rendered_column_follows_the_items_not_a_stored_number(record: dict) -> None:
    """Nothing of the column is stored: editing a speed-up leaves it as the items say (the deep check fails
    that edit); editing the items moves it."""
    header, rows, _ = _table(record)
    at = header.index("vs CT2 int8")
    edited = copy.deepcopy(record)
    edited["systems"]["fairseq_nat"]["speedup"]["mean"] *= 2
    assert _table(edited)[1]["NAT(Gu et al. 2017) ‡"][at] == rows["NAT(Gu et al. 2017) ‡"][at]
    edited["trials"]["wall_ns"] = [w * 2 if a == CT2 else w for a, w in zip(edited["trials"]["arm"],
                                                                          edited["trials"]["wall_ns"], strict=True)]
    assert _table(edited)[1]["NAT(Gu et al. 2017) ‡"][at] == _independent(edited, "fairseq_nat")
    assert _table(edited)[1]["NAT(Gu et al. 2017) ‡"][at] != rows["NAT(Gu et al. 2017) ‡"][at]


def test_the_committed_table_s_command_is_the_documented_one_which_parses() -> None:
    """A committed record that lacks the CTranslate2 row (MIST Table 2's first, XSum: timed before the paired meter)
    gives in a table's note the command docs/speed.md shows (test_readme_commands parses that one with the real command
    line)."""
    from pathlib import Path

    from test_readme_commands import doc_commands

    from bench.report.speed import SpeedSource
    from bench.report.speed_ct2 import timing_command
    from bench.store.latency import read_latency_record

    root = Path(__file__).resolve().parents[1]
    # the committed XSum record of the block design (superseded on the board by a paired one with the CTranslate2 row)
    old = read_latency_record(root / "results" / "latency" /
                              "xsum--test-available--paper--random--forced--20261126T024340--bbd5a6a1.json")
    assert CT2 not in old["spec"]["systems"]
    command = timing_command(SpeedSource("xsum", "fairseq_transformer", old))
    command = command.replace("--task xsum --split test-available", "--task squad_qg --split test")  # the docs' task
    documented = {" ".join(c.text.split()) for c in doc_commands(root / "docs" / "speed.md")}
    assert command in documented


def test_an_int8_twin_fills_the_deployed_frame_column() -> None:
    """#60: a record that timed `<system>_int8` twins beside CTranslate2 int8 gains the column "int8 vs CT2 int8":
    each row's twin over CT2, paired and judged like the Speed column; the paper's frame stays beside it."""
    base = "fairseq_transformer"
    rep = timed(lambda: measure(
        {base: Sleepy(20000), CT2: Sleepy(8000), "fairseq_nat": Sleepy(2000), "fairseq_nat_int8": Sleepy(1000),
         "encoder_bert": Sleepy(4000), "encoder_bert_int8": Sleepy(2000)},
        EXAMPLES, baseline=base, n=6, rounds=2, warmup_items=1, warmup_s=0.0, min_items=1, min_duration_s=0.0,
        length_forced=True, progress=False, bootstrap_resamples=200,
    ))
    spec = LatencySpec(task="squad_qg", split="test", budget="paper",
                       systems=(base, CT2, "fairseq_nat", "fairseq_nat_int8", "encoder_bert", "encoder_bert_int8"),
                       baseline=base, n=6, rounds=2, length_forced=True, weights="random",
                       stand_ins={"mist_bert": "encoder_bert"})
    rec = build_record(spec, rep, {CT2: _ct2_info()}, {"mist_bert": "same shape"}, {"git_sha": "abc"},
                       created="2026-01-02T03:04:05+00:00")
    header, rows, md = _table(rec)
    at = header.index("int8 vs CT2 int8")
    assert header[at - 1] == "vs CT2 int8"
    nat = rows["NAT(Gu et al. 2017) ‡"][at]
    assert nat.startswith(_independent(rec, "fairseq_nat_int8")) and "`fairseq_nat_int8`" in nat
    assert "`encoder_bert_int8`" in rows["MIST(BERT) †"][at]  # the stand-in's twin
    assert rows["CMLM(Ghazvininejad et al. 2019) ‡"][at] == "—"
    ct2 = rows["Transformer decoded by CTranslate2 (harness reference, not in the paper)"]
    assert ct2[at] == "1.00× (reference)" and len({len(r) for r in rows.values()}) == 1
    assert "the deployed frame on both sides" in md
