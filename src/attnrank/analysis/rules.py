"""The pre-registered verdict rules of the chapters on trained models, as functions of a run table.

Each rule takes one row per run (complete runs only; the independent unit is always the run,
never a probe sequence) and returns the verdict on one rank measure; the chapters call it once per
measure of :data:`attnrank.core.rank.MEASURES` (the primary one for the verdict, every one for the
robustness table). All statistics come from :mod:`attnrank.analysis.stats` (exact or Welch-t where n is
small, bootstraps over runs with a canonical row order and :data:`attnrank.analysis.stats.N_RESAMPLES`
resamples, so a result depends neither on the row order nor, beyond Monte Carlo error far below
the reported digits, on the bootstrap seed) and the classification from :mod:`attnrank.analysis.verdicts`.

* :func:`dynamics_rule` - claim (i): the rank at initialisation predicts the final rank, and the
  rank hardly moves (``initial_<measure>``, ``final_<measure>``).
* :func:`rank_loss_rule` - claim (ii) (since 2026-12-07): at ``tau = 1``, the cell whose initial query/key scale
  gives the higher initial rank ends with the lower final loss, paired by seed.
* :func:`loss_rule` - claim (ii) until 2026-12-07, reported beside it since: a higher initial rank goes with a lower
  final loss with the temperature held fixed (``initial_<measure>``, ``final_val_loss``; and across runs).
* :func:`temperature_rank` - claim (iii) in the study's direction: a higher temperature gives a higher
  initial rank. The study's own two-point comparison, rank at ``tau = 1`` minus rank at the coldest
  grid value
  (:func:`attnrank.analysis.stats.compare_means`), plus where the rank peaks on the grid
  (:func:`attnrank.analysis.stats.peak_location`).
* :func:`temperature_loss` - claims (ii) and (iii) together, in the study's direction: a higher
  temperature trains to a lower loss. Spearman's rho of ``log tau`` and the final validation loss
  over runs (:func:`attnrank.analysis.stats.spearman`) below 0, plus the grid value with the lowest mean loss.
* :func:`causal_rule` - the reviewers' causality critique: does temperature act on the loss through
  the initial logit scale (which sets the initial rank) or through the query/key step size? The
  2 x 2 at ``tau = 1`` of :mod:`attnrank.sections.causal`: the loss of the initial-scale-only cell minus the
  loss of the step-size-only cell, oriented by the temperature's own loss effect.
* :func:`lever_comparison` - claim (iii): temperature is the stronger lever on the initial rank,
  compared over the range a user can set: range of the mean rank over the whole temperature grid
  minus its range over the whole head-dimension grid (:func:`attnrank.analysis.stats.compare_spans`).
* :func:`protocol_rule` - the study's protocol (4 + 4 examples, one run per temperature, absolute
  1e-8 rank): how often a random draw flips its conclusion, and whether it agrees with ours.
* :func:`set_early_rule` - the rank at an early probe step predicts the final rank (Spearman's rho
  over runs against a pre-registered threshold, :func:`attnrank.sections.study.rank_by_step`).
* :func:`seq_len_rule` - generality in sequence length: the trained rank stays below the study's
  bound ``(1 - 1/e) n + 1`` at every ``n`` (``final_<measure>``, ``max_len``).
* :func:`learned_gate` - applied to every verdict computed from trained models: an architecture's
  case counts only when its models have learned (beat the bigram count model), otherwise it is
  inconclusive at this scale whatever its statistics say.

Every pre-registered constant of these rules is defined here (:data:`PRIMARY_MEASURE`,
:data:`RHO_MIN`, :data:`STABLE_TOLERANCE`, :data:`LOSS_EFFECT`, :data:`TEMP_RANK_EFFECT`,
:data:`TEMP_LOSS_EFFECT`, :data:`LEVER_EFFECT`, :data:`MAX_FLIP`, :data:`SET_EARLY_RHO`,
:data:`EARLY_FRACTION`, :data:`CAUSAL_EFFECT`, :data:`LEARNED_MARGIN`), and nothing else: this module holds decisions, not
words. The sentences, tables and captions that report a verdict live in the chapter modules
(:mod:`attnrank.sections.dynamics`, :mod:`attnrank.sections.loss`, :mod:`attnrank.sections.temp`, :mod:`attnrank.sections.headdim`,
:mod:`attnrank.sections.causal`, ...), outside the result hash (:data:`attnrank.runs.provenance.RESULT_ROOTS`),
so rewording a verdict's sentence recomputes no cached table.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..core.errors import ConfigError
from ..core.rank import check_measures
from . import stats, verdicts
from .stats import Estimate
from .theory import study_bound
from .verdicts import INCONCLUSIVE, Judgement, combine, judge

__all__ = [
    "PRIMARY_MEASURE",
    "RHO_MIN",
    "STABLE_TOLERANCE",
    "LOSS_EFFECT",
    "TEMP_RANK_EFFECT",
    "TEMP_LOSS_EFFECT",
    "LEVER_EFFECT",
    "LEVER_FACTOR",
    "MAX_FLIP",
    "SET_EARLY_RHO",
    "EARLY_FRACTION",
    "CAUSAL_EFFECT",
    "LEARNED_MARGIN",
    "LEARNED_WORTH",
    "LearnedGate",
    "learned_gate",
    "DynamicsResult",
    "LossResult",
    "ArchResult",
    "SweepVerdict",
    "ProtocolResult",
    "SetEarlyResult",
    "SeqLenResult",
    "dynamics_rule",
    "loss_rule",
    "rank_loss_rule",
    "two_point",
    "temperature_rank",
    "temperature_loss",
    "lever_comparison",
    "relative_change",
    "stability_table",
    "convergence_speed",
    "protocol_rule",
    "set_early_rule",
    "seq_len_rule",
    "paired_difference",
    "causal_rule",
]

#: The measure every verdict computed from a rank is judged on (the others give its robustness table).
PRIMARY_MEASURE = "effective_rank"
#: The predictive half of the dynamics claim needs Spearman's rho(initial, final) above this.
RHO_MIN = 0.5
#: The stable half of the dynamics claim: a run is stable if its relative change of mean rank is at most this.
STABLE_TOLERANCE = 0.1
#: Pre-registered within-temperature correlation (initial rank, final loss) the loss rule should resolve.
LOSS_EFFECT = -0.5
#: Pre-registered effect of the temperature rank rule: stock minus coldest initial rank (the study's sign,
#: a higher temperature a higher rank), in units of rank (for the seeds needed when the verdict is unresolved).
TEMP_RANK_EFFECT = 1.0
#: Pre-registered Spearman rho of log tau and the final loss that the temperature loss rule should resolve
#: (the study's sign: a higher temperature, a lower loss).
TEMP_LOSS_EFFECT = -0.5
#: Pre-registered difference (units of rank) between the temperature's and the head dimension's range of
#: the mean initial rank, for the seeds needed by the lever rule.
LEVER_EFFECT = 1.0
#: The lever rule since 2026-12-05: each lever is moved over the same factor of its own setting, at initialisation
#: (no training needed): the temperature ratio over a factor of 16 (at the stock and at the cold end), the head
#: dimension over a factor of 16 at fixed width (five values a factor of 2 apart), at the stock and the cold tau.
LEVER_FACTOR = 16
#: The learned gate (:func:`learned_gate`): an architecture's case of a verdict on trained models counts only
#: when every one of its stock-softmax runs ends at least this many nats below its bigram count model (nats per
#: token). Added on 2026-12-02 at 0 on the mean; since 2026-12-04 the pre-registered target itself, every run
#: (see the deviations appendix).
LEARNED_MARGIN = 0.3
#: ... and when attention is worth at least this many nats in every one of those runs (the attention ablation
#: gain, :func:`attnrank.analysis.ablation.attention_gain`). Pre-registered on 2026-12-04, with :data:`LEARNED_MARGIN`.
LEARNED_WORTH = 0.3


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


def _by_arch(runs: pd.DataFrame, x_col: str, y_col: str, res, *, seed, n_resamples, archs=None):
    """Per architecture (``archs``, default those in ``runs``, sorted): Spearman's rho of ``x_col`` and ``y_col``
    across runs and within temperatures, stored in ``res.rho[arch]`` and ``res.within[arch]`` (NaN for an
    architecture with fewer than 4 runs); yields ``(arch, x, y)``."""
    for a in sorted(runs.arch.unique()) if archs is None else archs:
        d = runs[runs.arch == a]
        x, y = d[x_col].to_numpy(float), d[y_col].to_numpy(float)
        res.rho[a] = stats.spearman(x, y, seed=seed, n_resamples=n_resamples)
        res.within[a] = stats.spearman_within(x, y, d.tau.to_numpy(float), seed=seed, n_resamples=n_resamples)
        yield a, x, y


def dynamics_rule(
    runs: pd.DataFrame,
    measure: str,
    *,
    tolerance: float = STABLE_TOLERANCE,
    rho_min: float = RHO_MIN,
    seed: int = 0,
    n_resamples: int = stats.N_RESAMPLES,
    archs=None,
) -> DynamicsResult:
    """Is the mean rank predictable from initialisation and stable through training?

    Per architecture:

    * *predictive*: :func:`attnrank.analysis.stats.spearman` of ``initial_<measure>`` and ``final_<measure>``
      across runs (percentile bootstrap over runs) classified against ``rho_min``, direction "above";
    * *stable*: :func:`attnrank.analysis.stats.median_ci` of ``|final - initial| / initial`` classified against
      ``tolerance``, direction "below".

    The claim's status is :func:`attnrank.analysis.verdicts.combine` of the four halves: supported if all
    hold, not supported if any interval lies wholly on the wrong side, else inconclusive at this
    scale. Also returns :func:`attnrank.analysis.stats.spearman_within` given tau (reported beside the rule).
    ``archs`` names the architectures judged (default: those in ``runs``); one with no runs (none of its runs
    learned, say) is inconclusive.

    Raises:
        ConfigError: missing columns.
    """
    ini, fin = f"initial_{measure}", f"final_{measure}"
    _need(runs, ["arch", "tau", ini, fin])
    res = DynamicsResult(status=verdicts.INCONCLUSIVE)
    for a, x, y in _by_arch(runs, ini, fin, res, seed=seed, n_resamples=n_resamples, archs=archs):
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
    :class:`attnrank.analysis.verdicts.Judgement` of the within-tau correlation, with the runs needed)."""

    status: str
    rho: dict = field(default_factory=dict)
    within: dict = field(default_factory=dict)
    per_arch: dict = field(default_factory=dict)
    judged: dict = field(default_factory=dict)


