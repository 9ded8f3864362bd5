"""Temperature against head dimension, the head-dimension chapter: which lever moves the attention rank more.

:func:`section` reads the head-dimension grid of the shared sweep, computes the theory on the
freshly initialised models (their logit scale, the P1 staircase bound and the P1' limit for
i.i.d. logits), applies the pre-registered lever rule (:func:`attnrank.analysis.rules.lever_comparison`:
the range of the mean initial rank over the temperature grid against its range over the
head-dimension grid) with every rank measure and returns the chapter's
:class:`~attnrank.sections.section.Section`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..analysis import baselines, rules, stats, verdicts
from ..analysis.rules import PRIMARY_MEASURE, ArchResult, SweepVerdict
from ..analysis.stats import Estimate
from ..core.architectures import architecture
from ..core.profiles import MLM_ARCH, resolve_config
from ..plots import sweeps
from ..runs import experiments, tables
from ..words.glossary import (
    ARCH_LABELS,
    ARCH_NAMES,
    ARCHS,
    MEASURE_LABELS,
    RANK_MEASURES,
    fmt,
    fmt_estimate,
    fmt_setting,
    fmt_tau,
)
from .section import (
    INITIAL_BRIEF,
    INITIAL_REGIME,
    Figure,
    Section,
    Table,
    Verdict,
    by_measure_table,
    divergence,
    runs_caption,
    seeds_per_setting,
)

__all__ = [
    "section",
    "lever_table",
    "LEVERS",
    "lever_effects",
    "direction_text",
    "lever_texts",
    "direction_note",
    "lever_summary",
    "finding",
]


def lever_table(lever_v: dict) -> pd.DataFrame:
    """:func:`attnrank.analysis.rules.lever_comparison` over the whole trained grid with every measure, for reading (reported
    beside the rule, not judged): one row per measure and architecture."""
    return pd.DataFrame(
        [
            {
                "measure": MEASURE_LABELS[m],
                "model": ARCH_LABELS[a],
                "τ range": fmt_estimate(r.parts["tau_range"], 2, n=False),
                "dₕ range": fmt_estimate(r.parts["head_dim_range"], 2, n=False),
                "dₕ: largest − smallest": fmt_estimate(r.parts["head_dim_change"], 2, n=False),
                "difference of ranges": fmt_estimate(r.verdict.estimate, 2, n=False),
                "runs": r.verdict.estimate.n,
            }
            for m, v in lever_v.items()
            for a, r in v.arch.items()
        ]
    )


def window_table(res: dict, windows: dict) -> pd.DataFrame:
    """The rule (:func:`window_rule`) with every measure, for reading: one row per end (stock, cold), measure and
    architecture, with each lever's range over its window, their difference and that case's verdict."""
    return pd.DataFrame(
        [
            {
                "end": f"{regime} (dₕ at {fmt_tau(at)})",
                "measure": MEASURE_LABELS[m],
                "model": ARCH_LABELS[a],
                "τ range": fmt_estimate(r.parts["tau_range"], 2, n=False),
                "dₕ range": fmt_estimate(r.parts["head_dim_range"], 2, n=False),
                "difference of ranges": fmt_estimate(r.verdict.estimate, 2, n=False),
                "initialisations": r.verdict.estimate.n,
                "verdict": r.verdict.status,
            }
            for regime, (at, _, _) in windows.items()
            for m, v in res[regime].items()
            for a, r in v.arch.items()
        ]
    )


#: The rows of :func:`lever_effects`: each lever's range and their difference.
LEVERS = {
    "tau_range": "τ over its grid",
    "head_dim_range": "dₕ over its grid (τ = 1)",
    "diff": "difference (τ − dₕ)",
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
    return f"{word} from {fmt(means.loc[lo])} at head dimension {lo} to {fmt(means.loc[hi])} at head dimension {hi} (change {fmt_estimate(change, 2)})"


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
                # no n: the two arms' counts stand beside it, and they share the stock cell's runs (15 + 5 is 17 runs)
                f"diff_{a}": fmt_estimate(r.verdict.estimate, 2, n=False),
                f"loss_tau_range_{a}": fmt_estimate(loss_lv[a].parts["tau_range"], 3),
                f"loss_hd_range_{a}": fmt_estimate(loss_lv[a].parts["head_dim_range"], 3),
                f"direction_{a}": direction_text(r.parts["head_dim_change"], means[a]),
                f"spread_{a}": fmt(r.spread, 3),
            }
        )
    return out


def direction_note(lv: SweepVerdict) -> str:
    """Whether the measured rank follows the staircase bound upward with the head dimension, in words, from the
    signed largest-minus-smallest change of :func:`lever_comparison` (``parts["head_dim_change"]``)."""
    falls = [a for a, r in lv.arch.items() if r.parts["head_dim_change"].high < 0]
    rises = [a for a, r in lv.arch.items() if r.parts["head_dim_change"].low > 0]
    if not rises:
        return "at this width the measured rank does not follow the staircase bound upward"
    return (
        "the measured rank rises with the head dimension for "
        + " and ".join(ARCH_LABELS[a] for a in rises)
        + ("" if not falls else ", and falls for " + " and ".join(ARCH_LABELS[a] for a in falls))
    )


def lever_summary(lv: SweepVerdict, *, effect: float, profile: str, n_seeds: int, head_dims, hidden: int) -> str:
    """The summary of the verdict of :func:`attnrank.analysis.rules.lever_comparison` on the primary measure."""
    label = MEASURE_LABELS[PRIMARY_MEASURE]

    def arch_text(r: ArchResult) -> str:
        s = (
            f"the temperature moves the mean initial {label} by {fmt_estimate(r.parts['tau_range'], 2)} runs over its "
            f"grid and the head dimension by {fmt_estimate(r.parts['head_dim_range'], 2)} runs (difference "
            f"{fmt_estimate(r.verdict.estimate, 2, n=False)}"
        )
        if r.verdict.status == verdicts.INCONCLUSIVE and r.verdict.needed is not None:
            s += f"; about {r.verdict.needed} {r.verdict.needed_unit} would resolve a difference of {fmt_setting(effect)}"
        return s + ")"

    return (
        f"over the ranges a user can set (range of the seed means, 95% stratified-bootstrap intervals), for ModernBERT "
        f"{arch_text(lv['modernbert'])}, and for GPT-2 {arch_text(lv['gpt2'])}. The {profile} profile, {n_seeds} "
        f"seeds per setting, head dimensions {', '.join(map(fmt_setting, head_dims))} at hidden size {hidden}."
    )


#: Seeds of the lever windows at initialisation (no training: the initial rank varies little between seeds).
WINDOW_SEEDS = 3


def lever_windows(profile: str, hidden: int, head_dim0: int, tau_min: float) -> dict:
    """The pre-registered ranges of the lever rule (:data:`attnrank.analysis.rules.LEVER_FACTOR`): per regime (``"stock"``,
    ``"cold"``) the temperature window at ``head_dim0`` and the head-dimension window at fixed width ``hidden``, each
    a factor of ``LEVER_FACTOR`` in its own setting, in steps of 2: ``{regime: (tau_at, taus, head_dims)}``. The
    stock temperature window ends at 1, the cold one starts at ``tau_min``; the head dimensions are
    ``hidden / 2, hidden / 4, ...``."""
    k = round(math.log2(rules.LEVER_FACTOR))
    dims = [hidden // 2**j for j in range(1, k + 2) if hidden % 2**j == 0]
    return {
        "stock": (1.0, [2.0**-j for j in range(k, -1, -1)], dims),
        "cold": (tau_min, [tau_min * 2.0**j for j in range(k + 1)], dims),
    }


def window_rule(profile: str, hidden: int, head_dim0: int, tau_min: float, dataset=None, measures=RANK_MEASURES):
    """The lever rule on the windows of :func:`lever_windows`, at initialisation: per regime and measure the
    :func:`attnrank.analysis.rules.lever_comparison` of the freshly initialised models (:func:`attnrank.analysis.baselines.init_means`,
    :data:`WINDOW_SEEDS` seeds; an odd head dimension is left out for an architecture with rotary positions, which
    only the ``ci`` profile's window reaches). Returns ``({regime: {measure: SweepVerdict}}, init_table)``."""
    windows = lever_windows(profile, hidden, head_dim0, tau_min)
    keys = sorted(
        {
            (a, t, head_dim0, s)
            for a in ARCHS
            for _, taus, _ in windows.values()
            for t in taus
            for s in range(WINDOW_SEEDS)
        }
        | {
            (a, at, h, s)
            for a in ARCHS
            for at, _, dims in windows.values()
            for h in dims
            for s in range(WINDOW_SEEDS)
            if not (architecture(a).rotary and h % 2)  # rotary positions need an even head dimension (ci's d_h = 1)
        }
    )
    init = baselines.init_means(
        [resolve_config(a, profile, tau=t, head_dim=h, seed=s, dataset=dataset) for a, t, h, s in keys],
        measures=measures,
    )
    out = {}
    for regime, (at, taus, dims) in windows.items():
        on_grid = np.isclose(init.tau.to_numpy(float)[:, None], np.asarray(taus)[None, :]).any(axis=1)
        t_rows = init[(init.head_dim == head_dim0) & on_grid]
        h_rows = init[np.isclose(init.tau, at) & init.head_dim.isin(dims)]
        out[regime] = {mm: rules.lever_comparison(t_rows, h_rows, mm) for mm in measures}
    return out, init


def window_summary(res: dict, windows: dict, hidden: int) -> str:
    """The verdict's sentences from :func:`window_rule` on the primary measure: per regime and architecture the
    range of each lever over its window and their difference."""
    label = MEASURE_LABELS[PRIMARY_MEASURE]
    parts = []
    for regime, (at, taus, dims) in windows.items():
        v = res[regime][PRIMARY_MEASURE]
        each = "; ".join(
            f"{ARCH_NAMES[a]} {fmt_estimate(r.parts['tau_range'], 2, n=False)} against "
            f"{fmt_estimate(r.parts['head_dim_range'], 2, n=False)} (difference {fmt_estimate(r.verdict.estimate, 2, n=False)})"
            for a, r in v.arch.items()
        )
        parts.append(
            f"{'At the stock end' if regime == 'stock' else 'At the cold end'}, τ from {fmt_setting(min(taus))} to "
            f"{fmt_setting(max(taus))} against d_h from {min(dims)} to {max(dims)} at {fmt_tau(at)}: {each}, "
            f"{v.status}"
        )
    return (
        f"Each lever moved over a factor of {rules.LEVER_FACTOR} of its own setting at initialisation (range of the "
        f"mean initial {label} over {WINDOW_SEEDS} seeds, 95% stratified-bootstrap intervals; hidden size {hidden}). "
        + ". ".join(parts)
        + "."
    )


def window_finding(res: dict, windows: dict) -> str:
    """The verdict in one line for the intro's table: per regime, the two ranges of the primary measure."""
    parts = []
    for regime in windows:
        v = res[regime][PRIMARY_MEASURE]
        parts.append(
            f"{regime}: "
            + ", ".join(
                f"{ARCH_NAMES[a]} {fmt(r.parts['tau_range'].value, 1)} vs {fmt(r.parts['head_dim_range'].value, 1)}"
                for a, r in v.arch.items()
            )
        )
    return f"Initial effective-rank range, τ vs dₕ, each ×{rules.LEVER_FACTOR}: " + "; ".join(parts) + "."


def finding(lv: SweepVerdict) -> str:
    """The verdict in one line for the intro's table."""
    parts = ", ".join(
        f"{ARCH_NAMES[a]} {fmt(r.parts['tau_range'].value, 1)} against {fmt(r.parts['head_dim_range'].value, 1)}"
        for a, r in lv.arch.items()
    )
    return f"Range of the mean initial effective rank over each grid, τ against head dimension: {parts}."


def bound_holds_text(violations: int, matrices: int) -> str:
    """How often the P1 bound holds, in words: ``"The bound holds for every one of the 7,680 ModernBERT matrices"``,
    or ``"The bound fails for 3 of the 7,680 ModernBERT matrices"``."""
    if violations == 0:
        return f"The bound holds for every one of the {matrices:,} ModernBERT matrices"
    return f"The bound fails for {violations:,} of the {matrices:,} ModernBERT matrices"


# --------------------------------------------------------------------------- the chapter


def _initial_theory(plan, hd_taus, tau_min: float, mc_samples: int):
    """The theory on the freshly initialised models (seed 0) of every head dimension at ``hd_taus``: their statistics,
    the sequence length, the P1' i.i.d.-logit limits, the logit-scale and limit tables and their glue."""
    init = pd.concat(
        [
            baselines.init_statistics(
                resolve_config(a, plan.profile, tau=t, head_dim=h, seed=0, dataset=plan.dataset),
                bounds=True,
                measures=("rank_rtol_1e-2", "rank_rtol_1e-4"),
            )
            for a in ARCHS
            for h in plan.head_dims
            for t in hd_taus
        ],
        ignore_index=True,
    )
    tabs, glue = [], {}
    scale = (
        init.groupby(["arch", "tau", "head_dim"])
        .agg(logit_sd=("logit_sd", "mean"), M_median=("M", "median"))
        .reset_index()
    )
    wide = scale.pivot(index=["arch", "tau"], columns="head_dim", values="logit_sd").reset_index()
    wide.columns = ["model", "τ"] + [f"d_h = {h}" for h in wide.columns[2:]]
    tabs.append(
        Table(
            "headdim_logit_scale", wide.assign(model=wide.model.map(ARCH_LABELS)), digits=4, formats={"τ": fmt_setting}
        )
    )
    n_tok = int(init.n.iloc[0])
    for k, v in tables.means_at(scale, "logit_sd", {"base": 1.0, "min": tau_min}, prefix="headdim_logit_sd_").items():
        glue[k] = fmt(v, 3)
    glue["headdim_n"] = n_tok
    limits = baselines.iid_limits(scale.groupby(["arch", "tau"]).logit_sd.mean().reset_index(), n_tok, mc_samples)
    lim = limits.assign(label=limits.measure.map(MEASURE_LABELS), model=limits.arch.map(ARCH_NAMES))
    lim = lim.assign(column=lim.model + ", τ = " + lim.tau.map(fmt_setting)).pivot(
        index="label", columns="column", values="value"
    )
    tabs.append(Table("headdim_iid_limits", lim.rename_axis("measure").reset_index().rename_axis(None, axis=1)))
    return init, n_tok, limits, tabs, glue


def _rank_figures(hd_runs, init, limits, uniform, head_dims, hd_taus, n_tok: int, profile: str):
    """The rank against the head dimension, one figure per temperature of ``hd_taus``, with the P1 staircase where
    the logits are small enough, the P1' limit and uniform attention; and the glue saying which have a staircase."""
    glue = {}
    hd_long = tables.long_form(hd_runs)
    stair, small = baselines.staircase(head_dims, n_tok), baselines.small_logits(init, n_tok)
    uni = sweeps.reference_lines(uniform, "uniform attention (causal for GPT-2)")
    figures = []
    for t in hd_taus:
        which = "stock" if t == 1.0 else "cold"
        # whether the logits are small enough for the P1 bound to fall below n (the staircase is drawn)
        glue[f"headdim_staircase_{which}"] = (
            "grey: the P1 staircase $r_1, r_2$ (capped at $n$);"
            if small[t]
            else "no staircase: at this temperature the P1 bound computed from the logits is $n$;"
        )
        d = hd_long[np.isclose(hd_long.tau, t)]
        limit = sweeps.limit_lines(limits, t, "P1' i.i.d.-logit limit (initialisation)")
        refs = pd.concat(([stair] if small[t] else []) + [limit, uni], ignore_index=True)
        figures.append(
            Figure(
                f"headdim_rank_vs_head_dim_{which}",
                sweeps.by_setting(
                    d, "head_dim", facet="measure", style="when", refs=refs, title=rf"$\tau$ = {fmt_setting(t)}"
                ),
                pd.concat([d.assign(kind="run"), refs.assign(kind="reference", tau=t)], ignore_index=True),
                f"{runs_caption(d, profile)}.",
            )
        )
    return figures, glue


def section(
    profile: str = "auto", *, seeds=None, taus=None, head_dims=None, mc_samples: int | None = 256, dataset=None
) -> Section:
    """The head-dimension chapter: the head-dimension grid of the shared sweep at ``tau = 1`` and the
    coldest ``tau`` (trained where missing), the theory computed on the freshly initialised models (logit
    scale, the P1 staircase and its bound, the P1' limit for i.i.d. logits), the lever rule with every
    rank measure, three figures, five tables and the ``headdim`` verdict.

    Args:
        profile, seeds, taus, head_dims, dataset: the shared sweep (see :func:`attnrank.sections.dynamics.section`).
        mc_samples: random matrices per Monte Carlo estimate of the P1' limit (None: 256).

    Raises:
        ConfigError: for a parameter the sweep does not allow.
    """
    plan = experiments.sweep_plan(profile, taus=taus, head_dims=head_dims, seeds=seeds, dataset=dataset)
    profile = plan.profile
    mc_samples = 256 if mc_samples is None else mc_samples
    m = PRIMARY_MEASURE
    label = MEASURE_LABELS[m]
    sweep = tables.main_runs(plan)
    tau_min = float(min(plan.taus))
    hd_taus = sorted({1.0, tau_min}, reverse=True)
    head_dim0, hidden = plan.head_dim, plan.hidden_size
    hd_runs = sweep[sweep.head_dim.isin(plan.head_dims) & sweep.tau.isin(hd_taus)].sort_values(
        ["arch", "tau", "head_dim", "seed"]
    )
    t_runs = sweep[(sweep.head_dim == head_dim0) & sweep.tau.isin(plan.taus)]
    n_seeds = seeds_per_setting(hd_runs)
    glue = {
        "headdim_n_runs": len(hd_runs),
        "headdim_n_seeds": n_seeds,
        "headdim_hidden": hidden,
        "headdim_tau_min": fmt_setting(tau_min),
        "headdim_head_dims": ", ".join(map(str, plan.head_dims)),
        "headdim_n_taus": len(plan.taus),
        "headdim_heads": ", ".join(str(hidden // h) for h in plan.head_dims),
        "headdim_taus": ", ".join(map(fmt_setting, hd_taus)),
        "headdim_head_dim0": head_dim0,
        "headdim_n_resamples": f"{stats.N_RESAMPLES:,}",
        "headdim_mc_samples": mc_samples,
    }
    glue.update(divergence(sweep, "headdim"))
    section_tables = []
    init, n_tok, limits, init_tables, init_glue = _initial_theory(plan, hd_taus, tau_min, mc_samples)
    section_tables += init_tables
    glue.update(init_glue)
    uniform = baselines.uniform_ranks(n_tok)
    glue.update({f"headdim_uniform_{a}": fmt(u[m]) for a, u in uniform.items()})
    figures, fig_glue = _rank_figures(hd_runs, init, limits, uniform, plan.head_dims, hd_taus, n_tok, profile)
    glue.update(fig_glue)
    check, facts = baselines.bound_check(init[init.arch == MLM_ARCH], n_tok)
    glue.update(
        {
            f"headdim_p1_{k}": v if isinstance(v, (int, np.integer)) else fmt(v, 0, percent=True)
            for k, v in facts.items()
        }
    )
    glue["headdim_p1_holds"] = bound_holds_text(int(facts["violations"]), int(facts["matrices"]))
    section_tables.append(Table("headdim_bound_check", _bound_table(check), digits=3, formats={"τ": fmt_setting}))
    # the lever rule
    hd1, hdmin = hd_runs[np.isclose(hd_runs.tau, 1.0)], hd_runs[np.isclose(hd_runs.tau, tau_min)]
    lever_v = {mm: rules.lever_comparison(t_runs, hd1, f"initial_{mm}") for mm in RANK_MEASURES}
    done = lambda d: d[d.status == "complete"]  # noqa: E731
    loss_lv = rules.lever_comparison(done(t_runs), done(hd1), "final_val_loss")
    lv, lv_min = lever_v[m], rules.lever_comparison(t_runs, hdmin, f"initial_{m}")
    eff = lever_effects({f"initial {label}": lv, "final validation loss": loss_lv})
    figures.append(
        Figure(
            "headdim_effect_sizes",
            sweeps.effect_forest(
                eff,
                xlabels={
                    f"initial {label}": "range of the mean",
                    "final validation loss": "range of the mean\n(nats/token)",
                },
            ),
            eff,
            f"{runs_caption(pd.concat([t_runs, hd1]), profile)}.",
        )
    )
    section_tables.append(Table("headdim_grid_ranges", lever_table(lever_v)))
    means = {a: hd1[hd1.arch == a].groupby("head_dim")[f"initial_{m}"].mean() for a in ARCHS}
    glue.update({f"headdim_{k}": v for k, v in lever_texts(lv, lv_min, loss_lv, means).items()})
    glue["headdim_direction_note"] = direction_note(lv)
    # the rule (since 2026-12-05): equal factors of each setting, at the stock and the cold temperature
    windows = lever_windows(profile, hidden, head_dim0, tau_min)
    win, _ = window_rule(profile, hidden, head_dim0, tau_min, plan.dataset)
    status_of = {mm: verdicts.combine([win[r][mm].status for r in windows]) for mm in RANK_MEASURES}
    verdict = Verdict(
        "headdim",
        status_of[m],
        window_finding(win, windows),
        f"τ range minus dₕ range of the initial {MEASURE_LABELS[m]}, "
        + "; ".join(
            f"{regime} end: "
            + ", ".join(
                f"{ARCH_NAMES[a]} {fmt_estimate(r.verdict.estimate, n=False)}" for a, r in win[regime][m].arch.items()
            )
            for regime in windows
        ),
        f"{sum(win[r][m].n_runs for r in windows)} initialisations",
        INITIAL_REGIME,
        window_summary(win, windows, hidden)
        + " On the trained grid (reported, not judged), "
        + lever_summary(
            lv, effect=rules.LEVER_EFFECT, profile=profile, n_seeds=n_seeds, head_dims=plan.head_dims, hidden=hidden
        ),
        status_of,
        brief=INITIAL_BRIEF,
    )
    section_tables.append(Table("headdim_lever_rule", window_table(win, windows)))
    glue["headdim_lever_factor"] = rules.LEVER_FACTOR
    glue["headdim_window_seeds"] = WINDOW_SEEDS
    glue["headdim_window_dims"] = ", ".join(map(str, windows["stock"][2]))
    section_tables.append(by_measure_table("headdim_by_measure", verdict, m))
    return Section("headdim", glue, figures, section_tables, [verdict])


def _bound_table(check: pd.DataFrame) -> pd.DataFrame:
    """:func:`attnrank.analysis.baselines.bound_check`'s table with the columns a reader sees."""
    names = {"tau": "τ", "head_dim": "head dimension", "M": "median half-range M", "r_1": "r₁", "r_2": "r₂"}
    for m in ("rank_rtol_1e-2", "rank_rtol_1e-4"):  # the measure's label, and the bound at its tolerance
        names[f"rank {m.removeprefix('rank_')}"] = MEASURE_LABELS[m]
        names[f"bound {m.removeprefix('rank_')}"] = "bound" + MEASURE_LABELS[m].removeprefix("rank")
    return check.rename(columns={c: names.get(c, c) for c in check.columns})
