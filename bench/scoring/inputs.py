"""Reading and checking scorer inputs: strict UTF-8, line counts, forbidden characters.

The legacy (Python-2) reference scripts read every line as ``line[:-1]``; a file without a final
newline therefore loses its last character. ``read_lines`` reports the missing newline so the
legacy recipes can reproduce the quirk (and warn), while the others do not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.api.text import split_lines
from bench.scoring.errors import ScoringInputError


@dataclass(frozen=True)
class Lines:
    """The lines of a file (without their ``\\n``) and whether the file ended with a newline."""

    path: str
    lines: list[str]
    final_newline: bool

    def legacy(self) -> list[str]:
        """``line[:-1]`` semantics: the unterminated last line loses its last character."""
        if self.final_newline or not self.lines:
            return list(self.lines)
        return self.lines[:-1] + [self.lines[-1][:-1]]

    def notes(self, role: str, legacy: bool) -> list[str]:
        if self.final_newline or not self.lines:
            return []
        what = ("its last character was dropped, as the reference script's line[:-1] does" if legacy
                else "read as is")
        return [f"{role} file {self.path} has no final newline ({what})"]


def read_lines(path: str | Path) -> Lines:
    """Read a UTF-8 text file as lines; invalid UTF-8 raises with the file and line number. The file is checked
    before it is read (:func:`bench.api.textfile.read_bytes_checked` with the outputs caps): a FIFO, a device or a
    directory is named as what it is, a file or a line over its cap and a leading byte-order mark are refused,
    alike for ``score``, ``compare`` and ``submit``."""
    from bench.api.textfile import OUTPUTS, TextFileError, read_bytes_checked

    p = Path(path)
    try:
        data = read_bytes_checked(p, OUTPUTS)
    except TextFileError as exc:
        raise ScoringInputError(str(exc)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        col = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise ScoringInputError(
            f"{p}:{line}: invalid UTF-8 (byte 0x{data[err.start]:02x} at column {col}). "
            "Fix: re-encode the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)."
        ) from None
    if text == "":
        return Lines(str(p), [], True)
    return Lines(str(p), split_lines(text), text.endswith("\n"))


def check_counts(n_hyp: int, n_ref: int, hyp_name: str, ref_name: str) -> None:
    if n_hyp != n_ref:
        raise ScoringInputError(
            f"Line-count mismatch: {n_hyp} hypotheses ({hyp_name}) vs {n_ref} references ({ref_name}). "
            "Fix: write exactly one hypothesis per reference line, in the same order."
        )


def check_hypotheses(hyps: Sequence[str], where: str, ids: Sequence[str] | None = None) -> list[str]:
    """Reject newlines, ``|||`` (METEOR's field separator) and NUL bytes; return notes (empty count)."""
    n_empty = 0
    for i, h in enumerate(hyps):
        if not isinstance(h, str):
            raise ScoringInputError(f"{where}: hypothesis {i + 1} is {type(h).__name__}, not str.")
        label = f"{where}: hypothesis {i + 1}" + (f" (id {ids[i]})" if ids is not None else "")
        if "\n" in h or "\r" in h:
            raise ScoringInputError(f"{label} contains a newline (\\n or \\r). Fix: one hypothesis per "
                                    "line; replace internal newlines with spaces, convert CRLF files "
                                    "with dos2unix.")
        if "|||" in h:
            raise ScoringInputError(f"{label} contains '|||', METEOR's field separator. Fix: remove it "
                                    "(the reference scripts silently delete it; this harness refuses).")
        if "\0" in h:  # as an outputs file with one is refused (bench.api.textfile.OUTPUTS): one rule for both
            raise ScoringInputError(f"{label} contains a NUL byte (\\x00), which no output text holds and the "
                                    "external scorers read each their own way. Fix: remove it.")
        if not h.strip():
            n_empty += 1
    return [f"{n_empty} empty hypotheses (scored as empty strings)"] if n_empty else []


def check_references(refs: Sequence[str], where: str) -> None:
    for i, r in enumerate(refs):
        if "|||" in r or "\n" in r:
            raise ScoringInputError(f"{where}: reference {i + 1} contains '|||' or a newline, which "
                                    "would corrupt METEOR's input. Fix the reference file.")


def read_hypotheses(path: str | Path, expected: int, ref_label: str) -> list[str]:
    """Outputs for a task split: strict UTF-8, exactly ``expected`` lines, no forbidden characters."""
    lines = read_lines(path)
    check_counts(len(lines.lines), expected, str(path), ref_label)
    check_hypotheses(lines.lines, str(path))
    return lines.lines