def loss_rule(
    runs: pd.DataFrame,
    measure: str,
    *,
    outcome: str = "final_val_loss",
    effect: float = LOSS_EFFECT,
    seed: int = 0,
    n_resamples: int = stats.N_RESAMPLES,
    archs=None,
) -> LossResult:
    """Does a higher initial rank go with a lower loss, also with the temperature held fixed?

    Per architecture, with x = ``initial_<measure>`` and y = ``outcome``:

    * given tau (decides, since 2026-12-05): :func:`attnrank.analysis.stats.spearman_within` (x, y, strata = tau), each
      temperature a category of its own (a fixed effect), stratified permutation p and stratified bootstrap
      interval, direction "below" 0. The claim is that a higher rank lowers the loss; across temperatures the
      temperature moves both the rank and the loss, so only the correlation with tau held fixed speaks to it;
    * across runs: :func:`attnrank.analysis.stats.spearman` (x, y), reported beside it, not in the rule.

    The claim's status is the combination over architectures (:func:`attnrank.analysis.verdicts.combine`): supported if
    the within-tau interval lies below 0 for every architecture, not supported if one lies wholly above 0,
    otherwise inconclusive at this scale. ``judged`` carries the runs needed to resolve a within-tau
    correlation of ``effect``; ``archs`` as in :func:`dynamics_rule`.

    Raises:
        ConfigError: missing columns.
    """
    ini = f"initial_{measure}"
    _need(runs, ["arch", "tau", ini, outcome])
    res = LossResult(status=verdicts.INCONCLUSIVE)
    for a, _, _ in _by_arch(runs, ini, outcome, res, seed=seed, n_resamples=n_resamples, archs=archs):
        res.judged[a] = verdicts.judge(res.within[a], 0.0, "below", effect=effect)
        res.per_arch[a] = res.judged[a].status
    res.status = verdicts.combine(res.per_arch.values())
    return res


