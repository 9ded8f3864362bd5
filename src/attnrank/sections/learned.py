"""Have the models learned? Validation loss against count models that need no attention, and the regime clause.

A verdict about trained transformers is only worth something if the models have learned: a model
worse than a bigram count model has not yet started to use its context. This module computes, from
stored runs:

* :func:`baseline_losses`: the count baselines of a run's validation targets
  (:func:`attnrank.analysis.baselines.ngram_losses`: unigram, bigram and, for BERT, the two-sided model and the
  context-free model of what the masking gives away),
  cached by the run's data settings and the dataset's content;
* :func:`gaps`: one row per run, its final validation loss minus each baseline (nats per token;
  negative: the model is better);
* :func:`regime`: the one short clause every verdict states (for example "GPT-2 0.31 nats below
  bigram at τ = 1, attention worth 0.45 nats (14 of 14 runs below bigram)"), computed from the runs
  the verdict rests on; what attention is worth is the attention ablation gain of
  :mod:`attnrank.analysis.ablation` (the loss with content-free attention minus the loss);
* :func:`attention_table`: the mean loss against the bigram and the attention ablation gain per model
  and temperature;
* :func:`curves`: validation loss through training, against compute, beside the baselines
  (the figure of the "Have the models learned?" chapter) and :func:`targets`, the pre-registered
  targets of the default profile and whether every seed meets them.

Not part of the training path: editing it re-trains nothing.
"""

from __future__ import annotations

import math
import tempfile

import numpy as np
import pandas as pd

from ..analysis import rules
from ..analysis.baselines import BASELINES, _reference, baseline_losses, flops_per_token, gaps
from ..core.architectures import architecture
from ..core.errors import ConfigError, check_positive_int
from ..core.profiles import ARCH_ORDER, CLM_ARCH, MLM_ARCH, STUDY_ARCH, resolve_config, resolve_profile
from ..plots import learned as lplots
from ..runs import experiments, store, tables
from ..runs.grid import sweep
from ..words.glossary import ARCH_NAMES, fmt, fmt_setting, fmt_tau
from .section import Figure, Section, Table, gap_text, run_set_text, steps_text, worth

__all__ = [
    "section",
    "BASELINES",
    "TARGETS",
    "gaps",
    "regime",
    "attention_table",
    "curves",
    "flops_per_token",
    "targets",
    "targets_text",
    "shown_runs",
    "budget",
    "plan_parts",
    "measured_rate",
    "split",
]


#: The regime the default profile is planned to reach at ``tau = 1``, fixed before the runs were
#: trained (2026-12-04): ``{arch: (baseline, nats)}``, every seed's final validation loss at least ``nats``
#: below ``baseline`` with attention worth at least :data:`attnrank.analysis.rules.LEARNED_WORTH` nats; the learned gate
#: of every verdict on trained models is this target (:func:`attnrank.analysis.rules.learned_gate`). The study's BERT is
#: held to the same target, for the record.
TARGETS = {a: ("bigram", rules.LEARNED_MARGIN) for a in ARCH_ORDER}

_LABELS = ARCH_NAMES


