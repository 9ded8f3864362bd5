"""One plot grammar: one wording per quantity across figure modules, ConfigError input checks,
and figures glued under their name."""

from __future__ import annotations

import inspect
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
import pytest

from attnrank import book
from attnrank.core.errors import ConfigError
from attnrank.plots import measure, style, sweeps, theory, training


def test_check_columns_raises_config_error_naming_the_parameter_and_columns():
    with pytest.raises(ConfigError, match=r"\['b'\]") as err:
        style.check_columns(pd.DataFrame({"a": [1]}), ["a", "b"], "curves")
    assert err.value.param == "curves"
    with pytest.raises(ConfigError) as err:
        style.check_columns([1, 2], ["a"])
    assert err.value.param == "data"
    style.check_columns(pd.DataFrame({"a": [1], "b": [2]}), ["a", "b"])


def test_glossary_follows_the_book_notation():
    """tau is the temperature ratio with T = tau sqrt(d_h); the head dimension is d_h; measures use their labels."""
    from attnrank.core.rank import MEASURES
    from attnrank.words.glossary import MEASURE_LABELS

    assert style.axis_label("tau") == "temperature ratio $\\tau$\n(temperature $T = \\tau\\sqrt{d_h}$)"
    assert style.axis_label("head_dim", log=True) == r"head dimension $d_h$, log scale"
    assert style.SYMBOLS["head_dim"] == r"$d_h$" and style.tau_label(0.03) == r"$\tau$ = 0.03"
    assert all(style.measure_label(m) == MEASURE_LABELS[m] for m in MEASURES)
    assert style.measure_label("final_val_loss") == "final validation loss (nats/token)"
    assert set(style.MEASURE_COLORS) == set(MEASURES) and len(set(style.MEASURE_COLORS.values())) == len(MEASURES)


def test_figure_modules_take_their_words_and_colours_from_style():
    """No figure module writes the head dimension as d_head, or its own tau axis label or failed-run colour."""
    for mod in (measure, sweeps, theory, training):
        src = inspect.getsource(mod)
        assert r"d_\mathrm{head}" not in src, mod.__name__
        assert not re.search(r"xlabel=r\"[^\"]*\\tau", src), mod.__name__
        assert "FAILED_COLOR = " not in src, mod.__name__
    assert sweeps.FAILED_COLOR == training._FAILED_COLOR == style.FAILED_COLOR
    assert sweeps.setting_label("head_dim") == training.SETTING_LABELS["head_dim"] == style.axis_label("head_dim")
    assert sweeps.setting_label("tau") == training.SETTING_LABELS["tau"] == style.axis_label("tau")
    assert measure.MEASURE_COLORS is style.MEASURE_COLORS


def test_theory_figures_check_columns_with_config_error():
    with pytest.raises(ConfigError) as err:
        theory.saturation(pd.DataFrame({"head_dim": [1]}), pd.DataFrame())
    assert err.value.param == "data"


def test_show_publishes_the_figure_with_its_source_and_data(monkeypatch):
    """book.show glues the figure (a PNG at the column's width) under its name, the caption's last words with a
    link to its data file, and its data as CSV; the cell displays nothing (the chapter writes caption and alt)."""
    glued = {}
    monkeypatch.setattr(book, "glue", lambda name, value, display=False: glued.__setitem__(name, value))
    fig, _ = plt.subplots(figsize=(6.0, 3.0))
    book.show(fig, pd.DataFrame({"x": [1, 2]}), "theory_p0_spectrum", "The ci profile, 4 runs.")
    assert set(glued) == {f"theory_p0_spectrum{s}" for s in ("", "__source", "__data")}
    image = glued["theory_p0_spectrum"]
    assert image._repr_mimebundle_()[1] == {"image/png": {"width": 688}} and image.format == "png"
    assert glued["theory_p0_spectrum__source"].startswith("The ci profile, 4 runs. <a")
    assert 'href="../data/theory_p0_spectrum.csv"' in glued["theory_p0_spectrum__source"]
    assert glued["theory_p0_spectrum__data"].csv == "x\n1\n2\n"
    book.show(fig, pd.DataFrame({"x": [1]}), "no_source", "")
    assert glued["no_source__source"].startswith('<a class="figure-data"')
    with pytest.raises(ConfigError, match="name"):
        book.show(fig, pd.DataFrame({"x": [1]}), "bad name")
