"""Input checks and the softmax at temperature ``tau`` shared by the propositions."""

from __future__ import annotations

import torch

from ...core.errors import ConfigError, check_positive_float


def _check_logits(S, name: str = "S") -> torch.Tensor:
    if not isinstance(S, torch.Tensor):
        raise ConfigError(name, f"expected a torch.Tensor of shape [..., n, n], got {type(S).__name__}")
    if S.ndim < 2 or S.shape[-1] != S.shape[-2] or S.shape[-1] < 1:
        raise ConfigError(name, f"expected shape [..., n, n] with n >= 1, got {tuple(S.shape)}")
    if not S.is_floating_point():
        raise ConfigError(name, f"expected a floating-point tensor, got dtype {S.dtype}")
    if not bool(torch.isfinite(S).all()):
        raise ConfigError(
            name, "contains NaN or infinite entries; pass unmasked finite logits (use causal=True for a mask)"
        )
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
