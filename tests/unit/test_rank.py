"""Unit tests of attnrank.core.rank: numerical, study, effective and stable rank, entropy, rank_measures."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnrank.core.errors import ConfigError
from attnrank.core.rank import (
    DEFAULT_MEASURES,
    MEASURES,
    STUDY_ATOL,
    attention_entropy,
    check_measures,
    crop_to_valid,
    effective_rank,
    numerical_rank,
    rank_measures,
    singular_values,
    stable_rank,
    study_rank,
)

F64 = torch.float64


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _with_singular_values(s, seed: int = 0) -> torch.Tensor:
    """A float64 matrix U diag(s) V^T with random orthogonal U, V (known singular values)."""
    s = torch.as_tensor(s, dtype=F64)
    n = s.shape[-1]
    g = _gen(seed)
    U, _ = torch.linalg.qr(torch.randn(n, n, dtype=F64, generator=g))
    V, _ = torch.linalg.qr(torch.randn(n, n, dtype=F64, generator=g))
    return U @ torch.diag(s) @ V.T


def _low_rank(n: int, r: int, seed: int) -> torch.Tensor:
    g = _gen(seed)
    return torch.randn(n, r, dtype=F64, generator=g) @ torch.randn(r, n, dtype=F64, generator=g)


def _softmax_attention(shape, seed: int, scale: float = 1.0) -> torch.Tensor:
    return torch.softmax(scale * torch.randn(*shape, dtype=F64, generator=_gen(seed)), dim=-1)


# Singular values spread over many decades, none close to the tolerances used below.
SPREAD = [10.0, 2.0, 0.3, 0.04, 5e-3, 6e-4, 7e-5, 8e-6, 9e-10, 1e-13]


# ---------------------------------------------------------------- numerical_rank


@pytest.mark.parametrize("n,r", [(1, 1), (5, 1), (8, 3), (16, 7), (16, 16), (30, 29)])
def test_numerical_rank_of_known_low_rank_matches_numpy(n, r):
    A = _low_rank(n, r, seed=n * 100 + r)
    expected = np.linalg.matrix_rank(A.numpy())
    assert expected == r  # sanity: the construction has rank r
    assert numerical_rank(A).item() == r
    assert study_rank(A).item() == r
    assert numerical_rank(A, rtol=1e-4).item() == r


def test_zero_matrix_has_rank_zero():
    Z = torch.zeros(6, 6, dtype=F64)
    assert numerical_rank(Z).item() == 0
    assert study_rank(Z).item() == 0
    assert numerical_rank(Z, rtol=1e-2).item() == 0


@pytest.mark.parametrize(
    "atol,rtol",
    [(None, None), (1e-8, None), (1e-3, None), (0.1, None), (None, 1e-2), (None, 1e-4), (None, 1e-10), (0.0, None)],
)
def test_numerical_rank_matches_numpy_with_same_tolerance(atol, rtol):
    A = _with_singular_values(SPREAD, seed=1)
    ours = numerical_rank(A, atol=atol, rtol=rtol).item()
    if rtol is not None:
        theirs = np.linalg.matrix_rank(A.numpy(), rtol=rtol)
    else:
        theirs = np.linalg.matrix_rank(A.numpy(), tol=atol)
    assert ours == theirs
    # and both equal the count from the known singular values
    s = np.array(SPREAD)
    if atol is None and rtol is None:
        tol = s.max() * len(s) * np.finfo(np.float64).eps
    else:
        tol = atol if atol is not None else rtol * s.max()
    assert ours == int((s > tol).sum())


def test_numerical_rank_near_singular_matrices():
    # singular values 1, 1e-3, ..., 1e-15: each decade of tolerance drops exactly one
    s = [10.0**-k for k in range(0, 16, 3)]  # 1, 1e-3, 1e-6, 1e-9, 1e-12, 1e-15
    A = _with_singular_values(s, seed=2)
    assert study_rank(A).item() == 3  # 1, 1e-3, 1e-6 exceed 1e-8; 1e-9 does not
    assert numerical_rank(A, atol=1e-10).item() == 4
    assert numerical_rank(A, atol=1e-13).item() == 5
    assert numerical_rank(A, rtol=1e-2).item() == 1
    assert numerical_rank(A, rtol=1e-4).item() == 2
    # numpy's default tolerance (sigma_1 * n * eps ~ 1.3e-15) keeps 1e-12 but not 1e-15
    assert numerical_rank(A).item() == np.linalg.matrix_rank(A.numpy()) == 5
    for tol in (1e-2, 1e-5, 1e-8, 1e-11, 1e-14):
        assert numerical_rank(A, atol=tol).item() == np.linalg.matrix_rank(A.numpy(), tol=tol)
        assert numerical_rank(A, rtol=tol).item() == np.linalg.matrix_rank(A.numpy(), rtol=tol)


def test_numerical_rank_batched_matches_numpy_and_per_matrix():
    n = 9
    ranks = torch.tensor([[1, 2, 3], [5, 8, 9]])
    A = torch.stack(
        [torch.stack([_low_rank(n, int(r), seed=10 * i + j) for j, r in enumerate(row)]) for i, row in enumerate(ranks)]
    )
    assert A.shape == (2, 3, n, n)
    for kwargs, np_kwargs in [({}, {}), ({"atol": 1e-8}, {"tol": 1e-8}), ({"rtol": 1e-6}, {"rtol": 1e-6})]:
        got = numerical_rank(A, **kwargs)
        assert got.shape == (2, 3)
        assert got.dtype == torch.int64
        assert torch.equal(got, ranks)
        assert np.array_equal(got.numpy(), np.linalg.matrix_rank(A.numpy(), **np_kwargs))
        for i in range(2):
            for j in range(3):
                assert numerical_rank(A[i, j], **kwargs).item() == got[i, j].item()


def test_atol_rtol_semantics_max_of_both():
    A = _with_singular_values(SPREAD, seed=3)
    s = torch.tensor(SPREAD, dtype=F64)
    # rtol is relative to sigma_1 = 10
    assert numerical_rank(A, rtol=1e-2).item() == int((s > 0.1).sum()) == 3
    assert numerical_rank(A, atol=1e-2).item() == int((s > 0.01).sum()) == 4
    # both given: the larger tolerance wins
    assert numerical_rank(A, atol=1e-2, rtol=1e-2).item() == 3  # max(0.01, 0.1)
    assert numerical_rank(A, atol=0.5, rtol=1e-4).item() == 2  # max(0.5, 1e-3)
    assert numerical_rank(A, atol=1e-6, rtol=1e-4).item() == int((s > 1e-3).sum()) == 5
    # a zero tolerance counts every strictly positive singular value
    assert numerical_rank(A, atol=0.0).item() == numerical_rank(A, rtol=0.0).item() == 10
    # rtol scales with the matrix, atol does not
    for c in (1e-3, 1e3):
        assert numerical_rank(c * A, rtol=1e-2).item() == 3
    assert numerical_rank(1e-3 * A, atol=5e-3).item() == int((1e-3 * s > 5e-3).sum()) == 1


def test_threshold_is_strict():
    D = torch.diag(torch.tensor([1.0, 0.5, 0.25], dtype=F64))
    assert numerical_rank(D, atol=0.25).item() == 2
    assert numerical_rank(D, atol=0.2499).item() == 3
    assert numerical_rank(D, rtol=0.5).item() == 1


@pytest.mark.parametrize(
    "kw,param", [({"atol": -1e-8}, "atol"), ({"rtol": -0.1}, "rtol"), ({"rtol": float("nan")}, "rtol")]
)
def test_bad_tolerance_raises_config_error(kw, param):
    with pytest.raises(ConfigError) as err:
        numerical_rank(torch.eye(3), **kw)
    assert err.value.param == param


@pytest.mark.parametrize("bad", [torch.ones(3, 4), torch.ones(5), np.eye(3)])
def test_non_square_input_raises(bad):
    with pytest.raises(ConfigError) as err:
        numerical_rank(bad)
    assert err.value.param == "A"


def test_singular_values_are_float64_and_sorted():
    A = _with_singular_values(SPREAD, seed=4).float()
    sv = singular_values(A)
    assert sv.dtype == F64
    assert torch.all(sv[:-1] >= sv[1:])
    assert singular_values(A, dtype=torch.float32).dtype == torch.float32


# ---------------------------------------------------------------- the study's rule and float32


def test_study_rank_is_absolute_1e8_in_float64():
    assert STUDY_ATOL == 1e-8
    A = _with_singular_values([1.0, 0.5, 2e-8, 5e-9, 1e-12], seed=5)
    assert study_rank(A).item() == 3
    assert study_rank(A.float()).item() == study_rank(A.float().double()).item()
    assert rank_measures(A, measures=["rank_atol_1e-8"])["rank_atol_1e-8"].item() == 3
    # absolute: scaling the matrix changes the study rank
    assert study_rank(1e3 * A).item() == 4
    assert study_rank(1e-9 * A).item() == 0


def test_uniform_attention_has_study_rank_one_in_float64_and_float32():
    for n in (7, 32, 100):
        U = torch.full((n, n), 1.0 / n, dtype=F64)
        assert study_rank(U).item() == 1
        # all entries equal, so rounding to float32 keeps it exactly rank one
        assert study_rank(U.float()).item() == 1
        assert numerical_rank(U).item() == 1
        assert effective_rank(U).item() == pytest.approx(1.0, abs=1e-9)
        assert stable_rank(U).item() == pytest.approx(1.0, abs=1e-12)
        assert attention_entropy(U).item() == pytest.approx(math.log(n), abs=1e-12)


def test_float32_rounding_noise_is_counted_by_the_absolute_rule():
    n = 32
    g = _gen(6)
    A = torch.randn(n, 1, dtype=F64, generator=g) @ torch.randn(1, n, dtype=F64, generator=g)  # rank one
    assert study_rank(A).item() == 1
    A32 = A.float().double()  # float32 input, measured in float64
    assert study_rank(A32).item() > 1
    # a float32 SVD of the exact float64 matrix is no better
    assert numerical_rank(A, atol=STUDY_ATOL, dtype=torch.float32).item() > 1
    # a relative tolerance above float32 resolution is immune to the noise
    assert numerical_rank(A32, rtol=1e-4).item() == 1
    assert numerical_rank(A, rtol=1e-4, dtype=torch.float32).item() == 1


def test_float32_noise_inflates_study_rank_of_row_stochastic_matrix():
    # rank-two attention-like matrix: every row a mixture of two distributions p and q
    n = 64
    g = _gen(7)
    p = torch.softmax(torch.randn(n, dtype=F64, generator=g), 0)
    q = torch.softmax(torch.randn(n, dtype=F64, generator=g), 0)
    w = torch.rand(n, 1, dtype=F64, generator=g)
    M = w * p + (1 - w) * q
    assert torch.allclose(M.sum(-1), torch.ones(n, dtype=F64))
    assert study_rank(M).item() == 2
    assert study_rank(M.float()).item() > 2
    assert numerical_rank(M.float(), rtol=1e-4).item() == 2
    out = rank_measures(M.float(), measures=["rank_atol_1e-8", "rank_rtol_1e-4"])
    assert out["rank_atol_1e-8"].item() > 2
    assert out["rank_rtol_1e-4"].item() == 2


# ---------------------------------------------------------------- effective / stable rank, entropy


@pytest.mark.parametrize("n", [1, 2, 5, 16, 64])
def test_effective_and_stable_rank_of_identity_is_n(n):
    eye = torch.eye(n, dtype=F64)
    assert effective_rank(eye).item() == pytest.approx(n, rel=1e-12)
    assert stable_rank(eye).item() == pytest.approx(n, rel=1e-12)
    assert effective_rank(3.5 * eye).item() == pytest.approx(n, rel=1e-12)
    # a float32 identity too
    assert effective_rank(torch.eye(n)).item() == pytest.approx(n, rel=1e-6)


@pytest.mark.parametrize("n", [2, 5, 16, 64])
def test_effective_and_stable_rank_of_rank_one_is_one(n):
    A = _low_rank(n, 1, seed=n)
    assert effective_rank(A).item() == pytest.approx(1.0, abs=1e-9)
    assert stable_rank(A).item() == pytest.approx(1.0, abs=1e-12)


def test_effective_and_stable_rank_known_values():
    # singular values (3, 1): p = (3/4, 1/4); stable rank = (9 + 1) / 9
    A = _with_singular_values([3.0, 1.0], seed=8)
    H = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert effective_rank(A).item() == pytest.approx(math.exp(H), rel=1e-12)
    assert stable_rank(A).item() == pytest.approx(10 / 9, rel=1e-12)
    # a batch [2, 3, n, n] keeps its leading shape
    B = torch.stack([torch.eye(4, dtype=F64), _low_rank(4, 1, 0), torch.diag(torch.tensor([1.0, 1, 0, 0], dtype=F64))])
    B = torch.stack([B, 2 * B])
    assert effective_rank(B).shape == stable_rank(B).shape == (2, 3)
    assert torch.allclose(effective_rank(B), torch.tensor([[4.0, 1, 2]] * 2, dtype=F64), atol=1e-9)
    assert torch.allclose(stable_rank(B), torch.tensor([[4.0, 1, 2]] * 2, dtype=F64), atol=1e-12)


def test_effective_and_stable_rank_of_zero_matrix_are_finite():
    Z = torch.zeros(4, 4, dtype=F64)
    assert torch.isfinite(effective_rank(Z)).all()
    assert torch.isfinite(stable_rank(Z)).all()
    assert stable_rank(Z).item() == 0.0


@pytest.mark.parametrize("n", [1, 3, 10, 128])
def test_entropy_uniform_rows_is_log_n_and_one_hot_is_zero(n):
    U = torch.full((2, n, n), 1.0 / n)
    assert torch.allclose(attention_entropy(U), torch.full((2,), math.log(n), dtype=F64), atol=1e-6)
    P = torch.eye(n)[torch.randperm(n, generator=_gen(n))]
    assert attention_entropy(P).item() == 0.0
    # one-hot rows that repeat a column (rank < n) still have entropy 0
    H = torch.zeros(n, n)
    H[:, 0] = 1
    assert attention_entropy(H).item() == 0.0


def test_entropy_mixed_rows_and_zero_rows_left_out():
    A = torch.tensor([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]], dtype=F64)
    # rows: log 2, 0, (all-zero row is left out of the mean)
    assert attention_entropy(A).item() == pytest.approx(math.log(2) / 2, rel=1e-12)
    causal = torch.tril(torch.ones(4, 4, dtype=F64))
    causal = causal / causal.sum(-1, keepdim=True)
    expected = sum(math.log(k) for k in range(1, 5)) / 4
    assert attention_entropy(causal).item() == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------------------------- rank_measures


def _individual(A: torch.Tensor) -> dict[str, torch.Tensor]:
    return {
        "rank_atol_1e-8": study_rank(A).double(),
        "rank_rtol_1e-2": numerical_rank(A, rtol=1e-2).double(),
        "rank_rtol_1e-4": numerical_rank(A, rtol=1e-4).double(),
        "effective_rank": effective_rank(A),
        "stable_rank": stable_rank(A),
        "attention_entropy": attention_entropy(A),
    }


def test_measure_registry():
    assert (
        set(DEFAULT_MEASURES)
        == set(MEASURES)
        == {"rank_atol_1e-8", "rank_rtol_1e-2", "rank_rtol_1e-4", "effective_rank", "stable_rank", "attention_entropy"}
    )
    assert MEASURES["rank_atol_1e-8"].atol == STUDY_ATOL and MEASURES["rank_atol_1e-8"].rtol is None
    assert MEASURES["rank_rtol_1e-2"].rtol == 1e-2 and MEASURES["rank_rtol_1e-2"].atol is None
    assert MEASURES["rank_rtol_1e-4"].rtol == 1e-4
    assert check_measures("stable_rank") == ("stable_rank",)


@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_rank_measures_equal_individual_functions(dtype):
    # [layers, batch, heads, n, n] with a mix of sharp and flat attention
    A = torch.cat([_softmax_attention((1, 2, 3, 12, 12), seed=9, scale=s) for s in (0.01, 1.0, 20.0)]).to(dtype)
    out = rank_measures(A)
    ref = _individual(A)
    assert set(out) == set(DEFAULT_MEASURES)
    for m in DEFAULT_MEASURES:
        assert out[m].dtype == F64, m
        assert out[m].shape == A.shape[:-2], m
        assert torch.allclose(out[m], ref[m], rtol=1e-12, atol=1e-12), m
    # the flat (scale 0.01) layer has a lower relative rank than the sharp one
    assert out["rank_rtol_1e-2"][0].max() < out["rank_rtol_1e-2"][2].min()


def test_rank_measures_subset_and_order():
    A = _softmax_attention((2, 6, 6), seed=10)
    out = rank_measures(A, measures=("stable_rank", "rank_rtol_1e-2"))
    assert list(out) == ["stable_rank", "rank_rtol_1e-2"]
    assert torch.allclose(out["stable_rank"], stable_rank(A))
    ent = rank_measures(A, measures="attention_entropy")
    assert list(ent) == ["attention_entropy"]
    assert torch.allclose(ent["attention_entropy"], attention_entropy(A))


@pytest.mark.parametrize("bad", [["rank"], "effective", ["stable_rank", "nope"], []])
def test_unknown_measure_raises_config_error_naming_measures(bad):
    with pytest.raises(ConfigError) as err:
        rank_measures(torch.eye(3), measures=bad)
    assert err.value.param == "measures"
    assert "measures" in str(err.value)
    assert "allowed values" in str(err.value) and "effective_rank" in str(err.value)


def _padded_batch(lengths, n, layers=2, heads=3, seed=11):
    """Attention [layers, batch, heads, n, n] like HF's: padded key columns masked, padded query rows not."""
    g = _gen(seed)
    mask = torch.zeros(len(lengths), n, dtype=torch.long)
    for b, L in enumerate(lengths):
        mask[b, :L] = 1
    logits = 3.0 * torch.randn(layers, len(lengths), heads, n, n, dtype=F64, generator=g)
    key_ok = mask.bool()[None, :, None, None, :]
    A = torch.softmax(logits.masked_fill(~key_ok, float("-inf")), dim=-1)
    return A, mask


