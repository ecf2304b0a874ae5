"""Throughput against batch size as an inline log-log SVG line plot, drawn into a task's speed page.

Why hand-written SVG like :mod:`bench.report.svg_plot`: the page stays one self-contained file and the plot is
byte-for-byte deterministic (no timestamps, no random ids), so ``bench table --check`` compares it as text.
Every label is record data and goes through :mod:`bench.report.html_escape`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from bench.report import html_escape

W, H = 600, 360
LEFT, RIGHT, TOP, BOTTOM = 56, 190, 30, 44
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
           "#ff7f0e")


@dataclass(frozen=True)
class Series:
    """One line: a system at one thread count; ``points`` are (batch size, sentences/s); ``baseline``: dashed."""

    label: str
    points: tuple[tuple[int, float], ...]
    baseline: bool = False


@dataclass(frozen=True)
class Mark:
    """A crossover: the baseline curve at ``b`` reaching ``label``'s sentences/s."""

    label: str
    b: int
    y: float


def _decades(lo: float, hi: float) -> list[float]:
    return [10.0 ** k for k in range(math.floor(lo), math.ceil(hi) + 1) if lo - 1e-9 <= k <= hi + 1e-9]


def _n(v: float) -> str:
    return f"{round(v, 1):g}"


def throughput_svg(title: str, series: Sequence[Series], marks: Sequence[Mark] = ()) -> str:
    """Sentences/s (log) against batch size (log), one line per series, crossovers ringed on the baseline."""
    e = html_escape.text
    xs = [math.log10(b) for s in series for b, _ in s.points]
    ys = [math.log10(v) for s in series for _, v in s.points if v > 0]
    x_lo, x_hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
    y_lo, y_hi = (min(ys), max(ys)) if ys else (0.0, 1.0)
    if x_hi - x_lo < 0.3:
        x_lo, x_hi = x_lo - 0.15, x_hi + 0.15
    pad = max((y_hi - y_lo) * 0.08, 0.1)
    y_lo, y_hi = y_lo - pad, y_hi + pad
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def sx(b: float) -> str:
        return _n(LEFT + (math.log10(b) - x_lo) / (x_hi - x_lo) * pw)

    def sy(v: float) -> str:
        return _n(TOP + ph - (math.log10(max(v, 1e-12)) - y_lo) / (y_hi - y_lo) * ph)

    out = [f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" role="img" aria-label="{e(title)}">',
           f'<text x="{LEFT}" y="16" class="t">{e(title)}</text>',
           f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" class="frame"/>']
    for b in sorted({b for s in series for b, _ in s.points}):
        out.append(f'<line x1="{sx(b)}" y1="{TOP}" x2="{sx(b)}" y2="{TOP + ph}" class="grid"/>'
                   f'<text x="{sx(b)}" y="{TOP + ph + 13}" class="tick" text-anchor="middle">{b}</text>')
    for v in _decades(y_lo, y_hi):
        out.append(f'<line x1="{LEFT}" y1="{sy(v)}" x2="{LEFT + pw}" y2="{sy(v)}" class="grid"/>'
                   f'<text x="{LEFT - 4}" y="{_n(float(sy(v)) + 3)}" class="tick" text-anchor="end">{v:g}</text>')
    out.append(f'<text x="{LEFT + pw / 2:g}" y="{H - 8}" class="axis" text-anchor="middle">batch size B (log)</text>')
    out.append(f'<text transform="translate(12,{TOP + ph / 2:g}) rotate(-90)" class="axis" '
               'text-anchor="middle">sentences/s (log)</text>')
    for i, s in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        pts = sorted(p for p in s.points if p[1] > 0)
        dash = ' stroke-dasharray="6 3"' if s.baseline else ""
        if len(pts) > 1:
            path = " ".join(f"{sx(b)},{sy(v)}" for b, v in pts)
            out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1.6"{dash}/>')
        for b, v in pts:
            out.append(f'<circle cx="{sx(b)}" cy="{sy(v)}" r="3" fill="{color}"><title>{e(s.label)}: B={b}, '
                       f'{v:.3g} sentences/s</title></circle>')
        ly = TOP + 12 + i * 14
        out.append(f'<line x1="{LEFT + pw + 10}" y1="{ly - 4}" x2="{LEFT + pw + 28}" y2="{ly - 4}" stroke="{color}" '
                   f'stroke-width="1.6"{dash}/><text x="{LEFT + pw + 32}" y="{ly}" class="lbl">{e(s.label)}</text>')
    for m in marks:
        out.append(f'<circle cx="{sx(m.b)}" cy="{sy(m.y)}" r="7" class="cross"><title>crossover: the baseline '
                   f'reaches {e(m.label)} at B={m.b}</title></circle>')
    if not series:
        out.append(f'<text x="{LEFT + pw / 2:g}" y="{TOP + ph / 2:g}" class="axis" text-anchor="middle">'
                   "no cell</text>")
    out.append("</svg>")
    return "".join(out)


#: the classes above beside :data:`bench.report.svg_plot.SVG_CSS`
SPEED_SVG_CSS = "svg .cross{fill:none;stroke:#000;stroke-width:1.5}"
