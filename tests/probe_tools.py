"""What the hostile-pass probe files share: the CLI run as a subprocess, its one error line, a committed record's
content, and a kind's sealed path refusing a resealed edit (tests/test_probe_fifth_pass.py, ..._sixth_pass.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.api.errors import UserError
from bench.store import kinds
from bench.store.files import StoreError
from bench.store.integrity import sealed, unsealed

ROOT = Path(__file__).resolve().parents[1]
INCLUDE = ROOT / "examples" / "bench_example_plugin" / "bench_include.py"


def bench_cli(*args: str, tmp_path: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m bench`` with the example plugin, its cache under ``tmp_path``."""
    full = {**os.environ, "BENCH_CACHE": str(tmp_path / "cache"), **(env or {})}
    # the timeout is a hang guard, not a speed test: a loaded runner took over 120 s for one `bench table`
    return subprocess.run([sys.executable, "-m", "bench", "--include", str(INCLUDE), *args], capture_output=True,
                          text=True, env=full, cwd=ROOT, timeout=600)


def one_line(out: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The command failed with ``code`` and said so in exactly one stderr line, no traceback; that line."""
    assert out.returncode == code, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr[-2000:]
    return lines[0]


def record_data(path: Path) -> dict[str, Any]:
    """A committed record's content, without its seal."""
    return unsealed(json.loads(path.read_text(encoding="utf-8")))


def refused(kind: str, path: Path, data: dict[str, Any], said: str) -> str:
    """The kind's sealed path refuses ``data`` resealed as ``path``'s content: one StoreError naming the file."""
    with pytest.raises(UserError) as err:
        kinds.KINDS[kind].accept(sealed(data), path)
    assert isinstance(err.value, StoreError), repr(err.value)
    text = " ".join(str(err.value).split())
    assert text.startswith(f"{path}: ") and re.search(said, text), text
    return text
