"""The line every HTML page ends with: when it was built and from which commit.

Why the stamp is a real build time and not one derived from the records: pages are regenerated before the
records they show are committed, so no page can name the commit it will land in. The stamp therefore says
what was true at build time (the checkout's ``HEAD``, marked when the checkout had uncommitted changes
outside the reports folder), and exactly this one line is left out when ``bench table --check`` compares
pages (:func:`strip`) and when ``bench table`` decides whether a page changed, so a rebuild that changes
nothing keeps the page (and its stamp) as committed. ``SOURCE_DATE_EPOCH`` (the reproducible-builds
convention) fixes the time.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from bench.api.paths import resolved
from bench.report import html_escape

#: the stamp line as written: one line of its own, so :func:`strip` removes exactly it
_LINE = re.compile(r'^<footer class="stamp" id="build-stamp">.*</footer>\n', re.M)


@dataclass(frozen=True)
class BuildStamp:
    """When and from what a page was built (``commit`` is ``None`` outside a git checkout)."""

    time: datetime
    commit: str | None = None
    dirty: bool = False

    def html(self) -> str:
        """The footer line (one line, ending in a newline)."""
        when = self.time.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        e = html_escape.text
        if self.commit is None:
            src = "outside a git checkout (no commit)"
        else:
            src = (f'from commit <code title="{e(self.commit)}">{e(self.commit[:12])}</code>'
                   + (" with uncommitted changes" if self.dirty else ""))
        return (f'<footer class="stamp" id="build-stamp">Built {when} by <code>bench table</code> {src}.'
                "</footer>\n")


def strip(page: str) -> str:
    """``page`` without its stamp line: what ``--check`` compares."""
    return _LINE.sub("", page)


def same(old: str, new: str) -> bool:
    """Whether two builds of a page differ in their stamp alone (a page gaining or losing its stamp differs)."""
    return strip(old) == strip(new) and bool(_LINE.search(old)) == bool(_LINE.search(new))


def _git(cwd: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, timeout=30,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def _now() -> datetime:
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch.isdigit():
        return datetime.fromtimestamp(int(epoch), timezone.utc)
    return datetime.now(timezone.utc).replace(second=0, microsecond=0)


def build_stamp(results_dir: Path | str, reports_dir: Path | str | None = None) -> BuildStamp:
    """The stamp of a build reading ``results_dir``: its checkout's ``HEAD``, and whether anything outside
    ``reports_dir`` (the output) differs from it, untracked records included."""
    where = resolved(results_dir, "--results-dir")
    commit = _git(where, "rev-parse", "HEAD")
    top = _git(where, "rev-parse", "--show-toplevel") if commit else None
    if commit is None or top is None:
        return BuildStamp(_now())
    spec = ["--", "."]
    if reports_dir is not None:
        out = resolved(reports_dir, "--reports-dir")
        if out.is_relative_to(Path(top)) and out != Path(top):
            spec.append(f":(exclude){out.relative_to(top).as_posix()}")
    status = _git(Path(top), "status", "--porcelain", *spec)
    return BuildStamp(_now(), commit, dirty=bool(status))
