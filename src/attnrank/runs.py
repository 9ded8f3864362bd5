"""The run-facing layer: what chapters and tools use instead of ``train``/``models``/``probe`` internals.

* :func:`model_from_config` is the one place a model is built from a run's config (the
  training path, the store's trained weights, the benchmark and the chapters call it);
* :func:`get` returns a :class:`Run` (trained if missing, through :mod:`attnrank.store`)
  that gives its config, summary, initial and final model, probe batch and rank tables;
* :func:`table` returns the runs of a list of configs in long form, one row per run x
  rank measure x ``when`` (``"initial"`` or ``"final"``), so no caller melts wide
  ``initial_<m>``/``final_<m>`` columns back; ``table(configs, long=False)`` is the wide
  frame of :func:`attnrank.store.load_runs` that the verdict rules of
  :mod:`attnrank.rules` read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import pandas as pd

from .errors import ConfigError
from .profiles import RunConfig, resolve_config

__all__ = ["model_from_config", "tokenizer_pad_id", "Run", "get", "table", "long_form", "caption", "init_statistics",
           "init_means", "init_std", "load_table", "temperature_grid", "rank_curves", "layer_ranks", "WHEN", "RANK_COLUMN"]

#: The two moments of a run that the summary records, in order.
WHEN = ("initial", "final")
#: Name of the value column of the long tables.
RANK_COLUMN = "value"


def tokenizer_pad_id(tokenizer) -> int:
    """The pad id a model of ``tokenizer`` is built with.

    GPT-2's tokenizer has no padding token (its batches are never padded); its model
    config names ``<|endoftext|>`` as bos/eos, and as the pad id that no loss or collator uses.
    """
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


def _fields(cfg) -> dict:
    if isinstance(cfg, RunConfig):
        return {**cfg.to_dict(), "head_dim": cfg.head_dim}
    if isinstance(cfg, Mapping):
        return dict(cfg)
    raise ConfigError("cfg", f"got a {type(cfg).__name__}; expected a RunConfig (resolve_config(...)) or a stored "
                      "config.json mapping")


def model_from_config(cfg, *, vocab_size: int | None = None, pad_token_id: int | None = None, tau: float | None = None,
                      seed: int | None = None, attn_implementation: str | None = None):
    """The model of a run, freshly initialised from its seed: exactly the weights its training started from.

    Args:
        cfg: a :class:`~attnrank.profiles.RunConfig`, or a run's stored ``config.json``
            (a mapping with ``arch``, ``hidden_size``, ``num_layers``, ``num_heads``, ``tau``,
            ``max_len``, ``dropout``, ``seed``).
        vocab_size, pad_token_id: of the run's tokenizer; by default read from the tokenizer
            of ``cfg`` (built and cached by :func:`attnrank.data.get_tokenizer`, which needs
            ``dataset`` and ``vocab_size`` in ``cfg``).
        tau, seed: override the config's temperature ratio and initialisation seed.
        attn_implementation: ``None`` for the tempered attention of :mod:`attnrank.attention`,
            or a stock HF name (``"eager"``, ``"sdpa"``; then ``tau`` must be 1).

    Returns:
        ``BertForMaskedLM`` or ``GPT2LMHeadModel`` in train mode, float32 on the CPU.

    Raises:
        ConfigError: for a ``cfg`` that is neither, or the checks of
        :func:`attnrank.models.build_model`.
    """
    from . import attention
    from .models import build_model

    c = _fields(cfg)
    if vocab_size is None or pad_token_id is None:
        from .data import get_tokenizer

        tokenizer = get_tokenizer(c["arch"], c["dataset"], c["vocab_size"])
        vocab_size = len(tokenizer) if vocab_size is None else vocab_size
        pad_token_id = tokenizer_pad_id(tokenizer) if pad_token_id is None else pad_token_id
    return build_model(
        c["arch"], hidden_size=c["hidden_size"], num_layers=c["num_layers"], num_heads=c["num_heads"],
        tau=c["tau"] if tau is None else tau, max_len=c["max_len"], vocab_size=vocab_size, dropout=c["dropout"],
        seed=c["seed"] if seed is None else seed, pad_token_id=pad_token_id,
        attn_implementation=attn_implementation or attention.ATTN_IMPLEMENTATION,
    )


@dataclass
class Run:
    """A stored run seen from the chapters: its config, summary, models, probe batch and tables.

    Built by :func:`get`; ``stored`` is the :class:`attnrank.store.Run` it reads.
    """

    config: RunConfig
    stored: object = dataclasses.field(repr=False)

    @property
    def summary(self) -> dict:
        """The run's ``summary.json`` (status, losses, initial/final mean ranks, timings)."""
        return self.stored.summary

    @property
    def key(self) -> str:
        return self.stored.key

    @property
    def fresh(self) -> bool:
        """True when :func:`get` trained the run, False when it was read from the store."""
        return self.stored.fresh

    def table(self, name: str) -> pd.DataFrame:
        """One of ``train_log``, ``eval_log``, ``ranks``, ``rank_summary`` (see :mod:`attnrank.store`)."""
        return self.stored.table(name)

    def initial_model(self):
        """The model before the first step (rebuilt from the seed), in eval mode, float32 on the CPU."""
        s = self.summary
        return model_from_config(self.config, vocab_size=s["vocab_size"], pad_token_id=s["pad_token_id"]).eval()

    def final_model(self):
        """The trained model (weights read with ``safetensors``), in eval mode."""
        return self.stored.load_model()

    @cached_property
    def _probe_ids(self):
        from .train import prepare_data

        return prepare_data(self.config)[3]

    def probe_batch(self):
        """The fixed probe sequences of the run: token ids ``[probe_size, max_len]`` (int64).

        The same held-out blocks the rank probe measured at every step.
        """
        return self._probe_ids.clone()

    def ranks(self, long: bool = True) -> pd.DataFrame:
        """Mean rank per step, layer and head (mean and sd over the probe sequences).

        ``long=True``: one row per ``step, layer, head, measure`` with ``value, sd``;
        ``long=False``: one row per ``step, layer, head`` with one column per measure.
        """
        t = self.table("ranks")
        if long:
            return t
        wide = t.pivot_table(index=["step", "layer", "head"], columns="measure", values="value", sort=True)
        wide.columns.name = None
        return wide.reset_index()


