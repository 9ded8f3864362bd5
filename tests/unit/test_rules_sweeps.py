"""The temperature and head-dimension verdict rules (attnrank.analysis.rules) on constructed run tables with known answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attnrank.analysis import rules as sv
from attnrank.analysis import stats
from attnrank.core.errors import ConfigError
from attnrank.core.rank import RANK_MEASURES
from attnrank.sections import temp

TAUS = (0.001, 0.004, 0.016, 0.063, 0.25, 1.0, 4.0)
HEAD_DIMS = (4, 8, 16, 32)
N_RES = 20_000


def _tau_runs(response, *, seeds=(0, 1), noise=0.05, archs=("modernbert", "gpt2"), rng=0):
    """One row per run: ``response(arch, tau)`` plus seed noise."""
    g = np.random.default_rng(rng)
    rows = [
        dict(arch=a, tau=t, seed=s, y=response(a, t) + noise * g.standard_normal())
        for a in archs
        for t in TAUS
        for s in seeds
    ]
    return pd.DataFrame(rows)


def _hd_runs(response, *, seeds=(0, 1), noise=0.05, archs=("modernbert", "gpt2"), rng=1):
    g = np.random.default_rng(rng)
    return pd.DataFrame(
        [
            dict(arch=a, head_dim=h, seed=s, y=response(a, h) + noise * g.standard_normal())
            for a in archs
            for h in HEAD_DIMS
            for s in seeds
        ]
    )


def peaked(a, t):
    """Rises as tau falls from 4 to 0.063, then falls again toward the cold end (the P1/P2 shape)."""
    return 10.0 - 3.0 * (np.log10(t) - np.log10(0.063)) ** 2


def test_peaked_response_gives_interior_peak_and_the_two_point_sign():
    """A peaked tau response: the peak is found at the mid tau (interior), and the two-point comparison
    tau = 1 vs tau = 0.001 follows the two ends, not the peak: the stock end is higher, the study's sign."""
    runs = _tau_runs(peaked)
    v = sv.temperature_rank(runs, "y", n_resamples=N_RES)
    for a in ("modernbert", "gpt2"):
        r = v[a]
        assert r.shape.value == pytest.approx(0.063)
        assert r.shape.low > min(TAUS) and r.shape.high < max(TAUS)
        assert temp.shape_text(r).startswith("interior peak at 0.063")
        # ends: peaked(0.001) = 10 - 3 * 1.8^2 = 0.28 and peaked(1) = 10 - 3 * 1.2^2 = 5.68: hotter is higher
        assert r.verdict.estimate.value == pytest.approx(peaked(a, 1.0) - peaked(a, 0.001), abs=0.2)
        assert r.verdict.status == "supported"
        assert r.verdict.needed is None  # resolved: no runs needed
        assert r.spread == pytest.approx(0.05, rel=0.8)
    assert v.status == "supported"
    assert v.n_runs == len(runs)


def test_monotone_colder_raises_rank_reverses_the_study_and_peak_at_cold_end():
    """The rank rises as tau falls: the study's sign (a higher tau, a higher rank) is reversed, resolved."""
    runs = _tau_runs(lambda a, t: 5.0 - np.log10(t))
    v = sv.temperature_rank(runs, "y", n_resamples=N_RES)
    assert v.status == "not supported"
    assert v["modernbert"].verdict.estimate.value == pytest.approx(-3.0, abs=0.2)
    assert temp.shape_text(v["modernbert"]) == "peak at the low end of the grid"
    assert v["modernbert"].verdict.needed is None  # resolved the other way: no runs needed either


