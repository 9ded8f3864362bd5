"""Checks of the propositions in attnrank.analysis.theory on random instances with fixed seeds.

Each proposition is a bound or an identity; a violated bound fails the test.
"""

from __future__ import annotations

import math

import pytest
import torch

from attnrank.analysis import theory as T
from attnrank.core.errors import ConfigError
from attnrank.core.rank import numerical_rank, singular_values, study_rank

pytestmark = pytest.mark.usefixtures("one_thread")


def _logits(n, d, samples, seed):
    return T.sample_logits(n, d, samples, generator=torch.Generator().manual_seed(seed))


# --------------------------------------------------------------------------- hardmax
def test_hardmax_rank_small_known_cases():
    S = torch.tensor([[3.0, 1.0, 0.0], [0.0, 2.0, 1.0], [5.0, 0.0, 0.0]])
    hr = T.hardmax_rank(S)
    assert hr.argmax.tolist() == [0, 1, 0]
    assert int(hr.rank) == 2 and int(hr.ties) == 0
    # causal: row 0 only sees column 0; row 1 sees {0, 1}
    hc = T.hardmax_rank(torch.tensor([[0.0, 9.0, 9.0], [1.0, 0.0, 9.0], [0.0, 0.0, 1.0]]), causal=True)
    assert hc.argmax.tolist() == [0, 0, 2] and int(hc.rank) == 2
    assert int(T.hardmax_rank(torch.eye(5)).rank) == 5


def test_hardmax_ties_are_reported_or_raised():
    S = torch.tensor([[1.0, 1.0, 0.0], [0.0, 2.0, 1.0], [0.0, 0.0, 3.0]])
    hr = T.hardmax_rank(S)
    assert int(hr.ties) == 1
    with pytest.raises(ConfigError, match="^S:"):
        T.hardmax_rank(S, on_tie="raise")
    # a tied row has no hardmax limit: the certificate must refuse it
    assert not bool(T.hardmax_gap_bound(S, 1e-6).sufficient)
    assert float(T.hardmax_threshold(S)) == 0.0


@pytest.mark.parametrize("head_dim", [1, 2, 4, 16])
def test_hardmax_limit_matches_numerical_rank_at_tiny_tau(head_dim):
    S = _logits(32, head_dim, 24, seed=head_dim)
    hr = T.hardmax_rank(S)
    assert int(hr.ties.sum()) == 0
    A = T.softmax_attention(S, 1e-5)
    assert torch.equal(numerical_rank(A, rtol=1e-2), hr.rank)
    assert torch.equal(study_rank(A), hr.rank)
    if head_dim == 1:  # argmax is always the largest or the smallest key (P4)
        assert int(hr.rank.max()) <= 2


def test_causal_hardmax_limit():
    S = _logits(24, 4, 16, seed=3)
    A = T.softmax_attention(S, 1e-5, causal=True)
    assert torch.equal(numerical_rank(A, rtol=1e-2), T.hardmax_rank(S, causal=True).rank)


def test_gap_bound_dominates_distance_and_certifies_rank():
    S = _logits(40, 8, 12, seed=11)
    hr = T.hardmax_rank(S)
    H = torch.zeros_like(S).scatter_(-1, hr.argmax.unsqueeze(-1), 1.0)
    checked = violations = certified = 0
    for tau in torch.logspace(-5, 0, 21).tolist():
        gb = T.hardmax_gap_bound(S, tau, eps=1e-2)
        A = T.softmax_attention(S, tau)
        dist = torch.linalg.matrix_norm(A - H, ord=2)
        violations += int((dist > gb.Delta * (1 + 1e-12) + 1e-15).sum())
        ranks = numerical_rank(A, rtol=1e-2)
        violations += int((gb.sufficient & (ranks != hr.rank)).sum())
        certified += int(gb.sufficient.sum())
        checked += S.shape[0]
    assert violations == 0
    assert 0 < certified < checked  # the certificate is neither vacuous nor trivially always true


