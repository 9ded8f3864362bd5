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
* :func:`protocol_rule` - the study's protocol (4 + 4 examples, one run per temperature, absolute
  1e-8 rank): how often a random draw flips its conclusion, and whether it agrees with ours.
* :func:`set_early_rule` - the rank at an early probe step predicts the final rank (Spearman's rho
  over runs against a pre-registered threshold, :func:`attnrank.protocol.rank_by_step`).
* :func:`seq_len_rule` - generality in sequence length: the trained rank stays below the study's
  bound ``(1 - 1/e) n + 1`` at every ``n`` (``final_<measure>``, ``max_len``).
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
    "RHO_MIN",
    "LOSS_EFFECT",
    "DynamicsResult",
    "LossResult",
    "dynamics_rule",
    "loss_rule",
    "SweepVerdict",
    "ArchResult",
    "peak_shape",
    "fmt_setting",
    "two_point",
    "temperature_rank",
    "temperature_loss",
    "lever_comparison",
    "grid_text",
    "grid_interval",
    "needed_text",
    "verdict_text",
    "temperature_table",
    "temperature_loss_table",
    "lever_table",
    "lever_effects",
    "direction_text",
    "correlation_table",
    "relative_change",
    "stability_table",
    "stability_rows",
    "convergence_speed",
    "needed_runs",
    "dynamics_summary",
    "loss_summary",
    "temperature_summary",
    "temperature_loss_summary",
    "lever_summary",
    "correlation_notes",
    "lever_texts",
    "direction_note",
    "MAX_FLIP",
    "SET_EARLY_RHO",
    "EARLY_FRACTION",
    "ProtocolResult",
    "protocol_rule",
    "SetEarlyResult",
    "set_early_rule",
    "SeqLenResult",
    "seq_len_rule",
    "CAUSAL_EFFECT",
    "paired_difference",
    "causal_rule",
    "causal_text",
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


def _by_arch(runs: pd.DataFrame, x_col: str, y_col: str, res, *, seed, n_resamples):
    """Per architecture (sorted): Spearman's rho of ``x_col`` and ``y_col`` across runs and within
    temperatures, stored in ``res.rho[arch]`` and ``res.within[arch]``; yields ``(arch, x, y)``."""
    for a in sorted(runs.arch.unique()):
        d = runs[runs.arch == a]
        x, y = d[x_col].to_numpy(float), d[y_col].to_numpy(float)
        res.rho[a] = stats.spearman(x, y, seed=seed, n_resamples=n_resamples)
        res.within[a] = stats.spearman_within(x, y, d.tau.to_numpy(float), seed=seed, n_resamples=n_resamples)
        yield a, x, y


def dynamics_rule(
    runs: pd.DataFrame,
    measure: str,
    *,
    tolerance: float = 0.1,
    rho_min: float = RHO_MIN,
    seed: int = 0,
    n_resamples: int = stats.N_RESAMPLES,
) -> DynamicsResult:
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
    for a, x, y in _by_arch(runs, ini, fin, res, seed=seed, n_resamples=n_resamples):
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


def loss_rule(
    runs: pd.DataFrame,
    measure: str,
    *,
    outcome: str = "final_val_loss",
    effect: float = LOSS_EFFECT,
    seed: int = 0,
    n_resamples: int = stats.N_RESAMPLES,
) -> LossResult:
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
    for a, _, _ in _by_arch(runs, ini, outcome, res, seed=seed, n_resamples=n_resamples):
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
    effect: float = 1.0,
    seed: int = 0,
    n_resamples: int = stats.N_RESAMPLES,
    archs=None,
) -> SweepVerdict:
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
    for a in archs or sorted(d.arch.unique()):
        da = d[d.arch == a]
        x, y = da.tau.to_numpy(float), da[column].to_numpy(float)
        est = two_point(y[np.isclose(x, cold, rtol=1e-9)], y[np.isclose(x, stock, rtol=1e-9)], seed=seed)
        spread = stats.pooled_sd(y, x)
        v = _judge_t(est, effect, spread)
        peak = stats.peak_location(x, y, n_resamples=n_resamples, seed=seed)
        out[a] = ArchResult(v, peak, peak_shape(peak, x), spread)
    return SweepVerdict(combine(r.verdict.status for r in out.values()) if out else INCONCLUSIVE, out, len(d))