def regime(runs: pd.DataFrame, *, reference_tau: float = 1.0) -> str:
    """The loss regime of the runs a verdict rests on, as one short clause.

    Per architecture: the mean gap of its runs at ``reference_tau`` (the stock softmax; all its runs
    when none is at it) to the bigram count model, for BERT also to the two-sided and context-free models, the mean
    attention ablation gain of those runs (:func:`attnrank.analysis.ablation.attention_gain`: what content-free
    attention costs, in nats per token) and how many of all its runs end below the bigram. For example
    ``"GPT-2 on average 0.31 nats below bigram at τ = 1, attention worth 0.45 nats (14 of 14 runs below bigram);
    BERT on average 0.12 nats below bigram, 0.30 nats above two-sided, 0.40 nats below context-free, attention worth 0.02 nats (9 of 14 runs below
    bigram)"``.

    Args:
        runs: a wide run table (see :func:`gaps`); failed runs count as not below. The attention gain is
            stated when the table has the ``path`` of stored runs (or an ``attention_gain`` column).
        reference_tau: the temperature ratio whose runs give the mean gap.

    Raises:
        ConfigError: naming ``runs`` when it holds no run.
    """
    if not len(runs):
        raise ConfigError("runs", "got no runs; a regime is computed from the runs a verdict rests on")
    g = gaps(runs)
    # the stock model: the reference temperature at the profile's standard head dimension (the learned gate's runs)
    stock = [
        "profile" not in runs or h == resolve_config(r, p).head_dim
        for r, p, h in zip(runs.arch, runs.get("profile", runs.arch), g.get("head_dim", runs.arch), strict=True)
    ]
    parts = []
    for arch in [a for a in ARCH_ORDER if a in set(g.arch)]:
        a = g[g.arch == arch]
        ref = a[np.isclose(a.tau, reference_tau)]
        at_stock = ref[np.asarray(stock)[ref.index]] if len(ref) else ref
        hd = f", head dimension {int(at_stock.head_dim.iloc[0])}" if 0 < len(at_stock) < len(ref) else ""
        ref = at_stock if len(at_stock) else ref
        at = f" at {fmt_tau(reference_tau)}{hd}" if len(ref) and len(ref) < len(a) else ""
        ref = ref if len(ref) else a
        text = f"{_LABELS[arch]} on average {gap_text(ref.gap_bigram.mean())} bigram{at}"  # the gate reads the worst
        if not architecture(arch).causal:
            text += f", {gap_text(ref.gap_two_sided.mean())} two-sided, {gap_text(ref.gap_context_free.mean())} context-free"
        if "attention_gain" in ref and ref.attention_gain.notna().any():
            text += f", {worth(ref.attention_gain.mean())}"
        below = int((a.gap_bigram < 0).sum())
        text += f" ({below} of {len(a)} runs below bigram)" if len(a) > 1 else ""
        parts.append(text)
    return "; ".join(parts)


