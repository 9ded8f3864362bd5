"""Figures of the ``protocol`` chapter, each returned with its data, glue name and the caption's source words.

Every function returns ``(figure, data, name, source)``, the arguments of :func:`attnrank.book.show`
(``source``: the caption's last words, which depend on the runs; the chapter writes the caption); the figures are drawn with :func:`attnrank.plots.training.trajectories`,
:func:`~attnrank.plots.training.change_distribution` and
:func:`attnrank.plots.sweeps.effect_forest`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis.rules import PRIMARY_MEASURE
from ..runs.experiments import STUDY_EXAMPLES, STUDY_MEASURE, STUDY_TAUS
from ..words.glossary import ARCH_LABELS, ARCH_NAMES, MEASURE_LABELS
from . import figure
from .sweeps import effect_forest
from .training import change_distribution, trajectories

__all__ = ["study_view", "draws_figure", "our_view", "set_early_figure"]


@figure
def study_view(records, eval_log: pd.DataFrame, profile: str):
    """The study's view: its rank (mean over the first 4 training + 4 held-out sequences) and the
    validation loss through training, one run (the first seed) per temperature.

    Args:
        records: :class:`attnrank.sections.study.Records` (:func:`attnrank.sections.study.load`).
        eval_log: the ``eval_log`` table of the first seed's runs (columns ``arch``, ``tau``,
            ``seed``, ``step``, ``val_loss``).
        profile: named in the caption's source words.

    The data has one row per ``(arch, tau, seed, panel, step)``, ``panel`` in {rank, loss}.
    """
    (n_train, n_test), stock, seq = STUDY_EXAMPLES, STUDY_TAUS[0], records.seq
    first = records.pair[records.pair.seed == records.pair.seed.min()]
    few = seq[seq.key.isin(first.key) & (seq.sequence < np.where(seq.split == "train", n_train, n_test))]
    curve = few.groupby(["arch", "tau", "seed", "status", "step"], as_index=False)[STUDY_MEASURE].mean()
    view = pd.concat(
        [
            curve.rename(columns={STUDY_MEASURE: "value"}).assign(panel="rank"),
            eval_log.rename(columns={"val_loss": "value"}).assign(panel="loss"),
        ],
        ignore_index=True,
    )
    labels = {"rank": f"rank (atol $10^{{-8}}$),\n{n_train} + {n_test} examples", "loss": "validation loss (nats)"}
    fig = trajectories(
        view,
        y="value",
        row="panel",
        col="arch",
        hue="tau",
        ylabel=labels,
        row_labels={"rank": "", "loss": ""},  # the model alone in the titles (the measure's in the y label)
        col_labels=ARCH_LABELS,
        highlight=stock,
        width=4.3,
        height=2.6,
    )
    return (
        fig,
        view[["arch", "tau", "seed", "panel", "step", "value"]],
        "protocol_study_view",
        f"({profile} profile, seed {int(first.seed.min())}, head dimension {records.head_dim}).",
    )


@figure
def draws_figure(draws: pd.DataFrame, records, profile: str):
    """The study's statistic over random draws (:func:`attnrank.sections.study.study_draws`) at step 0
    and at the last probe step, one dot per draw; the data is those draws with a ``when`` column."""
    ends = pd.concat([draws[draws.step == 0], records.at_final_step(draws)])
    ends = ends.assign(when=np.where(ends.step == 0, "step 0", "last step"))
    fig = change_distribution(
        ends,
        x="stat",
        y="when",
        reference=0.0,
        xlabel=r"rank at $\tau = 1$ minus rank at $\tau = 0.001$ (atol $10^{-8}$)",
    )
    return (
        fig,
        ends,
        "protocol_draws",
        f"The {profile} profile, {records.pair.seed.nunique()} seeds per temperature.",
    )


@figure
def our_view(records, profile: str):
    """Our view: the mean rank over every held-out probe sequence, per seed, under the study's
    rank and the primary measure, through training at both temperatures."""
    view = records.summary[records.summary.measure.isin([STUDY_MEASURE, PRIMARY_MEASURE])]
    labels = {m: MEASURE_LABELS[m] for m in (STUDY_MEASURE, PRIMARY_MEASURE)}
    fig = trajectories(
        view,
        y="mean",
        row="measure",
        col="arch",
        hue="tau",
        ylabel=labels,
        row_labels=labels,
        col_labels=ARCH_LABELS,
        highlight=STUDY_TAUS[0],
        width=4.3,
        height=2.6,
    )
    return (
        fig,
        view[["arch", "tau", "seed", "measure", "step", "mean", "sem"]],
        "protocol_our_view",
        f"({profile} profile, head dimension {records.head_dim}).",
    )


@figure
def set_early_figure(by_step: pd.DataFrame, profile: str, rho_min: float, *, learned: bool = True):
    """Spearman's rho (:func:`attnrank.sections.study.rank_by_step`) at each probe step against the last,
    per architecture, with the pre-registered ``rho_min`` dotted; the data is ``by_step`` without
    its ``estimate`` objects. ``learned``: whether ``by_step`` reads the runs that learned (else every
    complete run, as the caption's source words then say)."""
    label = MEASURE_LABELS[PRIMARY_MEASURE]
    forest = by_step.assign(panel=label, lever=by_step.step.map(lambda s: f"step {s}"))
    fig = effect_forest(
        forest,
        panel="panel",
        label="lever",
        estimate="rho",
        xlabels={label: r"Spearman $\rho$, rank at step $k$ vs the last step"},
    )
    for ax in fig.axes:
        ax.axvline(rho_min, color="0.3", ls=":")
    return (
        fig,
        by_step.drop(columns="estimate"),
        "protocol_set_early",
        (
            f"The {profile} profile; "
            + (
                "the runs of the main grid that learned ("
                if learned
                else "no run of the main grid learned, so every complete run is drawn ("
            )
            + ", ".join(f"{n} {ARCH_NAMES.get(a, a)}" for a, n in by_step.groupby("arch").n.max().items())
            + ")."
        ),
    )
