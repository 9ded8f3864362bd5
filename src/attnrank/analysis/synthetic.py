"""A single attention layer trained to match a high-rank target attention matrix.

The toy of the ``target`` chapter (the study's "high-rank target" experiment, our set-up):

* inputs are the ``n`` one-hot vectors (orthonormal), so the queries and keys are the rows
  of the learned matrices ``W_Q, W_K`` (``n x d_h``); the values are **fixed** to the
  identity (``V = I``), so the layer's output *is* its attention matrix ``A``;
* ``variant="plain"``: ``A = softmax(Q K^T / (tau sqrt(d_h)))`` (dot-product attention);
* ``variant="normalised"``: ``A = softmax(cos(q_i, k_j) / tau)``, so ``|S_ij| <= 1/tau``
  and ``tau`` caps the logits (P5);
* loss: the mean over rows of ``KL(T_i || A_i)`` in nats, for a row-stochastic target
  ``T`` (:func:`make_target`: a permutation, a sharp random matrix, a low-rank control);
* optimiser: Adam (our own batched implementation, identical to ``torch.optim.Adam``
  without weight decay, but with a learning rate per configuration), full batch.

:func:`train_toy` trains a whole batch of configurations (temperatures, variants, seeds,
targets) of one head dimension as one tensor program, with hand-written gradients
(checked against autograd in the tests); :func:`run_grid` loops over head dimensions
only and returns tidy pandas tables.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ..core.errors import ConfigError, check_choice, check_positive_float, check_positive_int
from ..core.rank import numerical_rank
from .theory import normalised_kl_floor, simplex_kl

__all__ = [
    "grid_table",
    "p3_table",
    "VARIANTS",
    "TARGETS",
    "ToyResult",
    "make_target",
    "toy_attention",
    "toy_kl",
    "train_toy",
    "run_grid",
    "split_seeds",
    "select_best",
]

#: Attention variants of the toy.
VARIANTS = ("plain", "normalised")
#: Target kinds of :func:`make_target`.
TARGETS = ("permutation", "sharp", "lowrank")
_TARGET_INDEX = {k: i for i, k in enumerate(TARGETS)}


def make_target(kind: str, n: int, *, seed: int = 0, sharpness: float = 3.0, rank: int = 4) -> torch.Tensor:
    """A row-stochastic target ``[n, n]`` (float64).

    * ``"permutation"``: a uniformly random permutation matrix (rank ``n``, one-hot rows);
    * ``"sharp"``: ``softmax(sharpness * G)`` row-wise with i.i.d. ``G ~ N(0, 1)``: peaked
      rows (mean largest entry about 0.47 at ``sharpness=3``, ``n=64``) and numerical rank
      close to ``n`` at ``rtol=1e-2`` (about 61 of 64);
    * ``"lowrank"``: ``U V`` with ``U`` (``n x rank``) rows drawn from a flat Dirichlet and
      ``V`` (``rank x n``) rows ``softmax(sharpness * G)``: row-stochastic of rank ``rank``
      (the control).

    The target depends only on ``(kind, n, seed)``.

    Raises:
        ConfigError: for an unknown ``kind`` or bad sizes.
    """
    check_choice("kind", kind, TARGETS)
    n = check_positive_int("n", n, low=2)
    seed = check_positive_int("seed", seed, low=0)
    sharpness = check_positive_float("sharpness", sharpness)
    rank = check_positive_int("rank", rank)
    if rank > n:
        raise ConfigError("rank", f"got {rank}; must be <= n = {n}")
    g = torch.Generator().manual_seed(1_000_003 * (_TARGET_INDEX[kind] + 1) + seed)
    if kind == "permutation":
        perm = torch.randperm(n, generator=g)
        return torch.eye(n, dtype=torch.float64)[perm]
    if kind == "sharp":
        return torch.softmax(sharpness * torch.randn(n, n, generator=g, dtype=torch.float64), -1)
    # a flat Dirichlet row is a normalised vector of Exp(1) variables (seeded generator)
    E = -torch.log(torch.rand(n, rank, generator=g, dtype=torch.float64).clamp_min(1e-300))
    U = E / E.sum(-1, keepdim=True)
    V = torch.softmax(sharpness * torch.randn(rank, n, generator=g, dtype=torch.float64), -1)
    return U @ V


def _as_batch(name: str, value, G: int, dtype=torch.float64) -> torch.Tensor:
    t = torch.as_tensor(value, dtype=dtype)
    if t.ndim == 0:
        t = t.expand(G).clone()
    if t.shape != (G,):
        raise ConfigError(name, f"expected a scalar or a sequence of length {G}, got shape {tuple(t.shape)}")
    return t


def _variant_flags(variant, G: int) -> torch.Tensor:
    names = [variant] * G if isinstance(variant, str) else list(variant)
    if len(names) != G:
        raise ConfigError("variant", f"expected one of {VARIANTS} or a sequence of length {G}")
    for v in names:
        check_choice("variant", v, VARIANTS)
    return torch.tensor([v == "normalised" for v in names])


def _forward(WQ, WK, scale, normf):
    """Logits ``[G, n, n]``, the effective (normalised where ``normf == 1``) q, k and the
    inverse-norm factors ``rq, rk`` (``[G, n, 1]``, 1 for plain rows)."""
    rq = torch.lerp(torch.ones_like(WQ[..., :1]), 1.0 / WQ.norm(dim=-1, keepdim=True).clamp_min(1e-30), normf)
    rk = torch.lerp(torch.ones_like(WK[..., :1]), 1.0 / WK.norm(dim=-1, keepdim=True).clamp_min(1e-30), normf)
    Qe, Ke = WQ * rq, WK * rk
    S = torch.bmm(Qe * scale, Ke.transpose(-1, -2))
    return S, Qe, Ke, rq, rk


def toy_attention(WQ: torch.Tensor, WK: torch.Tensor, tau, variant) -> torch.Tensor:
    """Attention ``[G, n, n]`` of the toy for weights ``W_Q, W_K [G, n, d_h]``.

    ``tau`` and ``variant`` are scalars or length-``G`` sequences.
    """
    if WQ.ndim != 3 or WQ.shape != WK.shape:
        raise ConfigError(
            "WQ", f"expected W_Q, W_K of the same shape [G, n, d_h], got {tuple(WQ.shape)}, {tuple(WK.shape)}"
        )
    G, _, d = WQ.shape
    tau = _as_batch("tau", tau, G, WQ.dtype).reshape(-1, 1, 1)
    normf = _variant_flags(variant, G).to(WQ.dtype).reshape(-1, 1, 1)
    scale = torch.lerp(1.0 / (tau * math.sqrt(d)), 1.0 / tau, normf)
    S, *_ = _forward(WQ, WK, scale, normf)
    return torch.softmax(S, -1)


def toy_kl(targets: torch.Tensor, log_A: torch.Tensor) -> torch.Tensor:
    """Mean over rows of ``KL(T_i || A_i)`` in nats: ``[G, n, n], [G, n, n] -> [G]``."""
    n = targets.shape[-1]
    return (torch.special.xlogy(targets, targets) - targets * log_A).sum((-1, -2)) / n


@dataclass
class ToyResult:
    """Output of :func:`train_toy` for ``G`` configurations.

    Attributes:
        kl: float64 ``[G]``, final mean-row KL (nats).
        rank: int64 ``[G]``, numerical rank of the final ``A`` at ``rtol`` (float64 SVD).
        accuracy: float64 ``[G]``, fraction of rows whose argmax matches the target's.
        attention: float64 ``[G, n, n]``, final attention matrices.
        steps: int64 ``[L]``, steps at which ``curves`` was recorded (0 = initialisation).
        curves: float64 ``[G, L]``, KL (nats) at those steps.
        WQ, WK: final weights ``[G, n, d_h]``.
    """

    kl: torch.Tensor
    rank: torch.Tensor
    accuracy: torch.Tensor
    attention: torch.Tensor
    steps: torch.Tensor
    curves: torch.Tensor
    WQ: torch.Tensor
    WK: torch.Tensor


def _adam_loop(WQ, WK, mQ, vQ, mK, vK, steps, log_every, lrs, b1, b2, adam_eps, record, curve, forward, kl_of, grads):
    for t in range(1, steps + 1):
        S, Qe, Ke, rq, rk = forward()
        if (t - 1) % log_every == 0:
            record.append(t - 1)
            curve.append(kl_of(S)[0].to(torch.float64))
        gQ, gK = grads(S, Qe, Ke, rq, rk)
        bc1, bc2 = 1 - b1**t, 1 - b2**t
        for p, g, m, v in ((WQ, gQ, mQ, vQ), (WK, gK, mK, vK)):
            m.mul_(b1).add_(g, alpha=1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (v.sqrt() / math.sqrt(bc2)).add_(adam_eps)
            p.addcdiv_(m * (lrs / bc1), denom, value=-1.0)
    return kl_of(forward()[0])


def _toy_settings(head_dim, steps, log_every, rtol, betas, adam_eps, num_threads):
    """:func:`train_toy`'s scalar settings, checked: ``(head_dim, steps, log_every, rtol, num_threads)``.

    Raises:
        ConfigError: naming the setting out of range.
    """
    head_dim = check_positive_int("head_dim", head_dim)
    steps = check_positive_int("steps", steps, low=0)
    log_every = check_positive_int("log_every", log_every)
    rtol = check_positive_float("rtol", rtol, low=0.0, high=1.0)
    if not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
        raise ConfigError("betas", f"got {betas!r}; each must lie in [0, 1)")
    if not adam_eps >= 0:
        raise ConfigError("adam_eps", f"got {adam_eps!r}; expected a non-negative float")
    if num_threads is not None:
        num_threads = check_positive_int("num_threads", num_threads)
    return head_dim, steps, log_every, rtol, num_threads


def _toy_weights(seeds, n: int, head_dim: int, stds: torch.Tensor, dev, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The initial ``W_Q, W_K`` (each ``[G, n, d_h]``): configuration ``g`` draws both (``W_Q`` first) in float64
    from ``torch.Generator().manual_seed(seeds[g])``, times its ``init_std``, on ``dev`` in ``dtype``."""
    init = []
    for s in seeds:
        g = torch.Generator().manual_seed(s)
        init.append(torch.randn(2, n, head_dim, generator=g, dtype=torch.float64))
    W = torch.stack(init).to(dev, dtype) * stds.unsqueeze(1)  # [G, 2, n, d]
    return W[:, 0].contiguous(), W[:, 1].contiguous()


