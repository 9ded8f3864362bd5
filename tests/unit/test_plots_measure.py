"""The measure chapter's figures on tiny synthetic tidy data: panels, labels, scales, highlights."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from attnrank.plots import measure as pm
from attnrank.plots.style import axis_label

MEASURES = ["rank_atol_1e-8", "rank_rtol_1e-2", "rank_rtol_1e-4", "effective_rank", "stable_rank"]


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _visible_axes(fig):
    """Axes that show data (a legend-only slot has its axis switched off)."""
    return [ax for ax in fig.axes if ax.get_visible() and ax.axison]


def _legend_texts(fig):
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return [t.get_text() for leg in legends for t in leg.get_texts()]


def _spectra_data():
    rows = []
    for arch in ("modernbert", "gpt2"):
        for state in ("initialisation", "trained"):
            for k in range(1, 9):
                m = 10.0 ** (-k)
                rows.append(dict(arch=arch, state=state, k=k, median=m, low=m / 2, high=m * 2))
    return pd.DataFrame(rows)


def test_spectra_panels_log_axis_and_thresholds():
    th = pd.DataFrame({"label": ["atol 1e-8 (study)", "rtol 1e-2"], "value": [1e-8, 1e-2], "style": ["-", "--"]})
    fig = pm.spectra(_spectra_data(), th)
    axes = _visible_axes(fig)
    assert len(axes) == 2
    assert {ax.get_title() for ax in axes} == {"ModernBERT (MLM)", "GPT-2 (CLM)"}
    for ax in axes:
        assert ax.get_yscale() == "log"
        assert "singular value" in ax.get_xlabel() or ax.get_xlabel() == ""
        ys = {tuple(line.get_ydata()) for line in ax.get_lines()}
        assert (1e-8, 1e-8) in ys and (1e-2, 1e-2) in ys  # both threshold lines in every panel
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["initialisation", "trained", "atol 1e-8 (study)", "rtol 1e-2"]


def test_spectra_rows_and_panel_specific_thresholds():
    data = pd.concat([_spectra_data().assign(pipeline=p) for p in ("float64", "float32")])
    th = pd.DataFrame(
        {"arch": ["modernbert", None], "label": ["only bert", "everywhere"], "value": [0.5, 1e-3], "style": ["--", ":"]}
    )
    fig = pm.spectra(data, th, row="pipeline", ymin=1e-6)
    axes = np.array(_visible_axes(fig)).reshape(2, 2)
    low, high = axes[0, 0].get_ylim()
    assert low == pytest.approx(1e-6) and high == pytest.approx(2e-1 * 10)  # top: largest band value x 10
    assert axes[0, 0].get_title() == "ModernBERT (MLM)" and axes[1, 0].get_title() == ""
    assert axes[0, 0].get_ylabel().startswith("float64\n") and axes[1, 0].get_ylabel().startswith("float32\n")
    bert_y = {line.get_ydata()[0] for line in axes[0, 0].get_lines()}
    gpt_y = {line.get_ydata()[0] for line in axes[0, 1].get_lines()}
    assert 0.5 in bert_y and 0.5 not in gpt_y and 1e-3 in gpt_y


def _tau_data():
    rows = []
    for arch in ("modernbert", "gpt2"):
        for m in MEASURES:
            for tau in (1e-3, 1.0, 1e3):
                v = 10.0 if tau < 1 else 3.0
                rows.append(dict(arch=arch, measure=m, tau=tau, mean=v, low=v - 1, high=v + 1))
    return pd.DataFrame(rows)


def test_rank_vs_tau_highlight_baselines_and_scales():
    base = pd.DataFrame(
        {"arch": ["gpt2", "gpt2", "modernbert"], "measure": ["stable_rank", "n", "n"], "value": [2.0, 64.0, 64.0]}
    )
    fig = pm.rank_vs_tau(_tau_data(), base, highlight="rank_rtol_1e-2")
    axes = _visible_axes(fig)
    assert len(axes) == 2
    for ax in axes:
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
        assert ax.get_xlabel() == axis_label("tau", log=True)  # the one wording of the tau axis
        widths = {
            line.get_label(): line.get_linewidth() for line in ax.get_lines() if not line.get_label().startswith("_")
        }
        bold = pm.measure_label("rank_rtol_1e-2")
        assert widths[bold] > max(w for k, w in widths.items() if k != bold)
    assert "rank" in axes[0].get_ylabel()
    # the GPT-2 panel has the stable-rank baseline (dashed), ModernBERT does not
    dashed = [[line for line in ax.get_lines() if line.get_linestyle() == "--"] for ax in axes]
    assert len(dashed[0]) == 0 and len(dashed[1]) == 1 and dashed[1][0].get_ydata()[0] == 2.0
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert [pm.measure_label(m) for m in MEASURES] == legend[: len(MEASURES)]


def test_rank_vs_tau_requires_columns():
    """A missing column raises attnrank.ConfigError naming the data parameter and the column."""
    from attnrank.core.errors import ConfigError

    with pytest.raises(ConfigError, match="mean") as err:
        pm.rank_vs_tau(_tau_data().drop(columns="mean"))
    assert err.value.param == "data"


def test_precision_by_tau_one_panel_per_measure():
    data = pd.concat([_tau_data().assign(pipeline=p) for p in ("float64 / float64", "float32 / float64")])
    fig = pm.precision_by_tau(data, reference="float64 / float64")
    axes = _visible_axes(fig)
    assert len(axes) == len(MEASURES)
    assert [ax.get_title() for ax in axes] == [pm.measure_label(m) for m in MEASURES]
    ax = axes[0]
    assert len(ax.get_lines()) == 4  # 2 pipelines x 2 archs
    ref = [line for line in ax.get_lines() if line.get_linewidth() > 3]
    assert len(ref) == 2 and all(line.get_zorder() < 3 for line in ref)  # the reference lies underneath
    assert {line.get_linestyle() for line in ax.get_lines()} == {"-", "--"}
    legend = _legend_texts(fig)
    assert "float64 / float64" in legend and "ModernBERT (MLM)" in legend
    assert axes[0].get_yscale() == "linear" and axes[0].get_ylabel().startswith("rank")


def test_measure_points_errorbars_and_baseline():
    rows = [
        dict(arch=a, measure=m, state=s, mean=5.0, low=4.0, high=6.0)
        for a in ("modernbert", "gpt2")
        for m in MEASURES
        for s in ("initialisation", "trained")
    ]
    base = pd.DataFrame(
        {
            "arch": ["gpt2"] * 2,
            "measure": ["rank_rtol_1e-2", "n"],
            "value": [30.0, 64.0],
            "label": ["uniform causal attention"] * 2,
        }
    )
    fig = pm.measure_points(pd.DataFrame(rows), base)
    axes = _visible_axes(fig)
    assert len(axes) == 2
    assert [t.get_text() for t in axes[0].get_xticklabels()] == [pm.measure_label(m) for m in MEASURES]
    assert axes[0].get_yscale() == "log"
    assert len(axes[1].collections) > len(axes[0].collections)  # the baseline bar in the GPT-2 panel
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "uniform causal attention" in legend and "matrix size n" in legend
