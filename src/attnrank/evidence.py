"""The evidence of the chapters on trained models, computed from stored runs and freshly initialised models.

Each function returns one table (or text) that a chapter shows or glues, so that a chapter reads as
claim, rule, evidence and verdict with one call per figure or table:

* run tables: :func:`temperature_grid` (the temperature grid of the shared sweep, plus off-grid
  settings), :func:`rank_curves`, :func:`layer_ranks`, :func:`layer_head_means`, :func:`loss_curves`,
  :func:`failures`, :func:`caption`;
* the attention logits at initialisation: :func:`init_statistics` (per layer, probe sequence and head:
  logit scale, half-range, ranks and the P1 bound), :func:`init_means`, :func:`init_std`;
* the shared sweep and the numbers a chapter glues: :func:`main_runs`, :func:`check_in_grid`,
  :func:`sweep_facts`, :func:`estimate_texts`, :func:`grid_correlations`, :func:`stability_facts`,
  :func:`head_changes`, :func:`convergence_facts`, :func:`ngram_references`, :func:`temperature_facts`,
  :func:`temperature_grid_text`, :func:`rank_verdict_facts`, :func:`loss_verdict_facts`,
  :func:`init_facts`, :func:`grid_runs`, :func:`head_dim_grid_text`, :func:`lever_verdicts`, :func:`verdict_table`;
* the build: :func:`environment`, :func:`profile_tables`, :func:`paper_facts`.

Runs come through :mod:`attnrank.runs`; the models are built by :func:`attnrank.models.model_from_config`.
This module is not part of the training path, so a change here never invalidates a stored run.
"""

from __future__ import annotations

import pandas as pd

from . import baselines
from .baselines import logit_sd, visible_keys
from .book import ENVIRONMENT_PACKAGES
from .errors import ConfigError
from .experiments import SWEEP_DEFAULTS, main_sweep, sweep_defaults, tau_sweep
from .glossary import MEASURE_LABELS, RANK_MEASURES, fmt_estimate, fmt_setting
from .models import build_model, model_from_config, tokenizer_pad_id
from .probe import attention_logits, attention_probabilities
from .profiles import ARCHS, PROFILES, RunConfig, profile_defaults, resolve_config
from .provenance import lock_state
from .rank import rank_measures
from .rules import lever_comparison
from .runs import RANK_COLUMN, table
from .stats import spearman
from .store import code_hash
from .store import load_table as _load
from .temp import grid_interval, grid_text, needed_text, shape_text
from .theory import taylor_rank_bound
from .train import device_name, prepare_data

__all__ = [
    "caption",
    "init_statistics",
    "init_means",
    "init_std",
    "load_table",
    "temperature_grid",
    "rank_curves",
    "layer_ranks",
    "layer_head_means",
    "loss_curves",
    "failures",
    "means_at",
    "main_runs",
    "check_in_grid",
    "sweep_facts",
    "estimate_texts",
    "grid_correlations",
    "stability_facts",
    "head_changes",
    "convergence_facts",
    "ngram_references",
    "temperature_facts",
    "temperature_grid_text",
    "rank_verdict_facts",
    "loss_verdict_facts",
    "init_facts",
    "grid_runs",
    "head_dim_grid_text",
    "lever_verdicts",
    "verdict_table",
    "environment",
    "profile_tables",
    "paper_facts",
]


def caption(runs: pd.DataFrame, profile: str) -> str:
    """The tail of a figure caption: ``"<profile> profile, N runs, S seeds per setting"`` for the runs
    (one row per run, with ``seed``) behind it."""
    d = runs.drop_duplicates("key") if "key" in runs else runs
    return f"{profile} profile, {len(d)} runs, {d.seed.nunique()} seeds per setting"


