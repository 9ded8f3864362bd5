"""Checks of the high-rank-target toy (attnrank.analysis.synthetic) and of P3, P4, P5 on it."""

from __future__ import annotations

import math

import pytest
import torch

from attnrank.analysis import synthetic as Y
from attnrank.analysis import theory as T
from attnrank.core.errors import ConfigError
from attnrank.core.rank import numerical_rank

pytestmark = pytest.mark.usefixtures("one_thread")


def test_targets_are_stochastic_with_the_intended_rank():
    n = 32
    P = Y.make_target("permutation", n, seed=1)
    assert torch.equal(P.sum(0), torch.ones(n, dtype=torch.float64))  # a permutation: columns sum to 1 too
    assert int(numerical_rank(P, rtol=1e-2)) == n
    sharp = Y.make_target("sharp", n, seed=1)
    assert int(numerical_rank(sharp, rtol=1e-2)) >= int(0.8 * n)
    assert float(sharp.amax(-1).mean()) > 0.3
    low = Y.make_target("lowrank", n, seed=1, rank=4)
    assert int(numerical_rank(low, rtol=1e-8)) == 4
    for X in (P, sharp, low):
        assert torch.allclose(X.sum(-1), torch.ones(n, dtype=torch.float64)) and bool((X >= 0).all())
    assert torch.equal(Y.make_target("sharp", n, seed=1), sharp)  # deterministic
    assert not torch.equal(Y.make_target("sharp", n, seed=2), sharp)


@pytest.mark.parametrize("variant", Y.VARIANTS)
def test_hand_written_gradients_and_adam_match_autograd_and_torch_adam(variant):
    n, d, steps = 8, 3, 4
    target = Y.make_target("sharp", n, seed=0)
    res = Y.train_toy(
        target, d, 0.7, variant, seeds=[5], steps=steps, lr=3e-2, init_std=0.8, dtype=torch.float64, log_every=1
    )
    g = torch.Generator().manual_seed(5)
    W = torch.randn(2, n, d, generator=g, dtype=torch.float64) * 0.8
    WQ = W[0].clone().unsqueeze(0).requires_grad_(True)
    WK = W[1].clone().unsqueeze(0).requires_grad_(True)
    opt = torch.optim.Adam([WQ, WK], lr=3e-2)
    ref_curve = []
    for _ in range(steps):
        opt.zero_grad()
        A = Y.toy_attention(WQ, WK, 0.7, variant)
        loss = Y.toy_kl(target.unsqueeze(0), torch.log(A)).sum()
        ref_curve.append(float(loss.detach()))
        loss.backward()
        opt.step()
    assert torch.allclose(res.WQ, WQ.detach(), atol=1e-10)
    assert torch.allclose(res.WK, WK.detach(), atol=1e-10)
    assert torch.allclose(res.curves[0, :steps], torch.tensor(ref_curve, dtype=torch.float64), atol=1e-12)


def test_P3_temperature_equals_rescaled_init_and_learning_rate():
    # (tau, sigma, eta) follows the same trajectory of A as (1, sigma/sqrt(tau), eta/sqrt(tau)) under Adam, eps=0
    tau = 0.1
    res = Y.train_toy(
        Y.make_target("sharp", 16, seed=0),
        4,
        [tau, 1.0, 1.0],
        "plain",
        seeds=[0, 0, 0],
        steps=300,
        lr=[1e-2, 1e-2 / math.sqrt(tau), 1e-2],
        init_std=[1.0, 1 / math.sqrt(tau), 1.0],
        adam_eps=0.0,
        dtype=torch.float64,
    )
    same = float((res.attention[0] - res.attention[1]).abs().max())
    control = float((res.attention[0] - res.attention[2]).abs().max())
    assert same < 1e-10
    assert control > 1e-2


def test_P4_head_dim_one_cannot_represent_a_permutation():
    n = 8
    target = Y.make_target("permutation", n, seed=3)
    res1 = Y.train_toy(target, 1, [0.1, 1.0, 3.0] * 2, "plain", seeds=[0, 0, 0, 1, 1, 1], steps=600, lr=2e-2)
    assert bool((res1.accuracy <= T.permutation_accuracy_bound(1, n) + 1e-12).all())
    assert bool((res1.accuracy == 2 / n).all())  # training reaches the ceiling exactly
    assert bool((res1.kl > 0.5).all())
    res2 = Y.train_toy(target, 2, 1.0, "plain", seeds=[0, 1, 2], steps=600, lr=2e-2)
    assert float(res2.accuracy.max()) > 2 / n  # head_dim 2 escapes the ceiling, so the check can fail


