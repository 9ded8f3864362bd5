"""P2, the hardmax (zero-temperature) limit: its rank, the gap bound and the threshold ``tau*``."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ...core.errors import ConfigError, check_choice, check_positive_float, check_positive_int
from ._common import _causal_mask, _check_eps, _check_logits


@dataclass(frozen=True)
class HardmaxRank:
    """Result of :func:`hardmax_rank`.

    Attributes:
        rank: int64 ``[...]``, number of distinct argmax columns ``r_H`` (ties broken
            towards the lowest column index, see ``ties``).
        ties: int64 ``[...]``, number of rows whose maximum is attained more than once.
            Where ``ties > 0`` the zero-temperature limit of softmax is *not* the hardmax
            matrix (a tied row tends to a uniform distribution over its tied columns) and
            ``rank`` is only a lower bound on the limit's rank.
        argmax: int64 ``[..., n]``, the argmax column ``a_i`` of each row.
    """

    rank: torch.Tensor
    ties: torch.Tensor
    argmax: torch.Tensor


def hardmax_rank(S: torch.Tensor, causal: bool = False, *, on_tie: str = "flag") -> HardmaxRank:
    """Rank of the hardmax (zero-temperature) limit of ``softmax(S / tau)``.

    The limit ``H`` has ``H_ij = 1[j = a_i]`` with ``a_i = argmax_j S_ij`` (over ``j <= i``
    when ``causal``), so ``H^T H = diag(column counts)`` and ``rank H`` is the number of
    distinct argmax columns (theory chapter, P2).

    Args:
        S: logits ``[..., n, n]`` (float; the temperature does not change the argmax).
        causal: restrict row ``i`` to columns ``j <= i``.
        on_tie: ``"flag"`` (default) counts rows with a tied maximum in ``ties`` and breaks
            the tie towards the lowest index; ``"raise"`` raises :class:`ConfigError`
            naming ``S`` if any row is tied. Ties are exact floating-point equalities.

    Returns:
        :class:`HardmaxRank` with ``rank``, ``ties`` (int64 ``[...]``) and ``argmax``.

    Raises:
        ConfigError: for malformed ``S``, an unknown ``on_tie``, or a tie with ``on_tie="raise"``.
    """
    check_choice("on_tie", on_tie, ("flag", "raise"))
    S = _check_logits(S)
    n = S.shape[-1]
    if causal:
        S = S.masked_fill(~_causal_mask(n, S.device), float("-inf"))
    row_max = S.amax(-1, keepdim=True)
    ties = ((S == row_max).sum(-1) > 1).sum(-1)
    if on_tie == "raise" and bool((ties > 0).any()):
        raise ConfigError("S", f"{int(ties.sum())} row(s) have a tied maximum; the hardmax limit is not one-hot there")
    argmax = (S == row_max).to(torch.int8).argmax(-1)  # first (lowest) maximising column
    present = torch.zeros(S.shape, dtype=torch.bool, device=S.device)
    present.scatter_(-1, argmax.unsqueeze(-1), True)  # [..., n(rows), n(cols)] one-hot
    rank = present.any(-2).sum(-1)
    return HardmaxRank(rank=rank, ties=ties, argmax=argmax)


def top_gap(S: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """Smallest top-1 minus top-2 logit gap over the rows of ``S [..., n, n]``; ``[...]``.

    Rows with a single visible entry (row 0 when ``causal``) are skipped (gap ``+inf``).
    Units: those of ``S`` (logits, before division by ``tau``).
    """
    S = _check_logits(S)
    n = S.shape[-1]
    if n < 2:
        return torch.full(S.shape[:-2], float("inf"), dtype=torch.float64)
    if causal:
        S = S.masked_fill(~_causal_mask(n, S.device), float("-inf"))
    top2 = S.topk(2, dim=-1).values
    gap = top2[..., 0] - top2[..., 1]
    gap = torch.where(torch.isinf(top2[..., 1]), torch.full_like(gap, float("inf")), gap)
    return gap.amin(-1)


def new_column_gap(S: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """Smallest gap between a row's maximum and its best *unused* column; float64 ``[...]``.

    A column is used if it is the argmax of some row (a column of the hardmax matrix ``H``).
    As ``tau`` grows from 0, weight ``~exp(-g/tau)`` on an unused column adds a new direction
    to ``A``, so the measured rank leaves ``r_H`` (upwards) near ``tau ~ g / log(1/eps)``;
    weight on used columns only perturbs existing directions. This gap is at least
    :func:`top_gap`. ``+inf`` when every visible column is used. Units: those of ``S``.
    (A heuristic refinement of P2 found in the theory chapter, not a bound.)
    """
    S = _check_logits(S)
    n = S.shape[-1]
    hr = hardmax_rank(S, causal)
    if causal:
        S = S.masked_fill(~_causal_mask(n, S.device), float("-inf"))
    used = torch.zeros(S.shape, dtype=torch.bool, device=S.device).scatter_(-1, hr.argmax.unsqueeze(-1), True).any(-2)
    top = S.gather(-1, hr.argmax.unsqueeze(-1)).squeeze(-1)
    best_unused = S.masked_fill(used.unsqueeze(-2), float("-inf")).amax(-1)
    return (top - best_unused).amin(-1)


@dataclass(frozen=True)
class GapBound:
    """Result of :func:`hardmax_gap_bound` (all tensors ``[...]`` unless noted).

    Attributes:
        delta: ``[..., n]``, ``delta_i = sum_{j != a_i} exp(-(S_{i a_i} - S_ij) / tau)``.
        Delta: ``(2 sum_i delta_i^2)^{1/2}``, an upper bound on ``||A - H||_2``.
        c_max: largest column count of ``H`` (so ``sigma_1(H) = sqrt(c_max)``).
        rank: the hardmax rank ``r_H``.
        ties: rows with a tied maximum (then ``sufficient`` is false).
        sufficient: bool, ``Delta <= eps`` and ``eps (sqrt(c_max) + eps) < 1 - eps``; when
            true, ``numerical_rank(A, rtol=eps) == r_H`` is guaranteed (Weyl).
    """

    delta: torch.Tensor
    Delta: torch.Tensor
    c_max: torch.Tensor
    rank: torch.Tensor
    ties: torch.Tensor
    sufficient: torch.Tensor


def _gap_terms(S: torch.Tensor, causal: bool):
    n = S.shape[-1]
    hr = hardmax_rank(S, causal)
    Sm = S.masked_fill(~_causal_mask(n, S.device), float("-inf")) if causal else S
    top = Sm.gather(-1, hr.argmax.unsqueeze(-1))  # [..., n, 1]
    gaps = top - Sm  # >= 0, +inf where masked
    gaps = gaps.scatter(-1, hr.argmax.unsqueeze(-1), float("inf"))  # drop j = a_i
    counts = torch.zeros(S.shape[:-1], dtype=torch.float64, device=S.device)
    counts.scatter_add_(-1, hr.argmax, torch.ones_like(counts))
    return hr, gaps, counts.amax(-1)


def _Delta(gaps: torch.Tensor, tau) -> tuple[torch.Tensor, torch.Tensor]:
    """``(delta [..., n], Delta [...])`` of :class:`GapBound` from the gaps ``[..., n, n]`` of the
    logits (temperature-free); the one place the gaps are divided by ``tau``."""
    delta = torch.exp(-gaps / tau).sum(-1)
    return delta, torch.sqrt(2.0 * (delta**2).sum(-1))


def hardmax_gap_bound(S: torch.Tensor, tau: float, eps: float = 1e-2, causal: bool = False) -> GapBound:
    """The P2 bound ``||softmax(S/tau) - H||_2 <= Delta(tau)`` and its rank certificate.

    Each row ``i`` of ``A - H`` has entries ``A_ij <= exp(-(S_{i a_i} - S_ij)/tau)`` off the
    argmax and ``1 - A_{i a_i} = sum_{j != a_i} A_ij`` on it, so its squared norm is at most
    ``2 delta_i^2``; the spectral norm is at most the Frobenius norm ``Delta``. ``H``'s
    singular values are ``sqrt`` of its column counts (``>= 1``) and ``sigma_1(A) >= 1``
    (rows sum to one), so by Weyl's inequality ``Delta <= eps`` and
    ``eps (sqrt(c_max) + eps) < 1 - eps`` imply ``rank_eps(A) = r_H`` (theory chapter, P2).

    Args:
        S: logits ``[..., n, n]`` (before division by ``tau``).
        tau: temperature, positive.
        eps: relative rank tolerance in (0, 0.5].
        causal: lower-triangular mask (row ``i`` sees ``j <= i``).

    Returns:
        :class:`GapBound`.

    Raises:
        ConfigError: for malformed ``S``, ``tau <= 0`` or ``eps`` outside (0, 0.5].
    """
    S = _check_logits(S)
    tau = check_positive_float("tau", tau)
    eps = _check_eps(eps)
    hr, gaps, c_max = _gap_terms(S, causal)
    delta, Delta = _Delta(gaps, tau)
    cond = eps * (torch.sqrt(c_max) + eps) < 1 - eps
    sufficient = (Delta <= eps) & cond & (hr.ties == 0)
    return GapBound(delta=delta, Delta=Delta, c_max=c_max, rank=hr.rank, ties=hr.ties, sufficient=sufficient)


def hardmax_threshold(S: torch.Tensor, eps: float = 1e-2, causal: bool = False, *, iters: int = 80) -> torch.Tensor:
    """Predicted threshold ``tau*``: the largest ``tau`` with ``Delta(tau) <= eps``; float64 ``[...]``.

    ``Delta(tau)`` (:func:`hardmax_gap_bound`) increases with ``tau``, so for every
    ``tau <= tau*`` the certificate holds and ``rank_eps(softmax(S/tau)) = r_H``. Found by
    bisection in ``log tau``. It is 0 where a row is tied or where the condition
    ``eps (sqrt(c_max) + eps) < 1 - eps`` fails. Units: those of ``S``. Since
    ``Delta >= sqrt(2) exp(-g/tau)`` with ``g`` the smallest top-1 minus top-2 gap,
    ``tau* <= g / log(sqrt(2)/eps)``: the threshold scales with the gap.

    Raises:
        ConfigError: for malformed ``S`` or ``eps`` outside (0, 0.5].
    """
    S = _check_logits(S)
    eps = _check_eps(eps)
    iters = check_positive_int("iters", iters)
    hr, gaps, c_max = _gap_terms(S, causal)
    ok = (hr.ties == 0) & (eps * (torch.sqrt(c_max) + eps) < 1 - eps)
    g = top_gap(S, causal).clamp_min(1e-300)
    finite = gaps[torch.isfinite(gaps)]
    span = float(finite.max()) if finite.numel() else 1.0
    lo = torch.log(g) - math.log(1e4 * S.shape[-1])  # Delta(exp(lo)) underflows to 0
    hi = torch.full_like(lo, math.log(max(span, 1e-300)) + 5.0)  # every delta_i is about n - 1 there

    def delta_at(log_tau):
        return _Delta(gaps, torch.exp(log_tau).reshape(log_tau.shape + (1, 1)))[1]

    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        good = delta_at(mid) <= eps
        lo = torch.where(good, mid, lo)
        hi = torch.where(good, hi, mid)
    tau_star = torch.where(ok & (delta_at(lo) <= eps), torch.exp(lo), torch.zeros_like(lo))
    return tau_star


def measured_threshold(taus, ranks: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Largest grid temperature below which every measured rank equals ``target``.

    Args:
        taus: increasing grid ``[T]`` (list or tensor).
        ranks: measured ranks ``[..., T]`` at those temperatures.
        target: ranks to reach ``[...]`` (for example ``r_H``).

    Returns:
        float64 ``[...]``: ``max{tau_t : ranks[..., s] == target for all s <= t}``, or 0 if
        the smallest grid point already misses the target.

    Raises:
        ConfigError: if ``taus`` is not strictly increasing and positive or shapes disagree.
    """
    taus = torch.as_tensor(taus, dtype=torch.float64)
    if taus.ndim != 1 or taus.numel() < 1 or not bool((taus > 0).all()) or not bool((taus.diff() > 0).all()):
        raise ConfigError("taus", "expected a strictly increasing 1-D grid of positive temperatures")
    if ranks.shape[-1] != taus.numel() or ranks.shape[:-1] != torch.as_tensor(target).shape:
        raise ConfigError("ranks", f"expected shape [..., {taus.numel()}] matching target, got {tuple(ranks.shape)}")
    hit = ranks == torch.as_tensor(target).unsqueeze(-1)
    prefix = hit.to(torch.int64).cumprod(-1).bool()
    last = prefix.sum(-1)  # number of leading grid points that hit
    vals = torch.cat([torch.zeros(1, dtype=torch.float64), taus])
    return vals[last]
