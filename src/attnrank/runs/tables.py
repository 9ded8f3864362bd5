"""The runs of the book as tables: what the chapter modules read instead of the store's internals (numbers only;
what the chapters say about a set of runs is in :mod:`attnrank.sections.section`).

* :func:`table` trains where missing and returns the runs of a list of configs (one row per
  run, ``initial_<m>``/``final_<m>`` columns; ``long=True``: one row per run x measure x
  ``when``, :func:`long_form`);
* :func:`main_runs` and :func:`temperature_grid`: the book's shared sweep, and its
  temperature grid at the standard head dimension with off-grid temperatures added;
* the tables of a set of runs (:func:`attnrank.runs.store.load_table` reads one stored table over
  them): :func:`rank_curves`, :func:`layer_ranks`, :func:`layer_head_means`, :func:`head_changes`,
  :func:`loss_curves`, :func:`means_at`.

A run itself is :class:`attnrank.runs.store.Run` (:func:`attnrank.runs.store.run` trains or reads one).
This module is outside the training path, so a change here never re-keys a stored run.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..core.measures import MEASURES
from ..core.profiles import ARCHS
from .experiments import SweepPlan, main_sweep, tau_sweep
from .grid import sweep
from .store import load_table

__all__ = [
    "WHEN",
    "RANK_COLUMN",
    "table",
    "long_form",
    "main_runs",
    "temperature_grid",
    "rank_curves",
    "layer_ranks",
    "layer_head_means",
    "head_changes",
    "loss_curves",
    "means_at",
]

#: The two moments of a run that the summary records, in order.
WHEN = ("initial", "final")
#: Name of the value column of the long tables.
RANK_COLUMN = "value"


def long_form(wide: pd.DataFrame) -> pd.DataFrame:
    """A wide run frame (:func:`attnrank.runs.store.load_runs`) in long form.

    One row per run x rank measure x ``when``: the run's other columns, then ``measure``,
    ``when`` (``"initial"``/``"final"``) and ``value`` (the mean over layers, heads and
    probe sequences at the first or last probe). Rows keep the order of ``wide``, then
    ``when``, then the measures in the order of :data:`attnrank.core.rank.MEASURES`.
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
        configs: resolved :class:`~attnrank.core.profiles.RunConfig` s.
        long: one row per run x measure x ``when`` (:func:`long_form`); ``False``: one row
            per run with ``initial_<m>``/``final_<m>`` columns (:func:`attnrank.runs.store.load_runs`).
        progress: show a progress bar while training.

    A failed (diverged) run is kept with ``status == "failed"``.

    Raises:
        ConfigError: for something that is not a RunConfig, before anything is trained.
    """
    wide = sweep(list(configs), executor="serial", progress=progress)
    return long_form(wide) if long else wide


# --------------------------------------------------------------------------- the shared sweep
def main_runs(plan: SweepPlan) -> pd.DataFrame:
    """The runs of the shared sweep of ``plan`` (:func:`attnrank.runs.experiments.main_sweep`; trained where
    missing), one row per run, with a ``sweep`` column: ``"temperature grid"`` for the runs at the profile's
    standard head dimension, ``"head-dimension grid"`` for the others."""
    wide = table(main_sweep(plan), long=False)
    wide["sweep"] = np.where(wide.head_dim == plan.head_dim, "temperature grid", "head-dimension grid")
    return wide


def temperature_grid(plan: SweepPlan, *, extra=()) -> pd.DataFrame:
    """The runs of the temperature grid of ``plan`` at the profile's standard head dimension, plus ``extra``
    temperatures.

    The grid comes from the shared sweep (:func:`attnrank.runs.experiments.main_sweep`); an ``extra`` value
    off the grid trains its own runs (both architectures, the plan's seeds and corpus). Returns
    the wide run frame sorted by ``arch, tau, seed``, with ``log10_tau``; ``attrs["missing"]`` lists
    the extra values that were off the grid.
    """
    wide = table(main_sweep(plan), long=False)
    missing = [t for t in sorted(set(extra)) if not any(math.isclose(t, g, rel_tol=1e-9) for g in plan.taus)]
    more = table(tau_sweep(plan, taus=missing), long=False) if missing else wide.iloc[:0]
    on_grid = wide[(wide.head_dim == plan.head_dim) & wide.tau.isin(plan.taus)]
    out = pd.concat([on_grid, more]).drop_duplicates("key").sort_values(["arch", "tau", "seed"]).reset_index(drop=True)
    out["log10_tau"] = np.log10(out.tau)
    out.attrs.update(missing=missing)
    return out


# --------------------------------------------------------------------------- tables of a set of runs
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
    (seeds): one row per ``arch, when, step, layer, head`` with ``value``; ``when`` is ``"step <n>"`` at the
    first probe and ``"last step"`` at the last, so that architectures trained for different steps share
    the columns of a figure."""
    t = layer_ranks(runs, measure)
    t = t.assign(when=np.where(t.when == "initial", "step " + t.step.astype(str), "last step"))
    t = t.groupby(["arch", "when", "step", "layer", "head"], as_index=False)[RANK_COLUMN].mean()
    return t.sort_values(["arch", "step", "layer", "head"]).reset_index(drop=True)


def head_changes(heat: pd.DataFrame) -> dict:
    """Largest relative change of one head's rank between the first and the last probe step, per architecture.

    ``heat``: :func:`layer_head_means`. Returns ``{arch: max over (layer, head) of |last - first| / first}``.
    """
    out = {}
    for a in heat.arch.unique():  # each architecture between its own first and last probe step
        d = heat[heat.arch == a]
        wide = d.pivot_table(index=["layer", "head"], columns="step", values="value")
        first, last = d.step.min(), d.step.max()
        out[a] = float(((wide[last] - wide[first]).abs() / wide[first]).max())
    return out


def loss_curves(runs: pd.DataFrame) -> pd.DataFrame:
    """Validation and training loss through training of the runs, stacked: one row per run, ``curve``
    (``"validation loss"``, ``"training loss"``) and ``step``, with ``arch, tau, head_dim, seed, status, value``."""
    ev, tr = load_table(runs, "eval_log"), load_table(runs, "train_log")
    return pd.concat(
        [ev.assign(curve="validation loss", value=ev.val_loss), tr.assign(curve="training loss", value=tr.loss)],
        ignore_index=True,
    )[["curve", "arch", "tau", "head_dim", "seed", "status", "step", "value"]]


def means_at(runs: pd.DataFrame, column: str, settings: dict, *, by: str = "tau", prefix: str = "") -> dict:
    """Mean of ``column`` over the rows at each named setting, per architecture.

    ``settings``: ``{name: value of by}``; returns ``{f"{prefix}{name}_{arch}": mean}`` (NaN where no row
    matches; values are compared with ``numpy.isclose``).
    """
    return {
        f"{prefix}{name}_{a}": float(runs[(runs.arch == a) & np.isclose(runs[by], v)][column].mean())
        for a in ARCHS
        for name, v in settings.items()
    }