def attention_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The loss against the bigram and what attention is worth, per architecture and temperature.

    Args:
        runs: a wide run table of stored runs (with ``path``; see :func:`gaps`).

    Returns one row per ``arch, tau`` (in that order): ``runs`` (complete ones), ``gap_bigram`` (mean final
    loss minus bigram, nats; negative: below), ``content_free_gap`` (mean loss with content-free attention
    minus bigram), ``attention_gain`` (mean of the runs' attention ablation gains,
    :func:`attnrank.analysis.ablation.attention_gain`, nats per token), ``gain_min`` and ``gain_max`` (over the runs).
    """
    g = gaps(runs)
    g = g[g.status == "complete"]
    if "attention_gain" not in g:
        g = g.assign(attention_gain=math.nan)
    g = g.assign(content_free_gap=g.gap_bigram + g.attention_gain)
    order = {a: i for i, a in enumerate(ARCH_ORDER)}
    t = (
        g.groupby(["arch", "tau"])
        .agg(
            runs=("final_val_loss", "size"),
            gap_bigram=("gap_bigram", "mean"),
            content_free_gap=("content_free_gap", "mean"),
            attention_gain=("attention_gain", "mean"),
            gain_min=("attention_gain", "min"),
            gain_max=("attention_gain", "max"),
        )
        .reset_index()
    )
    return t.sort_values(["arch", "tau"], key=lambda c: c.map(order) if c.name == "arch" else c).reset_index(drop=True)


def curves(runs: pd.DataFrame) -> pd.DataFrame:
    """Validation loss through training for each run, against compute, beside its baselines.

    Args:
        runs: a wide run table (with ``path``: the runs are read from the store).

    Returns one row per run and probe step: ``key, arch, tau, seed, step, tokens, flop, val_loss`` and
    the baselines of :data:`BASELINES`; ``tokens`` are training tokens seen (``step x batch_size x
    max_len``) and ``flop`` their training FLOP (:func:`attnrank.analysis.baselines.flops_per_token`, ``6 N +
    12 L n d`` per token).
    """
    frames = []
    for r in runs.to_dict("records"):
        ev = store.load_table(pd.DataFrame([r]), "eval_log")
        base = baseline_losses(r)
        per_token = flops_per_token(r)
        tokens = ev.step.astype(float) * r["batch_size"] * r["max_len"]
        frames.append(
            pd.DataFrame(
                {
                    "key": r["key"],
                    "arch": r["arch"],
                    "tau": r["tau"],
                    "seed": r["seed"],
                    "step": ev.step.to_numpy(),
                    "tokens": tokens.to_numpy(),
                    "flop": (tokens * per_token).to_numpy(),
                    "val_loss": ev.val_loss.to_numpy(),
                    **{b: base[b] for b in BASELINES},
                }
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def targets(runs: pd.DataFrame) -> pd.DataFrame:
    """The pre-registered targets of :data:`TARGETS` on the stock model's complete runs (``tau = 1`` at the profile's
    head dimension, as the learned gate reads them): one row per architecture.

    Columns: ``arch``, ``baseline``, ``target`` (nats below it), ``runs`` (at ``tau = 1``), ``run_set`` (those runs
    named, :func:`attnrank.sections.section.run_set_text`), ``worst_gap``
    (the largest gap of a seed, nats; negative is below), ``worst_head_dim`` (the head dimension of that run when
    the runs have several, else None), ``mean_gap``, ``two_sided_gap`` and
    ``context_free_gap`` (means, BERT),
    ``attention_gain`` (mean, nats; NaN when :func:`gaps` has none), ``worst_gain`` (the smallest) and ``met``
    (every run at least ``target`` below its baseline, with attention worth at least
    :data:`attnrank.analysis.rules.LEARNED_WORTH`).
    """
    # the stock model's runs, the learned gate's own (baselines._reference): a target decided over every tau = 1 run
    # (the head-dimension grid's too) gave a second answer beside the gate's
    stock = [_reference(runs[runs.arch == a], 1.0) for a in TARGETS if (runs.arch == a).any()]
    g = gaps(pd.concat(stock, ignore_index=True)) if stock else gaps(runs)
    g = g[np.isclose(g.tau, 1.0)]
    rows = []
    for arch, (base, nats) in TARGETS.items():
        a = g[g.arch == arch]
        if not len(a):
            continue
        worst = float(a[f"gap_{base}"].max()) if a[f"gap_{base}"].notna().all() else math.nan
        # which setting the worst run has, when the tau = 1 runs span several head dimensions
        worst_head_dim = (
            int(a.loc[a[f"gap_{base}"].idxmax(), "head_dim"])
            if "head_dim" in a and a.head_dim.nunique() > 1 and math.isfinite(worst)
            else None
        )
        gains = a.attention_gain.astype(float) if "attention_gain" in a else pd.Series([math.nan])
        worst_gain = float(gains.min()) if gains.notna().all() else math.nan
        rows.append(
            {
                "arch": arch,
                "baseline": base,
                "target": nats,
                "runs": len(a),
                "run_set": run_set_text(a),
                "worst_gap": worst,
                "worst_head_dim": worst_head_dim,
                "mean_gap": float(a[f"gap_{base}"].mean()),
                "two_sided_gap": float(a.gap_two_sided.mean()),
                "context_free_gap": float(a.gap_context_free.mean()),
                "attention_gain": float(gains.mean()),
                "worst_gain": worst_gain,
                "met": bool(  # to rounding
                    math.isfinite(worst)
                    and worst <= -nats + 1e-9
                    and math.isfinite(worst_gain)
                    and worst_gain >= rules.LEARNED_WORTH - 1e-9
                ),
            }
        )
    return pd.DataFrame(rows)


def targets_text(table: pd.DataFrame) -> str:
    """:func:`targets` in words, one sentence per architecture (``"GPT-2: ... met."``)."""
    parts = []
    for r in table.itertuples():
        label = _LABELS[r.arch]
        worst = gap_text(r.worst_gap)
        if getattr(r, "worst_head_dim", None) is not None and not pd.isna(r.worst_head_dim):
            worst += f" (head dimension {int(r.worst_head_dim)})"
        two = f"; two-sided: mean {gap_text(r.two_sided_gap)}" if math.isfinite(r.two_sided_gap) else ""
        two += f"; context-free: mean {gap_text(r.context_free_gap)}" if math.isfinite(r.context_free_gap) else ""
        parts.append(
            f"{label}: target {fmt_setting(r.target)} nats below {r.baseline}, with attention worth at least "
            f"{fmt_setting(rules.LEARNED_WORTH)} nats, in every one of its runs at {r.run_set}; worst run {worst}, mean "
            f"{gap_text(r.mean_gap)}{two}, attention worth {fmt(r.worst_gain, 2)} nats in its worst run: "
            f"{'met' if r.met else 'not met'}"
        )
    return ". ".join(parts) + "." if parts else "no run at tau = 1."


def shown_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs the chapter's loss figure draws: the temperature grid's runs at ``tau = 1`` and at its coldest
    ``tau`` (every seed), at the profile's standard head dimension (``sweep == "temperature grid"`` when the
    column is present)."""
    r = runs[runs.sweep == "temperature grid"] if "sweep" in runs else runs
    keep = np.isclose(r.tau, 1.0) | np.isclose(r.tau, r.tau.min())
    return r[keep & (r.status == "complete")]