def temperature_loss(
    runs: pd.DataFrame,
    column: str = "final_val_loss",
    *,
    effect: float = 0.5,
    seed: int = 0,
    n_resamples: int = stats.N_RESAMPLES,
    archs=None,
) -> SweepVerdict:
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
    for a in archs or sorted(d.arch.unique()):
        da = d[d.arch == a]
        x, y = da.tau.to_numpy(float), da[column].to_numpy(float)
        est = stats.spearman(np.log(x), y, n_resamples=n_resamples, seed=seed)
        v = judge(est, 0.0, "above", effect=effect)
        best = stats.peak_location(x, y, n_resamples=n_resamples, seed=seed, maximum=False)
        out[a] = ArchResult(v, best, peak_shape(best, x).replace("peak", "minimum"), stats.pooled_sd(y, x))
    return SweepVerdict(combine(r.verdict.status for r in out.values()) if out else INCONCLUSIVE, out, len(d))


def lever_comparison(
    tau_runs: pd.DataFrame,
    hd_runs: pd.DataFrame,
    column: str,
    *,
    effect: float = 1.0,
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
        out[a] = ArchResult(v, None, "", spread, parts)
    return SweepVerdict(combine(r.verdict.status for r in out.values()) if out else INCONCLUSIVE, out, len(t) + len(h))


# ------------------------------------------------------------------ text and tables of the verdicts
def grid_text(values) -> str:
    """A grid in words: ``"11 values a factor of about 4 apart"`` (geometric step), or ``"one value"``."""
    g = sorted(float(v) for v in values)
    if len(g) < 2:
        return "one value"
    return f"{len(g)} values a factor of about {(g[-1] / g[0]) ** (1 / (len(g) - 1)):.0f} apart"


def grid_interval(e: Estimate, *, words: bool = False, note: str = "") -> str:
    """A grid location with its interval on the grid (:func:`attnrank.stats.peak_location`):
    ``"0.01 [0.001, 0.1]"``, or with ``words=True`` ``"0.01 (95% interval on the grid 0.001 to 0.1)"``
    (``note`` is added inside the parentheses after a semicolon)."""
    if words:
        return (
            f"{fmt_setting(e.value)} ({e.confidence:.0%} interval on the grid {fmt_setting(e.low)} to "
            f"{fmt_setting(e.high)}{'; ' + note if note else ''})"
        )
    return f"{fmt_setting(e.value)} [{fmt_setting(e.low)}, {fmt_setting(e.high)}]"


def needed_text(v: Verdict) -> str:
    """The runs a verdict needs, for prose: ``"12"`` or ``"none (resolved)"`` when it needs none."""
    return str(v.needed) if v.needed is not None else "none (resolved)"


def verdict_text(r: ArchResult, what: str, *, digits: int = 2, effect: float | None = None) -> str:
    """One architecture's estimate for a verdict summary: ``"<what> <estimate> runs"``, and, when the
    verdict is not supported and more runs would resolve it, ``" (about N <unit> would resolve the
    pre-registered effect)"`` (``effect`` given: ``"... a difference of <effect>"``)."""
    v = r.verdict
    s = f"{what} {v.estimate.text(digits)} runs"
    if v.status != "supported" and v.needed is not None:
        target = "the pre-registered effect" if effect is None else f"a difference of {effect:g}"
        s += f" (about {v.needed} {v.needed_unit} would resolve {target})"
    return s


def temperature_table(rank_v: dict, cold: float) -> pd.DataFrame:
    """The rank rule of :func:`temperature_rank` with every measure, one row per measure and architecture:
    the cold-minus-stock difference (Welch-t interval), its exact p, the runs, the peak on the grid and the status."""
    rows = [
        {
            "measure": m,
            "arch": a,
            f"rank at tau = {fmt_setting(cold)} minus tau = 1 [95% CI]": r.verdict.estimate.text(2, n=False),
            "exact p": round(r.verdict.estimate.p, 3),
            "runs": r.verdict.estimate.n,
            "peak at tau [95% CI]": grid_interval(r.shape),
            "status": r.verdict.status,
        }
        for m, v in rank_v.items()
        for a, r in v.arch.items()
    ]
    return pd.DataFrame(rows).set_index(["measure", "arch"])


def temperature_loss_table(loss_v: SweepVerdict) -> pd.DataFrame:
    """The loss rule of :func:`temperature_loss`, one row per architecture."""
    return pd.DataFrame(
        [
            {
                "arch": a,
                "rho(log tau, final loss) [95% CI]": r.verdict.estimate.text(2, n=False),
                "runs": r.verdict.estimate.n,
                "lowest mean loss at tau [95% CI]": grid_interval(r.shape),
                "seed sd (nats)": round(r.spread, 4),
                "status": r.verdict.status,
            }
            for a, r in loss_v.arch.items()
        ]
    ).set_index("arch")


def lever_table(lever_v: dict) -> pd.DataFrame:
    """The rule of :func:`lever_comparison` with every measure, one row per measure and architecture."""
    return pd.DataFrame(
        [
            {
                "measure": m,
                "arch": a,
                "τ range": r.parts["tau_range"].text(2, n=False),
                "d_head range": r.parts["head_dim_range"].text(2, n=False),
                "d_head: largest − smallest": r.parts["head_dim_change"].text(2, n=False),
                "difference of ranges": r.verdict.estimate.text(2, n=False),
                "runs": r.verdict.estimate.n,
                "status": r.verdict.status,
            }
            for m, v in lever_v.items()
            for a, r in v.arch.items()
        ]
    ).set_index(["measure", "arch"])


#: The rows of :func:`lever_effects`: each lever's range and their difference.
LEVERS = {
    "tau_range": "τ over its grid",
    "head_dim_range": "d_head over its grid (τ = 1)",
    "diff": "difference (τ − d_head)",
}


def lever_effects(panels: dict) -> pd.DataFrame:
    """The effect sizes of :func:`lever_comparison` for a forest plot (:func:`attnrank.plots.sweeps.effect_forest`).

    ``panels``: ``{panel title: SweepVerdict}``; one row per panel, architecture and lever
    (:data:`LEVERS`) with ``estimate, low, high, n``.
    """
    rows = []
    for panel, v in panels.items():
        for a, r in v.arch.items():
            for key, lab in LEVERS.items():
                e = r.verdict.estimate if key == "diff" else r.parts[key]
                rows.append(
                    {
                        "panel": panel,
                        "arch": a,
                        "lever": lab,
                        "estimate": e.value,
                        "low": e.low,
                        "high": e.high,
                        "n": e.n,
                    }
                )
    return pd.DataFrame(rows)


def direction_text(change: Estimate, means: pd.Series) -> str:
    """How a mean moves along a grid, in words: ``"falls from 3.10 at d_head = 4 to 2.50 at d_head = 32
    (change ...)"``; ``means`` is indexed by the head dimension, ``change`` the signed largest-minus-smallest."""
    lo, hi = int(means.index.min()), int(means.index.max())
    word = "falls" if change.high < 0 else "rises" if change.low > 0 else "changes (direction not resolved)"
    return f"{word} from {means.loc[lo]:.2f} at d_head = {lo} to {means.loc[hi]:.2f} at d_head = {hi} (change {change.text(2)})"


def lever_texts(lv: SweepVerdict, lv_min: SweepVerdict, loss_lv: SweepVerdict, means: dict) -> dict:
    """The numbers the head-dimension chapter pastes from :func:`lever_comparison`, per architecture:
    ``{f"{name}_{arch}": text or number}`` with the ranges of each lever (``tau_range``, ``hd_range``; at the
    lowest temperature ``hd_range_min``), their difference (``diff``), the loss ranges (``loss_tau_range``,
    ``loss_hd_range``), the direction of the head-dimension change (``direction``, :func:`direction_text`
    with ``means[arch]``, the mean per head dimension) and the seed spread (``spread``)."""
    out = {}
    for a, r in lv.arch.items():
        out.update(
            {
                f"tau_range_{a}": r.parts["tau_range"].text(2),
                f"hd_range_{a}": r.parts["head_dim_range"].text(2),
                f"hd_range_min_{a}": lv_min[a].parts["head_dim_range"].text(2),
                f"diff_{a}": r.verdict.estimate.text(2),
                f"loss_tau_range_{a}": loss_lv[a].parts["tau_range"].text(3),
                f"loss_hd_range_{a}": loss_lv[a].parts["head_dim_range"].text(3),
                f"direction_{a}": direction_text(r.parts["head_dim_change"], means[a]),
                f"spread_{a}": float(r.spread),
            }
        )
    return out


def direction_note(lv: SweepVerdict, arch_labels: dict) -> str:
    """Whether the measured rank follows the staircase bound upward with the head dimension, in words, from the
    signed largest-minus-smallest change of :func:`lever_comparison` (``parts["head_dim_change"]``)."""
    falls = [a for a, r in lv.arch.items() if r.parts["head_dim_change"].high < 0]
    rises = [a for a, r in lv.arch.items() if r.parts["head_dim_change"].low > 0]
    if not rises:
        return "at this width the measured rank does not follow the staircase bound upward"
    return (
        "the measured rank rises with the head dimension for "
        + " and ".join(arch_labels[a] for a in rises)
        + ("" if not falls else ", and falls for " + " and ".join(arch_labels[a] for a in falls))
    )


def correlation_table(results: dict, labels: dict, arch_labels: dict, outcome: str | None = None) -> pd.DataFrame:
    """The correlations of :func:`dynamics_rule` or :func:`loss_rule` with every measure, one row per
    measure and architecture: Spearman's rho across runs and within temperatures (95% intervals), the
    stratified-permutation p within temperatures and the runs. ``labels``: measure labels;
    ``outcome``: a label for an ``outcome`` column (left out when None)."""
    return pd.DataFrame(
        [
            {
                "measure": labels[m],
                **({"outcome": outcome} if outcome else {}),
                "arch": arch_labels[a],
                "Spearman ρ [95% CI]": r.rho[a].text(n=False),
                "within τ: ρ [95% CI]": r.within[a].text(n=False),
                "p (within τ)": f"{r.within[a].p:.3f}",
                "runs": r.rho[a].n,
            }
            for m, r in results.items()
            for a in r.rho
        ]
    )


def correlation_notes(res) -> dict:
    """Per architecture, the text drawn in a scatter panel for :func:`dynamics_rule` or :func:`loss_rule`:
    Spearman's rho across runs, within temperatures and the number of runs, on three lines."""
    return {
        a: f"ρ = {res.rho[a].text(n=False)}\nwithin τ: ρ = {res.within[a].text(n=False)}\nn = {res.rho[a].n} runs"
        for a in res.rho
    }


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


def stability_rows(
    results: dict, shares: pd.DataFrame, tolerance: float, labels: dict, arch_labels: dict
) -> pd.DataFrame:
    """The stability half of :func:`dynamics_rule` with every measure, for display: per measure and
    architecture the median relative change (95% order-statistic interval), the shares of
    :func:`stability_table` as percentages and the runs."""
    return pd.DataFrame(
        [
            {
                "measure": labels[m],
                "arch": arch_labels[a],
                "median Δrel [95% CI]": r.change[a].text(0, n=False, percent=True),
                f"stable (Δrel ≤ {tolerance:.0%})": f"{shares.loc[(m, a), 'share_stable']:.0%}",
                "rank went up": f"{shares.loc[(m, a), 'share_increased']:.0%}",
                "largest Δrel": f"{shares.loc[(m, a), 'largest']:.0%}",
                "runs": r.change[a].n,
            }
            for m, r in results.items()
            for a in r.change
        ]
    )


def convergence_speed(runs: pd.DataFrame, train_log: pd.DataFrame, *, quantile: float, smooth: int):
    """Steps each run needs to reach a loss level set from the data, with censoring.

    The level of an architecture is the ``quantile`` of the final training losses (mean of the last
    ``smooth`` logged values) of its complete runs; a run's speed is the first step at which its
    training loss, averaged over ``smooth`` consecutive logged values, is at or below the level
    (:func:`attnrank.stats.steps_to_level`). A complete run that never gets there is censored and
    placed at ``max_steps + log_every`` ("later than every observed step").

    Returns ``(runs, levels, censored_at)``: a copy of ``runs`` with ``final_train_loss``,
    ``steps_to_level`` (NaN: never), ``censored`` and ``steps_plot``; ``{arch: level}``; the step
    given to censored runs.
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
    censored_at = int(runs.max_steps.max()) + int(runs.log_every.max())
    arch = runs.set_index("key").arch
    steps = {k: stats.steps_to_level(g, levels[arch[k]], smooth=smooth) for k, g in train_log.groupby("key")}
    runs["steps_to_level"] = runs.key.map(steps)
    runs["censored"] = ok & runs.steps_to_level.isna()
    runs["steps_plot"] = runs.steps_to_level.fillna(censored_at)
    return runs, levels, censored_at


def needed_runs(judged: dict, arch_labels: dict, statuses: dict, *, prefix: str = "") -> list[str]:
    """``["BERT (MLM) <prefix>12", ...]``: the runs each not-supported part of a verdict needs (``judged``:
    ``{arch: Verdict}``, ``statuses``: ``{arch: status}``)."""
    return [
        f"{arch_labels[a]} {prefix}{v.needed}" for a, v in judged.items() if statuses[a] != "supported" and v.needed
    ]


# ------------------------------------------------------------------ the verdict summaries of the chapters
def dynamics_summary(
    res: DynamicsResult, *, label: str, arch_labels: dict, n_seeds: int, tolerance: float, regime: str
) -> str:
    """The summary of the dynamics verdict (:func:`dynamics_rule` on the primary measure ``label``): the
    correlation and the median relative change per architecture, each half's status, the within-temperature
    correlation, the runs a not-supported predictive half needs and the loss ``regime``."""
    needed = [
        f"{arch_labels[a]} {v.needed}"
        for (h, a), v in res.judged.items()
        if h == "predictive" and v.status != "supported" and v.needed
    ]
    return (
        f"On the {label}, across {', '.join(f'{res.rho[a].n} {arch_labels[a]}' for a in res.rho)} runs "
        f"({n_seeds} seeds per setting), initial and final mean rank have Spearman rho {res.rho['bert'].text(n=False)} "
        f"(BERT) and {res.rho['gpt2'].text(n=False)} (GPT-2), and the median relative change is "
        f"{res.change['bert'].text(0, n=False, percent=True)} (BERT) and "
        f"{res.change['gpt2'].text(0, n=False, percent=True)} (GPT-2) against a {tolerance:.0%} tolerance: "
        + "; ".join(f"{h} half for {arch_labels[a]}: {v}" for (h, a), v in res.halves.items())
        + ". "
        f"Within temperatures the correlation is {res.within['bert'].text(n=False)} (BERT, p = {res.within['bert'].p:.2f}) "
        f"and {res.within['gpt2'].text(n=False)} (GPT-2, p = {res.within['gpt2'].p:.2f}). "
        + (f"Runs needed to resolve a correlation of {RHO_MIN:g}: {', '.join(needed)}. " if needed else "")
        + f"Regime: {regime}."
    )


def loss_summary(res: LossResult, *, label: str, arch_labels: dict, n_seeds: int, regime: str) -> str:
    """The summary of the loss verdict (:func:`loss_rule` on the primary measure ``label``): the correlation
    across runs and within temperatures per architecture, their statuses, the runs a not-supported
    architecture needs and the loss ``regime``."""
    archs = list(res.rho)
    needed = needed_runs(res.judged, arch_labels, res.per_arch, prefix="about ")
    return (
        f"On the {label}, across {', '.join(f'{res.rho[a].n} {arch_labels[a]}' for a in archs)} runs "
        f"({n_seeds} seeds per setting), initial mean rank and final validation loss have Spearman rho "
        f"{res.rho['bert'].text(n=False)} (BERT) and {res.rho['gpt2'].text(n=False)} (GPT-2); within temperatures "
        f"(tau as a fixed effect) rho is {res.within['bert'].text(n=False)} (BERT, p = {res.within['bert'].p:.2f}) and "
        f"{res.within['gpt2'].text(n=False)} (GPT-2, p = {res.within['gpt2'].p:.2f}): "
        + ", ".join(f"{res.per_arch[a]} for {arch_labels[a]}" for a in archs)
        + ". "
        + (
            f"Runs needed to resolve a within-temperature rho of {LOSS_EFFECT:g}".replace("of -", "of \u2212")
            + f": {', '.join(needed)}. "
            if needed
            else ""
        )
        + f"Regime: {regime}."
    )


def _shape(r: ArchResult) -> str:
    return r.shape_text.split(" (")[0]


def temperature_summary(rv: SweepVerdict, *, label: str, cold: float, profile: str, n_seeds: int) -> str:
    """The summary of the rank verdict of :func:`temperature_rank` on the primary measure ``label``."""
    return (
        f"On the initial {label}, the mean at tau = {fmt_setting(cold)} minus the mean at tau = 1 (Welch-t 95% "
        f"interval) is {verdict_text(rv['bert'], 'for BERT')} and {verdict_text(rv['gpt2'], 'for GPT-2')}; the mean "
        f"initial rank peaks at tau = {fmt_setting(rv['bert'].shape.value)} for BERT ({_shape(rv['bert'])}) and at "
        f"tau = {fmt_setting(rv['gpt2'].shape.value)} for GPT-2 ({_shape(rv['gpt2'])}). {profile} profile, "
        f"{n_seeds} seeds per temperature, {rv.n_runs} runs."
    )


def temperature_loss_summary(loss_v: SweepVerdict, *, profile: str, n_seeds: int) -> str:
    """The summary of the loss verdict of :func:`temperature_loss`."""
    return (
        f"Spearman's rho of log tau and the final validation loss (BCa bootstrap over runs) is "
        f"{verdict_text(loss_v['bert'], 'for BERT')} and {verdict_text(loss_v['gpt2'], 'for GPT-2')}; a negative "
        f"rho means a colder softmax trains worse. The lowest mean final loss is at tau = "
        f"{fmt_setting(loss_v['bert'].shape.value)} (BERT) and tau = {fmt_setting(loss_v['gpt2'].shape.value)} "
        f"(GPT-2). {profile} profile, {n_seeds} seeds per temperature, {loss_v.n_runs} completed runs."
    )


def lever_summary(
    lv: SweepVerdict, *, label: str, effect: float, profile: str, n_seeds: int, head_dims, hidden: int
) -> str:
    """The summary of the verdict of :func:`lever_comparison` on the primary measure ``label``."""

    def arch_text(r: ArchResult) -> str:
        s = (
            f"the temperature moves the mean initial {label} by {r.parts['tau_range'].text(2)} runs over its grid "
            f"and the head dimension by {r.parts['head_dim_range'].text(2)} runs (difference "
            f"{r.verdict.estimate.text(2, n=False)}"
        )
        if r.verdict.status != "supported" and r.verdict.needed is not None:
            s += f"; about {r.verdict.needed} {r.verdict.needed_unit} would resolve a difference of {effect:g}"
        return s + ")"

    return (
        f"Over the ranges a user can set (range of the seed means, 95% stratified-bootstrap intervals), for BERT "
        f"{arch_text(lv['bert'])}, and for GPT-2 {arch_text(lv['gpt2'])}. {profile} profile, {n_seeds} seeds per "
        f"setting, head dimensions {', '.join(map(fmt_setting, head_dims))} at hidden size {hidden}."
    )


#: The protocol rule: the study's four-plus-four-example conclusion is dependable if at most this
#: share of random draws flips it.
MAX_FLIP = 0.05
#: The "set early" rule: the rank at step k predicts the final rank when Spearman's rho clears this.
SET_EARLY_RHO = 0.9
#: The "set early" rule: "early" is at most this fraction of the training steps.
EARLY_FRACTION = 0.1


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
            reference's (:func:`attnrank.protocol.flip_rate` at the final step).
        reference: ``{arch: float}``, the study's statistic (stock minus cold) with every run and
            every recorded sequence (:func:`attnrank.protocol.study_reference`).
        ours: ``{arch: Estimate}``, the same difference under our protocol (primary measure, every
            probe sequence, every seed: :func:`two_point`).
        max_flip: the largest acceptable flip rate.

    Per architecture two parts:

    * *stable*: the flip rate's interval lies below ``max_flip`` (supported), wholly above it (not
      supported), else inconclusive (:func:`attnrank.verdicts.classify`);
    * *agrees*: when our interval excludes 0, supported if its sign is the reference's and not
      supported if it is the opposite (a reference of exactly 0 against a resolved difference
      disagrees); inconclusive when our interval includes 0.

    The status is :func:`attnrank.verdicts.combine` over both parts and architectures.

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
    table: pd.DataFrame, *, rho_min: float = SET_EARLY_RHO, early_fraction: float = EARLY_FRACTION
) -> SetEarlyResult:
    """Is the final rank set early in training? Spearman's rho of the rank at step k against the final rank.

    Args:
        table: :func:`attnrank.protocol.rank_by_step` rows (``arch, step, final_step, estimate``).
        rho_min: the correlation the rank at step k must clear.
        early_fraction: "early" is ``step <= early_fraction * final_step``.

    Per architecture, over the early steps in increasing order: supported if some step's interval
    lies wholly above ``rho_min`` (the first such step is reported), not supported if every early
    step's interval lies wholly below it, otherwise inconclusive at this scale (including no early
    step at all). The claim is made for every architecture (:func:`attnrank.verdicts.combine`).

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
        early = d[d.step <= res.limit[a]]
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
    res.status = combine(res.per_arch.values()) if res.per_arch else INCONCLUSIVE
    return res