@dataclass(frozen=True)
class ArchResult:
    """One architecture's part of a verdict.

    Attributes:
        verdict: the classified estimate (status, estimate, threshold, runs needed).
        shape: where the response peaks (:class:`~attnrank.analysis.stats.Estimate` of the grid value; its
            interval is on the grid) or ``None``.
        grid: the sorted grid values the shape was located on (empty without a shape).
        spread: pooled within-setting standard deviation over seeds of the outcome (NaN if none).
        parts: further named estimates shown beside the verdict (e.g. the span of each lever).
    """

    verdict: Judgement
    shape: Estimate | None = None
    spread: float = float("nan")
    parts: dict = field(default_factory=dict)
    grid: tuple = ()


@dataclass(frozen=True)
class SweepVerdict:
    """The combined status over architectures (:func:`attnrank.analysis.verdicts.combine`) and the per-arch results."""

    status: str
    arch: dict
    n_runs: int

    def __getitem__(self, arch: str) -> ArchResult:
        return self.arch[arch]


def _judge_t(est: Estimate, effect: float, spread: float, unit: str = "seeds per arm") -> Judgement:
    """:func:`attnrank.analysis.verdicts.judge` against 0 ("above"), with the runs needed from the exact t-test
    power (:func:`attnrank.analysis.stats.seeds_needed_t`) rather than the normal approximation."""
    v = judge(est, 0.0, "above", effect=effect, spread=spread)
    if v.needed is not None:
        v = replace(v, needed=stats.seeds_needed_t(spread, effect), needed_unit=unit)
    return v


