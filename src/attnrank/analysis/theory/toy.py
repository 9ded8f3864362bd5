"""P4 and P5, toy limits on a permutation target: argmax accuracy and the KL floor."""

from __future__ import annotations

import torch

from ...core.errors import ConfigError, check_positive_int


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

    The logits are cosines, ``S_ij = cos(q_i, k_j)`` with ``|S_ij| <= 1``, and the softmax
    sees ``S / tau``, so each row's KL is
    ``log(1 + sum_{j != pi(i)} exp((S_ij - S_{i pi(i)}) / tau)) >= log(1 + (n - 1) e^{-2/tau})`` nats.
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
