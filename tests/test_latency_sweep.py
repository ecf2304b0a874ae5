"""The batch-size sweep (#48) on fake systems with exact costs: throughput, speed-ups, crossovers, agreement,
per-item forced lengths, memory and energy with fake counters. No real timing: speed targets are benchmarks."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_systems import DecodeOnly
from test_latency import stable_canaries

from bench.api.types import Example
from bench.latency import energy, memory, sweep, trials
from bench.latency.throughput import crossover, throughput, track


class Clock:
    def __init__(self) -> None:
        self.ns = 1

    def __call__(self) -> int:
        return self.ns


class Costed(DecodeOnly):
    """Costs ``per_batch + per_item × B`` ms on the fake clock; echoes each item's forced length."""

    supports_forced_length = True
    batched_decode = True

    def __init__(self, clock: Clock, per_batch: float, per_item: float, flip_in_batch: bool = False) -> None:
        self.clock, self.per_batch, self.per_item, self.flip = clock, per_batch, per_item, flip_in_batch
        self.forced_seen: list[list[int] | None] = []

    def _cost(self, b: int) -> None:
        self.clock.ns += int((self.per_batch + self.per_item * b) * 1e6)

    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        self._cost(1)
        return example.source if forced_length is None else " ".join(["w"] * forced_length)

    def decode_batch(self, examples, forced_lengths=None):  # type: ignore[no-untyped-def]
        self._cost(len(examples))
        self.forced_seen.append(None if forced_lengths is None else list(forced_lengths))
        n = forced_lengths or [None] * len(examples)
        out = [ex.source if k is None else " ".join(["w"] * k) for ex, k in zip(examples, n, strict=True)]
        return [o + " x" for o in out] if self.flip else out


def items(k: int = 40) -> list[Example]:
    return [Example(f"e{i}", " ".join(["s"] * (1 + i % 9)), " ".join(["t"] * (2 + i % 5))) for i in range(k)]


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(trials, "perf_counter_ns", fake)
    monkeypatch.setattr(trials, "process_time_ns", fake)
    monkeypatch.setattr(memory, "peak_memory", lambda run, kind: memory.cpu_peak(run, read=lambda: 1 << 20))
    return fake


def run(clock: Clock, **kw):  # type: ignore[no-untyped-def]
    systems = {"ar": Costed(clock, 1.0, 4.0), "nar": Costed(clock, 6.0, 0.5)}
    systems.update(kw.pop("extra", {}))
    args = {"min_items": 16, "min_batches": 4, "rounds": 2, "canaries": stable_canaries, "bootstrap_resamples": 200}
    return systems, sweep.sweep(systems, items(), "ar", [1, 4, 16], [1], **{**args, **kw})


def test_throughput_speedup_and_crossover_follow_the_costs(clock: Clock) -> None:
    _, out = run(clock)
    cell = {(c["system"], c["batch_size"]): c for c in out["cells"]}
    # B=1: ar 5 ms, nar 6.5 ms per item; B=16: ar 65 ms, nar 14 ms per batch
    assert cell["ar", 1]["sentences_per_s"] == pytest.approx(200.0)
    assert cell["nar", 16]["sentences_per_s"] == pytest.approx(16 / 0.014)
    assert cell["nar", 16]["speedup"]["median"] == pytest.approx(65 / 14)
    assert cell["nar", 1]["speedup"]["median"] == pytest.approx(5 / 6.5)
    assert cell["ar", 1]["speedup"] is None
    # the speed-up is the ratio of the stored per-batch medians (#46's relation), recomputable from batch_ns
    import numpy as np

    ratio = np.median(cell["ar", 4]["batch_ns"]) / np.median(cell["nar", 4]["batch_ns"])
    assert cell["nar", 4]["speedup"]["median"] == pytest.approx(ratio)
    assert out["crossover"]["1"]["nar"] == 1  # the baseline is already faster at B=1 here
    assert out["agreement"]["nar"]["rate"] == 1.0 and out["valid"]
    assert cell["nar", 16]["track"].startswith("latency") and cell["nar", 16]["energy"]["status"].startswith("not")
    assert out["models"]["nar"] == {"parameters": 0, "parameter_bytes": 0,
                                    "checkpoint_bytes": "no checkpoint on disk (weights built in memory)",
                                    "batched_decode": True}


