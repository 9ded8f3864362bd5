"""The measure chapter: every rank measure of trained and initial attention, over a grid of
temperatures and three precision pipelines, and the numbers, tables and verdict the chapter reads.

:func:`probe` reads the probe tables of stored runs (:func:`attnrank.spectra.probe_tables`,
computed once and cached with :func:`attnrank.cache.cached`): per-sequence measure values,
per-matrix diagnostics and spectrum quantiles. The other functions turn those tables into the
chapter's numbers and its pre-registered verdict (:func:`verdict`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from . import rank, spectra, stats, verdicts
from .cache import cached
from .errors import ConfigError
from .glossary import fmt, fmt_estimate
from .profiles import ARCHS, resolve_config
from .rank import RANK_MEASURES
from .spectra import PIPELINES, REFERENCE

__all__ = [
    "RULE_MEASURES",
    "probe",
    "summarise",
    "threshold_lines",
    "uniform_causal",
    "matrix_facts",
    "causal_ratios",
    "verdict",
    "Setting",
    "baselines",
    "trained_facts",
]

#: The measures of the verdict rule: the study's absolute rule and two relative ones.
RULE_MEASURES = ("rank_atol_1e-8", "rank_rtol_1e-2", "effective_rank")
EPS32, EPS64 = float(torch.finfo(torch.float32).eps), float(torch.finfo(torch.float64).eps)


def probe(used: pd.DataFrame, probe_size: int, taus) -> dict[str, pd.DataFrame]:
    """:func:`attnrank.spectra.probe_tables` of the runs in ``used`` (a :func:`attnrank.store.load_runs` frame),
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


def threshold_lines(sigma_1: pd.Series, n: int) -> pd.DataFrame:
    """Where each measure cuts, per architecture (relative thresholds at the median ``sigma_1``
    of the panel), and the float32 and float64 round-off levels."""
    out = []
    for arch, s1 in sigma_1.items():
        out += [
            dict(arch=arch, label="study: atol 1e-8", value=rank.STUDY_ATOL, style="-"),
            dict(arch=arch, label=r"rtol 1e-2 $\times\,\sigma_1$", value=1e-2 * s1, style="--"),
            dict(arch=arch, label=r"rtol 1e-4 $\times\,\sigma_1$", value=1e-4 * s1, style="-."),
            dict(arch=arch, label=r"float32 round-off $\varepsilon_{32}\sigma_1$", value=EPS32 * s1, style=":"),
            dict(
                arch=arch,
                label=r"float64 round-off $n\,\varepsilon_{64}\sigma_1$",
                value=n * EPS64 * s1,
                style=(0, (1, 3)),
            ),
        ]
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
        out[f"measure_gap_{tag}"] = float(g.max_gap.median())
        out[f"measure_smin_{tag}"] = fmt(float(g.sigma_min.median()), 2)
    certified = (ref.sigma_min > n * EPS64 * ref.sigma_1).groupby(ref.arch).mean()
    out.update({f"measure_certified_{a}_pct": 100 * float(v) for a, v in certified.items()})
    g2 = ref[(ref.arch == "gpt2") & (ref.state == "trained")]
    g2all = ref[ref.arch == "gpt2"]
    out.update(
        measure_mindiag_gpt2_trained=fmt(float(g2.min_diag.median()), 2),
        measure_logdet_gpt2_trained=float(g2.log10_det.median()),
        measure_diag_bound_pct=100 * float((g2all.sigma_min <= g2all.min_diag * (1 + 1e-9)).mean()),
    )
    return out


