"""Tests of the sweep-chapter figures on tiny synthetic tidy data."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from attnrank.plots import sweeps

TAUS = [0.01, 0.1, 1.0, 4.0]
MEASURES = ["rank_rtol_1e-2", "effective_rank", "attention_entropy"]


def _setting_data(x="tau", values=TAUS, failed=True):
    rows = []
    for arch in ("modernbert", "gpt2"):
        for v in values:
            for seed in (0, 1):
                for m in MEASURES:
                    for when in ("initial", "final"):
                        rows.append(
                            dict(
                                arch=arch,
                                **{x: v},
                                seed=seed,
                                measure=m,
                                when=when,
                                value=10 - np.log10(v) + seed + (when == "final"),
                                status="complete",
                            )
                        )
    d = pd.DataFrame(rows)
    if failed:
        d.loc[(d.arch == "gpt2") & (d[x] == values[0]) & (d.seed == 1), "status"] = "failed"
    return d


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _gids(ax, gid):
    return [a for a in ax.get_children() if getattr(a, "get_gid", lambda: None)() == gid]


def test_by_setting_facets_labels_highlight_and_failed():
    d = _setting_data()
    fig = sweeps.by_setting(d, "tau", facet="measure", style="when", highlight=0.1, baseline=1.0)
    axes = fig.axes
    assert len(axes) == len(MEASURES)
    for ax, m in zip(axes, MEASURES):
        assert ax.get_xscale() == "log"
        assert "tau" in ax.get_xlabel()
        assert ax.get_ylabel() == sweeps.measure_label(m)
        assert _gids(ax, "highlight"), "highlighted tau is drawn"
        assert _gids(ax, "baseline"), "baseline tau = 1 is drawn"
        assert _gids(ax, "failed"), "failed runs are marked, not dropped"
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("ModernBERT" in t and "initial" in t for t in labels)
    assert any("GPT-2" in t and "final" in t for t in labels)
    assert any("failed" in t for t in labels)
    assert any("0.1" in t for t in labels) and any("baseline" in t for t in labels)


def test_by_setting_error_bars_are_seed_spread():
    d = _setting_data(failed=False)
    d = d[(d.measure == MEASURES[0]) & (d.when == "initial")]
    fig = sweeps.by_setting(d, "tau", facet=None, ylabel="rank")
    ax = fig.axes[0]
    # means over the two seeds (values differ by exactly 1 between seeds)
    line = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == len(TAUS)][0]
    np.testing.assert_allclose(np.sort(np.asarray(line.get_ydata(), float)), np.sort(10 - np.log10(TAUS) + 0.5))
    assert ax.get_ylabel() == "rank"


def test_by_setting_failed_run_without_value_is_marked_at_top():
    d = _setting_data(failed=True)
    d = d[(d.measure == MEASURES[0]) & (d.when == "final")].copy()
    d.loc[d.status == "failed", "value"] = np.inf  # a diverged run's final loss
    fig = sweeps.by_setting(d, "tau", facet=None, ylabel="final loss")
    ax = fig.axes[0]
    marks = _gids(ax, "failed")
    assert len(marks) == 1
    assert np.allclose(marks[0].get_offsets()[:, 1], 0.97)  # axes coordinates: the top edge
    assert np.isfinite(ax.get_ylim()).all()


def test_by_setting_head_dim_refs():
    hd = [4, 8, 16, 32]
    d = _setting_data("head_dim", hd, failed=False)
    refs = pd.concat(
        [
            pd.DataFrame(
                {"measure": "rank_rtol_1e-2", "label": "r_1", "x": hd, "value": [h + 1 for h in hd], "hue": np.nan}
            ),
            pd.DataFrame({"measure": MEASURES, "label": "P1' limit", "x": np.nan, "value": 3.0, "hue": "modernbert"}),
        ]
    )
    fig = sweeps.by_setting(d, "head_dim", facet="measure", style="when", refs=refs)
    ax0 = fig.axes[0]
    assert ax0.get_xscale() == "log"
    assert [t for t in ax0.get_xticks()] == hd
    assert len(_gids(ax0, "ref")) == 2  # r_1 curve and the horizontal limit
    assert len(_gids(fig.axes[1], "ref")) == 1
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "r_1" in labels and "P1' limit" in labels


def test_per_layer():
    rows = [
        dict(arch=a, tau=t, seed=s, layer=layer, head=h, when=w, value=layer + t + h)
        for a in ("modernbert", "gpt2")
        for t in (0.25, 1.0)
        for s in (0, 1)
        for layer in range(3)
        for h in range(2)
        for w in ("initial", "final")
    ]
    fig = sweeps.per_layer(pd.DataFrame(rows), highlight=0.25, baseline=1.0, ylabel="rank")
    assert len(fig.axes) == 2
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "3"]
    assert ax.get_xlabel() == "layer" and ax.get_ylabel() == "rank"
    assert len(fig.legends[0].get_texts()) == 4


def test_effect_forest():
    d = pd.DataFrame(
        [
            dict(panel=p, arch=a, lever=lv, estimate=e, low=e - 1, high=e + 1)
            for p in ("rank", "loss")
            for a in ("modernbert", "gpt2")
            for lv, e in (("tau halved", 3.0), ("d_head doubled", 1.0), ("difference", 2.0))
        ]
    )
    fig = sweeps.effect_forest(d, xlabels={"rank": "rank per factor 2"})
    assert len(fig.axes) == 2
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["tau halved", "d_head doubled", "difference"]
    assert fig.axes[0].get_xlabel() == "rank per factor 2"
    assert len(fig.legends[0].get_texts()) == 2


def test_by_setting_arch_facets_are_titled_by_architecture():
    """One panel per architecture (own y axis, e.g. MLM and CLM losses) titled by the architecture's name."""
    d = _setting_data()
    d = d[(d.measure == MEASURES[0]) & (d.when == "final")]
    fig = sweeps.by_setting(d, "tau", facet="arch", highlight=0.1, baseline=1.0, ncols=2)
    assert [ax.get_title() for ax in fig.axes] == ["ModernBERT (MLM)", "GPT-2 (CLM)"]
