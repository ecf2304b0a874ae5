"""A quality-versus-speed scatter as inline SVG, drawn into a leaderboard page.

Why SVG text and not a matplotlib PNG: the page stays one self-contained file, the plot is
byte-for-byte deterministic (``bench table --check`` compares it like any other text), and a browser
test can read its labels. Each point is labelled; the Pareto front (:func:`bench.report.plots.frontier`:
no other point is both faster and better) is a dashed line over the healthy points only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from bench.report import html_escape
from bench.report.plots import frontier

W, H = 600, 350
LEFT, RIGHT, TOP, BOTTOM = 56, 170, 30, 46  # margins; the right one holds labels of the fastest points
#: label box estimate at 11 px: the pages show a plot at its natural size (scrolling in its box on a phone), so
#: 11 px labels stay 11 px, never scaled down to the 6 px a 560-px plot shrunk onto a phone had
CHAR_W, LINE_H = 6.2, 12


@dataclass(frozen=True)
class Point:
    label: str
    x: float  # speed-up (×)
    y: float  # headline metric
    degenerate: bool = False
    own: bool = True  # speed measured on this run, not on its paper row's architecture


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]."""
    span = hi - lo if hi > lo else 1.0
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + i * step, 6) for i in range(int((hi - first) / step) + 2)
            if first + i * step <= hi + 1e-9]


def _num(v: float) -> str:
    return f"{round(v, 4):g}"


def quality_speed_svg(title: str, points: Sequence[Point], y_label: str, x_label: str = "speed-up over the AR "
                      "baseline (×, batch 1)", x_unit: str = "×") -> str:
    """One scatter: ``points`` labelled, the front of the healthy ones dashed."""
    e = html_escape.text
    xs, ys = [p.x for p in points], [p.y for p in points]
    x_lo, x_hi = 0.0, max([*xs, 1.0]) * 1.08
    y_pad = max((max(ys) - min(ys)) * 0.1, 0.5) if ys else 1.0
    y_lo, y_hi = (max(0.0, min(ys) - y_pad), max(ys) + y_pad) if ys else (0.0, 1.0)
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def sx(v: float) -> float:
        return round(LEFT + (v - x_lo) / (x_hi - x_lo) * pw, 1)

    def sy(v: float) -> float:
        return round(TOP + ph - (v - y_lo) / (y_hi - y_lo) * ph, 1)

    out = [f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" role="img" aria-label="{e(title)}">',
           f'<text x="{LEFT}" y="16" class="t">{e(title)}</text>',
           f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" class="frame"/>']
    for t in _ticks(x_lo, x_hi):
        out.append(f'<line x1="{sx(t)}" y1="{TOP}" x2="{sx(t)}" y2="{TOP + ph}" class="grid"/>'
                   f'<text x="{sx(t)}" y="{TOP + ph + 13}" class="tick" text-anchor="middle">{_num(t)}</text>')
    for t in _ticks(y_lo, y_hi):
        out.append(f'<line x1="{LEFT}" y1="{sy(t)}" x2="{LEFT + pw}" y2="{sy(t)}" class="grid"/>'
                   f'<text x="{LEFT - 4}" y="{sy(t) + 3}" class="tick" text-anchor="end">{_num(t)}</text>')
    out.append(f'<text x="{LEFT + pw / 2}" y="{H - 8}" class="axis" text-anchor="middle">{e(x_label)}</text>')
    out.append(f'<text transform="translate(12,{TOP + ph / 2}) rotate(-90)" class="axis" '
               f'text-anchor="middle">{e(y_label)}</text>')
    healthy = [{"label": p.label, "x": p.x, "y": p.y} for p in points if not p.degenerate]
    front = set(frontier(healthy))
    line = sorted((p for p in points if p.label in front and not p.degenerate), key=lambda p: p.x)
    if len(line) > 1:
        path = " ".join(f"{sx(p.x)},{sy(p.y)}" for p in line)
        out.append(f'<polyline points="{path}" class="front"/>')
    placed: list[tuple[float, float, float, float]] = []
    for p in sorted(points, key=lambda p: (-p.y, p.x, p.label)):
        cls = "pt deg" if p.degenerate else ("pt" if p.own else "pt arch")
        out.append(f'<circle cx="{sx(p.x)}" cy="{sy(p.y)}" r="4" class="{cls}"><title>{e(p.label)}: '
                   f'{p.y:.2f} at {p.x:.2f}{e(x_unit)}</title></circle>')
        lx, ly = sx(p.x) + 6, sy(p.y) + 3
        w = CHAR_W * len(p.label)
        for _ in range(12):  # move down past labels already placed
            box = (lx, ly - LINE_H + 2, lx + w, ly + 2)
            if not any(a < box[2] and box[0] < c and b < box[3] and box[1] < d for a, b, c, d in placed):
                break
            ly += LINE_H
        placed.append((lx, ly - LINE_H + 2, lx + w, ly + 2))
        out.append(f'<text x="{lx}" y="{ly}" class="lbl">{e(p.label)}</text>')
    if not points:
        out.append(f'<text x="{LEFT + pw / 2}" y="{TOP + ph / 2}" class="axis" text-anchor="middle">'
                   "no run with a measured speed-up</text>")
    out.append("</svg>")
    return "".join(out)


#: the page's CSS for the classes above
SVG_CSS = (
    "svg.plot{background:#fff;border:1px solid #ddd;margin:0 1em 1em 0;max-width:100%;height:auto}"
    "svg .t{font:bold 13px system-ui,sans-serif}svg .axis{font:12px system-ui,sans-serif;fill:#333}"
    "svg .tick{font:11px system-ui,sans-serif;fill:#555}svg .lbl{font:11px system-ui,sans-serif;fill:#222}"
    "svg .frame{fill:none;stroke:#999}svg .grid{stroke:#eee}"
    "svg .front{fill:none;stroke:#1f77b4;stroke-dasharray:5 3;stroke-width:1.5}"
    "svg .pt{fill:#1f77b4}svg .pt.arch{fill:#fff;stroke:#1f77b4;stroke-width:1.5}"
    "svg .pt.deg{fill:#fff;stroke:#b35900;stroke-width:1.5}"
)
