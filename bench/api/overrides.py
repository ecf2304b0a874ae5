"""``--set key=value``: the one reading of an override on a command line, a queue line or a job's argv.

A value is a JSON literal where it parses (``4``, ``3e-5``, ``true``, ``{"hidden": 32}``), else the string as
written (``decode=mist_iter``): the typed values a system factory receives as ``factory(budget, overrides)``.
Every reader of ``--set`` (``bench run``/``reproduce``/``calibrate``/``refile``/``fetch``, queue files, ``bench
latency``'s per-system ``system.key=value``) parses with :func:`parse_override`, so one line means one thing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

#: what an override looks like, for the message that refuses one that does not
FORM = "key=value (e.g. steps=100)"


def parse_override(item: str, form: str = FORM) -> tuple[str, Any]:
    """``"steps=100"`` -> ``("steps", 100)``; ``form``: how the caller's ``--set`` is written, for the error."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"--set '{item}' must look like {form}.")
    if len(raw) > MAX_VALUE:
        raise ValueError(f"--set '{item[:60]}…': the value is {len(raw):,} characters, over {MAX_VALUE:,}; a setting "
                         "is a number, a word or a small JSON object (it is stored in every record's spec).")
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except json.JSONDecodeError:
        value = raw
    except RecursionError:
        raise ValueError(f"--set '{item[:60]}…': the value is nested too deeply to read; give a flat JSON "
                         "value.") from None
    except _NotFinite as exc:
        raise ValueError(f"--set '{item[:80]}': {exc.args[0]} is not a finite number (no record holds NaN or an "
                         "infinity); give a number, or quote the text as a JSON string.") from None
    if _infinite(value):
        raise ValueError(f"--set '{item[:80]}': a number overflows to infinity (no record holds one); give a finite "
                         "number.")
    return key.strip(), value


#: the longest ``--set`` value (a record's spec keeps every override; a setting is a word, not a document)
MAX_VALUE = 10_000


class _NotFinite(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _NotFinite(name)


def _infinite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_infinite(v) for v in value.values())
    if isinstance(value, list):
        return any(_infinite(v) for v in value)
    return False


def parse_overrides(items: Iterable[str]) -> dict[str, Any]:
    """``["steps=100", "decode=mist_iter"]`` -> ``{"steps": 100, "decode": "mist_iter"}`` (a later key wins)."""
    return dict(parse_override(item) for item in items)
