"""The learned chapter's figures: axes a reader can read."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from attnrank.plots import learned as lp


def _curves(lo: float, hi: float) -> pd.DataFrame:
    flop = np.geomspace(lo, hi, 8)
    rows = [
        dict(
            arch=a,
            tau=t,
            seed=0,
            flop=f,
            val_loss=6.0 - 0.1 * i,
            unigram=5.8,
            bigram=4.7,
            two_sided=4.0,
            context_free=5.9,
        )
        for a in ("gpt2", "modernbert")
        for t in (0.001, 1.0)
        for i, f in enumerate(flop)
    ]
    return pd.DataFrame(rows)


def _labels(ax) -> list[str]:
    ax.figure.canvas.draw()
    lo, hi = ax.get_xlim()
    return [t.get_text() for t in ax.get_xticklabels() if t.get_text() and lo <= t.get_position()[0] <= hi]


@pytest.mark.parametrize("lo, hi, at_least, decades_only", [(2e8, 2.5e9, 3, False), (1e6, 1e10, 3, True)])
def test_a_log_compute_axis_has_labels_to_read_it_by(lo, hi, at_least, decades_only):
    """About one decade of FLOP showed one labelled tick (10⁹); it now shows 1, 2 and 5 times the powers of
    ten; four decades keep their decade labels only."""
    fig = lp.loss_vs_compute(_curves(lo, hi))
    for ax in fig.axes[:2]:
        labels = _labels(ax)
        assert len(labels) >= at_least, labels
        assert all("\\times" not in s for s in labels) == decades_only, labels  # mathtext: 2\\times10^{8}


def test_the_loss_figure_leaves_every_word_of_its_caption_to_the_chapter():
    """The chapter writes the caption, its numbers glued: ``loss_figure``'s source is empty."""
    curves = _curves(1e6, 1e8)
    fig, data, name, source = lp.loss_figure(curves)
    assert (name, source) == ("learned_loss", "") and data is curves
