"""Encoder-only non-autoregressive generation (NAT baselines with GLAT, MIST, Mask-Predict).

Kept import-light: torch and the backbone load only when a submodule is imported, so listing the
registry stays instant. The registered factories live in :mod:`systems.nar.system`.
"""
