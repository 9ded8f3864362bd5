"""Property tests (hypothesis) of the rank measures: permutation and scale invariance, bounds, monotonicity.

Numerical ranks are counts of singular values above a tolerance; a permuted or scaled
matrix has the same singular values only up to rounding, so a singular value lying within
rounding of the tolerance could flip the count. Such draws are discarded with ``assume``
(they are vanishingly rare: the matrices below have singular values either O(1) or at
rounding level).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from attnrank.core.rank import (
    DEFAULT_MEASURES,
    MEASURES,
    attention_entropy,
    effective_rank,
    numerical_rank,
    rank_measures,
    singular_values,
    stable_rank,
)

SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
RANK_MEASURES = [m for m in DEFAULT_MEASURES if MEASURES[m].kind == "numerical"]
RELATIVE = ["rank_rtol_1e-2", "rank_rtol_1e-4", "effective_rank", "stable_rank"]


@st.composite
def matrices(draw, min_n=1, max_n=9, attention_only=False):
    """A float64 n x n matrix: softmax attention (plain or causal), Gaussian, or exactly low rank."""
    n = draw(st.integers(min_n, max_n))
    seed = draw(st.integers(0, 2**32 - 1))
    kinds = ["attention", "causal"] if attention_only else ["attention", "causal", "gaussian", "low_rank", "sparse"]
    kind = draw(st.sampled_from(kinds))
    rng = np.random.default_rng(seed)
    if kind in ("attention", "causal"):
        scale = draw(st.sampled_from([0.01, 0.3, 1.0, 3.0, 30.0]))
        logits = torch.from_numpy(scale * rng.standard_normal((n, n)))
        if kind == "causal":
            logits = logits.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
        return torch.softmax(logits, dim=-1)
    if kind == "gaussian":
        return torch.from_numpy(rng.standard_normal((n, n)))
    if kind == "low_rank":
        r = draw(st.integers(0, n))
        return torch.from_numpy(rng.standard_normal((n, r)) @ rng.standard_normal((r, n)))
    # a few non-zero entries (repeated columns, zero rows)
    A = np.zeros((n, n))
    for _ in range(draw(st.integers(1, 2 * n))):
        A[rng.integers(n), rng.integers(n)] = rng.uniform(0.1, 1.0)
    return torch.from_numpy(A)


def _clear_of_thresholds(A: torch.Tensor, scale: float = 1.0) -> bool:
    """No singular value of ``A`` (or ``scale * A``) is within rounding of a numerical-rank tolerance."""
    sv = singular_values(A)
    s1 = sv[0].item()
    slack = 1e-10 * max(s1, 1.0) + 1e-12
    for m in RANK_MEASURES:
        for c in {1.0, scale}:
            tol = max(MEASURES[m].atol or 0.0, (MEASURES[m].rtol or 0.0) * c * s1) / c
            if tol > 0 and ((sv - tol).abs() < slack).any():
                return False
    return True


def _assert_same(a: dict, b: dict, measures) -> None:
    for m in measures:
        x, y = a[m].item(), b[m].item()
        if MEASURES[m].kind == "numerical":
            assert x == y, (m, x, y)
        else:
            assert math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12), (m, x, y)


def _measures_for(A: torch.Tensor) -> tuple[str, ...]:
    """Every measure; the entropy only for non-negative matrices (it is NaN for negative entries)."""
    if bool((A >= 0).all()):
        return DEFAULT_MEASURES
    return tuple(m for m in DEFAULT_MEASURES if m != "attention_entropy")


def _perm(n: int, seed: int) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).permutation(n))


# ---------------------------------------------------------------- permutations


@SETTINGS
@given(A=matrices(), seed=st.integers(0, 2**32 - 1))
def test_measures_invariant_under_simultaneous_permutation(A, seed):
    assume(_clear_of_thresholds(A))
    p = _perm(A.shape[0], seed)
    ms = _measures_for(A)
    _assert_same(rank_measures(A, measures=ms), rank_measures(A[p][:, p], measures=ms), ms)


@SETTINGS
@given(A=matrices(), seed=st.integers(0, 2**32 - 1))
def test_measures_invariant_under_row_permutation(A, seed):
    assume(_clear_of_thresholds(A))
    p = _perm(A.shape[0], seed)
    ms = _measures_for(A)
    _assert_same(rank_measures(A, measures=ms), rank_measures(A[p], measures=ms), ms)


@SETTINGS
@given(A=matrices(), seed=st.integers(0, 2**32 - 1))
def test_measures_invariant_under_column_permutation(A, seed):
    assume(_clear_of_thresholds(A))
    p = _perm(A.shape[0], seed)
    ms = _measures_for(A)
    _assert_same(rank_measures(A, measures=ms), rank_measures(A[:, p], measures=ms), ms)


@SETTINGS
@given(A=matrices(min_n=2), seed=st.integers(0, 2**32 - 1))
def test_masked_measures_invariant_under_permutation_of_the_valid_tokens(A, seed):
    """Cropping commutes with a permutation of the real tokens."""
    n = A.shape[0]
    mask = torch.zeros(1, n, dtype=torch.long)
    mask[0, : max(1, n // 2 + 1)] = 1
    L = int(mask.sum())
    sub = A[:L, :L]
    assume(_clear_of_thresholds(sub))
    p = torch.cat([_perm(L, seed), torch.arange(L, n)])
    ms = _measures_for(A)
    a = rank_measures(A[None, None], attention_mask=mask, measures=ms, batch_dim=0)
    b = rank_measures(A[p][:, p][None, None], attention_mask=mask, measures=ms, batch_dim=0)
    c = rank_measures(sub, measures=ms)
    _assert_same({k: v[0, 0] for k, v in a.items()}, {k: v[0, 0] for k, v in b.items()}, ms)
    _assert_same({k: v[0, 0] for k, v in a.items()}, c, ms)


# ---------------------------------------------------------------- positive scaling


@SETTINGS
@given(A=matrices(), log_c=st.floats(-6, 6))
def test_relative_measures_invariant_under_positive_scaling(A, log_c):
    c = 10.0**log_c
    assume(_clear_of_thresholds(A, scale=c))
    a, b = rank_measures(A, measures=RELATIVE), rank_measures(c * A, measures=RELATIVE)
    _assert_same(a, b, RELATIVE)
    for rtol in (1e-1, 1e-3, 1e-6):
        sv = singular_values(A)
        assume(not ((sv - rtol * sv[0]).abs() < 1e-10 * sv[0]).any())
        assert numerical_rank(A, rtol=rtol).item() == numerical_rank(c * A, rtol=rtol).item()


@SETTINGS
@given(A=matrices(), log_c=st.floats(1, 10))
def test_absolute_rank_does_not_decrease_when_scaled_up(A, log_c):
    """The study's absolute rule is not scale-invariant: scaling up can only add singular values above 1e-8."""
    c = 10.0**log_c
    assume(_clear_of_thresholds(A, scale=c))
    a = rank_measures(A, measures=["rank_atol_1e-8"])["rank_atol_1e-8"].item()
    b = rank_measures(c * A, measures=["rank_atol_1e-8"])["rank_atol_1e-8"].item()
    assert b >= a


