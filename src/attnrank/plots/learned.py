"""The figure of the "Have the models learned?" chapter: validation loss against compute beside the count
baselines."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import LogFormatterSciNotation, LogLocator, NullFormatter

from ..core.profiles import ARCH_ORDER
from ..words.glossary import ARCH_LABELS
from . import figure_legend, new_figure
from .style import BASELINE_COLOR, check_columns, tau_label

__all__ = ["BASELINE_STYLES", "loss_vs_compute", "loss_figure"]

#: Line style and label of each count baseline.
BASELINE_STYLES = {
    "unigram": (":", "unigram"),
    "bigram": ("--", "bigram (left neighbour)"),
    "two_sided": ("-.", "two-sided (both neighbours)"),
    "context_free": ((0, (1, 1, 4, 1)), "context-free (masking only)"),
}


def _baselines(ax, values: dict) -> None:
    for name, (style, label) in BASELINE_STYLES.items():
        v = values.get(name)
        if v is not None and np.isfinite(v):
            ax.axhline(v, ls=style, color=BASELINE_COLOR, lw=1, label=label)


def _log_x(ax) -> None:
    """A log x axis with labels a reader can use: the decades where the data span two or more; 1 and 3 times
    each power of ten where they span less (a FLOP axis of about one decade showed one tick, 10⁹; 2 and 5 times
    ran into the decade labels on a narrow panel). Minor ticks stay unlabelled (their labels ran together). Call
    after the data are drawn."""
    ax.set_xscale("log")
    lo, hi = ax.dataLim.intervalx
    if lo > 0 and hi / lo < 100:
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 3.0)))
        ax.xaxis.set_major_formatter(LogFormatterSciNotation(labelOnlyBase=False))
    ax.xaxis.set_minor_formatter(NullFormatter())


def loss_vs_compute(curves: pd.DataFrame, *, width: float = 4.4, height: float = 3.2):
    """Validation loss through training against training FLOP, one panel per architecture: one line per run,
    coloured by its temperature, and the count baselines as black lines.

    Args:
        curves: rows of :func:`attnrank.sections.learned.curves` (``arch, tau, seed, flop, val_loss`` and the
            baseline columns).
    """
    check_columns(curves, ["arch", "tau", "seed", "flop", "val_loss", *BASELINE_STYLES], "curves")
    archs = [a for a in ARCH_ORDER if a in set(curves.arch)]
    fig, axes = new_figure(len(archs), 1, width=width, height=height, squeeze=False)
    taus = sorted(curves.tau.unique(), reverse=True)
    palette = dict(zip(taus, sns.color_palette("colorblind", len(taus))))
    for j, a in enumerate(archs):
        ax, d = axes[0, j], curves[(curves.arch == a) & (curves.flop > 0)]
        for (tau, seed), g in d.groupby(["tau", "seed"]):
            first = seed == d[d.tau == tau].seed.min()
            ax.plot(g.flop, g.val_loss, color=palette[tau], lw=1.2, label=tau_label(tau) if first else None)
        _baselines(ax, d.iloc[0].to_dict())
        _log_x(ax)
        ax.set_xlabel("training FLOP")
        ax.set_ylabel("validation loss (nats/token)" if j == 0 else "")
        ax.set_title(ARCH_LABELS.get(a, a))
    # one legend below the panels (inside a panel it covered the curves' ends), every label once
    labelled = {}
    for ax in axes.ravel():
        for handle, label in zip(*ax.get_legend_handles_labels()):
            labelled.setdefault(label, handle)
    figure_legend(fig, labelled.values())
    return fig


def loss_figure(curves: pd.DataFrame):
    """:func:`loss_vs_compute` with its data, name and source (``""``: every word of the caption is the
    chapter's, its numbers glued), for :func:`attnrank.book.show`."""
    return loss_vs_compute(curves), curves, "learned_loss", ""
