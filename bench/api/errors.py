"""One base for mistakes a user can fix (a name, a path, an option); the CLI prints them, never a traceback.

Every error type the harness raises for bad input derives from :class:`UserError` (keeping its
older base, e.g. ``ValueError`` or ``KeyError``, for callers that catch those). ``bench`` turns a
``UserError`` into ``error: <message>`` and exit code 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class UserError(Exception):
    """Bad input: the message says what is wrong and how to fix it."""

    def __str__(self) -> str:  # KeyError subclasses would quote their message
        return str(self.args[0]) if self.args else ""


class EnvironmentProblem(Exception):
    """The machine, not the input, stops the command (e.g. a folder that cannot be written): ``bench``
    prints the message as one line and exits 1, so a script can tell it from a mistyped option (exit 2)."""


class LengthForcedUnsupported(UserError, ValueError):
    """Length-forced timing was asked for a system that cannot take a forced output length."""


class DataError(UserError):
    """A missing, altered or malformed data file (found, verified, built or loaded by the data layer); the message
    names the file, and the line where it applies, and says how to fix it, so the CLI prints it as is."""
