"""Rank against sequence length: initial and trained rank of both models for each ``n``.

The runs are :func:`attnrank.runs.experiments.seq_len_sweep` (``tau = 1``, ``max_len = n``). Each
rank is set beside two references that also grow with ``n``:

* the content-free baseline, uniform attention over the visible keys: the uniform causal
  matrix ``U_ij = 1[j <= i] / (i + 1)`` for GPT-2 (invertible, so its numerical ranks grow
  with ``n``), ``1/n`` everywhere for ModernBERT (rank one);
* the study's bound ``(1 - 1/e) n + 1`` on the expected hardmax rank
  (:func:`attnrank.analysis.theory.study_bound`).

The verdict on these numbers is :func:`attnrank.analysis.rules.seq_len_rule`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch

from ..analysis import baselines, rules, stats
from ..analysis.rules import seq_len_rule
from ..analysis.theory import study_bound
from ..core.architectures import architecture
from ..core.errors import ConfigError, check_positive_int
from ..core.profiles import resolve_profile
from ..core.rank import MEASURES, check_measures, rank_measures
from ..plots.seqlen import rank_vs_seq_len
from ..runs import experiments
from ..runs.tables import table as runs_table
from ..words.glossary import ARCH_LABELS, ARCH_NAMES, MEASURE_LABELS, fmt, fmt_estimate
from .section import Figure, Section, Verdict, gate_quote, gate_text, regime_brief, regime_text

__all__ = ["uniform_ranks", "seq_len_table", "summary", "content_free_text", "Report", "report_from_runs", "section"]

#: Columns of :func:`seq_len_table`.
TABLE_COLUMNS = ("arch", "n", "measure", "when", "mean", "low", "high", "runs", "uniform", "bound")


def uniform_ranks(n: int, causal: bool, measures=tuple(MEASURES)) -> dict[str, float]:
    """Every measure of uniform attention over the visible keys of ``n`` tokens.

    ``causal``: row ``i`` spreads evenly over keys ``0..i`` (GPT-2's content-free attention);
    otherwise over all ``n`` keys (BERT's, rank one).

    Raises:
        ConfigError: naming ``n`` (an integer >= 1) or ``measures``.
    """
    n = check_positive_int("n", n)
    U = torch.tril(torch.ones(n, n, dtype=torch.float64)) if causal else torch.ones(n, n, dtype=torch.float64)
    U = U / U.sum(-1, keepdim=True)
    return {m: float(v) for m, v in rank_measures(U, measures=check_measures(measures)).items()}


def seq_len_table(runs: pd.DataFrame, measures=tuple(MEASURES)) -> pd.DataFrame:
    """Initial and trained rank per model and sequence length, with the two references, in long form.

    Args:
        runs: one row per run (``load_runs`` / ``store.sweep`` columns): ``arch``, ``max_len``,
            ``status`` and ``initial_<measure>``, ``final_<measure>``. Failed runs are left out.
        measures: names from :data:`attnrank.core.rank.MEASURES`.

    Returns:
        One row per ``(arch, n, measure, when)`` with ``when`` in {initial, trained}: ``mean``
        over seeds with its 95% Student-t interval ``low``, ``high`` (:func:`attnrank.analysis.stats.mean_ci`),
        ``runs``, the ``uniform`` baseline (causal for GPT-2) and the study's ``bound``
        ``(1 - 1/e) n + 1`` (``n`` is ``max_len``).

    Raises:
        ConfigError: naming ``runs`` for missing columns or no complete run, ``measures`` for an
        unknown measure.
    """
    measures = check_measures(measures)
    need = ["arch", "max_len", "status"] + [f"{w}_{m}" for m in measures for w in ("initial", "final")]
    missing = [c for c in need if c not in runs.columns]
    if missing:
        raise ConfigError("runs", f"missing columns {missing}")
    ok = runs[runs.status == "complete"]
    if ok.empty:
        raise ConfigError("runs", "no complete run")
    rows = []
    for (arch, n), g in ok.groupby(["arch", "max_len"], sort=True):
        uniform = uniform_ranks(int(n), causal=architecture(arch).causal, measures=measures)
        for m in measures:
            for when, col in (("initial", f"initial_{m}"), ("trained", f"final_{m}")):
                e = stats.mean_ci(g[col].to_numpy(float))
                rows.append(
                    dict(
                        arch=arch,
                        n=int(n),
                        measure=m,
                        when=when,
                        mean=e.value,
                        low=e.low,
                        high=e.high,
                        runs=e.n,
                        uniform=uniform[m],
                        bound=study_bound(int(n)),
                    )
                )
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def summary(result, table: pd.DataFrame, measure: str, setting: str) -> str:
    """The sentence of the ``seq_len`` verdict: trained rank per model over ``n`` beside both references.

    Args:
        result: :func:`attnrank.analysis.rules.seq_len_rule` on ``measure``.
        table: :func:`seq_len_table` of the same runs.
        measure: the rank measure of the verdict.
        setting: the runs' sizes in words (for example ``"the ci profile's sizes (width 32, 2 layers, 2 heads), 40 steps"``).
    """
    d = table[(table.measure == measure) & (table.when == "trained")].sort_values("n")
    ns = sorted(set(d.n))
    parts = []
    for arch, g in d.groupby("arch"):
        lo, hi = g.iloc[0], g.iloc[-1]
        parts.append(
            f"{ARCH_LABELS[arch]} {fmt(lo['mean'], 1)} at n = {lo.n} to {fmt(hi['mean'], 1)} at n = {hi.n} "
            f"(uniform attention {fmt(lo.uniform, 1)} to {fmt(hi.uniform, 1)})"
        )
    arch, n = result.worst()
    v = result.cases[(arch, n)]
    return (
        f"Trained {MEASURE_LABELS[measure]} for n = {', '.join(map(str, ns))}: {'; '.join(parts)}; "
        f"the bound (1 - 1/e) n + 1 runs from {fmt(study_bound(ns[0]), 1)} to {fmt(study_bound(ns[-1]), 1)}. "
        f"Closest to it relative to n: {ARCH_LABELS[arch]} at n = {n}, {fmt_estimate(v.estimate, 1)} against {fmt(v.threshold, 1)} "
        f"({result.n_runs} runs, {setting}). {content_free_text(d)}"
    )


def content_free_text(trained: pd.DataFrame) -> str:
    """Whether a model that ignores the content would pass the check too, in words: ``trained`` is the
    rows of :func:`seq_len_table` for the trained runs on one measure (columns ``arch, n, mean,
    uniform``). Says whether uniform attention (causal for GPT-2) lies below the bound at every ``n``
    and how far the trained mean rank is from it at most (relative to the uniform value)."""
    below = all(r.uniform < study_bound(int(r.n)) for r in trained.itertuples())
    gap = (trained["mean"] - trained["uniform"]).abs()
    i = gap.idxmax()
    row = trained.loc[i]
    rel = gap[i] / row.uniform if row.uniform else float("nan")
    if not below:
        return "Uniform attention exceeds the bound at some n, so the check can separate it from a trained model."
    return (
        f"Uniform attention, which ignores the content, also lies below the bound at every n, so a model that has "
        f"learned nothing passes this check too; it is a property of softmax attention at this length, not of "
        f"training. The trained rank is at most {fmt(gap[i], 1)} from uniform attention "
        f"({ARCH_NAMES[row.arch]} at n = {int(row.n)}, {fmt(rel, 0, percent=True)} of its value)."
    )


#: The measures drawn in the chapter's figure (the verdict is on the first).
FIGURE_MEASURES = ("effective_rank", "rank_rtol_1e-2")


@dataclass
class Report:
    """The theory chapter's section on sequence length: ``glue`` (name -> value), ``figure``
    (the arguments of :func:`attnrank.book.show`), and the ``seq_len`` verdict (``status``,
    ``summary``, ``by_measure``: the same rule with every measure)."""

    glue: dict
    figure: tuple
    status: str
    summary: str
    by_measure: dict


def report_from_runs(runs: pd.DataFrame, setting: str, profile: str, ns) -> Report:
    """The section's numbers, figure and verdict from the runs of the sequence-length sweep.

    Args:
        runs: one row per run, as for :func:`seq_len_table` (plus ``seed`` and every
            ``final_<measure>`` of :data:`attnrank.core.rank.MEASURES`).
        setting: the runs' sizes in words, quoted in the glue, caption and summary.
        profile: the build's profile, named in the caption (glued as ``seq_len_profile``).
        ns: the sequence lengths of the sweep (glued as ``seq_len_ns``).

    The verdict is :func:`attnrank.analysis.rules.seq_len_rule` on the effective rank, its sentence
    :func:`summary`.

    Raises:
        ConfigError: naming ``runs`` for missing columns or no complete run.
    """
    table = seq_len_table(runs)
    glue = {
        "seq_len_ns": ", ".join(map(str, ns)),
        "seq_len_setting": setting,
        "seq_len_n_runs": len(runs),
        "seq_len_n_seeds": int(runs.seed.nunique()),
        "seq_len_profile": profile,
    }
    shown = table[table.measure.isin(FIGURE_MEASURES)]
    figure = (rank_vs_seq_len(table, list(FIGURE_MEASURES)), shown, "seq_len", "")
    results = {m: seq_len_rule(runs, m) for m in MEASURES}
    main = results[FIGURE_MEASURES[0]]
    return Report(
        glue,
        figure,
        main.status,
        summary(main, table, FIGURE_MEASURES[0], setting),
        {m: r.status for m, r in results.items()},
    )


def finding(result, ns) -> str:
    """The ``seq_len`` verdict in one line for the intro's table: the case closest to the bound."""
    arch, n = result.worst()
    v = result.cases[(arch, n)]
    return (
        f"Trained effective rank at n = {', '.join(map(str, ns))}: closest to the bound (1 − 1/e) n + 1 is "
        f"{ARCH_NAMES[arch]} at n = {n}, {fmt(v.estimate.value, 1)} against {fmt(v.threshold, 1)}."
    )


def section(profile: str = "auto", dataset=None) -> Section:
    """The theory chapter's section on sequence length: the runs of
    :func:`attnrank.runs.experiments.seq_len_sweep` (trained where missing), their figure and the ``seq_len``
    verdict, as a :class:`~attnrank.sections.section.Section`.

    Raises:
        ConfigError: naming ``profile`` or ``dataset`` for a value the sweep does not allow.
    """
    profile = resolve_profile(profile)
    configs = experiments.seq_len_sweep(profile, dataset=dataset)
    c0 = configs[0]
    setting = (
        f"the {c0.profile} profile's sizes (width {c0.hidden_size}, {c0.num_layers} layers, {c0.num_heads} heads), "
        f"{c0.max_steps} steps"
    )
    runs = runs_table(configs, long=False)
    report = report_from_runs(runs, setting, profile, experiments.SEQ_LENS)
    fig, data, name, source = report.figure
    result = seq_len_rule(runs, FIGURE_MEASURES[0])
    done = runs[runs.status == "complete"]
    gaps = baselines.bigram_gaps(runs)
    gains = baselines.reference_gains(runs, worst=True)

    def gated(r):
        return rules.learned_gate({k: v.status for k, v in r.cases.items()}, gaps, gains)

    gate = gated(result)
    arch, n = result.worst()
    reg = baselines.regime(done, gate)
    verdict = Verdict(
        "seq_len",
        gate.status,
        finding(result, experiments.SEQ_LENS),
        f"effective rank of {ARCH_NAMES[arch]} at n = {n}: {fmt_estimate(result.cases[(arch, n)].estimate, 1, n=False)}"
        f" against the bound {fmt(result.cases[(arch, n)].threshold, 1)}",
        f"{len(runs)} runs",
        regime_text(reg),
        report.summary + " " + gate_text(reg),
        {m: gated(seq_len_rule(runs, m)).status for m in report.by_measure},
        brief=regime_brief(reg),
        gate=gate_quote(reg),
    )
    return Section("seq_len", report.glue, [Figure(name, fig, data, source)], [], [verdict])