def test_predicted_threshold_is_below_measured_threshold():
    S = _logits(48, 8, 16, seed=5)
    r_H = T.hardmax_rank(S).rank
    tau_pred = T.hardmax_threshold(S, eps=1e-2)
    taus = torch.logspace(-6, 1, 71, dtype=torch.float64)
    ranks = torch.stack([numerical_rank(T.softmax_attention(S, float(t)), rtol=1e-2) for t in taus], -1)
    tau_meas = T.measured_threshold(taus, ranks, r_H)
    # every grid temperature at or below the prediction must give the hardmax rank
    below = taus.unsqueeze(0) <= tau_pred.unsqueeze(-1)
    assert int((below & (ranks != r_H.unsqueeze(-1))).sum()) == 0
    assert bool((tau_pred > 0).all())
    assert bool((tau_pred <= tau_meas * 10 ** (7 / 70) + 1e-300).all())
    # Delta >= sqrt(2) exp(-g / tau) caps the prediction by the smallest gap
    g = T.top_gap(S)
    assert bool((tau_pred <= g / math.log(math.sqrt(2) / 1e-2) * (1 + 1e-9)).all())
    # the certificate holds at the prediction itself
    for i in range(S.shape[0]):
        A = T.softmax_attention(S[i], float(tau_pred[i]))
        assert int(numerical_rank(A, rtol=1e-2)) == int(r_H[i])


def test_new_column_gap():
    S = torch.tensor([[3.0, 2.5, 0.0], [0.0, 2.0, 1.0], [4.0, 0.0, 1.0]])
    # used columns {0, 1}; unused column 2: gaps 3, 1, 3 -> 1; the top-1 minus top-2 gap is 0.5
    assert float(T.new_column_gap(S)) == 1.0 and float(T.top_gap(S)) == 0.5
    R = _logits(32, 4, 20, seed=8)
    assert bool((T.new_column_gap(R) >= T.top_gap(R)).all())


def test_measured_threshold_on_a_hand_example():
    taus = [0.1, 0.2, 0.4, 0.8]
    ranks = torch.tensor([[5, 5, 4, 5], [4, 5, 5, 5], [5, 5, 5, 5]])
    out = T.measured_threshold(taus, ranks, torch.tensor([5, 5, 5]))
    assert out.tolist() == [0.2, 0.0, 0.8]


# ------------------------------------------------------------------------------- P1
def test_taylor_terms_and_blocks():
    assert [T.taylor_terms(4, m) for m in range(5)] == [1, 5, 15, 35, 70]
    blocks = T.staircase_blocks(4, 70).tolist()
    assert blocks[0] == 0 and set(blocks[1:5]) == {1} and set(blocks[5:15]) == {2}
    assert set(blocks[15:35]) == {3} and set(blocks[35:70]) == {4}
    assert T.taylor_rank_bound(4, 0.0, 1e-2) == 1
    assert T.taylor_rank_bound(3, 1e3, 1e-2, n=50) == 50


def test_taylor_rank_bound_never_violated():
    n, checked, violations, informative = 48, 0, 0, 0
    for d in (1, 2, 4, 8):
        for scale in (0.03, 0.1, 0.3, 1.0, 3.0):
            S = _logits(n, d, 8, seed=100 * d + int(10 * scale)) * scale
            A = torch.softmax(S, -1)
            M = T.logit_halfrange(S)
            sv = singular_values(A)
            for eps in (1e-2, 1e-4):
                bound = T.taylor_rank_bound(d, M, eps, n=n)
                violations += int((numerical_rank(A, rtol=eps) > bound).sum())
                informative += int((bound < n).sum())
                checked += S.shape[0]
            # the singular-value form: sigma_{r_m + 1} <= e^{2M} M^{m+1} / (m+1)!
            for m in range(4):
                r = T.taylor_terms(d, m)
                if r < n:
                    rhs = torch.exp(2 * M + (m + 1) * torch.log(M) - math.lgamma(m + 2))
                    violations += int((sv[:, r] > rhs * (1 + 1e-9)).sum())
    assert violations == 0
    assert informative > checked // 3  # the bound is below n in many cases, so the test can fail


def test_staircase_slopes_match_block_exponents():
    S0 = _logits(80, 4, 1, seed=1)[0]
    betas = torch.logspace(-2, -1, 9, dtype=torch.float64)
    sv, slopes = T.staircase_slopes(S0, betas)
    blocks = T.staircase_blocks(4, 80)
    clean = sv.amin(-2) > 1e-12
    for m in range(5):
        sel = (blocks == m) & clean
        assert int(sel.sum()) >= 1
        assert abs(float(slopes[sel].median()) - m) < 0.05, (m, slopes[sel])


# --------------------------------------------------------------- study's theorem, P1'
def test_expected_distinct_known_values():
    assert T.expected_distinct(1) == 1.0
    assert T.expected_distinct(2) == pytest.approx(1.5)
    assert T.expected_distinct(64) == pytest.approx(40.640862448389925, rel=1e-12)
    assert T.study_bound(64) == pytest.approx(41.45571576502769, rel=1e-12)
    for n in range(1, 2000, 37):
        assert T.expected_distinct(n) <= T.study_bound(n)


