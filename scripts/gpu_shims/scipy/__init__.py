"""Not SciPy: a raising stand-in put on the path by `make gpu-check` only where SciPy is missing, because
fairseq's sentence-prediction criterion imports ``scipy.stats`` at module level (see ../sklearn)."""
