"""The verdict rule: an :class:`~attnrank.analysis.stats.Estimate` against a pre-registered threshold.

A chapter fixes, before looking at the data, a statistic, a threshold and the side on which the
claim predicts the statistic to lie. Then:

* **supported** - the whole interval lies beyond the threshold on the predicted side;
* **not supported** - the whole interval lies on the other side: the data rule the predicted
  effect out;
* **inconclusive at this scale** - otherwise, including an interval that touches the threshold,
  a missing interval (NaN) and a missing estimate. Too few runs to resolve the effect gives this
  verdict, never "not supported".

The strings are :data:`VERDICTS`. A :class:`Judgement` also carries, when it is unresolved
(inconclusive at this scale), how many independent runs would resolve the pre-registered effect at
the observed spread (:func:`attnrank.analysis.stats.seeds_needed` from the seed spread of a difference of
means, :func:`attnrank.analysis.stats.runs_needed_observed` from the interval of a correlation). A resolved
verdict, supported or not, needs no more runs and carries none.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from ..core.errors import ConfigError, check_choice
from .stats import Estimate, runs_needed_observed, seeds_needed

__all__ = [
    "VERDICTS",
    "SUPPORTED",
    "NOT_SUPPORTED",
    "INCONCLUSIVE",
    "DIRECTIONS",
    "classify",
    "combine",
    "deciding",
    "Judgement",
    "judge",
]

#: The three verdicts a chapter can reach on a claim.
VERDICTS = ("supported", "not supported", "inconclusive at this scale")
SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE = VERDICTS

#: The sides a claim can predict: the statistic lies above or below the threshold.
DIRECTIONS = ("above", "below")


def _check(estimate, threshold, direction) -> float:
    if not isinstance(estimate, Estimate):
        raise ConfigError("estimate", f"got {type(estimate).__name__}; expected an attnrank.analysis.stats.Estimate")
    check_choice("direction", direction, DIRECTIONS)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        raise ConfigError("threshold", f"got {threshold!r}; expected a finite number")
    return float(threshold)


def classify(estimate: Estimate, threshold: float, direction: str) -> str:
    """One of :data:`VERDICTS` for ``estimate`` against a pre-registered threshold.

    Args:
        estimate: the statistic with its interval.
        threshold: the value the claim must clear (for a correlation, usually 0).
        direction: ``"above"`` if the claim predicts the statistic above the threshold, ``"below"``
            if below.

    ``above``: supported iff ``low > threshold``; not supported iff ``high < threshold``; else
    inconclusive at this scale (an interval touching the threshold is inconclusive). ``below`` is
    the mirror image. A non-finite bound or value gives inconclusive at this scale.

    Raises:
        ConfigError: ``direction`` not in :data:`DIRECTIONS`, a non-finite ``threshold``, or an
            ``estimate`` that is not an :class:`~attnrank.analysis.stats.Estimate`.
    """
    t = _check(estimate, threshold, direction)
    lo, hi = estimate.low, estimate.high
    if not (math.isfinite(lo) and math.isfinite(hi) and math.isfinite(estimate.value)):
        return INCONCLUSIVE
    if direction == "below":
        lo, hi, t = -hi, -lo, -t
    if lo > t:
        return SUPPORTED
    if hi < t:
        return NOT_SUPPORTED
    return INCONCLUSIVE


def combine(statuses: Iterable[str]) -> str:
    """Judgement of a claim made for several cases (e.g. both architectures), from each case's verdict.

    Supported if every case is supported; not supported if any case is not supported (the claim was
    made for each); otherwise inconclusive at this scale. An empty list is inconclusive.

    Raises:
        ConfigError: a status not in :data:`VERDICTS`.
    """
    statuses = list(statuses)
    for s in statuses:
        check_choice("status", s, VERDICTS)
    if statuses and all(s == SUPPORTED for s in statuses):
        return SUPPORTED
    if NOT_SUPPORTED in statuses:
        return NOT_SUPPORTED
    return INCONCLUSIVE


def deciding(statuses: dict) -> list:
    """The keys of ``statuses`` (``{case: status}``) whose status decides :func:`combine` of them: every not supported
    case when there is one (any of them rejects the claim), every case when all are supported, else the
    undecided (inconclusive) ones. The numbers a verdict's effect column shows are these cases'."""
    for wanted in (NOT_SUPPORTED, INCONCLUSIVE):
        keys = [k for k, s in statuses.items() if s == wanted]
        if keys and (wanted == NOT_SUPPORTED or NOT_SUPPORTED not in statuses.values()):
            return keys
    return list(statuses)


@dataclass(frozen=True)
class Judgement:
    """A classified estimate: ``status`` (one of :data:`VERDICTS`) and its grounds.

    ``needed`` is the number of independent runs (per arm for a difference of means, in total for a
    correlation) that would resolve the pre-registered ``effect``; ``None`` when not computed and
    whenever the verdict is resolved (supported or not supported).
    """

    status: str
    estimate: Estimate
    threshold: float
    direction: str
    effect: float | None = None
    needed: int | None = None
    needed_unit: str = "runs"


def judge(
    estimate: Estimate,
    threshold: float,
    direction: str,
    *,
    effect: float | None = None,
    spread: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> Judgement:
    """:func:`classify`, plus the runs that would resolve the pre-registered effect when unresolved.

    Args:
        estimate, threshold, direction: as in :func:`classify`.
        effect: the pre-registered effect size, in the estimate's units. With ``spread`` (the
            seed-to-seed standard deviation of one run's outcome) the count is seeds per arm for a
            difference of means (:func:`attnrank.analysis.stats.seeds_needed`); without ``spread``
            ``effect`` is read as a correlation and the count is runs in total, from the spread of
            the estimate's own interval (:func:`attnrank.analysis.stats.runs_needed_observed`). Only an
            inconclusive verdict gets a count: a resolved one needs no more runs.
        alpha, power: the test level and the power for the count.

    Example: ``judge(compare_means(cold, stock), 0.0, "below", effect=0.005, spread=0.0036)`` is
    inconclusive at this scale with 2 seeds per arm, and states that about 9 seeds per arm are needed.
    """
    status = classify(estimate, threshold, direction)
    needed, unit = None, "runs"
    if effect is not None and status == INCONCLUSIVE:
        if spread is not None:
            if math.isfinite(spread) and spread > 0:
                needed, unit = seeds_needed(spread, effect, alpha=alpha, power=power), "seeds per arm"
        else:
            needed = runs_needed_observed(estimate, effect, alpha=alpha, power=power)
    return Judgement(
        status, estimate, float(threshold), direction, None if effect is None else float(effect), needed, unit
    )
