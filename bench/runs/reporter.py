"""How a run says what it does: one line at a time, to ``print``, a rich console or a test's list."""

from __future__ import annotations

from collections.abc import Callable

Reporter = Callable[[str], None]
