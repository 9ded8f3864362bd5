"""The study's own protocol, and whether the rank is set early: the protocol chapter.

:func:`section` replays the study's protocol (4 + 4 examples, one run per temperature, the absolute
1e-8 rank) many times on the main grid's probe records (:mod:`attnrank.sections.study`), applies the two
pre-registered rules (:func:`attnrank.analysis.rules.protocol_rule`, :func:`attnrank.analysis.rules.set_early_rule`)
and returns the chapter's :class:`~attnrank.sections.section.Section`: four figures, the flip-rate table and
the ``protocol`` and ``set_early`` verdicts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis import baselines, rules
from ..analysis.rules import PRIMARY_MEASURE
from ..core.profiles import ARCH_ORDER, resolve_profile
from ..plots import protocol as pplots
from ..runs.experiments import STUDY_EXAMPLES, STUDY_MEASURE, STUDY_TAUS
from ..runs.store import load_table
from ..words.glossary import ARCH_LABELS, ARCH_NAMES, MEASURE_LABELS, fmt, fmt_estimate, fmt_setting
from . import study
from .section import Figure, Section, Table, Verdict, gate_quote, gate_text, regime_brief, regime_text
from .study import Records

__all__ = [
    "section",
    "agreement",
    "flip_table",
    "judge",
    "set_early_summary",
    "set_early_effect",
    "flip_words",
    "agreement_words",
    "protocol_finding",
    "within_words",
    "within_results",
]


def agreement(
    reference: dict,
    ours: dict,
    labels: dict | None = None,
    *,
    stock: float = STUDY_TAUS[0],
    cold: float = STUDY_TAUS[1],
) -> list[str]:
    """Where the study's statistic and ours agree or part, one clause per architecture.

    Args:
        reference: ``{arch: float}``, the study's statistic (stock minus cold) with every sequence.
        ours: ``{arch: Estimate}``, our difference (stock minus cold).
        labels: ``{arch: name}`` for the text (default: the keys).

    A clause says "both protocols rank tau = X higher" when our interval excludes 0 on the
    reference's side; otherwise it names each protocol's side, ours with its interval (and
    "unresolved" when that includes 0).
    """
    side = {1.0: f"tau = {fmt_setting(stock)}", -1.0: f"tau = {fmt_setting(cold)}", 0.0: "neither temperature"}
    out = []
    for a in sorted(reference):
        name, e = (labels or {}).get(a, a), ours[a]
        theirs, mine = side[float(np.sign(reference[a]))], side[float(np.sign(e.value))]
        resolved = e.excludes_zero
        if resolved and theirs == mine:
            out.append(f"for {name} both protocols rank {theirs} higher")
        else:
            out.append(
                f"for {name} they part: the study's rank puts {theirs} higher (difference "
                f"{fmt(reference[a])} with every sequence), the effective rank {mine} "
                f"({fmt_estimate(e, 2)}{'' if resolved else ', unresolved'})"
            )
    return out


def flip_table(flips: pd.DataFrame) -> pd.DataFrame:
    """:func:`flip_rate` as a table: one row per probe step, one column per architecture, each cell
    the flip rate in percent with its 95% interval (``"12.0% [8.1%, 16.5%]"``-style text)."""
    text = flips.estimate.map(lambda e: fmt_estimate(e, 1, n=False, percent=True))
    wide = flips.assign(rate=text, model=flips.arch.map(ARCH_LABELS)).pivot(
        index="step", columns="model", values="rate"
    )
    wide.columns = [f"{c}: flip rate [95% CI]" for c in wide.columns]
    return wide.fillna("not trained this long").rename_axis("probe step").reset_index()


def judge(records: Records, flips: pd.DataFrame, n_draws: int, measure: str, *, other: float = STUDY_TAUS[1]):
    """The ``protocol`` verdict at the last probe step on one comparison, the stock temperature against ``other``:
    ``(result, glue, summary)``. The rule (version 2) decides on the comparison next to the stock temperature
    (``other = records.near``); the study's own (``other`` its cold temperature) is reported beside it.

    Args:
        records: :func:`load` (``ok`` gives our statistic: ``final_<measure>`` at the stock
            temperature minus ``other``, every seed, :func:`attnrank.analysis.rules.two_point`).
        flips: :func:`flip_rate` of the draws of that comparison.
        n_draws: the number of draws (for the summary).
        measure: our measure (the book's primary measure).

    ``result`` is :func:`attnrank.analysis.rules.protocol_rule`; ``glue`` holds ``protocol_agreement``
    (:func:`agreement`, capitalised), ``protocol_flip_<arch>`` and ``protocol_examples``.

    Raises:
        ConfigError: from :func:`attnrank.analysis.rules.protocol_rule` when the architectures differ.
    """
    stock, cold = STUDY_TAUS[0], other
    ok, hd = records.ok, records.head_dim
    end = {a: ok[(ok.arch == a) & (ok.head_dim == hd)] for a in sorted(records.pair.arch.unique())}
    ours = {
        a: rules.two_point(
            d.loc[np.isclose(d.tau, stock), f"final_{measure}"], d.loc[np.isclose(d.tau, cold), f"final_{measure}"]
        )
        for a, d in end.items()
    }
    at_end = records.at_final_step(flips).set_index("arch")
    res = rules.protocol_rule(at_end.estimate.to_dict(), at_end.reference.to_dict(), ours)
    sentences = agreement(res.reference, ours, ARCH_LABELS, cold=cold)
    joined = "; ".join(sentences)
    glue = {"protocol_agreement": joined[0].upper() + joined[1:]}
    glue.update({f"protocol_flip_{a}": fmt_estimate(e, 1, n=False, percent=True) for a, e in res.flip.items()})
    summary = flip_words(res, n_draws, cold) + " " + agreement_words(res, records.pair.seed.nunique())
    return res, glue, summary


def protocol_finding(res, n_draws: int, other: float = STUDY_TAUS[1]) -> str:
    """The protocol verdict in one line for the intro: on the comparison of τ = 1 with ``other``, whether 4 + 4
    examples ever flip the sign the study's statistic gives with every sequence, and whether that sign is ours,
    per architecture."""
    on = f"τ = 1 against {fmt_setting(other)}"
    flips = (
        f"On {on}, 4 + 4 examples never flip the sign in {n_draws} draws"
        if all(e.value == 0 for e in res.flip.values())
        else f"On {on}, 4 + 4 examples flip the sign in up to {fmt(max(e.value for e in res.flip.values()), 1, percent=True)} of draws"
    )
    words = {
        "supported": "ours",
        "not supported": "opposite to ours",
        "inconclusive at this scale": "unresolved by ours",
    }
    agree = ", ".join(f"{ARCH_NAMES[a]} {words[res.parts[('agrees', a)]]}" for a in res.flip)
    return f"{flips}; that sign is {agree}."


def flip_words(res, n_draws: int, other: float = STUDY_TAUS[1]) -> str:
    """What the flip rates of :func:`attnrank.analysis.rules.protocol_rule` say, in words, for the comparison of
    τ = 1 with ``other``: ``"In none of the 200 draws ... does the sign ... flip ..."`` when no draw flips, else
    the rates; and whether each architecture's rate is below :data:`attnrank.analysis.rules.MAX_FLIP` (the rule's
    stable part)."""
    n_train, n_test = STUDY_EXAMPLES
    limit = fmt(rules.MAX_FLIP, 0, percent=True)
    draws = f"{n_draws} draws of {n_train} + {n_test} examples and one run per temperature"
    what = f"the study's statistic on τ = 1 against {fmt_setting(other)}"
    if all(e.value == 0 for e in res.flip.values()):
        bounds = " and ".join(f"{fmt(e.high, 1, percent=True)} for {ARCH_NAMES[a]}" for a, e in res.flip.items())
        head = (
            f"In none of the {draws} does the sign of {what} at the last step flip (95% upper bound "
            f"on the flip rate {bounds}; the rule allows {limit})"
        )
    else:
        rates = " and ".join(
            f"{fmt_estimate(e, 1, n=False, percent=True)} of draws for {ARCH_NAMES[a]}" for a, e in res.flip.items()
        )
        head = f"Over {draws}, the sign of {what} at the last step flips in {rates} (the rule allows {limit})"
    flat = [ARCH_NAMES[a] for a in res.flip if float(res.reference[a]) == 0]  # no sign to flip
    stable = {a: res.parts[("stable", a)] for a in res.flip if ARCH_NAMES[a] not in flat}
    words = {
        "supported": "so few examples are enough for the sign",
        "not supported": "so few examples are not enough for the sign",
        "inconclusive at this scale": "the draws do not show whether so few examples are enough",
    }
    if not stable:
        tail = "no model gives a sign"
    elif len(set(stable.values())) == 1:
        tail = words[next(iter(stable.values()))] + (f" for {ARCH_NAMES[next(iter(stable))]}" if flat else "")
    else:
        tail = "; ".join(f"for {ARCH_NAMES[a]} {words[st]}" for a, st in stable.items())
    blind = (
        f" For {' and '.join(flat)} the study's count reads the same at both temperatures with every sequence, so "
        "it gives no sign to flip: it cannot tell them apart."
        if flat
        else ""
    )
    return f"{head}: {tail}.{blind}"


def agreement_words(res, n_seeds: int) -> str:
    """Whether the study's sign is the one our protocol (the primary measure, every probe sequence, every
    seed) finds, per architecture, in words (the rule's "agrees" part)."""
    words = {
        "supported": "the same sign",
        "not supported": "the opposite sign",
        "inconclusive at this scale": "no resolved sign",
    }
    by = {}
    for a in res.flip:
        by.setdefault(words[res.parts[("agrees", a)]], []).append(ARCH_NAMES[a])
    parts = "; ".join(f"for {' and '.join(names)} {w}" for w, names in by.items())
    return (
        f"Our protocol ({MEASURE_LABELS[PRIMARY_MEASURE]}, every probe sequence, {n_seeds} seeds) finds {parts}. "
        f"The verdict needs both parts for both models."
    )


def within_words(within: dict, n_learned: int, n_draws: int) -> str:
    """The loss claim's small comparison asked with the study's examples, in words: the rank correlation of the
    initial rank and the final loss within each temperature (reported beside the loss rule, over its ``n_learned``
    learned runs) when each run's initial rank is the mean over 4 + 4 examples instead of the whole probe: the
    central 95% of the draws' ρ against the rule's own ρ and its interval, and how often a draw takes the other sign,
    per measure of ``within`` (``{measure: (draws, reference, rates)}``: :func:`attnrank.sections.study.within_draws`
    of ``n_draws`` draws and their :func:`attnrank.sections.study.flip_rate`); a model whose initial rank does not
    vary within a temperature is named as such. Reported beside the protocol rule (version 2), not part of it."""
    if not n_learned:
        return "No run learned, so the loss claim's within-temperature correlation is not asked with four examples."
    parts = []
    for measure, (draws, reference, rates) in within.items():
        est = reference.set_index("arch").estimate
        clauses = []
        for r in rates.itertuples():
            e, rho = est[r.arch], draws.stat[draws.arch == r.arch].dropna()
            low, high = np.quantile(rho, [0.025, 0.975])
            clauses.append(
                f"{ARCH_NAMES[r.arch]} ρ from {fmt(low)} to {fmt(high)} in 95% of draws against the whole probe's "
                f"{fmt_estimate(e, n=False)}"
                + ("" if e.excludes_zero else ", a sign its runs leave unresolved")
                + f" (the other sign in {fmt_estimate(r.estimate, 1, n=False, percent=True)})"
            )
        flat = [ARCH_NAMES[a] for a in reference.arch[~np.isfinite(reference.stat)]]
        if flat:
            clauses.append(
                f"{' and '.join(flat)} none: "
                + ("its initial rank does not" if len(flat) == 1 else "their initial ranks do not")
                + " vary within a temperature, so there is no sign"
            )
        label = "the study's count" if measure == STUDY_MEASURE else f"the {MEASURE_LABELS[measure]}"
        parts.append(f"on {label}, {'; '.join(clauses)}")
    n_train, n_test = STUDY_EXAMPLES
    return (
        f"With each run's initial rank the mean over {n_train} training and {n_test} test examples, as the study took "
        f"it, instead of the loss claim's whole probe, the within-temperature ρ of its {n_learned} learned runs "
        f"({n_draws} draws) reads: {'. And '.join(parts)}."
    )


def within_results(sequences: pd.DataFrame, learned: pd.DataFrame, n_draws: int) -> dict:
    """What :func:`within_words` says, on the primary measure and the study's count: ``{measure: (draws, reference,
    rates)}``, :func:`attnrank.sections.study.within_draws` of the ``learned`` runs and their ``sequences`` (``n_draws``
    draws) and the :func:`attnrank.sections.study.flip_rate` of the architectures whose reference has a sign; empty
    without learned runs."""
    if learned.empty:
        return {}
    out = {}
    for measure in (PRIMARY_MEASURE, STUDY_MEASURE):
        draws, reference = study.within_draws(sequences, learned, measure, n_draws=n_draws)
        seen = reference[np.isfinite(reference.stat)]
        out[measure] = (
            draws,
            reference,
            study.flip_rate(draws[draws.arch.isin(seen.arch)], seen) if len(seen) else seen,
        )
    return out


def set_early_effect(early) -> str:
    """The set-early rule's effect for the intro's table: Spearman's ρ of the early rank with the final rank,
    with its interval, per architecture; the step once when every architecture's is the same
    (``"ρ with the final rank, step 4: BERT 0.85 [0.69, 0.93]; GPT-2 −0.33 [−0.55, −0.06]"``), else after each."""
    shown = {a: early.shown[a] for a in early.per_arch if early.shown[a]}
    if not shown:  # no learned runs to correlate (too few, or none met its target)
        return "ρ with the final rank: not estimable (too few learned runs)"
    steps = {step for step, _ in shown.values()}
    one = len(steps) == 1
    head = f"ρ with the final rank, step {next(iter(steps))}: " if one else "ρ with the final rank: "
    return head + "; ".join(
        f"{ARCH_NAMES[a]} {fmt_estimate(e, n=False)}" + ("" if one else f" (step {step})")
        for a, (step, e) in shown.items()
    )


def set_early_summary(early, final_steps: str) -> str:
    """The sentence of the ``set_early`` verdict from :func:`attnrank.analysis.rules.set_early_rule`'s result ``early``:
    per architecture the first early step whose interval clears the threshold (or, if none does, the
    last early step shown), with its rho."""
    text = "; ".join(
        f"{ARCH_LABELS[a]}: {'first' if early.first[a] is not None else 'none clears it; last'} early step "
        f"{early.shown[a][0]}, ρ {fmt_estimate(early.shown[a][1])}"
        for a in early.per_arch
        if early.shown[a]
    )
    return (
        f"The rank at step k predicts the final rank (Spearman ρ above {fmt(rules.SET_EARLY_RHO, 1)}, 95% interval) "
        f"after the warm-up and within the first {fmt(rules.EARLY_FRACTION, 0, percent=True)} of training (of "
        f"{final_steps}; {MEASURE_LABELS[PRIMARY_MEASURE]}; the runs that learned): {text or 'not estimable (no learned run has a probe step in it)'}."
    )


def section(profile: str = "auto", *, seeds=None, n_draws: int = 1000, dataset: str | None = None) -> Section:
    """The protocol chapter: the main grid's runs and probe records (trained where missing), the study's
    protocol replayed ``n_draws`` times, four figures, the flip-rate table and the ``protocol`` and
    ``set_early`` verdicts.

    Raises:
        ConfigError: naming ``profile``, ``seeds``, ``n_draws`` or ``dataset`` for a value outside their range.
    """
    profile = resolve_profile(profile)
    m = PRIMARY_MEASURE
    d = study.load(profile, seeds=seeds, dataset=dataset)
    seq = d.seq
    glue = {
        "protocol_n_val": int(seq[seq.split == "val"].sequence.nunique()),
        "protocol_n_train": int(seq[seq.split == "train"].sequence.nunique()),
        "protocol_n_seeds": int(d.pair.seed.nunique()),
        "protocol_n_draws": n_draws,
        "protocol_final_step": d.steps_text(),
        "protocol_n_runs": len(d.ok),
        "protocol_max_flip": fmt(rules.MAX_FLIP, 0, percent=True),
        "protocol_rho_min": fmt(rules.SET_EARLY_RHO, 1),
        "protocol_early_pct": fmt(rules.EARLY_FRACTION, 0, percent=True),
        "protocol_steps": ", ".join(map(str, sorted(seq.step.unique()))),
    }
    first = d.pair[d.pair.seed == d.pair.seed.min()]

    def figure(spec):
        fig, data, name, source = spec
        return Figure(name, fig, data, source)

    figures = [figure(pplots.study_view(d, load_table(first, "eval_log"), profile))]
    draws = study.study_draws(seq, n_draws=n_draws, seed=0)
    flips = study.flip_rate(draws, study.study_reference(seq))
    figures.append(figure(pplots.draws_figure(draws, d, profile)))
    figures.append(figure(pplots.our_view(d, profile)))
    # the study's own comparison (three decades apart), reported beside the verdict
    res_study, judged_study, summary_study = judge(d, flips, n_draws, m)
    glue.update(judged_study)
    # the rule (version 2) decides on the comparison next to the stock temperature, where four examples can mislead
    near_draws = study.study_draws(d.near_seq, cold=d.near, n_draws=n_draws, seed=0)
    near_flips = study.flip_rate(near_draws, study.study_reference(d.near_seq, cold=d.near))
    res, judged, summary = judge(d, near_flips, n_draws, m, other=d.near)
    glue.update({k.replace("protocol_", "protocol_near_", 1): v for k, v in judged.items()})
    glue["protocol_near"] = fmt_setting(d.near)
    glue["protocol_study_summary"] = summary_study
    # a verdict on trained models reads the runs that learned (each held to the pre-registered target)
    learned = d.ok[baselines.learned_runs(d.ok)]
    warmup = int(d.ok.warmup_steps.max())
    archs = [a for a in ARCH_ORDER if a in set(d.ok.arch)]
    drawn = learned if len(learned) else d.ok  # with no run learned, the figure shows every complete run
    by_step = study.rank_by_step(load_table(drawn, "rank_summary"), m)
    early = rules.set_early_rule(by_step if len(learned) else by_step.iloc[:0], warmup=warmup, archs=archs)
    sequences = load_table(learned, "sequences") if len(learned) else None
    glue["protocol_within_text"] = within_words(within_results(sequences, learned, n_draws), len(learned), n_draws)
    glue["protocol_warmup"] = warmup
    glue["protocol_n_learned"] = ", ".join(
        f"{int((learned.arch == a).sum())} of {int((d.ok.arch == a).sum())} {ARCH_NAMES[a]}" for a in archs
    )
    figures.append(figure(pplots.set_early_figure(by_step, profile, rules.SET_EARLY_RHO, learned=bool(len(learned)))))
    gaps = baselines.bigram_gaps(d.ok)
    gains = baselines.reference_gains(d.ok, worst=True)
    gate = rules.learned_gate(res.parts, gaps, gains)
    early_gate = rules.learned_gate(early.per_arch, gaps, gains)
    reg, early_reg = baselines.regime(d.ok, gate), baselines.regime(d.ok, early_gate)
    verdicts = [
        Verdict(
            "protocol",
            gate.status,
            protocol_finding(res, n_draws, d.near),
            "; ".join(
                f"{ARCH_NAMES[a]} {fmt_estimate(e, 1, n=False, percent=True)} flips, ours "
                f"{fmt_estimate(res.ours[a], n=False)}"
                for a, e in res.flip.items()
            )
            + f" (τ = 1 minus {fmt_setting(d.near)})",
            f"{n_draws} draws, {len(d.pair)} runs",
            regime_text(reg),
            summary + " " + gate_text(reg),
            brief=regime_brief(reg),
            gate=gate_quote(reg),
        ),
        Verdict(
            "set_early",
            early_gate.status,
            "Rank at an early step against the final rank: "
            + "; ".join(
                f"{ARCH_NAMES[a]} ρ {fmt(early.shown[a][1].value)} at step {early.shown[a][0]}"
                for a in early.per_arch
                if early.shown[a]
            )
            + f" (threshold {fmt(rules.SET_EARLY_RHO, 1)}).",
            set_early_effect(early),
            f"{len(learned)} learned runs of {len(d.ok)}",
            regime_text(early_reg),
            set_early_summary(early, d.steps_text()) + " " + gate_text(early_reg),
            brief=regime_brief(early_reg),
            gate=gate_quote(early_reg),
        ),
    ]
    flip_tables = [Table("protocol_flips", flip_table(flips)), Table("protocol_near_flips", flip_table(near_flips))]
    return Section("protocol", glue, figures, flip_tables, verdicts)
