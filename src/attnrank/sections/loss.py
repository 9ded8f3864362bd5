"""Rank and loss, the loss chapter: claim (ii), a higher attention rank goes with a lower loss.

:func:`section` reads the book's shared sweep, measures convergence speed against a level set from
the data (:func:`attnrank.analysis.rules.convergence_speed`), applies the pre-registered rule
(:func:`attnrank.analysis.rules.loss_rule`) with every rank measure and returns the chapter's
:class:`~attnrank.sections.section.Section`: four figures (loss curves beside count models, final loss and
convergence speed against the initial rank, the head-dimension grid), the correlation table and the
``loss`` verdict.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis import baselines, rules, stats
from ..analysis.rules import LOSS_EFFECT, PRIMARY_MEASURE, LossResult
from ..analysis.stats import spearman
from ..core.profiles import ARCH_ORDER
from ..plots import training as tplots
from ..runs import experiments, tables
from ..runs.store import load_table
from ..words.glossary import (
    ARCH_NAMES,
    MEASURE_LABELS,
    RANK_MEASURES,
    fmt,
    fmt_count,
    fmt_estimate,
    fmt_setting,
    fmt_tau,
    largest_first,
)
from .dynamics import correlation_notes, correlation_table, n_learned_text, needed_runs
from .section import (
    Figure,
    Section,
    Table,
    Verdict,
    by_measure_table,
    divergence,
    gate_quote,
    gate_text,
    regime_brief,
    regime_text,
    runs_caption,
    seeds_per_setting,
    sweep_facts,
)

__all__ = ["section", "loss_summary", "finding", "grid_correlations", "cens_text", "exposure_text"]

#: The outcomes the chapter correlates with the initial rank, with their labels.
OUTCOMES = {"final_val_loss": "final validation loss (nats)", "steps_plot": "steps to reach the level"}


def grid_correlations(runs_: pd.DataFrame, x: str, y: str, taus) -> dict:
    """Spearman's rho (:func:`attnrank.analysis.stats.spearman`) of columns ``x`` and ``y`` over the runs at each
    temperature ratio of ``taus`` and architecture: ``{tau: {arch: Estimate}}``."""
    archs = sorted(runs_.arch.unique())
    return {
        t: {a: spearman(d[x], d[y]) for a in archs for d in [runs_[(runs_.arch == a) & np.isclose(runs_.tau, t)]]}
        for t in taus
    }


def loss_summary(res: LossResult, *, n_seeds: str | None) -> str:
    """The summary of the loss verdict (:func:`attnrank.analysis.rules.loss_rule` on the primary measure): the
    correlation across runs and within temperatures per architecture, their statuses and the runs a
    not-supported architecture needs; ``n_seeds``: the seeds per setting of the learned runs it reads
    (:func:`~attnrank.sections.section.seeds_per_setting`, ``"3"`` or ``"2 to 3"``; ``None`` where none learned)."""
    label = MEASURE_LABELS[PRIMARY_MEASURE]
    archs = list(res.rho)
    needed = needed_runs(res.judged, res.per_arch, prefix="about ")
    within = " and ".join(
        f"{fmt_estimate(res.within[a], n=False)} ({ARCH_NAMES[a]}, {fmt_count(res.within[a].n, 'run')}"
        + (f", p = {fmt(res.within[a].p)})" if res.within[a].n else ")")
        for a in archs
    )
    across = " and ".join(f"{fmt_estimate(res.rho[a], n=False)} ({ARCH_NAMES[a]})" for a in archs)
    return (
        f"On the {label}, over the runs that learned ({f'{n_seeds} seeds per setting' if n_seeds else 'none here'}), "
        "the rank correlation of initial "
        f"mean rank and final validation loss within temperatures ($\\tau$ as a fixed effect), which decides, is "
        f"{within}: " + ", ".join(f"{res.per_arch[a]} for {ARCH_NAMES[a]}" for a in archs) + ". Across runs, where "
        f"the temperature moves both, Spearman ρ is {across}. The rule reads the 95% bootstrap intervals; the "
        "stratified permutation p-values are shown beside them and, with this few runs in a temperature, need not "
        "agree with them."
        + (
            f" Runs needed to resolve a within-temperature ρ of {fmt(LOSS_EFFECT, 1)}: {', '.join(needed)}."
            if needed
            else ""
        )
    )


def exposure_text(learned: pd.DataFrame, measure: str, archs, within: dict | None = None) -> str:
    """How far the rank moves where the loss rule looks: per architecture, over the runs that learned, the range of
    the initial ``measure`` within a temperature (the median over temperatures with at least two such runs, and the
    largest, with whether that temperature holds runs of two head dimensions) against the range of its
    per-temperature means. A correlation within a temperature reads the first: seed-to-seed variation, and the
    head-dimension contrast where the head-dimension grid adds runs. Where it does, a second sentence gives the rule's
    statistic with the head dimension held fixed as well (:func:`attnrank.analysis.stats.spearman_within`, strata
    τ × head dimension, the final validation loss) beside the rule's own ρ (``within``, ``{arch: Estimate}``), so a
    reader sees whether the head dimension carries it. Empty without two learned runs at one temperature."""
    col, parts, mixed = f"initial_{measure}", [], False
    for a in archs:
        d = learned[learned.arch == a]
        by_tau = d.groupby("tau")[col]
        within_tau = by_tau.agg(lambda v: v.max() - v.min())[by_tau.size() >= 2]
        if len(within_tau):
            between = by_tau.mean().max() - by_tau.mean().min()
            widest = float(within_tau.idxmax())
            dims = d[d.tau == widest].head_dim.nunique() if "head_dim" in d else 1
            mixed |= dims > 1
            parts.append(
                f"{fmt(float(within_tau.median()))} for {ARCH_NAMES[a]} (up to {fmt(float(within_tau.max()))} at "
                f"{fmt_tau(widest)}{', with two head dimensions' if dims > 1 else ''}; between temperatures "
                f"{fmt(float(between))})"
            )
    if not parts:
        return ""
    text = (
        f"Within a temperature the initial {MEASURE_LABELS[measure]} of these runs spans, as a median over "
        f"temperatures, {' and '.join(parts)}, so the correlation that decides reads mostly seed-to-seed variation of "
        "the rank"
        + (" (and, where a temperature holds two head dimensions, their difference)" if mixed else "")
        + ", not a change a user could make at one setting; the causal chapter's design is the one that moves the "
        "initial rank at a fixed temperature."
    )
    if not (mixed and within):
        return text
    fixed, carried = [], []
    for a in archs:
        d = learned[learned.arch == a]
        if d.empty:
            continue
        strata = d.tau.map(fmt_setting) + "×" + d.head_dim.astype(str)
        e = stats.spearman_within(d[col].to_numpy(float), d.final_val_loss.to_numpy(float), strata.to_numpy())
        fixed.append(
            f"{ARCH_NAMES[a]} {fmt_estimate(e, n=False)} against the rule's {fmt_estimate(within[a], n=False)}"
        )
        if within[a].excludes_zero and not e.excludes_zero:
            carried.append(ARCH_NAMES[a])
    tail = (
        f": for {' and '.join(carried)} the sign the rule resolves rests on the head-dimension contrast, not on "
        "seed-to-seed variation"
        if carried
        else ""
    )
    return (
        text + " With the head dimension held fixed as well (strata τ × head dimension, seed-to-seed variation alone) "
        f"the within ρ reads: {'; '.join(fixed)}{tail}."
    )


def cens_text(censored_at: dict) -> str:
    """The step censored runs are drawn at (:func:`attnrank.analysis.rules.convergence_speed`), in words: ``"1025"``, or
    per architecture when they differ (``"1025 for GPT-2, 525 for ModernBERT"``, latest first)."""
    if len(set(censored_at.values())) <= 1:
        return str(next(iter(censored_at.values()), ""))
    order = largest_first(censored_at)
    return ", ".join(f"{censored_at[a]} for {ARCH_NAMES.get(a, a)}" for a in order)


def finding(res: LossResult) -> str:
    """The verdict in one line for the intro's table."""
    within = ", ".join(f"{ARCH_NAMES[a]} {fmt(res.within[a].value)} (p = {fmt(res.within[a].p)})" for a in res.within)
    across = ", ".join(f"{ARCH_NAMES[a]} {fmt(res.rho[a].value)}" for a in res.rho)
    return f"Initial rank against final loss within a temperature (decides): {within}; across runs ρ {across}."


