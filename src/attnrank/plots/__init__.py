"""Figures of the book, drawn with seaborn under one theme.

Every function returns a matplotlib ``Figure`` and takes tidy (long) pandas data, so the
data behind each figure can be offered for download as it is (:func:`attnrank.book.show`).
Labels, colours, the failed-run marker and input checks come from one place,
:mod:`attnrank.plots.style`.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg") if matplotlib.get_backend().lower() == "agg" else None
import matplotlib.pyplot as plt
import seaborn as sns

from .style import PALETTE  # the plot grammar: labels, colours, markers, checks

__all__ = ["set_theme", "PALETTE", "new_figure", "style"]


def set_theme() -> None:
    """Apply the book's seaborn theme (called once per chapter by :func:`attnrank.book.setup`)."""
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE, font_scale=0.95)
    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 150, "figure.autolayout": False})


def new_figure(ncols: int = 1, nrows: int = 1, *, width: float = 4.2, height: float = 3.2, **kw):
    """``plt.subplots`` with the book's panel size; returns ``(fig, axes)``."""
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), constrained_layout=True, **kw)
