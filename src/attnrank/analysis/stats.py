"""Statistics for the verdicts, built on ``scipy.stats``.

Every new-style function returns one :class:`Estimate` (a value with its interval, the number of
independent units it rests on and the method), which :mod:`attnrank.analysis.verdicts` classifies against a
pre-registered threshold:

* :func:`mean_ci` - a mean with a Student-t interval; :func:`median_ci` - a median with an exact
  order-statistic interval;
* :func:`spearman` - Spearman's rho with a bootstrap interval over independent units (rows, or
  whole clusters such as runs when a run contributes several rows);
* :func:`spearman_within` - the rank correlation *given* a categorical nuisance (temperature, head
  dimension) as a fixed effect, with a stratified permutation test and a stratified bootstrap;
* :func:`compare_means` - small-n two-sample comparison: Welch-t interval and exact permutation test;
* :func:`peak_location`, :func:`grid_span`, :func:`compare_spans` - the shape of a response over a
  grid: where it peaks, and how much the outcome moves across the whole range of a lever;
* :func:`seeds_needed`, :func:`runs_needed_correlation`, :func:`pooled_sd` - power.

Bootstrap intervals here are reproducible by construction: the rows are put in a canonical order
before resampling (so the input row order cannot matter), the default :data:`N_RESAMPLES` (100,000) keep the
Monte Carlo spread of a bound near 0.01 for correlations on ~14 runs, and a resample on which the
statistic is undefined (a constant resample has no rank correlation) is dropped and counted, never
scored as zero.

The older functions (:func:`spearman_ci`, :func:`partial_spearman`, :func:`bootstrap_ci`,
:func:`slope_per_doubling`) are kept with their behaviour for existing callers; their docstrings
name the replacement.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import stats

from ..core.errors import ConfigError, check_choice, check_positive_float, check_positive_int

#: Default bootstrap resamples: on 14 runs the Monte Carlo spread of a correlation's bound across
#: bootstrap seeds is then about 0.01 (0.03 at 10,000; rank correlations on few runs have a lumpy
#: bootstrap distribution).
N_RESAMPLES = 100_000

__all__ = [
    "Estimate",
    "mean_ci",
    "median_ci",
    "spearman",
    "spearman_within",
    "within_rho",
    "compare_means",
    "peak_location",
    "grid_span",
    "compare_spans",
    "resample_ci",
    "N_RESAMPLES",
    "pooled_sd",
    "seeds_needed",
    "seeds_needed_t",
    "runs_needed_correlation",
    "runs_needed_observed",
    "steps_to_level",
]


def steps_to_level(
    log: pd.DataFrame, level: float, *, step: str = "step", value: str = "loss", smooth: int = 3
) -> float:
    """First step at which the (rolling-mean smoothed) ``value`` falls to ``level`` or below; NaN if never."""
    s = log.sort_values(step)
    v = s[value].rolling(smooth, min_periods=1).mean().to_numpy()
    hit = np.nonzero(v <= level)[0]
    return float(s[step].iloc[hit[0]]) if len(hit) else np.nan


# =========================================================================== the interval type
@dataclass(frozen=True)
class Estimate:
    """A value with its confidence interval, the number of independent units and the method.

    Attributes:
        value: the point estimate (NaN when it is not defined, e.g. a correlation of a constant input).
        low, high: the interval bounds (NaN when no interval can be computed, e.g. one unit).
        n: the number of independent units the estimate rests on (runs or seeds, never the probe
            sequences of one run).
        method: how value and interval were computed, in words (including resamples dropped).
        confidence: the interval's confidence level, in (0, 1).
        p: a two-sided p-value for "no effect" where the method gives one, else NaN.

    A reader sees it as :func:`attnrank.words.glossary.fmt_estimate` writes it (``0.39 [−0.05, 0.71], n = 14``):
    this module computes numbers and writes none. An Estimate also unpacks as ``value, low, high = e``
    and indexes as ``e[0]``, ``e[1]``, ``e[2]``.
    """

    value: float
    low: float
    high: float
    n: int
    method: str
    confidence: float = 0.95
    p: float = float("nan")

    def __post_init__(self):
        for f in ("value", "low", "high", "p"):
            object.__setattr__(self, f, float(getattr(self, f)))
        object.__setattr__(self, "n", int(self.n))
        if not 0 < self.confidence < 1:
            raise ConfigError("confidence", f"got {self.confidence!r}; expected a level in (0, 1)")
        if np.isfinite(self.low) and np.isfinite(self.high) and self.low > self.high:
            raise ConfigError("low", f"got low = {self.low!r} > high = {self.high!r}")

    @property
    def has_interval(self) -> bool:
        """True when both bounds are finite."""
        return bool(np.isfinite(self.low) and np.isfinite(self.high))

    @property
    def excludes_zero(self) -> bool:
        """True when the interval is finite and lies wholly on one side of 0 (a resolved sign)."""
        return bool(self.has_interval and (self.low > 0 or self.high < 0))

    def __iter__(self):
        return iter((self.value, self.low, self.high))

    def __getitem__(self, i):
        return (self.value, self.low, self.high)[i]

    def as_dict(self) -> dict:
        """The fields as a dict (for one row of a DataFrame)."""
        return asdict(self)


def _check_confidence(confidence) -> float:
    return check_positive_float("confidence", confidence, low=1e-6, high=1 - 1e-6)


def _clean(*arrays):
    """Drop rows where any array is non-finite (NaN groups/strata labels are not allowed)."""
    arrs = [np.asarray(a) for a in arrays]
    n = len(arrs[0])
    for name, a in zip(("x", "y", "z"), arrs):
        if len(a) != n:
            raise ConfigError(name, f"got length {len(a)}; all inputs must have length {n}")
    ok = np.ones(n, bool)
    for a in arrs:
        if a.dtype.kind in "fc":
            ok &= np.isfinite(a)
    return [a[ok] for a in arrs]


# =========================================================================== mean
def mean_ci(values, *, confidence: float = 0.95, clusters=None) -> Estimate:
    """Mean of ``values`` (1-D; NaNs dropped) with a Student-t interval, as an :class:`Estimate`.

    ``mean ± t_{(1+c)/2, n-1} * sd / sqrt(n)`` (``scipy.stats.t.interval``); the interval is NaN for
    one value and has zero width when all values are equal. Each value must be one independent unit.
    With ``clusters`` (``[n]`` labels, e.g. the run of each probe sequence) the values are first
    averaged per cluster and the interval is over cluster means, so ``n`` counts clusters (runs),
    not the rows inside them (the Monte Carlo estimates of :mod:`attnrank.analysis.theory` use it too).
    Unpacks as ``(mean, low, high)``.
    """
    confidence = _check_confidence(confidence)
    v = np.asarray(values, float).reshape(-1)
    desc = "mean, Student-t interval"
    if clusters is not None:
        v, g = _clean(v, clusters)
        v = pd.Series(v).groupby(g).mean().to_numpy()
        desc = f"mean of {len(v)} cluster means, Student-t interval"
    v = v[np.isfinite(v)]
    m = float(v.mean()) if len(v) else np.nan
    lo = hi = np.nan
    if len(v) >= 2:
        sd = float(v.std(ddof=1))
        if sd == 0:
            lo = hi = m
        else:
            lo, hi = stats.t.interval(confidence, len(v) - 1, loc=m, scale=sd / np.sqrt(len(v)))
    return Estimate(m, lo, hi, len(v), desc, confidence)


def median_ci(values, *, confidence: float = 0.95) -> Estimate:
    """Median of ``values`` (1-D; NaNs dropped) with a distribution-free interval from order statistics.

    The interval is the exact binomial (order-statistic) interval for the population median,
    ``scipy.stats.quantile_test(v, p=0.5).confidence_interval`` (e.g. Conover 1999, sec. 3.2); it
    needs no resampling and so no seed. It is NaN when there are too few values to reach
    ``confidence`` (fewer than 6 at 95%). Values must be independent units (one per run).
    """
    confidence = _check_confidence(confidence)
    v = np.asarray(values, float).reshape(-1)
    v = np.sort(v[np.isfinite(v)])
    m = float(np.median(v)) if len(v) else np.nan
    lo = hi = np.nan
    if len(v):
        ci = stats.quantile_test(v, p=0.5).confidence_interval(confidence)
        lo, hi = ci.low, ci.high
    return Estimate(m, lo, hi, len(v), "median, order-statistic (binomial) interval", confidence)


# =========================================================================== resampling
def _rank_corr_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row pair of ``a``, ``b`` (``[B, m]``); NaN where a row is constant."""
    ra, rb = stats.rankdata(a, axis=-1), stats.rankdata(b, axis=-1)
    return _pearson_rows(ra, rb)