def get(config: RunConfig | None = None, *, progress: bool = False, **kwargs) -> Run:
    """The run of ``config`` (or of ``resolve_config(**kwargs)``), trained only when no result is stored.

    Raises:
        ConfigError: for invalid settings, before anything is trained (see
        :func:`attnrank.store.run`).
    """
    from . import store

    cfg = config if config is not None else resolve_config(**kwargs)
    if not isinstance(cfg, RunConfig):
        raise ConfigError("config", f"got a {type(cfg).__name__}; expected a RunConfig (resolve_config(...))")
    return Run(cfg, store.run(cfg, progress=progress))


def long_form(wide: pd.DataFrame) -> pd.DataFrame:
    """A wide run frame (:func:`attnrank.store.load_runs`) in long form.

    One row per run x rank measure x ``when``: the run's other columns, then ``measure``,
    ``when`` (``"initial"``/``"final"``) and ``value`` (the mean over layers, heads and
    probe sequences at the first or last probe). Rows keep the order of ``wide``, then
    ``when``, then the measures in the order of :data:`attnrank.rank.MEASURES`.
    """
    from .rank import MEASURES

    cols = [f"{w}_{m}" for w in WHEN for m in MEASURES if f"{w}_{m}" in wide]
    ids = [c for c in wide.columns if c not in cols]
    out = wide.reset_index(drop=True).assign(_row=lambda x: range(len(x))).melt(
        id_vars=ids + ["_row"], value_vars=cols, var_name="_col", value_name=RANK_COLUMN)
    split = out["_col"].str.split("_", n=1, expand=True)
    out["when"], out["measure"] = split[0], split[1]
    order = {c: i for i, c in enumerate(cols)}
    out = out.assign(_o=out["_col"].map(order)).sort_values(["_row", "_o"], kind="stable")
    return out[ids + ["measure", "when", RANK_COLUMN]].reset_index(drop=True)


def table(configs, *, long: bool = True, progress: bool = False) -> pd.DataFrame:
    """The runs of ``configs`` (trained where missing), in order.

    Args:
        configs: resolved :class:`~attnrank.profiles.RunConfig` s.
        long: one row per run x measure x ``when`` (:func:`long_form`); ``False``: one row
            per run with ``initial_<m>``/``final_<m>`` columns (:func:`attnrank.store.load_runs`).
        progress: show a progress bar while training.

    A failed (diverged) run is kept with ``status == "failed"``.

    Raises:
        ConfigError: for something that is not a RunConfig, before anything is trained.
    """
    from .grid import sweep

    wide = sweep(list(configs), executor="serial", progress=progress)
    return long_form(wide) if long else wide


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


def temperature_grid(profile: str, *, extra=(), taus=None, head_dims=None, seeds=None) -> pd.DataFrame:
    """The runs of the temperature grid at the profile's standard head dimension, plus ``extra`` temperatures.

    The grid comes from the shared sweep (:func:`attnrank.experiments.main_sweep`); an ``extra``
    value off the grid trains its own runs (both architectures, the grid's seeds). Returns the
    wide run frame sorted by ``arch, tau, seed``, with ``log10_tau``; ``attrs["missing"]`` lists
    the extra values that were off the grid and ``attrs["extra_seconds"]`` the time their runs took.
    """
    import math
    import time

    import numpy as np

    from .experiments import main_sweep, sweep_defaults, tau_sweep

    grid = sweep_defaults(profile, taus=taus, head_dims=head_dims, seeds=seeds)
    wide = table(main_sweep(profile, taus=taus, head_dims=head_dims, seeds=seeds), long=False)
    head_dim0 = resolve_config("bert", profile).head_dim
    missing = [t for t in sorted(set(extra)) if not any(math.isclose(t, g, rel_tol=1e-9) for g in grid["taus"])]
    t0 = time.perf_counter()
    more = table(tau_sweep(profile, taus=missing, seeds=list(grid["seeds"])), long=False) if missing else wide.iloc[:0]
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
