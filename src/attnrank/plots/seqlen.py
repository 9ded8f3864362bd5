"""The figure of rank against sequence length (theory chapter), from :func:`attnrank.sections.seqlen.seq_len_table`."""

from __future__ import annotations

import pandas as pd
import seaborn as sns
from matplotlib.ticker import NullLocator

from ..core.errors import ConfigError
from ..words.glossary import ARCH_LABELS, MEASURE_LABELS
from . import PALETTE, figure, new_figure
from .style import MIN_FONT_SIZE

__all__ = ["rank_vs_seq_len"]


@figure
def rank_vs_seq_len(table: pd.DataFrame, measures):
    """One panel per measure: mean rank against ``n`` (log-log), initial dashed and trained solid per model.

    The interval of each trained mean is a vertical bar; dotted lines of the model's colour are
    uniform attention over the visible keys (causal for GPT-2), the black line is the study's
    bound ``(1 - 1/e) n + 1``.

    Raises:
        ConfigError: naming ``table`` for missing columns, ``measures`` for a measure not in it.
    """
    missing = [c for c in ("arch", "n", "measure", "when", "mean", "low", "high", "uniform", "bound") if c not in table]
    if missing:
        raise ConfigError("table", f"missing columns {missing}")
    measures = [measures] if isinstance(measures, str) else list(measures)
    absent = [m for m in measures if m not in set(table.measure)]
    if absent or not measures:
        raise ConfigError("measures", f"got {absent or measures}; allowed values: {sorted(set(table.measure))}")
    colors = dict(zip(ARCH_LABELS, sns.color_palette(PALETTE)))
    fig, axes = new_figure(len(measures), width=4.0, height=3.2, squeeze=False)
    for ax, m in zip(axes[0], measures):
        d = table[table.measure == m]
        for arch, g in d.groupby("arch"):
            for when, style in (("initial", "--"), ("trained", "-")):
                w = g[g.when == when].sort_values("n")
                ax.plot(
                    w.n, w["mean"], style, marker="o", ms=3, color=colors[arch], label=f"{ARCH_LABELS[arch]}, {when}"
                )
                if when == "trained":
                    ax.vlines(w.n, w.low, w.high, color=colors[arch], lw=1)
            u = g[g.when == "trained"].sort_values("n")
            ax.plot(u.n, u.uniform, ":", color=colors[arch], label=f"uniform attention, {ARCH_LABELS[arch]}")
        b = d.drop_duplicates("n").sort_values("n")
        ax.plot(b.n, b.bound, "-", color="black", lw=1, label=r"bound $(1 - 1/e)\,n + 1$")
        ax.set(xscale="log", yscale="log", xlabel="sequence length n", ylabel=MEASURE_LABELS[m])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks(sorted(set(d.n)), [str(n) for n in sorted(set(d.n))])
    axes[0][-1].legend(fontsize=MIN_FONT_SIZE, loc="center left", bbox_to_anchor=(1.02, 0.5))
    return fig
