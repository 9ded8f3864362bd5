"""The learned gate (attnrank.rules.learned_gate): a verdict on trained models counts an architecture only
where its models beat the bigram count model; constructed statuses and gaps where the answer is known."""

from __future__ import annotations

import math

import pytest

from attnrank import rules
from attnrank.errors import ConfigError
from attnrank.verdicts import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED


def test_a_model_that_has_not_learned_makes_its_case_inconclusive():
    g = rules.learned_gate({"gpt2": SUPPORTED, "bert": SUPPORTED}, {"gpt2": -0.3, "bert": 0.45})
    assert (g.status, g.ungated, g.not_learned, g.changed) == (INCONCLUSIVE, SUPPORTED, ("bert",), True)
    assert g.gaps == {"bert": 0.45, "gpt2": -0.3}
    # the same statuses when both have learned: nothing changes
    g = rules.learned_gate({"gpt2": SUPPORTED, "bert": SUPPORTED}, {"gpt2": -0.3, "bert": -0.01})
    assert (g.status, g.not_learned, g.changed) == (SUPPORTED, (), False)


def test_a_not_supported_case_on_a_model_that_has_learned_still_decides():
    parts = {("stable", "gpt2"): NOT_SUPPORTED, ("stable", "bert"): SUPPORTED, ("predictive", "bert"): SUPPORTED}
    g = rules.learned_gate(parts, {"gpt2": -0.2, "bert": 0.1})
    assert g.status == NOT_SUPPORTED and g.not_learned == ("bert",) and not g.changed
    # ... and one on a model that has not learned does not
    g = rules.learned_gate(parts, {"gpt2": 0.2, "bert": -0.1})
    assert (g.status, g.ungated, g.not_learned) == (INCONCLUSIVE, NOT_SUPPORTED, ("gpt2",))


def test_keys_with_a_sequence_length_level_with_the_bigram_and_a_missing_gap():
    parts = {("gpt2", 16): SUPPORTED, ("gpt2", 64): SUPPORTED}
    assert rules.learned_gate(parts, {"gpt2": 0.0}).status == INCONCLUSIVE  # level with the bigram: not below
    assert rules.learned_gate(parts, {"gpt2": math.nan}).status == INCONCLUSIVE  # no complete run
    assert rules.learned_gate(parts, {"gpt2": -0.05}).status == SUPPORTED
    # a margin asks for more than "below"
    assert rules.learned_gate(parts, {"gpt2": -0.05}, margin=0.1).status == INCONCLUSIVE
    assert rules.LEARNED_MARGIN == 0.0


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
