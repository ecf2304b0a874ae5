"""The single-stream latency meter (public API).

``measure(systems, examples, baseline=..., n=..., rounds=...)`` times systems at batch size 1 and
returns a :class:`LatencyReport`; ``report.record(name)`` is the ``latency`` dict of a run record.
Submodules each hold one job: ``schedule`` (which items, which order), ``clock`` (device sync),
``canary`` (the device and host canaries: warm-up, drift, their reasons), ``sizing`` (a canary's
size for this machine), ``workloads`` (what the canaries run), ``stats`` (summaries, paired
bootstrap), ``outputs`` (hash checks), ``report`` (verdict, signature).
"""

from bench.api.errors import LengthForcedUnsupported
from bench.latency.meter import measure
from bench.latency.render import render_report
from bench.latency.report import LATENCY_VERSION, LatencyReport, Settings, SystemLatency, latency_signature
from bench.latency.stats import LatencyStats, Speedup, paired_bootstrap_speedup, summarize

__all__ = [
    "LATENCY_VERSION",
    "LatencyReport",
    "LatencyStats",
    "LengthForcedUnsupported",
    "Settings",
    "Speedup",
    "SystemLatency",
    "latency_signature",
    "measure",
    "paired_bootstrap_speedup",
    "render_report",
    "summarize",
]

import typing

if not typing.TYPE_CHECKING:  # at run time `bench.latency.<module>` loads on first use (the docs' paths)
    from bench.api.lazy import submodules

    __getattr__ = submodules(__name__)