def init_statistics(
    cfg: RunConfig, *, measures=("effective_rank", "attention_entropy"), bounds: bool = False, check: float = 1e-4
) -> pd.DataFrame:
    """Statistics of the attention logits of a run's freshly initialised model on its probe sequences.

    The model is :func:`model_from_config` of ``cfg`` (exactly the weights its training starts
    from); the logits ``S = QK^T / (tau sqrt(d_head))`` are read at the attention function's hook
    point (:func:`attnrank.probe.attention_logits`) and their float64 softmax (causal for GPT-2)
    is checked against the model's own attention probabilities.

    Args:
        cfg: the run's config.
        measures: rank measures of the attention matrices (names in :data:`attnrank.rank.MEASURES`).
        bounds: also the P1 bound (:func:`attnrank.theory.taylor_rank_bound`) from each matrix's
            half-range ``M`` at relative tolerances 1e-2 and 1e-4 (``bound_rtol_1e-2``, ``bound_rtol_1e-4``).
        check: largest allowed difference between the softmax of the hooked logits and the model's
            attention probabilities.

    Returns:
        One row per ``layer, seq, head``: ``logit_sd`` (within-row sd of the visible logits,
        :func:`attnrank.baselines.logit_sd`), ``M`` (half-range of each row's visible logits,
        maximum over rows), one column per measure, the bounds if asked, and ``arch, tau,
        head_dim, seed, n``.

    Raises:
        RuntimeError: when the hooked logits do not reproduce the model's attention (by more than ``check``).
    """
    import numpy as np
    import torch

    _, tokenizer, _, probe_ids, _ = prepare_data(cfg)
    model = model_from_config(cfg, vocab_size=len(tokenizer), pad_token_id=tokenizer_pad_id(tokenizer))
    n = probe_ids.shape[-1]
    causal = cfg.arch == "gpt2"
    vis = visible_keys(n, causal)
    S = attention_logits(model, probe_ids).double()  # [L, B, H, n, n]
    A = torch.softmax(S.masked_fill(~vis, -torch.inf), -1)
    worst = float((A - attention_probabilities(model, probe_ids).double()).abs().max())
    if worst > check:
        raise RuntimeError(f"hooked logits do not reproduce the model's attention (largest difference {worst:.2g})")
    half = ((S.masked_fill(~vis, -torch.inf).amax(-1) - S.masked_fill(~vis, torch.inf).amin(-1)) / 2).amax(-1)
    L, B, H = S.shape[:3]
    idx = np.indices((L, B, H)).reshape(3, -1)
    df = pd.DataFrame(
        {
            "layer": idx[0],
            "seq": idx[1],
            "head": idx[2],
            "logit_sd": logit_sd(S, causal).reshape(-1).numpy(),
            "M": half.reshape(-1).numpy(),
            **{m: v.reshape(-1).numpy() for m, v in rank_measures(A, measures=list(measures)).items()},
        }
    )
    if bounds:
        for eps, col in ((1e-2, "bound_rtol_1e-2"), (1e-4, "bound_rtol_1e-4")):
            df[col] = [taylor_rank_bound(cfg.head_dim, M, eps, n) for M in df.M]
    return df.assign(arch=cfg.arch, tau=cfg.tau, head_dim=cfg.head_dim, seed=cfg.seed, n=n)


def init_means(configs, *, measures=("effective_rank", "attention_entropy"), bounds: bool = False) -> pd.DataFrame:
    """:func:`init_statistics` of each config, averaged over layers, probe sequences and heads.

    One row per config: ``arch, tau, head_dim, seed, n``, the mean ``logit_sd``, the median
    half-range ``M_median`` and the mean of each measure (and bound).
    """
    rows = []
    for cfg in configs:
        d = init_statistics(cfg, measures=measures, bounds=bounds)
        cols = [c for c in d.columns if c not in ("layer", "seq", "head", "arch", "tau", "head_dim", "seed", "n", "M")]
        rows.append(
            {
                "arch": cfg.arch,
                "tau": cfg.tau,
                "head_dim": cfg.head_dim,
                "seed": cfg.seed,
                "n": int(d.n.iloc[0]),
                **d[cols].mean().to_dict(),
                "M_median": float(d.M.median()),
            }
        )
    return pd.DataFrame(rows)


