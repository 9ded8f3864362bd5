"""Statistics for the verdicts: rank correlations with bootstrap intervals, partial correlation,
effect sizes and convergence speed. Built on ``scipy.stats``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["spearman_ci", "partial_spearman", "bootstrap_ci", "slope_per_doubling", "steps_to_level", "mean_ci"]


def bootstrap_ci(statistic, *data, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0, paired: bool = True):
    """Percentile bootstrap interval of ``statistic(*data)`` (``scipy.stats.bootstrap``); returns ``(low, high)``."""
    res = stats.bootstrap(data, statistic, n_resamples=n_resamples, confidence_level=confidence, paired=paired,
                          vectorized=False, method="percentile", random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def spearman_ci(x, y, *, n_resamples: int = 2000, seed: int = 0) -> dict:
    """Spearman's rho of paired samples with a 95% bootstrap interval (resampling pairs).

    Returns ``{"rho", "low", "high", "p", "n"}``; NaN where fewer than 4 pairs or a constant input.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    out = {"rho": np.nan, "low": np.nan, "high": np.nan, "p": np.nan, "n": int(len(x))}
    if len(x) < 4 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return out
    r = stats.spearmanr(x, y)
    out.update(rho=float(r.statistic), p=float(r.pvalue))

    def rho(a, b):
        if np.ptp(a) == 0 or np.ptp(b) == 0:
            return 0.0
        return stats.spearmanr(a, b).statistic

    out["low"], out["high"] = bootstrap_ci(rho, x, y, n_resamples=n_resamples, seed=seed)
    return out


def partial_spearman(x, y, z, *, n_resamples: int = 2000, seed: int = 0) -> dict:
    """Spearman partial correlation of ``x`` and ``y`` controlling for ``z``, with a bootstrap interval.

    Ranks are residualised linearly on the ranks of ``z`` (the standard rank partial
    correlation); ``z`` may be 2-D ``[n, k]`` to control for several variables.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    z = np.asarray(z, float).reshape(len(x), -1)
    ok = np.isfinite(x) & np.isfinite(y) & np.isfinite(z).all(1)
    x, y, z = x[ok], y[ok], z[ok]
    out = {"rho": np.nan, "low": np.nan, "high": np.nan, "n": int(len(x))}
    if len(x) < 5:
        return out

    def pcorr(idx):
        rx, ry = stats.rankdata(x[idx]), stats.rankdata(y[idx])
        rz = np.column_stack([np.ones(len(idx))] + [stats.rankdata(c) for c in z[idx].T])
        ex = rx - rz @ np.linalg.lstsq(rz, rx, rcond=None)[0]
        ey = ry - rz @ np.linalg.lstsq(rz, ry, rcond=None)[0]
        d = np.sqrt((ex**2).sum() * (ey**2).sum())
        return float((ex * ey).sum() / d) if d > 0 else 0.0

    idx = np.arange(len(x))
    out["rho"] = pcorr(idx)
    out["low"], out["high"] = bootstrap_ci(lambda i: pcorr(i.astype(int)), idx, n_resamples=n_resamples, seed=seed)
    return out


def mean_ci(values, *, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean with a Student-t interval: ``(mean, low, high)``; the interval is NaN for one value."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    m = float(v.mean()) if len(v) else np.nan
    if len(v) < 2:
        return m, np.nan, np.nan
    half = stats.t.ppf(0.5 + confidence / 2, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
    return m, m - half, m + half


def slope_per_doubling(df: pd.DataFrame, x: str, y: str, *, group: str | None = None, n_resamples: int = 2000, seed: int = 0) -> dict:
    """Least-squares slope of ``y`` against ``log2(x)`` (change in ``y`` per doubling of ``x``).

    With ``group`` (for example the seed), the bootstrap resamples whole groups; otherwise rows.
    Returns ``{"slope", "low", "high", "n"}``.
    """
    d = df[[x, y] + ([group] if group else [])].dropna()
    lx, yy = np.log2(d[x].to_numpy(float)), d[y].to_numpy(float)
    out = {"slope": np.nan, "low": np.nan, "high": np.nan, "n": int(len(d))}
    if len(d) < 3 or np.ptp(lx) == 0:
        return out
    out["slope"] = float(np.polyfit(lx, yy, 1)[0])
    # resampling units: rows, or whole groups (all rows of a resampled group enter together)
    labels = d[group].to_numpy() if group else np.arange(len(d))
    units = np.unique(labels)
    members = [np.nonzero(labels == u)[0] for u in units]

    def fit(u):
        i = np.concatenate([members[int(k)] for k in u])
        return np.polyfit(lx[i], yy[i], 1)[0] if np.ptp(lx[i]) > 0 else 0.0

    if len(units) < 2:
        return out
    out["low"], out["high"] = bootstrap_ci(fit, np.arange(len(units)), n_resamples=n_resamples, seed=seed)
    return out


def steps_to_level(log: pd.DataFrame, level: float, *, step: str = "step", value: str = "loss", smooth: int = 3) -> float:
    """First step at which the (rolling-mean smoothed) ``value`` falls to ``level`` or below; NaN if never."""
    s = log.sort_values(step)
    v = s[value].rolling(smooth, min_periods=1).mean().to_numpy()
    hit = np.nonzero(v <= level)[0]
    return float(s[step].iloc[hit[0]]) if len(hit) else np.nan
