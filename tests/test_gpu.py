"""On a real GPU (`make gpu-check` runs these; elsewhere they skip with the reason): every family trains
and decodes with every parameter on the GPU, the canary is sized into its 1–3 ms window there, and a
two-system measurement is VALID with both systems placed on the GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available() is False)"),
]

#: one system per family with its own decode path (MIST's second pass included)
FAMILIES = ("unilm", "copybert_selfcopy", "erniegen_base", "bert2bert_minilm_l6", "encoder_minilm_l6",
            "mist_minilm_l6")


@pytest.fixture(scope="module")
def task():
    from toy_training import qg_examples

    from bench.api.types import TaskInfo

    return TaskInfo("squad_qg", qg_examples(64, 0), qg_examples(8, 1), 464, 48)


@pytest.mark.parametrize("name", FAMILIES)
def test_each_family_trains_and_decodes_on_the_gpu(name: str, task, tmp_path: Path) -> None:
    from bench.env.device import fit_on, resolve_device
    from systems import build

    device = resolve_device("cuda")
    system = build(name, "smoke", {"steps": 4})
    fit_on(system, task, tmp_path, device)
    for module in system.models():
        assert {p.device.type for p in module.parameters()} == {"cuda"}
    examples = list(task.dev[:4])
    batched = system.decode(examples)
    one = system.decode_one(examples[0])
    assert len(batched) == 4 and isinstance(one, str)


def test_cpu_stays_on_the_cpu_on_a_gpu_machine(task, tmp_path: Path) -> None:
    from bench.env.device import fit_on, resolve_device
    from systems import build

    system = build("encoder_minilm_l6", "smoke", {"steps": 2})
    fit_on(system, task, tmp_path, resolve_device("cpu"))
    assert {p.device.type for m in system.models() for p in m.parameters()} == {"cpu"}


def test_the_device_canary_is_sized_into_its_window() -> None:
    from bench.latency.canary import default_canaries

    canaries = default_canaries("cuda")
    sizing = canaries.device.sizing
    assert sizing.size >= 256
    assert 1.0 <= sizing.ms <= 3.0 or canaries.notes, sizing.to_json()


def test_a_gpu_measurement_of_two_placed_systems_is_valid(task, tmp_path: Path) -> None:
    from bench.env.device import fit_on, resolve_device
    from bench.latency import measure
    from systems import build

    device = resolve_device("cuda")
    systems = {}
    for name in ("encoder_minilm_l6", "mist_minilm_l6"):
        systems[name] = build(name, "smoke", {"steps": 2})
        fit_on(systems[name], task, tmp_path / name, device)
    examples = list(task.dev) * 8
    report = measure(systems, examples, baseline="encoder_minilm_l6", n=32, rounds=4, min_items=32,
                     device=device, warmup_s=1.0, min_duration_s=2.0)
    assert report.settings.placement.startswith("cuda")
    assert report.invalid_reasons == [], report.invalid_reasons


def test_the_sweeps_gpu_peak_is_reset_per_system() -> None:
    """#48: one system's peak cannot hide another's — a small pass after a large one reports the small peak."""
    from bench.latency.memory import cuda_peak

    def alloc(n_mb: int):
        return lambda: torch.empty(n_mb * 2**20, dtype=torch.uint8, device="cuda").fill_(1)

    big = cuda_peak(alloc(256))
    small = cuda_peak(alloc(16))
    assert big.peak_bytes - big.base_bytes >= 256 * 2**20
    assert 16 * 2**20 <= small.peak_bytes - small.base_bytes < 256 * 2**20


def test_nvml_energy_is_read_over_a_window() -> None:
    """#48: NVML's total-energy counter opens on this GPU and a busy window costs more than its idle part."""
    from bench.latency.energy import EnergyUnreadable, measure_energy, open_counter

    try:
        counter = open_counter("cuda")
    except EnergyUnreadable as err:
        pytest.skip(f"NVML unreadable here: {err}")
    x = torch.randn(4096, 4096, device="cuda")

    def work() -> int:
        for _ in range(20):
            x @ x
        torch.cuda.synchronize()
        return 20

    res = measure_energy(work, counter, min_window_s=2.0, idle_s=0.5)
    assert res["status"] == "measured" and res["covers"]
    assert res["joules"] > 0 and res["sentences"] >= 20