def init_std() -> float:
    """Standard deviation of the weight initialisation of both architectures (``initializer_range``).

    Raises:
        RuntimeError: when BERT and GPT-2 differ (the chapters state one value).
    """
    values = {
        a: build_model(a, hidden_size=32, num_layers=1, num_heads=2, max_len=16, vocab_size=64).config.initializer_range
        for a in ARCHS
    }
    if len(set(values.values())) != 1:
        raise RuntimeError(f"the architectures are initialised with different standard deviations: {values}")
    return float(next(iter(values.values())))


def load_table(runs: pd.DataFrame, name: str) -> pd.DataFrame:
    """One stored table over the runs of a frame (:func:`attnrank.store.load_table`)."""
    return _load(runs, name)


def temperature_grid(profile: str, *, extra=(), taus=None, head_dims=None, seeds=None, dataset=None) -> pd.DataFrame:
    """The runs of the temperature grid at the profile's standard head dimension, plus ``extra`` temperatures.

    The grid comes from the shared sweep (:func:`attnrank.experiments.main_sweep`); an ``extra``
    value off the grid trains its own runs (both architectures, the grid's seeds); every run trains on
    ``dataset`` (None: the profile's corpus, ``ATTNRANK_DATASET`` or Shakespeare). Returns the
    wide run frame sorted by ``arch, tau, seed``, with ``log10_tau``; ``attrs["missing"]`` lists
    the extra values that were off the grid and ``attrs["extra_seconds"]`` the time their runs took.
    """
    import math
    import time

    import numpy as np

    grid = sweep_defaults(profile, taus=taus, head_dims=head_dims, seeds=seeds)
    wide = table(main_sweep(profile, taus=taus, head_dims=head_dims, seeds=seeds, dataset=dataset), long=False)
    head_dim0 = resolve_config("bert", profile).head_dim
    missing = [t for t in sorted(set(extra)) if not any(math.isclose(t, g, rel_tol=1e-9) for g in grid["taus"])]
    t0 = time.perf_counter()
    more = (
        table(tau_sweep(profile, taus=missing, seeds=list(grid["seeds"]), dataset=dataset), long=False)
        if missing
        else wide.iloc[:0]
    )
    seconds = time.perf_counter() - t0
    on_grid = wide[(wide.head_dim == head_dim0) & wide.tau.isin(grid["taus"])]
    out = pd.concat([on_grid, more]).drop_duplicates("key").sort_values(["arch", "tau", "seed"]).reset_index(drop=True)
    out["log10_tau"] = np.log10(out.tau)
    out.attrs.update(missing=missing, extra_seconds=seconds)
    return out


def rank_curves(runs: pd.DataFrame, measures) -> pd.DataFrame:
    """Mean rank through training (``rank_summary``) of the runs for ``measures``, in their order.

    Columns: the run's identity columns, ``step``, ``measure`` and ``value`` (the mean over layers,
    heads and probe sequences), sorted by measure (in the order given), arch, tau, seed and step.
    """
    measures = list(measures)
    d = load_table(runs, "rank_summary")
    d = d[d.measure.isin(measures)].rename(columns={"mean": RANK_COLUMN})
    d = d.assign(_m=d.measure.map({m: i for i, m in enumerate(measures)}))
    return d.sort_values(["_m", "arch", "tau", "seed", "step"]).drop(columns="_m").reset_index(drop=True)


def layer_ranks(runs: pd.DataFrame, measure: str) -> pd.DataFrame:
    """Per-layer and per-head rank of ``measure`` at each run's first probe (``when = "initial"``) and last
    probe (``"final"``): the rows of the ``ranks`` tables (mean over probe sequences)."""
    t = load_table(runs, "ranks")
    t = t[t.measure == measure]
    first, last = t.groupby("key").step.transform("min"), t.groupby("key").step.transform("max")
    return pd.concat(
        [t[t.step == first].assign(when="initial"), t[t.step == last].assign(when="final")], ignore_index=True
    )


