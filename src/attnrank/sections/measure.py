"""The measure chapter: every rank measure of trained and initial attention, over a grid of
temperatures and three precision pipelines, and the numbers, tables and verdict the chapter reads.

:func:`probe` reads the probe tables of stored runs (:func:`attnrank.analysis.spectra.probe_tables`,
computed once and cached with :func:`attnrank.runs.cache.cached`): per-sequence measure values,
per-matrix diagnostics and spectrum quantiles. The other functions turn those tables into the
chapter's numbers and its pre-registered verdict (:func:`verdict`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ..analysis import baselines, rules, spectra, stats, verdicts
from ..analysis.rules import PRIMARY_MEASURE
from ..analysis.spectra import EPS64, PIPELINES, REFERENCE, attention_examples
from ..core import rank
from ..core.errors import ConfigError
from ..core.measures import RANK_MEASURES
from ..core.profiles import ARCHS, CLM_ARCH, MLM_ARCH, resolve_config, resolve_profile
from ..plots import measure as mplots
from ..runs import experiments
from ..runs.cache import cached
from ..runs.store import read
from ..runs.tables import table as runs_table
from ..words.glossary import ARCH_LABELS, MEASURE_LABELS, fmt, fmt_estimate, fmt_sci, fmt_setting, fmt_tau
from .section import Figure, Section, Table, Verdict, divergence, gate_quote, regime_brief, regime_text

__all__ = [
    "RULE_MEASURES",
    "probe",
    "summarise",
    "uniform_causal",
    "matrix_facts",
    "causal_ratios",
    "verdict",
    "Setting",
    "trained_facts",
]

#: The measures of the verdict rule: the study's absolute rule and two relative ones.
RULE_MEASURES = ("rank_atol_1e-8", "rank_rtol_1e-2", "effective_rank")


def probe(used: pd.DataFrame, probe_size: int, taus) -> dict[str, pd.DataFrame]:
    """:func:`attnrank.analysis.spectra.probe_tables` of the runs in ``used`` (a :func:`attnrank.runs.store.load_runs` frame),
    cached by run keys, probe size and temperatures; ``{"values", "matrices", "spectra"}``."""
    table = cached(
        "measure_probe",
        spectra.probe_tables,
        keys=list(used.key),
        probe_size=int(probe_size),
        taus=[float(t) for t in taus],
    )
    return {
        k: g.drop(columns="table").dropna(axis=1, how="all").reset_index(drop=True)
        for k, g in table.groupby("table", sort=False)
    }


def summarise(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Mean and 95% CI of ``value`` per group, over runs: the probe sequences of one run are
    averaged first (they share the run's weights); ``n`` counts runs."""
    out = []
    for key, g in df.groupby(by, sort=False):
        e = stats.mean_ci(g["value"], clusters=g["seed"])
        out.append(
            dict(zip(by, key if isinstance(key, tuple) else (key,)), mean=e.value, low=e.low, high=e.high, n=e.n)
        )
    return pd.DataFrame(out)


def uniform_causal(n: int) -> dict[str, float]:
    """Every rank measure of the uniform causal matrix ``U_n`` (row ``i`` uniform over keys ``<= i``)."""
    U = torch.tril(torch.ones(n, n, dtype=torch.float64)) / torch.arange(1, n + 1, dtype=torch.float64)[:, None]
    return {m: float(v) for m, v in rank.rank_measures(U, measures=RANK_MEASURES).items()}


