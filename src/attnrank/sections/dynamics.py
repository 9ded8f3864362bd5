"""Rank through training, the dynamics chapter: claim (i), the rank at initialisation predicts the final rank.

:func:`section` selects the runs of the book's shared sweep, applies the pre-registered rule
(:func:`attnrank.analysis.rules.dynamics_rule`) with every rank measure and returns the chapter's
:class:`~attnrank.sections.section.Section`: its numbers, five figures (rank through training for every
measure, for every head dimension, final against initial rank, the relative change, the layer x
head heat maps), its tables and its verdict. The correlation table and panel notes serve the loss
chapter too (:func:`correlation_table`, :func:`correlation_notes`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis import baselines, rules, verdicts
from ..analysis.rules import PRIMARY_MEASURE, RHO_MIN, DynamicsResult
from ..analysis.verdicts import INCONCLUSIVE
from ..core.errors import ConfigError
from ..core.profiles import ARCH_ORDER, CLM_ARCH
from ..plots import training as tplots
from ..runs import experiments, tables
from ..runs.store import load_table
from ..words.glossary import ARCH_LABELS, ARCH_NAMES, MEASURE_LABELS, RANK_MEASURES, fmt, fmt_estimate, fmt_setting
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
    steps_text,
    sweep_facts,
)

__all__ = [
    "section",
    "correlation_table",
    "correlation_notes",
    "stability_rows",
    "needed_runs",
    "dynamics_summary",
    "finding",
]


def correlation_table(results: dict, outcome: str | None = None) -> pd.DataFrame:
    """The correlations of :func:`attnrank.analysis.rules.dynamics_rule` or :func:`attnrank.analysis.rules.loss_rule`
    with every measure, one row per measure and architecture: Spearman's rho across runs and within
    temperatures (95% intervals), the stratified-permutation p within temperatures and the runs;
    ``outcome``: a label for an ``outcome`` column (left out when None)."""
    return pd.DataFrame(
        [
            {
                "measure": MEASURE_LABELS[m],
                **({"outcome": outcome} if outcome else {}),
                "model": ARCH_LABELS[a],
                "Spearman ρ [95% CI]": fmt_estimate(r.rho[a], n=False),
                "within τ: ρ [95% CI]": fmt_estimate(r.within[a], n=False),
                "p (within τ)": fmt(r.within[a].p, 3),
                "runs": r.rho[a].n,
            }
            for m, r in results.items()
            for a in r.rho
        ]
    )


def correlation_notes(res) -> dict:
    """Per architecture, the text drawn in a scatter panel for :func:`attnrank.analysis.rules.dynamics_rule` or
    :func:`attnrank.analysis.rules.loss_rule`: Spearman's rho across runs, within temperatures and the number
    of runs, on three lines. The rule reads the runs that learned, and the panel draws every run, so the note names
    its set."""
    return {
        a: f"ρ = {fmt_estimate(res.rho[a], n=False)}\nwithin τ: ρ = {fmt_estimate(res.within[a], n=False)}\n"
        f"over the {res.rho[a].n} learned runs"
        for a in res.rho
    }


def stability_rows(results: dict, shares: pd.DataFrame, tolerance: float) -> pd.DataFrame:
    """The stability half of :func:`attnrank.analysis.rules.dynamics_rule` with every measure, for reading: per
    measure and architecture the median relative change (95% order-statistic interval), the shares of
    :func:`attnrank.analysis.rules.stability_table` and the runs."""
    share = lambda m, a, col: shares[col].get((m, a), float("nan"))  # noqa: E731 (no run of ``a``: n/a)
    return pd.DataFrame(
        [
            {
                "measure": MEASURE_LABELS[m],
                "model": ARCH_LABELS[a],
                "median Δrel [95% CI]": fmt_estimate(r.change[a], 0, n=False, percent=True),
                f"stable (Δrel ≤ {fmt(tolerance, 0, percent=True)})": fmt(share(m, a, "share_stable"), 0, percent=True),
                "rank went up": fmt(share(m, a, "share_increased"), 0, percent=True),
                "largest Δrel": fmt(share(m, a, "largest"), 0, percent=True),
                "runs": r.change[a].n,
            }
            for m, r in results.items()
            for a in r.change
        ]
    )


def needed_runs(judged: dict, statuses: dict, *, prefix: str = "") -> list[str]:
    """``["BERT (MLM) <prefix>12", ...]``: the runs each unresolved part of a verdict needs (``judged``:
    ``{arch: Verdict}``, ``statuses``: ``{arch: status}``); a resolved part (supported or not supported)
    needs none, as the conventions page says."""
    return [
        f"{ARCH_LABELS[a]} {prefix}{v.needed}" for a, v in judged.items() if statuses[a] == INCONCLUSIVE and v.needed
    ]


def dynamics_summary(res: DynamicsResult, *, n_seeds: int, tolerance: float) -> str:
    """The summary of the dynamics verdict (:func:`attnrank.analysis.rules.dynamics_rule` on the primary
    measure): the correlation and the median relative change per architecture, each half's status,
    the within-temperature correlation and the runs a not-supported predictive half needs."""
    label = MEASURE_LABELS[PRIMARY_MEASURE]
    needed = [
        f"{ARCH_LABELS[a]} {v.needed}"
        for (h, a), v in res.judged.items()
        if h == "predictive" and v.status == INCONCLUSIVE and v.needed
    ]
    return (
        f"On the {label}, across {', '.join(f'{res.rho[a].n} {ARCH_LABELS[a]}' for a in res.rho)} runs "
        f"({n_seeds} seeds per setting), initial and final mean rank have Spearman ρ "
        f"{fmt_estimate(res.rho['modernbert'], n=False)} (ModernBERT) and {fmt_estimate(res.rho['gpt2'], n=False)} (GPT-2), "
        f"and the median relative change is {fmt_estimate(res.change['modernbert'], 0, n=False, percent=True)} (ModernBERT) "
        f"and {fmt_estimate(res.change['gpt2'], 0, n=False, percent=True)} (GPT-2) against a "
        f"{fmt(tolerance, 0, percent=True)} tolerance: "
        + "; ".join(f"{h} half for {ARCH_NAMES[a]}: {v}" for (h, a), v in res.halves.items())
        + ". "
        f"Within temperatures the correlation is {fmt_estimate(res.within['modernbert'], n=False)} "
        f"(ModernBERT, p = {fmt(res.within['modernbert'].p)}) and {fmt_estimate(res.within['gpt2'], n=False)} "
        f"(GPT-2, p = {fmt(res.within['gpt2'].p)})."
        + (f" Runs needed to resolve a correlation of {fmt(RHO_MIN, 1)}: {', '.join(needed)}." if needed else "")
    )


def finding(res: DynamicsResult, tolerance: float) -> str:
    """The verdict in one line for the intro's table: each half in a few words with its number."""
    rho = ", ".join(f"{ARCH_NAMES[a]} {fmt(res.rho[a].value)}" for a in res.rho)
    change = ", ".join(f"{ARCH_NAMES[a]} {fmt(res.change[a].value, 0, percent=True)}" for a in res.change)
    return f"Initial predicts final rank (ρ {rho}); median change {change} against {fmt(tolerance, 0, percent=True)}."


