"""Placement is the harness's (#39): every system trains, decodes and decodes one example on the device
it was placed on, with no tensor left on another — checked on CPU-only CI with a second, CPU-backed
device (:mod:`device_check`), so a family that builds an input on the host fails here, not on a GPU."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import torch
from device_check import DEVICE, OnDevice, device_check
from toy_training import qg_examples

from bench.api.system import System, SystemInfo
from bench.api.types import Example, TaskInfo
from bench.env.device import DeviceError, fit_on, resolve_device
from systems import SYSTEMS, build

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def task() -> TaskInfo:
    return TaskInfo("squad_qg", qg_examples(64, 0), qg_examples(8, 1), 464, 48)


class _Tiny(System):
    """A model-holding system for the test of the check itself: ``host_input`` builds ids on the host."""

    def __init__(self, host_input: bool) -> None:
        self.host_input = host_input
        self.model = torch.nn.Sequential(torch.nn.Embedding(50, 8), torch.nn.Linear(8, 50))

    def describe(self) -> SystemInfo:
        return SystemInfo("tiny", "AR", 1, "test")

    def models(self) -> Sequence[Any]:
        return [self.model]

    def fit(self, task: TaskInfo, workdir: Path) -> None:
        opt = torch.optim.AdamW(self.model.parameters(), lr=1e-2)
        for ex in task.train[:3]:
            loss = self.model(self._ids(ex)).logsumexp(-1).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()

    def _ids(self, ex: Example) -> torch.Tensor:
        ids = [hash(w) % 50 for w in ex.source.split()[:6]]
        return torch.tensor(ids) if self.host_input else torch.tensor(ids, device=self.device)

    def decode(self, examples: Sequence[Example]) -> list[str]:
        return [self.decode_one(ex) for ex in examples]

    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        with torch.inference_mode():
            return " ".join(map(str, self.model(self._ids(example)).argmax(-1).tolist()))


def _exercise(system: System, task: TaskInfo, workdir: Path) -> None:
    """What ``bench run`` and ``bench latency`` do with a system, in their order."""
    fit_on(system, task, workdir, str(DEVICE))
    examples = list(task.dev[:3])
    system.decode(examples)
    system.decode_one(examples[0])
    if system.supports_forced_length:
        system.decode_one(examples[1], forced_length=5)


def test_the_check_catches_an_input_built_on_the_host(task: TaskInfo, tmp_path: Path) -> None:
    with device_check() as record:
        _exercise(_Tiny(host_input=True), task, tmp_path)
    assert record.violations, "an embedding lookup with host ids on a placed model must be caught"
    assert "aten.embedding" in record.violations[0].op
    assert record.violations[0].where.startswith("tests/test_device_placement.py")


def test_the_check_passes_a_system_that_builds_on_its_device(task: TaskInfo, tmp_path: Path) -> None:
    system = _Tiny(host_input=False)
    with device_check() as record:
        _exercise(system, task, tmp_path)
    assert record.violations == []
    assert record.device_ops > 0  # the model really ran on the check's device
    assert all(isinstance(p, OnDevice) for p in system.model.parameters())


def test_the_check_catches_numpy_of_a_device_tensor() -> None:
    with device_check() as record:
        x = torch.ones(3).to(DEVICE)
        x.numpy()
    assert [v.op for v in record.violations] == ["Tensor.numpy"]


def _smoke_overrides(name: str) -> dict[str, Any]:
    """The smoke preset with two updates: placement, not learning, is under test."""
    if not build(name, "smoke").needs_training or _needs_fairseq(name):
        return {}  # fairseq keeps its 20: an insertion model after 2 updates grows past its positions
    return {"steps": 2}


def _needs_fairseq(name: str) -> bool:
    return name.startswith("fairseq_")


#: systems that decode outside torch and take the placement through their engine's own device argument (their
#: mapping is tested with them): the check sees no torch op of theirs on the device, by design
OWN_DEVICE_ARGUMENT = {"fairseq_transformer_ct2": "CTranslate2 (tests/test_fairseq_ct2.py: ct2_device)"}


@pytest.mark.parametrize("name", SYSTEMS.names())
def test_every_system_runs_on_the_device_it_was_placed_on(name: str, task: TaskInfo, tmp_path: Path) -> None:
    if _needs_fairseq(name):
        pytest.importorskip("fairseq", reason="fairseq baselines need `make fairseq`")
    if name in OWN_DEVICE_ARGUMENT:
        pytest.importorskip("ctranslate2", reason="fairseq_transformer_ct2 needs `make fairseq` (the [ct2] extra)")
    system = build(name, "smoke", _smoke_overrides(name))
    with device_check() as record:
        _exercise(system, task, tmp_path)
    assert [str(v) for v in record.violations] == []
    assert system.device == str(DEVICE)
    for module in system.models():
        assert {p.device for p in module.parameters()} == {DEVICE}, f"{name}: a parameter stayed off the device"
    if system.describe().family != "reference" and name not in OWN_DEVICE_ARGUMENT:
        assert record.device_ops > 0, f"{name}: nothing ran on the placed device"


def test_cpu_is_respected_and_a_missing_gpu_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == "cpu"
    with pytest.raises(DeviceError, match="torch sees none.*--device cpu"):
        resolve_device("cuda")
    with pytest.raises(DeviceError, match="not a device"):
        resolve_device("gpu0")


def test_auto_and_cuda_resolve_to_an_index_when_a_gpu_is_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert resolve_device("auto") == "cuda:0"
    assert resolve_device("cuda") == "cuda:0"
    assert resolve_device("cuda:1") == "cuda:1"
    assert resolve_device("cpu") == "cpu"  # --device cpu on a GPU machine stays on the CPU
    with pytest.raises(DeviceError, match="sees 2 GPU"):
        resolve_device("cuda:2")
    monkeypatch.setenv("LOCAL_RANK", "1")  # accelerate launch: each process its own GPU
    assert resolve_device("cuda") == "cuda:1"


#: where systems/ may ask torch about CUDA: saving/restoring every GPU's RNG state with a checkpoint, and
#: forking it around GLAT's glancing sample; neither places anything
CUDA_QUERIES_ALLOWED = {"systems/training/checkpoint.py", "systems/nar/glat.py"}


def test_no_family_decides_its_device_itself() -> None:
    """A family that checks `torch.cuda.is_available()` or calls `.cuda()` picks a device the harness did not
    (fairseq's decoder once did, and timed on the GPU beside NAR models on the CPU)."""
    import re

    root = Path(__file__).resolve().parents[1]
    pattern = re.compile(r"torch\.cuda\.is_available\(\)|\.cuda\(\)|move_to_cuda|device=['\"]cuda")
    offenders = [
        f"{path.relative_to(root)}:{n}: {line.strip()}"
        for path in sorted((root / "systems").rglob("*.py"))
        if str(path.relative_to(root)) not in CUDA_QUERIES_ALLOWED
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line) and not line.lstrip().startswith("#")
    ]
    assert offenders == []