def test_forced_lengths_are_per_item_and_the_same_batches_for_every_system(clock: Clock) -> None:
    systems, out = run(clock, length_forced=True, bucket="sorted", aa=None)  # no A/A arm: equal call logs
    ex = items()
    plan = sweep.batches_for(ex, 4, 4, 0, "sorted")
    assert systems["ar"].forced_seen[1:5] == [[len(ex[i].target.split()) for i in b] for b in plan]
    assert systems["ar"].forced_seen == systems["nar"].forced_seen
    lengths = [len(ex[i].source.split()) for b in plan for i in b]
    assert lengths == sorted(lengths)
    assert out["bucket"] == "sorted" and out["agreement"]["nar"]["rate"] == 1.0


def test_an_output_that_depends_on_its_batch_is_reported(clock: Clock) -> None:
    _, out = run(clock, extra={"bad": Costed(clock, 1.0, 1.0, flip_in_batch=True)})
    assert out["agreement"]["bad"]["rate"] == 0.0
    assert out["agreement"]["bad"]["first_difference"]["batched"].endswith(" x")
    # named beside the speed-ups (its throughput is of other outputs), which stay judged by their pairing
    assert any("bad: batched outputs differ" in r for r in out["agreement_reasons"])


def test_each_cell_is_a_paired_timing_with_its_own_a_a_control_and_verdict(clock: Clock) -> None:
    _, out = run(clock)
    assert out["verdict"] == "VALID" and out["valid"] and out["design"] == "paired"
    groups = {(g["threads"], g["batch_size"]): g for g in out["groups"]}
    assert set(groups) == {(1, 1), (1, 4), (1, 16)}
    g = groups[1, 4]
    assert g["design"]["arms"] == ["ar", "nar", "aa:nar"] and g["aa"]["system"] == "nar"  # 8 ms vs 17 ms a batch
    assert g["aa"]["mean"] == pytest.approx(1.0) and g["aa"]["verdict"] == "VALID"
    units, rounds = g["design"]["units"], g["design"]["rounds"]
    assert len(g["trials"]["wall_ns"]) == units * rounds * 3 and rounds == 2
    cell = next(c for c in out["cells"] if c["system"] == "nar" and c["batch_size"] == 4)
    assert cell["verdict"] == "VALID" and cell["speedup"]["per_round"] == pytest.approx([17 / 8] * 2)


def test_crossover_and_track_rules() -> None:
    assert crossover({1: 10, 8: 50, 32: 300}, {1: 40, 8: 120, 32: 200}) == 32
    assert crossover({1: 10, 8: 50}, {1: 40, 8: 120}) == "none up to B_max=8"
    assert track(1, 2, "cpu").startswith("latency") and track(2, 2, "cpu").startswith("throughput")
    assert track(2, 8, "cpu").startswith("partial") and track(1, 2, "cuda") == "gpu"
    tp = throughput([10_000_000, 30_000_000], [4, 4], [20, 20], 4, 200)
    low, high = tp.sentences_per_s_ci95
    assert tp.sentences_per_s == pytest.approx(200.0) and low <= 200.0 <= high


def _rapl(root: Path, value: int, top: int = 1000) -> None:
    d = root / "intel-rapl:0"
    d.mkdir(parents=True, exist_ok=True)
    (d / "energy_uj").write_text(str(value))
    (d / "max_energy_range_uj").write_text(str(top))


def test_rapl_energy_subtracts_idle_and_survives_wraparound(tmp_path: Path) -> None:
    _rapl(tmp_path, 900, top=999_999)
    counter = energy.Rapl(tmp_path)
    now = [0.0]
    readings = iter([900, 100_900, 100_000])  # idle: 0.1 J in 1 s; the window wraps: 100_000 - 100_900 + 1e6 uJ

    def tick() -> None:
        now[0] += 1.0

    counter.read = lambda: [next(readings)]  # type: ignore[method-assign]

    def decode() -> int:
        now[0] += 5.0
        return 10

    out = energy.measure_energy(decode, counter, min_window_s=10.0, clock=lambda: now[0], sleep=tick)
    assert out["repeats"] == 2 and out["sentences"] == 20 and out["window_s"] == 10.0
    assert out["joules"] == pytest.approx(0.9991) and out["idle_w"] == pytest.approx(0.1)
    assert out["j_per_sentence"] == pytest.approx((0.9991 - 1.0) / 20)
    assert "package" in out["covers"]