def _toy_batch(targets, tau, variant, seeds, lr, init_std, dtype):
    """:func:`train_toy`'s batch, checked: ``(T [G, n, n] in dtype, seeds, taus [G], lrs [G, 1, 1], stds [G, 1, 1],
    norm [G])``, ``G`` the number of seeds (an int seed is repeated for every target or variant).

    Raises:
        ConfigError: naming ``targets``, ``seeds``, ``tau``, ``lr``, ``init_std``, ``variant`` or ``dtype``.
    """
    if not isinstance(targets, torch.Tensor) or targets.ndim not in (2, 3) or targets.shape[-1] != targets.shape[-2]:
        raise ConfigError("targets", "expected a row-stochastic tensor [G, n, n] or [n, n]")
    if not bool(torch.allclose(targets.sum(-1).double(), torch.ones((), dtype=torch.float64), atol=1e-6)) or bool(
        (targets < 0).any()
    ):
        raise ConfigError("targets", "rows must be non-negative and sum to 1")
    check_choice("dtype", dtype, (torch.float32, torch.float64))
    if isinstance(seeds, int):
        G = targets.shape[0] if targets.ndim == 3 else (len(variant) if not isinstance(variant, str) else 1)
        seeds = [seeds] * G
    seeds = [check_positive_int("seeds", int(s), low=0) for s in seeds]
    G = len(seeds)
    n = targets.shape[-1]
    T = (targets.expand(G, n, n) if targets.ndim == 2 else targets).to(dtype)
    if T.shape[0] != G:
        raise ConfigError("targets", f"got {T.shape[0]} targets for {G} seeds")
    taus = _as_batch("tau", tau, G)
    if not bool((taus > 0).all()):
        raise ConfigError("tau", "temperatures must be positive")
    lrs = _as_batch("lr", lr, G).to(dtype).reshape(-1, 1, 1)
    stds = _as_batch("init_std", init_std, G).to(dtype).reshape(-1, 1, 1)
    if not bool((lrs > 0).all()) or not bool((stds > 0).all()):
        raise ConfigError("lr", "learning rates and init_std must be positive")
    return T, seeds, taus, lrs, stds, _variant_flags(variant, G)


