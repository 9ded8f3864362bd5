"""The pre-registered verdict rules of the chapters on trained models, as functions of a run table.

Each rule takes one row per run (complete runs only; the independent unit is always the run,
never a probe sequence) and returns the verdict on one rank measure; the chapters call it once per
measure of :data:`attnrank.rank.MEASURES` (the primary one for the verdict, every one for the
robustness table). All statistics come from :mod:`attnrank.stats` (exact or Welch-t where n is
small, bootstraps over runs with a canonical row order and :data:`attnrank.stats.N_RESAMPLES`
resamples, so a result depends neither on the row order nor, beyond Monte Carlo error far below
the reported digits, on the bootstrap seed) and the classification from :mod:`attnrank.verdicts`.

* :func:`dynamics_rule` - claim (i): the rank at initialisation predicts the final rank, and the
  rank hardly moves (``initial_<measure>``, ``final_<measure>``).
* :func:`loss_rule` - claim (ii): a higher initial rank goes with a lower final loss, also with
  the temperature held fixed (``initial_<measure>``, ``final_val_loss``).
* :func:`temperature_rank` - claim (iii): a colder softmax raises the initial rank. The study's own
  two-point comparison, rank at the coldest grid value minus rank at ``tau = 1``
  (:func:`attnrank.stats.compare_means`), plus where the rank peaks on the grid
  (:func:`attnrank.stats.peak_location`).
* :func:`temperature_loss` - does a colder softmax train to a lower loss: Spearman's rho of
  ``log tau`` and the final validation loss over runs (:func:`attnrank.stats.spearman`), plus the
  grid value with the lowest mean loss.
* :func:`causal_rule` - the reviewers' causality critique: does temperature act on the loss through
  the initial logit scale (which sets the initial rank) or through the query/key step size? The
  2 x 2 at ``tau = 1`` of :mod:`attnrank.causal`: the loss of the initial-scale-only cell minus the
  loss of the step-size-only cell, oriented by the temperature's own loss effect.
* :func:`lever_comparison` - claim (iii): temperature is the stronger lever on the initial rank,
  compared over the range a user can set: range of the mean rank over the whole temperature grid
  minus its range over the whole head-dimension grid (:func:`attnrank.stats.compare_spans`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from . import stats, verdicts
from .errors import ConfigError
from .stats import Estimate
from .verdicts import INCONCLUSIVE, Verdict, combine, judge

__all__ = [
    "RHO_MIN", "LOSS_EFFECT", "DynamicsResult", "LossResult", "dynamics_rule", "loss_rule",
    "SweepVerdict", "ArchResult", "peak_shape", "fmt_setting", "two_point", "temperature_rank", "temperature_loss",
    "lever_comparison", "CAUSAL_EFFECT", "paired_difference", "causal_rule", "causal_text",
]

#: The predictive half of the dynamics claim needs Spearman's rho(initial, final) above this.
RHO_MIN = 0.5
#: Pre-registered within-temperature correlation (initial rank, final loss) the loss rule should resolve.
LOSS_EFFECT = -0.5


def _need(df: pd.DataFrame, cols) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ConfigError("runs", f"missing columns {missing}; got {list(df.columns)}")


@dataclass
class DynamicsResult:
    """The dynamics rule on one measure.

    ``status`` is the claim's verdict; per architecture ``rho`` (Spearman, initial vs final mean
    rank across runs), ``within`` (the same given tau as a categorical fixed effect, reported, not
    in the rule), ``change`` (median relative change with its order-statistic interval) and
    ``halves`` (``{(half, arch): status}``).
    """

    status: str
    rho: dict = field(default_factory=dict)
    within: dict = field(default_factory=dict)
    change: dict = field(default_factory=dict)
    halves: dict = field(default_factory=dict)
    judged: dict = field(default_factory=dict)


def dynamics_rule(runs: pd.DataFrame, measure: str, *, tolerance: float = 0.1, rho_min: float = RHO_MIN,
                  seed: int = 0, n_resamples: int = stats.N_RESAMPLES) -> DynamicsResult:
    """Is the mean rank predictable from initialisation and stable through training?

    Per architecture:

    * *predictive*: :func:`attnrank.stats.spearman` of ``initial_<measure>`` and ``final_<measure>``
      across runs (BCa bootstrap over runs) classified against ``rho_min``, direction "above";
    * *stable*: :func:`attnrank.stats.median_ci` of ``|final - initial| / initial`` classified against
      ``tolerance``, direction "below".

    The claim's status is :func:`attnrank.verdicts.combine` of the four halves: supported if all
    hold, not supported if any interval lies wholly on the wrong side, else inconclusive at this
    scale. Also returns :func:`attnrank.stats.spearman_within` given tau (reported beside the rule).

    Raises:
        ConfigError: missing columns.
    """
    ini, fin = f"initial_{measure}", f"final_{measure}"
    _need(runs, ["arch", "tau", ini, fin])
    res = DynamicsResult(status=verdicts.INCONCLUSIVE)
    for a in sorted(runs.arch.unique()):
        d = runs[runs.arch == a]
        x, y = d[ini].to_numpy(float), d[fin].to_numpy(float)
        res.rho[a] = stats.spearman(x, y, seed=seed, n_resamples=n_resamples)
        res.within[a] = stats.spearman_within(x, y, d.tau.to_numpy(float), seed=seed, n_resamples=n_resamples)
        with np.errstate(invalid="ignore", divide="ignore"):
            rel = np.abs(y - x) / x
        res.change[a] = stats.median_ci(rel)
        res.judged[("predictive", a)] = verdicts.judge(res.rho[a], rho_min, "above", effect=rho_min)
        res.judged[("stable", a)] = verdicts.judge(res.change[a], tolerance, "below")
        res.halves[("predictive", a)] = res.judged[("predictive", a)].status
        res.halves[("stable", a)] = res.judged[("stable", a)].status
    res.status = verdicts.combine(res.halves.values())
    return res


@dataclass
class LossResult:
    """The loss rule on one measure: ``status``; per architecture ``rho`` (across runs), ``within``
    (given tau, fixed effect), ``per_arch`` (status per architecture) and ``judged`` (the
    :class:`attnrank.verdicts.Verdict` of the within-tau correlation, with the runs needed)."""

    status: str
    rho: dict = field(default_factory=dict)
    within: dict = field(default_factory=dict)
    per_arch: dict = field(default_factory=dict)
    judged: dict = field(default_factory=dict)


def loss_rule(runs: pd.DataFrame, measure: str, *, outcome: str = "final_val_loss", effect: float = LOSS_EFFECT,
              seed: int = 0, n_resamples: int = stats.N_RESAMPLES) -> LossResult:
    """Does a higher initial rank go with a lower loss, also with the temperature held fixed?

    Per architecture, with x = ``initial_<measure>`` and y = ``outcome``:

    * association: :func:`attnrank.stats.spearman` (x, y) across runs, direction "below" 0;
    * given tau: :func:`attnrank.stats.spearman_within` (x, y, strata = tau), each temperature a
      category of its own (a fixed effect), stratified permutation p and stratified bootstrap
      interval, direction "below" 0.

    An architecture's status is :func:`attnrank.verdicts.combine` of the two, the claim's the
    combination over architectures: supported if both correlations lie below 0 for every
    architecture, not supported if an interval lies wholly above 0, otherwise inconclusive at this
    scale. ``judged`` carries the runs needed to resolve a within-tau correlation of ``effect``.

    Raises:
        ConfigError: missing columns.
    """
    ini = f"initial_{measure}"
    _need(runs, ["arch", "tau", ini, outcome])
    res = LossResult(status=verdicts.INCONCLUSIVE)
    for a in sorted(runs.arch.unique()):
        d = runs[runs.arch == a]
        x, y = d[ini].to_numpy(float), d[outcome].to_numpy(float)
        res.rho[a] = stats.spearman(x, y, seed=seed, n_resamples=n_resamples)
        res.within[a] = stats.spearman_within(x, y, d.tau.to_numpy(float), seed=seed, n_resamples=n_resamples)
        res.judged[a] = verdicts.judge(res.within[a], 0.0, "below", effect=effect)
        res.per_arch[a] = verdicts.combine([verdicts.classify(res.rho[a], 0.0, "below"), res.judged[a].status])
    res.status = verdicts.combine(res.per_arch.values())
    return res

def fmt_setting(v) -> str:
    """A grid value (tau, head dimension) for prose and tables: ``1``, ``0.001``, ``32``, ``9.7e7``.

    Integer values print without a decimal point, others in ``%g`` form with the exponent written
    compactly (``9.7e7``, ``1e-4``), never as ``97000000.0``.
    """
    v = float(v)
    if not math.isfinite(v):
        return "n/a"
    if v.is_integer() and abs(v) < 1e4:
        return str(int(v))
    s = f"{v:g}"
    if "e" in s:
        mant, exp = s.split("e")
        s = f"{mant}e{int(exp)}"
    return s


@dataclass(frozen=True)
class ArchResult:
    """One architecture's part of a verdict.

    Attributes:
        verdict: the classified estimate (status, estimate, threshold, runs needed).
        shape: where the response peaks (:class:`~attnrank.stats.Estimate` of the grid value; its
            interval is on the grid) or ``None``.
        shape_text: the peak in words (see :func:`peak_shape`), or ``""``.
        spread: pooled within-setting standard deviation over seeds of the outcome (NaN if none).
        parts: further named estimates shown beside the verdict (e.g. the span of each lever).
    """

    verdict: Verdict
    shape: Estimate | None = None
    shape_text: str = ""
    spread: float = float("nan")
    parts: dict = field(default_factory=dict)


@dataclass(frozen=True)
class SweepVerdict:
    """The combined status over architectures (:func:`attnrank.verdicts.combine`) and the per-arch results."""

    status: str
    arch: dict
    n_runs: int

    def __getitem__(self, arch: str) -> ArchResult:
        return self.arch[arch]


def peak_shape(peak: Estimate, levels) -> str:
    """Where a peak lies on a grid, in words, from :func:`attnrank.stats.peak_location`.

    ``"interior peak at tau = v (interval a to b)"`` when the interval excludes both grid ends;
    ``"peak at the low end"`` / ``"peak at the high end"`` when the whole interval is that end;
    otherwise ``"peak location unresolved (interval a to b)"``. The word ``tau`` is the caller's
    (this function names no setting): the text starts with the shape.
    """
    levels = np.sort(np.unique(np.asarray(levels, float)))
    if len(levels) < 2 or not peak.has_interval:
        return "peak location unresolved"
    lo, hi = levels[0], levels[-1]
    span = f"{fmt_setting(peak.low)} to {fmt_setting(peak.high)}"
    if peak.low > lo and peak.high < hi:
        return f"interior peak at {fmt_setting(peak.value)} (interval {span})"
    if peak.low == peak.high == lo:
        return "peak at the low end of the grid"
    if peak.low == peak.high == hi:
        return "peak at the high end of the grid"
    return f"peak location unresolved (estimate {fmt_setting(peak.value)}, interval {span})"


def _judge_t(est: Estimate, effect: float, spread: float, unit: str = "seeds per arm") -> Verdict:
    """:func:`attnrank.verdicts.judge` against 0 ("above"), with the runs needed from the exact t-test
    power (:func:`attnrank.stats.seeds_needed_t`) rather than the normal approximation."""
    v = judge(est, 0.0, "above", effect=effect, spread=spread)
    if v.needed is not None:
        v = replace(v, needed=stats.seeds_needed_t(spread, effect), needed_unit=unit)
    return v


def two_point(a, b, *, seed: int = 0) -> Estimate:
    """``mean(a) - mean(b)`` for two small sets of runs: :func:`attnrank.stats.compare_means`.

    When both arms are constant (every seed gives the same value, as a numerical rank can) and
    the Welch interval is undefined, the difference is exact and the interval has zero width, as
    :func:`attnrank.stats.mean_ci` does for equal values.
    """
    with warnings.catch_warnings():  # nearly equal values: scipy warns about precision, the result stands
        warnings.simplefilter("ignore", RuntimeWarning)
        e = stats.compare_means(a, b, seed=seed)
    a, b = np.asarray(a, float), np.asarray(b, float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if not e.has_interval and len(a) >= 2 and len(b) >= 2 and np.ptp(a) == 0 and np.ptp(b) == 0:
        return Estimate(e.value, e.value, e.value, e.n, e.method + "; both arms constant: exact difference",
                        e.confidence, e.p)
    return e


def temperature_rank(runs: pd.DataFrame, column: str, *, stock: float = 1.0, cold: float | None = None,
                     effect: float = 1.0, seed: int = 0, n_resamples: int = stats.N_RESAMPLES,
                     archs=None) -> SweepVerdict:
    """Claim (iii): a colder softmax raises the initial rank (the study's two-point comparison).

    Args:
        runs: one row per run with columns ``arch``, ``tau`` and ``column`` (e.g.
            ``initial_effective_rank``); every grid value should have at least 2 seeds.
        stock, cold: the two temperatures compared (``cold`` defaults to the smallest ``tau``).
        effect: the pre-registered effect in the units of ``column``, for the seeds needed.

    Rule, per architecture: the difference of means (``cold`` minus ``stock``, Welch-t interval,
    exact permutation p) must lie above 0 (supported) or below 0 (not supported), else inconclusive
    at this scale; the claim is made for every architecture (:func:`attnrank.verdicts.combine`).
    When not supported, ``verdict.needed`` is the seeds per arm that resolve ``effect`` at the
    pooled within-tau seed spread (exact two-sample t power, :func:`attnrank.stats.seeds_needed_t`). Beside it: where the mean rank peaks over the grid
    (:func:`attnrank.stats.peak_location`, stratified bootstrap) and :func:`peak_shape`.

    Raises:
        ConfigError: naming ``runs`` for a missing column, ``stock``/``cold`` when not on the grid.
    """
    _need(runs, ("arch", "tau", column))
    d = runs[np.isfinite(runs[column].astype(float))]
    levels = np.sort(d.tau.astype(float).unique())
    cold = float(levels.min()) if cold is None else float(cold)
    for name, v in (("stock", stock), ("cold", cold)):
        if not np.isclose(levels, v, rtol=1e-9).any():
            raise ConfigError(name, f"got {v!r}; expected a tau on the grid {[fmt_setting(t) for t in levels]}")
    out = {}
    for a in (archs or sorted(d.arch.unique())):
        da = d[d.arch == a]
        x, y = da.tau.to_numpy(float), da[column].to_numpy(float)
        est = two_point(y[np.isclose(x, cold, rtol=1e-9)], y[np.isclose(x, stock, rtol=1e-9)], seed=seed)
        spread = stats.pooled_sd(y, x)
        v = _judge_t(est, effect, spread)
        peak = stats.peak_location(x, y, n_resamples=n_resamples, seed=seed)
        out[a] = ArchResult(v, peak, peak_shape(peak, x), spread)
    return SweepVerdict(combine(r.verdict.status for r in out.values()) if out else INCONCLUSIVE, out, len(d))


def temperature_loss(runs: pd.DataFrame, column: str = "final_val_loss", *, effect: float = 0.5, seed: int = 0,
                     n_resamples: int = stats.N_RESAMPLES, archs=None) -> SweepVerdict:
    """Does a colder softmax train to a lower loss? Spearman's rho of ``log tau`` and the loss.

    Args:
        runs: one row per *completed* run with ``arch``, ``tau`` and ``column``.
        effect: the pre-registered correlation for the runs needed (total runs, Fisher z).

    Rule, per architecture: the claim (a lower tau gives a lower loss) predicts rho > 0; supported
    if the 95% interval of :func:`attnrank.stats.spearman` (BCa bootstrap over runs) lies above 0,
    not supported if it lies below 0 (colder trains worse), else inconclusive at this scale; combined
    over architectures. Beside it: the grid value with the lowest mean loss
    (:func:`attnrank.stats.peak_location` with ``maximum=False``) and its interval.
    """
    _need(runs, ("arch", "tau", column))
    d = runs[np.isfinite(runs[column].astype(float))]
    out = {}
    for a in (archs or sorted(d.arch.unique())):
        da = d[d.arch == a]
        x, y = da.tau.to_numpy(float), da[column].to_numpy(float)
        est = stats.spearman(np.log(x), y, n_resamples=n_resamples, seed=seed)
        v = judge(est, 0.0, "above", effect=effect)
        best = stats.peak_location(x, y, n_resamples=n_resamples, seed=seed, maximum=False)
        out[a] = ArchResult(v, best, peak_shape(best, x).replace("peak", "minimum"), stats.pooled_sd(y, x))
    return SweepVerdict(combine(r.verdict.status for r in out.values()) if out else INCONCLUSIVE, out, len(d))


def lever_comparison(tau_runs: pd.DataFrame, hd_runs: pd.DataFrame, column: str, *, effect: float = 1.0,
                     seed: int = 0, n_resamples: int = stats.N_RESAMPLES, archs=None) -> SweepVerdict:
    """Claim (iv): temperature moves the initial rank more than head dimension, over the settable ranges.

    Args:
        tau_runs: one row per run of the temperature grid (at the standard head dimension), with
            ``arch``, ``tau`` and ``column``.
        hd_runs: one row per run of the head-dimension grid (at one temperature), with ``arch``,
            ``head_dim`` and ``column``.
        effect: the pre-registered difference of the two ranges (units of ``column``), for the seeds
            needed.

    Rule, per architecture: the range (max minus min) of the mean ``column`` over the whole
    temperature grid minus its range over the whole head-dimension grid
    (:func:`attnrank.stats.compare_spans`, stratified bootstrap over runs within grid values) must lie
    above 0 (supported) or below 0 (not supported), else inconclusive at this scale; combined over
    architectures; when not supported, ``verdict.needed`` is the seeds per setting that resolve
    ``effect`` at the pooled seed spread (:func:`attnrank.stats.seeds_needed_t`, a two-sample
    approximation for a difference of ranges). ``parts`` holds each lever's range (:func:`attnrank.stats.grid_span`) and the signed
    change from the smallest to the largest head dimension (:func:`two_point`: Welch-t, exact when
    both ends are constant).
    """
    _need(tau_runs, ("arch", "tau", column))
    _need(hd_runs, ("arch", "head_dim", column))
    t = tau_runs[np.isfinite(tau_runs[column].astype(float))]
    h = hd_runs[np.isfinite(hd_runs[column].astype(float))]
    out = {}
    for a in (archs or sorted(set(t.arch) | set(h.arch))):
        ta, ha = t[t.arch == a], h[h.arch == a]
        xt, yt = ta.tau.to_numpy(float), ta[column].to_numpy(float)
        xh, yh = ha.head_dim.to_numpy(float), ha[column].to_numpy(float)
        est = stats.compare_spans(xt, yt, xh, yh, n_resamples=n_resamples, seed=seed)
        spread = stats.pooled_sd(np.concatenate([yt, yh]),
                                 np.concatenate([[f"tau={v!r}" for v in xt], [f"hd={v!r}" for v in xh]]))
        v = _judge_t(est, effect, spread, "seeds per setting")
        parts = {"tau_range": stats.grid_span(xt, yt, n_resamples=n_resamples, seed=seed),
                 "head_dim_range": stats.grid_span(xh, yh, n_resamples=n_resamples, seed=seed),
                 "head_dim_change": two_point(yh[np.isclose(xh, xh.max())], yh[np.isclose(xh, xh.min())], seed=seed),
                 "tau_change": two_point(yt[np.isclose(xt, xt.min())], yt[np.isclose(xt, 1.0)], seed=seed)
                 if np.isclose(xt, 1.0).any() else None}
        out[a] = ArchResult(v, None, "", spread, parts)
    return SweepVerdict(combine(r.verdict.status for r in out.values()) if out else INCONCLUSIVE, out,
                        len(t) + len(h))


#: Pre-registered loss difference (nats/token) the causal rule should resolve (for the seeds needed).
CAUSAL_EFFECT = 0.01


def paired_difference(runs: pd.DataFrame, column: str, cell: str, base: str) -> Estimate:
    """Mean over seeds of ``column`` in ``cell`` minus ``base``, paired by seed, with a Student-t interval.

    Runs of one seed share the data order, the masked tokens and every initial weight outside the
    query/key scale, so the seed is a block: the per-seed differences are the independent units
    (:func:`attnrank.stats.mean_ci`; ``n`` counts seeds with both runs finite). ``p`` is the two-sided
    one-sample t-test p of the differences (NaN when they are all equal).
    """
    from scipy import stats as sps

    diff = _per_seed(runs, column, cell, base)
    e = stats.mean_ci(diff)
    p = float(sps.ttest_1samp(diff, 0.0).pvalue) if len(diff) >= 2 and np.ptp(diff) > 0 else float("nan")
    return Estimate(e.value, e.low, e.high, e.n, f"mean of per-seed differences {cell} - {base}, Student-t interval",
                    e.confidence, p)


def _per_seed(runs: pd.DataFrame, column: str, cell: str, base: str) -> np.ndarray:
    pick = lambda c: runs[runs.cell == c].set_index("seed")[column].astype(float)
    return (pick(cell) - pick(base)).dropna().sort_index().to_numpy()


def causal_rule(runs: pd.DataFrame, column: str = "final_val_loss", *, effect: float = CAUSAL_EFFECT,
                archs=None) -> SweepVerdict:
    """Does temperature act on the loss through the initial logit scale (rank), or the step size?

    Args:
        runs: one row per run with ``arch``, ``seed``, ``cell`` (:data:`attnrank.causal.CELLS`:
            ``stock``, ``init``, ``lr``, ``twin``, ``tau``) and ``column``; NaN values (failed runs)
            are left out, with their seed's pairs.
        effect: the pre-registered difference in the units of ``column``, for the seeds needed.

    Rule, per architecture (the claim: the loss follows the initial logit scale, which alone
    reproduces the temperature's initial rank, rather than the query/key step size); every
    difference is paired by seed (:func:`paired_difference`):

    1. the temperature's effect ``tau - stock``: if its 95% interval contains 0 there is no loss
       effect to attribute, and the architecture is *inconclusive at this scale*;
    2. otherwise, with ``d`` its sign, the statistic ``d * (init - lr)``: *supported* if its interval
       lies above 0 (the initial scale alone moves the loss further in the temperature's direction
       than the step size alone), *not supported* if below 0 (the step size does), else inconclusive
       at this scale (with the seeds that would resolve ``effect`` at the observed spread of the
       per-seed differences).

    The claim is made for every architecture (:func:`attnrank.verdicts.combine`). ``parts`` holds
    each cell's paired difference from ``stock`` (``temperature``, ``init``, ``lr``, ``twin``) and
    the twin gap ``tau - twin`` (zero if P3 holds); ``spread`` is the standard deviation of the
    per-seed ``init - lr`` differences. The seeds that would resolve ``effect`` are those of a
    two-sample t test at spread ``spread / sqrt(2)`` (the same noncentrality as the paired test).

    Raises:
        ConfigError: naming ``runs`` for a missing column or a cell without runs.
    """
    _need(runs, ("arch", "seed", "cell", column))
    d = runs[np.isfinite(runs[column].astype(float))]
    out = {}
    for a in (archs or sorted(d.arch.unique())):
        da = d[d.arch == a]
        empty = [c for c in ("stock", "init", "lr", "twin", "tau") if not (da.cell == c).any()]
        if empty:
            raise ConfigError("runs", f"no runs with a finite {column} in cells {empty} for arch {a!r}")
        parts = {"temperature": paired_difference(da, column, "tau", "stock"),
                 **{c: paired_difference(da, column, c, "stock") for c in ("init", "lr", "twin")},
                 "twin_gap": paired_difference(da, column, "tau", "twin")}
        temp = parts["temperature"]
        sign = 1.0 if temp.value >= 0 else -1.0
        raw = paired_difference(da, column, "init", "lr")
        lo, hi = sorted((sign * raw.low, sign * raw.high))
        est = Estimate(sign * raw.value, lo, hi, raw.n, raw.method + f"; sign of the temperature effect {sign:+.0f}",
                       raw.confidence, raw.p)
        diff = _per_seed(da, column, "init", "lr")
        spread = float(diff.std(ddof=1)) if len(diff) >= 2 else float("nan")
        # seeds for the paired test: a two-sample t test with spread sd/sqrt(2) per arm has the same
        # noncentrality (its degrees of freedom differ a little)
        v = _judge_t(est, effect, spread / math.sqrt(2)) if math.isfinite(spread) and spread > 0 else judge(est, 0.0, "above")
        v = replace(v, needed_unit="seeds") if v.needed is not None else v
        if verdicts.classify(temp, 0.0, "above") == INCONCLUSIVE:
            v = replace(v, status=INCONCLUSIVE)
        out[a] = ArchResult(v, None, "", spread, parts)
    return SweepVerdict(combine(r.verdict.status for r in out.values()) if out else INCONCLUSIVE, out, len(d))


def causal_text(result: SweepVerdict, arch: str, digits: int = 4) -> str:
    """One architecture's part of :func:`causal_rule` in words, for a verdict's summary: the
    temperature's effect, each single factor's, the oriented difference, the status and, when not
    supported, the seeds that would resolve :data:`CAUSAL_EFFECT`."""
    r, p = result[arch], result[arch].parts
    name = {"bert": "BERT", "gpt2": "GPT-2"}.get(arch, arch)
    txt = (f"{name}: temperature effect {p['temperature'].text(digits)} seeds, initial scale alone "
           f"{p['init'].text(digits, n=False)}, step size alone {p['lr'].text(digits, n=False)}, oriented difference "
           f"{r.verdict.estimate.text(digits, n=False)} ({r.verdict.status})")
    if r.verdict.status != "supported" and r.verdict.needed is not None:
        txt += f"; about {r.verdict.needed} {r.verdict.needed_unit} would resolve {_fmt_effect(r.verdict.effect)} nats"
    return txt


def _fmt_effect(x) -> str:
    return "n/a" if x is None else f"{x:g}"