def budget(parts: dict, rate: dict) -> pd.DataFrame:
    """What a set of runs costs: one row per part, its runs, training FLOP and estimated CPU seconds.

    Args:
        parts: ``{part name: [RunConfig, ...]}`` (for example the book's grid and planned additions).
        rate: ``{arch: FLOP per CPU second}`` (:func:`measured_rate` of this build's runs).

    Returns columns ``part, runs, flop, cpu_seconds, two_core_minutes`` (CPU seconds over two cores, in
    minutes), and a last row ``total``.
    """
    rows = []
    for name, configs in parts.items():
        flop = sum(c.max_steps * c.batch_size * c.max_len * flops_per_token(c) for c in configs)
        cpu = sum(c.max_steps * c.batch_size * c.max_len * flops_per_token(c) / rate[c.arch] for c in configs)
        rows.append({"part": name, "runs": len(configs), "flop": flop, "cpu_seconds": cpu})
    t = pd.DataFrame(rows)
    t.loc[len(t)] = {"part": "total", "runs": t.runs.sum(), "flop": t.flop.sum(), "cpu_seconds": t.cpu_seconds.sum()}
    t["two_core_minutes"] = t.cpu_seconds / 2 / 60
    return t


def plan_parts(profile: str = "auto") -> dict:
    """The runs of a cold build at ``profile``, by part, and the runs the next analyses would add, by part.

    Returns ``{"build": {part: configs}, "next": {part: configs}}``. ``build``: the shared grid
    (:func:`attnrank.runs.experiments.main_sweep`), the temperature chapter's detailed temperature where it is off the
    grid, the study's BERT beside it, the sequence-length runs, the causal chapter's runs and the loss rule's, as
    :func:`attnrank.runs.experiments.book_runs` trains them, each run once (in the first part that trains it) and a
    part without a run of its own left out. ``next``: one more seed of every setting
    of the shared grid and of claim (ii)'s design (the head-dimension grid then at every seed); the causal 2 x 2 and twins of the models the build's causal chapter leaves out (the masked LM
    at the default; :func:`attnrank.runs.experiments.causal_runs` at the grid's seeds); the shared grid again on a second corpus (the
    same configs, so the same cost). A fine temperature grid at initialisation needs no training and is not listed.
    """
    plan = experiments.sweep_plan(profile)
    profile, seeds = plan.profile, plan.seeds
    main = experiments.main_sweep(plan)
    bigger = experiments.sweep_plan(profile, seeds=len(seeds) + 1)
    have = set(main) | set(experiments.loss_runs(plan))
    more = [c for c in dict.fromkeys(experiments.main_sweep(bigger) + experiments.loss_runs(bigger)) if c not in have]
    in_build = {c.arch for c in experiments.causal_runs(profile)}
    missing = [a for a in (CLM_ARCH, MLM_ARCH) if a not in in_build]
    causal_rest = experiments.causal_runs(profile, seeds=seeds, archs=missing) if missing else []
    build, seen = {}, set()
    for part, runs in {
        "shared grid": main,
        "the temperature chapter's detail": experiments.tau_sweep(plan, taus=[experiments.DETAIL_TAU]),
        "the study's BERT": experiments.study_bert_sweep(plan),
        "sequence lengths": experiments.seq_len_sweep(profile),
        "causal chapter": experiments.causal_runs(profile),
        "the loss rule's init × s runs": experiments.loss_runs(plan),
    }.items():  # each run in the first part that trains it
        if runs := [c for c in dict.fromkeys(runs) if c not in seen]:
            build[part] = runs
            seen.update(runs)
    return {
        "build": build,
        "next": {
            f"one more seed of the shared grid and of claim (ii)'s design (seed {len(seeds)}; every head dimension then at "
            "every seed)": more,
            **(
                {
                    "the masked LM's causal 2 × 2 at the default sizes (it did not learn there in the scale check)": causal_rest
                }
                if causal_rest
                else {}
            ),
            "the shared grid on the second corpus (recorded as a check of its own)": list(main),
        },
    }