def train_toy(
    targets: torch.Tensor,
    head_dim: int,
    tau,
    variant,
    *,
    seeds,
    steps: int = 2000,
    lr=1e-2,
    init_std=1.0,
    adam_eps: float = 1e-8,
    betas: tuple[float, float] = (0.9, 0.999),
    log_every: int = 20,
    rtol: float = 1e-2,
    dtype: torch.dtype = torch.float32,
    num_threads: int | None = 1,
    device: str | torch.device | None = None,
) -> ToyResult:
    """Train ``G`` independent toy layers at once (full-batch Adam on the mean-row KL).

    Args:
        targets: row-stochastic ``[G, n, n]`` (or ``[n, n]``, shared by all).
        head_dim: ``d_h`` of every configuration in the batch.
        tau: temperature ratio, scalar or ``[G]`` (``S = Q K^T / (tau sqrt(d_h))`` plain,
            ``cos / tau`` normalised).
        variant: ``"plain"``, ``"normalised"`` or a length-``G`` sequence of them.
        seeds: int or ``[G]`` ints; configuration ``g`` draws ``W_Q`` then ``W_K`` (each
            ``[n, d_h]``, ``N(0, init_std^2)``) from ``torch.Generator().manual_seed(seeds[g])``,
            so equal seeds share their initialisation across temperatures and variants.
        steps: Adam steps. lr: learning rate, scalar or ``[G]``. init_std: scalar or ``[G]``.
        adam_eps, betas: Adam's constants (``torch.optim.Adam`` semantics).
        log_every: record the KL every this many steps (and at the last step).
        rtol: relative tolerance of the reported rank.
        dtype: compute dtype (float32 by default; float64 for exactness checks).
        num_threads: torch intra-op threads while training (restored afterwards); the
            default 1 because the tensors are small and, on a shared CPU, extra threads
            spin-wait (measured 50x slower with 2 threads under load). ``None``: leave as is.
        device: where to train (``None``: CPU); results are returned on the CPU.

    Returns:
        :class:`ToyResult`.

    Raises:
        ConfigError: naming the parameter for bad shapes or values.
    """
    T, seeds, taus, lrs, stds, norm = _toy_batch(targets, tau, variant, seeds, lr, init_std, dtype)
    n = T.shape[-1]
    head_dim, steps, log_every, rtol, num_threads = _toy_settings(
        head_dim, steps, log_every, rtol, betas, adam_eps, num_threads
    )

    dev = torch.device("cpu") if device is None else torch.device(device)
    T, lrs, stds, taus, norm = (x.to(dev) for x in (T, lrs, stds, taus, norm))
    WQ, WK = _toy_weights(seeds, n, head_dim, stds, dev, dtype)
    t64 = taus.reshape(-1, 1, 1)
    normf = norm.to(dtype).reshape(-1, 1, 1)
    scale = torch.lerp(1.0 / (t64 * math.sqrt(head_dim)), 1.0 / t64, normf.double()).to(dtype)
    b1, b2 = betas
    mQ, vQ, mK, vK = (torch.zeros_like(WQ) for _ in range(4))
    TlogT = torch.special.xlogy(T, T).sum((-1, -2)) / n
    record, curve = [], []

    def kl_of(S):
        logA = torch.log_softmax(S, -1)
        return TlogT - (T * logA).sum((-1, -2)) / n, logA

    def grads(S, Qe, Ke, rq, rk):
        # d(mean-row KL)/dS = (A - T) / n; the 1/n and the logit scale go on the thin side
        dS = torch.softmax(S, -1).sub_(T)
        c = scale / n
        dQe = torch.bmm(dS, Ke * c)
        dKe = torch.bmm(dS.transpose(-1, -2), Qe * c)
        # normalised rows: project out the radial part, divide by the norm (rq = 1/|q|)
        dQ = (dQe - normf * Qe * (Qe * dQe).sum(-1, keepdim=True)) * rq
        dK = (dKe - normf * Ke * (Ke * dKe).sum(-1, keepdim=True)) * rk
        return dQ, dK

    old_threads = torch.get_num_threads()
    if num_threads is not None:
        torch.set_num_threads(num_threads)
    try:
        kl, logA = _adam_loop(
            WQ,
            WK,
            mQ,
            vQ,
            mK,
            vK,
            steps,
            log_every,
            lrs,
            b1,
            b2,
            adam_eps,
            record,
            curve,
            lambda: _forward(WQ, WK, scale, normf),
            kl_of,
            grads,
        )
    finally:
        torch.set_num_threads(old_threads)
    record.append(steps)
    curve.append(kl.to(torch.float64))

    A = logA.to(torch.float64).exp()
    acc = (A.argmax(-1) == T.argmax(-1)).to(torch.float64).mean(-1)
    return ToyResult(
        kl=kl.to(torch.float64).cpu(),
        rank=numerical_rank(A, rtol=rtol).cpu(),
        accuracy=acc.cpu(),
        attention=A.cpu(),
        steps=torch.tensor(record, dtype=torch.int64),
        curves=torch.stack(curve, -1).cpu(),
        WQ=WQ.cpu(),
        WK=WK.cpu(),
    )


