"""One wording for a count an option gives (``--n 0``, ``--threads 0``, ``-n -1``, ``--jobs 0``).

Every command, the launch preflight and the latency plan refuse a count below its least value with
the same line, the wording of ``--limit`` (:func:`bench.runs.check_limit`) and of a preset's ranged
setting (``--set steps=-5: steps must be ≥ 1 (got -5)``): the option, its value, the range.
"""

from __future__ import annotations

from bench.api.errors import UserError


class CountError(UserError, ValueError):
    """A count option below its least value: bad input, exit 2 from ``bench``."""


def at_least(option: str, value: int | None, low: int, error: type[Exception] = CountError) -> None:
    """Refuse ``value`` of ``option`` below ``low`` (None: the option was not given) with ``error``."""
    if value is not None and value < low:
        raise error(f"{option} {value}: {option.lstrip('-')} must be ≥ {low} (got {value})")
