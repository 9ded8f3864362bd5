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

from .style import PALETTE  # the plot grammar: labels, colours, markers, checks

__all__ = ["set_theme", "PALETTE", "new_figure", "figure", "FIGURE_SEED", "style"]

#: Seed of NumPy's global random state while a figure is drawn (:func:`figure`).
FIGURE_SEED = 0


def set_theme() -> None:
    """Apply the book's seaborn theme (called once per chapter by :func:`attnrank.book.setup`)."""
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE, font_scale=0.95)
    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 150, "figure.autolayout": False})


def new_figure(ncols: int = 1, nrows: int = 1, *, width: float = 4.2, height: float = 3.2, **kw):
    """``plt.subplots`` with the book's panel size; returns ``(fig, axes)``."""
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), constrained_layout=True, **kw)


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