def matrix_facts(matrices: pd.DataFrame, n: int) -> dict:
    """Glued facts of the matrices at ``tau = 1``: median largest gap and ``sigma_min`` per
    architecture and state, the share certified full rank above float64 round-off, and GPT-2's
    causal diagonal (``min_i A_ii``, ``log10 det``, ``sigma_min <= min_i A_ii``)."""
    ref = matrices[matrices.tau == 1.0]
    out = {}
    for (arch, state), g in ref.groupby(["arch", "state"]):
        tag = f"{arch}_{'init' if state == 'initialisation' else 'trained'}"
        out[f"measure_gap_{tag}"] = fmt_sci(float(g.max_gap.median()), 3)  # up to 1e10: a power of ten, not 1.96e+10
        out[f"measure_smin_{tag}"] = fmt_sci(float(g.sigma_min.median()), 2)  # tiny, never rounded to zero
    certified = (ref.sigma_min > n * EPS64 * ref.sigma_1).groupby(ref.arch).mean()
    out.update({f"measure_certified_{a}_pct": 100 * float(v) for a, v in certified.items()})
    g2 = ref[(ref.arch == CLM_ARCH) & (ref.state == "trained")]
    g2all = ref[ref.arch == CLM_ARCH]
    out.update(
        measure_mindiag_gpt2_trained=fmt(float(g2.min_diag.median()), 2),
        measure_logdet_gpt2_trained=fmt(float(g2.log10_det.median()), 0),
        measure_diag_bound_pct=100 * float((g2all.sigma_min <= g2all.min_diag * (1 + 1e-9)).mean()),
    )
    return out


def causal_ratios(values: pd.DataFrame, causal: dict, n: int) -> tuple[pd.DataFrame, dict]:
    """GPT-2's measures at ``tau = 1`` over those of ``U_n`` (mean and 95% CI over runs), per state.

    Returns ``(table, glue)``; the table's index is the measure."""
    ref = values[(values.arch == CLM_ARCH) & (values.tau == 1.0) & (values.pipeline == REFERENCE)]
    rows, glue = [], {"measure_n_gpt2_runs": int(ref.seed.nunique())}
    for m in RANK_MEASURES:
        row = {"measure": m, "uniform causal U_n": causal[m], "U_n / n": causal[m] / n}
        glue[f"measure_causal_{m}"] = causal[m]
        glue[f"measure_causal_frac_{m}"] = causal[m] / n
        for state, tag in (("initialisation", "init_"), ("trained", "")):
            g = ref[(ref.state == state) & (ref.measure == m)]
            e_ratio = stats.mean_ci(g["value"] / causal[m], clusters=g["seed"])
            row[f"GPT-2 {state}"] = stats.mean_ci(g["value"], clusters=g["seed"]).value
            row[f"ratio {state} (95% CI over runs)"] = fmt_estimate(e_ratio, 2, n=False)
            glue[f"measure_gpt2_{tag}ratio_{m}"] = fmt_estimate(e_ratio, 2, n=False)  # "0.998 [0.997, 0.999] times it"
            glue[f"measure_gpt2_{tag}ratio_value_{m}"] = e_ratio.value
        rows.append(row)
    return pd.DataFrame(rows).set_index("measure"), glue


