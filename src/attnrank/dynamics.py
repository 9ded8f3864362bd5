"""Rank through training, the dynamics chapter: the tables and sentences of claim (i).

The verdict itself is :func:`attnrank.rules.dynamics_rule`; this module writes what the chapter
shows about it (its correlation and stability tables, the text drawn in its scatter panels and
its verdict's summary). The correlation table and panel notes serve the loss chapter too.
"""

from __future__ import annotations

import pandas as pd

from .glossary import fmt_estimate
from .rules import RHO_MIN, DynamicsResult

__all__ = ["correlation_table", "correlation_notes", "stability_rows", "needed_runs", "dynamics_summary"]


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
                "Spearman ρ [95% CI]": fmt_estimate(r.rho[a], n=False),
                "within τ: ρ [95% CI]": fmt_estimate(r.within[a], n=False),
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
        a: f"ρ = {fmt_estimate(res.rho[a], n=False)}\nwithin τ: ρ = {fmt_estimate(res.within[a], n=False)}\nn = {res.rho[a].n} runs"
        for a in res.rho
    }


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
                "median Δrel [95% CI]": fmt_estimate(r.change[a], 0, n=False, percent=True),
                f"stable (Δrel ≤ {tolerance:.0%})": f"{shares.loc[(m, a), 'share_stable']:.0%}",
                "rank went up": f"{shares.loc[(m, a), 'share_increased']:.0%}",
                "largest Δrel": f"{shares.loc[(m, a), 'largest']:.0%}",
                "runs": r.change[a].n,
            }
            for m, r in results.items()
            for a in r.change
        ]
    )


def needed_runs(judged: dict, arch_labels: dict, statuses: dict, *, prefix: str = "") -> list[str]:
    """``["BERT (MLM) <prefix>12", ...]``: the runs each not-supported part of a verdict needs (``judged``:
    ``{arch: Verdict}``, ``statuses``: ``{arch: status}``)."""
    return [
        f"{arch_labels[a]} {prefix}{v.needed}" for a, v in judged.items() if statuses[a] != "supported" and v.needed
    ]


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
        f"({n_seeds} seeds per setting), initial and final mean rank have Spearman rho {fmt_estimate(res.rho['bert'], n=False)} "
        f"(BERT) and {fmt_estimate(res.rho['gpt2'], n=False)} (GPT-2), and the median relative change is "
        f"{fmt_estimate(res.change['bert'], 0, n=False, percent=True)} (BERT) and "
        f"{fmt_estimate(res.change['gpt2'], 0, n=False, percent=True)} (GPT-2) against a {tolerance:.0%} tolerance: "
        + "; ".join(f"{h} half for {arch_labels[a]}: {v}" for (h, a), v in res.halves.items())
        + ". "
        f"Within temperatures the correlation is {fmt_estimate(res.within['bert'], n=False)} (BERT, p = {res.within['bert'].p:.2f}) "
        f"and {fmt_estimate(res.within['gpt2'], n=False)} (GPT-2, p = {res.within['gpt2'].p:.2f}). "
        + (f"Runs needed to resolve a correlation of {RHO_MIN:g}: {', '.join(needed)}. " if needed else "")
        + f"Regime: {regime}."
    )
