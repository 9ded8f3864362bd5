"""Rank measures of attention matrices, batched over leading dimensions.

Every exact rank of a softmax attention matrix is full (``theory`` chapter, P0), so each
"rank" here is a *numerical* rank whose tolerance decides the answer. The measures:

* :func:`numerical_rank` with an absolute tolerance (``atol``; the study's rule is
  ``atol = 1e-8`` in float64, :func:`study_rank`) or a relative one (``rtol`` times the
  largest singular value; our defaults are 1e-2 and 1e-4);
* :func:`effective_rank`, the exponential of the Shannon entropy of the normalised
  singular values (Roy & Vetterli, 2007, *The effective rank: a measure of effective
  dimensionality*, EUSIPCO);
* :func:`stable_rank`, ``||A||_F^2 / ||A||_2^2``;
* :func:`attention_entropy`, the mean row entropy in nats (not a rank, but the quantity
  temperature acts on most directly).

:func:`rank_measures` computes any set of them from *one* SVD per matrix.

Rows of an attention matrix sum to one, so ``sigma_1 >= 1``. An absolute threshold of
1e-8 lies below float32 resolution relative to that (about 1.2e-7), hence every SVD
here runs in float64 unless asked otherwise.

A causal (GPT-2) attention matrix is lower-triangular with a positive diagonal, hence
full rank in exact arithmetic; its numerical rank only says how small the diagonal
entries get. For padded (BERT) batches, pass the 0/1 ``attention_mask`` so that every
matrix is cropped to its real tokens before it is measured: HF masks padded key
columns but not padded query rows.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import torch

from .errors import ConfigError
from .measures import DEFAULT_MEASURES, MEASURES, RANK_MEASURES, STUDY_ATOL

__all__ = [
    "STUDY_ATOL",
    "MEASURES",
    "RANK_MEASURES",
    "DEFAULT_MEASURES",
    "singular_values",
    "numerical_rank",
    "study_rank",
    "effective_rank",
    "stable_rank",
    "attention_entropy",
    "spectrum_measure",
    "rank_measures",
    "crop_to_valid",
    "check_measures",
]


def check_measures(measures) -> tuple[str, ...]:
    """Validate measure names; raises :class:`ConfigError` naming ``measures``."""
    measures = (measures,) if isinstance(measures, str) else tuple(measures)
    unknown = [m for m in measures if m not in MEASURES]
    if unknown or not measures:
        raise ConfigError("measures", f"unknown {unknown or measures!r}; allowed values: {', '.join(MEASURES)}")
    return measures


def _check_square(A: torch.Tensor) -> None:
    if not isinstance(A, torch.Tensor):
        raise ConfigError("A", f"expected a torch.Tensor of shape [..., n, n], got {type(A).__name__}")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ConfigError("A", f"expected shape [..., n, n], got {tuple(A.shape)}")


def singular_values(A: torch.Tensor, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Singular values ``[..., n]`` of ``A [..., n, n]`` in decreasing order, computed in ``dtype``.

    On the CPU a large batch is split over ``torch.get_num_threads()`` threads (LAPACK
    handles one matrix at a time and releases the GIL), which is exactly equal to, and
    on two cores about twice as fast as, one batched call.
    """
    _check_square(A)
    A = A.to(dtype)
    workers = torch.get_num_threads()
    if A.device.type != "cpu" or workers < 2 or A.ndim < 3 or A.shape[:-2].numel() < 64:
        return torch.linalg.svdvals(A)
    flat = A.reshape(-1, *A.shape[-2:])
    with ThreadPoolExecutor(workers) as pool:
        parts = list(pool.map(torch.linalg.svdvals, flat.chunk(workers)))
    return torch.cat(parts).reshape(*A.shape[:-1])


def _count_above(sv: torch.Tensor, atol: float | None, rtol: float | None) -> torch.Tensor:
    n = sv.shape[-1]
    s1 = sv[..., :1]
    if atol is None and rtol is None:  # numpy.linalg.matrix_rank's default
        tol = s1 * n * torch.finfo(sv.dtype).eps
    else:
        tol = torch.zeros_like(s1)
        if atol is not None:
            tol = torch.clamp(tol, min=float(atol))
        if rtol is not None:
            tol = torch.maximum(tol, float(rtol) * s1)
    return (sv > tol).sum(-1)


def numerical_rank(
    A: torch.Tensor, atol: float | None = None, rtol: float | None = None, *, dtype: torch.dtype = torch.float64
) -> torch.Tensor:
    """Number of singular values of ``A [..., n, n]`` above a tolerance; int64 ``[...]``.

    The tolerance is ``max(atol, rtol * sigma_1)`` (either may be omitted); with neither,
    it is NumPy's default ``sigma_1 * n * eps``, which reads full rank for almost every
    attention matrix. Use ``atol=STUDY_ATOL`` for the study's rule.

    Raises:
        ConfigError: if ``A`` is not ``[..., n, n]`` or a tolerance is negative.
    """
    for name, tol in (("atol", atol), ("rtol", rtol)):
        if tol is not None and not tol >= 0:
            raise ConfigError(name, f"got {tol!r}; expected a non-negative float")
    return _count_above(singular_values(A, dtype), atol, rtol)


def study_rank(A: torch.Tensor) -> torch.Tensor:
    """The study's rank: singular values above the absolute threshold 1e-8, in float64."""
    return numerical_rank(A, atol=STUDY_ATOL, dtype=torch.float64)


def _effective(sv: torch.Tensor) -> torch.Tensor:
    p = sv / sv.sum(-1, keepdim=True).clamp_min(torch.finfo(sv.dtype).tiny)
    entropy = -(torch.special.xlogy(p, p)).sum(-1)
    return entropy.exp()