def deciding_effect(res: DynamicsResult, gate, tolerance: float) -> str:
    """The numbers that decide the verdict (:func:`attnrank.analysis.verdicts.deciding` over the halves after the
    learned gate, ``gate``): each half's estimate beside what the rule asks of it, for the effect column."""

    def text(half: str, a: str) -> str:
        if half == "stable":
            e = fmt_estimate(res.change[a], 0, n=False, percent=True)
            return f"{ARCH_NAMES[a]} median change {e} (the rule asks below {fmt(tolerance, 0, percent=True)})"
        return f"{ARCH_NAMES[a]} ρ {fmt_estimate(res.rho[a], n=False)} (the rule asks above {fmt(RHO_MIN)})"

    gated = {k: verdicts.INCONCLUSIVE if k[1] in gate.not_learned else st for k, st in res.halves.items()}
    return "; ".join(text(*k) for k in verdicts.deciding(gated))


def n_learned_text(learned: pd.DataFrame, ok: pd.DataFrame, archs) -> str:
    """How many runs learned, per architecture: ``"9 of 18 GPT-2, 3 of 18 ModernBERT"``."""
    return ", ".join(f"{int((learned.arch == a).sum())} of {int((ok.arch == a).sum())} {ARCH_NAMES[a]}" for a in archs)


def _trajectory_figures(sweep, tau_runs, summary, uniform, hd_taus, head_dim0: int, profile: str) -> list:
    """The rank through training: every measure over the temperature grid, and the primary measure over every head
    dimension at the temperatures ``hd_taus``."""
    m = PRIMARY_MEASURE
    d = summary[summary.key.isin(tau_runs.key)]
    hd_runs = sweep[sweep.tau.isin(hd_taus)]
    h = summary[summary.key.isin(hd_runs.key) & (summary.measure == m)]
    return [
        Figure(
            "dynamics_rank_trajectories",
            tplots.measure_trajectories(d, uniform, label="uniform attention (causal for GPT-2)"),
            d[["arch", "tau", "head_dim", "seed", "status", "measure", "step", "mean", "sem"]],
            f"{runs_caption(tau_runs, profile)}.",
        ),
        Figure(
            "dynamics_rank_trajectories_head_dim",
            tplots.head_dim_trajectories(h, highlight=head_dim0, ylabel=MEASURE_LABELS[m]),
            h[["arch", "tau", "head_dim", "num_heads", "seed", "status", "step", "mean", "sem"]],
            f"{runs_caption(hd_runs, profile)}.",
        ),
    ]


