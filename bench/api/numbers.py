"""One rule for "a number a record may hold": a finite int or float, never a bool (JSON's true is not 1)."""

from __future__ import annotations

import math
from typing import Any, TypeGuard


def finite(x: Any) -> TypeGuard[int | float]:
    """Whether ``x`` is a finite int or float (not a bool, not NaN or an infinity)."""
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


__all__ = ["finite"]