def layer_head_means(runs: pd.DataFrame, measure: str) -> pd.DataFrame:
    """Rank of ``measure`` per layer and head at the first and the last probe, averaged over the runs
    (seeds): one row per ``arch, when, step, layer, head`` (``when`` is ``"step <n>"``) with ``value``."""
    t = layer_ranks(runs, measure).assign(when=lambda x: "step " + x.step.astype(str))
    t = t.groupby(["arch", "when", "step", "layer", "head"], as_index=False)[RANK_COLUMN].mean()
    return t.sort_values(["arch", "step", "layer", "head"]).reset_index(drop=True)


def loss_curves(runs: pd.DataFrame) -> pd.DataFrame:
    """Validation and training loss through training of the runs, stacked: one row per run, ``curve``
    (``"validation loss"``, ``"training loss"``) and ``step``, with ``arch, tau, head_dim, seed, status, value``."""
    ev, tr = load_table(runs, "eval_log"), load_table(runs, "train_log")
    return pd.concat(
        [ev.assign(curve="validation loss", value=ev.val_loss), tr.assign(curve="training loss", value=tr.loss)],
        ignore_index=True,
    )[["curve", "arch", "tau", "head_dim", "seed", "status", "step", "value"]]


def failures(
    runs: pd.DataFrame,
    intro: str | None,
    cols=("arch", "tau", "head_dim", "num_heads", "seed", "failure_step", "failure_reason"),
    *,
    none: str = "No run diverged.",
):
    """What a chapter shows about its diverged runs: ``intro`` (with ``{n}`` for their number) in Markdown and
    the table of those runs (``intro=None``: the table alone), or ``none`` in Markdown when every run completed.
    Returns the objects to ``display``."""
    from IPython.display import Markdown

    bad = runs[runs.status != "complete"]
    if not len(bad):
        return (Markdown(none),)
    table = bad[[c for c in cols if c in bad]]
    return (table,) if intro is None else (Markdown(intro.format(n=len(bad))), table)


def means_at(
    runs: pd.DataFrame, column: str, settings: dict, *, by: str = "tau", archs=("bert", "gpt2"), prefix: str = ""
) -> dict:
    """Mean of ``column`` over the rows at each named setting, per architecture, for glueing.

    ``settings``: ``{name: value of by}``; returns ``{f"{prefix}{name}_{arch}": mean}`` (NaN where no row
    matches; values are compared with ``numpy.isclose``).
    """
    import numpy as np

    return {
        f"{prefix}{name}_{a}": float(runs[(runs.arch == a) & np.isclose(runs[by], v)][column].mean())
        for a in archs
        for name, v in settings.items()
    }


def check_in_grid(name: str, value: float, values) -> None:
    """Check that the chapter parameter ``name`` is one of the grid ``values`` (compared with ``numpy.isclose``).

    Raises:
        ConfigError: naming ``name``, with the allowed values written with ``:g``.
    """
    import numpy as np

    if not any(np.isclose(value, v) for v in values):
        raise ConfigError(
            name, f"got {value!r}; allowed values (the sweep's temperatures): {', '.join(f'{v:g}' for v in values)}"
        )


def main_runs(profile: str, *, taus=None, head_dims=None, seeds=None, dataset=None) -> pd.DataFrame:
    """The runs of the shared sweep (:func:`attnrank.experiments.main_sweep`; trained where missing), one row
    per run, with a ``sweep`` column: ``"temperature grid"`` for the runs at the profile's standard head
    dimension, ``"head-dimension grid"`` for the others."""
    import numpy as np

    wide = table(main_sweep(profile, taus=taus, head_dims=head_dims, seeds=seeds, dataset=dataset), long=False)
    wide["sweep"] = np.where(
        wide.head_dim == resolve_config("bert", profile).head_dim, "temperature grid", "head-dimension grid"
    )
    return wide


def sweep_facts(prefix: str, runs: pd.DataFrame, grid: dict) -> dict:
    """The sweep's numbers a chapter glues, named ``{prefix}_<fact>``: ``taus`` and ``head_dims`` (the grid,
    comma-separated), ``n_seeds``, ``n_runs`` and ``n_failed`` (runs whose status is not ``"complete"``)."""
    return {
        f"{prefix}_taus": ", ".join(f"{t:g}" for t in grid["taus"]),
        f"{prefix}_head_dims": ", ".join(str(h) for h in grid["head_dims"]),
        f"{prefix}_n_seeds": runs.seed.nunique(),
        f"{prefix}_n_runs": len(runs),
        f"{prefix}_n_failed": int((runs.status != "complete").sum()),
    }


