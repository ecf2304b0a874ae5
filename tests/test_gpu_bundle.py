"""`make gpu-bundle` / `make gpu-check` plumbing that runs anywhere (#39): the bundle unpacks only what the
running Python lacks, next to raising stand-ins for what fairseq imports but the harness never uses."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
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
        gpu_bundle._add(tar, "fairseq/__init__.py", b"# fairseq stand-in for the test\n")
    real = importlib.util.find_spec
    missing = {"hydra", "fairseq", "sklearn", "scipy"}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in missing else real(name, *a))
    site = tmp_path / "site"
    assert gpu_bundle.install_into(bundle, site) == [site]
    assert (site / "hydra" / "__init__.py").is_file()
    assert not (site / "typer").exists()  # the machine has typer: its own version stays
    assert (site / "fairseq" / "__init__.py").is_file()
    assert not (site / "scipy").exists() and not (site / "sklearn").exists()  # no stand-in for find_spec to see


def test_wheels_travel_in_one_xz_archive_and_unpack_as_valid_wheels(tmp_path: Path) -> None:
    src = tmp_path / "dl"
    src.mkdir()
    _wheel(src, "hydra_core-1.3.2-py3-none-any.whl", "hydra")
    (tmp_path / "b").mkdir()
    gpu_bundle._pack_wheels(src, tmp_path / "b" / gpu_bundle.WHEELS_ARCHIVE)
    folder = gpu_bundle.unpack_wheels(tmp_path / "b", tmp_path / "w")
    with zipfile.ZipFile(folder / "hydra_core-1.3.2-py3-none-any.whl") as zf:
        assert zf.read("hydra/__init__.py") == b"VALUE = 1\n"
        assert all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist())  # xz does the packing


SENTENCE_PREDICTION = """import numpy as np
from sklearn.metrics import f1_score
from sklearn.metrics import matthews_corrcoef as _matthews_corrcoef
from scipy.stats import pearsonr, spearmanr
from sklearn import metrics as sklearn_metrics


def score():
    return pearsonr([1, 2], [1, 2])