def measured_rate(runs: pd.DataFrame) -> dict:
    """Training FLOP per process CPU second of complete runs, per architecture: their summed training FLOP
    over their summed CPU seconds (training, probes and validation; the rate a budget is planned with).

    Args:
        runs: a wide run table with ``cpu_seconds`` (:func:`attnrank.runs.store.load_runs`).

    Raises:
        ConfigError: naming ``runs`` when an architecture has no complete run with CPU seconds.
    """
    d = runs[(runs.status == "complete") & runs.cpu_seconds.notna()] if len(runs) else runs
    out = {}
    for arch in sorted(set(runs.arch)):
        a = d[d.arch == arch]
        if not len(a):
            raise ConfigError("runs", f"no complete {arch} run with recorded CPU seconds")
        flop = sum(r.steps * r.batch_size * r.max_len * flops_per_token(r) for r in a.itertuples())
        out[arch] = float(flop / a.cpu_seconds.sum())
    return out


def split(runs: pd.DataFrame) -> pd.DataFrame:
    """Where the CPU seconds of ``runs`` went: one row per architecture and a total, with ``runs``,
    ``cpu_seconds`` (whole runs), ``probe_cpu_seconds`` (rank probes), ``validation_cpu_seconds`` and
    ``training_cpu_seconds`` (the rest: training steps, data and start-up), and ``probe_share`` (probes /
    whole runs)."""
    d = runs[runs.status == "complete"]
    rows = []
    for name, g in [*d.groupby("arch"), ("total", d)]:
        cpu, probe, val = g.cpu_seconds.sum(), g.probe_cpu_seconds.sum(), g.validation_cpu_seconds.sum()
        rows.append(
            {
                "part": _LABELS.get(name, name),
                "runs": len(g),
                "cpu_seconds": cpu,
                "training_cpu_seconds": cpu - probe - val,
                "probe_cpu_seconds": probe,
                "validation_cpu_seconds": val,
                "probe_share": probe / cpu if cpu else math.nan,
            }
        )
    return pd.DataFrame(rows)


def _budget_table(name: str, t: pd.DataFrame) -> Table:
    frame = t.rename(
        columns={
            "part": "part",
            "runs": "runs",
            "flop": "training FLOP",
            "cpu_seconds": "CPU seconds",
            "two_core_minutes": "minutes on two cores",
        }
    )
    return Table(name, frame, digits=1, formats={"training FLOP": lambda v: fmt(v, 2)})