def estimate_texts(prefix: str, estimates: dict, **text) -> dict:
    """``{f"{prefix}_{name}_{arch}": fmt_estimate(estimate, **text)}`` for ``estimates`` = ``{name: {arch: Estimate}}``."""
    return {
        f"{prefix}_{name}_{a}": fmt_estimate(e, **text)
        for name, by_arch in estimates.items()
        for a, e in by_arch.items()
    }


def grid_correlations(runs: pd.DataFrame, x: str, y: str, taus, archs) -> dict:
    """Spearman's rho (:func:`attnrank.stats.spearman`) of columns ``x`` and ``y`` over the runs at each
    temperature ratio of ``taus`` (``numpy.isclose``) and architecture: ``{tau: {arch: Estimate}}``."""
    import numpy as np

    return {
        t: {a: spearman(d[x], d[y]) for a in archs for d in [runs[(runs.arch == a) & np.isclose(runs.tau, t)]]}
        for t in taus
    }


def stability_facts(prefix: str, res, shares: pd.DataFrame, measure: str) -> dict:
    """The stability numbers of one measure a chapter glues, per architecture of ``res.change``
    (:class:`attnrank.rules.DynamicsResult`): ``{prefix}_median_change_<arch>`` (the median relative change
    with its interval, in percent) and, from ``shares`` (:func:`attnrank.rules.stability_table`), the shares
    ``share_stable``, ``share_increased`` and the largest change ``max_change``, as whole percentages."""
    out = {}
    for a in res.change:
        out[f"{prefix}_median_change_{a}"] = fmt_estimate(res.change[a], 0, percent=True)
        for k, col in (
            ("share_stable", "share_stable"),
            ("share_increased", "share_increased"),
            ("max_change", "largest"),
        ):
            out[f"{prefix}_{k}_{a}"] = f"{shares.loc[(measure, a), col]:.0%}"
    return out


def head_changes(heat: pd.DataFrame) -> dict:
    """Largest relative change of one head's rank between the first and the last probe step, per architecture.

    ``heat``: :func:`layer_head_means` (one row per ``arch, step, layer, head`` with ``value``). Returns
    ``{arch: max over (layer, head) of |last - first| / first}``.
    """
    wide = heat.pivot_table(index=["arch", "layer", "head"], columns="step", values="value")
    first, last = heat.step.min(), heat.step.max()
    change = (wide[last] - wide[first]).abs() / wide[first]
    return {a: float(change.loc[a].max()) for a in heat.arch.unique()}


def convergence_facts(
    prefix: str, runs: pd.DataFrame, levels: dict, censored_at: int, *, quantile: float, smooth: int
) -> dict:
    """The convergence-speed numbers a chapter glues (from :func:`attnrank.rules.convergence_speed`):
    ``{prefix}_level_<arch>`` (3 decimals, nats), ``level_quantile`` (percent), ``smooth``, ``n_censored``,
    ``n_complete`` and ``cens_value`` (the step given to censored runs)."""
    return {
        **{f"{prefix}_level_{a}": f"{lv:.3f}" for a, lv in levels.items()},
        f"{prefix}_level_quantile": f"{quantile:.0%}",
        f"{prefix}_smooth": smooth,
        f"{prefix}_n_censored": int(runs.censored.sum()),
        f"{prefix}_n_complete": int((runs.status == "complete").sum()),
        f"{prefix}_cens_value": censored_at,
    }


def ngram_references(profile: str, archs) -> tuple[dict, dict]:
    """The count-based baselines of each architecture's validation targets (:func:`attnrank.baselines.ngram_losses`
    of the profile's config): ``(losses, references)`` with ``losses = {arch: ngram_losses(...)}`` and
    ``references = {arch: {"unigram": nats, "bigram": nats}}`` (the lines a loss figure draws)."""
    losses = {a: baselines.ngram_losses(resolve_config(a, profile)) for a in archs}
    return losses, {a: {"unigram": b["unigram"], "bigram": b["bigram"]} for a, b in losses.items()}


