"""The runs of the book as tables: what the chapter modules read instead of the store's internals.

* :func:`table` trains where missing and returns the runs of a list of configs (one row per
  run, ``initial_<m>``/``final_<m>`` columns; ``long=True``: one row per run x measure x
  ``when``, :func:`long_form`);
* :func:`main_runs` and :func:`temperature_grid`: the book's shared sweep, and its
  temperature grid at the standard head dimension with off-grid temperatures added;
* the tables of a set of runs: :func:`load_table` (one stored table over the runs),
  :func:`rank_curves`, :func:`layer_ranks`, :func:`layer_head_means`, :func:`loss_curves`,
  :func:`means_at`.

A run itself is :class:`attnrank.store.Run` (:func:`attnrank.store.run` trains or reads one).
This module is outside the training path, so a change here never re-keys a stored run.
"""

from __future__ import annotations

import pandas as pd

from .grid import sweep
from .rank import MEASURES

__all__ = ["table", "long_form", "WHEN", "RANK_COLUMN"]

#: The two moments of a run that the summary records, in order.
WHEN = ("initial", "final")
#: Name of the value column of the long tables.
RANK_COLUMN = "value"


def long_form(wide: pd.DataFrame) -> pd.DataFrame:
    """A wide run frame (:func:`attnrank.store.load_runs`) in long form.

    One row per run x rank measure x ``when``: the run's other columns, then ``measure``,
    ``when`` (``"initial"``/``"final"``) and ``value`` (the mean over layers, heads and
    probe sequences at the first or last probe). Rows keep the order of ``wide``, then
    ``when``, then the measures in the order of :data:`attnrank.rank.MEASURES`.
    """
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
    wide = sweep(list(configs), executor="serial", progress=progress)
    return long_form(wide) if long else wide
