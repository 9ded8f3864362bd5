"""The verdict rules of the measure, theory and target chapters, on constructed cases at and
around their thresholds, and the library functions the three chapters compute with."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from attnrank.analysis import spectra
from attnrank.core import rank
from attnrank.core.errors import ConfigError
from attnrank.core.rank import MEASURES, rank_measures, singular_values
from attnrank.runs.presets import PRESETS, preset, preset_table
from attnrank.sections import measure as ms
from attnrank.sections import target as tg
from attnrank.sections import theory as tx


# --------------------------------------------------------------------------- measure
def test_measures_from_singular_values_match_rank_measures():
    """The measure chapter reads every measure from one set of singular values; same as rank_measures."""
    A = torch.softmax(torch.randn(3, 8, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 3, -1)
    ours = spectra.measures_from_singular_values(singular_values(A))
    ref = rank_measures(A, measures=rank.RANK_MEASURES)
    assert set(ours) == set(rank.RANK_MEASURES) == {m for m in MEASURES if MEASURES[m].kind != "entropy"}
    assert all(torch.allclose(ours[m], ref[m]) for m in rank.RANK_MEASURES)
    with pytest.raises(ConfigError) as err:
        spectra.measures_from_singular_values(singular_values(A), measures=("attention_entropy",))
    assert err.value.param == "measures"


def test_uniform_causal_measures():
    """U_n has full rank (lower-triangular, positive diagonal); its stable rank is sum 1/i over 1."""
    u = ms.uniform_causal(8)
    assert u["rank_atol_1e-8"] == 8
    U = torch.tril(torch.ones(8, 8, dtype=torch.float64)) / torch.arange(1, 9, dtype=torch.float64)[:, None]
    s = singular_values(U)
    assert u["stable_rank"] == pytest.approx(float((s**2).sum() / s[0] ** 2))


def _excess_values(excess: dict, n: int = 11, seeds=(0, 1, 2, 3), spread: float = 0.01, tau: float = 100.0):
    """Trained ModernBERT values at ``tau`` whose per-run excess (value - 1)/(n - 1) is excess[m] +- spread."""
    rows = []
    for m, e in excess.items():
        for i, s in enumerate(seeds):
            ex = e + spread * (1 if i % 2 else -1)
            rows.append(
                dict(
                    arch="modernbert",
                    seed=s,
                    state="trained",
                    tau=tau,
                    pipeline=spectra.REFERENCE,
                    measure=m,
                    sequence=0,
                    value=1 + ex * (n - 1),
                )
            )
    return pd.DataFrame(rows)


RATIOS = {"effective_rank": 0.5, "rank_rtol_1e-2": 0.4}


@pytest.mark.parametrize(
    "excess, status",
    [
        (dict(**{"rank_atol_1e-8": 0.5, "rank_rtol_1e-2": 0.02, "effective_rank": 0.03}), "supported"),
        (dict(**{"rank_atol_1e-8": 0.05, "rank_rtol_1e-2": 0.02, "effective_rank": 0.03}), "not supported"),
        (dict(**{"rank_atol_1e-8": 0.5, "rank_rtol_1e-2": 0.3, "effective_rank": 0.03}), "not supported"),
        (dict(**{"rank_atol_1e-8": 0.5, "rank_rtol_1e-2": 0.1, "effective_rank": 0.03}), "inconclusive at this scale"),
    ],
)
def test_measure_rule_at_its_threshold(excess, status):
    """Supported iff the absolute rule's excess is above 0.1 and both relative measures' below; an
    interval straddling 0.1 (excess exactly 0.1) is inconclusive."""
    got, summary, glue, _ = ms.verdict(
        _excess_values(excess), RATIOS, n=11, tau_max=100.0, head_dim=4, atol_rank=5.0, profile="ci"
    )
    assert got == status
    assert glue["measure_excess_rank_rtol_1e-2"] == pytest.approx(excess["rank_rtol_1e-2"])
    assert "0.50 times" in summary


def test_measure_rule_needs_the_grid_to_reach_tau_100():
    excess = {"rank_atol_1e-8": 0.5, "rank_rtol_1e-2": 0.02, "effective_rank": 0.03}
    got, _, _, _ = ms.verdict(
        _excess_values(excess, tau=99.0), RATIOS, n=11, tau_max=99.0, head_dim=4, atol_rank=5.0, profile="ci"
    )
    assert got == "inconclusive at this scale"


# --------------------------------------------------------------------------- target
@pytest.mark.parametrize(
    "diffs, status",
    [
        ([0.30, 0.32, 0.28, 0.31], "supported"),  # interval well above 0.1 nats
        ([0.01, 0.02, -0.01, 0.0], "not supported"),  # interval below 0.1
        ([0.05, 0.15, 0.08, 0.13], "inconclusive at this scale"),  # straddles 0.1
    ],
)
def test_target_rule_at_its_threshold(diffs, status):
    v = tg.judged(pd.Series(diffs))
    assert v.status == status and v.estimate.value == pytest.approx(np.mean(diffs))


def test_target_existential_rule_reads_the_heads_in_use():
    """The study's reading of (v), some head falls short of the largest at tau = 1, judged on the heads in use
    (version 4): d_h = 1 ends 0.5 nats above d_h = 32 in every seed, d_h = 16 0.01: not supported, since d_h = 1 no
    longer decides; with d_h = 16 short, supported; the intervals are Bonferroni-corrected (wider than 95% ones)."""
    s = tg.settings("ci")
    rows = []
    for seed in s.seeds:
        for d, kl in ((1, 1.0 + 0.01 * seed), (2, 0.52), (16, 0.51 + 0.001 * seed), (32, 0.5)):
            rows.append(dict(target="permutation", variant="plain", head_dim=d, tau=1.0, seed=seed, kl=kl))
    final = pd.DataFrame(rows)
    found = tg.instances(s, final)
    assert sorted(found) == [16]
    assert found[16].status == "not supported" and tg.existential_status(found) == "not supported"
    short = final.assign(kl=np.where(final.head_dim == 16, 0.8 + 0.001 * final.seed, final.kl))
    assert tg.existential_status(tg.instances(s, short)) == "supported"
    every = tg.instances(s, final, dims=[1, 2, 16])
    assert sorted(every) == [1, 2, 16] and every[1].status == "supported"
    wide, plain = every[1].estimate, tg.judged(pd.Series([0.5 + 0.01 * k for k in s.seeds])).estimate
    assert wide.high - wide.low > plain.high - plain.low


def test_target_settings_check_parameters_before_compute():
    s = tg.settings("ci")
    assert (s.n, s.steps, s.d_max, s.d_real) == (32, 200, 32, [16]) and len(s.select_seeds) == 2
    for kw, param in (
        (dict(taus=[0.1, 10.0]), "taus"),
        (dict(n_seeds=3), "n_seeds"),
        (dict(head_dims=[1, 2]), "head_dims"),
    ):
        with pytest.raises(ConfigError) as err:
            tg.settings("ci", **kw)
        assert err.value.param == param


def test_target_p4_counts_violations_on_constructed_runs():
    s = tg.settings("ci")
    floor = (1 - 2 / s.n) * math.log(2)
    rows = [
        dict(target="permutation", variant="plain", head_dim=1, tau=1.0, seed=0, accuracy=2 / s.n, kl=floor + 0.1),
        dict(target="permutation", variant="plain", head_dim=1, tau=0.1, seed=0, accuracy=3 / s.n, kl=floor - 0.1),
    ]
    sec = tg.p4(s, pd.DataFrame(rows))
    assert (sec.tested, sec.violations) == (4, 2)
    assert sec.glue["target_p4_violations"] == 2 and sec.glue["target_p4_at_bound"] == 1


# --------------------------------------------------------------------------- theory
def _sections(viol=0, big_means=(10.0, 40.0), sd=1.0):
    mc = pd.DataFrame(dict(n=[64, 64], head_dim=[1, 256], mean=list(big_means), ci_low=0.0, ci_high=0.0, sd=sd))
    return {
        "p0": tx.Check({}, {}, "p0", 5, viol),
        "thm": tx.Check({"mc": mc}, {}, "thm", 2, 0),
        "p1p": tx.Check({}, {"theory_sat_limit": 30.0, "theory_sat_n": 48}, "p1p", 3, 0),
    }


def test_theory_rule():
    """Supported iff no check is violated and the largest head's mean exceeds the smallest by 3
    standard errors and reaches 95% of n(1-(1-1/n)^n) (40.64 at n = 64)."""
    assert tx.verdict(_sections(), mc_samples=100, profile="ci")[0] == "supported"
    assert tx.verdict(_sections(viol=1), mc_samples=100, profile="ci")[0] == "not supported"
    assert (
        tx.verdict(_sections(big_means=(10.0, 38.0)), mc_samples=100, profile="ci")[0] == "inconclusive at this scale"
    )
    assert (
        tx.verdict(_sections(big_means=(39.8, 40.0)), mc_samples=100, profile="ci")[0] == "inconclusive at this scale"
    )
    status, summary = tx.verdict(_sections(), mc_samples=100, profile="ci")
    assert summary.startswith("10 of 10 checks")


def test_theory_checks_hold_on_small_instances_and_the_monte_carlo_is_cached(tmp_path, monkeypatch, one_thread):
    """Each proposition's check on small sizes: no violation, and the theorem's table is served from the cache."""
    monkeypatch.setenv("ATTNRANK_DATA", str(tmp_path))
    sizes = dict(
        p0_n=8,
        p0_inst=1,
        p0_digits=40,
        stair_n=20,
        taylor_n=16,
        taylor_inst=2,
        sat_n=16,
        sat_samples=4,
        sat_head_dims=[1, 64],
        p2_n=12,
        p2_d=4,
        p2_inst=3,
        p2_grid=15,
        mc_head_dims=[1, 64],
        mc_samples=20,
        n_values=[16],
    )
    for f in (tx.p0, tx.p1_staircase, tx.p1_taylor, tx.p1p_saturation, tx.p2_hardmax, tx.theorem):
        sec = f(**sizes)
        assert sec.violations == 0 and sec.tested > 0, f.__name__
    thm = tx.theorem(**sizes)
    assert thm.glue["theory_thm_16_ed"] == pytest.approx(16 * (1 - (15 / 16) ** 16))
    calls = []

    def fake(**kw):
        calls.append(kw)

    fake.__module__, fake.__qualname__ = tx.hardmax_mc_table.__module__, tx.hardmax_mc_table.__qualname__
    monkeypatch.setattr(tx, "hardmax_mc_table", fake)
    again = tx.theorem(**sizes)  # the cached table: the (patched) compute is never called
    assert calls == [] and again.glue == thm.glue


# --------------------------------------------------------------------------- presets
def test_presets_sit_beside_the_profiles_and_print():
    assert preset("theory", "ci")["mc_samples"] == 40 and preset("target", "quick")["n"] == 64
    p = preset("target", "ci")
    p["taus"].append(99.0)  # a copy: the preset itself is unchanged
    assert PRESETS["target"]["ci"]["taus"] == [0.01, 0.1, 1.0, 10.0]
    table = preset_table()
    assert list(table.columns) == ["chapter", "size", "ci", "quick", "paper", "scale"]
    row = table[(table.chapter == "target") & (table["size"] == "n")].iloc[0]
    assert (row.ci, row.quick, row.paper, row.scale) == ("32", "64", "128", "64")  # scale: the quick sizes
    # and the theory chapter's regime says so: a scale check's random instances are the quick profile's
    from attnrank.sections.theory import base_profile_words

    assert base_profile_words("scale") == base_profile_words("quick") == "the quick profile's sizes"
    with pytest.raises(ConfigError) as err:
        preset("nope")
    assert err.value.param == "chapter"


def test_run_presets_sit_beside_the_profiles_and_print():
    """The runs chapters train at other sizes than the build's profile (sequence lengths, the causal
    chapter) are set in one table beside the profiles, which the reproducibility chapter prints."""
    from attnrank.core.profiles import PROFILES
    from attnrank.runs import experiments
    from attnrank.runs.presets import RUN_PRESETS, run_preset_table
    from attnrank.sections import causal

    assert experiments.SEQ_LEN_PRESET is RUN_PRESETS["seq_len"]
    # the default's 2 x 2 at its own sizes, where GPT-2 learns; the masked LM, which does not learn under P3's
    # conditions there, is left to the scale check
    assert causal.CAUSAL_PRESETS["quick"] == ("quick", {})
    quick = causal.causal_runs("quick")
    assert {(c.arch, c.profile) for c in quick} == {("gpt2", "quick")} and len(quick) == len(causal.CELLS) * 3
    assert {c.seed for c in causal.causal_runs("ci")} == set(RUN_PRESETS["causal"]["ci"]["seeds"]) == set(range(5))
    assert {(c.profile, c.max_steps) for c in experiments.seq_len_sweep("quick")} == {("ci", 40)}
    table = run_preset_table()
    row = table[(table.chapter == "causal") & (table["build profile"] == "quick")].iloc[0]
    assert (row["sizes of"], row.overrides, row.seeds, row.models) == ("quick", "none", "0, 1, 2", "gpt2")
    assert set(table.models[table.chapter == "seq_len"]) == {"both"}
    assert len(table) == len(RUN_PRESETS) * len(PROFILES)