def temperature_facts(prefix: str, runs: pd.DataFrame, grid: dict, tau: float) -> dict:
    """The numbers of the temperature grid a chapter glues, named ``{prefix}_<fact>``.

    ``runs``: :func:`temperature_grid`; ``grid``: :func:`attnrank.experiments.sweep_defaults`; ``tau``: the
    detailed temperature ratio. Facts: ``grid_text`` (:func:`attnrank.temp.grid_text`), ``init_std``
    (:func:`init_std`), ``n_runs``, ``n_seeds``, ``n_taus``, ``head_dim``, ``n_failed`` (integers) and
    ``tau``, ``tau_min``, ``tau_max`` (written by :func:`attnrank.glossary.fmt_setting`).
    """
    return {
        f"{prefix}_grid_text": grid_text(grid["taus"]),
        f"{prefix}_init_std": init_std(),
        f"{prefix}_n_runs": len(runs),
        f"{prefix}_n_seeds": int(runs.seed.nunique()),
        f"{prefix}_n_taus": int(runs.tau.nunique()),
        f"{prefix}_head_dim": int(runs.head_dim.iloc[0]),
        f"{prefix}_tau": fmt_setting(tau),
        f"{prefix}_n_failed": int((runs.status != "complete").sum()),
        f"{prefix}_tau_min": fmt_setting(min(grid["taus"])),
        f"{prefix}_tau_max": fmt_setting(max(grid["taus"])),
    }


def temperature_grid_text(runs: pd.DataFrame, profile: str) -> str:
    """One sentence on the runs of :func:`temperature_grid`: how many, over how many temperatures, seeds and
    which head dimension, and the off-grid settings added (``runs.attrs["missing"]``)."""
    added = ", ".join(map(fmt_setting, runs.attrs["missing"])) or "none"
    return (
        f"{len(runs)} runs ({profile} profile): {runs.tau.nunique()} temperatures x 2 architectures x "
        f"{runs.seed.nunique()} seeds at head dimension {int(runs.head_dim.iloc[0])}; off-grid settings added "
        f"(trained once, then served by the store): {added}."
    )


def rank_verdict_facts(prefix: str, rv) -> dict:
    """The numbers of a rank verdict on the temperature grid (:func:`attnrank.rules.temperature_rank`) a chapter
    glues, per architecture of ``rv.arch``: ``{prefix}_cold_diff_<arch>`` (coldest minus stock, with its interval),
    ``cold_p`` (exact permutation p), ``rank_spread`` (seed spread), ``peak`` (where the mean peaks, with its
    interval on the grid, in words) and ``rank_needed`` (seeds per arm that would resolve the effect)."""
    out = {}
    for a, r in rv.arch.items():
        e = r.verdict.estimate
        out.update(
            {
                f"{prefix}_cold_diff_{a}": fmt_estimate(e, 2),
                f"{prefix}_cold_p_{a}": float(e.p),
                f"{prefix}_rank_spread_{a}": float(r.spread),
                f"{prefix}_peak_{a}": grid_interval(r.shape, words=True, note=shape_text(r).split(" (")[0]),
                f"{prefix}_rank_needed_{a}": needed_text(r.verdict),
            }
        )
    return out


def loss_verdict_facts(prefix: str, loss_v) -> dict:
    """The numbers of a loss verdict on the temperature grid (:func:`attnrank.rules.temperature_loss`) a chapter
    glues, per architecture of ``loss_v.arch``: ``{prefix}_loss_rho_<arch>`` (Spearman's rho with its interval),
    ``loss_best`` (the grid value of the lowest mean loss, with its interval on the grid, in words) and
    ``loss_spread`` (seed spread, nats)."""
    out = {}
    for a, r in loss_v.arch.items():
        out.update(
            {
                f"{prefix}_loss_rho_{a}": fmt_estimate(r.verdict.estimate, 2),
                f"{prefix}_loss_spread_{a}": float(r.spread),
                f"{prefix}_loss_best_{a}": grid_interval(r.shape, words=True),
            }
        )
    return out