def _rank_figures(sweep, res, speed, hd_rho, hd_taus, refs, profile: str) -> list:
    """The final loss and the steps to the loss level against the initial rank (every run), and the final loss
    against the initial rank over the head-dimension grid."""
    m = PRIMARY_MEASURE
    rank_label = f"initial mean rank ({MEASURE_LABELS[m]})"
    cols = ["arch", "tau", "head_dim", "num_heads", "seed", "status", "sweep", f"initial_{m}", "final_val_loss"]
    cols += ["final_train_loss", "steps_to_level", "censored", "steps_plot"]
    shared = dict(x=f"initial_{m}", hue="tau", xlabel=rank_label)
    caption = f"{runs_caption(sweep, profile)}."
    figures = [
        Figure(
            "loss_final_vs_rank",
            tplots.run_scatter(
                sweep[cols],
                y="final_val_loss",
                annotations=correlation_notes(res),
                references=refs,
                ylabel="final validation loss (nats)",
                **shared,
            ),
            sweep[cols],
            caption,
        ),
        Figure(
            "loss_speed_vs_rank",
            tplots.run_scatter(
                sweep[cols],
                y="steps_plot",
                censored="censored",
                annotations=correlation_notes(speed),
                ylabel="steps to reach the loss level",
                **shared,
            ),
            sweep[cols],
            caption,
        ),
    ]
    hd = sweep[sweep.tau.isin(hd_taus)]
    figures.append(
        Figure(
            "loss_head_dim",
            tplots.head_dim_scatter(
                hd[cols],
                x=f"initial_{m}",
                y="final_val_loss",
                rho=hd_rho,
                references=refs,
                xlabel=rank_label,
                ylabel="final validation loss (nats)",
            ),
            hd[cols],
            f"{runs_caption(hd, profile)}.",
        )
    )
    return figures


