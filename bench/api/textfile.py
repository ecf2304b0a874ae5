"""Every file the harness reads as text is checked before it is read: a regular file, under a size cap and a
per-line cap, each stated in one line naming the file.

Why: a path handed to ``bench score --hyp`` (or ``compare``, ``submit``, a stored outputs file, a data file) may
be anything. A FIFO made ``score`` hang; ``/dev/zero`` filled memory until a ``MemoryError`` traceback; one
100 MB hypothesis line was accepted in 193 s and 6.8 GB, then copied whole into a record and a page. Here the
file is opened without blocking (a FIFO does not wait for a writer), checked to be a regular file on the open
descriptor (no race between a check and the read), read at most one byte past its cap, and its longest line
measured before anything decodes it. A UTF-8 byte-order mark at the head of an outputs file is refused (it
silently changed the first hypothesis, and so the score), and so is a NUL byte anywhere in one (a UTF-16 file
saved without a BOM decodes as "valid UTF-8" with a NUL between letters); a data file's bytes are pinned by
sha256 and kept.

The caps (:data:`OUTPUTS`, :data:`DATA`, :data:`DOCUMENT`) are stated in docs/integrity.md.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from bench.api.errors import UserError

__all__ = ["BOM", "DATA", "DOCUMENT", "OUTPUTS", "RECORD", "Limits", "TextFileError", "TextFileNotFound",
           "not_a_file", "read_bytes_checked", "size_label"]

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Limits:
    """What a kind of text file may be: at most ``max_bytes``, no line over ``max_line`` bytes (None: no line
    cap, a JSON document may be one line), at most ``max_lines`` lines, and whether a leading UTF-8 byte-order mark
    is refused."""

    what: str
    max_bytes: int
    max_line: int | None
    refuse_bom: bool = False
    max_lines: int | None = None  # 256 MiB of newlines would be 268 million empty lines in memory
    #: a NUL byte is refused: no output text holds one, a UTF-16 file saved without a BOM is half NULs (and reads
    #: as "valid UTF-8" garbage), and the external scorers (Perl, Java) and the pages treat it each their own way
    refuse_nul: bool = False
    #: at most this many JSON values, counted before parsing as the bytes ``,`` ``[`` ``{`` (an over-count: those in
    #: strings count too); None: no cap. Parsed, a byte of JSON can take 20 bytes of memory (``[{},{},…]``: a dict
    #: per 3 bytes), so the size cap alone let one 256 MiB record take about 5 GB
    max_values: int | None = None


#: a hypothesis, reference or key file (score --hyp/--ref/--key, compare, submit) and a stored outputs file: one
#: generated text per line, so a line of 64 KiB (about 10,000 words) is already far past any output a system writes
OUTPUTS = Limits("outputs file", 256 * MiB, 64 * KiB, refuse_bom=True, max_lines=2_000_000, refuse_nul=True)
#: a line-per-example data file (du2017, Quora, XSum gold lines, a full-XSum JSON-lines file); the largest line of
#: the shared data is 65,332 bytes (an XSum document)
DATA = Limits("data file", 2 * GiB, 4 * MiB, max_lines=20_000_000)
#: a record, a manifest, a paper table, a queue file, a JSON data file (SQuAD's train file is 30 MB on one line)
DOCUMENT = Limits("file", 256 * MiB, None)
#: a record under a results folder (every kind, read by the store): the largest committed one is 2.5 MB with
#: about 150,000 values (a latency record with its raw timings), so these caps leave 13x room and bound what one
#: record takes in memory to a few hundred MB
RECORD = Limits("record", 32 * MiB, None, max_values=2_000_000)


class TextFileError(UserError, ValueError):
    """A file that is not a regular file, is over a cap, or has a line over the line cap; the message names the
    file, what is wrong with it and the fix (``bench`` prints it as one line, exit 2)."""

    def __init__(self, path: Path | str, what: str, fix: str) -> None:
        super().__init__(f"{path}: {what}. Fix: {fix}.")
        self.path = Path(path)
        self.what = what
        self.fix = fix


class TextFileNotFound(TextFileError, FileNotFoundError):
    """No file at the path: a :class:`TextFileError` that callers catching ``FileNotFoundError`` still catch."""


def size_label(n: int) -> str:
    """``n`` bytes as people read a cap: ``64 KiB``, ``256 MiB``, ``2 GiB``, else ``1,234 bytes``."""
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n:,} bytes"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def not_a_file(path: Path | str) -> str | None:
    """What ``path`` is when it is there but no regular file ("a FIFO (named pipe)", "a directory"), links
    followed; None for a regular file or nothing there (a missing file is the caller's to name as missing)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return "a symlink loop" if exc.errno == errno.ELOOP else f"unreadable ({exc.strerror})"
    return None if stat.S_ISREG(mode) else _kind(mode)


def read_bytes_checked(path: Path | str, limits: Limits = DOCUMENT) -> bytes:
    """The bytes of ``path`` once it is known to be a regular file within ``limits``; otherwise
    :class:`TextFileError` naming the file (a missing file too: "file not found", never for a FIFO, a device or a
    directory, which are named as what they are)."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise TextFileNotFound(p, "file not found", "check the path") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise TextFileError(p, "a symlink loop", "point the path at the file itself") from None
        if exc.errno in (errno.EISDIR, errno.ENXIO):  # ENXIO: a socket, or a FIFO nobody could write
            raise TextFileError(p, "not a regular file", f"give the path of a regular {limits.what}") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise TextFileError(p, f"{_kind(info.st_mode)}, not a regular file",
                                f"give the path of a regular {limits.what} (it is read whole before it is used)")
        if info.st_size > limits.max_bytes:
            raise TextFileError(p, f"{info.st_size:,} bytes, over the {size_label(limits.max_bytes)} cap for "
                                   f"{_a(limits.what)}", _split_fix(limits))
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limits.max_bytes + 1)
    except MemoryError:
        raise TextFileError(p, "ran out of memory while reading it", "free memory, or split the file") from None
    finally:
        os.close(fd)
    if len(data) > limits.max_bytes:  # it grew while it was read
        raise TextFileError(p, f"over the {size_label(limits.max_bytes)} cap for {_a(limits.what)}",
                            _split_fix(limits))
    if limits.refuse_bom and data.startswith(BOM):
        raise TextFileError(p, "starts with a UTF-8 byte-order mark (EF BB BF), which would be read as part of "
                               "its first line", "save it as UTF-8 without a BOM (e.g. `sed -i '1s/^\\xEF\\xBB\\xBF//' "
                               f"{p}`)")
    if limits.refuse_nul and (at := data.find(b"\0")) >= 0:
        line, column = data.count(b"\n", 0, at) + 1, at - data.rfind(b"\n", 0, at)
        raise TextFileError(p, f"line {line:,} holds a NUL byte (0x00) at byte {column:,} of the line, which no "
                               "output text holds (a binary file, or text saved as UTF-16?)",
                            f"save it as UTF-8 text without NUL bytes (e.g. `tr -d '\\000' < {p} > fixed.txt`), "
                            "or give the outputs file meant")
    lines = data.count(b"\n") if limits.max_lines is not None else 0
    if limits.max_lines is not None and lines > limits.max_lines:
        raise TextFileError(p, f"{lines:,} lines, over the {limits.max_lines:,}-line cap for {_a(limits.what)}",
                            _split_fix(limits))
    if limits.max_line is not None:
        _check_lines(p, data, limits)
    if limits.max_values is not None:
        values = data.count(b",") + data.count(b"[") + data.count(b"{")
        if values > limits.max_values:
            raise TextFileError(p, f"about {values:,} JSON values, over the {limits.max_values:,}-value cap for "
                                   f"{_a(limits.what)} (parsed, it would take many times its size in memory)",
                                _split_fix(limits))
    return data


def _a(what: str) -> str:
    return f"an {what}" if what[:1] in "aeiou" else f"a {what}"


def _split_fix(limits: Limits) -> str:
    if limits is OUTPUTS:
        return "give one output per line (the harness scores whole files of outputs, not documents)"
    return "check that this is the file meant"


def _check_lines(path: Path, data: bytes, limits: Limits) -> None:
    """The first line longer than ``limits.max_line`` bytes is an error naming its number and length."""
    cap = limits.max_line
    assert cap is not None
    if len(data) <= cap:
        return
    start, lineno, find = 0, 1, data.find
    while True:
        end = find(b"\n", start)
        stop = len(data) if end < 0 else end
        if stop - start > cap:
            raise TextFileError(path, f"line {lineno:,} is {stop - start:,} bytes, over the {size_label(cap)} "
                                      f"cap for one line of {_a(limits.what)}",
                                "one output per line; a longer line is not an output the harness scores"
                                if limits is OUTPUTS else "check that this is the file meant")
        if end < 0:
            return
        start, lineno = end + 1, lineno + 1
