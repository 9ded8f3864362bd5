"""Figures of the causal chapter: the five cells of the 2 x 2 design, and the intervention at fixed weights."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns

from ..runs.experiments import CAUSAL_PRESETS, CELLS
from ..words.glossary import ARCH_LABELS, MEASURE_LABELS, fmt_tau, profile_sizes
from . import figure, figure_legend, new_figure
from .style import MIN_FONT_SIZE, SYMBOLS, tau_label

__all__ = ["CELL_LABELS", "cells", "intervention", "cells_figure", "intervention_figure"]

#: Their names in tables and figures (``s`` is the scale ``1 / sqrt(tau)``).
CELL_LABELS = {
    "stock": "τ = 1",
    "init": "init × s",
    "lr": "q/k lr × s",
    "twin": "init × s, lr × s (twin)",
    "tau": "τ",
}


@figure
def cells(table: pd.DataFrame, outcomes: dict, order, labels: dict, *, width: float = 4.4, height: float = 2.5):
    """One panel per outcome (rows) and architecture (columns): every run as a dot over its cell,
    the mean over seeds as a bar, and the runs of one seed joined by a faint line (the design is
    paired by seed).

    Args:
        table: one row per run with ``arch``, ``seed``, ``cell`` and the ``outcomes`` columns.
        outcomes: ``{column: axis label}``.
        order: the cells in display order; ``labels``: ``{cell: tick label}``.
    """
    archs = sorted(table.arch.unique())
    fig, axes = new_figure(len(archs), len(outcomes), width=width, height=height, squeeze=False)
    x = {c: i for i, c in enumerate(order)}
    for r, (col, label) in enumerate(outcomes.items()):
        for j, a in enumerate(archs):
            ax, d = axes[r, j], table[table.arch == a]
            for _, s in d.groupby("seed"):
                s = s.assign(x=s.cell.map(x)).sort_values("x")
                ax.plot(s.x, s[col], color="0.75", lw=0.7, zorder=1)
            sns.stripplot(
                d,
                x="cell",
                y=col,
                order=list(order),
                hue="cell",
                hue_order=list(order),
                legend=False,
                ax=ax,
                size=4,
                jitter=False,
                zorder=2,
            )
            means = d.groupby("cell")[col].mean().reindex(order)
            ax.hlines(
                means.to_numpy(), np.arange(len(order)) - 0.3, np.arange(len(order)) + 0.3, color="k", lw=1.5, zorder=3
            )
            ax.set_xlabel("")
            ax.set_ylabel(label if j == 0 else "")
            ax.set_xticks(  # upright: slanted, the long cell names ran into their neighbours
                range(len(order)),
                [labels[c] for c in order] if r == len(outcomes) - 1 else [""] * len(order),
                rotation=90,
                fontsize=MIN_FONT_SIZE,
            )
            if r == 0:
                ax.set_title(ARCH_LABELS.get(a, a))
    return fig  # laid out by the figure's constrained layout (tight_layout would replace it, with a warning)


@figure
def intervention(df: pd.DataFrame, measure: str, measure_label: str, *, width: float = 4.2, height: float = 2.6):
    """The intervention at fixed weights: rank (top) and the change of validation loss from its value at
    the training temperature (bottom) against the evaluation temperature, one line per trained run,
    coloured by its training temperature; a circle at the training temperature itself.

    Args:
        df: rows of :func:`attnrank.sections.causal.eval_temperatures` with ``arch``, ``seed``, ``train_tau``.
    """
    archs = sorted(df.arch.unique())
    fig, axes = new_figure(len(archs), 2, width=width, height=height, squeeze=False, sharex=True)
    taus = sorted(df.train_tau.unique())
    palette = dict(zip(taus, sns.color_palette("colorblind", len(taus))))
    for j, a in enumerate(archs):
        for r, (col, label) in enumerate(
            ((measure, measure_label), ("loss_change", "validation loss change\n(nats/token)"))
        ):
            ax = axes[r, j]
            for (t, _seed), d in df[df.arch == a].groupby(["train_tau", "seed"]):
                d = d.sort_values("eval_tau")
                d = d.assign(loss_change=d.val_loss - d.val_loss[np.isclose(d.eval_tau, t)].mean())
                ax.plot(d.eval_tau, d[col], color=palette[t], lw=1, marker=".", label=f"trained at {tau_label(t)}")
                own = d[np.isclose(d.eval_tau, t)]
                ax.plot(own.eval_tau, own[col], "o", mfc="none", color=palette[t], ms=8)
            ax.set_xscale("log")
            ax.set_ylabel(label if j == 0 else "")
            if r == 1:
                ax.set_xlabel(f"evaluation {SYMBOLS['tau']}")
            else:
                ax.set_title(ARCH_LABELS.get(a, a))
    handles, names = axes[0, 0].get_legend_handles_labels()
    uniq = dict(zip(names, handles))
    # below the panels, where constrained layout makes room for it
    figure_legend(fig, uniq.values(), max_cols=len(uniq))
    return fig


@figure
def cells_figure(table: pd.DataFrame, *, tau: float, measure: str, profile: str, n_runs: int):
    """:func:`cells` for the causal chapter, as ``(figure, data, name, source)`` for :func:`attnrank.book.show`.

    ``table``: :func:`attnrank.sections.causal.outcomes` for ``measure`` at temperature ``tau``; the panels
    are the initial rank, the mean rank through training and the final loss, the cells in
    :data:`attnrank.sections.causal.CELLS` order (the ``tau`` cell named with its value). ``source``: the
    caption's last words, the profile, its sizes and the ``n_runs`` runs (the chapter writes the rest).
    """
    label = MEASURE_LABELS[measure]
    labels = {c: CELL_LABELS[c].replace("τ", fmt_tau(tau)) if c == "tau" else CELL_LABELS[c] for c in CELLS}
    ylab = {
        "initial": f"initial {label}",
        "during": f"mean {label}\nthrough training",
        "final_val_loss": "final validation loss\n(nats/token)",
    }
    return (
        cells(table, ylab, CELLS, labels),
        table,
        "causal_cells",
        f"{profile_sizes(profile, CAUSAL_PRESETS[profile][0]).removeprefix('the ')}, {n_runs} runs.",
    )


@figure
def intervention_figure(inter: pd.DataFrame, *, measure: str, profile: str):
    """:func:`intervention` for the causal chapter, as ``(figure, data, name, source)``.

    ``inter``: :func:`attnrank.sections.causal.intervention` of the runs at ``tau = 1`` and the chapter's
    ``tau``; ``source``: the caption's last words, the profile and its sizes (the chapter writes the rest).
    """
    return (
        intervention(inter, measure, MEASURE_LABELS[measure]),
        inter,
        "causal_intervention",
        f"{profile_sizes(profile, CAUSAL_PRESETS[profile][0]).replace('the', 'The', 1)}.",
    )