def run_grid(
    n: int = 64,
    taus: Sequence[float] = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0),
    head_dims: Sequence[int] = (1, 2, 4, 8, 16, 64),
    variants: Sequence[str] = VARIANTS,
    seeds: Sequence[int] = (0, 1, 2),
    targets: Sequence[str] = TARGETS,
    *,
    steps: int = 2000,
    lr: float = 1e-2,
    init_std: float = 1.0,
    log_every: int = 20,
    rtol: float = 1e-2,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train the toy over a full grid; one batched :func:`train_toy` call per head dimension.

    Every (target, variant, tau, seed) of a head dimension is one row of the batch, so the
    cost is ``len(head_dims)`` tensor programs of ``steps`` Adam steps each. ``device``: see
    :func:`train_toy`.

    Returns:
        ``(final, curves)``: ``final`` has one row per run with columns ``target, variant,
        head_dim, tau, seed, n, steps, kl, init_kl, rank, target_rank, accuracy, kl_floor``
        (the P5 floor for normalised attention on a permutation, else NaN),
        ``kl_simplex`` (idem); ``curves`` has ``target, variant, head_dim, tau, seed, step, kl``.

    Raises:
        ConfigError: naming the parameter for an empty or invalid grid.
    """
    n = check_positive_int("n", n, low=2)
    for name, grid in (
        ("taus", taus),
        ("head_dims", head_dims),
        ("variants", variants),
        ("seeds", seeds),
        ("targets", targets),
    ):
        if len(grid) == 0:
            raise ConfigError(name, "expected a non-empty list")
    for t in taus:
        check_positive_float("taus", t)
    for v in variants:
        check_choice("variants", v, VARIANTS)
    for k in targets:
        check_choice("targets", k, TARGETS)
    head_dims = [check_positive_int("head_dims", int(d)) for d in head_dims]
    seeds = [check_positive_int("seeds", int(s), low=0) for s in seeds]

    tgt = {(k, s): make_target(k, n, seed=s) for k in targets for s in seeds}
    tgt_rank = {key: int(numerical_rank(T, rtol=rtol)) for key, T in tgt.items()}
    combos = [(k, v, float(t), s) for k in targets for v in variants for t in taus for s in seeds]
    finals, curves = [], []
    for d in head_dims:
        res = train_toy(
            torch.stack([tgt[(k, s)] for k, _, _, s in combos]),
            d,
            [t for _, _, t, _ in combos],
            [v for _, v, _, _ in combos],
            seeds=[s for *_, s in combos],
            steps=steps,
            lr=lr,
            init_std=init_std,
            log_every=log_every,
            rtol=rtol,
            dtype=dtype,
            device=device,
        )
        meta = pd.DataFrame(combos, columns=["target", "variant", "tau", "seed"])
        meta.insert(2, "head_dim", d)
        f = meta.assign(
            n=n,
            steps=steps,
            kl=res.kl.numpy(),
            init_kl=res.curves[:, 0].numpy(),
            rank=res.rank.numpy(),
            accuracy=res.accuracy.numpy(),
            target_rank=[tgt_rank[(k, s)] for k, _, _, s in combos],
        )
        finals.append(f)
        L = res.steps.numel()
        c = meta.loc[meta.index.repeat(L)].reset_index(drop=True)
        c["step"] = np.tile(res.steps.numpy(), len(combos))
        c["kl"] = res.curves.reshape(-1).numpy()
        curves.append(c)
    final = pd.concat(finals, ignore_index=True)
    is_floor = (final["target"] == "permutation") & (final["variant"] == "normalised")
    final["kl_floor"] = np.where(
        is_floor, normalised_kl_floor(n, torch.tensor(final["tau"].to_numpy())).numpy(), np.nan
    )
    final["kl_simplex"] = np.where(is_floor, simplex_kl(n, torch.tensor(final["tau"].to_numpy())).numpy(), np.nan)
    return final, pd.concat(curves, ignore_index=True)


def split_seeds(seeds: Sequence[int]) -> tuple[list[int], list[int]]:
    """Split seeds into a *selection* half and a disjoint *estimation* half.

    A setting chosen as the best on some seeds (for example the temperature with the lowest
    KL) is biased on those seeds (the winner's curse); its effect is then estimated on the
    other seeds only. The seeds are sorted; the first ``len // 2`` select, the rest estimate.

    Returns:
        ``(select, estimate)``: two disjoint sorted lists, each of at least 2 seeds.

    Raises:
        ConfigError: naming ``seeds`` for repeated seeds or fewer than 4 (an interval needs at
            least 2 seeds on the estimation side and the selection needs more than one).
    """
    seeds = sorted(int(s) for s in seeds)
    if len(set(seeds)) != len(seeds):
        raise ConfigError("seeds", f"got {seeds}; seeds must be distinct")
    if len(seeds) < 4:
        raise ConfigError(
            "seeds", f"got {len(seeds)} seeds; held-out selection needs at least 4 (2 to select, 2 to estimate)"
        )
    half = len(seeds) // 2
    return seeds[:half], seeds[half:]


def select_best(
    df: pd.DataFrame, column: str, value: str, seeds: Sequence[int], *, candidates=None, seed_column: str = "seed"
) -> float:
    """The level of ``column`` with the smallest mean ``value`` over the rows whose seed is in ``seeds``.

    Args:
        df: one row per run (e.g. :func:`run_grid`'s ``final``, already filtered to the cells
            that compete).
        column: the setting to choose (e.g. ``"tau"``).
        value: the outcome to minimise (e.g. ``"kl"``).
        seeds: the selection seeds; rows of other seeds are never looked at.
        candidates: the levels allowed (default: every level present); a level without a row
            on the selection seeds cannot be chosen.
        seed_column: the column holding the seed.

    Ties go to the first level in sorted order.

    Raises:
        ConfigError: naming ``seeds`` or ``candidates`` when no candidate has a row on the
            selection seeds, or ``column``/``value`` when a column is missing.
    """
    for name, col in (("column", column), ("value", value), ("seed_column", seed_column)):
        if col not in df.columns:
            raise ConfigError(name, f"got {col!r}; not a column of the table ({', '.join(map(str, df.columns))})")
    sel = df[df[seed_column].isin(list(seeds))]
    if candidates is not None:
        sel = sel[sel[column].isin(list(candidates))]
    means = sel.groupby(column)[value].mean().dropna().sort_index()
    if means.empty:
        raise ConfigError("seeds", f"no row of the candidates {candidates!r} on the selection seeds {list(seeds)!r}")
    return means.idxmin()


def grid_table(
    n: int, taus, head_dims, seeds, steps: int, log_every: int, lr: float, init_std: float, device: str | None = None
) -> pd.DataFrame:
    """The toy grid (:func:`run_grid`: every target, variant, ``tau``, head dimension and seed,
    learning rate ``lr``, initial weight scale ``init_std``) as one table, for the table cache
    (:func:`attnrank.runs.cache.cached`): the final rows (``table == "final"``) and the KL curves
    (``table == "curves"``); integer columns are nullable so the two kinds stack
    (:func:`attnrank.sections.target.grid` splits it)."""
    final, curves = run_grid(
        n,
        taus,
        head_dims,
        VARIANTS,
        seeds,
        TARGETS,
        steps=steps,
        lr=lr,
        init_std=init_std,
        log_every=log_every,
        device=device,
    )
    parts = []
    for name, t in (("final", final), ("curves", curves)):
        t = t.copy()
        for c in t.columns:
            if pd.api.types.is_integer_dtype(t[c]):
                t[c] = t[c].astype("Int64")
        parts.append(t.assign(table=name))
    return pd.concat(parts, ignore_index=True)


def p3_table(n: int, seeds, taus, head_dim: int, steps: int, lr: float, init_std: float) -> pd.DataFrame:
    """P3 on the sharp target: training at ``tau`` equals training at 1 with logits scaled at
    initialisation by ``1/sqrt(tau)`` and learning rate ``lr/sqrt(tau)`` (float64, Adam without
    epsilon; the control keeps ``lr`` and ``init_std``), for the table cache. Columns ``seed``, ``tau``, ``max_diff_equivalent``, ``max_diff_control``."""
    rows = []
    for seed in seeds:
        for t in taus:
            r = train_toy(
                make_target("sharp", n, seed=seed),
                head_dim,
                [t, 1.0, 1.0],
                "plain",
                seeds=[seed] * 3,
                steps=steps,
                lr=[lr, lr / math.sqrt(t), lr],
                init_std=[init_std, init_std / math.sqrt(t), init_std],
                adam_eps=0.0,
                dtype=torch.float64,
            )
            rows.append(
                dict(
                    seed=seed,
                    tau=t,
                    max_diff_equivalent=float((r.attention[0] - r.attention[1]).abs().max()),
                    max_diff_control=float((r.attention[0] - r.attention[2]).abs().max()),
                )
            )
    return pd.DataFrame(rows)