def _layer_head(sweep, heatmap_tau: float, head_dim0: int, profile: str):
    """Layer by layer, head by head at ``heatmap_tau`` and the standard head dimension: the heat maps and the glue of
    the largest change of one head."""
    m = PRIMARY_MEASURE
    heat_runs = sweep[np.isclose(sweep.tau, heatmap_tau) & (sweep.head_dim == head_dim0)]
    heat_ok = heat_runs[heat_runs.status == "complete"]
    heat = tables.layer_head_means(heat_ok, m)
    figure = Figure(
        "dynamics_layer_head",
        tplots.layer_head_heatmaps(heat, value="value", cbar_label=MEASURE_LABELS[m]),
        heat,
        # the seeds and runs behind the maps depend on which runs completed
        f"{heat_ok.seed.nunique()} seeds ({profile} profile, {len(heat_ok)} complete runs of {len(heat_runs)}).",
    )
    return figure, {
        f"dynamics_head_max_change_{a}": fmt(v, 0, percent=True) for a, v in tables.head_changes(heat).items()
    }


def _initial_vs_final(sweep, res, profile: str) -> Figure:
    """Each run's final mean rank against its initial one (the primary measure), with the rule's correlations."""
    m = PRIMARY_MEASURE
    d = sweep[["arch", "tau", "head_dim", "num_heads", "seed", "status", "sweep", f"initial_{m}", f"final_{m}"]]
    return Figure(
        "dynamics_initial_vs_final",
        tplots.run_scatter(
            d,
            x=f"initial_{m}",
            y=f"final_{m}",
            hue="tau",
            identity=True,
            annotations=correlation_notes(res),
            xlabel=f"initial mean rank ({MEASURE_LABELS[m]})",
            ylabel="final mean rank",
        ),
        d,
        f"{runs_caption(sweep, profile)}.",
    )


def _change_figure(change, stable_tolerance: float, sweep, profile: str) -> Figure:
    """How much each complete run's mean rank changes, every measure, against the rule's tolerance."""
    return Figure(
        "dynamics_relative_change",
        tplots.change_distribution(
            change,
            x="rel_change",
            y="measure",
            y_labels=MEASURE_LABELS,
            reference=stable_tolerance,
            xlabel=r"relative change of mean rank $|\bar r_{final} - \bar r_{init}| / \bar r_{init}$ (%)",
            percent=True,
        ),
        change,
        f"{runs_caption(sweep, profile)}.",
    )