def test_iid_limit_monte_carlo_matches_expected_distinct():
    res, ranks, ties = T.monte_carlo_hardmax_rank(64, None, 400, seed=0)
    assert res.low <= T.expected_distinct(64) <= res.high
    assert ranks.shape == (400,) and ties == 0 and res.n == 400
    assert res.value == pytest.approx(float(ranks.double().mean()))


def test_hardmax_rank_grows_with_head_dim_and_respects_the_bound():
    n = 64
    means = []
    for d in (1, 4, 32):
        res, _, _ = T.monte_carlo_hardmax_rank(n, d, 200, seed=d)
        assert res.low <= T.study_bound(n)
        means.append(res)
    assert means[0].high < means[1].low < means[1].high < means[2].low
    assert means[0].value <= 2.0


def test_explicit_orthonormal_inputs_agree_with_direct_sampling():
    direct, r1, _ = T.monte_carlo_hardmax_rank(16, 4, 300, seed=1)
    explicit, r2, _ = T.monte_carlo_hardmax_rank(16, 4, 300, seed=2, explicit_inputs=True)
    sd1, sd2 = float(r1.double().std()), float(r2.double().std())
    assert abs(direct.value - explicit.value) < 3 * math.hypot(sd1, sd2) / math.sqrt(300)


def test_monte_carlo_rank_saturates_towards_iid_limit():
    small = T.monte_carlo_rank(32, 1, 16, seed=0)["rank_rtol_1e-2"][0]
    large = T.monte_carlo_rank(32, 256, 16, seed=0)["rank_rtol_1e-2"][0]
    iid = T.monte_carlo_rank(32, None, 16, seed=0)["rank_rtol_1e-2"][0]
    assert small.value < large.value
    assert abs(large.value - iid.value) < 2.0


