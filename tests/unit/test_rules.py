"""The training chapters' verdict rules (attnrank.analysis.rules) on constructed run tables with known answers."""

import numpy as np
import pandas as pd
import pytest

from attnrank.analysis import rules

TAUS = (0.001, 0.004, 0.016, 0.063, 0.25, 1.0, 4.0)


def _partial_spearman_rho(x, y, z):
    """The superseded "temperature held fixed": ranks of x and y residualised linearly on the ranks of z."""
    from scipy.stats import rankdata

    rx, ry = rankdata(x), rankdata(y)
    rz = np.column_stack([np.ones(len(rx)), rankdata(z)])
    ex = rx - rz @ np.linalg.lstsq(rz, rx, rcond=None)[0]
    ey = ry - rz @ np.linalg.lstsq(rz, ry, rcond=None)[0]
    return float((ex * ey).sum() / np.sqrt((ex**2).sum() * (ey**2).sum()))


def _runs(seeds=4, *, direct=0.0, noise=0.3, rng=0):
    """Runs over a tau grid: the initial rank peaks at tau = 0.063; the loss follows the same peaked
    tau effect; ``direct`` adds a within-tau rank -> loss link (0: none)."""
    g = np.random.default_rng(rng)
    rows = []
    for a in ("modernbert", "gpt2"):
        for t in TAUS:
            peak = np.exp(-(np.log(t / 0.063) ** 2) / 4)
            for s in range(seeds):
                r0 = 10 + 5 * peak + noise * g.standard_normal()
                dev = r0 - (10 + 5 * peak)
                loss = 5 - 0.5 * peak + 0.02 * g.standard_normal() - direct * dev
                rows.append(
                    dict(
                        arch=a,
                        tau=t,
                        seed=s,
                        initial_m=r0,
                        final_m=r0 * (1 + 0.02 * g.standard_normal()),
                        final_val_loss=loss,
                    )
                )
    return pd.DataFrame(rows)


def test_peaked_tau_without_rank_loss_link_is_not_supported_by_the_within_tau_rule():
    """A peaked tau effect on rank and loss and no direct link: across runs rank and loss correlate
    strongly, the linear partial correlation (log tau) stays far from 0, the fixed-effect one does not,
    and the loss rule does not call the claim supported."""
    runs = _runs(direct=0.0)
    res = rules.loss_rule(runs, "m", n_resamples=20_000)
    for a in ("modernbert", "gpt2"):
        d = runs[runs.arch == a]
        assert res.rho[a].value < -0.7 and res.rho[a].high < 0
        assert abs(_partial_spearman_rho(d.initial_m, d.final_val_loss, np.log(d.tau))) > 0.3
        assert abs(res.within[a].value) < 0.5 and res.within[a].low < 0 < res.within[a].high
    assert res.status == "inconclusive at this scale"


def test_a_within_tau_link_is_found():
    """With a direct rank -> loss link inside every temperature the rule says supported."""
    res = rules.loss_rule(_runs(direct=0.2), "m", n_resamples=20_000)
    assert all(res.within[a].high < 0 for a in res.within)
    assert res.status == "supported"


def test_dynamics_rule_supported_for_stable_predictable_ranks_and_not_for_large_changes():
    """Final rank = initial rank within 2%: supported; final rank doubled: the stable half fails."""
    runs = _runs()
    assert rules.dynamics_rule(runs, "m", n_resamples=20_000).status == "supported"
    res = rules.dynamics_rule(runs.assign(final_m=2 * runs.final_m), "m", n_resamples=20_000)
    assert res.halves[("stable", "modernbert")] == "not supported" and res.status == "not supported"
    assert res.change["modernbert"].value == pytest.approx(1.0, abs=0.05)


@pytest.mark.parametrize("rule", ["dynamics", "loss"])
def test_verdicts_are_stable_to_the_bootstrap_seed_and_row_order(rule):
    """Shuffled rows and another bootstrap seed give the same statuses and intervals within 0.03."""
    runs = _runs(seeds=2, direct=0.1, rng=3)
    f = rules.dynamics_rule if rule == "dynamics" else rules.loss_rule
    base = f(runs, "m")
    for seed in (1, 7):
        other = f(runs.sample(frac=1.0, random_state=seed).reset_index(drop=True), "m", seed=seed)
        assert other.status == base.status
        for a in ("modernbert", "gpt2"):
            for e0, e1 in ((base.rho[a], other.rho[a]), (base.within[a], other.within[a])):
                assert e1.value == pytest.approx(e0.value, abs=1e-12)
                assert e1.low == pytest.approx(e0.low, abs=0.03) and e1.high == pytest.approx(e0.high, abs=0.03)


def test_every_pre_registered_constant_is_a_rule_default_and_no_chapter_sets_one():
    """The effects, thresholds and tolerances of the rules live in rules.py, as the defaults of the
    rules that use them; a chapter's code defines no numeric constant of its own."""
    import inspect
    import re
    from pathlib import Path

    def default(fn, name):
        return inspect.signature(fn).parameters[name].default

    assert default(rules.temperature_rank, "effect") == rules.TEMP_RANK_EFFECT == 1.0
    assert default(rules.temperature_loss, "effect") == rules.TEMP_LOSS_EFFECT == -0.5
    assert default(rules.lever_comparison, "effect") == rules.LEVER_EFFECT == 1.0
    assert default(rules.loss_rule, "effect") == rules.LOSS_EFFECT == -0.5
    assert default(rules.dynamics_rule, "tolerance") == rules.STABLE_TOLERANCE == 0.1
    assert default(rules.dynamics_rule, "rho_min") == rules.RHO_MIN
    assert default(rules.causal_rule, "effect") == rules.CAUSAL_EFFECT
    assert default(rules.protocol_rule, "max_flip") == rules.MAX_FLIP
    assert default(rules.set_early_rule, "rho_min") == rules.SET_EARLY_RHO
    assert default(rules.set_early_rule, "early_fraction") == rules.EARLY_FRACTION
    chapters = Path(__file__).resolve().parents[2] / "chapters"
    for twin in sorted(chapters.glob("*.py")):
        code = [line for line in twin.read_text().splitlines() if not line.startswith("#")]
        constants = [line for line in code if re.match(r"^[A-Z][A-Z0-9_]*(, [A-Z][A-Z0-9_]*)* = .*\d", line)]
        assert not constants, f"{twin.name} sets constants of its own: {constants}"
