"""The pre-registered rules of the training chapters (``dynamics`` and ``loss``), as functions of a run table.

Each rule takes one row per run (complete runs only) and returns the verdict on one rank measure;
the chapters call it once per measure of :data:`attnrank.rank.MEASURES` (the primary one for the
verdict, every one for the robustness table). All statistics come from :mod:`attnrank.stats`
(bootstrap intervals over runs with canonical row order, so a result depends neither on the row
order nor, beyond Monte Carlo error far below the reported digits, on the bootstrap seed) and the
classification from :mod:`attnrank.verdicts`.

Run tables have the columns ``arch``, ``tau``, ``initial_<measure>`` and ``final_<measure>``
(dynamics) or ``initial_<measure>`` and ``final_val_loss`` (loss).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from . import stats, verdicts
from .errors import ConfigError

__all__ = ["RHO_MIN", "LOSS_EFFECT", "DynamicsResult", "LossResult", "dynamics_rule", "loss_rule"]

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
