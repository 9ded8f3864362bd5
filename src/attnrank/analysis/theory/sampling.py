"""The study's theorem and P1': random logits, expected hardmax rank, Monte Carlo of rank measures."""

from __future__ import annotations

import math

import torch

from ...core.errors import ConfigError, check_positive_int
from ...core.rank import check_measures, rank_measures
from ..stats import Estimate, mean_ci
from ._common import softmax_attention
from .hardmax import hardmax_rank


def expected_distinct(n: int) -> float:
    """``n (1 - (1 - 1/n)^n)``: expected number of distinct values in ``n`` uniform draws from ``n``.

    It is the expected hardmax rank when the ``n`` argmaxes are independent and uniform
    (i.i.d. logits), and it is below the study's bound ``(1 - 1/e) n + 1`` because
    ``(1 - 1/n)^n >= (1 - 1/n)/e``. For ``n = 2``: 1.5.
    """
    n = check_positive_int("n", n)
    return n * (1.0 - (1.0 - 1.0 / n) ** n)


def study_bound(n: int) -> float:
    """The study's bound ``(1 - 1/e) n + 1`` on the expected hardmax rank."""
    n = check_positive_int("n", n)
    return (1.0 - math.exp(-1.0)) * n + 1.0


def sample_logits(
    n: int,
    head_dim: int | None,
    samples: int,
    *,
    generator: torch.Generator | None = None,
    explicit_inputs: bool = False,
    d_model: int | None = None,
) -> torch.Tensor:
    """Random logits ``S = (X W_Q)(X W_K)^T / sqrt(d_h)``, float64 ``[samples, n, n]``.

    The study's assumptions: orthonormal inputs ``X`` (``n x d_model``, orthonormal rows)
    and independent standard Gaussian ``W_Q, W_K`` (``d_model x d_h``). By rotation
    invariance ``Q = X W_Q`` then has i.i.d. ``N(0, 1)`` entries, independent of ``K``, so by
    default ``Q, K`` are drawn directly; ``explicit_inputs=True`` builds ``X`` from a QR
    factorisation instead (same distribution, slower). ``head_dim=None`` gives the
    i.i.d. limit ``G`` with ``G_ij ~ N(0, 1)`` (the ``d_h -> infinity`` limit, P1'). The
    logits carry no temperature (package convention): pass ``tau`` to the function that
    applies the softmax.

    Raises:
        ConfigError: for non-positive sizes or ``d_model < n``.
    """
    n = check_positive_int("n", n)
    samples = check_positive_int("samples", samples)
    kw = dict(dtype=torch.float64, generator=generator)
    if head_dim is None:
        return torch.randn(samples, n, n, **kw)
    head_dim = check_positive_int("head_dim", head_dim)
    if explicit_inputs:
        d_model = n if d_model is None else check_positive_int("d_model", d_model)
        if d_model < n:
            raise ConfigError("d_model", f"got {d_model}; orthonormal inputs need d_model >= n = {n}")
        X = torch.linalg.qr(torch.randn(samples, d_model, d_model, **kw)).Q[:, :n, :]
        Q = X @ torch.randn(samples, d_model, head_dim, **kw)
        K = X @ torch.randn(samples, d_model, head_dim, **kw)
    else:
        Q = torch.randn(samples, n, head_dim, **kw)
        K = torch.randn(samples, n, head_dim, **kw)
    return Q @ K.transpose(-1, -2) / math.sqrt(head_dim)


def _chunks(samples: int, n: int, budget: int = 2**22):
    per = max(1, budget // (n * n))
    done = 0
    while done < samples:
        k = min(per, samples - done)
        yield k
        done += k


def monte_carlo_hardmax_rank(
    n: int,
    head_dim: int | None,
    samples: int,
    *,
    seed: int = 0,
    causal: bool = False,
    confidence: float = 0.95,
    explicit_inputs: bool = False,
) -> tuple[Estimate, torch.Tensor, int]:
    """Monte Carlo estimate of ``E[r_H]`` under the study's assumptions (:func:`sample_logits`).

    Args:
        n: sequence length.
        head_dim: ``d_h``, or ``None`` for i.i.d. Gaussian logits (the ``d_h -> inf`` limit,
            whose expectation is :func:`expected_distinct`).
        samples: number of independent ``(W_Q, W_K)`` draws, at least 2.
        seed: seed of the ``torch.Generator``.
        causal, explicit_inputs: see :func:`~attnrank.analysis.theory.hardmax_rank`, :func:`sample_logits`.
        confidence: level of the Student-t interval (:func:`attnrank.analysis.stats.mean_ci`).

    Returns:
        ``(estimate, ranks, ties)``: the mean rank with its interval
        (:class:`attnrank.analysis.stats.Estimate`, ``n`` = samples), the int64 ranks ``[samples]`` and
        the number of rows with a tied maximum (0 almost surely for ``d_h >= 2``).

    Raises:
        ConfigError: for ``samples < 2`` or bad sizes.
    """
    samples = check_positive_int("samples", samples, low=2)
    g = torch.Generator().manual_seed(int(seed))
    ranks, ties = [], 0
    for k in _chunks(samples, n):
        hr = hardmax_rank(sample_logits(n, head_dim, k, generator=g, explicit_inputs=explicit_inputs), causal)
        ranks.append(hr.rank)
        ties += int(hr.ties.sum())
    ranks = torch.cat(ranks)
    return mean_ci(ranks.to(torch.float64).numpy(), confidence=confidence), ranks, ties


def monte_carlo_rank(
    n: int,
    head_dim: int | None,
    samples: int,
    *,
    tau: float = 1.0,
    measures=("rank_rtol_1e-2",),
    seed: int = 0,
    causal: bool = False,
    confidence: float = 0.95,
) -> dict[str, tuple[Estimate, torch.Tensor]]:
    """Monte Carlo of rank measures of ``softmax(S / tau)`` for random logits ``S``.

    ``S`` is drawn by :func:`sample_logits` (``head_dim=None``: the i.i.d. limit), divided by
    ``tau`` once (:func:`~attnrank.analysis.theory.softmax_attention`) and measured with
    :func:`attnrank.core.rank.rank_measures` in float64.

    Returns:
        ``{measure: (estimate, values [samples])}`` with the mean of each measure and its
        Student-t interval (:func:`attnrank.analysis.stats.mean_ci`).

    Raises:
        ConfigError: for an unknown measure, ``samples < 2``, bad sizes or ``tau <= 0``.
    """
    measures = check_measures(measures)
    samples = check_positive_int("samples", samples, low=2)
    g = torch.Generator().manual_seed(int(seed))
    vals: dict[str, list] = {m: [] for m in measures}
    for k in _chunks(samples, n):
        A = softmax_attention(sample_logits(n, head_dim, k, generator=g), tau, causal)
        for m, v in rank_measures(A, measures=measures).items():
            vals[m].append(v)
    return {m: (mean_ci(torch.cat(v).numpy(), confidence=confidence), torch.cat(v)) for m, v in vals.items()}