def section(
    profile: str = "auto",
    *,
    seeds=None,
    taus=None,
    head_dims=None,
    heatmap_tau: float = 1.0,
    stable_tolerance: float = rules.STABLE_TOLERANCE,
    dataset: str | None = None,
) -> Section:
    """The dynamics chapter: the runs of the shared sweep (trained where missing), the rule with every
    rank measure, five figures, three tables and the ``dynamics`` verdict.

    Args:
        profile: the book's profile (``auto``: ``ATTNRANK_PROFILE``, else ``paper`` on CUDA and ``quick``).
        seeds, taus, head_dims: the sweep's grids (None: the profile's).
        heatmap_tau: the temperature ratio of the layer x head heat maps; one of the sweep's.
        stable_tolerance: the largest relative change of a stable run (the rule's tolerance).
        dataset: the training corpus (None: ``ATTNRANK_DATASET`` or Shakespeare).

    Raises:
        ConfigError: naming ``heatmap_tau`` when it is not a temperature of the sweep, or any
        parameter the sweep does not allow.
    """
    plan = experiments.sweep_plan(profile, taus=taus, head_dims=head_dims, seeds=seeds, dataset=dataset)
    profile = plan.profile
    if not any(np.isclose(heatmap_tau, t) for t in plan.taus):
        raise ConfigError(
            "heatmap_tau",
            f"got {heatmap_tau!r}; allowed values (the sweep's temperatures): {', '.join(map(fmt_setting, plan.taus))}",
        )
    m = PRIMARY_MEASURE
    label = MEASURE_LABELS[m]
    sweep = tables.main_runs(plan)
    ok = sweep[sweep.status == "complete"]
    head_dim0 = plan.head_dim
    max_len, n_seeds = int(sweep.max_len.iloc[0]), seeds_per_setting(sweep)
    tau_runs = sweep[sweep.sweep == "temperature grid"]
    uniform = baselines.uniform_ranks(max_len)
    summary = load_table(sweep, "rank_summary")
    glue = {
        **sweep_facts("dynamics", sweep, plan),
        "dynamics_rho_min": fmt(RHO_MIN, 1),
        "dynamics_default_head_dim": head_dim0,
        "dynamics_n": max_len,
        "dynamics_steps": steps_text(ok, "steps") if len(ok) else "no",
        "dynamics_tolerance_pct": fmt(stable_tolerance, 0, percent=True),
        "dynamics_heatmap_tau": fmt_setting(heatmap_tau),
        "dynamics_primary_label": label,
        "dynamics_uniform_causal": fmt(uniform[CLM_ARCH][m], 1),
    }
    g1 = tau_runs[(tau_runs.arch == CLM_ARCH) & np.isclose(tau_runs.tau, 1.0)]
    glue["dynamics_gpt2_tau1_init"] = fmt(g1[f"initial_{m}"].mean(), 1)
    glue["dynamics_gpt2_tau1_final"] = fmt(g1[f"final_{m}"].mean(), 1)
    glue.update(divergence(sweep, "dynamics"))
    section_tables = []
    hd_taus = sorted({1.0, min(plan.taus)})
    glue["dynamics_hd_taus"] = ", ".join(map(fmt_setting, hd_taus))
    figures = _trajectory_figures(sweep, tau_runs, summary, uniform, hd_taus, head_dim0, profile)
    # the rule with every measure, on the runs that learned (each held to the pre-registered target)
    learned = ok[baselines.learned_runs(ok)]
    archs = [a for a in ARCH_ORDER if a in set(ok.arch)]
    glue["dynamics_n_learned"] = n_learned_text(learned, ok, archs)
    results = {mm: rules.dynamics_rule(learned, mm, tolerance=stable_tolerance, archs=archs) for mm in RANK_MEASURES}
    res = results[m]
    for a in res.rho:
        glue[f"dynamics_rho_{a}"] = fmt_estimate(res.rho[a])
        glue[f"dynamics_within_{a}"] = fmt_estimate(res.within[a])
        glue[f"dynamics_n_ok_{a}"] = res.rho[a].n
    figures.append(_initial_vs_final(sweep, res, profile))
    section_tables.append(Table("dynamics_correlations", correlation_table(results)))
    change = rules.relative_change(ok, RANK_MEASURES)  # drawn for every complete run; the rule reads the learned
    figures.append(_change_figure(change, stable_tolerance, sweep, profile))
    shares = rules.stability_table(change, stable_tolerance)
    for a in res.change:
        glue[f"dynamics_median_change_{a}"] = fmt_estimate(res.change[a], 0, percent=True)
        for key, col in (
            ("share_stable", "share_stable"),
            ("share_increased", "share_increased"),
            ("max_change", "largest"),
        ):
            glue[f"dynamics_{key}_{a}"] = fmt(shares.loc[(m, a), col], 0, percent=True)
    # the table is the rule's: the learned runs, its median and its shares alike (the prose names all complete runs)
    learned_shares = rules.stability_table(rules.relative_change(learned, RANK_MEASURES), stable_tolerance)
    section_tables.append(Table("dynamics_stability", stability_rows(results, learned_shares, stable_tolerance)))
    heat_figure, heat_glue = _layer_head(sweep, heatmap_tau, head_dim0, profile)
    figures.append(heat_figure)
    glue.update(heat_glue)
    # the verdict
    gaps = baselines.bigram_gaps(ok)
    gains = baselines.reference_gains(ok, worst=True)
    gate = rules.learned_gate(res.halves, gaps, gains)
    reg = baselines.regime(ok, gate)
    verdict = Verdict(
        "dynamics",
        gate.status,
        finding(res, stable_tolerance),
        deciding_effect(res, gate, stable_tolerance),
        f"{sum(e.n for e in res.rho.values())} learned runs of {len(ok)}",
        regime_text(reg),
        dynamics_summary(res, n_seeds=n_seeds, tolerance=stable_tolerance) + " " + gate_text(reg),
        {mm: rules.learned_gate(r.halves, gaps, gains).status for mm, r in results.items()},
        brief=regime_brief(reg),
        gate=gate_quote(reg),
    )
    section_tables.append(by_measure_table("dynamics_by_measure", verdict, m, results))
    return Section("dynamics", glue, figures, section_tables, [verdict])
