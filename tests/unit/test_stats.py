"""Checks of attnrank.analysis.stats against scipy.stats, exact enumeration and hand-computed values."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from attnrank.analysis import stats as S
from attnrank.analysis.verdicts import classify
from attnrank.core.errors import ConfigError

TAUS7 = np.geomspace(1e-3, 1.0, 7)


# --------------------------------------------------------------------------- Estimate and its text
def test_estimate_tuple_compatibility():
    e = S.Estimate(0.391, -0.0512, 0.7149, 14, "test")
    v, lo, hi = e
    assert (v, lo, hi) == (0.391, -0.0512, 0.7149) and e[1] == -0.0512
    assert e.as_dict()["n"] == 14 and e.has_interval
    assert not hasattr(e, "text")  # numbers are written by attnrank.words.glossary, outside the result hash


def test_estimate_rejects_bad_fields():
    with pytest.raises(ConfigError, match="confidence"):
        S.Estimate(0.0, -1.0, 1.0, 3, "t", confidence=95)
    with pytest.raises(ConfigError, match="low"):
        S.Estimate(0.0, 1.0, -1.0, 3, "t")


# --------------------------------------------------------------------------- mean_ci
def test_mean_ci_matches_scipy_t_interval():
    v = np.array([4.1, 3.7, 5.2, 4.4, 4.9])
    e = S.mean_ci(v, confidence=0.9)
    lo, hi = sps.t.interval(0.9, 4, loc=v.mean(), scale=v.std(ddof=1) / math.sqrt(5))
    assert e.value == pytest.approx(4.46) and (e.low, e.high) == pytest.approx((lo, hi), abs=1e-12)
    # hand: t_{0.975, 2} = 4.302653; sd of (1, 2, 3) is 1
    m, lo, hi = S.mean_ci([1.0, 2.0, 3.0])
    assert (m, lo, hi) == pytest.approx((2.0, 2.0 - 4.302653 / math.sqrt(3), 2.0 + 4.302653 / math.sqrt(3)), abs=1e-6)
    assert e.n == 5


def test_mean_ci_over_clusters_counts_runs():
    # 3 runs x 4 probe sequences: the interval is over the 3 run means (2, 5, 11), not 12 rows
    run = np.repeat(["a", "b", "c"], 4)
    v = np.repeat([2.0, 5.0, 11.0], 4) + np.tile([-0.3, 0.1, 0.1, 0.1], 3)
    e = S.mean_ci(v, clusters=run)
    ref = S.mean_ci([2.0, 5.0, 11.0])
    assert e.n == 3 and (e.value, e.low, e.high) == pytest.approx(tuple(ref))
    assert S.mean_ci(v).high - S.mean_ci(v).low < 0.5 * (e.high - e.low)


def test_mean_ci_edge_cases():
    one = S.mean_ci([3.0, float("nan")])
    assert one.value == 3.0 and math.isnan(one.low) and one.n == 1
    const = S.mean_ci([2.0, 2.0, 2.0])
    assert (const.low, const.high) == (2.0, 2.0)
    with pytest.raises(ConfigError, match="confidence"):
        S.mean_ci([1.0, 2.0], confidence=1.5)


def test_median_ci_is_the_order_statistic_interval():
    # hand: n = 10, P(Bin(10, 1/2) <= 1) = 11/1024, so the 2nd and 9th order statistics bound the median
    e = S.median_ci(np.arange(10.0)[::-1])
    assert (e.value, e.low, e.high, e.n) == (4.5, 1.0, 8.0, 10)
    assert math.isnan(S.median_ci([1.0, 2.0, 3.0, 4.0, 5.0]).low)  # 2 / 32 > 0.05: no 95% interval from 5 values


# --------------------------------------------------------------------------- spearman
def test_spearman_value_matches_scipy_with_ties():
    rng = np.random.default_rng(1)
    x = np.repeat(np.log(TAUS7), 2)
    y = np.round(rng.normal(size=14), 1)
    e = S.spearman(x, y, n_resamples=2000)
    ref = sps.spearmanr(x, y)
    assert e.value == pytest.approx(ref.statistic, abs=1e-12) and e.p == pytest.approx(ref.pvalue)
    assert e.n == 14 and e.low < e.value < e.high
    # the vectorised resample statistic agrees with scipy row by row
    X, Y = rng.integers(0, 4, (50, 9)).astype(float), rng.normal(size=(50, 9))
    ok = np.ptp(X, axis=1) > 0
    assert np.allclose(S._rank_corr_rows(X, Y)[ok], [sps.spearmanr(a, b).statistic for a, b in zip(X[ok], Y[ok])])
    assert np.isnan(S._rank_corr_rows(np.ones((1, 5)), np.arange(5.0)[None])).all()


def test_spearman_constant_or_short_input_is_nan_in_both_versions():
    for x, y in (([1.0, 1, 1, 1, 1], [1.0, 2, 3, 4, 5]), ([1.0, 2, 3], [3.0, 1, 2])):
        e = S.spearman(x, y, n_resamples=200)
        assert math.isnan(e.value) and math.isnan(e.low)
        old = _old_spearman_ci(x, y)
        assert math.isnan(old["rho"]) and math.isnan(old["low"])


def test_constant_resamples_are_dropped_not_scored_zero():
    x = np.array([0.0, 0, 0, 0, 0, 1, 2])  # many resamples hold only zeros
    y = np.array([0.1, 0.3, 0.2, 0.5, 0.4, 0.9, 1.0])
    e = S.spearman(x, y, n_resamples=4000, method="percentile")
    dropped = int(e.method.split(", ")[-1].split(" of ")[0])
    # P(all 7 draws from the 5 zeros) = (5/7)^7 = 0.095
    assert dropped / 4000 == pytest.approx((5 / 7) ** 7, abs=0.015)
    assert "undefined and dropped" in e.method
    # the resample statistic marks them undefined (NaN); the old spearman_ci scored them 0
    boot = np.random.default_rng(0).integers(0, 7, (4000, 7))
    r = S._rank_corr_rows(x[boot], y[boot])
    assert np.isnan(r).sum() == pytest.approx(0.095 * 4000, rel=0.2) and not (r == 0).any()


def test_percentile_and_bca_agree_with_scipy_bootstrap():
    rng = np.random.default_rng(3)
    v = rng.exponential(size=25)

    def stat(idx):
        return v[idx].mean(axis=-1)

    for method in ("percentile", "BCa"):
        ref = sps.bootstrap((v,), np.mean, n_resamples=50_000, method=method, rng=np.random.default_rng(1))
        lo, hi, dropped = S.resample_ci(stat, len(v), n_resamples=50_000, method=method.lower(), seed=2)
        assert dropped == 0
        assert (lo, hi) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high), abs=0.01)
    with pytest.raises(ConfigError, match="method"):
        S.resample_ci(stat, len(v), method="basic")


def test_spearman_reads_the_percentile_interval_where_bca_reaches_into_the_far_tail():
    """8 runs (4 temperatures x 2 seeds), loss falling with tau, rho = -0.88: the resampled rho takes few values and
    the BCa upper bound is pushed towards 0 (-0.09); the percentile bound (-0.33) governs. Both match scipy."""
    x = np.log(np.repeat([0.001, 0.016, 0.25, 1.0], 2))
    y = np.array([3.40, 3.39, 3.20, 3.21, 2.62, 2.66, 2.65, 2.63])
    est = S.spearman(x, y)
    assert est.value == pytest.approx(-0.878, abs=1e-3) and "percentile" in est.method
    bca = S.spearman(x, y, method="bca")
    assert bca.high == pytest.approx(-0.094, abs=0.02) and est.high == pytest.approx(-0.331, abs=0.02)

    # 12 runs (3 seeds), where no resample is undefined, so scipy's intervals exist: both methods match them
    x3 = np.log(np.repeat([0.001, 0.016, 0.25, 1.0], 3))
    y3 = np.array([3.40, 3.39, 3.41, 3.20, 3.21, 3.22, 2.62, 2.66, 2.61, 2.65, 2.63, 2.64])

    def rho(a, b, axis=-1):
        return S._rank_corr_rows(a, b)

    for method in ("percentile", "BCa"):
        ours = S.spearman(x3, y3, method=method.lower())
        ref = sps.bootstrap((x3, y3), rho, paired=True, vectorized=True, n_resamples=100_000, method=method, rng=1)
        assert (ours.low, ours.high) == pytest.approx(
            (ref.confidence_interval.low, ref.confidence_interval.high), abs=0.01
        )
    assert S.spearman(x3, y3).high == pytest.approx(-0.415, abs=0.01)  # BCa: -0.27
    assert classify(est, 0.0, "below") == "supported"


def _realistic_case():
    """14 runs (7 temperatures x 2 seeds), rho about 0.5: the case whose verdict flipped with the bootstrap seed."""
    rng = np.random.default_rng(41)
    x = np.repeat(np.log(TAUS7), 2)
    y = np.round(0.6 * (x - x.mean()) / x.std() + rng.normal(0, 1, 14), 3)
    return x, y


def test_verdict_is_stable_to_bootstrap_seed_and_row_order():
    """Same verdict over 10 bootstrap seeds and a shuffled row order (the old 2,000-resample interval flips here)."""
    x, y = _realistic_case()
    ests = [S.spearman(x, y, seed=s) for s in range(10)]
    assert ests[0].value == pytest.approx(0.523, abs=1e-3)
    lows = np.array([e.low for e in ests])
    assert np.ptp(lows) < 0.02  # Monte Carlo spread of the bound
    assert {classify(e, 0.0, "above") for e in ests} == {"inconclusive at this scale"}
    perm = np.random.default_rng(7).permutation(14)
    assert S.spearman(x[perm], y[perm], seed=3) == ests[3]  # row order cannot matter
    old = [_old_spearman_ci(x, y, seed=s)["low"] for s in range(10)] + [_old_spearman_ci(x[perm], y[perm])["low"]]
    assert min(old) < 0 < max(old)  # why the old interval is not used for verdicts


def test_cluster_bootstrap_counts_runs_not_probe_sequences():
    rng = np.random.default_rng(5)
    runs, per = 14, 64
    run_x = rng.normal(size=runs)
    run_y = 0.5 * run_x + rng.normal(size=runs)
    x = np.repeat(run_x, per) + 0.1 * rng.normal(size=runs * per)
    y = np.repeat(run_y, per) + 0.1 * rng.normal(size=runs * per)
    run = np.repeat(np.arange(runs), per)
    naive = S.spearman(x, y, n_resamples=2000)
    clustered = S.spearman(x, y, clusters=run, n_resamples=2000)
    assert naive.n == runs * per and clustered.n == runs
    assert clustered.value == naive.value
    assert (clustered.high - clustered.low) > 4 * (naive.high - naive.low)
    assert clustered.low < 0.2 < naive.low  # 896 sequences pretend to be 896 independent runs


# --------------------------------------------------------------------------- correlation given a categorical nuisance
def _peaked(seed, seeds=2, link=0.0):
    """Rank peaks at mid tau, loss depends on tau only (plus ``link`` times the rank's own noise)."""
    rng = np.random.default_rng(seed)
    t = np.repeat(TAUS7, seeds)
    bump = np.exp(-((np.log10(t) + 1.5) ** 2))
    noise = rng.normal(0, 0.5, len(t))
    rank = 10 + 8 * bump + noise
    loss = 5 - 0.6 * bump + 0.1 * np.log10(t) + rng.normal(0, 0.05, len(t)) + link * noise
    return t, rank, loss


def test_fixed_effect_removes_a_peaked_tau_effect_that_partial_spearman_keeps():
    old, new = [], []
    for k in range(20):
        t, rank, loss = _peaked(k)
        old.append(partial_spearman_rho(rank, loss, np.log(t)))
        e = S.spearman_within(rank, loss, t, n_resamples=2000)
        new.append(e.value)
        assert e.low <= 0 <= e.high and e.p > 0.05 and classify(e, 0.0, "below") == "inconclusive at this scale"
    assert np.mean(old) == pytest.approx(-0.93, abs=0.05)  # the linear log-tau adjustment leaves the bump
    assert abs(np.mean(new)) < 0.15


def test_fixed_effect_detects_a_real_within_stratum_link():
    t, rank, loss = _peaked(0, seeds=5, link=-0.1)
    e = S.spearman_within(rank, loss, t, n_resamples=5000, n_permutations=1999)
    assert e.value < -0.5 and e.high < 0 and e.p < 0.01 and e.n == 35
    assert classify(e, 0.0, "below") == "supported"


def test_spearman_within_matches_dummy_regression_and_exact_enumeration():
    rng = np.random.default_rng(2)
    s = np.array([0, 0, 1, 1, 2, 2, 2])
    x, y = rng.normal(size=7), rng.normal(size=7)
    D = np.eye(3)[s]

    def by_hand(xv, yv):  # ranks residualised on stratum dummies by least squares
        rx, ry = sps.rankdata(xv), sps.rankdata(yv)
        ex = rx - D @ np.linalg.lstsq(D, rx, rcond=None)[0]
        ey = ry - D @ np.linalg.lstsq(D, ry, rcond=None)[0]
        return float(ex @ ey / math.sqrt((ex @ ex) * (ey @ ey)))

    e = S.spearman_within(x, y, s, n_resamples=500)
    assert e.value == pytest.approx(by_hand(x, y), abs=1e-12)
    # brute force: every permutation of the 7 rows that keeps each row in its stratum (2! 2! 3! = 24)
    null = [by_hand(x, y[list(p)]) for p in itertools.permutations(range(7)) if (s[list(p)] == s).all()]
    assert len(null) == 24 and "exact over 24 permutations" in e.method
    assert e.p == pytest.approx(np.mean(np.abs(null) >= abs(e.value) - 1e-12))
    # row order does not matter
    perm = rng.permutation(7)
    assert S.spearman_within(x[perm], y[perm], s[perm], n_resamples=500) == e


def test_spearman_within_nan_when_nothing_varies_within_strata():
    t = np.repeat([0.1, 1.0], 3)
    e = S.spearman_within(np.array([1.0, 1, 1, 2, 2, 2]), np.arange(6.0), t, n_resamples=200)
    assert math.isnan(e.value) and classify(e, 0.0, "above") == "inconclusive at this scale"


# --------------------------------------------------------------------------- small-n two-sample comparison
def test_compare_means_welch_interval_and_exact_permutation_p():
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    e = S.compare_means(a, b)
    # hand: diff -2, se = sqrt(0.5/2 + 0.5/2) = 0.7071, Welch df = 2, t_{0.975, 2} = 4.302653
    assert e.value == -2.0
    assert (e.low, e.high) == pytest.approx((-2 - 4.302653 * math.sqrt(0.5), -2 + 4.302653 * math.sqrt(0.5)), abs=1e-5)
    # hand: the 6 splits of {1,2,3,4} give differences -2,-1,0,0,1,2; |d| >= 2 in 2 of them
    assert e.p == pytest.approx(2 / 6) and "exact" in e.method and e.n == 4
    rng = np.random.default_rng(4)
    u, v = rng.normal(size=5), rng.normal(1, 2, size=4)
    ref = sps.ttest_ind(u, v, equal_var=False).confidence_interval(0.9)
    e2 = S.compare_means(u, v, confidence=0.9)
    assert (e2.low, e2.high) == pytest.approx((ref.low, ref.high))
    splits = [
        np.mean(np.r_[u, v][list(c)]) - np.mean(np.delete(np.r_[u, v], list(c)))
        for c in itertools.combinations(range(9), 5)
    ]
    assert e2.p == pytest.approx(np.mean(np.abs(splits) >= abs(u.mean() - v.mean()) - 1e-12))


def test_compare_means_is_not_degenerate_with_two_seeds_per_arm():
    cold, stock = np.array([-15.86, -16.06]), np.array([0.0, 0.0])
    e = S.compare_means(cold, stock)
    low, high = _bootstrap_ci(lambda x, y: np.mean(x) - np.mean(y), cold, stock, paired=False)
    assert high - low == pytest.approx(0.2, abs=1e-9)  # the percentile bootstrap: only 3 distinct means per arm
    assert e.high - e.low > 10 * (high - low)  # Welch: df = 1, t = 12.71
    assert e.high - e.low == pytest.approx(2 * 12.7062 * 0.1, abs=1e-3)
    assert math.isnan(S.compare_means([1.0, 1.0], [2.0, 2.0]).low)  # no spread at all: no interval


# --------------------------------------------------------------------------- shape over a grid
def test_peak_location_finds_an_interior_peak_and_its_uncertainty():
    rng = np.random.default_rng(0)
    t = np.repeat(TAUS7, 3)
    clear = 10 + 8 * np.exp(-((np.log10(t) + 1.5) ** 2)) + rng.normal(0, 0.2, len(t))
    e = S.peak_location(t, clear, n_resamples=2000)
    means = pd.Series(clear).groupby(t).mean()
    assert e.value == means.idxmax() == TAUS7[3]
    assert (e.low, e.high) == (TAUS7[3], TAUS7[3]) and "100% of resamples" in e.method
    flat = 10 + rng.normal(0, 1.0, len(t))  # no peak: its location is uncertain
    f = S.peak_location(t, flat, n_resamples=2000)
    assert f.value == pd.Series(flat).groupby(t).mean().idxmax() and f.high / f.low > 10
    lo = S.peak_location(t, -clear, n_resamples=2000, maximum=False)
    assert lo.value == TAUS7[3]


def test_grid_span_and_compare_spans_compare_levers_over_their_whole_range():
    rng = np.random.default_rng(1)
    t = np.repeat(np.geomspace(1e-3, 1, 11), 2)  # ~10 halvings, peaked response
    y_tau = 5 + 20 * np.exp(-((np.log10(t) + 1.5) ** 2)) + rng.normal(0, 0.5, len(t))
    hd = np.repeat([8, 16, 32, 64], 2)  # 3 doublings, monotone and small
    y_hd = 5 - 0.4 * np.log2(hd / 8) + rng.normal(0, 0.2, len(hd))
    span = S.grid_span(t, y_tau, n_resamples=2000)
    means = pd.Series(y_tau).groupby(t).mean()
    raw = means.max() - means.min()
    assert f"{raw:.4g} before correction" in span.method
    assert abs(span.value - raw) < 0.1 and span.low <= span.value <= span.high  # a large effect: a small correction
    ends = S.grid_span(hd, y_hd, kind="endpoints")
    assert ends.value == pytest.approx(S.compare_means(y_hd[hd == 64], y_hd[hd == 8]).value)
    d = S.compare_spans(t, y_tau, hd, y_hd, n_resamples=2000)
    raw_hd = pd.Series(y_hd).groupby(hd).mean()
    assert d.value == pytest.approx(raw - (raw_hd.max() - raw_hd.min())) and d.low > 0
    assert classify(d, 0.0, "above") == "supported"
    # the per-doubling comparison of signed slopes cannot see it: the peak's slope averages out
    tau_slope = _slope_per_doubling(1 / t, y_tau)
    assert abs(tau_slope["slope"]) < 1.0 and tau_slope["low"] < 0 < tau_slope["high"]
    with pytest.raises(ConfigError, match="kind"):
        S.grid_span(t, y_tau, kind="slope")


def test_the_range_of_a_lever_without_effect_is_corrected_towards_zero_and_lies_in_its_interval():
    """Noise only (no effect at all), 7 grid values of 3 seeds: the raw range of the means is positive, and in
    some of 200 data sets its percentile interval misses the raw range itself; the bias-corrected value is
    smaller than the raw range and always lies in its basic interval."""
    t = np.repeat(np.geomspace(1e-3, 1e3, 7), 3)
    codes = np.unique(t, return_inverse=True)[1]
    missed = 0
    for seed in range(200):
        y = np.random.default_rng(seed).normal(0, 1, len(t))
        e = S.grid_span(t, y, n_resamples=2000, seed=seed)
        raw = float(np.ptp(pd.Series(y).groupby(t).mean()))
        assert e.low <= e.value <= e.high and e.value < raw
        idx = S._draw(np.arange(len(y)), codes, 2000, np.random.default_rng(seed))
        low, high = np.quantile(np.ptp(S._group_means(y, codes, 7, idx), axis=1), [0.025, 0.975])
        missed += not (low <= raw <= high)  # the percentile interval misses its own estimate
    assert missed >= 3


# --------------------------------------------------------------------------- power
def test_seeds_needed_matches_the_hand_computation():
    z = 1.959964 + 0.841621  # z_{0.975} + z_{0.80}
    assert 2 * z**2 * (0.0036 / 0.005) ** 2 == pytest.approx(8.137, abs=1e-3)
    assert S.seeds_needed(0.0036, 0.005) == 9  # ModernBERT: seed spread 0.0036 nats, effect 0.005 nats
    assert S.seeds_needed(0.030, 0.02) == 36  # GPT-2: 2 * 7.849 * 2.25 = 35.3
    assert S.seeds_needed(1.0, 1.0, alpha=0.05, power=0.9) == 22  # 2 * (1.96 + 1.2816)^2 = 21.01
    assert S.seeds_needed(1.0, -0.5) == S.seeds_needed(1.0, 0.5) == 63
    assert S.seeds_needed(0.1, 5.0) == 2  # formula gives 1, but a spread needs two runs
    assert S.runs_needed_correlation(0.5) == 30  # (2.8016 / atanh 0.5)^2 + 3 = 29.01
    for bad in (
        dict(spread=0.0, effect=1.0),
        dict(spread=1.0, effect=float("nan")),
        dict(spread=1.0, effect=1.0, power=1.2),
    ):
        with pytest.raises(ConfigError):
            S.seeds_needed(**bad)
    with pytest.raises(ConfigError, match="rho"):
        S.runs_needed_correlation(1.0)


def test_runs_needed_observed_from_the_interval_width():
    """A correlation whose interval is the normal-theory one at n runs needs what the Fisher formula says;
    an interval twice as wide (on the z scale) needs about four times the runs (n - 3 scales with se^2)."""
    z975 = 1.959963984540054
    n, r = 12, 0.1
    se = 1 / math.sqrt(n - 3)
    normal = S.Estimate(r, math.tanh(math.atanh(r) - z975 * se), math.tanh(math.atanh(r) + z975 * se), n, "built")
    assert S.runs_needed_observed(normal, 0.5) == S.runs_needed_correlation(0.5) == 30
    wide = S.Estimate(r, math.tanh(math.atanh(r) - 2 * z975 * se), math.tanh(math.atanh(r) + 2 * z975 * se), n, "b")
    # (2.8016 * 2 se / atanh 0.5)^2 * 9 + 3 = 4 * 26.01 + 3 = 107.05
    assert S.runs_needed_observed(wide, 0.5) == 108
    # no spread to read (an interval at the bound, or three runs): the normal-theory count
    assert S.runs_needed_observed(S.Estimate(0.2, -1.0, 0.9, 10, "b"), 0.5) == 30
    assert S.runs_needed_observed(S.Estimate(0.2, -0.5, 0.9, 3, "b"), -0.5) == 30
    with pytest.raises(ConfigError, match="rho"):
        S.runs_needed_observed(normal, 0.0)


def test_pooled_sd_by_hand():
    # groups (1, 3) and (2, 4, 6): squared deviations 2 + 8 = 10 over 5 - 2 = 3 degrees of freedom
    assert S.pooled_sd([1, 3, 2, 4, 6], ["a", "a", "b", "b", "b"]) == pytest.approx(math.sqrt(10 / 3))
    assert math.isnan(S.pooled_sd([1.0, 2.0], ["a", "b"]))


# --------------------------------------------------------------------------- steps_to_level
def test_steps_to_level_smoothing_order_and_never():
    log = pd.DataFrame({"step": [30, 0, 10, 20, 40], "loss": [1.0, 5.0, 4.0, 0.5, 1.0]})
    # sorted: 5, 4, 0.5, 1, 1; rolling mean of 2: 5, 4.5, 2.25, 0.75, 1.0
    assert S.steps_to_level(log, 1.0, smooth=2) == 30.0
    assert S.steps_to_level(log, 0.5, smooth=1) == 20.0
    assert math.isnan(S.steps_to_level(log, 0.4, smooth=1))


def test_seeds_needed_t_exact_power_matches_cohen():
    """Two-sample t test, alpha 0.05, power 0.8: d = 1 needs 17 per arm, d = 0.5 needs 64 (Cohen 1988,
    table 2.4.1); with few degrees of freedom it asks for more than the normal approximation, which
    says 2 whenever the effect is large against the spread."""
    assert S.seeds_needed_t(1.0, 1.0) == 17
    assert S.seeds_needed_t(2.0, 1.0) == 64
    assert S.seeds_needed(0.3, 1.0) == 2
    assert S.seeds_needed_t(0.3, 1.0) == 3
    assert S.seeds_needed_t(0.01, 1.0) == 2
    with pytest.raises(ConfigError, match="spread"):
        S.seeds_needed_t(0.0, 1.0)


# --------------------------------------------------------------------------- superseded methods
# The methods the library used before (percentile bootstraps, a linear rank partial correlation,
# slopes per doubling), kept here only to show on constructed data why they were replaced.
def _bootstrap_ci(statistic, *data, n_resamples=2000, seed=0, paired=True, vectorized=False):
    res = sps.bootstrap(
        data,
        statistic,
        n_resamples=n_resamples,
        paired=paired,
        vectorized=vectorized,
        method="percentile",
        random_state=np.random.default_rng(seed),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def _rank_corr_or_zero(a, b, axis=-1):
    """Spearman's rho along ``axis`` (Pearson correlation of average ranks), 0 where either side is constant;
    vectorised over resamples, so the old interval costs milliseconds (the same resamples as a loop)."""
    ra, rb = sps.rankdata(a, axis=axis), sps.rankdata(b, axis=axis)
    ra, rb = ra - ra.mean(axis=axis, keepdims=True), rb - rb.mean(axis=axis, keepdims=True)
    den = np.sqrt((ra**2).sum(axis=axis) * (rb**2).sum(axis=axis))
    return np.where(den > 0, (ra * rb).sum(axis=axis) / np.where(den > 0, den, 1.0), 0.0)


def _old_spearman_ci(x, y, *, seed=0):
    """Percentile bootstrap of Spearman's rho (2,000 resamples), a constant resample scored 0."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 4 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"rho": np.nan, "low": np.nan, "high": np.nan}
    low, high = _bootstrap_ci(_rank_corr_or_zero, x, y, seed=seed, vectorized=True)
    return {"rho": float(sps.spearmanr(x, y).statistic), "low": low, "high": high}


def partial_spearman_rho(x, y, z):
    """Rank partial correlation of x and y, the ranks residualised linearly on the ranks of z."""
    rx, ry = sps.rankdata(x), sps.rankdata(y)
    rz = np.column_stack([np.ones(len(rx)), sps.rankdata(z)])
    ex = rx - rz @ np.linalg.lstsq(rz, rx, rcond=None)[0]
    ey = ry - rz @ np.linalg.lstsq(rz, ry, rcond=None)[0]
    return float((ex * ey).sum() / np.sqrt((ex**2).sum() * (ey**2).sum()))


def _slope_per_doubling(x, y, *, n_resamples=2000, seed=0):
    """Least-squares slope of y against log2(x) with a percentile bootstrap over rows."""
    lx, y = np.log2(np.asarray(x, float)), np.asarray(y, float)
    fit = lambda i: np.polyfit(lx[i.astype(int)], y[i.astype(int)], 1)[0] if np.ptp(lx[i.astype(int)]) > 0 else 0.0
    low, high = _bootstrap_ci(fit, np.arange(len(lx)), n_resamples=n_resamples, seed=seed)
    return {"slope": float(np.polyfit(lx, y, 1)[0]), "low": low, "high": high}


def test_within_rho_is_spearman_within_for_every_row_and_nan_where_nothing_varies():
    """The vectorised point estimate equals spearman_within's, row by row (one formula, two call shapes)."""
    rng = np.random.default_rng(5)
    s = np.array([0.5, 0.5, 1.0, 1.0, 1.0, 2.0, 2.0])
    x, y = rng.normal(size=(4, 7)), rng.normal(size=7)
    rows = S.within_rho(x, y, s)
    assert rows.shape == (4,)
    for row, value in zip(x, rows):
        assert value == pytest.approx(S.spearman_within(row, y, s, n_resamples=200).value, abs=1e-12)
    assert S.within_rho(x[0], y, s) == pytest.approx(rows[0], abs=1e-12)
    flat = np.repeat([[1.0, 1.0, 2.0, 2.0, 2.0, 3.0, 3.0]], 2, axis=0)  # constant within every stratum
    assert np.isnan(S.within_rho(flat, y, s)).all()
