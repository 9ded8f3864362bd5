"""Figures of the "Have the models learned?" chapter: validation loss against compute beside the count
baselines, and the recipe study."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import LogFormatterSciNotation, LogLocator, NullFormatter

from ..core.profiles import ARCH_ORDER
from ..words.glossary import ARCH_LABELS
from . import figure_legend, new_figure
from .style import BASELINE_COLOR, check_columns, fmt_tau

__all__ = ["BASELINE_STYLES", "loss_vs_compute", "loss_figure", "recipe", "recipe_figure"]

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
    """A log x axis with labels a reader can use: the decades where the data span two or more; 1, 2 and 5 times
    each power of ten where they span less (a FLOP axis of about one decade showed one tick, 10⁹). Minor ticks
    stay unlabelled (their labels ran together). Call after the data are drawn."""
    ax.set_xscale("log")
    lo, hi = ax.dataLim.intervalx
    if lo > 0 and hi / lo < 100:
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(LogFormatterSciNotation(labelOnlyBase=False))
    ax.xaxis.set_minor_formatter(NullFormatter())


def loss_vs_compute(curves: pd.DataFrame, *, width: float = 4.4, height: float = 3.2):
    """Validation loss through training against training FLOP, one panel per architecture: one line per run,
    coloured by its temperature, and the count baselines as black lines.

    Args:
        curves: rows of :func:`attnrank.chapters.learned.curves` (``arch, tau, seed, flop, val_loss`` and the
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
            ax.plot(g.flop, g.val_loss, color=palette[tau], lw=1.2, label=fmt_tau(tau) if first else None)
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


def recipe(table: pd.DataFrame, *, x: str = "flop", width: float = 4.6, height: float = 3.4):
    """The recipe study: final validation loss minus the bigram baseline against compute, one panel per
    architecture; one marker per variant, coloured by the lever it moves, the steps ladder of the default
    recipe joined by a line; the bigram at 0 (dashed) and the two-sided model (dash-dot, BERT).

    Args:
        table: :func:`attnrank.chapters.recipe.results` (``arch, variant, lever, flop, cpu_seconds, gap_bigram,
            gap_two_sided``).
        x: ``"flop"`` or ``"cpu_seconds"``.
    """
    check_columns(table, ["arch", "variant", "lever", x, "gap_bigram", "gap_two_sided"], "table")
    archs = [a for a in ARCH_ORDER if a in set(table.arch)]
    fig, axes = new_figure(len(archs), 1, width=width, height=height, squeeze=False)
    levers = list(dict.fromkeys(table.lever))
    palette = dict(zip(levers, sns.color_palette("colorblind", len(levers))))
    for j, a in enumerate(archs):
        ax, d = axes[0, j], table[table.arch == a]
        ladder = d[d.lever.isin(["default", "steps"])].sort_values(x)
        ax.plot(ladder[x], ladder.gap_bigram, color="0.6", lw=1, zorder=1)
        for lever, g in d.groupby("lever", sort=False):
            ax.scatter(g[x], g.gap_bigram, color=palette[lever], s=28, label=lever, zorder=2)
        for r in d.itertuples():
            if r.lever not in ("default", "steps"):
                ax.annotate(
                    r.variant, (getattr(r, x), r.gap_bigram), fontsize=6, xytext=(3, 2), textcoords="offset points"
                )
        ax.axhline(0.0, ls="--", color=BASELINE_COLOR, lw=1)
        two = d.gap_two_sided - d.gap_bigram  # the two-sided model, measured from the bigram
        if two.notna().any():
            ax.axhline(-float(two.mean()), ls="-.", color=BASELINE_COLOR, lw=1)
        _log_x(ax)
        ax.set_xlabel("training FLOP" if x == "flop" else "CPU seconds of the run")
        ax.set_ylabel("final loss - bigram (nats/token)" if j == 0 else "")
        ax.set_title(ARCH_LABELS.get(a, a))
        if j == len(archs) - 1:
            ax.legend(fontsize=7, loc="best")
    return fig


def recipe_figure(table: pd.DataFrame, *, x: str = "flop"):
    """:func:`recipe` with its data, name and source, for :func:`attnrank.book.show`.

    ``source``: the caption's last words, which runs were recorded where (``Recorded by `attnrank recipe` (N runs,
    commit C, CPU).``). A page that pastes the figure writes the rest: "The recipe study: each variant moves one
    lever of the default recipe (τ = 1, seed 0); final validation loss minus the bigram baseline against training
    FLOP (or CPU seconds) (grey line: the default at 1/4, 1/2, 1 and 2 times its steps; dashed: the bigram;
    dash-dot: the two-sided model)."
    """
    commit = ", ".join(sorted({str(c)[:10] for c in table.get("git_commit", pd.Series(dtype=str)).dropna()})) or "n/a"
    cpu = ", ".join(sorted(set(table.get("cpu_model", pd.Series(["n/a"])).astype(str))))
    return (
        recipe(table, x=x),
        table,
        f"learned_recipe_{x}",
        f"Recorded by `attnrank recipe` ({len(table)} runs, commit {commit}, {cpu}).",
    )
