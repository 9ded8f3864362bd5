"""The study's protocol replayed on our probe records, and the rank at step k against the final rank.

The study averaged its rank (singular values above the absolute threshold 1e-8) over 4
training and 4 test examples of one trained model per temperature. Every run of ours records,
at every probe step, the value of each rank measure for each of its held-out probe sequences
(split ``"val"``) and of a fixed set of training blocks (split ``"train"``):
:attr:`attnrank.runs.store.Run.sequences`. From these records:

* :func:`study_draws` replays the study's statistic many times: for each random draw, one run
  per temperature and 4 + 4 sequences, the mean rank at the stock temperature minus the mean
  rank at the cold one, at every probe step;
* :func:`study_reference` is the same statistic with every run and every recorded sequence;
* :func:`within_draws` asks the loss claim's within-temperature rank-loss correlation the same way (each run's
  initial rank over 4 + 4 sequences, against the loss rule's own);
* :func:`flip_rate` is the share of draws whose sign differs from the reference's, with its
  exact binomial interval;
* :func:`rank_by_step` is Spearman's rho over runs of the mean rank at each probe step against
  the final one (the "set early" question);
* :func:`load` gathers the main grid's runs and records (:class:`Records`).

The verdict rules built on these tables are :func:`attnrank.analysis.rules.protocol_rule` and
:func:`attnrank.analysis.rules.set_early_rule`; the chapter's words, tables and figures are in
:mod:`attnrank.sections.protocol` and :mod:`attnrank.plots.protocol`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from ..analysis import stats
from ..analysis.stats import Estimate
from ..core.errors import ConfigError, check_int
from ..core.measures import MEASURES
from ..runs import experiments, store
from ..runs.experiments import STUDY_EXAMPLES, STUDY_MEASURE, STUDY_TAUS
from ..runs.tables import table as runs_table
from .section import steps_text

__all__ = [
    "STUDY_MEASURE",
    "STUDY_TAUS",
    "STUDY_EXAMPLES",
    "study_draws",
    "study_reference",
    "within_draws",
    "flip_rate",
    "rank_by_step",
    "Records",
    "select",
    "load",
    "neighbour",
]


def _need(df: pd.DataFrame, cols, name: str = "sequences") -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ConfigError(name, f"missing columns {missing}; got {list(df.columns)}")


def _run_order(seq: pd.DataFrame) -> np.ndarray:
    """The keys of the runs in ``seq`` in seed order: a draw picks a run by its settings, not by its key, which
    changes with the training code."""
    return seq.sort_values(["seed", "key"]).key.unique()


def _cube(seq: pd.DataFrame, measure: str, split: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(keys [R], steps [S], values [R, S, B])`` of one split, runs in seed order."""
    d = seq[seq.split == split]
    keys, steps, seqs = _run_order(d), np.sort(d.step.unique()), np.sort(d.sequence.unique())
    full = pd.MultiIndex.from_product([keys, steps, seqs], names=["key", "step", "sequence"])
    v = d.set_index(["key", "step", "sequence"])[measure].astype(float).reindex(full)
    return keys, steps, v.to_numpy().reshape(len(keys), len(steps), len(seqs))


def _arms(seq: pd.DataFrame, arch: str, stock: float, cold: float, measure: str):
    """Per temperature: ``{tau: (train values [R, S, Bt], test values [R, S, Bv])}`` and the common steps."""
    out, steps = {}, None
    for tau in (stock, cold):
        d = seq[(seq.arch == arch) & np.isclose(seq.tau.astype(float), tau, rtol=1e-9)]
        if d.empty:
            raise ConfigError("sequences", f"no {arch} run at tau = {tau:g}")
        _, s_tr, tr = _cube(d, measure, "train")
        _, s_va, va = _cube(d, measure, "val")
        s = np.intersect1d(s_tr, s_va)
        tr, va = tr[:, np.isin(s_tr, s)], va[:, np.isin(s_va, s)]
        steps = s if steps is None else np.intersect1d(steps, s)
        out[tau] = (s, tr, va)
    for tau, (s, tr, va) in out.items():
        keep = np.isin(s, steps)
        out[tau] = (tr[:, keep], va[:, keep])
    return out, steps