# ------------------------------------------------------------------------- sequence length
@dataclass(frozen=True)
class SeqLenResult:
    """The sequence-length rule on one measure.

    ``status`` combines the cases (:func:`attnrank.verdicts.combine`); ``cases`` maps
    ``(arch, n)`` to the classified :class:`~attnrank.verdicts.Verdict` of the trained rank
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
    ``final_<measure>`` with its 95% Student-t interval (:func:`attnrank.stats.mean_ci`) is classified
    against ``(1 - 1/e) n + 1`` with ``"below"`` predicted (:func:`attnrank.verdicts.classify`):
    supported if the whole interval lies below the bound, not supported if it lies wholly above it,
    inconclusive otherwise (one seed: no interval). The claim is made for every case, so the
    verdict is :func:`attnrank.verdicts.combine` of them.

    Raises:
        ConfigError: naming ``runs`` for missing columns or no complete run, ``measure`` for an
        unknown measure.
    """
    from .rank import check_measures
    from .theory import study_bound

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
    (:func:`attnrank.stats.mean_ci`; ``n`` counts seeds with both runs finite). ``p`` is the two-sided
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
        out[a] = ArchResult(v, None, "", spread, parts)
    return SweepVerdict(combine(r.verdict.status for r in out.values()) if out else INCONCLUSIVE, out, len(d))


def causal_text(result: SweepVerdict, arch: str, digits: int = 4) -> str:
    """One architecture's part of :func:`causal_rule` in words, for a verdict's summary: the
    temperature's effect, each single factor's, the oriented difference, the status and, when not
    supported, the seeds that would resolve :data:`CAUSAL_EFFECT`."""
    r, p = result[arch], result[arch].parts
    name = {"bert": "BERT", "gpt2": "GPT-2"}.get(arch, arch)
    txt = (
        f"{name}: temperature effect {p['temperature'].text(digits)} seeds, initial scale alone "
        f"{p['init'].text(digits, n=False)}, step size alone {p['lr'].text(digits, n=False)}, oriented difference "
        f"{r.verdict.estimate.text(digits, n=False)} ({r.verdict.status})"
    )
    if r.verdict.status != "supported" and r.verdict.needed is not None:
        txt += f"; about {r.verdict.needed} {r.verdict.needed_unit} would resolve {_fmt_effect(r.verdict.effect)} nats"
    return txt


def _fmt_effect(x) -> str:
    return "n/a" if x is None else f"{x:g}"