def _pearson_rows(a, b):
    a = a - a.mean(-1, keepdims=True)
    b = b - b.mean(-1, keepdims=True)
    den = np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (a * b).sum(-1) / den
    # a constant row has den == 0 (up to rounding): undefined, never 0
    scale = np.sqrt((a * a).sum(-1) + (b * b).sum(-1))
    return np.where(den > 1e-12 * np.maximum(scale, 1e-300) ** 2, r, np.nan)


def _draw(units: np.ndarray, strata: np.ndarray | None, n_resamples: int, rng) -> np.ndarray:
    """``[B, U]`` resampled unit indices: uniform over all units, or within each stratum."""
    U = len(units)
    if strata is None:
        return rng.integers(0, U, (n_resamples, U))
    out = np.empty((n_resamples, U), int)
    for s in np.unique(strata):
        pos = np.nonzero(strata == s)[0]
        out[:, pos] = pos[rng.integers(0, len(pos), (n_resamples, len(pos)))]
    return out


def _interval(theta, boot, jack, confidence, method):
    """Percentile or BCa interval from bootstrap values ``boot`` (finite only) and jackknife values."""
    alpha = (1 - confidence) / 2
    if method == "percentile":
        return tuple(np.quantile(boot, [alpha, 1 - alpha]))
    # BCa (Efron & Tibshirani 1993, ch. 14.3): bias correction with ties counted half, acceleration
    # from the jackknife over units.
    prop = (np.sum(boot < theta) + 0.5 * np.sum(boot == theta)) / len(boot)
    prop = min(max(prop, 0.5 / len(boot)), 1 - 0.5 / len(boot))
    z0 = stats.norm.ppf(prop)
    jack = jack[np.isfinite(jack)]
    d = jack.mean() - jack if len(jack) > 1 else np.zeros(1)
    den = 6 * (d**2).sum() ** 1.5
    a = (d**3).sum() / den if den > 0 else 0.0
    z = stats.norm.ppf([alpha, 1 - alpha])
    q = stats.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z)))
    return tuple(np.quantile(boot, q))