def two_point(a, b, *, seed: int = 0) -> Estimate:
    """``mean(a) - mean(b)`` for two small sets of runs: :func:`attnrank.analysis.stats.compare_means`.

    When both arms are constant (every seed gives the same value, as a numerical rank can) and
    the Welch interval is undefined, the difference is exact and the interval has zero width, as
    :func:`attnrank.analysis.stats.mean_ci` does for equal values.
    """
    with warnings.catch_warnings():  # nearly equal values: scipy warns about precision, the result stands
        warnings.simplefilter("ignore", RuntimeWarning)
        e = stats.compare_means(a, b, seed=seed)
    a, b = np.asarray(a, float), np.asarray(b, float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if not e.has_interval and len(a) >= 2 and len(b) >= 2 and np.ptp(a) == 0 and np.ptp(b) == 0:
        return Estimate(
            e.value, e.value, e.value, e.n, e.method + "; both arms constant: exact difference", e.confidence, e.p
        )
    return e


def temperature_rank(
    runs: pd.DataFrame,
    column: str,
    *,
    stock: float = 1.0,
    cold: float | None = None,
    effect: float = TEMP_RANK_EFFECT,
    seed: int = 0,
    n_resamples: int = stats.N_RESAMPLES,
    archs=None,
) -> SweepVerdict:
    """Claim (iii) in the study's direction: a higher temperature gives a higher initial rank.

    Args:
        runs: one row per run with columns ``arch``, ``tau`` and ``column`` (e.g.
            ``initial_effective_rank``); every grid value should have at least 2 seeds.
        stock, cold: the two temperatures compared (``cold`` defaults to the smallest ``tau``).
        effect: the pre-registered effect in the units of ``column``, for the seeds needed.

    The study read a higher temperature as giving a higher measured rank (about 0.63 n at its cold
    setting, close to full rank at the stock one, on its absolute 1e-8 threshold). Rule, per
    architecture: the difference of means (``stock`` minus ``cold``, the study's two-point comparison;
    Welch-t interval, exact permutation p beside it) must lie above 0 (supported: the study's sign) or
    below 0 (not supported: the sign reversed), else inconclusive at this scale; the Welch-t interval
    governs, the permutation p is reported (with 2 seeds per arm its smallest possible value is 1/3, so
    it can never reject). The claim is made for every architecture (:func:`attnrank.analysis.verdicts.combine`).
    When unresolved, ``verdict.needed`` is the seeds per arm that resolve ``effect`` at the
    pooled within-tau seed spread (exact two-sample t power, :func:`attnrank.analysis.stats.seeds_needed_t`). Beside it: where the mean rank peaks over the grid
    (:func:`attnrank.analysis.stats.peak_location`, stratified bootstrap).

    Raises:
        ConfigError: naming ``runs`` for a missing column, ``stock``/``cold`` when not on the grid.
    """
    _need(runs, ("arch", "tau", column))
    d = runs[np.isfinite(runs[column].astype(float))]
    levels = np.sort(d.tau.astype(float).unique())
    cold = float(levels.min()) if cold is None else float(cold)
    for name, v in (("stock", stock), ("cold", cold)):
        if not np.isclose(levels, v, rtol=1e-9).any():
            raise ConfigError(name, f"got {v!r}; expected a tau on the grid {[f'{t:g}' for t in levels]}")
    out = {}
    for a in archs or sorted(d.arch.unique()):
        da = d[d.arch == a]
        x, y = da.tau.to_numpy(float), da[column].to_numpy(float)
        est = two_point(y[np.isclose(x, stock, rtol=1e-9)], y[np.isclose(x, cold, rtol=1e-9)], seed=seed)
        spread = stats.pooled_sd(y, x)
        v = _judge_t(est, effect, spread)
        peak = stats.peak_location(x, y, n_resamples=n_resamples, seed=seed)
        out[a] = ArchResult(v, peak, spread, grid=tuple(np.unique(x)))
    return SweepVerdict(combine(r.verdict.status for r in out.values()) if out else INCONCLUSIVE, out, len(d))


def temperature_loss(
    runs: pd.DataFrame,
    column: str = "final_val_loss",
    *,
    effect: float = TEMP_LOSS_EFFECT,
    seed: int = 0,
    n_resamples: int = stats.N_RESAMPLES,
    archs=None,
) -> SweepVerdict:
    """Claims (ii) and (iii) together, in the study's direction: a higher temperature trains to a lower loss.

    Args:
        runs: one row per *completed* run with ``arch``, ``tau`` and ``column``.
        effect: the pre-registered correlation for the runs needed (total runs, from the spread of the
            observed interval: :func:`attnrank.analysis.stats.runs_needed_observed`).

    Rule, per architecture: the claim (a higher tau gives a lower loss) predicts rho < 0; supported
    if the 95% interval of :func:`attnrank.analysis.stats.spearman` (percentile bootstrap over runs) lies below 0,
    not supported if it lies above 0 (hotter trains worse), else inconclusive at this scale; combined
    over architectures. Beside it: the grid value with the lowest mean loss
    (:func:`attnrank.analysis.stats.peak_location` with ``maximum=False``) and its interval.
    """
    _need(runs, ("arch", "tau", column))
    d = runs[np.isfinite(runs[column].astype(float))]
    out = {}
    for a in archs or sorted(d.arch.unique()):
        da = d[d.arch == a]
        x, y = da.tau.to_numpy(float), da[column].to_numpy(float)
        est = stats.spearman(np.log(x), y, n_resamples=n_resamples, seed=seed)
        v = judge(est, 0.0, "below", effect=effect)
        best = stats.peak_location(x, y, n_resamples=n_resamples, seed=seed, maximum=False)
        out[a] = ArchResult(v, best, stats.pooled_sd(y, x), grid=tuple(np.unique(x)))
    return SweepVerdict(combine(r.verdict.status for r in out.values()) if out else INCONCLUSIVE, out, len(d))


def lever_comparison(
    tau_runs: pd.DataFrame,
    hd_runs: pd.DataFrame,
    column: str,
    *,
    effect: float = LEVER_EFFECT,
    seed: int = 0,
    n_resamples: int = stats.N_RESAMPLES,
    archs=None,
) -> SweepVerdict:
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
    (:func:`attnrank.analysis.stats.compare_spans`, stratified bootstrap over runs within grid values) must lie
    above 0 (supported) or below 0 (not supported), else inconclusive at this scale; combined over
    architectures; when not supported, ``verdict.needed`` is the seeds per setting that resolve
    ``effect`` at the pooled seed spread (:func:`attnrank.analysis.stats.seeds_needed_t`, a two-sample
    approximation for a difference of ranges). ``parts`` holds each lever's range (:func:`attnrank.analysis.stats.grid_span`) and the signed
    change from the smallest to the largest head dimension (:func:`two_point`: Welch-t, exact when
    both ends are constant).
    """
    _need(tau_runs, ("arch", "tau", column))
    _need(hd_runs, ("arch", "head_dim", column))
    t = tau_runs[np.isfinite(tau_runs[column].astype(float))]
    h = hd_runs[np.isfinite(hd_runs[column].astype(float))]
    out = {}
    for a in archs or sorted(set(t.arch) | set(h.arch)):
        ta, ha = t[t.arch == a], h[h.arch == a]
        xt, yt = ta.tau.to_numpy(float), ta[column].to_numpy(float)
        xh, yh = ha.head_dim.to_numpy(float), ha[column].to_numpy(float)
        est = stats.compare_spans(xt, yt, xh, yh, n_resamples=n_resamples, seed=seed)
        spread = stats.pooled_sd(
            np.concatenate([yt, yh]), np.concatenate([[f"tau={v!r}" for v in xt], [f"hd={v!r}" for v in xh]])
        )
        v = _judge_t(est, effect, spread, "seeds per setting")
        parts = {
            "tau_range": stats.grid_span(xt, yt, n_resamples=n_resamples, seed=seed),
            "head_dim_range": stats.grid_span(xh, yh, n_resamples=n_resamples, seed=seed),
            "head_dim_change": two_point(yh[np.isclose(xh, xh.max())], yh[np.isclose(xh, xh.min())], seed=seed),
            "tau_change": two_point(yt[np.isclose(xt, xt.min())], yt[np.isclose(xt, 1.0)], seed=seed)
            if np.isclose(xt, 1.0).any()
            else None,
        }
        out[a] = ArchResult(v, None, spread, parts)
    return SweepVerdict(combine(r.verdict.status for r in out.values()) if out else INCONCLUSIVE, out, len(t) + len(h))


def relative_change(runs: pd.DataFrame, measures, *, keep=("arch", "tau", "head_dim", "seed", "sweep")) -> pd.DataFrame:
    """``|final - initial| / initial`` of the mean rank of every run and measure, one row per run and measure.

    Columns: ``keep`` (those present), ``measure, initial, final, rel_change, increased`` (final above initial).
    """
    keep = [c for c in keep if c in runs]
    d = pd.concat(
        [runs[keep].assign(measure=m, initial=runs[f"initial_{m}"], final=runs[f"final_{m}"]) for m in measures],
        ignore_index=True,
    )
    return d.assign(rel_change=(d.final - d.initial).abs() / d.initial, increased=d.final > d.initial)


def stability_table(change: pd.DataFrame, tolerance: float) -> pd.DataFrame:
    """Per measure and architecture of :func:`relative_change`: the share of stable runs (``rel_change`` at
    most ``tolerance``), the share whose rank went up and the largest relative change; indexed by
    ``measure, arch``."""
    return change.groupby(["measure", "arch"], sort=False).agg(
        share_stable=("rel_change", lambda v: float((v <= tolerance).mean())),
        share_increased=("increased", "mean"),
        largest=("rel_change", "max"),
    )


def convergence_speed(runs: pd.DataFrame, train_log: pd.DataFrame, *, quantile: float, smooth: int):
    """Steps each run needs to reach a loss level set from the data, with censoring.

    The level of an architecture is the ``quantile`` of the final training losses (mean of the last
    ``smooth`` logged values) of its complete runs; a run's speed is the first step at which its
    training loss, averaged over ``smooth`` consecutive logged values, is at or below the level
    (:func:`attnrank.analysis.stats.steps_to_level`). A complete run that never gets there is censored and
    placed at its architecture's ``max_steps + log_every`` ("later than every observed step").

    Returns ``(runs, levels, censored_at)``: a copy of ``runs`` with ``final_train_loss``,
    ``steps_to_level`` (NaN: never), ``censored`` and ``steps_plot``; ``{arch: level}``; ``{arch: step}``, the
    step given to that architecture's censored runs.
    """
    _need(runs, ["key", "arch", "status", "max_steps", "log_every"])
    runs = runs.copy()
    ok = runs.status == "complete"
    final = (
        train_log[train_log.key.isin(runs.key[ok])]
        .groupby("key")
        .apply(lambda g: float(g.sort_values("step").loss.tail(smooth).mean()), include_groups=False)
    )
    runs["final_train_loss"] = runs.key.map(final)
    levels = runs[ok].groupby("arch").final_train_loss.quantile(quantile).to_dict()
    censored_at = {
        a: int(d.max_steps.max()) + int(d.log_every.max()) for a, d in runs.groupby("arch", sort=True)
    }  # per architecture: at quick BERT trains half GPT-2's steps
    arch = runs.set_index("key").arch
    steps = {k: stats.steps_to_level(g, levels[arch[k]], smooth=smooth) for k, g in train_log.groupby("key")}
    runs["steps_to_level"] = runs.key.map(steps)
    runs["censored"] = ok & runs.steps_to_level.isna()
    runs["steps_plot"] = runs.steps_to_level.fillna(runs.arch.map(censored_at))
    return runs, levels, censored_at


#: The protocol rule: the study's four-plus-four-example conclusion is dependable if at most this
#: share of random draws flips it.
MAX_FLIP = 0.05
#: The "set early" rule: the rank at step k predicts the final rank when Spearman's rho clears this.
SET_EARLY_RHO = 0.9
#: The "set early" rule: "early" is after the learning-rate warm-up and at most this fraction of the training
#: steps (a tenth until 2026-12-05, when every probe in it lay inside the warm-up; the deviations appendix).
EARLY_FRACTION = 0.25


@dataclass
class ProtocolResult:
    """The protocol rule: ``status``; per architecture ``flip`` (the flip-rate Estimate), ``ours``
    (our statistic's Estimate), ``reference`` (the study's statistic with every run and sequence),
    ``parts`` (``{(part, arch): status}`` for ``"stable"`` and ``"agrees"``)."""

    status: str
    flip: dict = field(default_factory=dict)
    ours: dict = field(default_factory=dict)
    reference: dict = field(default_factory=dict)
    parts: dict = field(default_factory=dict)


def protocol_rule(flips: dict, reference: dict, ours: dict, *, max_flip: float = MAX_FLIP) -> ProtocolResult:
    """Does the study's protocol give a dependable conclusion, and the one ours gives?

    Args:
        flips: ``{arch: Estimate}``, the share of random 4 + 4 draws whose sign differs from the
            reference's (:func:`attnrank.sections.study.flip_rate` at the final step).
        reference: ``{arch: float}``, the study's statistic (stock minus cold) with every run and
            every recorded sequence (:func:`attnrank.sections.study.study_reference`).
        ours: ``{arch: Estimate}``, the same difference under our protocol (primary measure, every
            probe sequence, every seed: :func:`two_point`).
        max_flip: the largest acceptable flip rate.

    Per architecture two parts:

    * *stable*: the flip rate's interval lies below ``max_flip`` (supported), wholly above it (not
      supported), else inconclusive (:func:`attnrank.analysis.verdicts.classify`);
    * *agrees*: when our interval excludes 0, supported if its sign is the reference's and not
      supported if it is the opposite (a reference of exactly 0 against a resolved difference
      disagrees); inconclusive when our interval includes 0.

    The status is :func:`attnrank.analysis.verdicts.combine` over both parts and architectures.

    Raises:
        ConfigError: naming ``flips``/``reference``/``ours`` when their architectures differ, or
        ``max_flip`` outside (0, 1).
    """
    if not 0 < max_flip < 1:
        raise ConfigError("max_flip", f"got {max_flip!r}; expected a share in (0, 1)")
    if not (set(flips) == set(reference) == set(ours)) or not flips:
        raise ConfigError(
            "flips",
            f"architectures differ or are missing: flips {sorted(flips)}, reference "
            f"{sorted(reference)}, ours {sorted(ours)}",
        )
    res = ProtocolResult(status=INCONCLUSIVE, flip=dict(flips), ours=dict(ours), reference=dict(reference))
    for a in sorted(flips):
        res.parts[("stable", a)] = verdicts.classify(flips[a], max_flip, "below")
        sign = {verdicts.SUPPORTED: 1.0, verdicts.NOT_SUPPORTED: -1.0}.get(verdicts.classify(ours[a], 0.0, "above"))
        if sign is None:
            res.parts[("agrees", a)] = INCONCLUSIVE
        else:
            same = np.sign(float(reference[a])) == sign
            res.parts[("agrees", a)] = verdicts.SUPPORTED if same else verdicts.NOT_SUPPORTED
    res.status = combine(res.parts.values())
    return res


@dataclass
class SetEarlyResult:
    """The set-early rule: ``status``; per architecture ``first`` (the first probe step whose rho
    interval lies above the threshold, or None), ``limit`` (the last step counted as early),
    ``per_arch`` (status) and ``shown`` (``(step, Estimate)`` at ``first``, or at the last early
    step when none clears the threshold; None without early steps)."""

    status: str
    first: dict = field(default_factory=dict)
    limit: dict = field(default_factory=dict)
    per_arch: dict = field(default_factory=dict)
    shown: dict = field(default_factory=dict)


def set_early_rule(
    table: pd.DataFrame,
    *,
    rho_min: float = SET_EARLY_RHO,
    early_fraction: float = EARLY_FRACTION,
    warmup: int = 0,
    archs=None,
) -> SetEarlyResult:
    """Is the final rank set early in training? Spearman's rho of the rank at step k against the final rank.

    Args:
        table: :func:`attnrank.sections.study.rank_by_step` rows (``arch, step, final_step, estimate``).
        rho_min: the correlation the rank at step k must clear.
        early_fraction: "early" is ``warmup <= step <= early_fraction * final_step``.
        warmup: the runs' learning-rate warm-up in steps: a probe during it is not "early in training" but
            before training has its step size.
        archs: the architectures judged (default: those in ``table``); one without rows (none of its runs
            learned, say) is inconclusive.

    Per architecture, over the early steps in increasing order: supported if some step's interval
    lies wholly above ``rho_min`` (the first such step is reported), not supported if every early
    step's interval lies wholly below it, otherwise inconclusive at this scale (including no early
    step at all). The claim is made for every architecture (:func:`attnrank.analysis.verdicts.combine`).

    Raises:
        ConfigError: naming ``table`` for missing columns, ``rho_min`` outside (-1, 1) or
        ``early_fraction`` outside (0, 1).
    """
    missing = [c for c in ("arch", "step", "final_step", "estimate") if c not in table.columns]
    if missing:
        raise ConfigError("table", f"missing columns {missing}; got {list(table.columns)}")
    if not -1 < rho_min < 1:
        raise ConfigError("rho_min", f"got {rho_min!r}; expected a correlation in (-1, 1)")
    if not 0 < early_fraction < 1:
        raise ConfigError("early_fraction", f"got {early_fraction!r}; expected a fraction in (0, 1)")
    res = SetEarlyResult(status=INCONCLUSIVE)
    for a, d in table.sort_values("step").groupby("arch", sort=True):
        res.limit[a] = early_fraction * float(d.final_step.max())
        early = d[(d.step >= warmup) & (d.step <= res.limit[a])]
        status = [verdicts.classify(e, rho_min, "above") for e in early.estimate]
        hit = [s for s, st in zip(early.step, status) if st == verdicts.SUPPORTED]
        res.first[a] = int(hit[0]) if hit else None
        pick = early[early.step == hit[0]] if hit else early.tail(1)
        res.shown[a] = (int(pick.step.iloc[0]), pick.estimate.iloc[0]) if len(pick) else None
        if hit:
            res.per_arch[a] = verdicts.SUPPORTED
        elif status and all(s == verdicts.NOT_SUPPORTED for s in status):
            res.per_arch[a] = verdicts.NOT_SUPPORTED
        else:
            res.per_arch[a] = INCONCLUSIVE
    for a in archs or ():
        if a not in res.per_arch:
            res.first[a], res.shown[a], res.limit[a], res.per_arch[a] = None, None, math.nan, INCONCLUSIVE
    res.status = combine(res.per_arch.values()) if res.per_arch else INCONCLUSIVE
    return res


# ------------------------------------------------------------------------- sequence length
@dataclass(frozen=True)
class SeqLenResult:
    """The sequence-length rule on one measure.

    ``status`` combines the cases (:func:`attnrank.analysis.verdicts.combine`); ``cases`` maps
    ``(arch, n)`` to the classified :class:`~attnrank.analysis.verdicts.Judgement` of the trained rank
    against the study's bound at that ``n``; ``n_runs`` counts the complete runs.
    """

    status: str
    cases: dict
    n_runs: int

    def worst(self) -> tuple:
        """The ``(arch, n)`` whose trained rank comes closest to (or goes furthest above) its bound, relative to ``n``."""
        return max(self.cases, key=lambda k: (self.cases[k].estimate.high - self.cases[k].threshold) / k[1])


def seq_len_rule(runs: pd.DataFrame, measure: str) -> SeqLenResult:
    """Does the trained rank stay below the study's bound ``(1 - 1/e) n + 1`` at every sequence length?

    For each architecture and sequence length ``n`` (the runs' ``max_len``), the mean over seeds of
    ``final_<measure>`` with its 95% Student-t interval (:func:`attnrank.analysis.stats.mean_ci`) is classified
    against ``(1 - 1/e) n + 1`` with ``"below"`` predicted (:func:`attnrank.analysis.verdicts.classify`):
    supported if the whole interval lies below the bound, not supported if it lies wholly above it,
    inconclusive otherwise (one seed: no interval). The claim is made for every case, so the
    verdict is :func:`attnrank.analysis.verdicts.combine` of them.

    Raises:
        ConfigError: naming ``runs`` for missing columns or no complete run, ``measure`` for an
        unknown measure.
    """
    (measure,) = check_measures(measure)
    col = f"final_{measure}"
    _need(runs, ["arch", "max_len", "status", col])
    ok = runs[runs.status == "complete"]
    if ok.empty:
        raise ConfigError("runs", "no complete run")
    cases = {}
    for (arch, n), g in ok.groupby(["arch", "max_len"], sort=True):
        est = stats.mean_ci(g[col].to_numpy(float))
        cases[(arch, int(n))] = judge(est, study_bound(int(n)), "below")
    return SeqLenResult(combine(v.status for v in cases.values()), cases, len(ok))


#: Pre-registered loss difference (nats/token) the causal rule should resolve (for the seeds needed).
CAUSAL_EFFECT = 0.01


def paired_difference(runs: pd.DataFrame, column: str, cell: str, base: str) -> Estimate:
    """Mean over seeds of ``column`` in ``cell`` minus ``base``, paired by seed, with a Student-t interval.

    Runs of one seed share the data order, the masked tokens and every initial weight outside the
    query/key scale, so the seed is a block: the per-seed differences are the independent units
    (:func:`attnrank.analysis.stats.mean_ci`; ``n`` counts seeds with both runs finite). ``p`` is the two-sided
    one-sample t-test p of the differences (NaN when they are all equal).
    """
    from scipy import stats as sps

    diff = _per_seed(runs, column, cell, base)
    e = stats.mean_ci(diff)
    p = float(sps.ttest_1samp(diff, 0.0).pvalue) if len(diff) >= 2 and np.ptp(diff) > 0 else float("nan")
    return Estimate(
        e.value,
        e.low,
        e.high,
        e.n,
        f"mean of per-seed differences {cell} - {base}, Student-t interval",
        e.confidence,
        p,
    )


def _per_seed(runs: pd.DataFrame, column: str, cell: str, base: str) -> np.ndarray:
    pick = lambda c: runs[runs.cell == c].set_index("seed")[column].astype(float)
    return (pick(cell) - pick(base)).dropna().sort_index().to_numpy()


def causal_rule(
    runs: pd.DataFrame, column: str = "final_val_loss", *, effect: float = CAUSAL_EFFECT, archs=None
) -> SweepVerdict:
    """Does temperature act on the loss through the initial logit scale (rank), or the step size?

    Args:
        runs: one row per run with ``arch``, ``seed``, ``cell`` (:data:`attnrank.sections.causal.CELLS`:
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

    The claim is made for every architecture (:func:`attnrank.analysis.verdicts.combine`). ``parts`` holds
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
    for a in archs or sorted(d.arch.unique()):
        da = d[d.arch == a]
        empty = [c for c in ("stock", "init", "lr", "twin", "tau") if not (da.cell == c).any()]
        if empty:
            raise ConfigError("runs", f"no runs with a finite {column} in cells {empty} for arch {a!r}")
        parts = {
            "temperature": paired_difference(da, column, "tau", "stock"),
            **{c: paired_difference(da, column, c, "stock") for c in ("init", "lr", "twin")},
            "twin_gap": paired_difference(da, column, "tau", "twin"),
        }
        temp = parts["temperature"]
        sign = 1.0 if temp.value >= 0 else -1.0
        raw = paired_difference(da, column, "init", "lr")
        lo, hi = sorted((sign * raw.low, sign * raw.high))
        est = Estimate(
            sign * raw.value,
            lo,
            hi,
            raw.n,
            raw.method + f"; sign of the temperature effect {sign:+.0f}",
            raw.confidence,
            raw.p,
        )
        diff = _per_seed(da, column, "init", "lr")
        spread = float(diff.std(ddof=1)) if len(diff) >= 2 else float("nan")
        # seeds for the paired test: a two-sample t test with spread sd/sqrt(2) per arm has the same
        # noncentrality (its degrees of freedom differ a little)
        v = (
            _judge_t(est, effect, spread / math.sqrt(2))
            if math.isfinite(spread) and spread > 0
            else judge(est, 0.0, "above")
        )
        v = replace(v, needed_unit="seeds") if v.needed is not None else v
        if verdicts.classify(temp, 0.0, "above") == INCONCLUSIVE:
            v = replace(v, status=INCONCLUSIVE)
        out[a] = ArchResult(v, None, spread, parts)
    return SweepVerdict(combine(r.verdict.status for r in out.values()) if out else INCONCLUSIVE, out, len(d))


def rank_loss_rule(
    runs: pd.DataFrame,
    measure: str,
    *,
    outcome: str = "final_val_loss",
    effect: float = CAUSAL_EFFECT,
    archs=None,
) -> SweepVerdict:
    """Claim (ii) at a fixed temperature: does a higher initial rank, moved without the temperature, lower the loss?

    The rule of the loss chapter since 2026-12-07 (versions 4 to 6). It reads two cells (versions 5 and 6:
    :func:`attnrank.runs.experiments.loss_runs`, at the stock training conditions; version 4: the causal design's),
    both at ``tau = 1`` and trained alike: ``stock``, and ``init``, whose query/key weights start scaled by ``s``
    (version 6: 0.5; versions 4 and 5: 10), with the step size unchanged.
    The initial rank differs between them by design, not by seed-to-seed variation.

    Args:
        runs: one row per run with ``arch``, ``seed``, ``cell`` (:data:`attnrank.runs.experiments.CELLS`),
            ``initial_<measure>`` and ``outcome``; a NaN (a failed run) leaves its seed's pair out.
        measure: the rank measure (``initial_<measure>`` is read).
        effect: the loss difference (nats) whose seeds are stated when a case is unresolved.
        archs: the models the claim is tested on (None: those in ``runs``); a model without runs in both cells is
            *inconclusive at this scale* (the design did not train it), with no estimate.

    Rule, per architecture, each difference paired by seed (:func:`paired_difference`):

    1. the exposure, initial rank ``init - stock``: if its 95% interval contains 0 the design did not move the rank,
       and the case is *inconclusive at this scale*;
    2. otherwise, with ``d`` its sign, the statistic ``-d * (loss(init) - loss(stock))``, the loss the higher-rank
       cell saves (nats): *supported* if its interval lies above 0, *not supported* if below 0, else inconclusive
       at this scale (with the seeds that would resolve ``effect`` at the observed spread).

    The claim's status is :func:`attnrank.analysis.verdicts.combine` over ``archs``. ``parts`` holds ``rank`` (the
    exposure) and ``loss`` (``init - stock`` in ``outcome``); ``spread`` is the standard deviation of the per-seed
    statistic.

    Raises:
        ConfigError: naming ``runs`` for a missing column.
    """
    ini = f"initial_{measure}"
    _need(runs, ("arch", "seed", "cell", ini, outcome))
    d = runs[np.isfinite(runs[outcome].astype(float)) & np.isfinite(runs[ini].astype(float))]
    out = {}
    for a in archs or sorted(d.arch.unique()):
        da = d[d.arch == a]
        if not ((da.cell == "stock").any() and (da.cell == "init").any()):
            none = Estimate(math.nan, math.nan, math.nan, 0, "no runs of both cells")
            out[a] = ArchResult(judge(none, 0.0, "above"), None, math.nan, {})
            continue
        rank = paired_difference(da, ini, "init", "stock")
        loss = paired_difference(da, outcome, "init", "stock")
        sign = 1.0 if rank.value >= 0 else -1.0
        lo, hi = sorted((-sign * loss.low, -sign * loss.high))
        est = Estimate(
            -sign * loss.value,
            lo,
            hi,
            loss.n,
            loss.method + "; oriented to the higher-rank cell",
            loss.confidence,
            loss.p,
        )
        per_seed = -sign * _per_seed(da, outcome, "init", "stock")
        spread = float(per_seed.std(ddof=1)) if len(per_seed) >= 2 else math.nan
        v = (
            _judge_t(est, effect, spread / math.sqrt(2))
            if math.isfinite(spread) and spread > 0
            else judge(est, 0.0, "above")
        )
        v = replace(v, needed_unit="seeds") if v.needed is not None else v
        if not rank.excludes_zero:
            v = replace(v, status=INCONCLUSIVE)
        out[a] = ArchResult(v, None, spread, {"rank": rank, "loss": loss})
    return SweepVerdict(combine(r.verdict.status for r in out.values()) if out else INCONCLUSIVE, out, len(d))


# ------------------------------------------------------------------------- the learned gate
@dataclass(frozen=True)
class LearnedGate:
    """A verdict on trained models after the learned gate (:func:`learned_gate`).

    Attributes:
        status: the claim's status after the gate (one of :data:`attnrank.analysis.verdicts.VERDICTS`).
        ungated: the status the rule itself reached.
        gaps: ``{arch: gap}``, the largest (worst) final validation loss minus bigram count model of the
            architecture's reference runs (nats per token; negative: below the bigram; NaN: no complete run).
        not_learned: the architectures (sorted) whose case was set to inconclusive at this scale.
        margin: the margin the gate applied (nats).
        gains: ``{arch: gain}``, the smallest attention ablation gain of the reference runs (nats), when the
            gate read one.
        worth: the attention worth the gate asked for (nats; 0 when it read no gains).
    """

    status: str
    ungated: str
    gaps: dict
    not_learned: tuple
    margin: float
    gains: dict = field(default_factory=dict)
    worth: float = 0.0

    @property
    def changed(self) -> bool:
        """Whether the gate changed the claim's status."""
        return self.status != self.ungated


def _arch_of(key, archs) -> str:
    if isinstance(key, str):
        found = [key] if key in archs else []
    else:
        found = [k for k in key if isinstance(k, str) and k in archs]
    if len(found) != 1:
        raise ConfigError("parts", f"key {key!r} names no architecture of the gaps {sorted(archs)}")
    return found[0]


def learned_gate(
    parts: dict, gaps: dict, gains: dict | None = None, *, margin: float = LEARNED_MARGIN, worth: float = LEARNED_WORTH
) -> LearnedGate:
    """Every case of a verdict on trained models counts only where the models have learned.

    A model whose validation loss is no better than a bigram count model has not yet started to use its
    context, so a rule's statistics on it say nothing about trained transformers. Rule (added on 2026-12-02,
    after the default profile's regime was known; see the deviations appendix): an architecture has learned when ``gaps[arch] < -margin``; each part of the
    verdict on an architecture that has not learned is set to inconclusive at this scale, and the claim's
    status is :func:`attnrank.analysis.verdicts.combine` of the parts again. A not-supported part on a model that has
    learned still decides the claim.

    Args:
        parts: the rule's per-case statuses, ``{key: status}``; a key is an architecture (``"modernbert"``) or a
            tuple holding one (``("stable", "modernbert")``, ``("gpt2", 64)``).
        gaps: ``{arch: nats}``, the worst final validation loss minus bigram count model of each architecture's
            reference runs (:func:`attnrank.analysis.baselines.bigram_gaps`); NaN counts as not learned.
        gains: ``{arch: nats}``, the smallest attention ablation gain of those runs
            (:func:`attnrank.analysis.baselines.reference_gains` with ``worst=True``); ``None``: not read (only the gap
            decides). NaN counts as not learned.
        margin: nats below the bigram every reference run must reach (:data:`LEARNED_MARGIN`).
        worth: nats attention must be worth in every reference run (:data:`LEARNED_WORTH`), when ``gains``.

    Raises:
        ConfigError: naming ``parts`` when it is empty or a key names no architecture of ``gaps``, ``margin``
        when it is negative or not finite, or ``status`` for a status outside the verdicts.
    """
    if not parts:
        raise ConfigError("parts", "got no parts; a gate needs the rule's per-case statuses")
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not math.isfinite(margin) or margin < 0:
        raise ConfigError("margin", f"got {margin!r}; expected a finite number of nats >= 0")
    learned = {a: bool(math.isfinite(float(g)) and float(g) <= -margin + 1e-9) for a, g in gaps.items()}
    if gains is not None:
        learned = {a: ok and bool(float(gains.get(a, math.nan)) >= worth - 1e-9) for a, ok in learned.items()}
    gated = {}
    for key, status in parts.items():
        arch = _arch_of(key, learned)
        gated[key] = status if learned[arch] else INCONCLUSIVE
    used = sorted({_arch_of(k, learned) for k in parts})
    return LearnedGate(
        combine(gated.values()),
        combine(parts.values()),
        {a: float(gaps[a]) for a in used},
        tuple(a for a in used if not learned[a]),
        float(margin),
        {a: float(gains.get(a, math.nan)) for a in used} if gains is not None else {},
        float(worth) if gains is not None else 0.0,
    )