# ---------------------------------------------------------------- bounds


@SETTINGS
@given(A=matrices())
def test_all_measures_bounded_by_n(A):
    n = A.shape[0]
    out = rank_measures(A, measures=_measures_for(A))
    for m in RANK_MEASURES:
        assert 0 <= out[m].item() <= n
        assert float(out[m].item()).is_integer()
    assert 0 <= numerical_rank(A).item() <= n
    assert 0 <= numerical_rank(A, atol=0.0).item() <= n
    nonzero = bool((A != 0).any())
    if nonzero:
        assert 1.0 - 1e-9 <= out["effective_rank"].item() <= n + 1e-9
        assert 1.0 - 1e-9 <= out["stable_rank"].item() <= n + 1e-9
        # stable rank never exceeds the exact rank (here: the count of non-negligible singular values)
        assert out["stable_rank"].item() <= numerical_rank(A).item() + 1e-9
        assert out["rank_rtol_1e-2"].item() >= 1
    else:
        assert out["rank_atol_1e-8"].item() == out["rank_rtol_1e-2"].item() == 0
    # tighter relative tolerance, at least as many singular values
    assert out["rank_rtol_1e-4"].item() >= out["rank_rtol_1e-2"].item()


@SETTINGS
@given(A=matrices(attention_only=True))
def test_attention_entropy_bounds_and_rank_of_attention(A):
    n = A.shape[0]
    H = attention_entropy(A).item()
    assert -1e-12 <= H <= math.log(n) + 1e-9
    # rows sum to one: sigma_1 >= 1, so every attention matrix has rank >= 1 by every measure
    assert singular_values(A)[0].item() >= 1 - 1e-12
    out = rank_measures(A)
    assert out["rank_atol_1e-8"].item() >= 1 and out["rank_rtol_1e-2"].item() >= 1
    assert out["attention_entropy"].item() == H


# ---------------------------------------------------------------- monotonicity


@SETTINGS
@given(A=matrices(), t=st.lists(st.floats(-16, 1), min_size=2, max_size=2))
def test_numerical_rank_non_increasing_in_rtol(A, t):
    lo, hi = sorted(10.0**x for x in t)
    assert numerical_rank(A, rtol=lo).item() >= numerical_rank(A, rtol=hi).item()
    assert numerical_rank(A, rtol=0.0).item() >= numerical_rank(A, rtol=lo).item()
    assert numerical_rank(A, rtol=1.0).item() == 0


@SETTINGS
@given(A=matrices(), t=st.lists(st.floats(-16, 2), min_size=2, max_size=2))
def test_numerical_rank_non_increasing_in_atol(A, t):
    lo, hi = sorted(10.0**x for x in t)
    assert numerical_rank(A, atol=lo).item() >= numerical_rank(A, atol=hi).item()
    assert numerical_rank(A, atol=singular_values(A)[0].item()).item() == 0


@SETTINGS
@given(A=matrices(), a=st.floats(-16, 1), r=st.floats(-16, 0))
def test_combined_tolerance_is_the_larger_one(A, a, r):
    atol, rtol = 10.0**a, 10.0**r
    both = numerical_rank(A, atol=atol, rtol=rtol).item()
    assert both == min(numerical_rank(A, atol=atol).item(), numerical_rank(A, rtol=rtol).item())
    sv = singular_values(A)
    assert both == int((sv > max(atol, rtol * sv[0].item())).sum())


@SETTINGS
@given(A=matrices(max_n=6), B=matrices(max_n=6))
def test_batched_measures_equal_per_matrix(A, B):
    n = min(A.shape[0], B.shape[0])
    A, B = A[:n, :n].contiguous(), B[:n, :n].contiguous()
    assume(_clear_of_thresholds(A) and _clear_of_thresholds(B))
    ms = tuple(m for m in _measures_for(A) if m in _measures_for(B))
    batch = rank_measures(torch.stack([A, B]), measures=ms)
    _assert_same({k: v[0] for k, v in batch.items()}, rank_measures(A, measures=ms), ms)
    _assert_same({k: v[1] for k, v in batch.items()}, rank_measures(B, measures=ms), ms)
    assert torch.equal(batch["stable_rank"], stable_rank(torch.stack([A, B])))
    assert torch.allclose(batch["effective_rank"], effective_rank(torch.stack([A, B])))
