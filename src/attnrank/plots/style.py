"""The book's plot grammar: one set of axis labels, one set of colours and markers, formatters
and input checks, shared by every figure module.

The labels follow the book's notation (theory chapter): the temperature *ratio* ``tau``
(the softmax divides the logits ``QK^T / sqrt(d_h)`` by it, so the temperature is
``T = tau sqrt(d_h)``), the head dimension ``d_h``, the rank measures and the architectures by
their names in :mod:`attnrank.words.glossary`. A figure module takes its words from :data:`SYMBOLS`
(inside a sentence or a legend title), :data:`LABELS` / :func:`axis_label` (axis and colour-bar
labels), :func:`measure_label` and :data:`attnrank.words.glossary.ARCH_LABELS`; its colours from :data:`PALETTE`, :data:`MEASURE_COLORS`,
:data:`TAU_CMAP` / :data:`HEAD_DIM_CMAP`; failed (diverged) runs are drawn with
:data:`FAILED_COLOR` and :data:`FAILED_MARKER`. :func:`check_columns` checks a figure's data
and raises :class:`attnrank.ConfigError`, like every other input check of the project.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib import colors as mcolors
from matplotlib.ticker import NullFormatter

from ..core.errors import ConfigError
from ..core.measures import MEASURES
from ..words.glossary import MEASURE_LABELS, fmt_tau

__all__ = [
    "COLUMN_WIDTH",
    "FONT_SIZE",
    "MIN_FONT_SIZE",
    "PALETTE",
    "SYMBOLS",
    "LABELS",
    "MEASURE_COLORS",
    "TAU_CMAP",
    "HEAD_DIM_CMAP",
    "FAILED_COLOR",
    "FAILED_MARKER",
    "HIGHLIGHT_COLOR",
    "BASELINE_COLOR",
    "axis_label",
    "measure_label",
    "decade_labels",
    "tau_label",
    "check_columns",
]

#: The width (inches) of a figure that fills the book's text column: 688 CSS pixels at a 1280-pixel
#: window, where a point of type is 688 / (72 x 6.0) = 1.6 pixels.
COLUMN_WIDTH = 6.0
#: Type size (points) of titles and axis labels.
FONT_SIZE = 9.0
#: The smallest type (points) of any figure text: tick labels, legends, notes in a panel (13.6 pixels
#: shown at the column's width, the size of the page's small print).
MIN_FONT_SIZE = 8.5
#: Colour palette shared by all figures (colour-blind safe).
PALETTE = "colorblind"
#: The symbol of each quantity, for legend titles, panel titles and sentences.
SYMBOLS = {"tau": r"$\tau$", "head_dim": r"$d_h$", "n": r"$n$", "T": r"$T$"}
#: ``τ = 0.03`` in a figure (:func:`attnrank.words.glossary.fmt_tau` with the mathtext symbol).
tau_label = functools.partial(fmt_tau, symbol=SYMBOLS["tau"])
#: Axis and colour-bar labels (one wording per quantity; the temperature's on two lines, as a panel of a
#: two-column figure is narrower than it on one).
LABELS = {
    "tau": "temperature ratio $\\tau$\n(temperature $T = \\tau\\sqrt{d_h}$)",
    "head_dim": r"head dimension $d_h$",
    "step": "training step",
    "seed": "seed",
    "layer": "layer",
    "final_val_loss": "final validation loss (nats/token)",
    "initial_val_loss": "initial validation loss (nats/token)",
    "val_loss": "validation loss (nats/token)",
}
#: Colour of failed (diverged) runs, and their marker (at the last logged value).
FAILED_COLOR = "#d62728"
FAILED_MARKER = "X"
#: Colour of a highlighted setting and of the baseline (tau = 1).
HIGHLIGHT_COLOR = "#d62728"
BASELINE_COLOR = "black"


def _truncated(name: str, low: float, high: float) -> mcolors.Colormap:
    base = sns.color_palette(name, as_cmap=True)
    return mcolors.ListedColormap(base(np.linspace(low, high, 256)), name=f"{name}_trunc")


#: Colour map of the temperature ratio (log scale); the bright end is cut so lines stay visible on white.
TAU_CMAP = _truncated("viridis", 0.0, 0.88)
#: Colour map of the head dimension (log scale).
HEAD_DIM_CMAP = _truncated("rocket", 0.15, 0.8)


def _measure_colors() -> dict:
    colors = sns.color_palette(PALETTE, 10)
    return {name: colors[i % len(colors)] for i, name in enumerate(MEASURES)}


#: One colour per rank measure (order of :data:`attnrank.core.rank.MEASURES`), shared by every figure.
MEASURE_COLORS = _measure_colors()


def measure_label(name: str) -> str:
    """Label of a rank measure (:data:`attnrank.words.glossary.MEASURE_LABELS`), of a loss column
    (:data:`LABELS`), or the name itself."""
    return MEASURE_LABELS.get(name) or LABELS.get(name, str(name))


def axis_label(name: str, *, log: bool = False) -> str:
    """The axis label of quantity ``name`` (:data:`LABELS`, else :func:`measure_label`), with
    ``", log scale"`` when ``log``."""
    text = LABELS.get(name) or measure_label(name)
    return f"{text}, log scale" if log else text


def decade_labels(ax, *, x: bool = True, y: bool = False) -> None:
    """Label only the decades of ``ax``'s log axes (``x`` and/or ``y``; linear axes are left alone); the minor
    ticks stay, unlabelled. Matplotlib labels the minor ticks (2x10^0, 3x10^0, ...) of an axis that spans under
    a decade or so, and side by side on an x axis those labels run together. Call it after the scale is set."""
    for on, axis in ((x, ax.xaxis), (y, ax.yaxis)):
        if on and axis.get_scale() == "log":
            axis.set_minor_formatter(NullFormatter())


def check_columns(data, columns, name: str = "data") -> None:
    """Check that ``data`` is a DataFrame with every column of ``columns``.

    Raises:
        ConfigError: naming ``name`` (the figure function's parameter), listing the missing
        columns and the ones present.
    """
    if not isinstance(data, pd.DataFrame):
        raise ConfigError(name, f"expected a pandas DataFrame, got {type(data).__name__}")
    missing = [c for c in columns if c not in data.columns]
    if missing:
        raise ConfigError(name, f"missing column(s) {missing}; needs {list(columns)}, has {list(data.columns)}")
