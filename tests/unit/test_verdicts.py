"""The verdict rule on constructed intervals at and around its thresholds."""

from __future__ import annotations

import math

import pytest

from attnrank.analysis import stats as S
from attnrank.analysis.verdicts import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED, Judgement, classify, combine, judge
from attnrank.book import VERDICTS
from attnrank.core.errors import ConfigError

NAN = float("nan")


def est(low, high, value=None):
    value = (low + high) / 2 if value is None else value
    return S.Estimate(value, low, high, 10, "constructed")


def test_the_three_strings_are_the_books():
    assert (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE) == VERDICTS


@pytest.mark.parametrize(
    "low, high, above, below",
    [
        (0.6, 0.9, SUPPORTED, NOT_SUPPORTED),  # well beyond
        (0.5, 0.9, INCONCLUSIVE, INCONCLUSIVE),  # low exactly at the threshold is not "entirely beyond"
        (0.5 + 1e-12, 0.9, SUPPORTED, NOT_SUPPORTED),  # just inside
        (0.5 - 1e-12, 0.9, INCONCLUSIVE, INCONCLUSIVE),  # just outside: the interval reaches the threshold
        (0.1, 0.5, INCONCLUSIVE, INCONCLUSIVE),  # exactly at the threshold from below
        (0.1, 0.5 - 1e-12, NOT_SUPPORTED, SUPPORTED),
        (0.2, 0.8, INCONCLUSIVE, INCONCLUSIVE),  # straddles
        (0.5, 0.5, INCONCLUSIVE, INCONCLUSIVE),  # a point interval on the threshold
    ],
)
def test_classify_at_and_around_the_threshold(low, high, above, below):
    t = 0.5
    assert classify(est(low, high), t, "above") == above
    assert classify(est(low, high), t, "below") == below


def test_classify_negative_threshold_and_direction_mirror():
    assert classify(est(-0.9, -0.3), 0.0, "below") == SUPPORTED
    assert classify(est(-0.9, -0.3), 0.0, "above") == NOT_SUPPORTED
    assert classify(est(-0.9, -0.3), -0.3, "below") == INCONCLUSIVE
    assert classify(est(-0.9, -0.31), -0.3, "below") == SUPPORTED
    assert classify(est(-0.29, 0.1), -0.3, "below") == NOT_SUPPORTED


@pytest.mark.parametrize("low, high, value", [(NAN, 0.5, 0.1), (0.1, NAN, 0.2), (NAN, NAN, 0.3), (0.2, 0.4, NAN)])
def test_missing_interval_or_value_is_inconclusive(low, high, value):
    e = S.Estimate(value, low, high, 1, "constructed")
    assert classify(e, 0.0, "above") == classify(e, 0.0, "below") == INCONCLUSIVE


def test_classify_rejects_bad_arguments():
    with pytest.raises(ConfigError, match="direction"):
        classify(est(0.1, 0.2), 0.0, "greater")
    with pytest.raises(ConfigError, match="threshold"):
        classify(est(0.1, 0.2), NAN, "above")
    with pytest.raises(ConfigError, match="estimate"):
        classify((0.15, 0.1, 0.2), 0.0, "above")


def test_combine_over_cases():
    assert combine([SUPPORTED, SUPPORTED]) == SUPPORTED
    assert combine([SUPPORTED, INCONCLUSIVE]) == INCONCLUSIVE
    assert combine([SUPPORTED, NOT_SUPPORTED]) == NOT_SUPPORTED
    assert combine([INCONCLUSIVE, NOT_SUPPORTED]) == NOT_SUPPORTED
    assert combine([]) == INCONCLUSIVE
    with pytest.raises(ConfigError, match="status"):
        combine(["holds"])


def test_judge_states_the_runs_needed_when_not_supported():
    # two seeds per arm, seed spread 0.0036 nats, pre-registered effect 0.005 nats (lower loss predicted)
    d = S.compare_means([5.001, 5.006], [5.000, 5.004])
    v = judge(d, 0.0, "below", effect=0.005, spread=0.0036)
    assert isinstance(v, Judgement) and v.status == INCONCLUSIVE and v.needed == 9 and v.needed_unit == "seeds per arm"
    assert v.estimate.value == pytest.approx(0.0015) and v.effect == 0.005
    c = judge(est(-0.1, 0.8, 0.4), 0.0, "above", effect=0.5)  # correlation: runs in total, from its interval
    assert c.needed == S.runs_needed_observed(c.estimate, 0.5) and c.needed_unit == "runs"
    # a resolved verdict the other way (not supported) needs no runs either
    assert judge(est(-0.8, -0.1), 0.0, "above", effect=0.5).needed is None
    assert judge(S.compare_means([5.0, 5.001], [6.0, 6.001]), 0.0, "above", effect=1, spread=0.01).needed is None
    s = judge(est(0.1, 0.8), 0.0, "above", effect=0.5)
    assert s.status == SUPPORTED and s.needed is None
    assert judge(est(0.1, 0.8), 0.0, "above").needed is None
    assert math.isnan(S.compare_means([1.0, 1.0], [1.0, 1.0]).low)
    assert judge(S.compare_means([1.0, 1.0], [1.0, 1.0]), 0.0, "below", effect=0.1, spread=0.0).needed is None


def test_the_deciding_cases_are_those_that_decide_the_combined_status():
    from attnrank.analysis.verdicts import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED, combine, deciding

    for statuses, expected in (
        ({"a": SUPPORTED, "b": NOT_SUPPORTED, "c": INCONCLUSIVE}, ["b"]),
        ({"a": SUPPORTED, "b": INCONCLUSIVE, "c": INCONCLUSIVE}, ["b", "c"]),
        ({"a": SUPPORTED, "b": SUPPORTED}, ["a", "b"]),
    ):
        keys = deciding(statuses)
        assert keys == expected
        assert combine([statuses[k] for k in keys]) == combine(statuses.values())  # they alone give the status


def test_the_stability_verdicts_effect_shows_the_half_that_rejects_it():
    """Row (i) once printed GPT-2's rho beside "not supported", where the median change against the tolerance decided."""
    from types import SimpleNamespace

    from attnrank.analysis.rules import DynamicsResult
    from attnrank.analysis.stats import Estimate
    from attnrank.analysis.verdicts import NOT_SUPPORTED, SUPPORTED
    from attnrank.sections.dynamics import deciding_effect

    res = DynamicsResult(
        NOT_SUPPORTED,
        rho={"gpt2": Estimate(0.08, -0.70, 0.94, 9, "bootstrap")},
        change={"gpt2": Estimate(0.34, 0.31, 0.51, 9, "order statistics")},
        halves={("predictive", "gpt2"): SUPPORTED, ("stable", "gpt2"): NOT_SUPPORTED},
    )
    text = deciding_effect(res, SimpleNamespace(not_learned=[]), 0.1)
    assert text == "GPT-2 median change 34% [31%, 51%] (the rule asks below 10%)"
    assert "ρ" in deciding_effect(res, SimpleNamespace(not_learned=["gpt2"]), 0.1)  # not learned: both undecided