def section(profile: str = "auto", *, seeds=None, dataset=None) -> Section:
    """The "Have the models learned?" chapter: the shared grid's loss through training beside the count models,
    the pre-registered targets, where the runs' CPU seconds went and the cost of a cold build and of the next
    analyses (the runs of the shared sweep are trained where missing).

    Raises:
        ConfigError: naming ``profile``, ``seeds`` or ``dataset`` for a value the sweep does not allow.
    """
    plan = experiments.sweep_plan(profile, seeds=seeds, dataset=dataset)
    profile = plan.profile
    grid = tables.main_runs(plan)
    bert = tables.table(experiments.study_bert_sweep(plan), long=False).assign(sweep="temperature grid")
    runs = pd.concat([grid, bert], ignore_index=True)
    shown = shown_runs(runs)
    curve = curves(shown)
    tgt = targets(runs)
    rate = measured_rate(runs)
    plan = plan_parts(profile)
    attn = attention_table(runs)
    glue = {
        **{f"learned_target_{a}": f"{fmt_setting(n)}" for a, (_, n) in TARGETS.items()},
        **{
            f"learned_attention_{a}": f"{worth(float(tgt[tgt.arch == a].attention_gain.mean()))} "
            f"(mean of {int(tgt[tgt.arch == a].runs.sum())} runs)"
            for a in TARGETS
        },
        **{
            f"learned_context_free_{a}": gap_text(float(tgt[tgt.arch == a].context_free_gap.mean()))
            for a in (MLM_ARCH, STUDY_ARCH)
        },
        "learned_worth": f"{fmt_setting(rules.LEARNED_WORTH)}",
        **{f"learned_vocab_{a}": f"{int(d.vocab_size.iloc[0]):,}" for a, d in runs.groupby("arch")},
        "learned_n_runs": len(runs),
        "learned_n_shown": len(shown),  # the runs the loss figure draws
        "learned_shown_seeds": int(curve.seed.nunique()),
        "learned_steps": steps_text(runs),
        "learned_profile": profile,
        "learned_regime": regime(runs),
        "learned_regime_shown": regime(shown),
        "learned_targets_text": targets_text(tgt),
        **{f"learned_rate_{a}": fmt(r, 3) for a, r in rate.items()},
    }
    fig, data, name, source = lplots.loss_figure(curve)
    targets_frame = pd.DataFrame(
        {
            "model": [_LABELS[a] for a in tgt.arch],
            "target (nats)": [f"{fmt(t, 2)} below {b}" for t, b in zip(tgt.target, tgt.baseline)],
            "runs (τ = 1)": tgt.runs,
            "worst − baseline (nats)": tgt.worst_gap,
            "mean − baseline (nats)": tgt.mean_gap,
            "mean − two-sided (nats)": tgt.two_sided_gap,
            "mean − context-free (nats)": tgt.context_free_gap,
            "attention worth, mean (nats)": tgt.attention_gain,
            "attention worth, smallest (nats)": tgt.worst_gain,
            "met": ["yes" if m else "no" for m in tgt.met],
        }
    )
    attention_frame = pd.DataFrame(
        {
            "model": [_LABELS[a] for a in attn.arch],
            "τ": attn.tau,
            "runs": attn.runs,
            "loss − bigram (nats)": attn.gap_bigram,
            "content-free loss − bigram (nats)": attn.content_free_gap,
            "attention worth, mean (nats)": attn.attention_gain,
            "smallest (nats)": attn.gain_min,
            "largest (nats)": attn.gain_max,
        }
    )
    sp = split(runs).rename(
        columns={
            "part": "model",
            "runs": "runs",
            "cpu_seconds": "CPU seconds",
            "training_cpu_seconds": "training",
            "probe_cpu_seconds": "rank probes",
            "validation_cpu_seconds": "validation",
            "probe_share": "probe share",
        }
    )
    return Section(
        "learned",
        glue=glue,
        figures=[Figure(name, fig, data, source)],
        tables=[
            Table("learned_targets", targets_frame),
            Table("learned_attention", attention_frame, formats={"τ": fmt_setting}),
            Table("learned_split", sp, digits=1, formats={"probe share": lambda v: fmt(v, 1, percent=True)}),
            _budget_table("learned_budget_build", budget(plan["build"], rate)),
            _budget_table("learned_budget_next", budget(plan["next"], rate)),
        ],
    )


