"""Propositions about the rank of softmax attention, as computable checks.

Notation (``theory`` chapter): ``S = Q K^T / (tau sqrt(d_h))`` is the ``n x n`` logit
matrix of one head, ``A = softmax(S)`` row-wise, ``sigma_1 >= ... >= sigma_n`` the
singular values of ``A`` and ``rank_eps(A) = #{k : sigma_k > eps sigma_1}`` the relative
numerical rank (:func:`attnrank.rank.numerical_rank` with ``rtol=eps``). Every function
here works on logits ``S`` of shape ``[..., n, n]`` (any leading batch dimensions) and
computes in float64 unless stated otherwise.

The propositions (stated, proved in sketch and checked in the theory chapter, and the
study's theorem as its reviewers restate it):

* **P0** the exact rank is full: :func:`exact_singular_values` (mpmath),
  :func:`causal_log10_det`.
* **P1** Taylor bound and staircase: :func:`logit_halfrange`, :func:`taylor_rank_bound`,
  :func:`staircase_blocks`, :func:`staircase_slopes`.
* **P1'** saturation in head dimension and the i.i.d. Gaussian limit:
  :func:`sample_logits` with ``head_dim=None``, :func:`monte_carlo_rank`.
* **P2** the hardmax limit: :func:`hardmax_rank`, :func:`hardmax_gap_bound`,
  :func:`hardmax_threshold`, :func:`measured_threshold`.
* **Study's theorem** ``E[r_H] <= (1 - 1/e) n + 1``: :func:`expected_distinct`,
  :func:`study_bound`, :func:`monte_carlo_hardmax_rank`.
* **P4, P5** toy limits on a permutation target: :func:`permutation_accuracy_bound`,
  :func:`normalised_kl_floor`, :func:`simplex_kl`.

Bad input raises :class:`attnrank.errors.ConfigError` naming the parameter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .errors import ConfigError, check_choice, check_positive_float, check_positive_int

__all__ = [
    "HardmaxRank",
    "GapBound",
    "MCResult",
    "softmax_attention",
    "hardmax_rank",
    "hardmax_gap_bound",
    "hardmax_threshold",
    "measured_threshold",
    "top_gap",
    "new_column_gap",
    "logit_halfrange",
    "taylor_terms",
    "taylor_rank_bound",
    "staircase_blocks",
    "staircase_slopes",
    "loglog_slope",
    "expected_distinct",
    "study_bound",
    "sample_logits",
    "monte_carlo_hardmax_rank",
    "monte_carlo_rank",
    "mean_ci",
    "exact_singular_values",
    "causal_log10_det",
    "permutation_accuracy_bound",
    "normalised_kl_floor",
    "simplex_kl",
]


# ----------------------------------------------------------------------------- helpers
def _check_logits(S, name: str = "S") -> torch.Tensor:
    if not isinstance(S, torch.Tensor):
        raise ConfigError(name, f"expected a torch.Tensor of shape [..., n, n], got {type(S).__name__}")
    if S.ndim < 2 or S.shape[-1] != S.shape[-2] or S.shape[-1] < 1:
        raise ConfigError(name, f"expected shape [..., n, n] with n >= 1, got {tuple(S.shape)}")
    if not S.is_floating_point():
        raise ConfigError(name, f"expected a floating-point tensor, got dtype {S.dtype}")
    if not bool(torch.isfinite(S).all()):
        raise ConfigError(name, "contains NaN or infinite entries; pass unmasked finite logits (use causal=True for a mask)")
    return S.to(torch.float64)


def _check_eps(eps) -> float:
    return check_positive_float("eps", eps, low=0.0, high=0.5)


def _causal_mask(n: int, device=None) -> torch.Tensor:
    """Boolean ``[n, n]``, true where key ``j <= i`` is visible to query ``i``."""
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def softmax_attention(S: torch.Tensor, tau: float = 1.0, causal: bool = False) -> torch.Tensor:
    """Row-softmax of ``S / tau`` in float64, ``[..., n, n] -> [..., n, n]``.

    The causal mask is applied after scaling (masked entries are exactly zero), so it
    never leaks however small ``tau`` is.

    Raises:
        ConfigError: for logits that are not ``[..., n, n]`` finite floats or ``tau <= 0``.
    """
    S = _check_logits(S)
    tau = check_positive_float("tau", tau)
    Z = S / tau
    if causal:
        Z = Z.masked_fill(~_causal_mask(S.shape[-1], S.device), float("-inf"))
    return torch.softmax(Z, dim=-1)


# ------------------------------------------------------------------------------- P2
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


def _Delta(gaps: torch.Tensor, tau) -> torch.Tensor:
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


# ------------------------------------------------------------------------------- P1
def logit_halfrange(S: torch.Tensor) -> torch.Tensor:
    """``M = max_i (max_j S_ij - min_j S_ij) / 2`` of logits ``S [..., n, n]``; float64 ``[...]``.

    ``S`` must already include the temperature (``Q K^T / (tau sqrt(d_h))``). Units: nats
    of logit. Bidirectional attention only (P1 does not cover a causal mask).
    """
    S = _check_logits(S)
    return ((S.amax(-1) - S.amin(-1)) / 2).amax(-1)


def taylor_terms(head_dim: int, m: int) -> int:
    """``r_m = C(d_h + m, m)``: the number of monomials of degree ``<= m`` in ``d_h`` variables.

    Raises:
        ConfigError: for ``head_dim < 1`` or ``m < 0``.
    """
    head_dim = check_positive_int("head_dim", head_dim)
    m = check_positive_int("m", m, low=0)
    return math.comb(head_dim + m, m)


def taylor_rank_bound(head_dim: int, M, eps: float, n: int | None = None):
    """The P1 bound on ``rank_eps(softmax(S))`` for logits of rank ``d_h`` with half-range ``M``.

    Expanding ``exp`` around each row's mid-range, ``A = D^{-1}(T_m + R)`` with ``T_m`` in
    the span of the ``r_m = C(d_h + m, m)`` key monomials of degree ``<= m`` and
    ``|R_ij| <= e^M M^{m+1}/(m+1)!``; with row sums ``D_i >= n e^{-M}``,
    ``sigma_{r_m + 1}(A) <= e^{2M} M^{m+1} / (m+1)!``. As ``sigma_1(A) >= 1``,

    ``rank_eps(A) <= min{ r_m : e^{2M} M^{m+1} / (m+1)! <= eps }``  (theory chapter, P1).

    Args:
        head_dim: ``d_h >= 1`` (the rank of ``S = Q K^T / (tau sqrt(d_h))``).
        M: logit half-range (:func:`logit_halfrange`), a float or a tensor ``[...]``.
        eps: relative tolerance in (0, 0.5].
        n: optional sequence length; the bound is then capped at ``n``.

    Returns:
        An int for a float ``M``, else an int64 tensor shaped like ``M`` (saturating at
        ``2**62`` when ``n`` is omitted and ``r_m`` overflows).

    Raises:
        ConfigError: for ``head_dim < 1``, ``M < 0`` or not finite, bad ``eps`` or ``n``.
    """
    head_dim = check_positive_int("head_dim", head_dim)
    eps = _check_eps(eps)
    if n is not None:
        n = check_positive_int("n", n)
    scalar = not isinstance(M, torch.Tensor)
    if scalar and (isinstance(M, bool) or not isinstance(M, (int, float))):
        raise ConfigError("M", f"got {M!r}; expected a non-negative float or tensor")
    Mt = torch.as_tensor(M, dtype=torch.float64)
    if not bool(torch.isfinite(Mt).all()) or bool((Mt < 0).any()):
        raise ConfigError("M", "expected finite non-negative half-ranges")
    flat = Mt.reshape(-1)
    out = torch.empty(flat.shape, dtype=torch.int64)
    cap = 2**62
    for idx, mval in enumerate(flat.tolist()):
        m = 0
        while True:
            r = math.comb(head_dim + m, m)
            if n is not None and r >= n:
                r = n
                break
            if mval == 0.0:
                break
            log_b = 2 * mval + (m + 1) * math.log(mval) - math.lgamma(m + 2)
            if log_b <= math.log(eps):
                break
            if r >= cap:
                break
            m += 1
        out[idx] = min(r, cap)
    out = out.reshape(Mt.shape)
    return int(out) if scalar else out


def staircase_blocks(head_dim: int, n: int) -> torch.Tensor:
    """Predicted staircase exponent ``m(k)`` for ``k = 1..n``: int64 ``[n]``.

    For ``A = softmax(beta S_0)`` with ``rank S_0 = d_h`` and ``beta -> 0``,
    ``sigma_k(A) = Theta(beta^m)`` for ``r_{m-1} < k <= r_m`` (theory chapter, P1), so
    ``m(k) = min{m : r_m >= k}``. The blocks for ``d_h = 4`` are 1 | 2-5 | 6-15 | 16-35 | ...
    """
    head_dim = check_positive_int("head_dim", head_dim)
    n = check_positive_int("n", n)
    out = torch.empty(n, dtype=torch.int64)
    m = 0
    for k in range(1, n + 1):
        while math.comb(head_dim + m, m) < k:
            m += 1
        out[k - 1] = m
    return out


def loglog_slope(x, y) -> torch.Tensor:
    """Least-squares slope of ``log y`` against ``log x`` along the last dimension.

    ``x``: ``[T]`` positive; ``y``: ``[..., T]`` positive. Returns float64 ``[...]``.
    """
    x = torch.as_tensor(x, dtype=torch.float64)
    y = torch.as_tensor(y, dtype=torch.float64)
    if x.ndim != 1 or x.numel() < 2 or y.shape[-1] != x.numel():
        raise ConfigError("x", f"expected [T] with T >= 2 matching y [..., T]; got {tuple(x.shape)} and {tuple(y.shape)}")
    if not bool((x > 0).all()) or not bool((y > 0).all()):
        raise ConfigError("y", "log-log slopes need positive values")
    lx, ly = x.log(), y.log()
    lx = lx - lx.mean()
    return ((ly - ly.mean(-1, keepdim=True)) * lx).sum(-1) / (lx**2).sum()


def staircase_slopes(S0: torch.Tensor, betas) -> tuple[torch.Tensor, torch.Tensor]:
    """Singular values of ``softmax(beta S0)`` over ``betas`` and their log-log slopes.

    Args:
        S0: logits ``[..., n, n]`` of rank ``d_h`` (for example ``Q K^T / sqrt(d_h)``).
        betas: increasing positive logit scales ``[B]`` (small, e.g. 1e-2 .. 1e-1).

    Returns:
        ``(sv, slopes)``: float64 singular values ``[..., B, n]`` and the fitted exponent of
        each ``sigma_k`` in ``beta``, ``[..., n]`` (compare with :func:`staircase_blocks`).
        Singular values at the float64 floor (``< 1e-13 sigma_1``) make a slope meaningless;
        mask them with ``sv.amin(-2) > 1e-13``.
    """
    S0 = _check_logits(S0, "S0")
    betas = torch.as_tensor(betas, dtype=torch.float64)
    if betas.ndim != 1 or betas.numel() < 2 or not bool((betas > 0).all()):
        raise ConfigError("betas", "expected at least two positive logit scales")
    A = torch.softmax(S0.unsqueeze(-3) * betas.reshape(-1, 1, 1), dim=-1)
    sv = torch.linalg.svdvals(A).clamp_min(1e-300)
    slopes = loglog_slope(betas, sv.transpose(-1, -2))
    return sv, slopes


# --------------------------------------------------------------- study's theorem, P1'
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
    tau: float = 1.0,
    generator: torch.Generator | None = None,
    explicit_inputs: bool = False,
    d_model: int | None = None,
) -> torch.Tensor:
    """Random logits ``S = (X W_Q)(X W_K)^T / (tau sqrt(d_h))``, float64 ``[samples, n, n]``.

    The study's assumptions: orthonormal inputs ``X`` (``n x d_model``, orthonormal rows)
    and independent standard Gaussian ``W_Q, W_K`` (``d_model x d_h``). By rotation
    invariance ``Q = X W_Q`` then has i.i.d. ``N(0, 1)`` entries, independent of ``K``, so by
    default ``Q, K`` are drawn directly; ``explicit_inputs=True`` builds ``X`` from a QR
    factorisation instead (same distribution, slower). ``head_dim=None`` gives the
    i.i.d. limit ``G / tau`` with ``G_ij ~ N(0, 1)`` (the ``d_h -> infinity`` limit, P1').

    Raises:
        ConfigError: for non-positive sizes, ``tau <= 0`` or ``d_model < n``.
    """
    n = check_positive_int("n", n)
    samples = check_positive_int("samples", samples)
    tau = check_positive_float("tau", tau)
    kw = dict(dtype=torch.float64, generator=generator)
    if head_dim is None:
        return torch.randn(samples, n, n, **kw) / tau
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
    return Q @ K.transpose(-1, -2) / (tau * math.sqrt(head_dim))


@dataclass(frozen=True)
class MCResult:
    """A Monte Carlo mean with a two-sided confidence interval (Student t)."""

    mean: float
    sd: float
    ci_low: float
    ci_high: float
    samples: int
    level: float = 0.95
    ties: int = 0

    def as_dict(self) -> dict:
        return dict(mean=self.mean, sd=self.sd, ci_low=self.ci_low, ci_high=self.ci_high,
                    samples=self.samples, level=self.level, ties=self.ties)


def mean_ci(x, level: float = 0.95) -> MCResult:
    """Mean of ``x`` (1-D) with a Student-t confidence interval at ``level``."""
    from scipy import stats

    level = check_positive_float("level", level, low=0.0, high=0.999999)
    x = np.asarray(torch.as_tensor(x, dtype=torch.float64).reshape(-1))
    if x.size < 2:
        raise ConfigError("x", f"need at least 2 samples for a confidence interval, got {x.size}")
    mean, sd = float(x.mean()), float(x.std(ddof=1))
    half = float(stats.t.ppf(0.5 + level / 2, x.size - 1)) * sd / math.sqrt(x.size)
    return MCResult(mean=mean, sd=sd, ci_low=mean - half, ci_high=mean + half, samples=int(x.size), level=level)


def _chunks(samples: int, n: int, budget: int = 2**22):
    per = max(1, budget // (n * n))
    done = 0
    while done < samples:
        k = min(per, samples - done)
        yield k
        done += k


def monte_carlo_hardmax_rank(
    n: int, head_dim: int | None, samples: int, *, seed: int = 0, causal: bool = False,
    level: float = 0.95, explicit_inputs: bool = False,
) -> tuple[MCResult, torch.Tensor]:
    """Monte Carlo estimate of ``E[r_H]`` under the study's assumptions (:func:`sample_logits`).

    Args:
        n: sequence length.
        head_dim: ``d_h``, or ``None`` for i.i.d. Gaussian logits (the ``d_h -> inf`` limit,
            whose expectation is :func:`expected_distinct`).
        samples: number of independent ``(W_Q, W_K)`` draws.
        seed: seed of the ``torch.Generator``.
        causal, level, explicit_inputs: see :func:`hardmax_rank`, :func:`mean_ci`,
            :func:`sample_logits`.

    Returns:
        ``(MCResult, ranks)``: mean with CI (``ties`` counts tied rows, 0 almost surely for
        ``d_h >= 2``) and the int64 ranks ``[samples]``.
    """
    samples = check_positive_int("samples", samples, low=2)
    g = torch.Generator().manual_seed(int(seed))
    ranks, ties = [], 0
    for k in _chunks(samples, n):
        hr = hardmax_rank(sample_logits(n, head_dim, k, generator=g, explicit_inputs=explicit_inputs), causal)
        ranks.append(hr.rank)
        ties += int(hr.ties.sum())
    ranks = torch.cat(ranks)
    res = mean_ci(ranks.to(torch.float64), level)
    return MCResult(**{**res.as_dict(), "ties": ties}), ranks


def monte_carlo_rank(
    n: int, head_dim: int | None, samples: int, *, tau: float = 1.0, measures=("rank_rtol_1e-2",),
    seed: int = 0, causal: bool = False, level: float = 0.95,
) -> dict[str, tuple[MCResult, torch.Tensor]]:
    """Monte Carlo of rank measures of ``softmax(S)`` for random logits ``S`` at temperature ``tau``.

    ``S`` (which includes ``1/tau``) is drawn by :func:`sample_logits` (``head_dim=None``:
    the i.i.d. limit) and measured
    with :func:`attnrank.rank.rank_measures` in float64. Returns
    ``{measure: (MCResult, values [samples])}``.
    """
    from .rank import check_measures, rank_measures

    measures = check_measures(measures)
    samples = check_positive_int("samples", samples, low=2)
    g = torch.Generator().manual_seed(int(seed))
    vals: dict[str, list] = {m: [] for m in measures}
    for k in _chunks(samples, n):
        A = softmax_attention(sample_logits(n, head_dim, k, tau=tau, generator=g), 1.0, causal)
        for m, v in rank_measures(A, measures=measures).items():
            vals[m].append(v)
    return {m: (mean_ci(torch.cat(v), level), torch.cat(v)) for m, v in vals.items()}


# ------------------------------------------------------------------------------- P0
def exact_singular_values(S: torch.Tensor, tau: float = 1.0, *, digits: int = 120, causal: bool = False) -> np.ndarray:
    """``log10`` of the singular values of ``softmax(S/tau)`` in ``digits``-digit arithmetic.

    The float64 entries of ``S`` are taken as exact; ``exp``, the row normalisation and
    the SVD run in mpmath, so singular values far below float64 resolution (``1e-16``
    relative) are resolved as long as they exceed about ``10^-digits``. Slow: about 0.6 s
    for ``n = 32`` at 120 digits.

    Args:
        S: one logit matrix ``[n, n]``.

    Returns:
        float64 numpy array ``[n]`` of ``log10 sigma_k``, decreasing.

    Raises:
        ConfigError: for malformed ``S`` (not 2-D), ``tau <= 0`` or ``digits < 30``.
    """
    import mpmath

    S = _check_logits(S)
    if S.ndim != 2:
        raise ConfigError("S", f"expected one [n, n] matrix, got shape {tuple(S.shape)}")
    tau = check_positive_float("tau", tau)
    digits = check_positive_int("digits", digits, low=30)
    n = S.shape[0]
    with mpmath.workdps(digits):
        rows = []
        for i in range(n):
            row = [mpmath.exp(mpmath.mpf(float(S[i, j])) / tau) if (not causal or j <= i) else mpmath.mpf(0)
                   for j in range(n)]
            z = mpmath.fsum(row)
            rows.append([x / z for x in row])
        sv = mpmath.svd_r(mpmath.matrix(rows), compute_uv=False)
        out = sorted((float(mpmath.log10(s)) if s > 0 else -math.inf for s in sv), reverse=True)
    return np.asarray(out, dtype=np.float64)


def causal_log10_det(S: torch.Tensor, tau: float = 1.0) -> torch.Tensor:
    """``log10 det A`` for causal ``A = softmax(S/tau)``: ``sum_i log10 A_ii`` (triangular), ``[...]``.

    Finite for every finite ``S`` and ``tau > 0``, so causal attention is invertible
    (P0); also ``sigma_min(A) <= min_i A_ii``.
    """
    S = _check_logits(S)
    tau = check_positive_float("tau", tau)
    A_log = torch.log_softmax(S.masked_fill(~_causal_mask(S.shape[-1], S.device), float("-inf")) / tau, -1)
    return A_log.diagonal(dim1=-2, dim2=-1).sum(-1) / math.log(10)


# --------------------------------------------------------------------------- P4, P5
def permutation_accuracy_bound(head_dim: int, n: int) -> float:
    """Best possible argmax accuracy on a permutation target of size ``n`` (P4).

    With ``d_h = 1`` every logit row is ``q_i k_j``, maximised at the largest key when
    ``q_i > 0`` and at the smallest when ``q_i < 0``: at most 2 distinct argmax columns,
    so at most 2 of the ``n`` distinct target columns are hit, accuracy ``<= 2/n``. With
    ``d_h >= 2`` keys on a circle realise any argmax pattern (accuracy 1).
    """
    head_dim = check_positive_int("head_dim", head_dim)
    n = check_positive_int("n", n)
    return min(1.0, 2.0 / n) if head_dim == 1 else 1.0


def normalised_kl_floor(n: int, tau) -> float | torch.Tensor:
    """P5 lower bound on the mean KL to a permutation target with normalised ``q, k``.

    With ``|S_ij| = |cos(q_i, k_j)| / tau <= 1/tau`` each row's KL is
    ``log(1 + sum_{j != pi(i)} exp(S_ij - S_{i pi(i)})) >= log(1 + (n - 1) e^{-2/tau})`` nats.
    ``tau`` may be a float or a tensor.
    """
    n = check_positive_int("n", n)
    t = torch.as_tensor(tau, dtype=torch.float64)
    if not bool((t > 0).all()):
        raise ConfigError("tau", "expected positive temperatures")
    out = torch.log1p((n - 1) * torch.exp(-2.0 / t))
    return float(out) if out.ndim == 0 else out


def simplex_kl(n: int, tau) -> float | torch.Tensor:
    """Mean KL (nats) reached with normalised ``q_i = k_{pi(i)}`` on a regular simplex (P5).

    Distinct keys have cosine ``-1/(n-1)``, so the gap is ``n / ((n - 1) tau)`` and the KL
    ``log(1 + (n - 1) e^{-n/((n-1) tau)})``; needs ``d_h >= n - 1``.
    """
    n = check_positive_int("n", n, low=2)
    t = torch.as_tensor(tau, dtype=torch.float64)
    if not bool((t > 0).all()):
        raise ConfigError("tau", "expected positive temperatures")
    out = torch.log1p((n - 1) * torch.exp(-n / ((n - 1) * t)))
    return float(out) if out.ndim == 0 else out