def head_dim_grid_text(runs: pd.DataFrame, profile: str, head_dims, hidden: int, taus) -> str:
    """One sentence on the head-dimension runs: how many, the head dimensions and heads at hidden size
    ``hidden``, the temperature ratios ``taus`` (written by :func:`attnrank.glossary.fmt_setting`) and the seeds."""
    return (
        f"{len(runs)} head-dimension runs ({profile} profile): head dimensions {', '.join(map(str, head_dims))} at "
        f"hidden size {hidden} (heads: {', '.join(str(hidden // h) for h in head_dims)}), tau in "
        f"{{{', '.join(map(fmt_setting, taus))}}}, {runs.seed.nunique()} seeds, both archs."
    )


def environment(prefix: str, profile: str) -> tuple[pd.DataFrame, dict]:
    """The environment of this build: a table (``package, version``) of Python, the platform and each of
    :data:`attnrank.book.ENVIRONMENT_PACKAGES` with the version the lock file pins (``locked``), and the facts a
    chapter glues: ``{prefix}_lock`` (the lock file's hash and whether the installed versions match it), ``{prefix}_profile``,
    ``{prefix}_device`` (:func:`attnrank.train.device_name`), ``{prefix}_threads`` (torch threads per run of
    the profile) and ``{prefix}_code_hash`` (:func:`attnrank.store.code_hash`, part of every run's key)."""
    import platform
    import sys
    from importlib.metadata import version

    lock_hash, locked = lock_state(ENVIRONMENT_PACKAGES)
    env = pd.DataFrame(
        [("python", sys.version.split()[0], "-"), ("platform", platform.platform(), "-")]
        + [(p, version(p), locked[p] or "-") for p in ENVIRONMENT_PACKAGES],
        columns=["package", "version", "locked"],
    )
    differ = [p for p in ENVIRONMENT_PACKAGES if locked[p] is not None and locked[p] != version(p)]
    if lock_hash is None:
        lock_text = "no lock file in this copy of the library"
    elif differ:
        lock_text = f"requirements.lock (SHA-256 {lock_hash[:12]}); not installed from it: {', '.join(differ)} differ"
    else:
        lock_text = f"requirements.lock (SHA-256 {lock_hash[:12]}); every package listed is at its locked version"
    return env, {
        f"{prefix}_lock": lock_text,
        f"{prefix}_profile": profile,
        f"{prefix}_device": device_name(),
        f"{prefix}_threads": resolve_config("bert", profile).threads,
        f"{prefix}_code_hash": code_hash(),
    }


