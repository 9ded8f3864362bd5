"""Singular-value spectra and rank measures of the attention of stored runs, for the measure chapter.

:func:`probe_tables` probes stored runs (by key) at several temperatures, trained and at
initialisation, in three precision pipelines (:data:`PIPELINES`), and returns one table:
per-sequence measure values, per-matrix diagnostics (``sigma_1``, ``sigma_min``, the largest gap,
the causal diagonal, distinct argmax columns) and spectrum quantiles. The measures are recomputed
from each pipeline's singular values with :func:`measures_from_singular_values` (the definitions
of :data:`attnrank.rank.MEASURES`). :func:`attnrank.measure.probe` caches the table
(:func:`attnrank.cache.cached`, keyed by this module's code); this module writes no words, so the
measure chapter's sentences are not in that key.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import torch

from . import rank
from .data import token_blocks
from .errors import ConfigError
from .models import set_tau
from .probe import attention_probabilities
from .rank import MEASURES, RANK_MEASURES
from .store import load_runs, read

__all__ = ["PIPELINES", "REFERENCE", "measures_from_singular_values", "probe_ids", "probe_tables"]

#: Precision pipelines: name -> (precision of the probabilities, precision of the SVD).
PIPELINES = {
    "float64 probs, float64 SVD": ("float64", torch.float64),
    "float32 probs, float64 SVD": ("float32", torch.float64),
    "float64 probs, float32 SVD": ("float64", torch.float32),
}
REFERENCE = "float64 probs, float64 SVD"


def measures_from_singular_values(sv: torch.Tensor, measures=RANK_MEASURES) -> dict[str, torch.Tensor]:
    """Rank measures from singular values ``sv [..., n]`` (decreasing), as in :func:`attnrank.rank.rank_measures`.

    Returns ``{measure: float64 [...]}``.

    Raises:
        ConfigError: for an unknown measure or the entropy (it needs the matrix, not its spectrum).
    """
    measures = rank.check_measures(measures)
    sv = sv.double()
    out = {}
    for name in measures:
        spec = MEASURES[name]
        if spec.kind == "numerical":
            out[name] = rank._count_above(sv, spec.atol, spec.rtol).double()
        elif spec.kind == "effective":
            out[name] = rank._effective(sv)
        elif spec.kind == "stable":
            out[name] = rank._stable(sv)
        else:
            raise ConfigError("measures", f"{name!r} is not a function of the singular values; use rank.rank_measures")
    return out


def probe_ids(run, probe_size: int) -> torch.Tensor:
    """``probe_size`` validation blocks of ``run`` spread evenly over the validation split, ``[probe_size, max_len]``.

    Raises:
        ConfigError: naming ``probe_size`` when the split has fewer blocks.
    """
    c = run.config
    _, val, _ = token_blocks(c["arch"], c["dataset"], int(run.summary["vocab_size"]), int(c["max_len"]))
    if probe_size > len(val):
        raise ConfigError(
            "probe_size", f"got {probe_size}; the validation split has only {len(val)} blocks of {c['max_len']} tokens"
        )
    return torch.from_numpy(val[np.linspace(0, len(val) - 1, probe_size).round().astype(int)])


@torch.no_grad()
def _probabilities(model, model64, ids, tau):
    set_tau(model, tau)
    set_tau(model64, tau)
    return {"float32": attention_probabilities(model, ids), "float64": attention_probabilities(model64, ids)}


def _quantiles(kind: str, key: tuple, svs: list) -> pd.DataFrame:
    sv = np.concatenate(svs)
    q = np.quantile(sv, [0.1, 0.5, 0.9], axis=0)
    arch, state, tau, pipe = key
    return pd.DataFrame(
        {
            "table": kind,
            "arch": arch,
            "state": state,
            "tau": tau,
            "pipeline": pipe,
            "k": np.arange(1, sv.shape[1] + 1),
            "low": q[0],
            "median": q[1],
            "high": q[2],
        }
    )


def probe_tables(keys, probe_size: int, taus) -> pd.DataFrame:
    """Probe the stored runs ``keys`` (trained at ``tau = 1``) at every temperature of ``taus``
    (trained models) and at ``tau = 1`` (initial models), in the three :data:`PIPELINES`.

    Returns one table with a column ``table``: ``values`` (``arch``, ``seed``, ``state``,
    ``tau``, ``pipeline``, ``measure``, ``sequence``, ``value``: the mean over layers and heads
    per probe sequence), ``matrices`` (reference pipeline, one row per matrix: ``sigma_1``,
    ``sigma_min``, ``max_gap``, ``min_diag``, ``log10_det`` (GPT-2), ``distinct_argmax``) and
    ``spectra`` (quantiles 10/50/90% of ``sigma_k`` over all matrices, at ``tau`` = 1 and at the
    ends of the grid).
    """

    runs = load_runs(keys=set(keys))
    runs = runs.set_index("key").loc[list(keys)].reset_index()
    keep = {1.0, min(taus), max(taus)}
    rows, spectra = [], {}
    for r in runs.itertuples():
        run = read(r.path)
        ids = probe_ids(run, probe_size)
        for state, model in (("initialisation", run.initial_model()), ("trained", run.load_model())):
            model64 = copy.deepcopy(model).double().eval()
            for tau in taus if state == "trained" else [1.0]:
                probs = _probabilities(model, model64, ids, tau)
                p64 = probs["float64"]
                diag = p64.diagonal(dim1=-2, dim2=-1)
                argmax_cols = torch.zeros_like(p64).scatter_(-1, p64.argmax(-1, keepdim=True), 1.0).amax(-2).sum(-1)
                for pipe, (pdt, sdt) in PIPELINES.items():
                    sv = rank.singular_values(probs[pdt], sdt).double()  # [L, B, H, n]
                    for name, v in measures_from_singular_values(sv).items():
                        per_seq = v.mean(dim=(0, 2)).numpy()  # mean over layers and heads
                        rows.append(
                            pd.DataFrame(
                                {
                                    "table": "values",
                                    "arch": r.arch,
                                    "seed": r.seed,
                                    "state": state,
                                    "tau": tau,
                                    "pipeline": pipe,
                                    "measure": name,
                                    "sequence": np.arange(len(per_seq)),
                                    "value": per_seq,
                                }
                            )
                        )
                    if tau in keep:
                        spectra.setdefault((r.arch, state, tau, pipe), []).append(sv.reshape(-1, sv.shape[-1]).numpy())
                    if pipe == REFERENCE:
                        rows.append(
                            pd.DataFrame(
                                {
                                    "table": "matrices",
                                    "arch": r.arch,
                                    "seed": r.seed,
                                    "state": state,
                                    "tau": tau,
                                    "sigma_1": sv[..., 0].reshape(-1).numpy(),
                                    "sigma_min": sv[..., -1].reshape(-1).numpy(),
                                    "max_gap": (sv[..., :-1] / sv[..., 1:]).amax(-1).reshape(-1).numpy(),
                                    "min_diag": diag.amin(-1).reshape(-1).numpy(),
                                    "log10_det": torch.log10(diag).sum(-1).reshape(-1).numpy()
                                    if r.arch == "gpt2"
                                    else np.nan,
                                    "distinct_argmax": argmax_cols.reshape(-1).numpy(),
                                }
                            )
                        )
    rows += [_quantiles("spectra", key, svs) for key, svs in spectra.items()]
    return pd.concat(rows, ignore_index=True)