def test_unreadable_counters_say_why(tmp_path: Path) -> None:
    with pytest.raises(energy.EnergyUnreadable, match="no RAPL package domain"):
        energy.Rapl(tmp_path)
    _rapl(tmp_path, 5)
    (tmp_path / "intel-rapl:0" / "energy_uj").chmod(0)
    if not (tmp_path / "intel-rapl:0" / "energy_uj").exists() or __import__("os").geteuid() != 0:
        with pytest.raises(energy.EnergyUnreadable, match="PermissionError"):
            energy.Rapl(tmp_path)
    assert energy.measure_energy(lambda: 1, "no RAPL package domain under /x")["status"] == (
        "unreadable: no RAPL package domain under /x")


def test_nvml_counter_in_millijoules() -> None:
    class FakeNvml:
        total = 1_000_000

        def nvmlInit(self) -> None: ...

        def nvmlDeviceGetHandleByIndex(self, i: int) -> str:
            return f"gpu{i}"

        def nvmlDeviceGetTotalEnergyConsumption(self, handle: str) -> int:
            self.total += 50_000  # 50 J per read
            return self.total

    gpu = energy.open_counter("cuda:0", nvml=FakeNvml())
    assert gpu.joules([1_000_000], [1_250_000]) == 250.0 and "GPU board" in gpu.covers

    class Old(FakeNvml):
        def nvmlDeviceGetTotalEnergyConsumption(self, handle: str) -> int:
            raise RuntimeError("Not Supported")

    with pytest.raises(energy.EnergyUnreadable, match="Not Supported"):
        energy.Nvml(0, Old())


def test_cpu_peak_is_above_the_rss_before_the_pass() -> None:
    values = iter([100] + [100, 250, 180] + [150] * 1000)
    peak = memory.cpu_peak(lambda: __import__("time").sleep(0.02), read=lambda: next(values))
    assert peak.base_bytes == 100 and peak.peak_bytes == 250 and peak.added_bytes == 150


def test_min_batches_sets_the_batches_at_a_large_b_and_agreement_reuses_b1(clock: Clock) -> None:
    """--min-batches 2: B=16 times max(2, 16/16) = 2 batches; the batched-vs-single check compares the items
    B = 1 timed (a prefix of every B's stream) instead of decoding every batched item again one by one."""
    systems, out = run(clock, min_batches=2)
    cells = {(c["system"], c["batch_size"]): c for c in out["cells"]}
    assert len(cells["ar", 16]["batch_ns"]) == 2 and len(cells["ar", 1]["batch_ns"]) == 16
    assert out["min_batches"] == 2
    assert out["agreement"]["nar"]["compared"] == 2 * 16  # B=4 and B=16 each against B=1's 16 items
    with pytest.raises(ValueError, match="--min-batches 0"):
        run(clock, min_batches=0)


def test_a_system_whose_weights_are_outside_torch_is_sized_by_its_own_count(tmp_path: Path) -> None:
    class Outside(DecodeOnly):  # models() is empty, as for CTranslate2
        def decode_one(self, example: Example, forced_length: int | None = None) -> str:
            return example.source

        def weights_footprint(self):  # type: ignore[no-untyped-def]
            return {"parameters": 1000, "parameter_bytes": 1000, "parameter_bytes_note": "parameters x 1 byte"}

    (tmp_path / "model.bin").write_bytes(b"x" * 64)
    size = memory.model_size(Outside(), tmp_path)
    assert size == {"parameters": 1000, "parameter_bytes": 1000, "checkpoint_bytes": 64,
                    "parameter_bytes_note": "parameters x 1 byte"}
