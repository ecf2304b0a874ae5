"""`make gpu-bundle` / `make gpu-check` plumbing that runs anywhere (#39): the bundle unpacks only what the
running Python lacks, next to raising stand-ins for what fairseq imports but the harness never uses."""

from __future__ import annotations

import importlib.util
import io
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import gpu_bundle  # noqa: E402


def _wheel(folder: Path, name: str, module: str) -> None:
    with zipfile.ZipFile(folder / name, "w") as zf:
        zf.writestr(f"{module}/__init__.py", "VALUE = 1\n")


def test_wheels_map_to_the_modules_whose_absence_installs_them() -> None:
    assert gpu_bundle._module_of("hydra_core-1.3.2-py3-none-any.whl") == "hydra"
    assert gpu_bundle._module_of("antlr4_python3_runtime-4.9.3-py3-none-any.whl") == "antlr4"
    assert gpu_bundle._module_of("sacrebleu-2.6.0-py3-none-any.whl") == "sacrebleu"
    assert gpu_bundle._module_of("unknown_pkg-1.0-py3-none-any.whl") is None


def test_install_unpacks_only_what_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = tmp_path / "bundle"
    (bundle / "wheels").mkdir(parents=True)
    _wheel(bundle / "wheels", "typer-0.1-py3-none-any.whl", "typer")
    _wheel(bundle / "wheels", "hydra_core-1.3.2-py3-none-any.whl", "hydra")
    with tarfile.open(bundle / "fairseq-py.tar.xz", "w:xz") as tar:
        data = b"# fairseq stand-in for the test\n"
        entry = tarfile.TarInfo("fairseq/__init__.py")
        entry.size = len(data)
        tar.addfile(entry, io.BytesIO(data))
    real = importlib.util.find_spec
    missing = {"hydra", "fairseq", "sklearn", "scipy"}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in missing else real(name, *a))
    site = tmp_path / "site"
    assert gpu_bundle.install_into(bundle, site) == [site]
    assert (site / "hydra" / "__init__.py").is_file()
    assert not (site / "typer").exists()  # the machine has typer: its own version stays
    assert (site / "fairseq" / "__init__.py").is_file()
    assert (site / "sklearn" / "metrics" / "__init__.py").is_file() and (site / "scipy" / "stats").is_dir()


def test_the_stand_ins_raise_when_used() -> None:
    sys.path.insert(0, str(ROOT / "scripts" / "gpu_shims"))
    try:
        spec = importlib.util.spec_from_file_location(
            "shim_metrics", ROOT / "scripts" / "gpu_shims" / "sklearn" / "metrics" / "__init__.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        with pytest.raises(ImportError, match="scikit-learn is not installed"):
            module.f1_score([1], [1])
    finally:
        sys.path.remove(str(ROOT / "scripts" / "gpu_shims"))


def test_the_check_reads_a_latency_records_verdict_and_speedup() -> None:
    """gpu_check's latency step reads what `bench latency --record` writes (a committed CPU record here)."""
    import json

    import gpu_check

    path = ROOT / "results" / "latency" / "squad_qg--test--paper--random--forced--20261122T181002--bd542e50.json"
    rec = json.loads(path.read_text())
    assert rec["verdict"] == "VALID"
    speed = gpu_check._speedup(rec, "encoder_bert")
    assert speed is not None and speed == rec["systems"]["encoder_bert"]["speedup"]["mean"] and speed > 1
    assert gpu_check._speedup(rec, "no_such_system") is None
