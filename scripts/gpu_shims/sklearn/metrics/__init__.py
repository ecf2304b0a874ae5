"""Raising stand-ins for the names fairseq imports from ``sklearn.metrics`` (see the package docstring)."""

from __future__ import annotations

from typing import Any


def _missing(name: str):
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise ImportError(f"sklearn.metrics.{name}: scikit-learn is not installed here (make gpu-check put a "
                          "stand-in on the path so that fairseq imports); pip install scikit-learn to use it.")

    fail.__name__ = name
    return fail


f1_score = _missing("f1_score")
matthews_corrcoef = _missing("matthews_corrcoef")
average_precision_score = _missing("average_precision_score")
roc_auc_score = _missing("roc_auc_score")
