"""bench: one data layer, one scorer and one latency meter for comparing text generators."""

__version__ = "0.1.0"
