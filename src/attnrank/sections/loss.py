"""Rank and loss, the loss chapter: claim (ii), a higher attention rank goes with a lower loss.

:func:`section` reads the book's shared sweep and the rule's design (its stock run and the same run with another initial
query/key scale, :func:`attnrank.runs.experiments.loss_runs`), applies the rule
(:func:`decide`: :func:`attnrank.analysis.rules.rank_loss_rule`, the rank moved at a fixed temperature) with every
rank measure, reports beside it the association on the sweep (:func:`attnrank.analysis.rules.loss_rule`) and
convergence speed against a level set from the data (:func:`attnrank.analysis.rules.convergence_speed`), and returns
the chapter's :class:`~attnrank.sections.section.Section`: four figures (loss curves beside count models, final loss
and convergence speed against the initial rank, the head-dimension grid), the rule's and the correlations' tables and
the ``loss`` verdict.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..analysis import baselines, rules, stats, verdicts
from ..analysis.rules import CAUSAL_EFFECT, PRIMARY_MEASURE, LossResult
from ..analysis.stats import spearman
from ..core.profiles import ARCH_ORDER
from ..plots import training as tplots
from ..runs import experiments, tables
from ..runs.store import load_table
from ..runs.tables import table as runs_table
from ..words.glossary import (
    ARCH_LABELS,
    ARCH_NAMES,
    MEASURE_LABELS,
    PLAIN_LABELS,
    RANK_MEASURES,
    fmt,
    fmt_and,
    fmt_count,
    fmt_estimate,
    fmt_sci,
    fmt_setting,
    fmt_tau,
    largest_first,
)
from .causal import label_cells
from .dynamics import correlation_notes, correlation_table, n_learned_text
from .section import (
    Figure,
    Section,
    Table,
    Verdict,
    by_measure_table,
    divergence,
    gate_quote,
    gate_text,
    needed_text,
    regime_brief,
    regime_text,
    runs_caption,
    seeds_per_setting,
    sweep_facts,
)

__all__ = [
    "section",
    "Decision",
    "decide",
    "rule_text",
    "design_table",
    "direction_text",
    "intervention_text",
    "effect_text",
    "loss_summary",
    "finding",
    "grid_correlations",
    "cens_text",
    "exposure_text",
]

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
    """The association beside the loss verdict (:func:`attnrank.analysis.rules.loss_rule` on the primary measure, the
    rule until 2026-12-07): the correlation within temperatures and across runs per architecture, and how the
    rule's version 3 read the first; ``n_seeds``: the seeds per setting of the learned runs it reads
    (:func:`~attnrank.sections.section.seeds_per_setting`, ``"3"`` or ``"2 to 3"``; ``None`` where none learned)."""
    label = MEASURE_LABELS[PRIMARY_MEASURE]
    archs = list(res.rho)
    within = " and ".join(
        f"{fmt_estimate(res.within[a], n=False)} ({ARCH_NAMES[a]}, {fmt_count(res.within[a].n, 'run')}"
        + (f", p = {fmt(res.within[a].p)})" if res.within[a].n else ")")
        for a in archs
    )
    across = " and ".join(f"{fmt_estimate(res.rho[a], n=False)} ({ARCH_NAMES[a]})" for a in archs)
    return (
        f"Beside the rule, on the {label} over the shared sweep's runs that learned "
        f"({f'{n_seeds} seeds per setting' if n_seeds else 'none here'}), the rank correlation of initial mean rank "
        f"and final validation loss within temperatures ($\\tau$ as a fixed effect) is {within} (the rule's version 3 "
        "decided on it: "
        + ", ".join(f"{res.per_arch[a]} for {ARCH_NAMES[a]}" for a in archs)
        + f"). Across runs, where the temperature moves both, Spearman ρ is {across}."
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
        f"temperatures, {' and '.join(parts)}, so the correlation within a temperature reads mostly seed-to-seed variation of "
        "the rank"
        + (" (and, where a temperature holds two head dimensions, their difference)" if mixed else "")
        + ", not a change a user could make at one setting, which is why the rule reads a design that moves the rank instead."
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
            f"{ARCH_NAMES[a]} {fmt_estimate(e, n=False)} against {fmt_estimate(within[a], n=False)} with τ alone"
        )
        if within[a].excludes_zero and not e.excludes_zero:
            carried.append(ARCH_NAMES[a])
    tail = (
        f": for {' and '.join(carried)} the sign resolved with τ alone rests on the head-dimension contrast, not on "
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


class Decision(NamedTuple):
    """Claim (ii)'s verdict on every rank measure (:func:`decide`): ``results`` (``{measure: SweepVerdict}``, the rule
    before the learned gate), ``gates`` (``{measure: LearnedGate}``; ``None`` without a complete run),
    ``status`` (``{measure: status}`` after the gate) and ``gated`` (the complete runs of both cells, which the gate
    reads)."""

    results: dict
    gates: dict
    status: dict
    gated: pd.DataFrame


def decide(cells: pd.DataFrame, archs) -> Decision:
    """Claim (ii)'s verdict, rule version 6 (:func:`attnrank.analysis.rules.rank_loss_rule` on the complete runs of
    :func:`attnrank.runs.experiments.loss_runs`) with every rank measure, after the learned gate, which reads every
    run the rule reads (both cells: a model whose intervention did not learn says nothing about trained
    transformers). A model of ``archs`` (the claim's) without a complete run, or whose runs did not learn, is
    inconclusive at this scale.

    Args:
        cells: the design's runs (:func:`attnrank.runs.tables.table`, wide) with ``cell``
            (:func:`attnrank.sections.causal.label_cells`).
        archs: the models the claim is tested on.
    """
    done = cells[cells.status == "complete"]
    trained = [a for a in archs if a in set(done.arch)]
    gaps, gains = baselines.bigram_gaps(done), baselines.reference_gains(done, worst=True)
    results, gates, status = {}, {}, {}
    for mm in RANK_MEASURES:
        results[mm] = rules.rank_loss_rule(done, mm, archs=archs)
        parts = {a: results[mm][a].verdict.status for a in trained}
        gates[mm] = rules.learned_gate(parts, gaps, gains) if parts else None
        kept = [gates[mm].status] if parts else []
        status[mm] = verdicts.combine(kept + [verdicts.INCONCLUSIVE for a in archs if a not in trained])
    return Decision(results, gates, status, done)


def rule_text(v, stock_rank: dict | None = None) -> str:
    """The rule's outcome in words (:func:`attnrank.analysis.rules.rank_loss_rule` on the primary measure), per model:
    how far the initial logit scale moved the initial rank at τ = 1 (beside the stock cell's mean initial rank,
    ``stock_rank[arch]``, where given), the loss change and the loss the higher-rank cell saves with its status, or
    that the design did not train the model."""
    label, out = MEASURE_LABELS[PRIMARY_MEASURE], []
    for a, r in v.arch.items():
        name = ARCH_NAMES[a]
        if not r.parts:
            out.append(
                f"{name} is not in the design at this profile, so its case is open, and the claim can come out not "
                "supported or inconclusive here, never supported."
            )
            continue
        rank, loss, j = r.parts["rank"], r.parts["loss"], r.verdict
        said = (
            f"For {name} the initial logit scale changed the initial {label} by {fmt_estimate(rank, n=False)} "
            f"({fmt_count(rank.n, 'seed')}, paired"
            + (f"; the stock cell's is {fmt(stock_rank[a])}" if stock_rank and a in stock_rank else "")
            + ") and the final validation loss by "
            f"{fmt_estimate(loss, 3, n=False)} nats, so the higher-rank cell saves {fmt_estimate(j.estimate, 3, n=False)} "
            f"nats: {j.status}"
        )
        if not rank.excludes_zero:
            said += " (the design did not move the rank, so there is nothing to test)"
        more = needed_text(j, f"{fmt_setting(j.effect)} nats (the causal rule's effect size) at 80% power")
        if more and math.isfinite(r.spread) and r.spread > 0 and j.estimate.value != 0:
            seen = stats.seeds_needed_t(r.spread / math.sqrt(2), j.estimate.value)
            more += f", and about {seen} the {fmt(abs(j.estimate.value), 3)} nats observed"
        out.append(said + (f"; {more}" if more else "") + ".")
    return " ".join(out)


def design_table(results: dict) -> pd.DataFrame:
    """The rule's numbers per rank measure and model (``results``: ``{measure: SweepVerdict}`` of
    :func:`attnrank.analysis.rules.rank_loss_rule`, the primary measure first): the initial rank's and the final
    loss's paired difference ``init - stock``, the loss the higher-rank cell saves, the status and the seeds. The
    measures need not agree on which cell has the higher rank, and so on the sign of the saving."""
    rows = []
    for mm in sorted(results, key=lambda k: k != PRIMARY_MEASURE):
        for a, r in results[mm].arch.items():
            p = r.parts
            rows.append(
                {
                    "measure": MEASURE_LABELS[mm] + (" (primary)" if mm == PRIMARY_MEASURE else ""),
                    "model": ARCH_LABELS[a],
                    "initial rank, init × s − stock": fmt_estimate(p["rank"], n=False) if p else "not in the design",
                    "final validation loss, init × s − stock (nats)": fmt_estimate(p["loss"], 3, n=False) if p else "",
                    "loss the higher-rank cell saves (nats)": ""
                    if not p
                    else fmt_estimate(r.verdict.estimate, 3, n=False)
                    if p["rank"].excludes_zero
                    else "none (rank not moved)",
                    "status": r.verdict.status,
                    "seeds": r.verdict.estimate.n,
                }
            )
    return pd.DataFrame(rows)


def direction_text(results: dict) -> str:
    """Which rank measures disagree with the primary one on which cell of the design has the higher initial rank, per
    model (``results`` as in :func:`design_table`), with each one's resolved difference and the rule's status on it:
    on such a measure the rule's statistic changes sign, so the same loss difference reads the other way. Empty where
    every resolved measure agrees."""
    parts = []
    for a, r in results[PRIMARY_MEASURE].arch.items():
        if not r.parts:
            continue
        up = r.parts["rank"].value >= 0
        resolved = {
            mm: res[a]
            for mm, res in results.items()
            if mm != PRIMARY_MEASURE and res[a].parts and res[a].parts["rank"].excludes_zero
        }
        agree = [mm for mm, x in resolved.items() if (x.parts["rank"].value >= 0) == up]
        other = [mm for mm, x in resolved.items() if (x.parts["rank"].value >= 0) != up]
        if other:
            parts.append(
                f"for {ARCH_NAMES[a]} the initial scale s {'raises' if up else 'lowers'} "
                + fmt_and([PLAIN_LABELS[mm][0] for mm in [PRIMARY_MEASURE, *agree]])
                + f" but {'lowers' if up else 'raises'} "
                + fmt_and(
                    [
                        f"{PLAIN_LABELS[mm][0]} (init × s − stock {fmt_estimate(resolved[mm].parts['rank'], n=False)}; the rule "
                        f"there: {resolved[mm].verdict.status})"
                        for mm in other
                    ]
                )
            )
    if not parts:
        return ""
    return (
        "Which cell has the higher initial rank depends on how rank is counted: "
        + "; ".join(parts)
        + ". On those counts the higher-rank cell is the other one, so the rule's statistic changes sign and the same "
        "loss difference reads the other way, as the sign of claim (iii) turns on the measure."
    )


def intervention_text(cells: pd.DataFrame) -> str:
    """Each cell's worst run against the bigram count model, per model: the learned gate reads both cells together
    (:func:`decide`), and this says which cell a gap comes from. Per model, the worst init × s run's final validation
    loss minus its bigram count model (:func:`attnrank.analysis.baselines.bigram_gaps`, nats per token) beside the
    stock cell's.

    Args:
        cells: the design's runs, wide, with ``cell`` (:func:`decide` reads the same table).
    """
    done = cells[cells.status == "complete"]
    stock, init = (baselines.bigram_gaps(done[done.cell == c]) for c in ("stock", "init"))

    def side(gap: float) -> str:
        return f"{fmt(abs(gap), 2)} nats {'above' if gap > 0 else 'below'}"

    parts = [
        f"{ARCH_NAMES[a]}'s init × s runs end at worst {side(init[a])} the bigram count model, its stock runs "
        f"{side(stock[a])}"
        for a in ARCH_ORDER
        if a in init and a in stock and math.isfinite(init[a]) and math.isfinite(stock[a])
    ]
    if not parts:
        return ""
    text = "The learned gate reads both cells: " + "; ".join(parts) + "."
    if any(g > 0 for g in init.values() if math.isfinite(g)):
        text += " A cell above its bigram count model has not learned, so the gate leaves that model's case open."
    return text


def finding(v) -> str:
    """The verdict in one line (at most 30 words, both models): per model the rank the design moved and the loss the
    higher-rank cell saves, the statistic that decides."""
    moved = "; ".join(
        f"{ARCH_NAMES[a]} rank {fmt(r.parts['rank'].value)}, saves {fmt(r.verdict.estimate.value, 3)} nats"
        if r.parts
        else f"{ARCH_NAMES[a]} not trained"
        for a, r in v.arch.items()
    )
    return f"Initial logit scale × s at τ = 1 (decides): {moved}."


def effect_text(v) -> str:
    """The intro's effect cell: for each model whose case decides the claim (:func:`attnrank.analysis.verdicts.deciding`),
    the loss the higher-rank cell saves, with the rank difference that exposes it."""
    cells = []
    for a in verdicts.deciding({a: r.verdict.status for a, r in v.arch.items()}):
        r = v.arch[a]
        if not r.parts:
            cells.append(f"{ARCH_NAMES[a]} not in the design (so the claim cannot come out supported)")
            continue
        cells.append(
            f"{ARCH_NAMES[a]} loss saved by the higher-rank cell {fmt_estimate(r.verdict.estimate, 3, n=False)} nats "
            f"(initial {MEASURE_LABELS[PRIMARY_MEASURE]} init × s − stock {fmt_estimate(r.parts['rank'], n=False)})"
        )
    return "; ".join(cells)


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
    """The loss chapter: the shared sweep's runs and the rule's design's (trained where missing), the rule
    (:func:`decide`) with every rank measure, the association and convergence speed beside it, four figures, three
    tables and the ``loss`` verdict.

    Args:
        profile, seeds, taus, head_dims, dataset: the shared sweep (see :func:`attnrank.sections.dynamics.section`);
            the sweep's plan also sets the rule's design (:func:`attnrank.runs.experiments.loss_runs`).
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
        "loss_nats_to_resolve": fmt_setting(CAUSAL_EFFECT),
        "loss_scale": fmt_sci(experiments.twin_scale(experiments.LOSS_TAU), 3),
        "loss_scale_tau": fmt_setting(experiments.LOSS_TAU),
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
    # the rule (version 6): the stock run and init x s at the stock conditions, the initial rank moved at tau = 1
    cells = runs_table(experiments.loss_runs(plan), long=False)
    cells["cell"] = label_cells(cells, experiments.LOSS_TAU)
    decision = decide(cells, archs)
    v = decision.results[m]
    reg = baselines.regime(decision.gated, decision.gates[m]) if decision.gates[m] else None
    section_tables.append(Table("loss_design", design_table(decision.results)))
    verdict = Verdict(
        "loss",
        decision.status[m],
        finding(v),
        effect_text(v),
        f"{cells.seed.nunique()} seeds, {len(cells)} runs at τ = 1, stock and init × s",
        regime_text(reg) if reg else "no complete run",
        " ".join(
            filter(
                None,
                [
                    rule_text(v, cells[cells.cell == "stock"].groupby("arch")[f"initial_{m}"].mean().to_dict()),
                    intervention_text(cells),
                    direction_text(decision.results),
                    loss_summary(res, n_seeds=seeds_per_setting(learned) if len(learned) else None),
                    exposure_text(learned, m, archs, res.within),
                    gate_text(reg, "runs of both cells (τ = 1, at its profile's head dimension)") if reg else "",
                ],
            )
        ),
        decision.status,
        brief=regime_brief(reg) if reg else "",
        gate=gate_quote(reg) if reg else "",
    )
    section_tables.append(by_measure_table("loss_by_measure", verdict, m, decision.results))
    return Section("loss", glue, figures, section_tables, [verdict])
