"""``--set key=value``: the one reading of an override on a command line, a queue line or a job's argv.

A value is a JSON literal where it parses (``4``, ``3e-5``, ``true``, ``{"hidden": 32}``), else the string as
written (``decode=mist_iter``): the typed values a system factory receives as ``factory(budget, overrides)``.
Every reader of ``--set`` (``bench run``/``reproduce``/``calibrate``/``refile``/``fetch``, queue files, ``bench
latency``'s per-system ``system.key=value``) parses with :func:`parse_override`, so one line means one thing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

#: what an override looks like, for the message that refuses one that does not
FORM = "key=value (e.g. steps=100)"


def parse_override(item: str, form: str = FORM) -> tuple[str, Any]:
    """``"steps=100"`` -> ``("steps", 100)``; ``form``: how the caller's ``--set`` is written, for the error."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"--set '{item}' must look like {form}.")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip(), value


def parse_overrides(items: Iterable[str]) -> dict[str, Any]:
    """``["steps=100", "decode=mist_iter"]`` -> ``{"steps": 100, "decode": "mist_iter"}`` (a later key wins)."""
    return dict(parse_override(item) for item in items)
