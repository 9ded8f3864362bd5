"""Rank and loss, the loss chapter: the sentences of claim (ii).

The verdict itself is :func:`attnrank.rules.loss_rule`; this module writes its summary.
"""

from __future__ import annotations

from .dynamics import needed_runs
from .glossary import fmt_estimate
from .rules import LOSS_EFFECT, LossResult

__all__ = ["loss_summary"]


def loss_summary(res: LossResult, *, label: str, arch_labels: dict, n_seeds: int, regime: str) -> str:
    """The summary of the loss verdict (:func:`loss_rule` on the primary measure ``label``): the correlation
    across runs and within temperatures per architecture, their statuses, the runs a not-supported
    architecture needs and the loss ``regime``."""
    archs = list(res.rho)
    needed = needed_runs(res.judged, arch_labels, res.per_arch, prefix="about ")
    return (
        f"On the {label}, across {', '.join(f'{res.rho[a].n} {arch_labels[a]}' for a in archs)} runs "
        f"({n_seeds} seeds per setting), initial mean rank and final validation loss have Spearman rho "
        f"{fmt_estimate(res.rho['bert'], n=False)} (BERT) and {fmt_estimate(res.rho['gpt2'], n=False)} (GPT-2); within temperatures "
        f"(tau as a fixed effect) rho is {fmt_estimate(res.within['bert'], n=False)} (BERT, p = {res.within['bert'].p:.2f}) and "
        f"{fmt_estimate(res.within['gpt2'], n=False)} (GPT-2, p = {res.within['gpt2'].p:.2f}): "
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
