"""Temperature and rank, the temperature chapter: claim (iii) as the study made it, a higher temperature
gives a higher attention rank (and, with claim (ii), a lower loss).

:func:`section` reads the temperature grid of the shared sweep (plus a detailed ``tau`` and
``tau = 1`` when off it), measures the logit scale of the freshly initialised models, applies the
two pre-registered rules (:func:`attnrank.analysis.rules.temperature_rank`, the study's two-point comparison
with the peak located on the grid; :func:`attnrank.analysis.rules.temperature_loss`) with every rank measure
and returns the chapter's :class:`~attnrank.sections.section.Section`: six figures, their tables and the
``temp`` and ``temp_loss`` verdicts. :func:`sign_finding` says, from the data, on which rank
measures the study's sign holds and on which it reverses. :func:`peak_shape`, :func:`grid_interval`
and :func:`verdict_text` write a location on a grid and an estimate for the other chapters too.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..analysis import baselines, rules, stats
from ..analysis.rules import PRIMARY_MEASURE, ArchResult, SweepVerdict
from ..analysis.stats import Estimate
from ..analysis.verdicts import INCONCLUSIVE
from ..core.profiles import CLM_ARCH, resolve_config
from ..plots import sweeps
from ..plots import training as tplots
from ..runs import experiments, tables
from ..runs.store import load_table
from ..words.glossary import (
    ARCH_LABELS,
    ARCH_NAMES,
    ARCHS,
    MEASURE_LABELS,
    PLAIN_LABELS,
    RANK_MEASURES,
    fmt,
    fmt_and,
    fmt_estimate,
    fmt_setting,
    fmt_tau,
)
from .section import (
    INITIAL_BRIEF,
    INITIAL_REGIME,
    WORD_LIMIT,
    Figure,
    Section,
    Table,
    Verdict,
    by_measure_table,
    diverged_marks,
    divergence,
    gate_quote,
    gate_text,
    have_units,
    needed_text,
    regime_brief,
    regime_text,
    runs_caption,
)

__all__ = [
    "STOCK",
    "section",
    "peak_shape",
    "shape_text",
    "grid_text",
    "grid_interval",
    "needed_text",
    "needed_clause",
    "have_units",
    "sign_of",
    "sign_finding",
    "verdict_text",
    "temperature_table",
    "temperature_loss_table",
    "temperature_summary",
    "temperature_loss_summary",
    "rank_finding",
    "loss_finding",
    "FINE_TAUS",
    "FINE_SEEDS",
    "fine_peaks",
    "peak_text",
]


def peak_shape(peak: Estimate, levels) -> str:
    """Where a peak lies on a grid, in words, from :func:`attnrank.analysis.stats.peak_location`.

    ``"interior peak at v: the maximum lies between the grid values a' and b' (bootstrap interval of the grid
    argmax a to b)"`` when the interval excludes both grid ends (``a'`` and ``b'`` the grid values next to the
    interval: a grid locates a maximum only to within its neighbours, however stable the argmax);
    ``"peak at the low end"`` / ``"peak at the high end"`` when the whole interval is that end;
    otherwise ``"peak location unresolved (interval a to b)"``. The word ``tau`` is the caller's
    (this function names no setting): the text starts with the shape.
    """
    levels = np.sort(np.unique(np.asarray(levels, float)))
    if len(levels) < 2 or not peak.has_interval:
        return "peak location unresolved"
    lo, hi = levels[0], levels[-1]
    span = f"{fmt_setting(peak.low)} to {fmt_setting(peak.high)}"
    if peak.low > lo and peak.high < hi:
        below, above = levels[levels < peak.low].max(), levels[levels > peak.high].min()
        return (
            f"interior peak at {fmt_setting(peak.value)}: the maximum lies between the grid values "
            f"{fmt_setting(below)} and {fmt_setting(above)} (bootstrap interval of the grid argmax {span})"
        )
    if peak.low == peak.high == lo:
        return "peak at the low end of the grid"
    if peak.low == peak.high == hi:
        return "peak at the high end of the grid"
    return f"peak location unresolved (estimate {fmt_setting(peak.value)}, interval {span})"


def grid_text(values) -> str:
    """A grid in words: ``"7 values from 0.001 to 4, a factor of about 4 apart"`` (a geometric grid),
    ``"4 values from 0.001 to 1, a factor of 4 to 16 apart"`` (steps that differ by more than 10%), or
    ``"one value"``."""
    g = sorted(float(v) for v in values)
    if len(g) < 2:
        return "one value"
    steps = [b / a for a, b in zip(g, g[1:], strict=False)]
    span = f"{len(g)} values from {fmt_setting(g[0])} to {fmt_setting(g[-1])}"
    if max(steps) > 1.1 * min(steps):
        return f"{span}, a factor of {min(steps):.0f} to {max(steps):.0f} apart"
    return f"{span}, a factor of about {(g[-1] / g[0]) ** (1 / (len(g) - 1)):.0f} apart"


def grid_interval(e: Estimate, *, words: bool = False, note: str = "") -> str:
    """A grid location with its interval on the grid (:func:`attnrank.analysis.stats.peak_location`):
    ``"0.01 [0.001, 0.1]"``, or with ``words=True`` ``"0.01 (95% bootstrap interval of the grid argmax 0.001 to
    0.1)"``
    (``note`` is added inside the parentheses after a semicolon). When every resample gives the same grid value
    the interval has no width and is written as such: ``"0.25 in every resample"``."""
    if e.low == e.high == e.value:
        return f"{fmt_setting(e.value)} in every resample" + (f" ({note})" if words and note else "")
    if words:
        return (
            f"{fmt_setting(e.value)} ({e.confidence:.0%} bootstrap interval of the grid argmax {fmt_setting(e.low)} to "
            f"{fmt_setting(e.high)}{'; ' + note if note else ''})"
        )
    return f"{fmt_setting(e.value)} [{fmt_setting(e.low)}, {fmt_setting(e.high)}]"


def needed_clause(results: dict, what: str) -> str:
    """One sentence on the runs the unresolved architectures of a verdict need (``results`` is
    ``{arch: ArchResult}``): ``"For GPT-2, about 12 seeds per arm would resolve <what>."``, or a sentence
    saying the verdict is resolved when no architecture is unresolved."""
    parts = [
        f"for {ARCH_NAMES[a]}, {needed_text(r.verdict, what)}" for a, r in results.items() if needed_text(r.verdict)
    ]
    if not parts:
        return "The verdict is resolved for both architectures at this number of seeds; no more runs are needed."
    text = "; ".join(parts)
    return f"At the observed seed spread, {text}."


def verdict_text(r: ArchResult, what: str, *, digits: int = 2, effect: float | None = None) -> str:
    """One architecture's estimate for a verdict summary: ``"<what> <estimate> runs"``, and, when the
    verdict is unresolved (inconclusive), ``" (<needed_text>)"``: the runs that would resolve the
    pre-registered effect (``effect`` given: ``"a difference of <effect>"``)."""
    v = r.verdict
    s = f"{what} {fmt_estimate(v.estimate, digits)} runs"
    target = "the pre-registered effect" if effect is None else f"a difference of {fmt_setting(effect)}"
    if needed_text(v, target):
        s += f" ({needed_text(v, target)})"
    return s


#: The study's sign in words, by the status of :func:`attnrank.analysis.rules.temperature_rank` on one architecture.
SIGNS = {"supported": "the study's sign", "not supported": "reversed", INCONCLUSIVE: "undecided"}


def sign_of(status: str) -> str:
    """The study's sign as a verdict's status reads it: ``"the study's sign"`` (supported),
    ``"reversed"`` (not supported, the interval wholly on the other side), ``"undecided"``."""
    return SIGNS[status]


def sign_finding(rank_v: dict, *, short: bool = False) -> str:
    """On which rank measures the study's sign (a higher temperature, a higher initial rank) holds, on
    which it reverses and on which the data do not decide, from the per-architecture statuses of
    :func:`attnrank.analysis.rules.temperature_rank` (``rank_v`` is ``{measure: SweepVerdict}``).

    Per status, the measures on which every architecture has it are named once, with "(both models)", and each
    architecture's own after its name. ``short=True``: the intro's one line (:func:`_sign_by_arch`). Example: ``"The
    study's sign holds on the study's 10⁻⁸ count (both models) and, for GPT-2, on the 10⁻² and 10⁻⁴ counts; it reverses
    on the effective and stable ranks (both models) and, for ModernBERT, on the 10⁻² and 10⁻⁴ counts."``
    """
    if short:
        return _sign_by_arch(rank_v)
    archs = list(next(iter(rank_v.values())).arch) if rank_v else []
    every = " (both models)" if len(archs) == 2 else ""
    clauses = []
    status = {m: {a: v.arch[a].verdict.status for a in archs} for m, v in rank_v.items()}
    for st, verb in (("supported", "holds"), ("not supported", "reverses"), (INCONCLUSIVE, "is undecided")):
        shared = [m for m, by in status.items() if all(x == st for x in by.values())]
        parts = [f"on {_phrase(shared, 0)}{every}"] if shared else []
        for a in archs:
            own = [m for m, by in status.items() if by[a] == st and m not in shared]
            if own:
                parts.append(f"for {ARCH_NAMES[a]}, on {_phrase(own, 0)}")
        if parts:
            clauses.append(f"{verb} " + " and, ".join(parts))
    if not clauses:
        return "No rank measure was tested."
    return "The study's sign " + "; it ".join(clauses) + "."


def _sign_by_arch(rank_v: dict) -> str:
    """:func:`sign_finding` in plain words, at most :data:`attnrank.sections.section.WORD_LIMIT` words: which ways of
    counting rank give a hotter softmax a higher initial rank (the study's sign) and which a lower one, the measures
    on which the models agree named once and the others with each model's answer: ``"Hotter softmax, initial rank:
    higher on the study's 10⁻⁸ count, lower on the effective and stable ranks (both models); 10⁻² and 10⁻⁴ counts:
    higher for GPT-2, lower for ModernBERT."``"""
    verbs = {"supported": "higher", "not supported": "lower", INCONCLUSIVE: "unclear"}
    archs = list(next(iter(rank_v.values())).arch) if rank_v else []
    if not archs:
        return "No rank measure was tested."
    groups: dict[tuple, list[str]] = {}
    for m, v in rank_v.items():
        groups.setdefault(tuple(v.arch[a].verdict.status for a in archs), []).append(m)
    every = "both models" if len(archs) == 2 else ", ".join(ARCH_NAMES[a] for a in archs)

    def said(level: int) -> str:
        agree = [f"{verbs[st[0]]} on {_phrase(ms, level)}" for st, ms in groups.items() if len(set(st)) == 1]
        each = (  # the most compact: "GPT-2 higher" for "higher for GPT-2"
            (lambda a, x: f"{ARCH_NAMES[a]} {verbs[x]}")
            if level >= 3
            else (lambda a, x: f"{verbs[x]} for {ARCH_NAMES[a]}")
        )
        split = [
            f"{_phrase(ms, min(level, 2))}: " + ", ".join(each(a, x) for a, x in zip(archs, st))
            for st, ms in groups.items()
            if len(set(st)) > 1
        ]
        parts = ([", ".join(agree) + f" ({every})"] if agree else []) + split
        return "Hotter softmax, initial rank: " + "; ".join(parts) + "."

    for level in range(4):
        text = said(level)
        if len(text.split()) <= WORD_LIMIT:
            break
    return text


def _phrase(measures: list, level: int) -> str:
    """The ``measures`` in words, the counts above a threshold and the threshold-free ranks each named once: ``"the
    study's 10⁻⁸ count"``, ``"the 10⁻² and 10⁻⁴ counts"``, ``"the effective and stable ranks"``; from ``level`` 1 on
    without "the" and "study's", at 2 without "count"/"rank"."""
    counts = [m for m in measures if m.startswith("rank_")]
    free = [m for m in measures if not m.startswith("rank_")]
    out = []
    level = min(level, 2)
    for group, noun in ((counts, "count"), (free, "rank")):
        if not group:
            continue
        names = [_label(m, 1).split()[0] for m in group]
        if level == 0 and group == ["rank_atol_1e-8"]:
            out.append(PLAIN_LABELS["rank_atol_1e-8"][0])
            continue
        text = fmt_and(names) + ("" if level >= 2 else f" {noun}" + ("s" if len(names) > 1 else ""))
        out.append(("the " if level == 0 else "") + text)
    return " and ".join(out)


def _label(measure: str, level: int) -> str:
    """A measure's name in :data:`PLAIN_LABELS` at ``level`` 0 (long), 1 (short) or 2 (its first word)."""
    long, short = PLAIN_LABELS.get(measure, (MEASURE_LABELS[measure],) * 2)
    return (long, short, short.split()[0])[level]


def temperature_table(rank_v: dict, cold: float) -> pd.DataFrame:
    """The rank rule of :func:`attnrank.analysis.rules.temperature_rank` with every measure, for reading: one row
    per measure and architecture with the stock-minus-cold difference (Welch-t interval, the rule's
    test), its exact permutation p (beside it), the runs, the sign it gives, the peak on the grid and
    the status."""
    return pd.DataFrame(
        [
            {
                "measure": MEASURE_LABELS[m],
                "model": ARCH_LABELS[a],
                f"τ = 1 minus {fmt_tau(cold)} [95% Welch-t CI]": fmt_estimate(r.verdict.estimate, 2, n=False),
                "exact p (beside it)": fmt(r.verdict.estimate.p, 3),
                "runs": r.verdict.estimate.n,
                "sign": sign_of(r.verdict.status),
                "peak on the grid at τ [95% bootstrap]": grid_interval(r.shape),
                "verdict": r.verdict.status,
            }
            for m, v in rank_v.items()
            for a, r in v.arch.items()
        ]
    )


def temperature_loss_table(loss_v: SweepVerdict) -> pd.DataFrame:
    """The loss rule of :func:`attnrank.analysis.rules.temperature_loss`, one row per architecture, for reading."""
    return pd.DataFrame(
        [
            {
                "model": ARCH_LABELS[a],
                "ρ(log τ, final loss) [95% CI]": fmt_estimate(r.verdict.estimate, 2, n=False),
                "runs": r.verdict.estimate.n,
                "lowest mean loss on the grid at τ [95% bootstrap]": grid_interval(r.shape),
                "seed sd (nats)": fmt(r.spread, 4),
                "verdict": r.verdict.status,
            }
            for a, r in loss_v.arch.items()
        ]
    )


def shape_text(r: ArchResult, *, minimum: bool = False) -> str:
    """Where one architecture's response peaks on its grid, in words (:func:`peak_shape` of ``r.shape``
    on ``r.grid``); ``minimum=True`` for a location of the lowest mean (a loss)."""
    text = peak_shape(r.shape, r.grid) if r.shape is not None else ""
    return text.replace("peak", "minimum") if minimum else text


def _shape(r: ArchResult) -> str:
    return shape_text(r).split(" (")[0]


def temperature_summary(rv: SweepVerdict, *, cold: float, profile: str, n_seeds: int, rank_v: dict) -> str:
    """The summary of the rank verdict of :func:`attnrank.analysis.rules.temperature_rank` on the primary measure,
    with :func:`sign_finding` over every measure (``rank_v``)."""
    label = MEASURE_LABELS[PRIMARY_MEASURE]
    return (
        f"{sign_finding(rank_v)} On the primary measure, the initial {label}, the mean at τ = 1 minus the "
        f"mean at {fmt_tau(cold)} (the study's sign is a positive difference; the Welch-t 95% "
        f"interval decides) is {verdict_text(rv['modernbert'], 'for ModernBERT')} and "
        f"{verdict_text(rv['gpt2'], 'for GPT-2')}; on the trained grid, too coarse to locate a peak, the "
        f"mean initial rank is largest at {fmt_tau(rv['modernbert'].shape.value)} for ModernBERT ({_shape(rv['modernbert'])}) "
        f"and at {fmt_tau(rv['gpt2'].shape.value)} for GPT-2 ({_shape(rv['gpt2'])}). The {profile} "
        f"profile, {n_seeds} seeds per temperature, {rv.n_runs} runs."
    )


def temperature_loss_summary(loss_v: SweepVerdict, *, profile: str, n_seeds: int) -> str:
    """The summary of the loss verdict of :func:`attnrank.analysis.rules.temperature_loss`."""
    return (
        f"Spearman's ρ of log τ and the final validation loss (percentile bootstrap over runs) is "
        f"{verdict_text(loss_v['modernbert'], 'for ModernBERT')} and {verdict_text(loss_v['gpt2'], 'for GPT-2')}; the study's "
        f"sign is a negative ρ (the higher the temperature, the lower the loss), a positive ρ reverses it. "
        f"{_loss_signs(loss_v)} The lowest mean final loss is at τ = "
        f"{fmt_setting(loss_v['modernbert'].shape.value)} (ModernBERT) and {fmt_tau(loss_v['gpt2'].shape.value)} "
        f"(GPT-2). The {profile} profile, {n_seeds} seeds per temperature, {loss_v.n_runs} completed runs, whether or "
        "not each learned: a rule that kept only the runs that learned would choose them by the very loss it tests."
    )


# --------------------------------------------------------------------------- the chapter
#: The stock temperature ratio, the study's baseline.
STOCK = 1.0
#: The fine temperature grid at initialisation (no training): 25 ratios a factor of sqrt(2) apart, from 1e-3 to 4.1,
#: so a peak of the initial rank is located between grid values at most a factor of 1.5 apart.
FINE_TAUS = tuple(float(f"{1e-3 * 2 ** (k / 2):.3g}") for k in range(25))
#: Seeds of the fine grid (freshly initialised models; the initial rank varies little between seeds).
FINE_SEEDS = 2


def _fine_peak_text(r) -> str:
    """Where a row of :func:`fine_peaks` puts the peak, in words."""
    if not math.isnan(r.flat_to):
        end = " (the grid's hot end)" if r.edge else ""
        return f"on a plateau from {fmt_tau(r.peak_tau)} to {fmt_setting(r.flat_to)}{end}"
    if r.edge:
        return (
            f"at the grid's {'cold' if r.peak_tau == r.low else 'hot'} end ({fmt_tau(r.peak_tau)}, still rising there)"
        )
    return f"at {fmt_tau(r.peak_tau)} (between {fmt_setting(r.low)} and {fmt_setting(r.high)})"


def peak_text(fine: pd.DataFrame, measure: str, *, stock: float = STOCK, cold: float | None = None) -> str:
    """Where ``measure`` peaks on the fine grid at initialisation, per architecture (:func:`fine_peaks`), and
    what that says of a hotter softmax on either side, in one sentence; and whether the study's two temperatures
    (``cold``, default the grid's coldest, and ``stock``) lie on either side of the peak, where a two-point
    comparison reads a difference of two slopes of opposite sign.

    Args:
        fine: one row per ``arch, tau, seed`` with a column ``measure`` (:func:`_fine_grid`'s rows).
    """
    cold = float(fine.tau.min()) if cold is None else float(cold)
    peaks = fine_peaks(fine, measures=(measure,)).set_index("arch")
    archs = [a for a in ARCHS if a in peaks.index]
    parts = [f"{_fine_peak_text(peaks.loc[a])} for {ARCH_NAMES[a]}" for a in archs]
    straddled = [ARCH_NAMES[a] for a in archs if cold < peaks.low[a] and peaks.high[a] < stock]
    text = (
        f"On the fine grid at initialisation the {MEASURE_LABELS[measure]} peaks {' and '.join(parts)} (a grid places "
        f"a maximum between the values beside it; the bracket also covers where a bootstrap over its "
        f"{fine.seed.nunique()} seeds puts the peak)"
    )
    if straddled:
        text += (
            f": colder than its peak a hotter softmax raises it, hotter it lowers it, and the study's two "
            f"temperatures, {fmt_setting(cold)} and {fmt_setting(stock)}, lie on either side of the peak for "
            f"{' and '.join(straddled)}"
        )
    return text + "."


def fine_peaks(fine: pd.DataFrame, measures=RANK_MEASURES) -> pd.DataFrame:
    """Where each rank measure peaks on the fine temperature grid at initialisation, per architecture.

    Args:
        fine: one row per ``arch, tau, seed`` with a column per measure of ``measures`` (the rows of
            :func:`attnrank.analysis.baselines.init_means`).

    Returns one row per ``arch, measure``: ``peak_tau`` (the grid value with the largest mean over seeds),
    ``low`` and ``high`` (the grid values beside the peak's 95% bootstrap interval,
    :func:`attnrank.analysis.stats.peak_location`, a stratified bootstrap over seeds within each temperature: a
    smooth maximum lies between them; the grid's end where the interval reaches it), ``factor`` (``high / low``, the width of the
    bracket), ``peak`` (the mean there), ``edge`` (the largest mean lies at an end of the grid: the grid does not
    locate a peak) and ``flat_to``: where the grid values next to the first share its largest mean (a measure
    saturated at its maximum, such as a count that reaches ``n``), the last of that contiguous run (``peak_tau`` is
    the first), else NaN.
    """
    rows = []
    for (arch, measure), d in fine.melt(
        id_vars=["arch", "tau", "seed"], value_vars=list(measures), var_name="measure"
    ).groupby(["arch", "measure"], sort=False):
        e = stats.peak_location(d.tau.to_numpy(float), d.value.to_numpy(float))
        means = d.groupby("tau").value.mean().sort_index()
        taus, values = means.index.to_numpy(float), means.to_numpy()
        i = int(np.searchsorted(taus, e.value))
        tied = values >= values[i] - 1e-9 * max(1.0, abs(values[i]))
        end = i + (int(np.argmin(tied[i:])) if not tied[i:].all() else len(taus) - i) - 1
        top = np.arange(i, end + 1)  # the contiguous run of grid values that share the largest mean
        upper = max(e.high, taus[top[-1]])
        below, above = taus[taus < e.low], taus[taus > upper]
        low, high = (below.max() if len(below) else e.low), (above.min() if len(above) else upper)
        edge = i in (0, len(taus) - 1) or top[-1] == len(taus) - 1
        rows.append(
            dict(
                arch=arch,
                measure=measure,
                peak_tau=float(taus[i]),
                low=float(low),
                high=float(high),
                factor=math.nan if edge else float(high / low),
                peak=float(values[i]),
                edge=edge,
                flat_to=float(taus[top[-1]]) if len(top) > 1 else math.nan,
            )
        )
    return pd.DataFrame(rows)


def rank_finding(rank_v: dict) -> str:
    """The rank verdict in one line for the intro: where the study's sign holds and where it reverses."""
    return sign_finding(rank_v, short=True)


def _loss_signs(loss_v: SweepVerdict) -> str:
    """Per architecture, whether the loss correlation has the study's sign, reverses it or leaves it open."""
    words = {
        "the study's sign": "the interval has the study's sign",
        "reversed": "the interval reverses the study's sign",
        "undecided": "the interval does not decide the sign",
    }
    by = {}
    for a, r in loss_v.arch.items():
        by.setdefault(sign_of(r.verdict.status), []).append(ARCH_NAMES[a])
    text = "; ".join(f"for {' and '.join(n)} {words[k]}" for k, n in by.items())
    return text[0].upper() + text[1:] + "."


def loss_finding(loss_v: SweepVerdict) -> str:
    """The loss verdict in one line for the intro's table."""
    rho = ", ".join(f"{ARCH_NAMES[a]} {fmt(r.verdict.estimate.value)}" for a, r in loss_v.arch.items())
    best = ", ".join(f"{ARCH_NAMES[a]} {fmt_setting(r.shape.value)}" for a, r in loss_v.arch.items())
    return f"ρ(log τ, final loss): {rho} (negative: hotter trains lower, the study's sign); lowest loss at τ = {best}."


def _initial_scale(plan, tau: float):
    """The logit scale at initialisation at ``tau`` and ``tau = 1`` (seed 0): glue, the table and the uniform
    attention's ranks (for the figures' reference lines)."""
    m = PRIMARY_MEASURE
    init = baselines.init_means(
        [
            resolve_config(a, plan.profile, tau=t, seed=0, dataset=plan.dataset)
            for a in ARCHS
            for t in sorted({tau, STOCK})
        ]
    )
    n_tok = int(init.n.iloc[0])
    uniform = baselines.uniform_ranks(n_tok)
    at = {"tau": tau, "base": STOCK}
    glue = {
        k: fmt(v, 3) if "logit_sd" in k else fmt(v, 4)
        for k, v in {
            **tables.means_at(init, "logit_sd", at, prefix="temp_logit_sd_"),
            **tables.means_at(init, "attention_entropy", at, prefix="temp_entropy_"),
        }.items()
    }
    glue.update(
        {
            **{f"temp_uniform_{a}": fmt(u[m]) for a, u in uniform.items()},
            "temp_log_n": fmt(math.log(n_tok), 4),
            "temp_uniform_causal_rank_rtol": fmt(uniform[CLM_ARCH]["rank_rtol_1e-2"], 0),
            "temp_n": n_tok,
        }
    )
    table = Table(
        "temp_init",
        init.assign(arch=init.arch.map(ARCH_LABELS))[["arch", "tau", "logit_sd", "n", m, "attention_entropy"]].rename(
            columns={
                "arch": "model",
                "tau": "τ",
                "logit_sd": "logit sd (within a row)",
                "n": "tokens",
                m: MEASURE_LABELS[m],
                "attention_entropy": "attention entropy (nats)",
            }
        ),
        digits=4,
        formats={"τ": fmt_setting},
    )
    return glue, table, uniform


def _fine_grid(plan, refs):
    """Freshly initialised models on the fine grid (:data:`FINE_TAUS`, every rank measure): glue, the peaks' table and
    the figure."""
    fine = baselines.init_means(
        [
            resolve_config(a, plan.profile, tau=t, seed=s, dataset=plan.dataset)
            for a in ARCHS
            for t in FINE_TAUS
            for s in range(FINE_SEEDS)
        ],
        measures=RANK_MEASURES,
    )
    peaks = fine_peaks(fine)
    glue = {
        "temp_peak_text": peak_text(fine, PRIMARY_MEASURE, cold=experiments.STUDY_TAUS[1]),
        "temp_fine_n": len(FINE_TAUS),
        "temp_fine_min": fmt_setting(min(FINE_TAUS)),
        "temp_fine_max": fmt_setting(max(FINE_TAUS)),
        "temp_fine_factor": fmt(FINE_TAUS[1] / FINE_TAUS[0], 2),
        "temp_fine_seeds": FINE_SEEDS,
        **{f"temp_fine_peak_{r.arch}_{r.measure}": _fine_peak_text(r) for r in peaks.itertuples()},
    }
    table = Table(
        "temp_fine_peaks",
        peaks.assign(
            model=peaks.arch.map(ARCH_LABELS),
            measure=peaks.measure.map(MEASURE_LABELS),
            where=[_fine_peak_text(r) for r in peaks.itertuples()],
        )[["model", "measure", "where", "peak"]].rename(
            columns={"where": "where the mean initial rank peaks", "peak": "mean rank there"}
        ),
        digits=2,
    )
    fine_long = fine.melt(
        id_vars=["arch", "tau", "seed"], value_vars=list(RANK_MEASURES), var_name="measure", value_name="value"
    )
    figure = Figure(
        "temp_fine", sweeps.by_setting(fine_long, "tau", facet="measure", baseline=STOCK, refs=refs), fine_long
    )
    return glue, table, figure


def _rank_figures(tsweep, ranks_long, refs, tau: float, profile: str) -> list:
    """The headline (the study's count against the primary measure) and the rank against the temperature, every
    measure."""
    shown = (PRIMARY_MEASURE, experiments.STUDY_MEASURE)
    headline = pd.concat([ranks_long[ranks_long.measure == mm] for mm in shown], ignore_index=True)
    return [
        Figure(
            "temp_headline",
            sweeps.by_setting(
                headline,
                "tau",
                facet="measure",
                style="when",
                baseline=STOCK,
                refs=refs[refs.measure.isin(shown)] if "measure" in refs else refs,
                ncols=2,
                width=3.6,
                height=3.0,
            ),
            headline,
            # the intro shows this figure and writes its caption
        ),
        Figure(
            "temp_rank_vs_tau",
            sweeps.by_setting(
                ranks_long, "tau", facet="measure", style="when", highlight=tau, baseline=STOCK, refs=refs
            ),
            pd.concat([ranks_long.assign(kind="run"), refs.assign(kind="uniform baseline")], ignore_index=True),
            f"{runs_caption(tsweep, profile)}.{diverged_marks(tsweep, 'Red crosses: diverged runs.')}",
        ),
    ]


def _rank_rule(grid_runs, tsweep, at: dict, tau_min: float, n_seeds: int):
    """Rule (iii) on the initial rank, every measure: the verdicts per measure, the table and the glue."""
    m = PRIMARY_MEASURE
    rank_v = {mm: rules.temperature_rank(grid_runs, f"initial_{mm}", stock=STOCK, cold=tau_min) for mm in RANK_MEASURES}
    rv = rank_v[m]
    glue = {}
    for a, r in rv.arch.items():
        e = r.verdict.estimate
        glue.update(
            {
                f"temp_cold_diff_{a}": fmt_estimate(e),
                f"temp_cold_p_{a}": fmt(e.p),
                f"temp_rank_spread_{a}": fmt(r.spread, 3),
                f"temp_peak_{a}": grid_interval(r.shape, words=True, note=shape_text(r).split(" (")[0]),
            }
        )
    for k, v in tables.means_at(tsweep, f"initial_{m}", {**at, "min": tau_min}, prefix="temp_rank0_").items():
        glue[k] = fmt(v)
    glue["temp_rank_needed"] = needed_clause(rv.arch, f"one unit of {MEASURE_LABELS[m]}")
    glue["temp_sign"] = sign_finding(rank_v)
    glue["temp_n_resamples"] = f"{stats.N_RESAMPLES:,}"
    glue["temp_min_p"] = fmt(2 / math.comb(2 * n_seeds, n_seeds))
    return rank_v, Table("temp_rank_rule", temperature_table(rank_v, tau_min)), glue


def _detail_figures(tsweep, uniform, tau: float, profile: str) -> list:
    """``tau`` against ``tau = 1``: the rank through training and per layer."""
    m = PRIMARY_MEASURE
    pair = tsweep[np.isclose(tsweep.tau, tau) | np.isclose(tsweep.tau, STOCK)]
    summ = tables.rank_curves(pair, [m, "rank_atol_1e-8", "rank_rtol_1e-2"])
    layer_df = tables.layer_ranks(pair, m)
    return [
        Figure(
            "temp_rank_curves",
            tplots.measure_trajectories(
                summ,
                uniform,
                label=f"uniform causal attention ({ARCH_NAMES[CLM_ARCH]})",
                y="value",
                highlight=tau,
                archs=(CLM_ARCH,),
            ),
            summ[["arch", "tau", "seed", "status", "measure", "step", "value"]],
            f"{runs_caption(pair, profile)}.",
        ),
        Figure(
            "temp_rank_per_layer",
            sweeps.per_layer(layer_df, highlight=tau, baseline=STOCK, ylabel=MEASURE_LABELS[m]),
            layer_df,
            f"{runs_caption(pair, profile)}.",
        ),
    ]


def _loss_figures(tsweep, tau: float, profile: str) -> list:
    """The validation loss through training and the final loss against the temperature."""
    evals = load_table(tsweep, "eval_log")
    loss_df = tsweep[["key", "arch", "tau", "seed", "status", "final_val_loss", "initial_val_loss"]]
    return [
        Figure(
            "temp_loss_curves",
            tplots.val_loss_trajectories(evals, highlight=STOCK),
            evals[["arch", "tau", "seed", "status", "step", "val_loss"]],
            f"{runs_caption(tsweep, profile)}.{diverged_marks(tsweep, 'Dashed, ending in a cross: diverged runs.')}",
        ),
        Figure(
            "temp_final_loss_vs_tau",
            sweeps.by_setting(
                loss_df,
                "tau",
                "final_val_loss",
                facet="arch",
                highlight=tau,
                baseline=STOCK,
                ncols=2,
                ylabel="final validation loss\n(nats/token)",
            ),
            loss_df,
            f"{runs_caption(tsweep, profile)}.{diverged_marks(tsweep, 'Crosses at the top: diverged runs.')}",
        ),
    ]


def _loss_rule(grid_runs, tsweep, at: dict, tau_min: float):
    """Rule (ii + iii) on the final loss, the learned gate and the regime: the verdict, the table and the glue."""
    loss_v = rules.temperature_loss(grid_runs[grid_runs.status == "complete"], "final_val_loss")
    glue = {}
    for a, r in loss_v.arch.items():
        glue.update(
            {
                f"temp_loss_rho_{a}": fmt_estimate(r.verdict.estimate),
                f"temp_loss_spread_{a}": fmt(r.spread, 4),
                f"temp_loss_best_{a}": grid_interval(r.shape, words=True),
            }
        )
    done = tsweep[tsweep.status == "complete"]
    for k, v in tables.means_at(done, "final_val_loss", {**at, "min": tau_min}, prefix="temp_loss_").items():
        glue[k] = fmt(v, 3)
    gaps = baselines.bigram_gaps(done)
    gains = baselines.reference_gains(done, worst=True)
    loss_gate = rules.learned_gate({a: r.verdict.status for a, r in loss_v.arch.items()}, gaps, gains)
    return (
        loss_v,
        loss_gate,
        baselines.regime(done, loss_gate),
        Table("temp_loss_rule", temperature_loss_table(loss_v)),
        glue,
    )


def section(
    profile: str = "auto", *, seeds=None, taus=None, head_dims=None, tau: float = experiments.DETAIL_TAU, dataset=None
) -> Section:
    """The temperature chapter: the temperature grid (plus ``tau`` and ``tau = 1`` when off it, trained
    where missing), the logit scale at initialisation, the two rules with every measure, six figures, their
    tables and the ``temp`` and ``temp_loss`` verdicts.

    Args:
        profile, seeds, taus, head_dims, dataset: the shared sweep (see :func:`attnrank.sections.dynamics.section`).
        tau: the temperature ratio shown in detail against ``tau = 1`` (a value off the grid trains its
            own runs, both architectures, the grid's seeds).

    Raises:
        ConfigError: for a parameter the sweep does not allow.
    """
    plan = experiments.sweep_plan(profile, taus=taus, head_dims=head_dims, seeds=seeds, dataset=dataset)
    profile = plan.profile
    m = PRIMARY_MEASURE
    label = MEASURE_LABELS[m]
    tsweep = tables.temperature_grid(plan, extra=(tau, STOCK))
    n_seeds, head_dim0 = int(tsweep.seed.nunique()), int(tsweep.head_dim.iloc[0])
    tau_min = float(min(plan.taus))
    at = {"tau": tau, "base": STOCK}
    glue = {
        "temp_grid_text": grid_text(plan.taus),
        "temp_init_std": fmt(baselines.init_std()),
        "temp_n_runs": len(tsweep),
        "temp_n_seeds": n_seeds,
        "temp_n_taus": int(tsweep.tau.nunique()),
        "temp_head_dim": head_dim0,
        "temp_tau": fmt_setting(tau),
        "temp_tau_min": fmt_setting(tau_min),
        "temp_tau_max": fmt_setting(max(plan.taus)),
        "temp_added": ", ".join(map(fmt_setting, tsweep.attrs["missing"])) or "none",
    }
    glue.update(divergence(tsweep, "temp"))
    init_glue, init_table, uniform = _initial_scale(plan, tau)
    refs = sweeps.reference_lines(uniform, "uniform attention (causal for GPT-2)")
    fine_glue, fine_table, fine_figure = _fine_grid(plan, refs)
    grid_runs = tsweep[tsweep.tau.isin(plan.taus)]
    rank_v, rank_table, rank_glue = _rank_rule(grid_runs, tsweep, at, tau_min, n_seeds)
    loss_v, loss_gate, reg, loss_table, loss_glue = _loss_rule(grid_runs, tsweep, at, tau_min)
    glue.update({**init_glue, **fine_glue, **rank_glue, **loss_glue})
    figures = [
        *_rank_figures(tsweep, tables.long_form(tsweep), refs, tau, profile),
        fine_figure,
        *_detail_figures(tsweep, uniform, tau, profile),
        *_loss_figures(tsweep, tau, profile),
    ]
    rv = rank_v[m]
    verdicts = [
        Verdict(
            "temp",
            rv.status,
            rank_finding(rank_v),
            f"{label}, τ = 1 minus {fmt_tau(tau_min)}: "
            + "; ".join(f"{ARCH_NAMES[a]} {fmt_estimate(r.verdict.estimate, n=False)}" for a, r in rv.arch.items()),
            f"{rv.n_runs} runs",
            INITIAL_REGIME,
            temperature_summary(rv, cold=tau_min, profile=profile, n_seeds=n_seeds, rank_v=rank_v),
            {mm: v.status for mm, v in rank_v.items()},
            brief=INITIAL_BRIEF,
        ),
        Verdict(
            "temp_loss",
            loss_gate.status,
            loss_finding(loss_v),
            "; ".join(f"{ARCH_NAMES[a]} ρ {fmt_estimate(r.verdict.estimate, n=False)}" for a, r in loss_v.arch.items()),
            f"{loss_v.n_runs} runs",
            regime_text(reg),
            temperature_loss_summary(loss_v, profile=profile, n_seeds=n_seeds) + " " + gate_text(reg),
            brief=regime_brief(reg),
            gate=gate_quote(reg),
        ),
    ]
    section_tables = [
        init_table,
        fine_table,
        rank_table,
        loss_table,
        by_measure_table("temp_by_measure", verdicts[0], m),
    ]
    return Section("temp", glue, figures, section_tables, verdicts)
