"""A grouped horizontal bar chart as a self-contained SVG document, on a
logarithmic axis: one group of bars per work item (a GEMM shape, the
Linear step), one bar per candidate in each group. Pure Python, no plotting
package, so the benchmark writes its plot on any machine.

grouped_bars_svg(groups, series, values, title, unit) -> str
  groups: the group labels, top to bottom;
  series: the candidate names, one colour each, in legend order;
  values: {(group, series): value > 0}; a missing pair draws no bar.
"""

import math
from typing import Dict, Sequence, Tuple
from xml.sax.saxutils import escape

PALETTE = ("#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")

LABEL_WIDTH = 190
PLOT_WIDTH = 520
VALUE_WIDTH = 70
BAR_HEIGHT = 12
BAR_GAP = 2
GROUP_GAP = 14
TOP = 46
LEGEND_ROW = 16


def log_axis(values: Sequence[float]) -> Tuple[int, int]:
    """The decades [lo, hi] (powers of ten) that hold every value > 0."""
    positive = [v for v in values if v > 0 and math.isfinite(v)]
    if not positive:
        raise ValueError("values: no positive finite value to plot")
    lo = math.floor(math.log10(min(positive)))
    hi = math.ceil(math.log10(max(positive)))
    if hi == lo:
        hi = lo + 1
    return lo, hi


def bar_length(value: float, lo: int, hi: int, width: float = PLOT_WIDTH) -> float:
    """The bar of `value` on a log axis from 10^lo (length 0) to 10^hi (width)."""
    return width * (math.log10(value) - lo) / (hi - lo)


def _number(value: float) -> str:
    return f"{value:.3g}" if value < 1000 else f"{value:.0f}"


def grouped_bars_svg(groups: Sequence[str], series: Sequence[str], values: Dict[Tuple[str, str], float],
                     title: str, unit: str) -> str:
    if len(series) > len(PALETTE):
        raise ValueError(f"series: at most {len(PALETTE)} candidates (one colour each); got {len(series)}")
    for (g, s), v in values.items():
        if g not in groups or s not in series:
            raise ValueError(f"values: ({g!r}, {s!r}) names an unknown group or series")
        if not (v > 0 and math.isfinite(v)):
            raise ValueError(f"values: ({g!r}, {s!r}) is {v!r}; a log axis takes finite values > 0")
    lo, hi = log_axis(list(values.values()))
    colour = {s: PALETTE[i] for i, s in enumerate(series)}
    rows_per_group = [[s for s in series if (g, s) in values] for g in groups]
    legend_rows = math.ceil(len(series) / 3)
    plot_top = TOP + legend_rows * LEGEND_ROW + 10
    height = plot_top + sum(len(r) * (BAR_HEIGHT + BAR_GAP) + GROUP_GAP for r in rows_per_group) + 30
    width = LABEL_WIDTH + PLOT_WIDTH + VALUE_WIDTH + 20
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="18" text-anchor="middle" font-size="14">{escape(title)}</text>']
    for i, s in enumerate(series):  # legend, three per row
        x = LABEL_WIDTH + (i % 3) * 175
        y = TOP + (i // 3) * LEGEND_ROW
        out.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{colour[s]}"/>')
        out.append(f'<text x="{x + 14}" y="{y}">{escape(s)}</text>')
    bottom = height - 30
    for decade in range(lo, hi + 1):  # grid and tick labels
        x = LABEL_WIDTH + bar_length(10.0 ** decade, lo, hi)
        out.append(f'<line x1="{x:.1f}" y1="{plot_top - 4}" x2="{x:.1f}" y2="{bottom}" stroke="#ccc"/>')
        out.append(f'<text x="{x:.1f}" y="{bottom + 14}" text-anchor="middle">{_number(10.0 ** decade)}</text>')
    out.append(f'<text x="{LABEL_WIDTH + PLOT_WIDTH / 2}" y="{bottom + 27}" text-anchor="middle">'
               f'{escape(unit)} (log scale)</text>')
    y = plot_top
    for g, present in zip(groups, rows_per_group):
        if present:
            mid = y + len(present) * (BAR_HEIGHT + BAR_GAP) / 2
            out.append(f'<text x="{LABEL_WIDTH - 8}" y="{mid + 4:.1f}" text-anchor="end">{escape(g)}</text>')
        for s in present:
            v = values[(g, s)]
            length = max(bar_length(v, lo, hi), 1.0)
            out.append(f'<rect x="{LABEL_WIDTH}" y="{y}" width="{length:.1f}" height="{BAR_HEIGHT}" '
                       f'fill="{colour[s]}"><title>{escape(g)}, {escape(s)}: {_number(v)} {escape(unit)}</title></rect>')
            out.append(f'<text x="{LABEL_WIDTH + length + 4:.1f}" y="{y + BAR_HEIGHT - 2}">{_number(v)}</text>')
            y += BAR_HEIGHT + BAR_GAP
        y += GROUP_GAP
    out.append("</svg>")
    return "\n".join(out) + "\n"