def test_sign_finding_names_where_the_study_holds_and_reverses():
    """Measures built with a known sign: one rises with tau (the study's sign), two fall (reversed), one
    is flat noise (undecided), one holds for ModernBERT and reverses for GPT-2."""
    shapes = {
        "rank_atol_1e-8": lambda a, t: 5.0 + np.log10(t),
        "effective_rank": lambda a, t: 5.0 - np.log10(t),
        "stable_rank": lambda a, t: 5.0 - 0.5 * np.log10(t),
        "rank_rtol_1e-4": lambda a, t: 5.0,
        "rank_rtol_1e-2": lambda a, t: 5.0 + (1 if a == "modernbert" else -1) * np.log10(t),
    }
    rank_v = {
        m: sv.temperature_rank(_tau_runs(f, noise=0.05 if m != "rank_rtol_1e-4" else 1.0), "y", n_resamples=N_RES)
        for m, f in shapes.items()
    }
    assert [rank_v["rank_rtol_1e-4"][a].verdict.status for a in ("modernbert", "gpt2")] == [
        "inconclusive at this scale"
    ] * 2
    text = temp.sign_finding(rank_v)
    assert text == (
        "The study's sign holds on the study's 10⁻⁸ count (both models) and, for ModernBERT, on the 10⁻² count; it "
        "reverses on the effective and stable ranks (both models) and, for GPT-2, on the 10⁻² count; it is undecided "
        "on the 10⁻⁴ count (both models)."
    )
    assert temp.sign_finding(rank_v, short=True) == (
        "Hotter softmax, initial rank: higher on 10⁻⁸ count, lower on effective and stable ranks, unclear on 10⁻⁴ "
        "count (both models); 10⁻² count: lower for GPT-2, higher for ModernBERT."
    )
    assert len(temp.sign_finding(rank_v, short=True).split()) <= 30
    agree = {m: v for m, v in rank_v.items() if m != "rank_rtol_1e-2"}  # both models alike: named once, in words
    assert temp.sign_finding(agree, short=True) == (
        "Hotter softmax, initial rank: higher on the study's 10⁻⁸ count, lower on the effective and stable ranks, "
        "unclear on the 10⁻⁴ count (both models)."
    )
    assert temp.sign_of("supported") == "the study's sign" and temp.sign_of("not supported") == "reversed"


def test_two_seeds_with_a_small_effect_is_inconclusive_and_states_seeds_needed():
    """2 seeds per arm, an effect of the size of the noise: inconclusive, with the seeds per arm needed."""
    runs = _tau_runs(lambda a, t: 5.0 - 0.1 * np.log10(t), noise=0.5)
    v = sv.temperature_rank(runs, "y", effect=0.5, n_resamples=N_RES)
    assert v.status == "inconclusive at this scale"
    r = v["modernbert"].verdict
    assert r.needed_unit == "seeds per arm"
    # exact t power at the pooled seed spread (stats.seeds_needed_t), more than the 2 seeds we have
    assert r.needed == stats.seeds_needed_t(v["modernbert"].spread, 0.5)
    assert 4 <= r.needed <= 60


def test_constant_arms_give_an_exact_difference():
    """A numerical rank that is the same for every seed: the difference is exact, not undefined."""
    runs = _tau_runs(lambda a, t: 1.0 if t >= 0.25 else 8.0, noise=0.0)
    v = sv.temperature_rank(runs, "y", n_resamples=N_RES)
    e = v["modernbert"].verdict.estimate
    assert (e.value, e.low, e.high) == (-7.0, -7.0, -7.0)  # tau = 1 minus the coldest: the sign reversed
    assert v.status == "not supported"


def test_hotter_trains_lower_is_supported_and_best_tau_is_found():
    """Loss falls as tau rises to 1, then rises a little: rho(log tau, loss) < 0 (the study's sign, a
    higher temperature a lower loss), lowest loss at tau = 1."""
    runs = _tau_runs(lambda a, t: 5.0 - 0.3 * np.log10(min(t, 1.0)) + (0.05 if t > 1 else 0.0), noise=0.01)
    runs = runs.rename(columns={"y": "final_val_loss"})
    v = sv.temperature_loss(runs, n_resamples=N_RES)
    assert v.status == "supported"
    for a in ("modernbert", "gpt2"):
        e = v[a].verdict.estimate
        assert e.value < -0.8 and e.high < 0
        assert v[a].shape.value == 1.0
        assert v[a].verdict.needed is None  # resolved: no runs needed
    # the mirror case: colder trains lower, the study's sign reversed
    flipped = runs.assign(final_val_loss=10.0 - runs.final_val_loss)
    assert sv.temperature_loss(flipped, n_resamples=N_RES).status == "not supported"


