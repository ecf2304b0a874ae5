"""What the hostile-pass probe files share: the CLI run as a subprocess, its one error line, a committed record's
content, a kind's sealed path refusing a resealed edit, and a raw-socket mirror that answers anything
(tests/test_probe_fifth_pass.py, ..._sixth_pass.py, ..._seventh_pass.py)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
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


def read_request(conn: socket.socket) -> None:
    """Read a request's head (up to its blank line), whatever it is; a client that stops is left alone."""
    conn.settimeout(2)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            more = conn.recv(4096)
            if not more:
                return
            data += more
    except OSError:
        return


def answer(raw: bytes | Callable[[int], bytes], hold: float = 0.0) -> Callable[[socket.socket, int], None]:
    """A mirror handler that reads the request, waits ``hold`` s, and sends ``raw`` (or ``raw(port)``) as it is."""
    def handle(conn: socket.socket, port: int) -> None:
        read_request(conn)
        try:
            if hold:
                time.sleep(hold)
            conn.sendall(raw(port) if callable(raw) else raw)
        except OSError:
            pass
        finally:
            conn.close()
    return handle


def raw_mirror(handler: Callable[[socket.socket, int], None]) -> tuple[int, socket.socket]:
    """A local server on a free port whose every connection is ``handler(conn, port)`` in its own thread (no HTTP
    library between the probe and the client); returns the port and the socket, which the caller closes."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=handler, args=(conn, port), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return port, server
