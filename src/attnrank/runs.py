"""The run-facing layer: what chapters and tools use instead of ``train``/``models``/``probe`` internals.

* :func:`model_from_config` (defined in :mod:`attnrank.models`, beside the model builder,
  so that the training path does not import this layer) is the one place a model is built
  from a run's config (the training path, the store's trained weights, the benchmark and
  the chapters call it);
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
from dataclasses import dataclass
from functools import cached_property

import pandas as pd

from .errors import ConfigError
from .models import model_from_config, tokenizer_pad_id  # re-exported: the run layer's model builder
from .profiles import RunConfig, resolve_config

__all__ = ["model_from_config", "tokenizer_pad_id", "Run", "get", "table", "long_form", "WHEN", "RANK_COLUMN"]

#: The two moments of a run that the summary records, in order.
WHEN = ("initial", "final")
#: Name of the value column of the long tables.
RANK_COLUMN = "value"


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
        """One of ``train_log``, ``eval_log``, ``ranks``, ``rank_summary``, ``sequences`` (see :mod:`attnrank.store`)."""
        return self.stored.table(name)

    def attention(self):
        """The attention probabilities the run kept: an :class:`attnrank.store.Attention`.

        ``steps [T]``, ``probabilities [T, layers, S, heads, n, n]`` (float32), ``input_ids [S, n]``
        and ``tokens`` of the first ``S`` probe sequences (:data:`attnrank.train.ATTENTION_SEQUENCES`)
        at the probe steps of :func:`attnrank.train.attention_steps`; ``attention().at(step)``
        is one step.

        Raises:
            ConfigError: naming ``attention`` for a run stored without them.
        """
        return self.stored.attention()

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
    out = (
        wide.reset_index(drop=True)
        .assign(_row=lambda x: range(len(x)))
        .melt(id_vars=ids + ["_row"], value_vars=cols, var_name="_col", value_name=RANK_COLUMN)
    )
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
