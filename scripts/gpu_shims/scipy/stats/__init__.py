"""Raising stand-ins for the names fairseq imports from ``scipy.stats``."""

from __future__ import annotations

from typing import Any


def _missing(name: str):
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise ImportError(f"scipy.stats.{name}: SciPy is not installed here (make gpu-check put a stand-in on the "
                          "path so that fairseq imports); pip install scipy to use it.")

    fail.__name__ = name
    return fail


pearsonr = _missing("pearsonr")
spearmanr = _missing("spearmanr")