def test_P5_normalised_kl_floor_and_simplex_optimum():
    n = 12
    target = Y.make_target("permutation", n, seed=0)
    taus = [0.3, 1.0, 3.0]
    res = Y.train_toy(
        target, n, taus * 2, "normalised", seeds=[0] * 3 + [1] * 3, steps=800, lr=2e-2, dtype=torch.float64
    )
    floor = T.normalised_kl_floor(n, torch.tensor(taus * 2))
    assert bool((res.kl >= floor - 1e-9).all())
    # explicit simplex keys with q_i = k_{pi(i)} reach simplex_kl exactly
    K = torch.eye(n, dtype=torch.float64) - 1.0 / n
    perm = target.argmax(-1)
    A = Y.toy_attention(K[perm].unsqueeze(0), K.unsqueeze(0), 1.0, "normalised")
    kl = Y.toy_kl(target.unsqueeze(0), torch.log(A))
    assert float(kl) == pytest.approx(T.simplex_kl(n, 1.0), rel=1e-10)
    # at tau = 1 training finds (about) that optimum: tau is a ceiling, not a speed knob
    assert float(res.kl[1]) == pytest.approx(T.simplex_kl(n, 1.0), rel=0.02)


def test_run_grid_tables():
    final, curves = Y.run_grid(
        8,
        taus=[0.1, 1.0],
        head_dims=[1, 4],
        seeds=[0, 1],
        targets=["permutation", "lowrank"],
        steps=150,
        log_every=50,
        device="cpu",
    )
    assert len(final) == 2 * 2 * 2 * 2 * 2
    assert {
        "target",
        "variant",
        "head_dim",
        "tau",
        "seed",
        "kl",
        "init_kl",
        "rank",
        "target_rank",
        "accuracy",
        "kl_floor",
        "kl_simplex",
    } <= set(final.columns)
    assert sorted(curves["step"].unique().tolist()) == [0, 50, 100, 150]
    assert len(curves) == len(final) * 4
    plain4 = final[(final.variant == "plain") & (final.head_dim == 4)]
    assert bool((plain4.kl < plain4.init_kl).all())
    assert final.loc[final.target == "permutation", "target_rank"].eq(8).all()
    floors = final.dropna(subset=["kl_floor"])
    assert len(floors) == 2 * 2 * 2 and bool((floors.kl >= floors.kl_floor - 1e-6).all())


@pytest.mark.parametrize(
    "call, param",
    [
        (lambda: Y.make_target("circulant", 8), "kind"),
        (lambda: Y.make_target("lowrank", 8, rank=9), "rank"),
        (lambda: Y.train_toy(torch.ones(4, 4), 2, 1.0, "plain", seeds=[0]), "targets"),
        (lambda: Y.train_toy(torch.eye(4), 2, 1.0, "cosine", seeds=[0]), "variant"),
        (lambda: Y.train_toy(torch.eye(4), 0, 1.0, "plain", seeds=[0]), "head_dim"),
        (lambda: Y.train_toy(torch.eye(4), 2, -1.0, "plain", seeds=[0]), "tau"),
        (lambda: Y.train_toy(torch.eye(4), 2, [1.0, 2.0], "plain", seeds=[0]), "tau"),
        (lambda: Y.run_grid(8, taus=[]), "taus"),
        (lambda: Y.run_grid(8, variants=["plain", "flash"]), "variants"),
    ],
)
def test_bad_input_raises_config_error(call, param):
    with pytest.raises(ConfigError) as err:
        call()
    assert err.value.param == param


def test_split_seeds_is_disjoint_and_halves():
    sel, est = Y.split_seeds([5, 1, 3, 0, 2, 4])
    assert sel == [0, 1, 2] and est == [3, 4, 5]
    assert Y.split_seeds(range(5)) == ([0, 1], [2, 3, 4])
    for bad in ([0, 1, 2], [0, 0, 1, 2]):
        with pytest.raises(ConfigError) as err:
            Y.split_seeds(bad)
        assert err.value.param == "seeds"


def test_select_best_looks_only_at_the_selection_seeds():
    import pandas as pd

    # on seeds 0, 1 tau = 0.1 is best; on seeds 2, 3 tau = 0.01 is far better: a selection that
    # peeked at every seed would pick 0.01
    rows = []
    for s, kl in (
        (0, {0.01: 1.0, 0.1: 0.5}),
        (1, {0.01: 0.9, 0.1: 0.6}),
        (2, {0.01: 0.0, 0.1: 2.0}),
        (3, {0.01: 0.0, 0.1: 2.0}),
    ):
        rows += [dict(seed=s, tau=t, kl=v) for t, v in kl.items()]
    df = pd.DataFrame(rows)
    assert Y.select_best(df, "tau", "kl", [0, 1]) == 0.1
    assert Y.select_best(df, "tau", "kl", [0, 1, 2, 3]) == 0.01
    assert Y.select_best(df, "tau", "kl", [0, 1], candidates=[0.01]) == 0.01
    with pytest.raises(ConfigError) as err:
        Y.select_best(df, "tau", "kl", [7])
    assert err.value.param == "seeds"
    with pytest.raises(ConfigError) as err:
        Y.select_best(df, "temperature", "kl", [0])
    assert err.value.param == "column"