def causal_ratios(values: pd.DataFrame, causal: dict, n: int) -> tuple[pd.DataFrame, dict]:
    """GPT-2's measures at ``tau = 1`` over those of ``U_n`` (mean and 95% CI over runs), per state.

    Returns ``(table, glue)``; the table's index is the measure."""
    ref = values[(values.arch == "gpt2") & (values.tau == 1.0) & (values.pipeline == REFERENCE)]
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
            glue[f"measure_gpt2_{tag}ratio_{m}"] = fmt_estimate(e_ratio, 2)
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
    trained BERT attention is near rank one; per run the excess ``e = (measure - 1)/(n - 1)``
    (0 = rank one, 1 = full). A measure *detects* the limit when the 95% interval of the mean
    ``e`` is below ``e_max``, *misses* it when above. Supported: the study's absolute rule
    misses while rtol 1e-2 and the effective rank detect; not supported: the absolute rule
    detects or a relative measure misses; else (or a grid below ``tau_high``) inconclusive.
    Returns ``(status, summary, glue)``."""
    hi = values[
        (values.state == "trained") & (values.pipeline == REFERENCE) & (values.arch == "bert") & (values.tau == tau_max)
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
    if status != verdicts.SUPPORTED:
        undecided = [m for m in RULE_MEASURES if not (detects[m] or misses[m])]
        counts = [
            stats.seeds_needed(spread[m], abs(excess[m].value - e_max))
            for m in undecided
            if np.isfinite(spread[m]) and spread[m] > 0 and excess[m].value != e_max
        ]
        if counts:
            needed = (
                f" About {max(counts)} runs per architecture would place every undecided interval on one side of "
                f"{e_max:g} at the observed spread."
            )
    summary = (
        f"At tau = {tau_max:g}, trained BERT's excess rank (0 = rank one, 1 = full; mean [95% CI] over runs) is "
        f"{fmt_estimate(atol_e, 3)} runs under the study's absolute 1e-8 rule (a rank of {fmt(atol_rank, 1)}, near d_h + 1 = "
        f"{head_dim + 1}) but {fmt_estimate(rel_e, 3, n=False)} at rtol 1e-2 and {fmt_estimate(eff_e, 3, n=False)} for the effective rank "
        f"(n = {n} tokens, {len(hi.seed.unique())} runs, {profile} profile); at tau = 1 trained GPT-2's effective rank is "
        f"{fmt(ratios['effective_rank'], 2)} times that of uniform causal attention and its rank at rtol 1e-2 "
        f"{fmt(ratios['rank_rtol_1e-2'], 2)} times.{needed}"
    )
    glue = {f"measure_excess_{m}": float(e.value) for m, e in excess.items()}
    return status, summary, {"measure_e_max": e_max, "measure_tau_high": tau_high, **glue}


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
    distinct argmax columns at the smallest ``tau``, and the ``tau`` at which trained BERT's
    median ``sigma_2`` at the largest ``tau`` would reach the study's threshold 1e-8."""
    lo, hi = min(taus), max(taus)
    look = ref.set_index(["arch", "tau", "measure"])["mean"]
    s2 = spectra[
        (spectra.arch == "bert")
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
    temperatures), and trained BERT's median smallest singular value at the largest ``tau`` in
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
    t = spectra[
        (spectra.arch == "bert") & (spectra.state == "trained") & (spectra.tau == spectra.tau.max()) & (spectra.k == n)
    ].set_index("pipeline")["median"]
    glue.update(
        {
            f"measure_floor_{tag}": fmt(float(t[p]), 2)
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
            measure_tau_max=f"{max(self.taus):g}",
            measure_tau_min=f"{min(self.taus):g}",
        )


def baselines(causal: dict, n: int, *, temperature: bool = False) -> pd.DataFrame:
    """Reference values drawn beside the measures: ``arch, measure, value, label``.

    ``causal``: :func:`uniform_causal` (drawn for GPT-2, under each measure); ``n``: the sequence
    length, the largest rank (both architectures). With ``temperature=True`` (the figure against
    the temperature) the causal rows have no label, ``n`` is labelled ``"n = <n>"`` and BERT also
    gets the rank-one line of uniform attention (``measure = "rank one"``, value 1).
    """
    if not temperature:
        return pd.DataFrame(
            [dict(arch="gpt2", measure=m, value=v, label="uniform causal attention $U_n$") for m, v in causal.items()]
            + [dict(arch=a, measure="n", value=float(n), label="n") for a in ARCHS]
        )
    return pd.concat(
        [
            pd.DataFrame([dict(arch="gpt2", measure=m, value=v) for m, v in causal.items()]),
            pd.DataFrame([dict(arch=a, measure="n", value=float(n), label=f"n = {n}") for a in ARCHS]),
            pd.DataFrame([dict(arch="bert", measure="rank one", value=1.0, label="uniform attention: rank 1")]),
        ],
        ignore_index=True,
    )


def trained_facts(at1: pd.DataFrame) -> dict:
    """``measure_<arch>_trained_<measure>``: the mean over runs of every rank measure of the trained
    models at ``tau = 1`` (``at1``: :func:`summarise` by ``arch, state, measure``).

    Raises:
        KeyError: when ``at1`` lacks a trained architecture or measure.
    """
    lookup = at1.set_index(["arch", "state", "measure"])["mean"]
    return {f"measure_{a}_trained_{m}": float(lookup[a, "trained", m]) for a in ARCHS for m in RANK_MEASURES}