def test_loss_rule_unresolved_states_runs_needed_from_the_observed_spread():
    """Pure noise: inconclusive, and the runs needed come from the interval's own width, not a constant."""
    runs = _tau_runs(lambda a, t: 5.0, noise=0.1, rng=1).rename(columns={"y": "final_val_loss"})
    v = sv.temperature_loss(runs, n_resamples=N_RES)
    assert v.status == "inconclusive at this scale"
    r = v["modernbert"].verdict
    assert r.needed == stats.runs_needed_observed(r.estimate, sv.TEMP_LOSS_EFFECT) == 39
    assert r.needed > stats.runs_needed_correlation(0.5)  # the bootstrap interval is wider than normal theory
    text = temp.temperature_loss_summary(v, profile="ci", n_seeds=2)
    assert "For GPT-2 and ModernBERT the interval does not decide the sign." in text
    assert "$" not in text  # plain symbols: the summary is pasted where no maths is rendered


def test_tau_lever_clearly_larger_is_supported():
    """tau moves the rank by ~9 over its grid, head dimension by ~0.3: supported, with the spans."""
    t = _tau_runs(lambda a, t: 5.0 - 3.0 * np.log10(t) if t <= 1 else 5.0)
    h = _hd_runs(lambda a, d: 5.0 - 0.1 * np.log2(d))
    v = sv.lever_comparison(t, h, "y", n_resamples=N_RES)
    assert v.status == "supported"
    r = v["modernbert"]
    assert r.verdict.estimate.value == pytest.approx(9.0 - 0.3, abs=0.3)
    assert r.parts["tau_range"].value == pytest.approx(9.0, abs=0.2)
    assert r.parts["head_dim_range"].value == pytest.approx(0.3, abs=0.15)
    # the signed change from the smallest to the largest head dimension: the rank falls
    assert r.parts["head_dim_change"].value == pytest.approx(-0.3, abs=0.15)
    assert v.n_runs == len(t) + len(h)


def test_head_dim_lever_larger_is_not_supported():
    t = _tau_runs(lambda a, t: 5.0 + 0.1 * np.log10(t))
    h = _hd_runs(lambda a, d: 2.0 * np.log2(d))
    assert sv.lever_comparison(t, h, "y", n_resamples=N_RES).status == "not supported"


@pytest.mark.parametrize("fn", ["temperature_rank", "temperature_loss", "lever_comparison"])
def test_verdicts_stable_to_bootstrap_seed_and_row_order(fn):
    """Guarantee (docs/guarantees.md) "The temperature and head-dimension verdicts do not flip with the bootstrap":
    same status and (to Monte Carlo precision) the same interval for another bootstrap seed;
    exactly the same numbers for shuffled rows at the same seed."""
    t = _tau_runs(peaked, noise=0.5)
    h = _hd_runs(lambda a, d: 5.0 - 0.3 * np.log2(d), noise=0.5)
    t["final_val_loss"] = t.y

    def run(tt, hh, seed):
        if fn == "temperature_rank":
            return sv.temperature_rank(tt, "y", seed=seed)
        if fn == "temperature_loss":
            return sv.temperature_loss(tt, seed=seed)
        return sv.lever_comparison(tt, hh, "y", seed=seed)

    base = run(t, h, 0)
    shuffled = run(t.sample(frac=1, random_state=3), h.sample(frac=1, random_state=4), 0)
    other = run(t, h, 7)
    for a in ("modernbert", "gpt2"):
        e0, e1, e2 = (x[a].verdict.estimate for x in (base, shuffled, other))
        assert (e1.value, e1.low, e1.high) == (e0.value, e0.low, e0.high)
        assert e2.value == e0.value
        assert e2.low == pytest.approx(e0.low, abs=0.05) and e2.high == pytest.approx(e0.high, abs=0.05)
        if base[a].shape is not None:
            assert (shuffled[a].shape.low, shuffled[a].shape.high) == (base[a].shape.low, base[a].shape.high)
    assert base.status == shuffled.status == other.status


