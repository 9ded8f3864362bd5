"""Singular-value spectra and rank measures of the attention of stored runs, for the measure chapter.

:func:`probe_tables` probes stored runs (by key) at several temperatures, trained and at
initialisation, in three precision pipelines (:data:`PIPELINES`), and returns one table:
per-sequence measure values, per-matrix diagnostics (``sigma_1``, ``sigma_min``, the largest gap,
the causal diagonal, distinct argmax columns) and spectrum quantiles. The measures are recomputed
from each pipeline's singular values with :func:`measures_from_singular_values` (the definitions
of :data:`attnrank.core.rank.MEASURES`). :func:`attnrank.sections.measure.probe` caches the table
(:func:`attnrank.runs.cache.cached`, keyed by this module's code); this module writes no words, so the
measure chapter's sentences are not in that key.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import torch

from ..core import rank
from ..core.architectures import architecture
from ..core.data import token_blocks
from ..core.errors import ConfigError
from ..core.measures import MEASURES, RANK_MEASURES
from ..core.models import set_tau
from ..core.probe import attention_probabilities
from ..runs.store import load_runs, read

__all__ = [
    "PIPELINES",
    "REFERENCE",
    "EPS32",
    "EPS64",
    "EXAMPLE_TAUS",
    "attention_examples",
    "measures_from_singular_values",
    "probe_ids",
    "probe_tables",
]

#: Precision pipelines: name -> (precision of the probabilities, precision of the SVD).
PIPELINES = {
    "float64 probs, float64 SVD": ("float64", torch.float64),
    "float32 probs, float64 SVD": ("float32", torch.float64),
    "float64 probs, float32 SVD": ("float64", torch.float32),
}
REFERENCE = "float64 probs, float64 SVD"
#: Machine epsilon of float32 and float64 (the round-off of probabilities and of an SVD).
EPS32, EPS64 = float(torch.finfo(torch.float32).eps), float(torch.finfo(torch.float64).eps)


def measures_from_singular_values(sv: torch.Tensor, measures=RANK_MEASURES) -> dict[str, torch.Tensor]:
    """Rank measures from singular values ``sv [..., n]`` (decreasing), as in :func:`attnrank.core.rank.rank_measures`.

    Returns ``{measure: float64 [...]}``.

    Raises:
        ConfigError: for an unknown measure or the entropy (it needs the matrix, not its spectrum).
    """
    measures = rank.check_measures(measures)
    sv = sv.double()
    return {name: rank.spectrum_measure(sv, MEASURES[name]) for name in measures}


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
                                    if architecture(r.arch).causal
                                    else np.nan,
                                    "distinct_argmax": argmax_cols.reshape(-1).numpy(),
                                }
                            )
                        )
    rows += [_quantiles("spectra", key, svs) for key, svs in spectra.items()]
    return pd.concat(rows, ignore_index=True)


#: The temperature ratios of the attention examples: the study's cold setting, the stock one, a hot one.
EXAMPLE_TAUS = (1e-3, 1.0, 1e3)


@torch.no_grad()
def attention_examples(run, *, taus=EXAMPLE_TAUS, tokens: int = 10, layer: int = 0, head: int = 0):
    """Real attention patterns of one stored run, for the figure that shows what a rank is measured on.

    The first ``tokens`` tokens of the run's first probe sequence go through the model the run started
    from and the trained one, each evaluated at every temperature ratio of ``taus`` (weights fixed), and
    the attention probabilities of ``layer`` and ``head`` are read (float64 models; a causal prefix is
    exactly the top-left block of the full sequence's matrix).

    Returns ``(matrices, spectra, labels)``: ``matrices`` has one row per ``state`` (``initialisation``,
    ``trained``), ``tau``, query ``i`` and key ``j`` with ``value``; ``spectra`` one row per ``state``,
    ``tau`` and index ``k`` with the singular value ``sigma``; ``labels`` the token strings.

    Raises:
        ConfigError: naming ``tokens``, ``layer`` or ``head`` outside the run's sizes.
    """
    c = run.config
    if not 2 <= tokens <= int(c["max_len"]):
        raise ConfigError("tokens", f"got {tokens}; expected 2 to {c['max_len']} (the run's sequence length)")
    if not 0 <= layer < int(c["num_layers"]) or not 0 <= head < int(c["num_heads"]):
        raise ConfigError("layer", f"got layer {layer}, head {head}; the run has {c['num_layers']} x {c['num_heads']}")
    ids = run.probe_batch()[:1, :tokens]
    tokenizer = token_blocks(c["arch"], c["dataset"], int(run.summary["vocab_size"]), int(c["max_len"]))[2]
    labels = [tokenizer.decode([int(t)]).strip() or "␣" for t in ids[0]]
    mats, svs = [], []
    for state, model in (("initialisation", run.initial_model()), ("trained", run.load_model())):
        model = model.double().eval()
        for tau in taus:
            set_tau(model, tau)
            A = attention_probabilities(model, ids)[layer, 0, head]  # [n, n]
            n = A.shape[-1]
            i, j = np.indices((n, n))
            mats.append(
                pd.DataFrame({"state": state, "tau": tau, "i": i.ravel(), "j": j.ravel(), "value": A.numpy().ravel()})
            )
            sv = rank.singular_values(A).numpy()
            svs.append(pd.DataFrame({"state": state, "tau": tau, "k": np.arange(1, n + 1), "sigma": sv}))
    return pd.concat(mats, ignore_index=True), pd.concat(svs, ignore_index=True), labels