#: The temperatures the GPU check trains: the stock softmax and the study's cold setting.
CHECK_TAUS = (1.0, 1e-3)


def check_configs(profile: str = "paper", *, seeds: int = 3, max_steps: int | None = None, dataset=None) -> list:
    """The runs of the GPU check (:func:`gpu_check`): both models of the book at :data:`CHECK_TAUS` and ``seeds``
    seeds of ``profile``; ``max_steps`` shortens them (warm-up, probe and logging intervals in proportion).

    Raises:
        ConfigError: naming ``profile``, ``seeds``, ``max_steps`` or ``dataset``.
    """
    profile = resolve_profile(profile)
    seeds = check_positive_int("seeds", seeds)
    out = []
    for arch in (CLM_ARCH, MLM_ARCH):
        base = resolve_config(arch, profile, dataset=dataset)
        short = {}
        if max_steps is not None:
            f = check_positive_int("max_steps", max_steps) / base.max_steps
            short = {
                "max_steps": max_steps,
                **{k: max(1, round(getattr(base, k) * f)) for k in ("warmup_steps", "rank_every", "log_every")},
            }
        out += [
            resolve_config(arch, profile, tau=t, seed=s, dataset=dataset, **short)
            for t in CHECK_TAUS
            for s in range(seeds)
        ]
    return out


def gpu_check(out, profile: str = "paper", *, seeds: int = 3, max_steps: int | None = None, executor="process") -> dict:
    """``attnrank gpu-check OUT``: train :func:`check_configs` (a process pool: one run per GPU at a time) and write
    to the folder ``out`` what a verdict on trained models needs: ``runs.csv`` (each run's settings, final loss, its
    count models, gaps and attention worth), ``targets.csv`` (:func:`targets`: the learned gate of every verdict)
    and ``verdicts.md`` (the targets in words, the regime clause, and each model's final loss at ``tau = 1`` minus
    at the cold ``tau``, mean over seeds, with Welch's t). Returns the paths written.

    Raises:
        ConfigError: naming ``profile``, ``seeds``, ``max_steps`` or ``out`` (a path that is not a writable folder),
        before anything is trained.
    """
    from pathlib import Path

    from scipy import stats as scistats

    configs = check_configs(profile, seeds=seeds, max_steps=max_steps)
    folder = Path(out)
    try:  # the output is checked before anything trains: a folder this user can write into
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise ConfigError(
            "out", f"{str(folder)!r} is not a folder this user can write: {exc.strerror or exc}"
        ) from None
    sweep(configs, executor=executor, desc="gpu-check runs")
    runs = tables.table(configs, long=False)
    g = gaps(runs).merge(runs[["key", "max_steps", "device", "wall_seconds"]], on="key", how="left")
    tgt = targets(runs)
    lines = [f"# GPU check: {profile} profile, {len(configs)} runs", "", targets_text(tgt), "", regime(runs), ""]
    for arch, d in g.groupby("arch"):
        hot, cold = (d[np.isclose(d.tau, t)].final_val_loss.dropna() for t in CHECK_TAUS)
        diff = hot.mean() - cold.mean()
        t = scistats.ttest_ind(hot, cold, equal_var=False).statistic if min(len(hot), len(cold)) > 1 else math.nan
        lines.append(
            f"{_LABELS[arch]}: final loss at τ = 1 minus at {fmt_tau(CHECK_TAUS[1])}: {fmt(diff, 3)} nats "
            f"({len(hot)} and {len(cold)} runs, Welch t = {fmt(t, 2)})"
        )
    paths = {"runs": folder / "runs.csv", "targets": folder / "targets.csv", "verdicts": folder / "verdicts.md"}
    g.to_csv(paths["runs"], index=False)
    tgt.to_csv(paths["targets"], index=False)
    paths["verdicts"].write_text("\n".join(lines) + "\n")
    return paths
