"""A run's seed, set once in every random number generator the run's process uses."""

from __future__ import annotations

import random
import sys


def seed_everything(seed: int) -> None:
    """Python, numpy and (when a system already imported it) torch, from the spec's seed."""
    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:
        pass
    if "torch" in sys.modules:  # seed torch only if a system already needs it; never import it here
        sys.modules["torch"].manual_seed(seed)
