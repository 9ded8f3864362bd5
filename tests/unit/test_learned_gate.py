"""The learned gate (attnrank.analysis.rules.learned_gate): a verdict on trained models counts an architecture only
where every one of its reference runs meets the pre-registered target (at least LEARNED_MARGIN nats below the
bigram count model, attention worth at least LEARNED_WORTH nats); constructed statuses, gaps and gains where the
answer is known."""

from __future__ import annotations

import math

import pytest

from attnrank.analysis import rules
from attnrank.analysis.verdicts import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED
from attnrank.core.errors import ConfigError


def test_a_model_that_has_not_learned_makes_its_case_inconclusive():
    g = rules.learned_gate({"gpt2": SUPPORTED, "modernbert": SUPPORTED}, {"gpt2": -0.3, "modernbert": 0.45})
    assert (g.status, g.ungated, g.not_learned, g.changed) == (INCONCLUSIVE, SUPPORTED, ("modernbert",), True)
    assert g.gaps == {"modernbert": 0.45, "gpt2": -0.3}
    # the same statuses when both have learned: nothing changes
    g = rules.learned_gate({"gpt2": SUPPORTED, "modernbert": SUPPORTED}, {"gpt2": -0.3, "modernbert": -0.31})
    assert (g.status, g.not_learned, g.changed) == (SUPPORTED, (), False)
    # below the bigram, but by less than the target: not learned
    g = rules.learned_gate({"gpt2": SUPPORTED, "modernbert": SUPPORTED}, {"gpt2": -0.3, "modernbert": -0.29})
    assert g.not_learned == ("modernbert",) and g.status == INCONCLUSIVE


def test_attention_must_be_worth_the_target_in_every_run():
    parts = {"gpt2": SUPPORTED, "modernbert": SUPPORTED}
    gaps = {"gpt2": -0.5, "modernbert": -0.5}
    g = rules.learned_gate(parts, gaps, {"gpt2": 0.75, "modernbert": 0.29})
    assert (g.status, g.not_learned) == (INCONCLUSIVE, ("modernbert",))
    assert g.gains == {"gpt2": 0.75, "modernbert": 0.29} and g.worth == rules.LEARNED_WORTH == 0.3
    g = rules.learned_gate(parts, gaps, {"gpt2": 0.75, "modernbert": 0.3})
    assert (g.status, g.not_learned) == (SUPPORTED, ())
    assert rules.learned_gate(parts, gaps, {"gpt2": math.nan, "modernbert": 0.9}).not_learned == ("gpt2",)
    # without gains only the gap decides, and the gate says it read none
    g = rules.learned_gate(parts, gaps)
    assert (g.status, g.gains, g.worth) == (SUPPORTED, {}, 0.0)


def test_a_not_supported_case_on_a_model_that_has_learned_still_decides():
    parts = {
        ("stable", "gpt2"): NOT_SUPPORTED,
        ("stable", "modernbert"): SUPPORTED,
        ("predictive", "modernbert"): SUPPORTED,
    }
    g = rules.learned_gate(parts, {"gpt2": -0.4, "modernbert": 0.1})
    assert g.status == NOT_SUPPORTED and g.not_learned == ("modernbert",) and not g.changed
    # ... and one on a model that has not learned does not
    g = rules.learned_gate(parts, {"gpt2": 0.2, "modernbert": -0.4})
    assert (g.status, g.ungated, g.not_learned) == (INCONCLUSIVE, NOT_SUPPORTED, ("gpt2",))


def test_keys_with_a_sequence_length_level_with_the_bigram_and_a_missing_gap():
    parts = {("gpt2", 16): SUPPORTED, ("gpt2", 64): SUPPORTED}
    assert rules.learned_gate(parts, {"gpt2": 0.0}).status == INCONCLUSIVE  # level with the bigram: not below
    assert rules.learned_gate(parts, {"gpt2": math.nan}).status == INCONCLUSIVE  # no complete run
    assert rules.learned_gate(parts, {"gpt2": -0.05}).status == INCONCLUSIVE  # below, short of the target
    assert rules.learned_gate(parts, {"gpt2": -0.3}).status == SUPPORTED  # the target itself passes
    # a margin of 0 asks only for "below"
    assert rules.learned_gate(parts, {"gpt2": -0.05}, margin=0.0).status == SUPPORTED
    assert rules.LEARNED_MARGIN == 0.3