def resample_ci(
    statistic,
    n_units: int,
    *,
    strata=None,
    n_resamples: int = N_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
    method: str = "bca",
) -> tuple[float, float, int]:
    """Bootstrap interval of a statistic of independent units (rows, runs, seeds).

    Args:
        statistic: ``f(idx) -> [B]`` where ``idx`` is an int array ``[B, m]`` of unit indices, one
            resample per row (``m = n_units``; ``m = n_units - 1`` for the jackknife of BCa); it
            returns NaN for a resample on which it is undefined.
        n_units: number of independent units; the caller orders them canonically.
        strata: optional ``[n_units]`` labels; units are then resampled within each stratum
            (stratified bootstrap, Davison & Hinkley 1997, sec. 3.2).
        method: ``"bca"`` (bias-corrected and accelerated, jackknife over units; Efron & Tibshirani
            1993, ch. 14) or ``"percentile"``.

    Returns ``(low, high, dropped)``; resamples where the statistic is NaN are dropped (the bootstrap
    is conditioned on a defined statistic) and counted in ``dropped``. The interval is NaN when more
    than half are dropped.

    Raises:
        ConfigError: for an unknown ``method``, ``n_resamples < 100`` or a bad ``confidence``.
    """
    check_choice("method", method, ("bca", "percentile"))
    n_resamples = check_positive_int("n_resamples", n_resamples, low=100)
    confidence = _check_confidence(confidence)
    rng = np.random.default_rng(seed)
    strata = None if strata is None else np.asarray(strata)
    idx = _draw(np.arange(n_units), strata, n_resamples, rng)
    boot = np.concatenate([np.asarray(statistic(c), float) for c in np.array_split(idx, max(1, n_resamples // 2000))])
    finite = boot[np.isfinite(boot)]
    dropped = int(n_resamples - len(finite))
    if len(finite) < n_resamples / 2:
        return np.nan, np.nan, dropped
    theta = float(statistic(np.arange(n_units)[None, :])[0])
    jack = np.array([])
    if method == "bca":
        keep = ~np.eye(n_units, dtype=bool)
        jack = np.asarray(statistic(np.stack([np.nonzero(k)[0] for k in keep])), float) if n_units > 2 else np.array([])
    low, high = _interval(theta, finite, jack, confidence, method)
    return float(low), float(high), dropped


def _dropped_note(dropped: int, n_resamples: int) -> str:
    return f", {dropped} of {n_resamples} resamples undefined and dropped" if dropped else ""


def _canonical(*cols) -> np.ndarray:
    """A row order that depends only on the rows' contents (first column most significant)."""
    return np.lexsort(tuple(np.asarray(c) for c in reversed(cols)))


# =========================================================================== correlation
def spearman(
    x,
    y,
    *,
    clusters=None,
    n_resamples: int = N_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
    method: str = "percentile",
) -> Estimate:
    """Spearman's rho of paired samples with a bootstrap interval over independent units.

    The percentile interval governs (since 2026-12-05; the deviations appendix): rho of a few runs on a
    grid of a few temperatures takes few distinct values, and with rho near -1 or 1 most resamples tie
    with the estimate or sit at the bound, where BCa's bias correction (fitted to a smooth bootstrap
    distribution) moves the quantile it reads to the far tail: on 8 runs with rho = -0.88 the BCa upper
    bound is -0.09 and the percentile one -0.33 (the same as ``scipy.stats.bootstrap``'s, tested).

    Args:
        x, y: ``[n]`` paired values; rows where either is non-finite are dropped.
        clusters: optional ``[n]`` labels of the independent unit each row belongs to (for example
            the run, when a run contributes one row per probe sequence). Whole clusters are then
            resampled (cluster bootstrap, Davison & Hinkley 1997, sec. 3.8) and ``n`` counts clusters.
        n_resamples, confidence, seed, method: see :func:`resample_ci`.

    Returns an :class:`Estimate`: ``value`` is ``scipy.stats.spearmanr``'s rho (average ranks for
    ties), ``p`` its two-sided p-value (rows treated as independent; use it only without clusters).
    Value and interval are NaN with fewer than 4 units or a constant input. Resamples in which x or
    y is constant are dropped and counted in ``method``. Rows are sorted canonically first, so the
    result does not depend on their order.
    """
    x, y, g = _clean(x, y, np.zeros(len(np.asarray(x))) if clusters is None else clusters)
    order = _canonical(g, x, y)
    x, y, g = x[order], y[order], g[order]
    labels, gi = np.unique(g, return_inverse=True)
    n = len(labels) if clusters is not None else len(x)
    desc = f"Spearman rho, {method} bootstrap over {n} {'clusters' if clusters is not None else 'rows'}"
    nan = Estimate(np.nan, np.nan, np.nan, n, desc, confidence)
    if n < 4 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return nan
    r = stats.spearmanr(x, y)
    if clusters is None:
        stat = lambda idx: _rank_corr_rows(x[idx], y[idx])  # noqa: E731
    else:
        members = [np.nonzero(gi == k)[0] for k in range(len(labels))]
        sizes = {len(m) for m in members}

        def stat(idx):
            rows = [np.concatenate([members[k] for k in u]) for u in idx]
            if len(sizes) == 1:
                R = np.stack(rows)
                return _rank_corr_rows(x[R], y[R])
            return np.array([_rank_corr_rows(x[R][None], y[R][None])[0] for R in rows])

    low, high, dropped = resample_ci(stat, n, n_resamples=n_resamples, confidence=confidence, seed=seed, method=method)
    return Estimate(
        r.statistic,
        low,
        high,
        n,
        desc + _dropped_note(dropped, n_resamples),
        confidence,
        r.pvalue if clusters is None else np.nan,
    )


def _within_residuals(v: np.ndarray, codes: np.ndarray, n_strata: int) -> np.ndarray:
    """``v`` minus its mean within each stratum (residuals on stratum dummies).

    ``v`` is ``[n]`` or ``[B, n]``; ``codes`` (stratum index in ``range(n_strata)``) is ``[n]`` or has
    ``v``'s shape.
    """
    v2 = np.atleast_2d(v)
    c2 = np.broadcast_to(codes, v2.shape)
    flat = (c2 + n_strata * np.arange(v2.shape[0])[:, None]).ravel()
    size = v2.shape[0] * n_strata
    sums = np.bincount(flat, weights=v2.ravel(), minlength=size)
    counts = np.bincount(flat, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (sums / np.maximum(counts, 1)).reshape(v2.shape[0], n_strata)
    out = v2 - np.take_along_axis(means, c2, axis=1)
    return out.reshape(np.shape(v))


def spearman_within(
    x,
    y,
    strata,
    *,
    n_permutations: int = 9_999,
    n_resamples: int = N_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
    method: str = "percentile",
) -> Estimate:
    """Rank correlation of ``x`` and ``y`` *given* a categorical nuisance (a fixed effect per stratum).

    Use it for every "holding tau fixed" or "at a given head dimension" statement: the nuisance enters
    as one dummy per stratum (one level of tau, say), so any effect of it on x or y, monotone or not,
    is removed; a linear adjustment on log-tau ranks (:func:`partial_spearman`) removes only a trend.

    Method: x and y are ranked over all rows (average ranks for ties), each rank is residualised on
    the stratum dummies (its stratum mean subtracted) and rho is the Pearson correlation of the
    residuals (the rank-transform within estimator: Conover & Iman 1981 for ranks, fixed effects as
    in any within-group regression). ``p`` is from a stratified permutation test of "no association
    within strata": y is permuted within each stratum, two-sided on ``|rho|``; all within-stratum
    permutations are enumerated when there are at most ``n_permutations`` of them (exact), otherwise
    ``n_permutations`` are drawn and ``p = (1 + k) / (1 + n_permutations)`` (Phipson & Smyth 2010).
    The interval is a stratified bootstrap (rows resampled within their stratum; ``method`` as in
    :func:`resample_ci`); resamples in which no stratum varies are dropped and counted.

    Args:
        x, y: ``[n]`` paired values; strata: ``[n]`` labels (for example tau values). Rows with a
            non-finite x or y are dropped.

    Returns an :class:`Estimate` (``n`` = rows, i.e. runs). NaN when fewer than 4 rows or when x or y
    does not vary within any stratum.
    """
    n_permutations = check_positive_int("n_permutations", n_permutations, low=99)
    x, y, s = _clean(x, y, strata)
    order = _canonical(s, x, y)
    x, y, s = x[order], y[order], s[order]
    labels, codes = np.unique(s, return_inverse=True)
    S, n = len(labels), len(x)
    desc = f"rank correlation within {S} strata, stratified permutation test"
    rx, ry = stats.rankdata(x), stats.rankdata(y)
    ex, ey = _within_residuals(rx, codes, S), _within_residuals(ry, codes, S)
    if n < 4 or not (np.abs(ex).max(initial=0) > 0 and np.abs(ey).max(initial=0) > 0):
        return Estimate(np.nan, np.nan, np.nan, n, desc, confidence)
    rho = float(_pearson_rows(ex, ey))

    # --- stratified permutation test (ex fixed, ey permuted within strata; the stratum means of ry
    # do not change under such permutations, so permuting the residuals is exact)
    groups = [np.nonzero(codes == k)[0] for k in range(S)]
    total = math.prod(math.factorial(len(g)) for g in groups)
    if total <= n_permutations:
        perms = _all_within_permutations(groups, n)
        kind = f"exact over {total} permutations"
    else:
        rng = np.random.default_rng(seed)
        perms = np.tile(np.arange(n), (n_permutations, 1))
        for g in groups:
            perms[:, g] = g[rng.permuted(np.tile(np.arange(len(g)), (n_permutations, 1)), axis=1)]
        kind = f"{n_permutations} random permutations"
    null = _pearson_rows(np.broadcast_to(ex, perms.shape), ey[perms])
    hits = np.sum(np.abs(null) >= abs(rho) - 1e-12)
    p = hits / len(perms) if total <= n_permutations else (1 + hits) / (1 + n_permutations)

    def stat(idx):  # idx: resampled rows; their strata are codes[idx]
        return _pearson_rows(
            _within_residuals(stats.rankdata(x[idx], axis=-1), codes[idx], S),
            _within_residuals(stats.rankdata(y[idx], axis=-1), codes[idx], S),
        )

    low, high, dropped = resample_ci(
        stat, n, strata=codes, n_resamples=n_resamples, confidence=confidence, seed=seed, method=method
    )
    desc += f" ({kind}), {method} stratified bootstrap{_dropped_note(dropped, n_resamples)}"
    return Estimate(rho, low, high, n, desc, confidence, p)


def within_rho(x, y, strata) -> np.ndarray:
    """:func:`spearman_within`'s point estimate for each row of ``x``: many draws of one variable at once.

    Args:
        x: ``[B, n]`` (or ``[n]``) values, one row per draw; y, strata: ``[n]`` (finite values).

    Returns ``[B]`` (or a scalar) rho; NaN for a row in which x, or y, does not vary within any stratum.
    """
    labels, codes = np.unique(np.asarray(strata), return_inverse=True)
    ex = _within_residuals(stats.rankdata(np.asarray(x, float), axis=-1), codes, len(labels))
    ey = _within_residuals(stats.rankdata(np.asarray(y, float)), codes, len(labels))
    return _pearson_rows(ex, np.broadcast_to(ey, ex.shape))


def _all_within_permutations(groups, n) -> np.ndarray:
    """Every permutation of ``range(n)`` that maps each group onto itself, ``[prod |g|!, n]``."""
    rows = [np.arange(n)]
    for g in groups:
        new = []
        for perm in itertools.permutations(g):
            for r in rows:
                r2 = r.copy()
                r2[g] = perm
                new.append(r2)
        rows = new
    return np.stack(rows)


# =========================================================================== two samples
def compare_means(a, b, *, confidence: float = 0.95, n_permutations: int = 9_999, seed: int = 0) -> Estimate:
    """Difference of means ``mean(a) - mean(b)`` for small independent samples (e.g. 2-5 seeds per arm).

    The interval is Welch's t interval (unequal variances, Welch-Satterthwaite degrees of freedom;
    ``scipy.stats.ttest_ind(..., equal_var=False).confidence_interval``). ``p`` is from a permutation
    test of the difference of means (``scipy.stats.permutation_test``, independent samples, two-sided
    as the share of splits with ``|difference| >=`` the observed one), exact (all ``C(n_a + n_b, n_a)`` splits) when there are at most ``n_permutations``
    splits. With 2 seeds per arm the smallest possible exact p is 1/3: such a comparison cannot
    reject anything, which the interval shows by its width (a percentile bootstrap over 2 seeds per
    arm would not). NaN interval with fewer than 2 values in an arm or when both arms are constant.
    ``n`` is the total number of independent units (``n_a + n_b``).
    """
    confidence = _check_confidence(confidence)
    a = np.asarray(a, float).reshape(-1)
    b = np.asarray(b, float).reshape(-1)
    a, b = np.sort(a[np.isfinite(a)]), np.sort(b[np.isfinite(b)])
    diff = float(a.mean() - b.mean()) if len(a) and len(b) else np.nan
    desc = f"difference of means ({len(a)} vs {len(b)}), Welch-t interval, permutation test"
    lo = hi = p = np.nan
    if len(a) >= 2 and len(b) >= 2 and (np.ptp(a) > 0 or np.ptp(b) > 0):
        ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(confidence)
        lo, hi = ci.low, ci.high
    if len(a) >= 1 and len(b) >= 1 and len(a) + len(b) >= 3:
        exact = math.comb(len(a) + len(b), len(a)) <= n_permutations
        res = stats.permutation_test(
            (a, b),
            lambda u, v, axis: np.abs(np.mean(u, axis=axis) - np.mean(v, axis=axis)),
            permutation_type="independent",
            vectorized=True,
            alternative="greater",
            n_resamples=np.inf if exact else n_permutations,
            rng=np.random.default_rng(seed),
        )
        p = float(res.pvalue)
        desc += " (exact)" if exact else f" ({n_permutations} random permutations)"
    return Estimate(diff, lo, hi, len(a) + len(b), desc, confidence, p)


# =========================================================================== shape over a grid
def _grid(x, y):
    x, y = _clean(x, y)
    order = _canonical(x, y)
    x, y = x[order], y[order]
    levels, codes = np.unique(x, return_inverse=True)
    return x, y, levels, codes


def _group_means(y, codes, n_levels, idx):
    """Group means of ``y[idx]`` (``idx`` ``[B, n]`` with resampling within groups) -> ``[B, n_levels]``."""
    counts = np.bincount(codes, minlength=n_levels)
    M = np.zeros((len(codes), n_levels))
    M[np.arange(len(codes)), codes] = 1.0 / counts[codes]
    return y[idx] @ M


def peak_location(
    x, y, *, n_resamples: int = N_RESAMPLES, confidence: float = 0.95, seed: int = 0, maximum: bool = True
) -> Estimate:
    """Where the mean response peaks on a grid, with the uncertainty of that location.

    Args:
        x: ``[n]`` grid value of each run (for example tau); y: ``[n]`` the outcome of each run.
        maximum: False for the location of the minimum (e.g. the best loss).

    ``value`` is the grid value whose group mean is largest (smallest). The interval is the
    percentile interval of that argmax over a stratified bootstrap (runs resampled within each grid
    value; Davison & Hinkley 1997, sec. 3.2), taken on the grid itself (inverted-CDF quantiles of
    the grid index, so bounds are grid values). ``method`` also states how often the resampled
    argmax equals the estimate. A peak is *interior* when the interval excludes both grid ends.
    Grid values with a single run cannot be resampled; with one run per value the interval has no
    width (and says nothing), so use at least 2 seeds per grid value. ``n`` counts runs.
    """
    n_resamples = check_positive_int("n_resamples", n_resamples, low=100)
    confidence = _check_confidence(confidence)
    x, y, levels, codes = _grid(x, y)
    desc = f"{'argmax' if maximum else 'argmin'} of group means over {len(levels)} grid values"
    if len(levels) < 2:
        return Estimate(levels[0] if len(levels) else np.nan, np.nan, np.nan, len(x), desc, confidence)
    sign = 1.0 if maximum else -1.0
    est = int(np.argmax(sign * _group_means(y, codes, len(levels), np.arange(len(y))[None])[0]))
    idx = _draw(np.arange(len(y)), codes, n_resamples, np.random.default_rng(seed))
    arg = np.argmax(sign * _group_means(y, codes, len(levels), idx), axis=1)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(arg, [alpha, 1 - alpha], method="inverted_cdf")
    share = float(np.mean(arg == est))
    return Estimate(
        levels[est],
        levels[int(lo)],
        levels[int(hi)],
        len(x),
        desc + f", stratified bootstrap ({share:.0%} of resamples at the estimate)",
        confidence,
    )


def grid_span(
    x, y, *, n_resamples: int = N_RESAMPLES, confidence: float = 0.95, seed: int = 0, kind: str = "range"
) -> Estimate:
    """How much the mean outcome moves across the whole grid of one lever (no per-doubling scaling).

    ``kind="range"``: max minus min of the group means over the grid (a magnitude, >= 0). The range of
    noisy means is biased upward by the noise (with no effect at all it is still positive), and its
    bootstrap distribution lies higher still, so a percentile interval can miss the estimate itself.
    The value is therefore bias-corrected, ``2 R - mean(R*)``, and the interval is the basic
    bootstrap interval ``[2 R - q_hi(R*), 2 R - q_lo(R*)]`` (Davison & Hinkley 1997, eqs. 2.11 and
    5.6), both clipped at 0; ``R*`` are the ranges of stratified resamples (runs resampled within each
    grid value). The uncorrected range is in the estimate's ``method``.
    ``kind="endpoints"``: mean at the largest grid value minus mean at the smallest (signed), with
    Welch's t interval (:func:`compare_means`).

    Args:
        x: ``[n]`` grid value of each run; y: ``[n]`` outcome of each run.
    """
    check_choice("kind", kind, ("range", "endpoints"))
    x, y, levels, codes = _grid(x, y)
    if kind == "endpoints":
        e = compare_means(y[codes == len(levels) - 1], y[codes == 0], confidence=confidence, seed=seed)
        return Estimate(
            e.value,
            e.low,
            e.high,
            len(x),
            f"mean at x = {levels[-1]:g} minus mean at x = {levels[0]:g}; " + e.method,
            confidence,
            e.p,
        )
    return _range_estimate(y, codes, len(levels), n_resamples, confidence, seed)


def _range_estimate(y, codes, L, n_resamples, confidence, seed) -> Estimate:
    """The range of group means, bias-corrected, with the basic bootstrap interval (see :func:`grid_span`)."""
    desc = f"range (max - min) of group means over {L} grid values, bias-corrected, basic stratified-bootstrap interval"
    if L < 2:
        return Estimate(np.nan, np.nan, np.nan, len(y), desc, confidence)
    n_resamples = check_positive_int("n_resamples", n_resamples, low=100)
    confidence = _check_confidence(confidence)
    raw = float(np.ptp(_group_means(y, codes, L, np.arange(len(y))[None])))
    idx = _draw(np.arange(len(y)), codes, n_resamples, np.random.default_rng(seed))
    boot = np.ptp(_group_means(y, codes, L, idx), axis=1)
    alpha = (1 - confidence) / 2
    q_low, q_high = np.quantile(boot, [alpha, 1 - alpha])
    value = max(2 * raw - float(boot.mean()), 0.0)
    low, high = max(2 * raw - float(q_high), 0.0), max(2 * raw - float(q_low), 0.0)
    return Estimate(value, low, high, len(y), f"{desc}; {raw:.4g} before correction", confidence)


def compare_spans(
    x_a, y_a, x_b, y_b, *, n_resamples: int = N_RESAMPLES, confidence: float = 0.95, seed: int = 0
) -> Estimate:
    """Range of lever A minus range of lever B (see :func:`grid_span`), with a bootstrap interval.

    Each lever's runs are resampled within their grid values, independently of the other lever's
    (percentile interval). A positive value means that, over the range a user can set, lever A moves
    the mean outcome more than lever B. ``n`` counts the runs of both levers.
    """
    n_resamples = check_positive_int("n_resamples", n_resamples, low=100)
    confidence = _check_confidence(confidence)
    xa, ya, la, ca = _grid(x_a, y_a)
    xb, yb, lb, cb = _grid(x_b, y_b)
    n = len(ya) + len(yb)
    desc = "range of group means, lever A minus lever B, percentile stratified bootstrap"
    if len(la) < 2 or len(lb) < 2:
        return Estimate(np.nan, np.nan, np.nan, n, desc, confidence)
    rng = np.random.default_rng(seed)
    ia = _draw(np.arange(len(ya)), ca, n_resamples, rng)
    ib = _draw(np.arange(len(yb)), cb, n_resamples, rng)
    boot = np.ptp(_group_means(ya, ca, len(la), ia), axis=1) - np.ptp(_group_means(yb, cb, len(lb), ib), axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(boot, [alpha, 1 - alpha])
    value = np.ptp(_group_means(ya, ca, len(la), np.arange(len(ya))[None])) - np.ptp(
        _group_means(yb, cb, len(lb), np.arange(len(yb))[None])
    )
    return Estimate(value, low, high, n, desc, confidence)


# =========================================================================== power
def pooled_sd(values, groups) -> float:
    """Pooled within-group standard deviation: ``sqrt(sum_g sum_i (v - mean_g)^2 / (n - G))``.

    The seed spread of an outcome measured at several settings (``groups``, e.g. tau), each with
    several seeds. NaN when there are no within-group degrees of freedom.
    """
    v, g = _clean(values, groups)
    labels, codes = np.unique(g, return_inverse=True)
    dof = len(v) - len(labels)
    if dof <= 0:
        return float("nan")
    return float(np.sqrt((_within_residuals(v, codes, len(labels)) ** 2).sum() / dof))


def seeds_needed(spread: float, effect: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Independent runs per arm needed to detect a difference of means ``effect`` at seed spread ``spread``.

    Two-sample, two-sided normal approximation with equal arms (e.g. Chow, Shao & Wang 2008,
    *Sample Size Calculations in Clinical Research*, eq. 3.2.4; Lehr's rule ``16 sd^2 / effect^2`` is
    its rounding at alpha = 0.05, power = 0.8)::

        n = ceil( 2 * (z_{1 - alpha/2} + z_{power})^2 * spread^2 / effect^2 )

    ``spread`` is the standard deviation of one run's outcome across seeds (for example
    :func:`pooled_sd`), in the same units as ``effect``. A t-test needs about one more run per arm
    at small n. Never less than 2 (a spread needs two runs). Example: spread 0.0036 nats, effect
    0.005 nats gives 9 per arm; 0.030 and 0.02 gives 36.

    Raises:
        ConfigError: ``spread`` or ``effect`` not positive and finite; ``alpha`` or ``power`` not in (0, 1).
    """
    spread = check_positive_float("spread", spread)
    effect = check_positive_float(
        "effect", abs(effect) if isinstance(effect, (int, float)) and not isinstance(effect, bool) else effect
    )
    alpha = check_positive_float("alpha", alpha, high=1 - 1e-9)
    power = check_positive_float("power", power, high=1 - 1e-9)
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    return max(2, int(math.ceil(2 * z**2 * (spread / effect) ** 2 - 1e-9)))


def runs_needed_correlation(rho: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Independent runs needed to detect a correlation ``rho`` (two-sided), by Fisher's z.

    ``n = ceil( ((z_{1 - alpha/2} + z_{power}) / atanh(|rho|))^2 + 3 )`` (Fisher 1921; e.g. Cohen 1988,
    ch. 3). For Spearman's rho this is a slight underestimate (Bonett & Wright 2000 inflate the
    variance by ``1 + rho^2 / 2``); ``rho = 0.5`` needs 30 runs.

    Raises:
        ConfigError: ``|rho|`` not in (0, 1), or ``alpha``/``power`` not in (0, 1).
    """
    if isinstance(rho, bool) or not isinstance(rho, (int, float)) or not 0 < abs(rho) < 1:
        raise ConfigError("rho", f"got {rho!r}; expected a correlation with 0 < |rho| < 1")
    alpha = check_positive_float("alpha", alpha, high=1 - 1e-9)
    power = check_positive_float("power", power, high=1 - 1e-9)
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    return int(math.ceil((z / math.atanh(abs(rho))) ** 2 + 3 - 1e-9))


def runs_needed_observed(estimate: Estimate, effect: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Runs in total that would resolve a correlation ``effect`` at the sampling spread ``estimate`` shows.

    The observed interval gives the standard error on Fisher's z scale,
    ``se = (atanh(high) - atanh(low)) / (2 z_{(1 + c) / 2})`` for confidence ``c``, at ``n`` runs; a
    correlation's z has a standard error proportional to ``1 / sqrt(n - 3)`` (Fisher 1921), so at ``N``
    runs it is ``se sqrt((n - 3) / (N - 3))``, and the test at level ``alpha`` detects ``effect`` with
    ``power`` once ``se_N (z_{1 - alpha/2} + z_{power}) <= atanh(|effect|)``:
    ``N = ceil(3 + (n - 3) (se (z_{1 - alpha/2} + z_{power}) / atanh(|effect|))^2)``, at least 4.
    Unlike :func:`runs_needed_correlation` (the normal-theory count, 30 for ``|effect| = 0.5`` whatever
    the data), this uses the spread of the runs measured (a bootstrap interval wider than normal theory
    asks for more runs). When the interval cannot give a spread (``n <= 3``, a bound at +-1 or not
    finite) it returns :func:`runs_needed_correlation`.

    Raises:
        ConfigError: ``|effect|`` not in (0, 1), or ``alpha``/``power`` not in (0, 1).
    """
    fallback = runs_needed_correlation(effect, alpha=alpha, power=power)  # also checks the arguments
    lo, hi, n = estimate.low, estimate.high, estimate.n
    if not (math.isfinite(lo) and math.isfinite(hi)) or n <= 3 or not -1 < lo <= hi < 1:
        return fallback
    se = (math.atanh(hi) - math.atanh(lo)) / (2 * stats.norm.ppf(0.5 + estimate.confidence / 2))
    if se <= 0:
        return fallback
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    return max(4, int(math.ceil(3 + (n - 3) * (se * z / math.atanh(abs(effect))) ** 2 - 1e-9)))


def seeds_needed_t(
    spread: float, effect: float, *, alpha: float = 0.05, power: float = 0.8, max_n: int = 100_000
) -> int:
    """Runs per arm for a two-sample t test to detect ``effect`` at seed spread ``spread`` (exact power).

    The smallest ``n >= 2`` per arm at which the two-sided, equal-variance two-sample t test at level
    ``alpha`` has at least ``power``, from the noncentral t distribution (``scipy.stats.nct``; df
    ``2n - 2``, noncentrality ``effect / (spread * sqrt(2 / n))``; e.g. Cohen 1988, ch. 2: an effect
    of one standard deviation needs 17 per arm, half a standard deviation 64). Unlike
    :func:`seeds_needed` (the normal approximation, which returns 2 whenever the effect is large
    against the spread) it accounts for the few degrees of freedom of a small experiment.

    Raises:
        ConfigError: ``spread`` or ``effect`` not positive and finite; ``alpha`` or ``power`` not in
            (0, 1); no ``n <= max_n`` reaches the power.
    """
    spread = check_positive_float("spread", spread)
    effect = check_positive_float(
        "effect", abs(effect) if isinstance(effect, (int, float)) and not isinstance(effect, bool) else effect
    )
    alpha = check_positive_float("alpha", alpha, high=1 - 1e-9)
    power = check_positive_float("power", power, high=1 - 1e-9)
    d = effect / spread

    def achieved(n):
        df = 2 * n - 2
        nc = d / math.sqrt(2 / n)
        t = stats.t.ppf(1 - alpha / 2, df)
        return stats.nct.sf(t, df, nc) + stats.nct.cdf(-t, df, nc)

    lo = 2
    if achieved(lo) >= power:
        return lo
    hi = max(3, seeds_needed(spread, effect, alpha=alpha, power=power) + 2)
    while achieved(hi) < power:
        if hi >= max_n:
            raise ConfigError(
                "effect", f"got effect {effect!r} at spread {spread!r}: more than {max_n} runs per arm needed"
            )
        hi = min(2 * hi, max_n)
    while hi - lo > 1:  # power grows with n: bisect for the smallest n that reaches it
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if achieved(mid) >= power else (mid, hi)
    return hi