def verdict(
    values: pd.DataFrame,
    ratios: dict,
    *,
    n: int,
    tau_max: float,
    head_dim: int,
    atol_rank: float,
    profile: str,
    e_max: float = 0.1,
    tau_high: float = 100.0,
) -> tuple[str, str, dict]:
    """The chapter's pre-registered rule. At the largest ``tau`` of the grid (at least ``tau_high``)
    trained ModernBERT attention is near rank one; per run the excess ``e = (measure - 1)/(n - 1)``
    (0 = rank one, 1 = full). A measure *detects* the limit when the 95% interval of the mean
    ``e`` is below ``e_max``, *misses* it when above. Supported: the study's absolute rule
    misses while rtol 1e-2 and the effective rank detect; not supported: the absolute rule
    detects or a relative measure misses; else (or a grid below ``tau_high``) inconclusive.
    Returns ``(status, summary, glue, excess)`` (``excess``: ``{measure: Estimate}`` of the mean excess)."""
    hi = values[
        (values.state == "trained")
        & (values.pipeline == REFERENCE)
        & (values.arch == "modernbert")
        & (values.tau == tau_max)
    ]
    excess, spread = {}, {}
    for m in RULE_MEASURES:
        g = hi[hi.measure == m]
        e_run = ((g["value"] - 1.0) / (n - 1)).groupby(g["seed"]).mean()  # one value per run
        excess[m] = stats.mean_ci(e_run)
        spread[m] = float(e_run.std(ddof=1)) if len(e_run) > 1 else float("nan")
    detects = {m: verdicts.classify(e, e_max, "below") == verdicts.SUPPORTED for m, e in excess.items()}
    misses = {m: verdicts.classify(e, e_max, "above") == verdicts.SUPPORTED for m, e in excess.items()}
    atol_e, rel_e, eff_e = (excess[m] for m in RULE_MEASURES)
    if tau_max < tau_high:
        status = verdicts.INCONCLUSIVE
    elif misses["rank_atol_1e-8"] and detects["rank_rtol_1e-2"] and detects["effective_rank"]:
        status = verdicts.SUPPORTED
    elif detects["rank_atol_1e-8"] or misses["rank_rtol_1e-2"] or misses["effective_rank"]:
        status = verdicts.NOT_SUPPORTED
    else:
        status = verdicts.INCONCLUSIVE
    needed = ""
    if status == verdicts.INCONCLUSIVE:
        undecided = [m for m in RULE_MEASURES if not (detects[m] or misses[m])]
        counts = [
            stats.seeds_needed(spread[m], abs(excess[m].value - e_max))
            for m in undecided
            if np.isfinite(spread[m]) and spread[m] > 0 and excess[m].value != e_max
        ]
        if counts:
            needed = (
                f" About {max(counts)} runs per architecture would place every undecided interval on one side of "
                f"{fmt_setting(e_max)} at the observed spread."
            )
    summary = (
        f"At tau = {fmt_setting(tau_max)}, trained ModernBERT's excess rank (0 = rank one, 1 = full; mean [95% CI] over runs) is "
        f"{fmt_estimate(atol_e, 3)} runs under the study's absolute 10⁻⁸ rule (a rank of {fmt(atol_rank, 1)} of {n}, "
        f"far above the rank one it stands for) but {fmt_estimate(rel_e, 3, n=False)} on the relative 10⁻² count and {fmt_estimate(eff_e, 3, n=False)} for the effective rank "
        f"(n = {n} tokens, {len(hi.seed.unique())} runs, {profile} profile); at tau = 1 trained GPT-2's effective rank is "
        f"{fmt(ratios['effective_rank'], 2)} times that of uniform causal attention and its relative 10⁻² count "
        f"{fmt(ratios['rank_rtol_1e-2'], 2)} times.{needed}"
    )
    glue = {f"measure_excess_{m}": float(e.value) for m, e in excess.items()}
    glue.update({"measure_e_max": e_max, "measure_tau_high": tau_high})
    return status, summary, glue, excess


