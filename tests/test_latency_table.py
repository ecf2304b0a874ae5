"""Latency records (results/latency/) and the speed view of MIST Tables 1-3.

Records are synthetic or come from a real but trivial measurement; the paper-size systems are
covered by a tiny-shape ``weights=random`` build (NAR here, fairseq in test_fairseq_nat.py).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from fake_systems import DecodeOnly

from bench.api.types import Example
from bench.latency import measure
from bench.latency.prepare import parse_stand_ins, parse_system_overrides, prepare
from bench.latency.record import LatencySpec, build_record
from bench.papers import get_table
from bench.report import render_all, render_table
from bench.report.speed import baseline_system
from bench.store.latency import LatencyRecordError, load_latency_records, validate_latency_record
from bench.store.latency import write_latency_record as write_record

EXAMPLES = [Example(f"e{i}", f"source text number {i} " * 3, "what is it ?") for i in range(12)]


#: the meter's clock in these tests: it moves only when a stand-in system "works", so every record is exact
CLOCK = [0]


class Sleepy(DecodeOnly):
    """A deterministic stand-in system: ``loops`` × 1 µs of work per item on the fake clock (plus a little per
    target token, so items differ)."""

    supports_forced_length = True

    def __init__(self, loops: int) -> None:
        self.loops = loops

    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        CLOCK[0] += self.loops * 1000 + 10_000 * (forced_length or 1)
        return "x " * (forced_length or 1)


def timed(build):  # type: ignore[no-untyped-def]
    """Run ``build()`` (a measurement) on the fake clock with steady canaries."""
    from unittest import mock

    from test_latency import stable_canaries

    import bench.latency.meter as meter
    import bench.latency.trials as trials

    now = lambda: CLOCK[0]  # noqa: E731
    with mock.patch.object(trials, "perf_counter_ns", now), mock.patch.object(trials, "process_time_ns", now), \
            mock.patch.object(meter, "default_canaries", stable_canaries):
        return build()


def _record(created: str = "2026-01-02T03:04:05+00:00", baseline: str = "fairseq_transformer") -> dict:
    rep = timed(lambda: measure(
        {baseline: Sleepy(20000), "fairseq_nat": Sleepy(2000), "encoder_bert": Sleepy(4000)}, EXAMPLES,
        baseline=baseline, n=6, rounds=2, warmup_items=1, warmup_s=0.0, min_items=1, min_duration_s=0.0,
        length_forced=True, progress=False, bootstrap_resamples=200,
    ))
    spec = LatencySpec(task="squad_qg", split="test", budget="paper",
                       systems=(baseline, "fairseq_nat", "encoder_bert"), baseline=baseline, n=6, rounds=2,
                       length_forced=True, weights="random", overrides={"fairseq_nat": {"weights": "random"}},
                       stand_ins={"mist_bert": "encoder_bert"})
    return build_record(spec, rep, {}, {"mist_bert": "same shape"}, {"git_sha": "abc"}, created=created)


@pytest.fixture(scope="module")
def record() -> dict:
    return _record()


def test_record_round_trip_and_schema(record: dict, tmp_path: Path) -> None:
    path = write_record(tmp_path, record)
    assert path.parent == tmp_path / "latency" and path.name == record["latency_id"] + ".json"
    assert record["latency_id"].startswith("squad_qg--test--paper--random--forced--20260102T030405--")
    assert not list(path.parent.glob(".*.tmp"))  # atomic: no temp file left behind
    (loaded,) = load_latency_records(tmp_path)
    assert loaded == json.loads(json.dumps(record))
    assert loaded["spec"]["stand_ins"] == {"mist_bert": "encoder_bert"}
    assert loaded["stand_ins"]["mist_bert"] == {"timed_as": "encoder_bert", "basis": "same shape"}
    nat = loaded["systems"]["fairseq_nat"]
    # the record's shape, not the timing: a stall of a few ms on a shared VM swamps these sub-ms stand-ins
    assert nat["speedup"]["mean"] > 0 and nat["speedup"]["mean_ci95"][0] <= nat["speedup"]["mean"]
    assert loaded["systems"]["fairseq_transformer"]["speedup"] is None  # the baseline: no ratio to itself
    assert "mode:length-forced" in loaded["signature"] and loaded["device"]
    broken = copy.deepcopy(record)
    broken["systems"]["fairseq_nat"]["speedup"]["mean_ci95"] = [1.0]
    with pytest.raises(LatencyRecordError, match="mean_ci95"):
        validate_latency_record(broken, "x.json")
    broken = copy.deepcopy(record)
    broken["stand_ins"]["mist_bert"]["timed_as"] = "nobody"
    with pytest.raises(LatencyRecordError, match="stand_ins"):
        validate_latency_record(broken, "x.json")


def _as_valid(record: dict, valid: bool) -> dict:
    """The measured record (exact on the fake clock: VALID) as it is, or as if its design had broken: every
    verdict INVALID with a stated reason (what the meter writes when, say, the environment changed mid-run)."""
    out = copy.deepcopy(record)
    if valid:
        assert out["verdict"] == "VALID", out["invalid_reasons"]
        return out
    why = "environment changed during timing: torch_threads: 1 -> 2 (test)"
    out["valid"], out["verdict"], out["design_reasons"] = False, "INVALID", [why]
    out["invalid_reasons"] = [why]
    for entry in out["systems"].values():
        entry["valid"], entry["verdict"], entry["invalid_reasons"] = False, "INVALID", [why]
        if entry.get("speedup"):
            entry["speedup"].update(verdict="INVALID", reasons=[why])
    return out


def test_speed_view_marks_an_invalid_measurement(record: dict) -> None:
    rows = {
        line.split(" | ")[1]: line
        for line in render_table("mist", "1", [], None, [_as_valid(record, False)]).splitlines()
        if line.startswith("| ")
    }
    nat = record["systems"]["fairseq_nat"]["speedup"]
    lo, hi = nat["mean_ci95"]
    assert f"| 8.3× / {nat['mean']:.2f}× [{lo:.2f}–{hi:.2f}] INVALID |" in rows["NAT(Gu et al. 2017) ‡"]


def test_speed_view_table1(record: dict) -> None:
    record = _as_valid(record, True)
    table = get_table("mist", "1")
    assert baseline_system(table) == "fairseq_transformer"
    md = render_table("mist", "1", [], None, [record])
    assert md == render_table("mist", "1", [], None, [record])  # deterministic
    rows = {line.split(" | ")[1]: line for line in md.splitlines() if line.startswith("| ")}
    nat = record["systems"]["fairseq_nat"]["speedup"]
    lo, hi = nat["mean_ci95"]
    assert f"| 8.3× / {nat['mean']:.2f}× [{lo:.2f}–{hi:.2f}] VALID |" in rows["NAT(Gu et al. 2017) ‡"]
    assert "| 1.0× / 1.00× (baseline) |" in rows["Transformer(Vaswani et al. 2017) ‡"]
    assert "(timed as `encoder_bert`)" in rows["MIST(BERT) †"]
    assert "| 10 | 1.9× / not measured |" in rows["CMLM(Ghazvininejad et al. 2019) ‡"]
    assert "| N/A / not measured |" in rows["MASS(Song et al. 2019) ‡"]
    speed_line = next(line for line in md.splitlines() if line.startswith("- Speed:"))
    assert record["device"] in speed_line and "length-forced, random weights, batch 1" in speed_line
    assert record["latency_id"] in speed_line and "`mist_bert` as `encoder_bert`" in speed_line


def test_speed_view_picks_newest_matching_record(record: dict) -> None:
    newer = _record(created="2026-02-01T00:00:00+00:00")
    other_base = copy.deepcopy(newer)
    other_base["baseline"] = "fairseq_nat"
    other_base["created"] = "2027-01-01T00:00:00+00:00"
    other_task = copy.deepcopy(newer)
    other_task["spec"]["task"] = "quora"
    other_task["created"] = "2027-01-01T00:00:00+00:00"
    md = render_table("mist", "1", [], None, [record, newer, other_base, other_task])
    assert newer["latency_id"] in md and record["latency_id"] not in md
    assert other_task["latency_id"] in render_table("mist", "3", [], None, [other_task])
    assert "budget `cpu`" not in md and newer["latency_id"] not in render_table("mist", "1", [], "cpu", [newer])


def test_no_latency_record_says_so() -> None:
    md = render_table("mist", "2", [], None, [])
    assert "Speed: published only; no latency record for task `xsum` with baseline `fairseq_transformer`" in md
    assert "not measured" not in md  # cells keep the published value only


def test_render_all_reads_results_latency(record: dict, tmp_path: Path) -> None:
    write_record(tmp_path / "results", record)
    render_all(tmp_path / "results", tmp_path / "reports")
    assert record["latency_id"] in (tmp_path / "reports" / "mist-table1.md").read_text(encoding="utf-8")
    assert render_all(tmp_path / "results", tmp_path / "reports", check=True) == []


def test_parse_overrides_and_stand_ins() -> None:
    names = ["fairseq_transformer", "encoder_bert"]
    ov = parse_system_overrides(["weights=random", "encoder_bert.tiny={\"hidden\": 32}", "fairseq_transformer.beam=2"],
                                names)
    assert ov == {"fairseq_transformer": {"weights": "random", "beam": 2},
                  "encoder_bert": {"weights": "random", "tiny": {"hidden": 32}}}
    with pytest.raises(ValueError, match="not among the timed systems"):
        parse_system_overrides(["mist_bert.weights=random"], names)
    with pytest.raises(ValueError, match="key=value"):
        parse_system_overrides(["weights"], names)
    assert parse_stand_ins(["mist_bert=encoder_bert"], names) == {"mist_bert": "encoder_bert"}
    with pytest.raises(ValueError, match="timed itself"):
        parse_stand_ins(["encoder_bert=fairseq_transformer"], names)
    with pytest.raises(ValueError, match="not among the timed systems"):
        parse_stand_ins(["mist_bert=encoder_unilm"], names)


def test_nar_weights_random_presets() -> None:
    from systems.nar.presets import SHAPES, apply_overrides, preset

    bert = apply_overrides(preset("mist_bert", "paper"), {"weights": "random"})
    assert bert.tiny == SHAPES["bert-base"] and bert.random_init and bert.steps == 0 and bert.shape == "bert-base"
    assert apply_overrides(preset("encoder_unilm", "paper"), {"weights": "random"}).tiny == SHAPES["bert-base"]
    assert apply_overrides(preset("encoder_random", "paper"), {"weights": "random"}).tiny == SHAPES["bert-base"]
    assert apply_overrides(preset("mist_minilm", "paper"), {"weights": "random"}).tiny == SHAPES["minilm-l12-h384"]
    small = apply_overrides(preset("encoder_bert", "paper"), {"weights": "random", "shape": "minilm-l6"})
    assert small.tiny == SHAPES["minilm-l6"]
    with pytest.raises(ValueError, match="weights"):
        apply_overrides(preset("encoder_bert", "paper"), {"weights": "bogus"})
    with pytest.raises(ValueError, match="shape"):
        apply_overrides(preset("encoder_bert", "paper"), {"weights": "random", "shape": "huge"})
    with pytest.raises(ValueError, match="trains nothing"):
        apply_overrides(preset("encoder_bert", "paper"), {"weights": "random", "steps": 10})


TINY = {"hidden": 32, "layers": 2, "heads": 2, "intermediate": 64}


def test_prepare_builds_untrained_and_checks_stand_ins(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    names = ["encoder_bert", "null"]
    ov = parse_system_overrides(["encoder_bert.weights=random", f"encoder_bert.tiny={json.dumps(TINY)}"], names)
    prep = prepare(names, "smoke", ov, "squad_qg", tmp_path, {"mist_bert": "encoder_bert"}, say=lambda _: None)
    bert = prep.systems["encoder_bert"]
    ex = EXAMPLES[0]
    assert isinstance(bert.decode_one(ex, forced_length=5), str) and bert.last_iterations == 1
    assert prep.stand_ins == {"mist_bert": "encoder_bert"} and "same family (NAR)" in prep.stand_in_basis["mist_bert"]
    assert prep.infos["encoder_bert"].config["weights"] == "random"
    # paper shapes by default: a 12x384 MiniLM timing cannot stand for the 12x768 MIST(BERT) row
    with pytest.raises(ValueError, match="do not decode the same way.*tiny"):
        prepare(["encoder_minilm"], "smoke", {"encoder_minilm": {"weights": "random"}}, "squad_qg",
                tmp_path / "b", {"mist_bert": "encoder_minilm"}, say=lambda _: None)
    with pytest.raises(ValueError, match="trains nothing"):
        prepare(["encoder_bert"], "smoke", {"encoder_bert": {}}, "squad_qg", tmp_path / "c", say=lambda _: None)


def _on_gpu(record: dict, created: str, valid: bool = True) -> dict:
    """The measured record as if it had been timed on an H200 (what `bench latency` on a GPU writes)."""
    out = _as_valid(record, valid)
    out["created"] = created
    out["latency_id"] = out["latency_id"].replace("20260102T030405", created[:10].replace("-", "") + "T000000")
    out["settings"] = dict(out["settings"], device="cuda", sync="cuda")
    out["device"] = "NVIDIA H200"
    state = {"source": "nvml", "name": "NVIDIA H200", "driver": "580.95.05", "sm_mhz": 1980, "mem_mhz": 3201,
             "temperature_c": 33}
    out["fingerprint_before"] = dict(out["fingerprint_before"], gpu="NVIDIA H200", gpu_state=state)
    out["canary"] = dict(out["canary"], warmup={"runs": 1300, "gpu_state_after": dict(state, sm_mhz=1980)})
    return out


def test_speed_view_prefers_a_valid_gpu_record_and_names_the_gpu(record: dict) -> None:
    cpu_newer = _as_valid(_record(created="2026-03-01T00:00:00+00:00"), True)
    gpu = _on_gpu(record, "2026-02-01T00:00:00+00:00")
    md = render_table("mist", "1", [], None, [cpu_newer, gpu])
    assert gpu["latency_id"] in md and cpu_newer["latency_id"] not in md
    speed_line = next(line for line in md.splitlines() if line.startswith("- Speed:"))
    gpu_text = "measured here on GPU NVIDIA H200 (driver 580.95.05, SM 1980 MHz, mem 3201 MHz, 33 °C at start; "
    assert gpu_text in speed_line
    assert "SM 1980 MHz after warm-up; host " in speed_line and "speed-ups VALID" in speed_line
    # an INVALID GPU record is not preferred: the newest record is used, as without GPU records
    bad_gpu = _on_gpu(record, "2026-02-01T00:00:00+00:00", valid=False)
    md = render_table("mist", "1", [], None, [cpu_newer, bad_gpu])
    assert cpu_newer["latency_id"] in md and "on GPU" not in md
    # CPU records stay usable, and name the CPU as before
    md = render_table("mist", "1", [], None, [cpu_newer])
    assert f"measured here on {cpu_newer['device']}" in md


def test_speed_view_says_when_gpu_state_is_unreadable(record: dict) -> None:
    gpu = _on_gpu(record, "2026-02-01T00:00:00+00:00")
    gpu["fingerprint_before"]["gpu_state"] = {"source": "unreadable", "reason": "nvidia-ml-py is not installed"}
    md = render_table("mist", "1", [], None, [gpu])
    assert "on GPU NVIDIA H200 (driver and clocks unreadable; host " in md


def test_committed_records_without_the_new_canary_fields_still_load_and_render() -> None:
    root = Path(__file__).resolve().parents[1] / "results"
    records = load_latency_records(root)
    legacy = [r for r in records if r["schema"] == 1]  # the block design's records, before paired trials
    assert legacy and all("host" not in r["canary"] and "gpu_state" not in r["fingerprint_before"] for r in legacy)
    md = render_table("mist", "1", [], None, legacy)
    squad = next(r for r in legacy if r["spec"]["task"] == "squad_qg")
    assert f"measured here on {squad['device']}" in md and squad["latency_id"] in md
    newest = max((r for r in records if r["spec"]["task"] == "squad_qg"), key=lambda r: r["created"])
    assert newest["latency_id"] in render_table("mist", "1", [], None, records)  # a paired record supersedes it