def effective_rank(A: torch.Tensor, *, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Effective rank ``exp(H(p))``, ``p_i = sigma_i / sum_j sigma_j`` (Roy & Vetterli 2007); ``[...]``.

    Equals ``n`` for the identity and 1 for any rank-one matrix.
    """
    return _effective(singular_values(A, dtype))


def _stable(sv: torch.Tensor) -> torch.Tensor:
    return (sv**2).sum(-1) / (sv[..., 0] ** 2).clamp_min(torch.finfo(sv.dtype).tiny)


def stable_rank(A: torch.Tensor, *, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Stable rank ``||A||_F^2 / ||A||_2^2``; ``[...]``. Between 1 and ``rank(A)``."""
    return _stable(singular_values(A, dtype))


def attention_entropy(A: torch.Tensor) -> torch.Tensor:
    """Mean row entropy ``-sum_j A_ij log A_ij`` of ``A [..., n, n]`` in nats; ``[...]``.

    Rows that are all zero (fully masked) are left out of the mean.
    """
    _check_square(A)
    A = A.to(torch.float64)
    row_entropy = -(torch.special.xlogy(A, A)).sum(-1)
    valid = (A.sum(-1) > 0).to(A.dtype)
    return (row_entropy * valid).sum(-1) / valid.sum(-1).clamp_min(1)


def spectrum_measure(sv: torch.Tensor, spec) -> torch.Tensor:
    """The value of the rank measure ``spec`` (a :class:`attnrank.core.measures.Measure`) from singular values
    ``sv [..., n]`` (decreasing), computed in ``sv``'s precision; float64 ``[...]``. The one dispatch from a
    measure's kind to its formula: :func:`rank_measures` and :mod:`attnrank.analysis.spectra` both call it.

    Raises:
        ConfigError: naming ``measures`` for a kind that is not a function of the singular values (the attention
            entropy needs the matrix) or that no formula here computes.
    """
    if spec.kind == "numerical":
        return _count_above(sv, spec.atol, spec.rtol).to(torch.float64)
    if spec.kind == "effective":
        return _effective(sv).to(torch.float64)
    if spec.kind == "stable":
        return _stable(sv).to(torch.float64)
    raise ConfigError(
        "measures",
        f"{spec.name!r} (kind {spec.kind!r}) is not a function of the singular values; "
        "spectral kinds: numerical, effective, stable (the attention entropy needs the matrix: rank_measures)",
    )


def _measure_square(A: torch.Tensor, measures: tuple[str, ...], dtype: torch.dtype) -> dict[str, torch.Tensor]:
    specs = [MEASURES[m] for m in measures]
    sv = singular_values(A, dtype) if any(s.kind != "entropy" for s in specs) else None
    return {s.name: attention_entropy(A) if s.kind == "entropy" else spectrum_measure(sv, s) for s in specs}


def crop_to_valid(A: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Crop ``A [..., n, n]`` to the rows and columns where ``valid [n]`` (bool) is true."""
    idx = valid.nonzero().flatten()
    return A.index_select(-2, idx).index_select(-1, idx)


def rank_measures(
    A: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    measures=DEFAULT_MEASURES,
    *,
    batch_dim: int = -4,
    dtype: torch.dtype = torch.float64,
) -> dict[str, torch.Tensor]:
    """Several measures of ``A [..., n, n]`` from one SVD per matrix.

    Args:
        A: attention probabilities, for example ``[layers, batch, heads, n, n]``.
        attention_mask: optional 0/1 ``[batch, n]`` marking real tokens; each matrix is
            cropped to its real tokens before it is measured.
        measures: names from :data:`MEASURES`.
        batch_dim: the dimension of ``A`` that indexes sequences (used with the mask);
            the default ``-4`` fits ``[..., batch, heads, n, n]``.
        dtype: precision of the SVD (float64 by default; the study's absolute rule needs it).

    Returns:
        ``{measure: float64 tensor of shape A.shape[:-2]}``.

    Raises:
        ConfigError: for an unknown measure or a mask of the wrong shape.
    """
    measures = check_measures(measures)
    _check_square(A)
    if attention_mask is None or bool(attention_mask.bool().all()):
        return _measure_square(A, measures, dtype)
    if not -A.ndim <= batch_dim < A.ndim or batch_dim % A.ndim >= A.ndim - 2:
        raise ConfigError(
            "batch_dim", f"got {batch_dim}; expected a leading dimension of A with shape {tuple(A.shape)}"
        )
    batch_dim = batch_dim % A.ndim
    if attention_mask.shape != (A.shape[batch_dim], A.shape[-1]):
        raise ConfigError(
            "attention_mask", f"expected shape {(A.shape[batch_dim], A.shape[-1])}, got {tuple(attention_mask.shape)}"
        )
    mask = attention_mask.bool()
    out = {m: torch.empty(A.shape[:-2], dtype=torch.float64) for m in measures}
    # sequences with the same mask share one batched SVD
    patterns: dict[bytes, list[int]] = {}
    for b in range(mask.shape[0]):
        patterns.setdefault(mask[b].cpu().numpy().tobytes(), []).append(b)
    for rows in patterns.values():
        sel = torch.tensor(rows, device=A.device)
        if not mask[rows[0]].any():  # a sequence without real tokens has no attention matrix
            for m in measures:
                out[m].index_fill_(batch_dim, sel.cpu(), float("nan"))
            continue
        sub = crop_to_valid(A.index_select(batch_dim, sel), mask[rows[0]])
        for m, v in _measure_square(sub, measures, dtype).items():
            out[m].index_copy_(batch_dim, sel.cpu(), v.cpu())
    return out