def profile_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The settings of every profile, one column per profile: its defaults
    (:func:`attnrank.profiles.profile_defaults`; each value as written in the profile, so integers stay
    integers and floats are written with ``:g``) and the sweep grids of the chapters
    (:data:`attnrank.experiments.SWEEP_DEFAULTS`)."""
    defaults = pd.DataFrame(
        {p: {k: f"{v:g}" if isinstance(v, float) else str(v) for k, v in profile_defaults(p).items()} for p in PROFILES}
    )
    return defaults, pd.DataFrame({p: {k: str(v) for k, v in SWEEP_DEFAULTS[p].items()} for p in PROFILES})


def paper_facts(prefix: str) -> dict:
    """The size of the ``paper`` profile, as integers named ``{prefix}_paper_<fact>``: ``width`` (hidden size),
    ``layers``, ``heads``, ``tokens`` (sequence length), ``steps`` and ``seeds`` (of its sweep)."""
    paper = profile_defaults("paper")
    return {
        f"{prefix}_paper_{key}": int(value)
        for key, value in (
            ("width", paper["hidden_size"]),
            ("layers", paper["num_layers"]),
            ("heads", paper["num_heads"]),
            ("tokens", paper["max_len"]),
            ("steps", paper["max_steps"]),
            ("seeds", len(SWEEP_DEFAULTS["paper"]["seeds"])),
        )
    }


def verdict_table(results: dict) -> pd.DataFrame:
    """The verdict of one rule under every rank measure, for display: ``results`` is ``{measure: result}`` (each
    with a ``status``, e.g. :func:`attnrank.rules.dynamics_rule`); one row per measure, in order, with its label
    (:data:`attnrank.rank.MEASURES`) and ``"verdict under this measure"``."""
    return pd.DataFrame(
        {
            "measure": [MEASURE_LABELS[m] for m in results],
            "verdict under this measure": [r.status for r in results.values()],
        }
    )


def lever_verdicts(
    tau_runs: pd.DataFrame,
    hd_runs: pd.DataFrame,
    hd_cold: pd.DataFrame,
    *,
    primary: str,
    effect: float = 1.0,
    archs=("bert", "gpt2"),
) -> tuple[dict, object, object]:
    """The lever rule (:func:`attnrank.rules.lever_comparison`) as a chapter applies it.

    Args:
        tau_runs: the runs of the temperature grid (standard head dimension).
        hd_runs: the runs of the head-dimension grid at ``tau = 1``; ``hd_cold``: the same at the coldest tau.
        primary: the primary rank measure; ``effect``: the pre-registered difference (units of rank).

    Returns:
        ``(by_measure, loss, cold)``: ``{measure: SweepVerdict}`` on the initial rank of every measure of
        :data:`RANK_MEASURES`; the same comparison of the final validation loss over the complete runs (no
        effect: reported, not judged); and the primary measure against the head-dimension grid at the coldest tau.
    """
    by_measure = {
        m: lever_comparison(tau_runs, hd_runs, f"initial_{m}", effect=effect, archs=archs) for m in RANK_MEASURES
    }
    loss = lever_comparison(
        tau_runs[tau_runs.status == "complete"], hd_runs[hd_runs.status == "complete"], "final_val_loss", archs=archs
    )
    return by_measure, loss, lever_comparison(tau_runs, hd_cold, f"initial_{primary}", effect=effect, archs=archs)


def init_facts(
    prefix: str, init: pd.DataFrame, uniform: dict, settings: dict, *, primary: str = "effective_rank"
) -> dict:
    """The numbers of the freshly initialised models a chapter glues, named ``{prefix}_<fact>``.

    Args:
        init: :func:`init_means` (one row per config: ``arch, tau, n``, ``logit_sd``, ``attention_entropy``).
        uniform: :func:`attnrank.baselines.uniform_ranks` over the same ``n`` tokens.
        settings: ``{name: tau}`` (:func:`means_at`).

    Returns:
        ``logit_sd_<name>_<arch>`` and ``entropy_<name>_<arch>`` (means, nats for the entropy),
        ``uniform_<arch>`` (``primary`` of uniform attention), ``uniform_causal_rank_rtol`` (the rank at
        relative tolerance 1e-2 of the uniform causal matrix), ``n`` (tokens) and ``log_n`` (the entropy of
        uniform rows over ``n`` tokens, nats).
    """
    import math

    n = int(init.n.iloc[0])
    return {
        **means_at(init, "logit_sd", settings, prefix=f"{prefix}_logit_sd_"),
        **means_at(init, "attention_entropy", settings, prefix=f"{prefix}_entropy_"),
        **{f"{prefix}_uniform_{a}": u[primary] for a, u in uniform.items()},
        f"{prefix}_log_n": float(math.log(n)),
        f"{prefix}_uniform_causal_rank_rtol": uniform["gpt2"]["rank_rtol_1e-2"],
        f"{prefix}_n": n,
    }


def grid_runs(runs: pd.DataFrame, *, head_dims, taus) -> pd.DataFrame:
    """The runs whose head dimension is in ``head_dims`` and whose temperature ratio is in ``taus`` (exact
    values), sorted by ``arch, tau, head_dim, seed``."""
    return runs[runs.head_dim.isin(head_dims) & runs.tau.isin(taus)].sort_values(["arch", "tau", "head_dim", "seed"])