@pytest.mark.parametrize("heads", [3, 4])  # heads == batch size must not confuse the batch dimension
def test_rank_measures_with_mask_crops_each_matrix_to_its_tokens(heads):
    n = 10
    lengths = [10, 6, 3, 6]  # mixed lengths, one repeated pattern, one unpadded
    A, mask = _padded_batch(lengths, n, heads=heads)  # [layers, batch, heads, n, n], the probe's layout
    out = rank_measures(A, attention_mask=mask)
    for m in DEFAULT_MEASURES:
        assert out[m].shape == A.shape[:-2]
    for layer in range(A.shape[0]):
        for b, L in enumerate(lengths):
            for h in range(A.shape[2]):
                direct = _individual(A[layer, b, h, :L, :L])
                cropped = crop_to_valid(A[layer, b, h], mask[b].bool())
                assert torch.equal(cropped, A[layer, b, h, :L, :L])
                for m in DEFAULT_MEASURES:
                    assert out[m][layer, b, h].item() == pytest.approx(direct[m].item(), rel=1e-12, abs=1e-12), (m, b)
    assert out["rank_rtol_1e-4"][:, 2].max().item() <= 3
    # uncropped, the padded query rows change every continuous measure of a short sequence
    uncropped = rank_measures(A)
    for m in ("effective_rank", "stable_rank", "attention_entropy"):
        assert (uncropped[m][:, 2] - out[m][:, 2]).abs().min() > 1e-3, m
    # the unpadded sequence is unchanged by the mask
    for m in DEFAULT_MEASURES:
        assert torch.allclose(out[m][:, 0], uncropped[m][:, 0], rtol=1e-12)


