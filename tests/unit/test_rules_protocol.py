"""The protocol and set-early verdict rules on constructed cases at and around their thresholds."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from attnrank.analysis import rules
from attnrank.analysis.stats import Estimate
from attnrank.analysis.verdicts import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED
from attnrank.core.errors import ConfigError


def E(value, low, high, n=1000):
    return Estimate(value, low, high, n, "constructed")


RESOLVED_UP = E(2.0, 1.0, 3.0, 5)  # our difference, interval above 0
RESOLVED_DOWN = E(-2.0, -3.0, -1.0, 5)
UNRESOLVED = E(0.5, -1.0, 2.0, 5)


@pytest.mark.parametrize(
    "low, high, expected",
    [
        (0.0, 0.049, SUPPORTED),  # wholly below 5 %
        (0.0, 0.05, INCONCLUSIVE),  # touching the threshold
        (0.03, 0.07, INCONCLUSIVE),  # straddling it
        (0.05, 0.09, INCONCLUSIVE),
        (0.051, 0.09, NOT_SUPPORTED),  # wholly above
    ],
)
def test_protocol_stable_part_at_the_flip_threshold(low, high, expected):
    flip = E((low + high) / 2, low, high)
    res = rules.protocol_rule({"modernbert": flip}, {"modernbert": 3.0}, {"modernbert": RESOLVED_UP})
    assert res.parts[("stable", "modernbert")] == expected
    assert res.parts[("agrees", "modernbert")] == SUPPORTED
    assert res.status == expected


@pytest.mark.parametrize(
    "reference, ours, expected",
    [
        (3.0, RESOLVED_UP, SUPPORTED),
        (-3.0, RESOLVED_DOWN, SUPPORTED),
        (3.0, RESOLVED_DOWN, NOT_SUPPORTED),  # the protocols part: opposite signs
        (-0.01, RESOLVED_UP, NOT_SUPPORTED),
        (0.0, RESOLVED_UP, NOT_SUPPORTED),  # the study sees no difference where ours resolves one
        (3.0, UNRESOLVED, INCONCLUSIVE),  # ours does not resolve the sign
        (3.0, E(1.0, 0.0, 2.0, 5), INCONCLUSIVE),  # our interval touches 0
        (3.0, E(1.0, math.nan, math.nan, 1), INCONCLUSIVE),
    ],
)
def test_protocol_agreement_part(reference, ours, expected):
    res = rules.protocol_rule({"gpt2": E(0.0, 0.0, 0.004)}, {"gpt2": reference}, {"gpt2": ours})
    assert res.parts[("agrees", "gpt2")] == expected
    assert res.status == expected


def test_protocol_combines_over_architectures():
    good, flaky = E(0.0, 0.0, 0.004), E(0.3, 0.27, 0.33)
    res = rules.protocol_rule(
        {"modernbert": good, "gpt2": flaky},
        {"modernbert": 1.0, "gpt2": 1.0},
        {"modernbert": RESOLVED_UP, "gpt2": RESOLVED_UP},
    )
    assert res.status == NOT_SUPPORTED and res.parts[("stable", "modernbert")] == SUPPORTED
    res = rules.protocol_rule(
        {"modernbert": good, "gpt2": good},
        {"modernbert": 1.0, "gpt2": 1.0},
        {"modernbert": RESOLVED_UP, "gpt2": UNRESOLVED},
    )
    assert res.status == INCONCLUSIVE
    with pytest.raises(ConfigError, match="flips"):
        rules.protocol_rule({"modernbert": good}, {"gpt2": 1.0}, {"modernbert": RESOLVED_UP})
    with pytest.raises(ConfigError, match="max_flip"):
        rules.protocol_rule({"modernbert": good}, {"modernbert": 1.0}, {"modernbert": RESOLVED_UP}, max_flip=1.5)


def _table(arch, intervals, final=40):
    return pd.DataFrame(
        [
            {"arch": arch, "step": s, "final_step": final, "estimate": E((lo + hi) / 2, lo, hi, 30)}
            for s, (lo, hi) in intervals.items()
        ]
    )


def test_set_early_first_step_above_the_threshold_within_the_early_limit():
    # ci: 40 steps, early = steps <= 4
    t = _table("gpt2", {0: (0.5, 0.95), 1: (0.5, 0.95), 2: (0.85, 0.99), 4: (0.91, 0.99), 8: (0.95, 1.0)})
    res = rules.set_early_rule(t, early_fraction=0.1)
    assert res.status == SUPPORTED and res.first["gpt2"] == 4 and res.limit["gpt2"] == 4.0
    assert res.shown["gpt2"][0] == 4 and res.shown["gpt2"][1].low == 0.91
    res = rules.set_early_rule(
        _table("gpt2", {0: (0.5, 0.95), 2: (0.85, 0.99), 4: (0.8, 0.99), 8: (0.95, 1.0)}), early_fraction=0.1
    )
    assert res.first["gpt2"] is None and res.shown["gpt2"][0] == 4 and res.shown["gpt2"][1].low == 0.8


@pytest.mark.parametrize(
    "intervals, expected",
    [
        ({0: (0.5, 0.95), 4: (0.9, 0.99), 8: (0.95, 1.0)}, INCONCLUSIVE),  # touches 0.9 at the last early step
        ({0: (0.5, 0.95), 4: (0.8, 0.95), 8: (0.95, 1.0)}, INCONCLUSIVE),  # only after the early limit
        ({0: (0.2, 0.89), 4: (0.3, 0.899), 8: (0.95, 1.0)}, NOT_SUPPORTED),  # every early interval below 0.9
        ({0: (0.2, 0.89), 4: (0.3, 0.9), 8: (0.95, 1.0)}, INCONCLUSIVE),  # one touches it
        ({0: (0.901, 0.99)}, SUPPORTED),  # set at initialisation
        ({0: (math.nan, math.nan), 4: (0.2, 0.5)}, INCONCLUSIVE),  # an undefined correlation
        ({8: (0.95, 1.0)}, INCONCLUSIVE),  # no early step at all
    ],
)
def test_set_early_at_and_around_the_threshold(intervals, expected):
    res = rules.set_early_rule(_table("modernbert", intervals), early_fraction=0.1)
    assert res.status == expected
    assert (res.shown["modernbert"] is None) == (min(intervals) > 4)


def test_set_early_combines_over_architectures_and_checks_its_inputs():
    t = pd.concat([_table("modernbert", {0: (0.95, 0.99)}), _table("gpt2", {0: (0.2, 0.5), 4: (0.3, 0.6)})])
    res = rules.set_early_rule(t, early_fraction=0.1)
    assert res.per_arch == {"modernbert": SUPPORTED, "gpt2": NOT_SUPPORTED} and res.status == NOT_SUPPORTED
    assert rules.set_early_rule(t, rho_min=0.4, early_fraction=0.1).per_arch["gpt2"] == INCONCLUSIVE
    assert rules.set_early_rule(t, early_fraction=0.05).first["modernbert"] == 0  # step 0 is always early
    with pytest.raises(ConfigError, match="rho_min"):
        rules.set_early_rule(t, rho_min=1.0)


def test_set_early_reads_only_probes_after_the_warm_up_and_names_every_architecture():
    """1000 steps, warm-up 100: the probes at 0..64 lie in the warm-up and do not count, step 250 (a quarter) does,
    step 500 does not; an architecture without rows (none of its runs learned) is inconclusive, not dropped."""
    t = _table("gpt2", {0: (0.95, 1.0), 64: (0.95, 1.0), 250: (0.5, 0.8), 500: (0.95, 1.0)}, final=1000)
    assert rules.EARLY_FRACTION == 0.25
    res = rules.set_early_rule(t, warmup=100, archs=["modernbert", "gpt2"])
    assert res.per_arch == {"gpt2": NOT_SUPPORTED, "modernbert": INCONCLUSIVE} and res.status == NOT_SUPPORTED
    assert res.shown["gpt2"][0] == 250 and res.shown["modernbert"] is None
    assert rules.set_early_rule(t).per_arch["gpt2"] == SUPPORTED  # without the warm-up, step 0 would decide
    with pytest.raises(ConfigError, match="early_fraction"):
        rules.set_early_rule(t, early_fraction=0)
    with pytest.raises(ConfigError, match="table"):
        rules.set_early_rule(t.drop(columns="final_step"))