"""


def _fake_fairseq_wheel(cache: Path) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(cache / "fairseq_fixed-0.12.3.1-cp311-cp311-linux_x86_64.whl", "w") as zf:
        zf.writestr("fairseq/__init__.py", "")
        zf.writestr("fairseq/criterions/__init__.py", "")
        zf.writestr("fairseq/criterions/sentence_prediction.py", SENTENCE_PREDICTION)
        zf.writestr("fairseq/examples/huge/train.py", "raise SystemExit\n")
        zf.writestr("fairseq/data/data_utils_fast.cpython-311-x86_64-linux-gnu.so", b"\0")
        zf.writestr("fairseq_fixed-0.12.3.1.dist-info/METADATA", "Name: fairseq-fixed\n")


def test_fairseq_travels_without_examples_or_compiled_parts_and_imports_without_scipy(tmp_path: Path) -> None:
    """Its SciPy/scikit-learn imports are guarded in the bundled copy: the module imports where they are
    missing, a call says which package is missing, and nothing called scipy or sklearn is on the path."""
    _fake_fairseq_wheel(tmp_path / "cache")
    parts = gpu_bundle._pack_fairseq(tmp_path / "cache", tmp_path / "fairseq-py.tar.xz")
    assert "guarded: fairseq/criterions/sentence_prediction.py" in parts
    with tarfile.open(tmp_path / "fairseq-py.tar.xz") as tar:
        names = tar.getnames()
        tar.extractall(tmp_path / "site", filter="data")
    assert gpu_bundle.ABSENT_MODULE in names
    assert not [n for n in names if n.startswith("fairseq/examples/") or n.endswith(".so") or ".dist-info" in n]
    code = ("import sys, importlib.util\n"
            "for m in ('scipy', 'scipy.stats', 'sklearn', 'sklearn.metrics'): sys.modules[m] = None\n"
            f"sys.path.insert(0, {str(tmp_path / 'site')!r})\n"
            "from fairseq.criterions import sentence_prediction as sp\n"
            "try:\n    sp.score()\nexcept ImportError as e:\n    print('raised:', e)\n"
            "try:\n    sp.sklearn_metrics.f1_score\nexcept ImportError as e:\n    print('raised:', e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("raised: scipy.stats.pearsonr: ") and "install the package" in lines[0]
    assert lines[1].startswith("raised: sklearn.metrics: ")
    assert not (tmp_path / "site" / "scipy").exists() and not (tmp_path / "site" / "sklearn").exists()


def test_guarding_leaves_other_imports_and_indented_ones_alone() -> None:
    src = "import os\nfrom scipy_extra import x\ndef f():\n    from scipy.interpolate import interp1d\n"
    assert gpu_bundle.guard_optional_imports(src) == src


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers is not installed here")
def test_transformers_imports_bart_with_the_bundle_on_the_path_and_no_scipy(tmp_path: Path) -> None:
    """The stand-in packages this replaced made transformers' find_spec check believe SciPy was installed,
    and `from transformers import BartForConditionalGeneration` failed. This Python's packages are seen
    through a folder of links that leaves SciPy and scikit-learn out, with a bundle's site in front."""
    _fake_fairseq_wheel(tmp_path / "cache")
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    gpu_bundle._pack_fairseq(tmp_path / "cache", bundle / "fairseq-py.tar.xz")
    site = tmp_path / "site"  # what install_into unpacks where fairseq is missing (here it is installed)
    with tarfile.open(bundle / "fairseq-py.tar.xz") as tar:
        tar.extractall(site, filter="data")
    packages = Path(importlib.util.find_spec("transformers").origin).parents[1]  # type: ignore[arg-type,union-attr]
    links = tmp_path / "packages"
    links.mkdir()
    hidden = ("scipy", "sklearn", "scikit_learn")
    for entry in packages.iterdir():
        if not entry.name.lower().startswith(hidden):
            (links / entry.name).symlink_to(entry)
    code = ("import importlib.util\n"
            "assert importlib.util.find_spec('scipy') is None and importlib.util.find_spec('sklearn') is None\n"
            "from transformers import BartForConditionalGeneration\n"
            "from fairseq.criterions import sentence_prediction\n"
            "print('ok', BartForConditionalGeneration.__name__)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(links), str(ROOT)])}
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("ok BartForConditionalGeneration")


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


# --------------------------------------------------------------------------- a built bundle (`make gpu-bundle`)
BUILT = ROOT / ".gpu-bundle"
needs_bundle = pytest.mark.skipif(not (BUILT / "manifest.json").is_file(),
                                  reason="no .gpu-bundle here: `make gpu-bundle` builds it (needs PyPI)")


def _python(version: str) -> str | None:
    """A Python of ``version`` (3.12): on the PATH, or one pyenv installed."""
    found = shutil.which(f"python{version}")
    if found and subprocess.run([found, "-V"], capture_output=True).returncode == 0:
        return found
    for candidate in sorted((Path.home() / ".pyenv" / "versions").glob(f"{version}.*/bin/python{version}")):
        return str(candidate)
    return None


@needs_bundle
def test_the_bundle_is_under_20_mb_and_leaves_fairseq_examples_out() -> None:
    size = sum(p.stat().st_size for p in BUILT.rglob("*") if p.is_file())
    assert size < 20e6, f".gpu-bundle is {size / 1e6:.1f} MB"
    fairseq = BUILT / "fairseq-py.tar.xz"
    if fairseq.is_file():
        with tarfile.open(fairseq) as tar:
            names = tar.getnames()
        assert not [n for n in names if n.startswith("fairseq/examples/")]
        assert "fairseq/criterions/sentence_prediction.py" in names and gpu_bundle.ABSENT_MODULE in names


@needs_bundle
def test_every_wheel_s_requirements_are_in_the_bundle(tmp_path: Path) -> None:
    """What each wheel's METADATA requires (for the bundle's Python, no extras) is another wheel of the bundle,
    or one of the few a GPU image brings with torch and transformers (gpu_bundle.FROM_THE_IMAGE)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    version = json.loads((BUILT / "manifest.json").read_text())["python"]
    wheels = sorted(gpu_bundle.unpack_wheels(BUILT, tmp_path).glob("*.whl"))
    have = {canonicalize_name(w.name.split("-", 1)[0]) for w in wheels}
    env = {"python_version": version, "python_full_version": f"{version}.0", "sys_platform": "linux",
           "platform_system": "Linux", "extra": ""}
    missing = []
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as zf:
            meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
            for line in zf.read(meta).decode().splitlines():
                if not line.startswith("Requires-Dist:"):
                    continue
                req = Requirement(line.split(":", 1)[1].strip())
                if req.marker is not None and not req.marker.evaluate(env):
                    continue
                name = canonicalize_name(req.name)
                if name not in have and name not in gpu_bundle.FROM_THE_IMAGE:
                    missing.append(f"{wheel.name} needs {req}")
    assert not missing


@needs_bundle
def test_every_wheel_imports_on_a_clean_python_of_the_target_version(tmp_path: Path) -> None:
    """Only the bundle's wheels on the path (-I -S: no site-packages, no PYTHONPATH), on the Python the bundle
    was built for: each wheel's module imports."""
    version = json.loads((BUILT / "manifest.json").read_text())["python"]
    python = _python(version)
    if python is None:
        pytest.skip(f"no Python {version} here to import the bundle's wheels with")
    site = tmp_path / "site"
    modules = []
    for wheel in sorted(gpu_bundle.unpack_wheels(BUILT, tmp_path).glob("*.whl")):
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(site)
        module = gpu_bundle._module_of(wheel.name)
        assert module is not None, f"{wheel.name} maps to no module (gpu_bundle.WHEELS)"
        modules.append(module)
    code = ("import importlib, json, sys\n"
            f"sys.path.insert(0, {str(site)!r})\n"
            "bad = {}\n"
            f"for m in {modules!r}:\n"
            "    try:\n        importlib.import_module(m)\n"
            "    except Exception as e:\n        bad[m] = repr(e)\n"
            "print(json.dumps({'version': sys.version.split()[0], 'bad': bad}))\n")
    done = subprocess.run([python, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["version"].startswith(version + ".") and report["bad"] == {}
