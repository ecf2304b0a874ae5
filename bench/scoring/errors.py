"""Exceptions of the scorer. Messages are meant for the user as is: they name the file/line and the fix.

A bad input never becomes a sentinel score; it raises one of these.
"""

from __future__ import annotations

from bench.api.errors import UserError


class ScoringError(UserError):
    """Base class: anything that stops a score from being computed."""


class ScoringInputError(ScoringError):
    """Malformed hypotheses/references/keys (counts, encoding, forbidden characters)."""


class ToolMissingError(ScoringError):
    """Java, Perl, a jar or a Perl module the recipe needs is not installed."""


class ToolFailedError(ScoringError):
    """An external scorer (METEOR, ROUGE-1.5.5) died or printed something unparseable."""