def test_rank_measures_mask_with_non_contiguous_tokens_and_batch_dim():
    n = 6
    g = _gen(12)
    A = torch.softmax(torch.randn(2, 2, n, n, dtype=F64, generator=g), -1)  # [batch, heads, n, n]
    mask = torch.tensor([[1, 0, 1, 1, 0, 1], [0, 0, 1, 1, 1, 1]])  # left padding and holes
    out = rank_measures(A, attention_mask=mask, batch_dim=0, measures=["effective_rank", "stable_rank"])
    for b in range(2):
        idx = mask[b].nonzero().flatten()
        for h in range(2):
            sub = A[b, h][idx][:, idx]
            assert out["effective_rank"][b, h].item() == pytest.approx(effective_rank(sub).item(), rel=1e-12)
            assert out["stable_rank"][b, h].item() == pytest.approx(stable_rank(sub).item(), rel=1e-12)


def test_rank_measures_all_ones_mask_equals_no_mask():
    A, _ = _padded_batch([8, 8], 8)
    with_mask = rank_measures(A, attention_mask=torch.ones(2, 8, dtype=torch.long))
    without = rank_measures(A)
    for m in DEFAULT_MEASURES:
        assert torch.equal(with_mask[m], without[m])


def test_rank_measures_mask_of_wrong_shape_raises():
    A, mask = _padded_batch([5, 3], 5)
    with pytest.raises(ConfigError) as err:
        rank_measures(A, attention_mask=mask[:, :4])
    assert err.value.param == "attention_mask"
    with pytest.raises(ConfigError) as err:
        rank_measures(A, attention_mask=torch.tensor([[1, 1, 1, 0, 0]] * 3))
    assert err.value.param == "attention_mask"