def probed_runs(runs: pd.DataFrame, profile: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The runs the chapter probes: ``tau = 1`` with each architecture's standard heads, complete.

    Returns ``(used, not_probed)`` (the second: such runs that diverged).

    Raises:
        RuntimeError: when one architecture has no complete run to probe.
    """
    standard_heads = {a: resolve_config(a, profile).num_heads for a in ARCHS}
    chosen = runs[(runs.tau == 1.0) & (runs.num_heads == runs.arch.map(standard_heads))]
    used = chosen[chosen.status == "complete"].reset_index(drop=True)
    if used.arch.nunique() < 2:
        raise RuntimeError("this chapter needs complete tau = 1 runs of both architectures")
    return used, chosen[chosen.status != "complete"][["arch", "seed", "failure_step", "failure_reason"]]


def temperature_facts(ref: pd.DataFrame, matrices: pd.DataFrame, spectra: pd.DataFrame, taus) -> dict:
    """Glued facts of trained models over the temperature grid: every measure at both ends of
    the grid (``ref``: :func:`summarise` of the reference pipeline by arch, tau, measure), the
    distinct argmax columns at the smallest ``tau``, and the ``tau`` at which trained ModernBERT's
    median ``sigma_2`` at the largest ``tau`` would reach the study's threshold 1e-8."""
    lo, hi = min(taus), max(taus)
    look = ref.set_index(["arch", "tau", "measure"])["mean"]
    s2 = spectra[
        (spectra.arch == MLM_ARCH)
        & (spectra.state == "trained")
        & (spectra.tau == hi)
        & (spectra.pipeline == REFERENCE)
        & (spectra.k == 2)
    ]["median"].iloc[0]
    out = {"measure_tau_atol_one": fmt(hi * float(s2) / rank.STUDY_ATOL, 2)}
    for a in sorted(set(ref.arch)):
        out.update(
            {
                f"measure_{a}_tau{e}_{m}": float(look[a, t, m])
                for m in RANK_MEASURES
                for e, t in (("max", hi), ("min", lo))
            }
        )
        sel = matrices[(matrices.arch == a) & (matrices.state == "trained") & (matrices.tau == lo)]
        out[f"measure_{a}_taumin_argmax"] = float(sel.distinct_argmax.mean())
    return out


def precision_facts(by_tau: pd.DataFrame, spectra: pd.DataFrame, n: int) -> tuple[pd.DataFrame, dict]:
    """Largest deviation of each measure from the float64 reference per pipeline (over archs and
    temperatures), and trained ModernBERT's median smallest singular value at the largest ``tau`` in
    each pipeline (the floor each precision reaches). Returns ``(deviation table, glue)``."""
    wide = by_tau.pivot_table(index=["arch", "tau", "measure"], columns="pipeline", values="mean")
    p32, s32 = "float32 probs, float64 SVD", "float64 probs, float32 SVD"
    dev = pd.DataFrame(
        {p: (wide[p] - wide[REFERENCE]).abs().groupby("measure").max() for p in PIPELINES if p != REFERENCE}
    ).reindex(RANK_MEASURES)
    top = dev.max(axis=1)
    glue = {
        k: float(v)
        for k, v in dict(
            measure_dev_rtol2=top["rank_rtol_1e-2"],
            measure_dev_rtol4=top["rank_rtol_1e-4"],
            measure_dev_eff=top["effective_rank"],
            measure_dev_stable=top["stable_rank"],
            measure_dev_atol=top["rank_atol_1e-8"],
            measure_dev_others=top.drop("rank_atol_1e-8").max(),
            measure_dev_atol_probs=dev.loc["rank_atol_1e-8", p32],
            measure_dev_atol_svd=dev.loc["rank_atol_1e-8", s32],
        ).items()
    }
    glue.update(  # the smallest deviations, printed as the book prints numbers (7.1×10⁻⁵, not 7.1e-05)
        {k: fmt(glue[k], 2) for k in ("measure_dev_eff", "measure_dev_stable", "measure_dev_others")}
    )
    t = spectra[
        (spectra.arch == MLM_ARCH)
        & (spectra.state == "trained")
        & (spectra.tau == spectra.tau.max())
        & (spectra.k == n)
    ].set_index("pipeline")["median"]
    glue.update(
        {
            f"measure_floor_{tag}": fmt_sci(t[p])  # floors lie below fmt's zero
            for tag, p in (("ref", REFERENCE), ("probs32", p32), ("svd32", s32))
        }
    )
    return dev.rename_axis("largest |difference| from float64 reference"), glue


@dataclass
class Setting:
    """What the measure chapter's captions and glue state about its probe: the ``profile``, the
    ``probe_size`` (sequences per run), the temperature grid ``taus``, the probed runs ``n_runs``,
    the fewest seeds of an architecture ``n_seeds`` and the sequence length ``n`` (tokens)."""

    profile: str
    probe_size: int
    taus: list
    n_runs: int
    n_seeds: int
    n: int

    @classmethod
    def of(cls, used: pd.DataFrame, profile: str, probe_size: int, taus) -> Setting:
        """From the probed runs ``used`` (:func:`probed_runs`; columns ``arch``, ``seed``, ``max_len``).

        Raises:
            ConfigError: naming ``used`` when it has no run.
        """
        if used.empty:
            raise ConfigError("used", "no probed run")
        return cls(
            profile,
            int(probe_size),
            sorted(taus),
            len(used),
            int(used.groupby("arch").seed.nunique().min()),
            int(used.max_len.iloc[0]),
        )

    @property
    def runs_text(self) -> str:
        """``"ci profile, 4 runs, 2 seeds per architecture"``: the end of every figure's caption."""
        return f"{self.profile} profile, {self.n_runs} runs, {self.n_seeds} seeds per architecture"

    def glue(self) -> dict:
        """``measure_n``, ``measure_probe_size``, ``measure_n_runs``, ``measure_n_seeds`` and the ends of
        the temperature grid ``measure_tau_max``, ``measure_tau_min`` (as ``%g`` text)."""
        return dict(
            measure_n=self.n,
            measure_probe_size=self.probe_size,
            measure_n_runs=self.n_runs,
            measure_n_seeds=self.n_seeds,
            measure_tau_max=f"{fmt_setting(max(self.taus))}",
            measure_tau_min=f"{fmt_setting(min(self.taus))}",
        )


def trained_facts(at1: pd.DataFrame) -> dict:
    """``measure_<arch>_trained_<measure>``: the mean over runs of every rank measure of the trained
    models at ``tau = 1`` (``at1``: :func:`summarise` by ``arch, state, measure``).

    Raises:
        KeyError: when ``at1`` lacks a trained architecture or measure.
    """
    lookup = at1.set_index(["arch", "state", "measure"])["mean"]
    return {f"measure_{a}_trained_{m}": float(lookup[a, "trained", m]) for a in ARCHS for m in RANK_MEASURES}


# --------------------------------------------------------------------------- the chapter


def _figure(spec) -> Figure:
    fig, data, name, source = spec
    return Figure(name, fig, data, source)


def section(
    profile: str = "auto",
    *,
    seeds=None,
    taus=None,
    head_dims=None,
    probe_size: int = 64,
    tau_grid_extreme=(0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0),
    dataset=None,
) -> Section:
    """The measure chapter: the shared sweep's runs at ``tau = 1`` (trained where missing) probed at every
    temperature of ``tau_grid_extreme`` in three precision pipelines (:func:`probe`, cached), real attention
    patterns and their spectra (:func:`attnrank.analysis.spectra.attention_examples`), seven figures, three tables and
    the ``measure`` verdict (:func:`verdict`).

    Raises:
        ConfigError: naming a parameter outside its range; RuntimeError when an architecture has no complete
        run at ``tau = 1``.
    """
    profile = resolve_profile(profile)
    grid_taus = sorted(set(tau_grid_extreme) | {1.0})  # tau = 1 (the trained model) is always probed
    configs = experiments.main_sweep(
        experiments.sweep_plan(profile, taus=taus, head_dims=head_dims, seeds=seeds, dataset=dataset)
    )
    sweep = runs_table(configs, long=False)
    used, not_probed = probed_runs(sweep, profile)
    S = Setting.of(used, profile, probe_size, grid_taus)
    n = S.n
    glue = {
        **S.glue(),
        **divergence(sweep, "measure"),
        "measure_n_not_probed": len(not_probed),
    }
    tables = probe(used, probe_size, grid_taus)
    values, matrices, quantiles = tables["values"], tables["matrices"], tables["spectra"]
    # the subject: real attention patterns and their spectra, one run per architecture (the first seed)
    mats, svs, labels = [], [], {}
    for a in ARCHS:
        first = used[used.arch == a].sort_values("seed").iloc[0]
        m_a, s_a, labels[a] = attention_examples(read(first.path))
        mats.append(m_a.assign(arch=a))
        svs.append(s_a.assign(arch=a))
    mats, svs = pd.concat(mats, ignore_index=True), pd.concat(svs, ignore_index=True)
    figures = [
        Figure(
            "measure_attention_patterns",
            mplots.attention_patterns(mats, svs, labels),
            mats.merge(svs, on=["arch", "state", "tau"], how="left")
            .drop(columns="k")
            .drop_duplicates(["arch", "state", "tau", "i", "j"]),
            f"The {S.runs_text}; one run each shown.",
        )
    ]
    glue["measure_example_tokens"] = len(labels[MLM_ARCH])  # the tokens the attention patterns show
    glue.update(matrix_facts(matrices, n))
    figures.append(_figure(mplots.spectra_tau1_figure(quantiles, matrices, S)))
    causal = uniform_causal(n)
    ratio_table, ratio_glue = causal_ratios(values, causal, n)
    glue.update(ratio_glue)
    at1 = summarise(values[(values.tau == 1.0) & (values.pipeline == REFERENCE)], ["arch", "state", "measure"])
    glue.update(trained_facts(at1))
    figures.append(_figure(mplots.ranks_tau1_figure(at1, causal, S)))
    by_tau = summarise(values[values.state == "trained"], ["arch", "tau", "pipeline", "measure"])
    ref = by_tau[by_tau.pipeline == REFERENCE]
    tau_max = max(grid_taus)
    ref_lookup = ref.set_index(["arch", "tau", "measure"])["mean"]
    head_dim = int(used[used.arch == MLM_ARCH].head_dim.iloc[0])
    glue["measure_dh_plus_1"] = head_dim + 1
    glue.update(temperature_facts(ref, matrices, quantiles, grid_taus))
    figures.append(_figure(mplots.ranks_vs_tau_figure(ref, causal, S, highlight=PRIMARY_MEASURE)))
    figures.append(_figure(mplots.spectra_extremes_figure(quantiles, matrices, S)))
    figures.append(_figure(mplots.precision_figure(by_tau, S)))
    deviation, precision_glue = precision_facts(by_tau, quantiles, n)
    glue.update(precision_glue)
    ratios = {m: ratio_glue[f"measure_gpt2_ratio_value_{m}"] for m in RANK_MEASURES}
    status, summary, rule_glue, excess = verdict(
        values,
        ratios,
        n=n,
        tau_max=tau_max,
        head_dim=head_dim,
        atol_rank=float(ref_lookup[MLM_ARCH, tau_max, "rank_atol_1e-8"]),
        profile=profile,
    )
    glue.update(rule_glue)
    wide = at1.pivot_table(index=["arch", "state"], columns="measure", values="mean")[list(RANK_MEASURES)].reset_index()
    wide = wide.assign(arch=wide.arch.map(ARCH_LABELS)).rename(
        columns={"arch": "model", "state": "state", **MEASURE_LABELS}
    )
    reader_tables = [
        Table("measure_causal_ratios", ratio_table.rename(index=MEASURE_LABELS).reset_index()),
        Table("measure_ranks_tau1_table", wide.rename_axis(None, axis=1)),
        Table(
            "measure_precision_deviation",
            deviation.rename(index=MEASURE_LABELS).reset_index(),
            digits=3,
        ),
    ]
    e = excess
    # the rule reads how each measure counts a matrix near rank one, not what the models learned: the learned
    # gate is stated, not applied
    gate = rules.learned_gate(
        {a: status for a in ARCHS}, baselines.bigram_gaps(used), baselines.reference_gains(used, worst=True)
    )
    reg = baselines.regime(used, gate)
    record = Verdict(
        "measure",
        status,
        f"At {fmt_tau(tau_max)} trained ModernBERT is near rank one: excess {fmt(e['rank_atol_1e-8'].value)} under "
        f"the study's rule, {fmt(e['rank_rtol_1e-2'].value)} on the relative 10⁻² count, {fmt(e['effective_rank'].value)} effective.",
        "excess rank: "
        + "; ".join(f"{MEASURE_LABELS[m].removeprefix('rank, ')} {fmt_estimate(x, 3, n=False)}" for m, x in e.items()),
        f"{S.n_runs} runs",
        regime_text(reg),
        summary + " The rule is about the measures (how each counts a matrix near rank one, which attention at this "
        "temperature is whether or not the model has learned), so the learned gate of the verdicts on trained "
        "models is not applied to it.",
        brief=regime_brief(reg),
        gate=gate_quote(reg),
    )
    return Section("measure", glue, figures, reader_tables, [record])
