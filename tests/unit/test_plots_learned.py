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
        for a in ("gpt2", "modernbert", "bert")
        for t in (0.001, 1.0)
        for i, f in enumerate(flop)
    ]
    return pd.DataFrame(rows)


def _labels(ax) -> list:
    ax.figure.canvas.draw()
    lo, hi = ax.get_xlim()
    return [t for t in ax.get_xticklabels() if t.get_text() and lo <= t.get_position()[0] <= hi]


@pytest.mark.parametrize("lo, hi, at_least, decades_only", [(2e8, 2.5e9, 2, False), (1e6, 1e10, 3, True)])
def test_a_log_compute_axis_has_labels_to_read_it_by(lo, hi, at_least, decades_only):
    """About one decade of FLOP showed one labelled tick (10⁹); it now shows 1 and 3 times the powers of ten
    (with 2 and 5 times, "10⁹" and "2×10⁹" ran together on a panel of a three-panel figure); four decades keep
    their decade labels only. Neighbouring labels stand at least three quarters of an em apart."""
    fig = lp.loss_vs_compute(_curves(lo, hi))
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes[:2]:
        ticks = _labels(ax)
        labels = [t.get_text() for t in ticks]
        assert len(labels) >= at_least, labels
        assert all("\\times" not in s for s in labels) == decades_only, labels  # mathtext: 3\\times10^{8}
        boxes = sorted((t.get_window_extent(renderer) for t in ticks), key=lambda b: b.x0)
        em = ticks[0].get_fontsize() * fig.dpi / 72  # pixels
        gaps = [b.x0 - a.x1 for a, b in zip(boxes, boxes[1:])]
        assert min(gaps) > 0.75 * em, (labels, gaps)  # 2, 5 times: 10⁹ and 2×10⁹ were 5 pixels apart


def test_the_loss_figure_leaves_every_word_of_its_caption_to_the_chapter():
    """The chapter writes the caption, its numbers glued: ``loss_figure``'s source is empty."""
    curves = _curves(1e6, 1e8)
    fig, data, name, source = lp.loss_figure(curves)
    assert (name, source) == ("learned_loss", "") and data is curves