def test_bad_input():
    runs = _tau_runs(peaked)
    with pytest.raises(ConfigError, match="runs"):
        sv.temperature_rank(runs.drop(columns="tau"), "y")
    with pytest.raises(ConfigError, match="stock"):
        sv.temperature_rank(runs, "y", stock=0.5)


def test_fine_peaks_bracket_a_known_peak_between_its_grid_neighbours():
    """The fine grid at initialisation: a constructed rank that peaks at tau = 0.016 (a grid value) is located there,
    between its neighbours a factor of sqrt(2) apart (its bootstrap interval is the one grid value, widened to the
    values beside it); a measure that rises to the grid's end is marked as an edge; a plateau is the contiguous run of
    grid values that share the largest mean."""
    taus = np.array(temp.FINE_TAUS)
    assert taus.min() == 0.001 and taus.max() > 4 and np.all(taus[1:] / taus[:-1] <= 1.5)
    rows = []
    for arch in ("modernbert", "gpt2"):
        for seed in (0, 1):
            for t in taus:
                peaked = 10 - (np.log(t) - np.log(0.016)) ** 2 + 0.01 * seed
                # a count at its ceiling of 64 from 0.008 on, a little short of it at 0.724 (not one plateau)
                count = 64.0 - (t < 0.008) * (0.008 - t) * 1000 - (t == taus[19]) * 0.002
                rows.append(
                    {
                        "arch": arch,
                        "tau": t,
                        "seed": seed,
                        **{m: peaked for m in RANK_MEASURES},
                        "stable_rank": t,
                        "rank_atol_1e-8": count,
                    }
                )
    peaks = temp.fine_peaks(pd.DataFrame(rows)).set_index(["arch", "measure"])
    p = peaks.loc[("gpt2", "effective_rank")]
    assert p.peak_tau == pytest.approx(0.016, rel=0.05) and not p.edge
    assert p.low < p.peak_tau < p.high and p.factor == pytest.approx(2.0, rel=0.02)
    assert p.peak == pytest.approx(10.005, abs=0.01)
    edge = peaks.loc[("modernbert", "stable_rank")]
    assert edge.edge and edge.peak_tau == edge.high == taus.max() and np.isnan(edge.factor)
    flat = peaks.loc[("gpt2", "rank_atol_1e-8")]  # the contiguous run of tied values: 0.008 to 0.512
    assert flat.peak_tau == pytest.approx(0.008) and flat.flat_to == taus[18] and not flat.edge
    assert temp._fine_peak_text(flat) == f"on a plateau from τ = 0.008 to {taus[18]:.3g}"


def test_lever_windows_move_each_lever_over_the_same_factor():
    from attnrank.sections import headdim

    w = headdim.lever_windows("quick", 128, 32, 0.001)
    at, taus, dims = w["stock"]
    assert at == 1.0 and taus == [0.0625, 0.125, 0.25, 0.5, 1.0] and dims == [64, 32, 16, 8, 4]
    at, taus, dims = w["cold"]
    assert at == 0.001 and taus == pytest.approx([0.001, 0.002, 0.004, 0.008, 0.016]) and dims == [64, 32, 16, 8, 4]
    assert max(taus) / min(taus) == pytest.approx(max(dims) / min(dims)) == sv.LEVER_FACTOR