def _check(seq, measure, examples):
    _need(seq, ["key", "arch", "tau", "seed", "step", "split", "sequence", measure])
    if measure not in MEASURES:
        raise ConfigError("measure", f"got {measure!r}; allowed values: {', '.join(MEASURES)}")
    n_train, n_test = (check_int("examples", e, low=1) for e in examples)
    return n_train, n_test


def study_draws(
    sequences: pd.DataFrame,
    *,
    measure: str = STUDY_MEASURE,
    stock: float = STUDY_TAUS[0],
    cold: float = STUDY_TAUS[1],
    examples=STUDY_EXAMPLES,
    n_draws: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """The study's statistic over ``n_draws`` random draws of one run per temperature and its examples.

    Args:
        sequences: rows of :func:`attnrank.runs.store.load_table` (``"sequences"``) with the columns
            ``key, arch, tau, step, split, sequence`` and ``measure``; runs at ``stock`` and
            ``cold`` (others are ignored), several seeds each.
        measure: the rank measure (default the study's, ``rank_atol_1e-8``).
        examples: ``(training, test)`` sequences per draw, drawn without replacement from the
            ``"train"`` and ``"val"`` records; the same sequences for both temperatures (the
            probe sets are the same in every run of an architecture).
        n_draws, seed: draws per architecture and the generator's seed.

    Each draw picks one run at each temperature (uniformly, independently) and the examples, and
    computes at every probe step ``mean over the examples at stock - the same at cold``.

    Returns:
        one row per architecture x draw x step: ``arch, draw, step, stat, key_stock, key_cold``.

    Raises:
        ConfigError: naming ``sequences`` (missing columns, no run at a temperature), ``measure``
        or ``examples`` (more than recorded).
    """
    n_train, n_test = _check(sequences, measure, examples)
    n_draws = check_int("n_draws", n_draws, low=1)
    rng = np.random.default_rng(seed)
    frames = []
    for arch in sorted(sequences.arch.unique()):
        arms, steps = _arms(sequences, arch, stock, cold, measure)
        keys = {
            t: _run_order(sequences[(sequences.arch == arch) & np.isclose(sequences.tau.astype(float), t, rtol=1e-9)])
            for t in (stock, cold)
        }
        bt, bv = arms[stock][0].shape[2], arms[stock][1].shape[2]
        if n_train > bt or n_test > bv:
            raise ConfigError(
                "examples", f"got {tuple(examples)}; {arch} runs record {bt} training and {bv} test sequences"
            )
        runs = {t: rng.integers(len(keys[t]), size=n_draws) for t in (stock, cold)}
        tr = np.argsort(rng.random((n_draws, bt)), axis=1)[:, :n_train]  # without replacement
        va = np.argsort(rng.random((n_draws, bv)), axis=1)[:, :n_test]
        means = {}
        for t in (stock, cold):
            train_v, test_v = arms[t]
            r = runs[t]
            a = np.take_along_axis(train_v[r], tr[:, None, :], axis=2).sum(2)  # [D, S]
            b = np.take_along_axis(test_v[r], va[:, None, :], axis=2).sum(2)
            means[t] = (a + b) / (n_train + n_test)
        stat = means[stock] - means[cold]
        frames.append(
            pd.DataFrame(
                {
                    "arch": arch,
                    "draw": np.repeat(np.arange(n_draws), len(steps)),
                    "step": np.tile(steps, n_draws),
                    "stat": stat.reshape(-1),
                    "key_stock": np.repeat(keys[stock][runs[stock]], len(steps)),
                    "key_cold": np.repeat(keys[cold][runs[cold]], len(steps)),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def study_reference(
    sequences: pd.DataFrame, *, measure: str = STUDY_MEASURE, stock: float = STUDY_TAUS[0], cold: float = STUDY_TAUS[1]
) -> pd.DataFrame:
    """The study's statistic with every run and every recorded sequence (training and test alike).

    Per architecture and step: mean over runs of each run's mean over all its recorded sequences,
    at ``stock`` minus the same at ``cold``. Returns ``arch, step, stat``.

    Raises:
        ConfigError: as :func:`study_draws`.
    """
    _check(sequences, measure, (1, 1))
    rows = []
    for arch in sorted(sequences.arch.unique()):
        arms, steps = _arms(sequences, arch, stock, cold, measure)
        m = {t: np.concatenate(arms[t], axis=2).mean(axis=2).mean(axis=0) for t in (stock, cold)}  # [S]
        rows.append(pd.DataFrame({"arch": arch, "step": steps, "stat": m[stock] - m[cold]}))
    return pd.concat(rows, ignore_index=True)


def within_draws(
    sequences: pd.DataFrame,
    runs: pd.DataFrame,
    measure: str,
    *,
    outcome: str = "final_val_loss",
    examples=STUDY_EXAMPLES,
    n_draws: int = 1000,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The loss rule's statistic, the rank correlation of the initial rank and ``outcome`` within each temperature
    (:func:`attnrank.analysis.rules.loss_rule`), with each run's initial rank taken as the study took it, over
    4 + 4 examples, ``n_draws`` times: ``(draws, reference)`` for :func:`flip_rate`.

    Args:
        sequences: rows of :func:`attnrank.runs.store.load_table` (``"sequences"``) of ``runs``, as for
            :func:`study_draws`; the first probe step (the initial rank) is read.
        runs: the runs the loss rule reads (``key, arch, tau, initial_<measure>, outcome``).
        examples: ``(training, test)`` sequences per draw, the same for every run of an architecture.

    Returns ``draws`` (``arch, draw, step, stat``: the within-temperature rho of a draw, :func:`attnrank.analysis.
    stats.within_rho`) and ``reference`` (``arch, step, stat, estimate``: the loss rule's own, on ``initial_<measure>``
    (the probe's test sequences), with its interval from :func:`attnrank.analysis.stats.spearman_within`); an
    architecture whose initial rank does not vary within any temperature has a NaN reference.

    Raises:
        ConfigError: as :func:`study_draws`, or naming ``runs`` for missing columns.
    """
    n_train, n_test = _check(sequences, measure, examples)
    n_draws = check_int("n_draws", n_draws, low=1)
    _need(runs, ["key", "arch", "tau", f"initial_{measure}", outcome], "runs")
    rng = np.random.default_rng(seed)
    first = sequences[sequences.step == sequences.step.min()]
    draws, reference = [], []
    for arch, r in runs.groupby("arch", sort=True):
        r = r.sort_values(["tau", "key"])
        d = first[first.key.isin(r.key)]
        train = d[d.split == "train"].pivot(index="key", columns="sequence", values=measure).loc[r.key].to_numpy()
        test = d[d.split == "val"].pivot(index="key", columns="sequence", values=measure).loc[r.key].to_numpy()
        if n_train > train.shape[1] or n_test > test.shape[1]:
            raise ConfigError(
                "examples",
                f"got {tuple(examples)}; {arch} runs record {train.shape[1]} training and "
                f"{test.shape[1]} test sequences",
            )
        tr = np.argsort(rng.random((n_draws, train.shape[1])), axis=1)[:, :n_train]  # without replacement
        va = np.argsort(rng.random((n_draws, test.shape[1])), axis=1)[:, :n_test]
        x = (train[:, tr].sum(2) + test[:, va].sum(2)).T / (n_train + n_test)  # [draws, runs]
        y, tau = r[outcome].to_numpy(float), r.tau.to_numpy(float)
        draws.append(
            pd.DataFrame({"arch": arch, "draw": np.arange(n_draws), "step": 0, "stat": stats.within_rho(x, y, tau)})
        )
        ref = stats.spearman_within(r[f"initial_{measure}"].to_numpy(float), y, tau)
        reference.append(pd.DataFrame({"arch": [arch], "step": [0], "stat": [ref.value], "estimate": [ref]}))
    return pd.concat(draws, ignore_index=True), pd.concat(reference, ignore_index=True)


def flip_rate(draws: pd.DataFrame, reference: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """Share of draws whose conclusion (the sign of the statistic) differs from the reference's.

    A draw with a statistic of exactly 0 (no difference) disagrees with a reference that has a
    sign, and agrees with a reference of 0.

    Returns:
        one row per architecture and step: ``arch, step, reference, flips, draws`` and
        ``estimate`` (an :class:`~attnrank.analysis.stats.Estimate`: the share, its exact Clopper-Pearson
        interval over the draws (Monte Carlo error of the share; the runs and sequences drawn
        from are fixed), ``n`` = draws).
    """
    _need(draws, ["arch", "step", "stat"], "draws")
    _need(reference, ["arch", "step", "stat"], "reference")
    ref = reference.set_index(["arch", "step"]).stat
    rows = []
    for (arch, step), d in draws.groupby(["arch", "step"], sort=True):
        r = float(ref.loc[(arch, step)])
        flips = int((np.sign(d.stat.to_numpy(float)) != np.sign(r)).sum())
        n = len(d)
        ci = sps.binomtest(flips, n).proportion_ci(confidence, method="exact")
        est = Estimate(flips / n, ci.low, ci.high, n, f"share of {n} draws, Clopper-Pearson interval", confidence)
        rows.append({"arch": arch, "step": step, "reference": r, "flips": flips, "draws": n, "estimate": est})
    return pd.DataFrame(rows)


def rank_by_step(
    summary: pd.DataFrame, measure: str, *, n_resamples: int = stats.N_RESAMPLES // 10, seed: int = 0
) -> pd.DataFrame:
    """Spearman's rho over runs between the mean rank at each probe step and at the last step.

    Args:
        summary: :func:`attnrank.runs.store.load_table` rows of ``rank_summary`` (``key, arch, step,
            measure, mean``), complete runs only; every run probed at the same steps.
        measure: the rank measure.
        n_resamples, seed: of the percentile bootstrap over runs (:func:`attnrank.analysis.stats.spearman`).

    Returns:
        one row per architecture and step before the last: ``arch, step, final_step, n`` and
        ``estimate`` (the :class:`~attnrank.analysis.stats.Estimate`), ``rho, low, high``.

    Raises:
        ConfigError: naming ``summary`` for missing columns, ``measure`` for one it lacks.
    """
    _need(summary, ["key", "arch", "step", "measure", "mean"], "summary")
    if measure not in set(summary.measure):
        raise ConfigError("measure", f"got {measure!r}; the summary has {sorted(set(summary.measure))}")
    rows = []
    for arch, d in summary[summary.measure == measure].groupby("arch", sort=True):
        wide = d.pivot_table(index="key", columns="step", values="mean")
        final = wide.columns.max()
        for step in wide.columns[wide.columns < final]:
            e = stats.spearman(
                wide[step].to_numpy(float), wide[final].to_numpy(float), n_resamples=n_resamples, seed=seed
            )
            rows.append(
                {
                    "arch": arch,
                    "step": int(step),
                    "final_step": int(final),
                    "n": e.n,
                    "estimate": e,
                    "rho": e.value,
                    "low": e.low,
                    "high": e.high,
                }
            )
    return pd.DataFrame(rows)


@dataclass
class Records:
    """The protocol chapter's runs and probe records (:func:`load`).

    ``ok``: the complete runs of the main grid (one row per run); ``pair``: those at the
    profile's standard head dimension ``head_dim`` and the study's two temperatures;
    ``seq`` and ``summary``: their ``sequences`` and ``rank_summary`` tables;
    ``final_steps``: the last probe step of each architecture (``{arch: step}``; at ``quick`` BERT
    trains half GPT-2's steps); ``near``: the trained temperature next to the stock one (:func:`neighbour`) and
    ``near_seq``: the ``sequences`` of the runs at the stock temperature and at ``near`` (the comparison the
    protocol rule decides on since its version 2).
    """

    ok: pd.DataFrame
    pair: pd.DataFrame
    head_dim: int
    seq: pd.DataFrame
    summary: pd.DataFrame
    final_steps: dict
    near: float = float("nan")
    near_seq: pd.DataFrame | None = None

    def at_final_step(self, table: pd.DataFrame) -> pd.DataFrame:
        """The rows of ``table`` (columns ``arch, step``) at their architecture's last probe step."""
        return table[table.step.to_numpy() == table.arch.map(self.final_steps).to_numpy()]

    def steps_text(self) -> str:
        """The last probe steps in words (:func:`attnrank.sections.section.steps_text`): ``"1000 steps"`` when every
        architecture trains as long, else ``"1000 (GPT-2) and 500 (BERT) steps"`` (longest first)."""
        final = pd.DataFrame({"arch": list(self.final_steps), "step": list(self.final_steps.values())})
        return f"{steps_text(final, 'step') if len(final) else 0} steps"


def select(runs: pd.DataFrame, head_dim: int, *, stock: float = STUDY_TAUS[0], cold: float = STUDY_TAUS[1]):
    """``(ok, pair)``: the complete runs of ``runs``, and those with ``head_dim`` at ``stock`` or ``cold``.

    Raises:
        ConfigError: naming ``runs`` for missing columns ``status``, ``head_dim``, ``tau``.
    """
    _need(runs, ["status", "head_dim", "tau"], "runs")
    ok = runs[runs.status == "complete"]
    return ok, ok[(ok.head_dim == head_dim) & (np.isclose(ok.tau, stock) | np.isclose(ok.tau, cold))]


def neighbour(taus, stock: float = STUDY_TAUS[0]) -> float:
    """The trained temperature next to ``stock``: of ``taus`` (a grid's temperature ratios) the one nearest to it on a
    log scale, the hotter of two equally near. Four examples can mislead on a small comparison, not on one that
    spans three decades, so the protocol rule (version 2) asks its question here.

    Raises:
        ConfigError: naming ``taus`` when it holds no temperature besides ``stock``.
    """
    others = sorted({float(t) for t in taus if not np.isclose(float(t), stock, rtol=1e-9)})
    if not others:
        raise ConfigError("taus", f"got {list(taus)!r}; expected a temperature besides tau = {stock:g}")
    return min(others, key=lambda t: (abs(np.log(t / stock)), -t))


def load(profile: str, *, seeds=None, dataset=None) -> Records:
    """The :class:`Records` of the main grid (:func:`attnrank.runs.experiments.main_sweep`, trained where missing).

    Raises:
        ConfigError: naming ``profile``, ``seeds`` or ``dataset`` for a value the sweep does not allow.
    """
    plan = experiments.sweep_plan(profile, seeds=seeds, dataset=dataset)
    runs = runs_table(experiments.main_sweep(plan), long=False)
    head_dim = plan.head_dim
    ok, pair = select(runs, head_dim)
    seq = store.load_table(pair, "sequences")
    final_steps = {a: int(v) for a, v in seq.groupby("arch").step.max().items()}
    near = neighbour(plan.taus)
    _, beside = select(runs, head_dim, cold=near)
    stock_seq = seq[np.isclose(seq.tau.astype(float), STUDY_TAUS[0], rtol=1e-9)]
    near_seq = pd.concat([stock_seq, store.load_table(beside[~beside.key.isin(pair.key)], "sequences")])
    summary = store.load_table(pair, "rank_summary")
    return Records(ok, pair, head_dim, seq, summary, final_steps, near, near_seq.reset_index(drop=True))
