"""Reading a file the harness did not just write (a record, a report it compares, a queue, a paper table, a
checkpoint's side file): one reader, so every bad byte or bad JSON is one line naming the file.

A file on disk may be anything: a half-written copy, a binary, bytes in another encoding, or JSON crafted to
nest ten thousand levels deep (``json`` then raises ``RecursionError``). Each of these becomes an
:class:`UnreadableFile`, a :class:`~bench.api.errors.UserError` (exit 2) whose message names the file, what is
wrong with it (the byte offset, the JSON line) and the fix; callers with their own error type (the store's
``RecordError``) catch it and re-raise theirs with :attr:`UnreadableFile.what`.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from bench.api.errors import UserError
from bench.api.textfile import DOCUMENT, Limits, TextFileError, TextFileNotFound, read_bytes_checked

__all__ = ["UnreadableFile", "parse_json", "read_json", "read_text", "read_yaml"]

#: the generic fix when a caller has none of its own
DEFAULT_FIX = "restore it (e.g. `git checkout` it), or delete it and make it again"


class UnreadableFile(UserError, ValueError):
    """A file is not the UTF-8 text, JSON or YAML the harness expects: ``path`` and ``what`` is wrong."""

    def __init__(self, path: Path | str, what: str, fix: str = DEFAULT_FIX) -> None:
        super().__init__(f"{path}: {what}; {fix}.")
        self.path = Path(path)
        self.what = what


def _undecodable(exc: UnicodeDecodeError) -> str:
    return f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"


def read_text(path: Path | str, fix: str = DEFAULT_FIX, errors: str = "strict", *,
              translate_newlines: bool = True, limits: Limits = DOCUMENT) -> str:
    """The text of ``path`` as UTF-8 (universal newlines, as ``Path.read_text``; ``translate_newlines=False``:
    the bytes as they are, a lone ``\\r`` kept); bytes that are not UTF-8 raise :class:`UnreadableFile` naming
    the file and the offset. The file is checked first (:func:`bench.api.textfile.read_bytes_checked`): a FIFO, a
    device, a directory, a file over ``limits`` raise :class:`UnreadableFile` too. A missing file raises a
    ``FileNotFoundError`` (that is also a one-line user error); other OS errors (unreadable) pass."""
    try:
        data = read_bytes_checked(path, limits)
    except TextFileNotFound:
        raise
    except TextFileError as exc:
        raise UnreadableFile(path, exc.what, exc.fix) from None
    try:
        text = data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        raise UnreadableFile(path, _undecodable(exc), fix) from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if translate_newlines else text


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's pairs as a dict, refusing a key given twice: ``json`` would keep the last value silently,
    while a person (or another tool) reading the file may see the first, so one file would say two things."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


#: a ``\uD800``-``\uDFFF`` escape: JSON allows one alone, but no UTF-8 text (nor a digest of it) can hold it
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")

_SURROGATE_ESCAPE_BYTES = re.compile(_SURROGATE_ESCAPE.pattern.encode())


def parse_json(text: str | bytes, where: Path | str, fix: str = DEFAULT_FIX) -> Any:
    """``text`` parsed as JSON; invalid JSON, undecodable bytes, nesting too deep for the parser, a key given
    twice in one object, an integer too long for Python to read (over 4300 digits) or a lone UTF-16 surrogate
    escape (which no UTF-8 text holds) raise :class:`UnreadableFile` naming ``where`` (a file, or ``file:line``
    for one line of a JSON-lines file)."""
    try:
        obj = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise UnreadableFile(where, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})",
                             fix) from None
    except UnicodeDecodeError as exc:
        raise UnreadableFile(where, _undecodable(exc), fix) from None
    except RecursionError:
        raise UnreadableFile(where, "JSON nested too deeply to read", fix) from None
    except _DuplicateKey as exc:
        raise UnreadableFile(where, f"not valid JSON for the harness (the key {exc.key[:80]!r} is given twice in one "
                                    "object: which value counts would depend on the reader)", fix) from None
    except ValueError as exc:  # Python refuses to read an integer of more than sys.get_int_max_str_digits()
        digits = sys.get_int_max_str_digits()
        raise UnreadableFile(where, f"not valid JSON for the harness (an integer of more than {digits} digits, "
                                    f"which Python does not read: {type(exc).__name__})", fix) from None
    if (_SURROGATE_ESCAPE.search(text) if isinstance(text, str) else _SURROGATE_ESCAPE_BYTES.search(text)):
        try:
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise UnreadableFile(where, "not valid JSON for the harness (a lone UTF-16 surrogate escape such as "
                                        "\\ud800, which no UTF-8 text can hold)", fix) from None
    return obj


def read_json(path: Path | str, fix: str = DEFAULT_FIX, *, limits: Limits = DOCUMENT) -> Any:
    """The parsed JSON of ``path`` (see :func:`read_text` and :func:`parse_json` for what fails, and how), within
    ``limits`` (a record: :data:`bench.api.textfile.RECORD`)."""
    return parse_json(read_text(path, fix, limits=limits), path, fix)


def read_yaml(path: Path | str, fix: str = DEFAULT_FIX) -> Any:
    """The parsed YAML of ``path`` (safe loader), with the same one-line failures as :func:`read_json`."""
    import yaml  # only the paper tables are YAML: keep it off every other command's import path

    text = read_text(path, fix)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}" if where is not None else ""
        raise UnreadableFile(path, f"not valid YAML ({getattr(exc, 'problem', None) or exc}{at})", fix) from None
    except RecursionError:
        raise UnreadableFile(path, "YAML nested too deeply to read", fix) from None