@pytest.mark.parametrize("batch_dim", [-2, -1, 3, 4, 5, -6])
def test_rank_measures_batch_dim_must_be_a_leading_dimension(batch_dim):
    A, mask = _padded_batch([5, 3], 5)  # 5-d
    with pytest.raises(ConfigError) as err:
        rank_measures(A, attention_mask=mask, batch_dim=batch_dim)
    assert err.value.param == "batch_dim"


def test_rank_measures_explicit_batch_dim_equals_default_for_probe_layout():
    A, mask = _padded_batch([5, 3, 4], 5, heads=2)
    a = rank_measures(A, attention_mask=mask)
    b = rank_measures(A, attention_mask=mask, batch_dim=1)
    c = rank_measures(A[0], attention_mask=mask, batch_dim=0)  # one layer: [batch, heads, n, n]
    for m in DEFAULT_MEASURES:
        assert torch.equal(a[m], b[m])
        assert torch.equal(a[m][0], c[m])


def test_threaded_singular_values_equal_one_batched_call():
    from attnrank.core.rank import singular_values

    A = torch.softmax(
        torch.randn(3, 50, 16, 16, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 3, -1
    )
    assert torch.equal(singular_values(A), torch.linalg.svdvals(A))


def test_a_measure_of_a_kind_without_a_formula_raises_instead_of_storing_another(monkeypatch):
    """One dispatch from kind to formula (`spectrum_measure`): a measure added to the registry with a kind no
    formula computes raises, naming `measures`, on both paths (the matrix and its singular values)."""
    from attnrank.analysis import spectra
    from attnrank.core import rank
    from attnrank.core.measures import Measure

    monkeypatch.setitem(rank.MEASURES, "nuclear_rank", Measure("nuclear_rank", "nuclear"))
    A = torch.softmax(torch.randn(4, 4, dtype=F64, generator=_gen(3)), -1)
    for compute in (
        lambda: rank_measures(A, measures=["nuclear_rank"]),
        lambda: spectra.measures_from_singular_values(singular_values(A), measures=["nuclear_rank"]),
    ):
        with pytest.raises(ConfigError) as err:
            compute()
        assert err.value.param == "measures" and "'nuclear_rank' (kind 'nuclear')" in str(err.value)
    assert rank.spectrum_measure(
        singular_values(torch.eye(5, dtype=F64)), MEASURES["effective_rank"]
    ).item() == pytest.approx(5.0)
