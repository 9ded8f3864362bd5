"""The evidence of the chapters on trained models, computed from stored runs and freshly initialised models.

Each function returns one table (or text) that a chapter shows or glues, so that a chapter reads as
claim, rule, evidence and verdict with one call per figure or table:

* run tables: :func:`temperature_grid` (the temperature grid of the shared sweep, plus off-grid
  settings), :func:`rank_curves`, :func:`layer_ranks`, :func:`layer_head_means`, :func:`loss_curves`,
  :func:`failures`, :func:`caption`;
* the attention logits at initialisation: :func:`init_statistics` (per layer, probe sequence and head:
  logit scale, half-range, ranks and the P1 bound), :func:`init_means`, :func:`init_std`.

Runs come through :mod:`attnrank.runs`; the models are built by :func:`attnrank.runs.model_from_config`.
This module is not part of the training path, so a change here never invalidates a stored run.
"""

from __future__ import annotations

import pandas as pd

from .profiles import RunConfig, resolve_config
from .runs import RANK_COLUMN, model_from_config, table, tokenizer_pad_id

__all__ = ["caption", "init_statistics", "init_means", "init_std", "load_table", "temperature_grid", "rank_curves",
           "layer_ranks", "layer_head_means", "loss_curves", "failures", "means_at"]


def caption(runs: pd.DataFrame, profile: str) -> str:
    """The tail of a figure caption: ``"<profile> profile, N runs, S seeds per setting"`` for the runs
    (one row per run, with ``seed``) behind it."""
    d = runs.drop_duplicates("key") if "key" in runs else runs
    return f"{profile} profile, {len(d)} runs, {d.seed.nunique()} seeds per setting"


def init_statistics(cfg: RunConfig, *, measures=("effective_rank", "attention_entropy"), bounds: bool = False,
                    check: float = 1e-4) -> pd.DataFrame:
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

    from .baselines import logit_sd, visible_keys
    from .probe import attention_logits, attention_probabilities
    from .rank import rank_measures

    from .train import prepare_data

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
    df = pd.DataFrame({"layer": idx[0], "seq": idx[1], "head": idx[2], "logit_sd": logit_sd(S, causal).reshape(-1).numpy(),
                       "M": half.reshape(-1).numpy(),
                       **{m: v.reshape(-1).numpy() for m, v in rank_measures(A, measures=list(measures)).items()}})
    if bounds:
        from .theory import taylor_rank_bound

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
        rows.append({"arch": cfg.arch, "tau": cfg.tau, "head_dim": cfg.head_dim, "seed": cfg.seed, "n": int(d.n.iloc[0]),
                     **d[cols].mean().to_dict(), "M_median": float(d.M.median())})
    return pd.DataFrame(rows)


def init_std() -> float:
    """Standard deviation of the weight initialisation of both architectures (``initializer_range``).

    Raises:
        RuntimeError: when BERT and GPT-2 differ (the chapters state one value).
    """
    from .models import ARCHS, build_model

    values = {a: build_model(a, hidden_size=32, num_layers=1, num_heads=2, max_len=16, vocab_size=64).config.initializer_range
              for a in ARCHS}
    if len(set(values.values())) != 1:
        raise RuntimeError(f"the architectures are initialised with different standard deviations: {values}")
    return float(next(iter(values.values())))


def load_table(runs: pd.DataFrame, name: str) -> pd.DataFrame:
    """One stored table over the runs of a frame (:func:`attnrank.store.load_table`)."""
    from .store import load_table as _load

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

    from .experiments import main_sweep, sweep_defaults, tau_sweep

    grid = sweep_defaults(profile, taus=taus, head_dims=head_dims, seeds=seeds)
    wide = table(main_sweep(profile, taus=taus, head_dims=head_dims, seeds=seeds, dataset=dataset), long=False)
    head_dim0 = resolve_config("bert", profile).head_dim
    missing = [t for t in sorted(set(extra)) if not any(math.isclose(t, g, rel_tol=1e-9) for g in grid["taus"])]
    t0 = time.perf_counter()
    more = (table(tau_sweep(profile, taus=missing, seeds=list(grid["seeds"]), dataset=dataset), long=False) if missing
            else wide.iloc[:0])
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
    return pd.concat([t[t.step == first].assign(when="initial"), t[t.step == last].assign(when="final")],
                     ignore_index=True)


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
    return pd.concat([ev.assign(curve="validation loss", value=ev.val_loss), tr.assign(curve="training loss", value=tr.loss)],
                     ignore_index=True)[["curve", "arch", "tau", "head_dim", "seed", "status", "step", "value"]]


def failures(runs: pd.DataFrame, intro: str, cols=("arch", "tau", "head_dim", "num_heads", "seed", "failure_step",
                                                   "failure_reason")):
    """What a chapter shows about its diverged runs: ``intro`` (with ``{n}`` for their number) in Markdown and
    the table of those runs, or ``"No run diverged."``. Returns the objects to ``display``."""
    from IPython.display import Markdown

    bad = runs[runs.status != "complete"]
    return (Markdown(intro.format(n=len(bad))), bad[[c for c in cols if c in bad]]) if len(bad) else (
        Markdown("No run diverged."),)


def means_at(runs: pd.DataFrame, column: str, settings: dict, *, by: str = "tau", archs=("bert", "gpt2")) -> dict:
    """Mean of ``column`` over the rows at each named setting, per architecture, for glueing.

    ``settings``: ``{name: value of by}``; returns ``{f"{name}_{arch}": mean}`` (NaN where no row
    matches; values are compared with ``numpy.isclose``).
    """
    import numpy as np

    return {f"{name}_{a}": float(runs[(runs.arch == a) & np.isclose(runs[by], v)][column].mean())
            for a in archs for name, v in settings.items()}
