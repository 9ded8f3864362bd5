"""Temperature and rank, the temperature chapter: the tables and sentences of claim (iii).

The verdicts themselves are :func:`attnrank.rules.temperature_rank` and
:func:`attnrank.rules.temperature_loss`; this module writes where a peak lies in words, the
tables of both rules with every measure, and the verdicts' summaries.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .glossary import fmt_estimate, fmt_setting
from .rules import ArchResult, SweepVerdict
from .stats import Estimate
from .verdicts import Verdict

__all__ = [
    "peak_shape",
    "grid_text",
    "grid_interval",
    "needed_text",
    "verdict_text",
    "temperature_table",
    "temperature_loss_table",
    "temperature_summary",
    "temperature_loss_summary",
    "shape_text",
]


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
    s = f"{what} {fmt_estimate(v.estimate, digits)} runs"
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
            f"rank at tau = {fmt_setting(cold)} minus tau = 1 [95% CI]": fmt_estimate(r.verdict.estimate, 2, n=False),
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
                "rho(log tau, final loss) [95% CI]": fmt_estimate(r.verdict.estimate, 2, n=False),
                "runs": r.verdict.estimate.n,
                "lowest mean loss at tau [95% CI]": grid_interval(r.shape),
                "seed sd (nats)": round(r.spread, 4),
                "status": r.verdict.status,
            }
            for a, r in loss_v.arch.items()
        ]
    ).set_index("arch")


def shape_text(r: ArchResult, *, minimum: bool = False) -> str:
    """Where one architecture's response peaks on its grid, in words (:func:`peak_shape` of ``r.shape``
    on ``r.grid``); ``minimum=True`` for a location of the lowest mean (a loss)."""
    text = peak_shape(r.shape, r.grid) if r.shape is not None else ""
    return text.replace("peak", "minimum") if minimum else text


def _shape(r: ArchResult) -> str:
    return shape_text(r).split(" (")[0]


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
