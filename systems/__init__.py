"""System adapters, reached by the harness only through :data:`SYSTEMS` (lazy entries)."""

from __future__ import annotations

from bench.registry import Registry

SYSTEMS: Registry = Registry("system")

# Reference baselines: exercise the whole pipeline on real data without a model.
SYSTEMS.register("copy_source", "systems.baselines:copy_source", family="reference")
SYSTEMS.register("lead1", "systems.baselines:lead1", family="reference")
# Latency probe: does nothing, so the meter's own overhead can be measured against it.
SYSTEMS.register("null", "systems.null:null", family="reference")
