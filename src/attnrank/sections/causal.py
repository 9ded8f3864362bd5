"""Is temperature a capacity knob or an optimisation knob? The runs and measurements of that test.

Proposition P3 of the theory notes: dividing the logits by ``tau`` is the same model as
multiplying the query and key weights and biases by ``s = 1 / sqrt(tau)``; under Adam with
epsilon -> 0, no weight decay on the query/key weights and no gradient clipping, training with the
query/key learning rate also multiplied by ``s`` follows the same trajectory. So a run at ``tau``
has a *twin* at ``tau = 1`` (``qk_init_scale = qk_lr_scale = s``), and the two halves of the twin,
the initial logit scale and the query/key step size, can be set one at a time:

* :data:`CELLS` - the five runs of one seed: ``stock`` (``tau = 1``), ``init`` (``qk_init_scale =
  s``), ``lr`` (``qk_lr_scale = s``), ``twin`` (both), ``tau`` (the temperature itself); all
  trained under :data:`P3_CONDITIONS`;
* :func:`causal_runs` - their configs at a profile's chapter preset (:data:`CAUSAL_PRESETS`);
* :func:`label_cells`, :func:`outcomes`, :func:`effects` - the outcome of every run (initial rank,
  mean rank through training, final loss) and each cell's difference from ``stock``;
* :func:`eval_temperatures` - the intervention at fixed weights: a trained model evaluated at
  other temperatures (rank and validation loss per evaluation ``tau``);
* :func:`runs_text`, :func:`twins_table`, :func:`twin_gaps`, :func:`effects_table`,
  :func:`intervention`, :func:`intervention_spans`, :func:`verdict_summary` - the chapter's tables,
  glued numbers and verdict sentence (its figures: :mod:`attnrank.plots.causal`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis import baselines, rules, verdicts
from ..analysis.rules import PRIMARY_MEASURE, SweepVerdict, paired_difference, two_point
from ..analysis.stats import Estimate
from ..core.errors import ConfigError, check_real
from ..core.models import set_tau
from ..core.probe import RankProbe
from ..core.profiles import ARCHS, TAU_RANGE, RunConfig, resolve_profile
from ..core.rank import check_measures
from ..core.train import prepare_data
from ..plots.causal import CELL_LABELS, cells_figure, intervention_figure
from ..runs.experiments import CAUSAL_PRESETS, CAUSAL_TAU, CELLS, P3_CONDITIONS, causal_runs, twin_scale
from ..runs.store import Run, load_table, read
from ..runs.tables import table as runs_table
from ..words.glossary import ARCH_LABELS, ARCH_NAMES, fmt, fmt_estimate, fmt_sci, fmt_setting, profile_sizes
from .section import (
    Figure,
    Section,
    Table,
    Verdict,
    divergence,
    gate_quote,
    gate_text,
    needed_text,
    regime_brief,
    regime_text,
)

__all__ = [
    "label_cells",
    "outcomes",
    "OUTCOMES",
    "effects",
    "eval_temperatures",
    "runs_text",
    "twins_table",
    "twin_gaps",
    "answer_text",
    "effects_table",
    "intervention",
    "intervention_spans",
    "verdict_summary",
]


def label_cells(runs: pd.DataFrame, tau: float) -> pd.Series:
    """The cell (:data:`CELLS`) of each run of a :func:`attnrank.runs.store.load_runs` table, or NaN.

    Raises:
        ConfigError: naming ``runs`` when the columns ``tau``, ``qk_init_scale``, ``qk_lr_scale`` are missing.
    """
    need = [c for c in ("tau", "qk_init_scale", "qk_lr_scale") if c not in runs.columns]
    if need:
        raise ConfigError("runs", f"missing columns {need}")
    s = twin_scale(tau)
    t, i, lr = (runs[c].astype(float).to_numpy() for c in ("tau", "qk_init_scale", "qk_lr_scale"))
    one, scaled = np.isclose(t, 1.0), np.isclose(t, tau)
    i1, is_, l1, ls = np.isclose(i, 1.0), np.isclose(i, s), np.isclose(lr, 1.0), np.isclose(lr, s)
    out = np.select(
        [one & i1 & l1, one & is_ & l1, one & i1 & ls, one & is_ & ls, scaled & i1 & l1], list(CELLS), default=""
    )
    return pd.Series([c or np.nan for c in out], index=runs.index, name="cell", dtype=object)


#: The outcomes of a run compared across cells: ``(column, description)``.
OUTCOMES = {
    "initial": "rank at initialisation",
    "during": "mean rank through training (probe steps after 0)",
    "final_val_loss": "final validation loss (nats/token)",
}


def outcomes(runs: pd.DataFrame, measure: str) -> pd.DataFrame:
    """One row per run: ``key, arch, seed, cell, status`` and the :data:`OUTCOMES` for ``measure``.

    ``initial`` is the run's mean ``measure`` at step 0, ``during`` the mean over its later probe
    steps (from its ``rank_summary``), ``final_val_loss`` its last validation loss (NaN for a
    failed run).

    Raises:
        ConfigError: naming ``runs`` without a ``cell`` column, ``measure`` for an unknown measure.
    """
    check_measures([measure])
    if "cell" not in runs.columns:
        raise ConfigError("runs", "needs a 'cell' column (label_cells)")
    summ = load_table(runs, "rank_summary")
    summ = summ[summ.measure == measure]
    during = summ[summ.step > 0].groupby("key")["mean"].mean()
    out = runs[["key", "arch", "seed", "cell", "status"]].copy()
    out["initial"] = runs[f"initial_{measure}"].to_numpy(float)
    out["during"] = out.key.map(during).astype(float)
    out["final_val_loss"] = np.where(runs.status == "complete", runs.final_val_loss.astype(float), np.nan)
    return out.reset_index(drop=True)


def effects(table: pd.DataFrame) -> pd.DataFrame:
    """Each cell's difference from ``stock`` for every outcome and architecture, and the twin gap.

    Returns rows ``arch, outcome, contrast, value, low, high, p, n`` where ``contrast`` is a cell
    of :data:`CELLS` other than ``stock`` (its runs minus the ``stock`` runs of the same seeds) or
    ``"tau - twin"`` (the temperature run minus its twin: zero if P3 holds): the mean of the
    per-seed differences with a Student-t 95% interval (:func:`attnrank.analysis.rules.paired_difference`).
    """
    rows = []
    for a in sorted(table.arch.unique()):
        d = table[table.arch == a]
        for o in OUTCOMES:
            pairs = [(c, c, "stock") for c in CELLS[1:]] + [("tau - twin", "tau", "twin")]
            for name, u, v in pairs:
                e = paired_difference(d, o, u, v)
                rows.append(
                    {
                        "arch": a,
                        "outcome": o,
                        "contrast": name,
                        "value": e.value,
                        "low": e.low,
                        "high": e.high,
                        "p": e.p,
                        "n": e.n,
                    }
                )
    return pd.DataFrame(rows)


def eval_temperatures(run, taus, *, measures=("effective_rank",)) -> pd.DataFrame:
    """A trained model evaluated at other temperatures, its weights fixed (the intervention).

    Args:
        run: a stored run (:class:`attnrank.runs.store.Run`, or its folder as a path or string).
        taus: evaluation temperature ratios (each in [1e-3, 1e3]); the logits are
            ``Q K^T / (tau_eval sqrt(head_dim))`` with the trained ``Q, K``.
        measures: rank measures of :data:`attnrank.core.rank.MEASURES`.

    Returns:
        One row per evaluation ``tau``: ``eval_tau``, ``train_tau``, the mean of each measure over
        heads, layers and the run's probe sequences (``[probe_size, max_len]``, as in training)
        and ``val_loss`` (nats/token on the run's fixed validation batches), all in float32 as the
        run's own probes; the model's ``tau`` is restored.

    Raises:
        ConfigError: naming ``taus`` for a value outside [1e-3, 1e3] or an empty list,
        ``measures`` for an unknown measure, ``run`` for a folder that is not a complete run.
    """
    taus = [
        check_real("taus", t, low=TAU_RANGE[0], high=TAU_RANGE[1])
        for t in (taus if isinstance(taus, (list, tuple, np.ndarray)) else [taus])
    ]
    if not taus:
        raise ConfigError("taus", "got an empty list; expected evaluation temperature ratios")
    measures = check_measures(measures)
    if not isinstance(run, Run):
        found = read(run)
        if found is None:
            raise ConfigError("run", f"{run} is not a complete stored run")
        run = found
    cfg = RunConfig(**{k: v for k, v in run.config.items() if k != "head_dim"})
    _, _, _, probe_ids, val_batches = prepare_data(cfg)
    model = run.load_model()
    probe = RankProbe(probe_ids, val_batches, measures)
    rows = []
    try:
        for i, t in enumerate(taus):
            set_tau(model, t)
            r = probe(model, i)
            rows.append({"eval_tau": t, "train_tau": cfg.tau, **{m: r[m] for m in measures}, "val_loss": r["val_loss"]})
    finally:
        set_tau(model, cfg.tau)
    return pd.DataFrame(rows)


def runs_text(runs: pd.DataFrame, profile: str, n_seeds: int) -> str:
    """The chapter's sentence on its runs: count, sizes (from the first run), seeds and diverged runs.

    ``runs``: one row per run with ``hidden_size``, ``num_layers``, ``head_dim``, ``max_steps``,
    ``status``; the sizes' profile is :data:`CAUSAL_PRESETS` ``[profile]``.
    """
    c0 = runs.iloc[0]
    return (
        f"{len(runs)} runs ({profile_sizes(profile, CAUSAL_PRESETS[profile][0])}: hidden size {c0.hidden_size}, "
        f"{c0.num_layers} layers, head dimension {c0.head_dim}, {int(c0.max_steps)} steps; {n_seeds} seeds), "
        f"{divergence(runs, 'causal', listed=False)['causal_diverged']}"
    )


def _twin_pair(table: pd.DataFrame, arch: str, outcome: str) -> list[np.ndarray]:
    return [
        table[(table.arch == arch) & (table.cell == c)].sort_values("seed")[outcome].to_numpy(float)
        for c in ("tau", "twin")
    ]


def twins_table(table: pd.DataFrame) -> pd.DataFrame:
    """The ``tau`` runs against their twins, per architecture and outcome (rows ``arch, outcome``).

    Columns: the difference of means over seeds with its Welch-t interval as text
    (:func:`attnrank.analysis.rules.two_point`), the largest per-seed ``|tau - twin|`` and the standard
    deviation over seeds of the ``tau`` runs (``ddof=1``). ``table``: :func:`outcomes`, for each model it holds
    (in the order of :data:`~attnrank.core.profiles.ARCHS`).
    """
    rows = []
    for a in [a for a in ARCHS if a in set(table.arch)]:
        for o in OUTCOMES:
            tau_runs, twin_runs = _twin_pair(table, a, o)
            rows.append(
                {
                    "model": ARCH_LABELS[a],
                    "outcome": OUTCOMES[o],
                    "τ − twin, over seeds [95% CI]": fmt_estimate(two_point(tau_runs, twin_runs), 4, n=False),
                    "largest per-seed |τ − twin|": float(np.nanmax(np.abs(tau_runs - twin_runs))),
                    "seed sd": float(np.nanstd(tau_runs, ddof=1)),
                    "_loss": o == "final_val_loss",
                }
            )
    return pd.DataFrame(rows)


def twin_gaps(twins: pd.DataFrame) -> dict:
    """``causal_twin_max_loss`` and ``causal_twin_max_rank``: the largest per-seed ``|tau - twin|`` of
    :func:`twins_table` over the final loss and over the two rank outcomes."""
    gap, is_loss = twins["largest per-seed |τ − twin|"], twins["_loss"]
    return {"causal_twin_max_loss": fmt(gap[is_loss].max(), 2), "causal_twin_max_rank": fmt(gap[~is_loss].max(), 2)}


def effects_table(eff: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """:func:`effects` without the twin gap as ``(table, glue)``.

    ``table``: rows ``(arch, outcome label)``, one column per cell other than ``stock``, each
    effect as text with its interval (4 decimals for the loss, 3 for the ranks); ``glue``:
    ``causal_<outcome>_<cell>`` -> the same text for every model the runs hold, each named after its effect
    (``"−0.0512 [−0.0601, −0.0423] (GPT-2)"``, joined by "and" where there are two).
    """
    tab = eff[eff.contrast != "tau - twin"].copy()
    tab["effect"] = [
        fmt_estimate(Estimate(r.value, r.low, r.high, r.n, ""), 4 if r.outcome == "final_val_loss" else 3, n=False)
        for r in tab.itertuples()
    ]
    glue = {
        f"causal_{o}_{c}": " and ".join(f"{r.effect} ({ARCH_NAMES[r.arch]})" for r in d.itertuples())
        for (o, c), d in tab.sort_values("arch", key=lambda a: a.map(ARCHS.index)).groupby(["outcome", "contrast"])
    }
    shown = tab.assign(outcome=tab.outcome.map(OUTCOMES)).pivot_table(
        index=["arch", "outcome"], columns="contrast", values="effect", aggfunc="first"
    )[list(CELLS[1:])]
    shown = shown.rename(columns={c: f"“{CELL_LABELS[c]}” minus “τ = 1”" for c in CELLS[1:]}).reset_index()
    return shown.assign(arch=shown.arch.map(ARCH_LABELS)).rename(columns={"arch": "model"}).rename_axis(
        None, axis=1
    ), glue


def intervention(runs: pd.DataFrame, seeds, taus, measure: str) -> pd.DataFrame:
    """:func:`eval_temperatures` for the complete ``stock`` and ``tau`` runs of ``seeds``, stacked,
    with the run's ``arch`` and ``seed`` (``runs``: labelled with :func:`label_cells`, with ``path``)."""
    pick = runs[runs.cell.isin(["stock", "tau"]) & runs.seed.isin(seeds) & (runs.status == "complete")]
    return pd.concat(
        [
            eval_temperatures(r.path, taus, measures=(measure,)).assign(arch=r.arch, seed=r.seed)
            for r in pick.itertuples()
        ],
        ignore_index=True,
    )


def intervention_spans(inter: pd.DataFrame, measure: str) -> dict:
    """``causal_int_rank`` and ``causal_int_loss``: the smallest to the largest range over evaluation
    temperatures of a run's ``measure`` and of its validation loss, as text."""
    span = inter.groupby(["arch", "train_tau", "seed"]).agg(
        rank_range=(measure, np.ptp), loss_range=("val_loss", np.ptp)
    )
    return {
        "causal_int_rank": f"{span.rank_range.min():.2f} to {span.rank_range.max():.2f}",
        "causal_int_loss": f"{fmt(span.loss_range.min(), 2)} to {fmt(span.loss_range.max(), 2)}",
    }


def cells_learned_text(runs: pd.DataFrame) -> str:
    """Which cells of the design end below their bigram count model, in words, per model: the learned gate reads the
    stock cell alone (the other cells are the interventions), so a reader is told where an intervention kept the model
    from learning. ``runs``: the complete runs with ``cell`` (:func:`label_cells`) and the fields of
    :func:`attnrank.analysis.baselines.baseline_losses`; each cell by its worst run (final validation loss minus the
    run's bigram count model, nats)."""
    parts = []
    by_cell = {c: baselines.bigram_gaps(d) for c, d in runs.groupby("cell")}  # each cell's worst run, per model
    for a in [a for a in ARCHS if a in set(runs.arch)]:
        gap = {c: g[a] for c, g in by_cell.items() if a in g}
        below = [c for c in CELLS if c in gap and gap[c] < 0]
        above = [c for c in CELLS if c in gap and gap[c] >= 0]
        said = lambda cs, gap=gap: ", ".join(f"“{CELL_LABELS[c]}” ({fmt(gap[c], 2)})" for c in cs)  # noqa: E731
        parts.append(
            f"for {ARCH_NAMES[a]}, "
            + "; ".join(
                filter(
                    None,
                    [
                        f"every run of {said(below)} ends below its bigram count model" if below else "",
                        f"{said(above)} end{'s' if len(above) == 1 else ''} above it in at least one seed"
                        if above
                        else "",
                    ],
                )
            )
        )
    return (
        "Worst run of each cell against its bigram count model (nats; the learned gate reads the stock cell alone): "
        + "; ".join(parts)
        + "."
    )


def verdict_summary(result, twins: pd.DataFrame, *, tau: float, profile: str, n_runs: int) -> str:
    """The sentence of the ``causal`` verdict: the question, :func:`causal_text` per
    architecture, how closely the twins match (:func:`twins_table`) and the runs."""

    gaps = twin_gaps(twins)
    return (
        f"{answer_text(result)} Paired differences from tau = 1 in nats, tau = {fmt_setting(tau)}, "
        f"s = {twin_scale(tau):.3g}. {'. '.join(causal_text(result, a) for a in result.arch)}. Each tau run "
        f"and its twin differ by at most {gaps['causal_twin_max_loss']} nats in final validation loss and "
        f"{gaps['causal_twin_max_rank']} units of rank. {profile_sizes(profile, CAUSAL_PRESETS[profile][0]).replace('the', 'The', 1)}, "
        f"{n_runs} runs."
    )


def answer_text(result: SweepVerdict) -> str:
    """What :func:`attnrank.analysis.rules.causal_rule` found, in words, per architecture: the loss follows the
    initial logit scale (supported), the query/key step size (not supported), or the runs do not tell,
    and then why: the temperature's own loss effect is not resolved (nothing to split), or the two
    halves' effects are not resolved apart."""
    words = []
    for a, r in result.arch.items():
        name, st = ARCH_NAMES[a], r.verdict.status
        if st == "supported":
            words.append(
                f"for {name} the loss follows the initial logit scale (and so the initial rank), not the "
                "query/key step size"
            )
        elif st == "not supported":
            words.append(f"for {name} the loss follows the query/key step size, not the initial logit scale")
        elif not r.parts["temperature"].excludes_zero:
            words.append(
                f"for {name} the temperature has no resolved effect on the final loss, so there is nothing to split"
            )
        else:
            words.append(f"for {name} the runs do not tell which half the temperature's loss effect follows")
    text = "; ".join(words)
    return text[0].upper() + text[1:] + "."


def causal_text(result: SweepVerdict, arch: str, digits: int = 4) -> str:
    """One architecture's part of :func:`causal_rule` in words, for a verdict's summary: the
    temperature's effect, each single factor's, the oriented difference, the status and, when not
    supported, the seeds that would resolve :data:`CAUSAL_EFFECT`."""
    r, p = result[arch], result[arch].parts
    name = ARCH_NAMES.get(arch, arch)
    txt = (
        f"{name}: temperature effect {fmt_estimate(p['temperature'], digits)} seeds, initial scale alone "
        f"{fmt_estimate(p['init'], digits, n=False)}, step size alone {fmt_estimate(p['lr'], digits, n=False)}, oriented difference "
        f"{fmt_estimate(r.verdict.estimate, digits, n=False)} ({r.verdict.status})"
    )
    more = needed_text(r.verdict, f"{fmt_setting(r.verdict.effect)} nats")
    if more:
        txt += f"; {more}"
    return txt


# --------------------------------------------------------------------------- the chapter


def finding(result: SweepVerdict) -> str:
    """The verdict in one line for the intro's table: per architecture the temperature's loss effect and
    the initial-scale-minus-step-size statistic."""
    parts = "; ".join(
        f"{ARCH_NAMES[a]} τ effect {fmt(r.parts['temperature'].value, 3)}, scale − step {fmt(r.verdict.estimate.value, 3)}"
        for a, r in result.arch.items()
    )
    return f"Final loss, nats: {parts}."


def effect_text(result: SweepVerdict) -> str:
    """The intro's effect cell: for each architecture whose case decides the combined status
    (:func:`attnrank.analysis.verdicts.deciding`), the number that decides it: the temperature's own loss effect
    where its interval contains 0 (nothing to split: the rule stops there), else the oriented initial-scale-minus-
    step-size difference it judges. For example ``"GPT-2 scale − step −0.003 [−0.005, −0.001] nats; ModernBERT τ
    effect 0.004 [−0.015, 0.023] nats"``."""
    cells = []
    for a in verdicts.deciding({a: r.verdict.status for a, r in result.arch.items()}):
        r = result.arch[a]
        temp = r.parts["temperature"]
        what, est = ("τ effect", temp) if not temp.excludes_zero else ("scale − step", r.verdict.estimate)
        cells.append(f"{ARCH_NAMES[a]} {what} {fmt_estimate(est, 3, n=False)} nats")
    return "; ".join(cells)


def section(
    profile: str = "auto",
    *,
    seeds=None,
    tau: float = CAUSAL_TAU,
    eval_taus=(0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0),
    dataset=None,
) -> Section:
    """The causal chapter: the 2 x 2 and twins of :func:`attnrank.runs.experiments.causal_runs` (trained where
    missing), their outcomes and effects, the intervention at fixed weights, two figures, two tables and
    the ``causal`` verdict (:func:`attnrank.analysis.rules.causal_rule`).

    Raises:
        ConfigError: naming ``tau``, ``seeds``, ``eval_taus`` or ``dataset`` for a value outside their range.
    """
    profile = resolve_profile(profile)
    m = PRIMARY_MEASURE
    configs = causal_runs(profile, tau=tau, seeds=seeds, dataset=dataset)  # None: the profile's preset seeds
    seeds = sorted({c.seed for c in configs})
    runs = runs_table(configs, long=False)
    runs["cell"] = label_cells(runs, tau)
    table = outcomes(runs, m)
    glue = {
        "causal_tau": fmt_setting(tau),
        "causal_scale": fmt_sci(twin_scale(tau), 3),  # three significant digits: 10, not 10.000
        "causal_eps": fmt_sci(P3_CONDITIONS["adam_epsilon"]),  # 1×10⁻¹⁶, not Python's 1e-16
        "causal_runs_text": runs_text(runs, profile, len(seeds)),
        "causal_n_seeds": len(seeds),
    }
    fig, data, name, source = cells_figure(table, tau=tau, measure=m, profile=profile, n_runs=len(runs))
    figures = [Figure(name, fig, data, source)]
    eff = effects(table)
    twins = twins_table(table)
    glue.update(twin_gaps(twins))
    eff_tab, eff_glue = effects_table(eff)
    glue.update(eff_glue)
    inter = intervention(runs, seeds[:2], eval_taus, m)
    fig, data, name, source = intervention_figure(inter, measure=m, profile=profile)
    figures.append(Figure(name, fig, data, source))
    complete = runs[runs.status == "complete"]
    glue["causal_cells_learned"] = cells_learned_text(complete) if len(complete) else "No run of the design completed."
    glue["causal_intervention_runs"] = inter.groupby(["arch", "train_tau", "seed"]).ngroups
    glue["causal_intervention_seeds"] = ", ".join(map(str, seeds[:2]))
    glue.update(intervention_spans(inter, m))
    v = rules.causal_rule(table)
    # the learned gate reads the stock runs: the other cells at tau = 1 are the interventions themselves
    done = runs[(runs.status == "complete") & (runs.cell == "stock")]
    stock = done if len(done) else runs[runs.cell == "stock"]
    gate = rules.learned_gate(
        {a: r.verdict.status for a, r in v.arch.items()},
        baselines.bigram_gaps(stock),
        baselines.reference_gains(stock, worst=True),
    )
    reg = baselines.regime(done, gate) if len(done) else baselines.Regime(gate)
    verdict = Verdict(
        "causal",
        gate.status,
        finding(v),
        effect_text(v),
        f"{len(seeds)} seeds, {len(runs)} runs",
        regime_text(reg) if len(done) else "no complete run",
        verdict_summary(v, twins, tau=tau, profile=profile, n_runs=len(runs)) + " " + gate_text(reg),
        brief=regime_brief(reg) if len(done) else "",
        gate=gate_quote(reg) if len(done) else "",
    )
    tables = [
        Table("causal_twins", twins.drop(columns="_loss"), digits=3),
        Table("causal_effects", eff_tab),
    ]
    return Section("causal", glue, figures, tables, [verdict])
