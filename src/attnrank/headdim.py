"""Temperature against head dimension, the head-dimension chapter: the tables and sentences of the lever comparison.

The verdict itself is :func:`attnrank.rules.lever_comparison`; this module writes its table with
every measure, the effect sizes of its forest plot, the numbers the chapter pastes and its summary.
"""

from __future__ import annotations

import pandas as pd

from .glossary import fmt_estimate, fmt_setting
from .rules import ArchResult, SweepVerdict
from .stats import Estimate

__all__ = ["lever_table", "LEVERS", "lever_effects", "direction_text", "lever_texts", "direction_note", "lever_summary"]


def lever_table(lever_v: dict) -> pd.DataFrame:
    """The rule of :func:`lever_comparison` with every measure, one row per measure and architecture."""
    return pd.DataFrame(
        [
            {
                "measure": m,
                "arch": a,
                "τ range": fmt_estimate(r.parts["tau_range"], 2, n=False),
                "d_head range": fmt_estimate(r.parts["head_dim_range"], 2, n=False),
                "d_head: largest − smallest": fmt_estimate(r.parts["head_dim_change"], 2, n=False),
                "difference of ranges": fmt_estimate(r.verdict.estimate, 2, n=False),
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
    return f"{word} from {means.loc[lo]:.2f} at d_head = {lo} to {means.loc[hi]:.2f} at d_head = {hi} (change {fmt_estimate(change, 2)})"


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
                f"tau_range_{a}": fmt_estimate(r.parts["tau_range"], 2),
                f"hd_range_{a}": fmt_estimate(r.parts["head_dim_range"], 2),
                f"hd_range_min_{a}": fmt_estimate(lv_min[a].parts["head_dim_range"], 2),
                f"diff_{a}": fmt_estimate(r.verdict.estimate, 2),
                f"loss_tau_range_{a}": fmt_estimate(loss_lv[a].parts["tau_range"], 3),
                f"loss_hd_range_{a}": fmt_estimate(loss_lv[a].parts["head_dim_range"], 3),
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


def lever_summary(
    lv: SweepVerdict, *, label: str, effect: float, profile: str, n_seeds: int, head_dims, hidden: int
) -> str:
    """The summary of the verdict of :func:`lever_comparison` on the primary measure ``label``."""

    def arch_text(r: ArchResult) -> str:
        s = (
            f"the temperature moves the mean initial {label} by {fmt_estimate(r.parts['tau_range'], 2)} runs over its grid "
            f"and the head dimension by {fmt_estimate(r.parts['head_dim_range'], 2)} runs (difference "
            f"{fmt_estimate(r.verdict.estimate, 2, n=False)}"
        )
        if r.verdict.status != "supported" and r.verdict.needed is not None:
            s += f"; about {r.verdict.needed} {r.verdict.needed_unit} would resolve a difference of {effect:g}"
        return s + ")"

    return (
        f"Over the ranges a user can set (range of the seed means, 95% stratified-bootstrap intervals), for BERT "
        f"{arch_text(lv['bert'])}, and for GPT-2 {arch_text(lv['gpt2'])}. {profile} profile, {n_seeds} seeds per "
        f"setting, head dimensions {', '.join(map(fmt_setting, head_dims))} at hidden size {hidden}."
    )
