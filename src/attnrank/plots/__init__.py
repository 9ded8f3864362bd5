"""Figures of the book, drawn with seaborn under one theme.

Every function returns a matplotlib ``Figure`` and takes tidy (long) pandas data, so the
data behind each figure can be offered for download as it is (:func:`attnrank.book.show`).
Labels, colours, the failed-run marker and input checks come from one place,
:mod:`attnrank.plots.style`.

Every public figure function is decorated with :func:`figure`: it draws with NumPy's global
random state set to a fixed seed (seaborn's strip-plot jitter draws from it) and restored
afterwards, so the same data give the same PNG bytes on every call and every execution of a
chapter, and the caller's random stream is untouched.
"""

from __future__ import annotations

import functools

import matplotlib
import numpy as np

matplotlib.use("Agg") if matplotlib.get_backend().lower() == "agg" else None
import matplotlib.pyplot as plt
import seaborn as sns

from .style import COLUMN_WIDTH, FONT_SIZE, MIN_FONT_SIZE, PALETTE

__all__ = [
    "cell_labels_fit",
    "set_theme",
    "PALETTE",
    "new_figure",
    "figure_legend",
    "shared_xlabel",
    "figure",
    "FIGURE_SEED",
    "style",
]

#: Seed of NumPy's global random state while a figure is drawn (:func:`figure`).
FIGURE_SEED = 0


def set_theme() -> None:
    """Apply the book's seaborn theme and type sizes (applied by :func:`new_figure` to every figure):
    every text of a figure drawn at most :data:`~attnrank.plots.style.COLUMN_WIDTH` wide is at least
    :data:`~attnrank.plots.style.MIN_FONT_SIZE` points, as large as the page's small print when shown."""
    sns.set_theme(context="paper", style="whitegrid", palette=PALETTE)
    small = MIN_FONT_SIZE
    plt.rcParams.update(
        {
            "figure.dpi": 100,
            "savefig.dpi": 200,
            "figure.autolayout": False,
            "font.size": FONT_SIZE,
            "axes.titlesize": FONT_SIZE,
            "axes.labelsize": FONT_SIZE,
            "xtick.labelsize": small,
            "ytick.labelsize": small,
            "legend.fontsize": small,
            "legend.title_fontsize": small,
            "figure.titlesize": FONT_SIZE,
        }
    )


def new_figure(ncols: int = 1, nrows: int = 1, *, width: float = 3.0, height: float = 2.6, **kw):
    """``plt.subplots`` with ``ncols x nrows`` panels of ``width x height`` inches, at most the column's width
    (:data:`~attnrank.plots.style.COLUMN_WIDTH`: wider grids get narrower panels); returns ``(fig, axes)``."""
    set_theme()  # every figure of the book in one theme, whoever draws it
    total = min(width * ncols, COLUMN_WIDTH)
    return plt.subplots(nrows, ncols, figsize=(total, height * nrows), constrained_layout=True, **kw)


def cell_labels_fit(ax, n_columns: int, labels) -> bool:
    """Whether ``labels`` (a heat map's cell texts) at :data:`~attnrank.plots.style.MIN_FONT_SIZE` fit the width of
    one of the ``n_columns`` cells of ``ax`` (a character taken as 0.6 em wide, with a tenth of the cell to spare);
    a heat map whose labels would not fit draws none (its data file has the numbers)."""
    cell = ax.get_position().width * ax.figure.get_size_inches()[0] * 72 / max(n_columns, 1)
    longest = max((len(str(v)) for v in np.ravel(np.asarray(labels, dtype=object))), default=0)
    return bool(longest * 0.6 * MIN_FONT_SIZE <= 0.9 * cell)  # a Python bool: seaborn reads any other as labels


def figure_legend(fig, handles, *, max_cols: int = 4, loc: str = "outside lower center", **kw):
    """A legend of ``handles`` below the panels of ``fig`` in as many columns (at most ``max_cols``) as fit
    in the figure's width; returns it.

    The book's PNG keeps the figure's size, so a legend wider than the figure would be cut off at both
    edges on the page: columns are dropped one at a time until it fits (one column always does, or the
    figure is too narrow for its longest label). ``kw`` goes to ``Figure.legend`` (``fontsize`` defaults
    to :data:`~attnrank.plots.style.MIN_FONT_SIZE`, ``frameon`` to ``False``).
    """
    kw = {"fontsize": MIN_FONT_SIZE, "frameon": False, **kw}
    handles = list(handles)
    renderer = fig.canvas.get_renderer()
    for ncols in range(max(1, min(max_cols, len(handles))), 0, -1):
        legend = fig.legend(handles=handles, loc=loc, ncols=ncols, **kw)
        if ncols == 1 or legend.get_window_extent(renderer).width <= fig.bbox.width * 0.98:
            return legend
        legend.remove()
    return legend


def shared_xlabel(fig, axes, text: str):
    """One x label ``text`` for the panels ``axes`` of ``fig`` that share their x axis, centred under them (a
    figure-level label, ``Figure.supxlabel``), in place of one label per panel: a long label (the temperature's,
    on two lines) is wider than a panel of a grid, and side by side the panels' labels ran into each other.

    Every visible panel of ``axes`` loses its own x label; one with no visible panel under it in its column keeps
    (or gets back) its x tick labels. Returns the label."""
    axes = np.asarray(axes, dtype=object).reshape(np.shape(axes) if np.ndim(axes) == 2 else (1, -1))
    shown = [ax for ax in axes.ravel() if ax.get_visible() and ax.axison]
    for ax in shown:
        ax.set_xlabel("")
    for i, j in np.ndindex(axes.shape):
        ax = axes[i, j]
        if ax in shown and not any(b in shown for b in axes[i + 1 :, j]):
            ax.xaxis.set_tick_params(which="both", labelbottom=True)
    fig.draw_without_rendering()  # constrained layout places the panels (and a legend beside them)
    x0 = min(ax.get_position().x0 for ax in shown)
    x1 = max(ax.get_position().x1 for ax in shown)
    return fig.supxlabel(text, x=(x0 + x1) / 2, fontsize=FONT_SIZE)


def figure(draw):
    """Decorator of a public figure function: the same data give the same figure, bit for bit.

    The function runs with NumPy's global random state seeded with :data:`FIGURE_SEED` (the
    strip plots' jitter, and any other draw that a plotting library takes from it); the
    caller's state is restored afterwards, also when the function raises. Marks the function
    with ``__attnrank_figure__ = True``.
    """

    @functools.wraps(draw)
    def seeded(*args, **kwargs):
        state = np.random.get_state()
        np.random.seed(FIGURE_SEED)
        try:
            return draw(*args, **kwargs)
        finally:
            np.random.set_state(state)

    seeded.__attnrank_figure__ = True
    return seeded