def test_temperature_is_applied_once():
    """The package convention: logits carry no temperature and each tau-taking function divides
    by it once. monte_carlo_rank at tau equals the softmax of the same draws divided by tau once."""
    S = T.sample_logits(16, 4, 3, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(T.softmax_attention(S, 0.5), torch.softmax(S / 0.5, -1))
    assert torch.allclose(T.logit_halfrange(S, 0.5), ((S.amax(-1) - S.amin(-1)) / 1.0).amax(-1))
    res = T.monte_carlo_rank(16, 4, 3, tau=0.5, measures=("stable_rank",), seed=5)["stable_rank"][1]
    S5 = T.sample_logits(16, 4, 3, generator=torch.Generator().manual_seed(5))
    from attnrank.core.rank import rank_measures

    ref = rank_measures(torch.softmax(S5 / 0.5, -1), measures=("stable_rank",))["stable_rank"]
    assert torch.allclose(res, ref)
    assert not hasattr(T, "mean_ci") and not hasattr(T, "MCResult")  # one mean_ci: attnrank.analysis.stats


# ------------------------------------------------------------------------------- P0
def test_exact_rank_is_full_while_float64_reads_low():
    S = _logits(24, 1, 1, seed=7)[0]
    A = torch.softmax(S, -1)
    float_rank = int(numerical_rank(A))
    log_sv = T.exact_singular_values(S, digits=80)
    assert float_rank < 24  # float64 with NumPy's default tolerance reads a low rank
    assert math.isfinite(log_sv[-1]) and log_sv[-1] < -16  # below float64 resolution, yet > 0
    log_sv_hi = T.exact_singular_values(S, digits=110)
    assert abs(log_sv[-1] - log_sv_hi[-1]) < 1e-6  # stable under more digits


def test_causal_determinant_and_sigma_min():
    S = _logits(32, 2, 6, seed=9)
    A = T.softmax_attention(S, 1.0, causal=True)
    logdet = T.causal_log10_det(S)
    ref = torch.linalg.slogdet(A).logabsdet / math.log(10)
    assert torch.allclose(logdet, ref, atol=1e-8)
    assert bool(torch.isfinite(logdet).all())
    smin = singular_values(A)[..., -1]
    assert bool((smin <= A.diagonal(dim1=-2, dim2=-1).amin(-1) * (1 + 1e-12)).all())


# --------------------------------------------------------------------------- P4, P5
def test_permutation_accuracy_bound():
    assert T.permutation_accuracy_bound(1, 8) == 0.25
    assert T.permutation_accuracy_bound(2, 8) == 1.0


def test_normalised_kl_floor_holds_on_random_unit_vectors():
    g = torch.Generator().manual_seed(4)
    n = 16
    for tau in (0.1, 0.5, 1.0, 3.0):
        q = torch.nn.functional.normalize(torch.randn(200, n, 8, generator=g, dtype=torch.float64), dim=-1)
        k = torch.nn.functional.normalize(torch.randn(200, n, 8, generator=g, dtype=torch.float64), dim=-1)
        logA = torch.log_softmax(q @ k.transpose(-1, -2) / tau, -1)
        kl = -logA.diagonal(dim1=-2, dim2=-1).mean(-1)  # target: the identity permutation
        assert bool((kl >= T.normalised_kl_floor(n, tau) - 1e-12).all())
    assert T.normalised_kl_floor(64, 1.0) == pytest.approx(math.log(1 + 63 * math.exp(-2)))
    assert T.simplex_kl(64, 1.0) == pytest.approx(math.log(1 + 63 * math.exp(-64 / 63)), rel=1e-12)


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "call, param",
    [
        (lambda: T.hardmax_rank(torch.zeros(3, 4)), "S"),
        (lambda: T.hardmax_rank(torch.zeros(3, 3), on_tie="break"), "on_tie"),
        (lambda: T.hardmax_rank(torch.tensor([[0.0, float("nan")], [0.0, 1.0]])), "S"),
        (lambda: T.hardmax_gap_bound(torch.zeros(3, 3), 0.0), "tau"),
        (lambda: T.hardmax_gap_bound(torch.zeros(3, 3), 1.0, eps=2.0), "eps"),
        (lambda: T.taylor_rank_bound(0, 1.0, 1e-2), "head_dim"),
        (lambda: T.taylor_rank_bound(2, -1.0, 1e-2), "M"),
        (lambda: T.taylor_rank_bound(2, 1.0, 0.0), "eps"),
        (lambda: T.expected_distinct(0), "n"),
        (lambda: T.monte_carlo_rank(8, 2, 4, tau=-1.0), "tau"),
        (lambda: T.logit_halfrange(torch.zeros(3, 3), tau=0.0), "tau"),
        (lambda: T.sample_logits(8, 2, 4, explicit_inputs=True, d_model=4), "d_model"),
        (lambda: T.measured_threshold([1.0, 0.5], torch.zeros(2, 2), torch.zeros(2)), "taus"),
        (lambda: T.monte_carlo_hardmax_rank(8, 2, 1), "samples"),
        (lambda: T.staircase_slopes(torch.zeros(4, 4), [0.1]), "betas"),
        (lambda: T.exact_singular_values(torch.zeros(2, 3, 3)), "S"),
    ],
)
def test_bad_input_raises_config_error(call, param):
    with pytest.raises(ConfigError) as err:
        call()
    assert err.value.param == param


# --------------------------------------------------------------------------- figures
def test_theory_and_target_figures_return_figures_and_check_columns():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from attnrank.plots import theory as tp

    mc = pd.DataFrame(dict(n=[8, 8], head_dim=[1, 2], mean=[2.0, 3.0], ci_low=[1.5, 2.5], ci_high=[2.5, 3.5]))
    refs = pd.DataFrame(dict(n=[8], expected_distinct=[T.expected_distinct(8)], study_bound=[T.study_bound(8)]))
    fig = tp.hardmax_monte_carlo(mc, refs)
    assert isinstance(fig, plt.Figure) and len(fig.axes) == 1
    plt.close(fig)
    runs = pd.DataFrame(
        [
            dict(target=k, variant=v, head_dim=d, tau=t, seed=s, kl=0.1 * d + t, rank=d)
            for k in ("permutation", "sharp")
            for v in ("plain", "normalised")
            for d in (1, 4)
            for t in (0.1, 1.0)
            for s in (0, 1)
        ]
    )
    fig = tp.toy_heatmaps(runs, "kl", log=True)
    assert len([a for a in fig.axes if a.get_title()]) == 4
    plt.close(fig)
    fig = tp.rank_vs_kl(runs, n=4)
    assert fig.axes[0].get_xscale() == "log"
    plt.close(fig)
    with pytest.raises(ConfigError) as err:
        tp.toy_heatmaps(runs.drop(columns="head_dim"), "kl")
    assert err.value.param == "data"
