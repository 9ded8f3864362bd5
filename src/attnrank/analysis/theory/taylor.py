"""P1, small logits: the Taylor bound on the numerical rank and the staircase of singular values."""

from __future__ import annotations

import math

import torch

from ...core.errors import ConfigError, check_positive_float, check_positive_int
from ._common import _check_eps, _check_logits


def logit_halfrange(S: torch.Tensor, tau: float = 1.0) -> torch.Tensor:
    """``M = max_i (max_j S_ij - min_j S_ij) / (2 tau)``, the half-range of the softmax's input
    ``S / tau`` for logits ``S [..., n, n]``; float64 ``[...]``.

    Units: nats of logit. Bidirectional attention only (P1 does not cover a causal mask).

    Raises:
        ConfigError: for malformed ``S`` or ``tau <= 0``.
    """
    S = _check_logits(S)
    tau = check_positive_float("tau", tau)
    return ((S.amax(-1) - S.amin(-1)) / (2 * tau)).amax(-1)


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
        head_dim: ``d_h >= 1`` (the rank of ``S = Q K^T / sqrt(d_h)``).
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
        raise ConfigError(
            "x", f"expected [T] with T >= 2 matching y [..., T]; got {tuple(x.shape)} and {tuple(y.shape)}"
        )
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