@pytest.mark.parametrize(
    ("parts", "gaps", "margin", "param"),
    [
        ({}, {"gpt2": -1.0}, 0.0, "parts"),
        ({"t5": SUPPORTED}, {"gpt2": -1.0}, 0.0, "parts"),
        ({("stable", 3): SUPPORTED}, {"gpt2": -1.0}, 0.0, "parts"),
        ({"gpt2": SUPPORTED}, {"gpt2": -1.0}, -0.1, "margin"),
        ({"gpt2": SUPPORTED}, {"gpt2": -1.0}, math.inf, "margin"),
        ({"gpt2": "maybe"}, {"gpt2": -1.0}, 0.0, "status"),
    ],
)
def test_bad_input_names_its_parameter(parts, gaps, margin, param):
    with pytest.raises(ConfigError) as e:
        rules.learned_gate(parts, gaps, margin=margin)
    assert e.value.param == param


def test_learned_runs_holds_each_run_to_the_target(monkeypatch):
    """Run by run: 0.3 nats below its bigram with attention worth 0.3 nats; a failed run, a run on the plateau
    and a run whose attention is worth too little have not learned; the gain is asked only of runs below."""
    import pandas as pd

    from attnrank.analysis import baselines

    monkeypatch.setattr(baselines, "baseline_losses", lambda r: {"bigram": 3.0})
    runs = pd.DataFrame(
        {
            "arch": ["gpt2"] * 5,
            "status": ["complete", "complete", "complete", "failed", "complete"],
            "final_val_loss": [2.6, 2.71, 2.5, 2.0, 2.69],
            "attention_gain": [0.5, 0.9, 0.29, 0.9, 0.3],
        },
        index=[10, 11, 12, 13, 14],
    )
    assert baselines.learned_runs(runs).to_dict() == {10: True, 11: False, 12: False, 13: False, 14: True}
    assert baselines.learned_runs(runs, margin=0.2, worth=0.2).to_dict() == {
        10: True,
        11: True,
        12: True,
        13: False,
        14: True,
    }


def test_the_gate_reads_the_stock_model_not_the_head_dimension_grid(monkeypatch):
    """Since 2026-12-06 (rule version 3) the gate's reference runs are the tau = 1 runs at the profile's stock head
    dimension: a seed of the head-dimension grid that missed the target does not decide the architecture (it did, so
    one model was "not learned" over six runs and "learned" over three on another page); every other run is still held
    to the target on its own (:func:`learned_runs`)."""
    import pandas as pd

    from attnrank.analysis import baselines
    from attnrank.core.profiles import resolve_config

    monkeypatch.setattr(baselines, "baseline_losses", lambda r: {"bigram": 3.0})
    stock = resolve_config("modernbert", "quick").num_heads
    runs = pd.DataFrame(
        {
            "arch": ["modernbert"] * 4,
            "profile": ["quick"] * 4,
            "tau": [1.0, 1.0, 1.0, 2.0],
            "num_heads": [stock, stock, 2 * stock, stock],
            "status": ["complete"] * 4,
            "final_val_loss": [2.6, 2.5, 2.9, 3.5],
        }
    )
    assert baselines.bigram_gaps(runs) == {"modernbert": pytest.approx(-0.4)}  # 2.6 - 3.0: the worst stock run
    assert len(baselines.reference_table(runs)) == 2
    no_stock = runs[runs.num_heads != stock]  # no stock run: its tau = 1 runs decide, as before
    assert baselines.bigram_gaps(no_stock) == {"modernbert": pytest.approx(-0.1)}
