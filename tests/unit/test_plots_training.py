"""Tests of attnrank.plots.training on tiny synthetic tidy data (no training, a few seconds)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgba

from attnrank.plots import training as tp

TAUS = (0.001, 0.1, 1.0, 4.0)


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _curves(failed: bool = True) -> pd.DataFrame:
    rows = []
    for arch in ("modernbert", "gpt2"):
        for measure in ("rank_rtol_1e-2", "effective_rank"):
            for tau in TAUS:
                for seed in (0, 1):
                    status = (
                        "failed"
                        if failed and (arch, measure, tau, seed) == ("gpt2", "effective_rank", 4.0, 1)
                        else "complete"
                    )
                    for step in (0, 10, 20, 30):
                        if status == "failed" and step > 10:
                            break
                        rows.append(
                            dict(
                                arch=arch,
                                measure=measure,
                                tau=tau,
                                seed=seed,
                                step=step,
                                status=status,
                                mean=10 - np.log10(tau) + 0.1 * step + 0.2 * seed,
                            )
                        )
    return pd.DataFrame(rows)


def _data_axes(fig):
    """Panels (colour bars excluded)."""
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


def test_trajectories_panels_labels_highlight_and_failed():
    d = _curves()
    fig = tp.trajectories(d, y="mean", row="arch", col="measure", highlight=1.0, ylabel="mean rank")
    panels = _data_axes(fig)
    assert len(panels) == 4  # 2 archs x 2 measures
    assert len(fig.axes) == 5  # plus one colour bar
    assert panels[0].get_ylabel() == "mean rank"
    assert panels[2].get_xlabel() == "training step"
    assert "ModernBERT" in panels[0].get_title() and "rank, rtol 1e-2" in panels[0].get_title()  # by name, not key
    # one bold line (the highlighted tau = 1) per panel, coloured with tau = 1's colour
    color, _, _ = tp.hue_scale(d.tau)
    for ax in panels:
        bold = [ln for ln in ax.get_lines() if ln.get_linewidth() > 2.5]
        assert len(bold) == 1
        assert np.allclose(to_rgba(bold[0].get_color()), color(1.0))
        assert len(bold[0].get_xdata()) == 4
    # the diverged run is drawn in its panel (dashed line + a cross), not dropped
    failed_panel = panels[3]
    assert any(ln.get_marker() == "X" for ln in failed_panel.get_lines())
    assert any(ln.get_linestyle() == "--" for ln in failed_panel.get_lines())
    assert not any(ln.get_marker() == "X" for ln in panels[0].get_lines())
    assert "diverged run (ends at ×)" in [t.get_text() for t in fig.legends[0].get_texts()]
    # the colour bar is on a log scale with a tick per tau
    cbar = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"][0]
    assert len(cbar.get_yticks()) == len(TAUS)


def test_trajectories_band_is_seed_range():
    d = _curves(failed=False)
    fig = tp.trajectories(d[d.measure == "effective_rank"], y="mean", row="arch", highlight=1.0)
    ax = _data_axes(fig)[0]
    bold = [ln for ln in ax.get_lines() if ln.get_linewidth() > 2.5][0]
    # mean over the two seeds (offsets 0 and 0.2) at step 0
    assert bold.get_ydata()[0] == pytest.approx(10 + 0.1)
    assert len(ax.collections) == len(TAUS)  # one min-max band per tau


def test_run_scatter_identity_censored_failed_and_annotations():
    rng = np.random.default_rng(0)
    runs = pd.DataFrame(
        {
            "arch": np.repeat(["modernbert", "gpt2"], 8),
            "tau": np.tile(np.repeat(TAUS, 2), 2),
            "seed": np.tile([0, 1], 8),
            "x": rng.uniform(1, 10, 16),
            "y": rng.uniform(1, 10, 16),
            "status": "complete",
            "cens": False,
        }
    )
    runs.loc[3, "status"] = "failed"
    runs.loc[5, "y"] = np.nan
    runs.loc[5, "status"] = "failed"
    runs.loc[10, "cens"] = True
    fig = tp.run_scatter(
        runs,
        x="x",
        y="y",
        censored="cens",
        identity=True,
        annotations={"modernbert": "rho = 0.5"},
        xlabel="initial mean rank",
        ylabel="final mean rank",
    )
    panels = _data_axes(fig)
    assert len(panels) == 2
    assert panels[0].get_xlabel() == "initial mean rank" and panels[0].get_ylabel() == "final mean rank"
    assert any(ln.get_linestyle() == "--" for ln in panels[0].get_lines())  # identity line
    texts = " ".join(t.get_text() for t in panels[0].texts)
    assert "rho = 0.5" in texts and "1 diverged" in texts  # the NaN-loss run is counted, not dropped
    # bert panel: 6 complete points, 1 failed cross; gpt2: 7 complete + 1 censored
    sizes0 = [len(c.get_offsets()) for c in panels[0].collections]
    assert sizes0 == [6, 1]
    sizes1 = [len(c.get_offsets()) for c in panels[1].collections]
    assert sizes1 == [7, 1]
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["final = initial", "never reached (censored)", "diverged run"]


def test_change_distribution_has_one_row_per_measure_and_reference():
    d = pd.DataFrame(
        {
            "measure": np.repeat(["a", "b", "c"], 8),
            "arch": np.tile(np.repeat(["modernbert", "gpt2"], 4), 3),
            "rel": np.linspace(0, 0.5, 24),
        }
    )
    fig = tp.change_distribution(d, x="rel", y_labels={"a": "A label"}, xlabel="relative change", reference=0.1)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "relative change"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["A label", "b", "c"]
    assert any(np.allclose(ln.get_xdata(), 0.1) for ln in ax.get_lines())
    assert ax.get_legend() is None  # below the panel, where it hides no dot
    assert {t.get_text() for t in fig.legends[0].get_texts()} == {"ModernBERT (MLM)", "GPT-2 (CLM)"}
    # a fraction ticked as the caption and tables write it, in percent (0.1 is 10%, never 0.1 beside "10%")
    fig = tp.change_distribution(d, x="rel", percent=True, reference=0.1)
    fig.canvas.draw()
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_text()]
    assert ticks and all(t.endswith("%") for t in ticks) and "10%" in ticks


def test_layer_head_heatmaps_grid_and_difference():
    rows = []
    for arch in ("modernbert", "gpt2"):
        for when in ("first probe", "last probe"):
            for layer in range(3):
                for head in range(4):
                    rows.append(
                        dict(
                            arch=arch,
                            when=when,
                            layer=layer,
                            head=head,
                            value=layer + head + (2.0 if when == "last probe" else 0.0),
                        )
                    )
    fig = tp.layer_head_heatmaps(pd.DataFrame(rows))
    heat = [ax for ax in fig.axes if ax.get_title()]
    assert len(heat) == 6  # 2 archs x (first, last, difference)
    assert heat[2].get_title().endswith("last probe − first probe")
    # the difference map holds +2 everywhere
    mesh = heat[2].collections[0]
    assert np.allclose(mesh.get_array(), 2.0)
    assert heat[0].get_ylabel() == "layer" and heat[3].get_xlabel() == "head"


def test_reference_lines_keep_the_data_range_and_note_far_references():
    """A reference inside the data's range is a labelled line; one far outside is a corner note and
    does not stretch the y-axis (so a baseline loss cannot flatten the runs' variation)."""
    d = _curves(failed=False)
    d = d[d.measure == "effective_rank"]
    fig = tp.trajectories(
        d, y="mean", row=None, col="arch", references={"modernbert": {"bigram": 12.0, "unigram": 500.0}}
    )
    ax = fig.axes[0]
    assert [
        round(line.get_ydata()[0], 6)
        for line in ax.lines
        if len(set(line.get_ydata())) == 1 and line.get_ydata()[0] == 12.0
    ] == [12.0]
    assert ax.get_ylim()[1] < 100
    notes = [t.get_text() for t in ax.texts]
    assert any("unigram 500.00 (above the scale)" in t for t in notes)
    assert not any("unigram" in t for t in (x.get_text() for x in fig.axes[1].texts))
    # the note sits above the panel, under its pushed-up title, not over the curves in a corner
    (note,) = [t for t in ax.texts if "unigram" in t.get_text()]
    assert note.get_transform() == ax.transAxes and note.get_position()[1] > 1
    assert ax.get_title().startswith("modernbert\n")  # the title, pushed up by one blank line


def test_measure_trajectories_titles_name_the_architecture_only():
    """Each row's measure is its y label; panel titles carry only the architecture ("rank, atol 1e-8 (study) ·
    ModernBERT (MLM)" ran into the next panel's title)."""
    d = _curves(failed=False)
    uniform = {a: {m: 1.0 for m in d.measure.unique()} for a in ("modernbert", "gpt2")}
    fig = tp.measure_trajectories(d, uniform, label="uniform attention")
    panels = _data_axes(fig)
    assert [ax.get_title() for ax in panels] == ["ModernBERT (MLM)", "GPT-2 (CLM)"] * (len(panels) // 2)
    assert {ax.get_ylabel() for ax in panels[::2]} == {tp.MEASURE_LABELS[m] for m in d.measure.unique()}