def section(
    profile: str = "auto",
    *,
    seeds=None,
    taus=None,
    head_dims=None,
    level_quantile: float = 0.75,
    smooth: int = 3,
    dataset: str | None = None,
) -> Section:
    """The loss chapter: the shared sweep's runs (trained where missing), convergence speed, the rule
    with every rank measure, four figures, the correlation table and the ``loss`` verdict.

    Args:
        profile, seeds, taus, head_dims, dataset: the shared sweep (see :func:`attnrank.sections.dynamics.section`).
        level_quantile: the quantile of the runs' final training losses (per architecture) that sets
            the convergence level.
        smooth: logged training-loss points averaged before a run is tested against the level.

    Raises:
        ConfigError: for a parameter the sweep does not allow.
    """
    plan = experiments.sweep_plan(profile, taus=taus, head_dims=head_dims, seeds=seeds, dataset=dataset)
    profile = plan.profile
    m = PRIMARY_MEASURE
    label = MEASURE_LABELS[m]
    sweep = tables.main_runs(plan)
    head_dim0 = plan.head_dim
    train_log = load_table(sweep, "train_log")
    sweep, levels, cens_value = rules.convergence_speed(sweep, train_log, quantile=level_quantile, smooth=smooth)
    ok = sweep[sweep.status == "complete"]
    glue = {
        **sweep_facts("loss", sweep, plan),
        "loss_rho_effect": fmt(LOSS_EFFECT, 1),
        "loss_primary_label": label,
        "loss_default_head_dim": head_dim0,
        **{f"loss_level_{a}": fmt(lv, 3) for a, lv in levels.items()},
        "loss_level_quantile": fmt(level_quantile, 0, percent=True),
        "loss_smooth": smooth,
        "loss_n_censored": int(sweep.censored.sum()),
        "loss_n_complete": len(ok),
        "loss_cens_value": cens_text(cens_value),
    }
    losses = baselines.reference_losses(profile, sorted(sweep.arch.unique()), dataset)
    refs = {a: {"unigram": b["unigram"], "bigram": b["bigram"]} for a, b in losses.items()}
    tau_runs = sweep[sweep.sweep == "temperature grid"]
    curves = tables.loss_curves(tau_runs)
    glue.update(divergence(sweep, "loss"))
    figures = [
        Figure(
            "loss_curves",
            tplots.loss_trajectories(curves, levels, refs),
            curves,
            f"{runs_caption(tau_runs, profile)}.",
        )
    ]
    # the rule on the runs that learned (each held to the pre-registered target)
    learned = ok[baselines.learned_runs(ok)]
    archs = [a for a in ARCH_ORDER if a in set(ok.arch)]
    glue["loss_n_learned"] = n_learned_text(learned, ok, archs)
    results = {mm: rules.loss_rule(learned, mm, archs=archs) for mm in RANK_MEASURES}
    res = results[m]
    speed = {mm: rules.loss_rule(learned, mm, outcome="steps_plot", archs=archs) for mm in RANK_MEASURES}
    hd_taus = sorted(sweep.tau[sweep.sweep == "head-dimension grid"].unique())
    tau_min = min(plan.taus)
    hd_rho = grid_correlations(ok, f"initial_{m}", "final_val_loss", hd_taus)
    for name, by_arch in {
        "val_rho": res.rho,
        "val_within": res.within,
        "speed_rho": speed[m].rho,
        "speed_within": speed[m].within,
        "val_hdmin": hd_rho[tau_min],
        **{f"val_hd{fmt_setting(t)}".replace(".", "p"): hd_rho[t] for t in hd_taus},
    }.items():
        for a, e in by_arch.items():
            glue[f"loss_{name}_{a}"] = fmt_estimate(e)
    glue["loss_tau_min"] = fmt_setting(tau_min)
    glue["loss_hd_taus"] = ", ".join(map(fmt_setting, hd_taus))
    figures += _rank_figures(sweep, res, speed[m], hd_rho, hd_taus, refs, profile)
    section_tables = [
        Table(
            "loss_correlations",
            pd.concat(
                [
                    correlation_table({mm: r}, outcome=OUTCOMES[y])
                    for mm in RANK_MEASURES
                    for y, r in (("final_val_loss", results[mm]), ("steps_plot", speed[mm]))
                ],
                ignore_index=True,
            ),
        ),
    ]
    gaps = baselines.bigram_gaps(ok)
    gains = baselines.reference_gains(ok, worst=True)
    gate = rules.learned_gate(res.per_arch, gaps, gains)
    reg = baselines.regime(ok, gate)
    verdict = Verdict(
        "loss",
        gate.status,
        finding(res),
        # the within-τ correlation decides; the one across runs (confounded by τ) is shown beside it
        "ρ within τ (decides), across runs: "
        + "; ".join(
            f"{ARCH_NAMES[a]} {fmt_estimate(res.within[a], n=False)}, {fmt_estimate(res.rho[a], n=False)}"
            for a in res.within
        ),
        f"{sum(e.n for e in res.rho.values())} learned runs of {len(ok)}",
        regime_text(reg),
        " ".join(
            filter(
                None,
                [
                    loss_summary(res, n_seeds=seeds_per_setting(learned) if len(learned) else None),
                    exposure_text(learned, m, archs, res.within),
                    gate_text(reg),
                ],
            )
        ),
        {mm: rules.learned_gate(r.per_arch, gaps, gains).status for mm, r in results.items()},
        brief=regime_brief(reg),
        gate=gate_quote(reg),
    )
    section_tables.append(by_measure_table("loss_by_measure", verdict, m, results))
    return Section("loss", glue, figures, section_tables, [verdict])
