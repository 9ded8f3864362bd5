"""Library functions the chapters on trained models call for their tables, texts and references:
`attnrank.analysis.rules` (text and tables of the verdicts, relative change, convergence speed) and
`attnrank.analysis.baselines` (uniform attention, logit scale, the P1 staircase and its check, the i.i.d. limit)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from attnrank.analysis import baselines, rules, theory
from attnrank.analysis.stats import Estimate
from attnrank.analysis.verdicts import Judgement
from attnrank.core.errors import ConfigError
from attnrank.core.rank import MEASURES, rank_measures
from attnrank.sections import dynamics, headdim, loss, temp


def test_uniform_attention_and_its_ranks():
    U = baselines.uniform_attention(4, causal=True)
    assert torch.equal(U[2], torch.tensor([1 / 3, 1 / 3, 1 / 3, 0], dtype=torch.float64))
    assert torch.allclose(baselines.uniform_attention(3, causal=False), torch.full((3, 3), 1 / 3, dtype=torch.float64))
    # the same matrices as the softmax of zero logits (theory.softmax_attention)
    Z = torch.zeros(8, 8, dtype=torch.float64)
    for causal in (False, True):
        assert torch.allclose(baselines.uniform_attention(8, causal=causal), theory.softmax_attention(Z, causal=causal))
    u = baselines.uniform_ranks(8)
    assert set(u) == {"modernbert", "gpt2"} and set(u["modernbert"]) == set(MEASURES)
    assert u["modernbert"]["rank_rtol_1e-2"] == 1 and u["gpt2"]["rank_rtol_1e-2"] == 8  # the causal one has full rank
    assert u["modernbert"]["effective_rank"] == pytest.approx(1.0)
    assert u["modernbert"]["attention_entropy"] == pytest.approx(math.log(8))
    with pytest.raises(ConfigError, match="n"):
        baselines.uniform_attention(0, causal=True)


def test_logit_sd_matches_numpy_row_by_row():
    g = torch.Generator().manual_seed(0)
    S = torch.randn(2, 3, 5, 5, generator=g, dtype=torch.float64)
    full = baselines.logit_sd(S, causal=False)
    assert full.shape == (2, 3)
    assert float(full[1, 2]) == pytest.approx(np.std(S[1, 2].numpy(), axis=-1, ddof=1).mean())
    causal = baselines.logit_sd(S, causal=True)
    rows = [np.std(S[0, 0, i, : i + 1].numpy(), ddof=1) for i in range(1, 5)]  # row 0 has one visible key: left out
    assert float(causal[0, 0]) == pytest.approx(np.mean(rows))


def test_staircase_is_capped_and_on_relative_tolerance_panels_only():
    s = baselines.staircase([4, 8], n=32)
    assert set(s.measure) == {m for m, spec in MEASURES.items() if spec.kind == "numerical" and spec.rtol is not None}
    one = s[(s.measure == "rank_rtol_1e-2")]
    assert list(one.value) == [5, 9, 15, 32]  # r_1 = d + 1; r_2 = C(d + 2, 2) = 15, 45 capped at n = 32
    assert s.hue.isna().all()


def test_bound_check_counts_violations_and_fractions():
    init = pd.DataFrame(
        {
            "tau": [1.0, 1.0, 1.0, 0.01],
            "head_dim": [4, 4, 8, 4],
            "M": [0.1, 0.2, 0.1, 5.0],
            "rank_rtol_1e-2": [5, 1, 9, 16],
            "rank_rtol_1e-4": [5, 5, 12, 16],
            "bound_rtol_1e-2": [5, 5, 9, 16],
            "bound_rtol_1e-4": [15, 15, 10, 16],
        }
    )
    table, facts = baselines.bound_check(init, n=16)
    assert facts == {
        "matrices": 4,
        "violations": 1,
        "bound_is_r1": 1.0,
        "r1_at_rtol2": 2 / 3,
        "r1_at_rtol4": 2 / 3,
        "rank1_at_rtol2": 1 / 3,
    }
    assert list(table.columns[:4]) == ["tau", "head_dim", "r_1", "r_2"]
    assert table.set_index(["tau", "head_dim"]).loc[(1.0, 4), "rank rtol_1e-2"] == 3.0
    assert baselines.small_logits(init.assign(arch="modernbert"), n=16) == {0.01: False, 1.0: True}


def test_iid_limits_is_the_monte_carlo_of_the_theory_module():
    scale = pd.DataFrame({"arch": ["modernbert", "gpt2"], "tau": [1.0, 1.0], "logit_sd": [0.5, 2.0]})
    lim = baselines.iid_limits(scale, n=8, samples=16)
    assert len(lim) == 2 * len(MEASURES)
    row = lim[(lim.arch == "gpt2") & (lim.measure == "effective_rank")].iloc[0]
    mc = theory.monte_carlo_rank(8, None, 16, tau=0.5, measures=("effective_rank",), causal=True)["effective_rank"]
    assert row.value == mc[0].value and row.sigma == 2.0
    # the same numbers as softmax(sigma * G) by hand, with the same generator
    G = torch.randn(16, 8, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 2.0
    A = torch.softmax(G.masked_fill(~baselines.causal_mask(8), -torch.inf), -1)
    assert row.value == pytest.approx(float(rank_measures(A, measures=("effective_rank",))["effective_rank"].mean()))


def _est(v, lo, hi, n=10):
    return Estimate(v, lo, hi, n, "test")


def test_text_helpers():
    assert temp.grid_text([0.001, 0.004, 0.016, 0.064]) == "4 values from 0.001 to 0.064, a factor of about 4 apart"
    # the quick grid's steps are 16, 16 and 4: not "about 10 apart"
    assert temp.grid_text([0.001, 0.016, 0.25, 1.0]) == "4 values from 0.001 to 1, a factor of 4 to 16 apart"
    assert temp.grid_text([1.0]) == "one value"
    peak = _est(0.016, 0.004, 0.064)
    assert temp.grid_interval(peak) == "0.016 [0.004, 0.064]"
    assert (
        temp.grid_interval(peak, words=True, note="interior")
        == "0.016 (95% bootstrap interval of the grid argmax 0.004 to 0.064; interior)"
    )
    # every resample at one grid value: an interval of no width is said in words, never [0.25, 0.25]
    assert temp.grid_interval(_est(0.25, 0.25, 0.25)) == "0.25 in every resample"
    v = Judgement("inconclusive at this scale", _est(1.0, -0.5, 2.5), 0.0, "above", 1.0, 12, "seeds per arm")
    assert temp.needed_text(v) == "about 12 seeds per arm would resolve the pre-registered effect"
    assert temp.needed_text(Judgement("supported", _est(1, 0.5, 2), 0.0, "above")) == ""
    resolved = Judgement("not supported", _est(-1, -2, -0.5), 0.0, "above", 1.0, 12, "seeds per arm")
    assert temp.needed_text(resolved) == ""  # resolved the other way: nothing to print
    assert temp.needed_clause({"gpt2": rules.ArchResult(v)}, "one unit") == (
        "At the observed seed spread, for GPT-2, about 12 seeds per arm would resolve one unit."
    )
    # no more than the runs already there (10 runs = 5 seeds per arm): the effect is smaller than that
    few = Judgement("inconclusive at this scale", _est(0.1, -0.5, 0.7), 0.0, "above", 1.0, 3, "seeds per arm")
    assert temp.needed_text(few, "one unit") == (
        "the 5 seeds per arm here would already resolve one unit, so the effect is smaller than that"
    )
    assert "no more runs are needed" in temp.needed_clause({"modernbert": rules.ArchResult(resolved)}, "one unit")
    r = rules.ArchResult(v)
    assert temp.verdict_text(r, "for ModernBERT") == (
        "for ModernBERT 1.00 [−0.50, 2.50], n = 10 runs (about 12 seeds per arm would resolve the pre-registered effect)"
    )
    assert temp.verdict_text(r, "x", effect=1).endswith("would resolve a difference of 1)")
    means = pd.Series([3.1, 2.5], index=[4, 32])
    assert headdim.direction_text(_est(-0.6, -0.9, -0.3), means).startswith(
        "falls from 3.10 at head dimension 4 to 2.50 at head dimension 32"
    )
    assert headdim.direction_text(_est(0.6, -0.1, 0.9), means).startswith("changes (direction not resolved)")
    judged = {"modernbert": v, "gpt2": Judgement("supported", _est(1, 0.5, 2), 0.0, "above", 1.0, 3)}
    inconclusive = "inconclusive at this scale"
    assert dynamics.needed_runs(judged, {"modernbert": inconclusive, "gpt2": "supported"}, prefix="about ") == [
        "ModernBERT (MLM) about 12"
    ]
    # a resolved verdict needs no more runs, whichever way it went
    assert dynamics.needed_runs(judged, {"modernbert": "not supported", "gpt2": "supported"}) == []


def test_relative_change_and_stability_table():
    d = pd.DataFrame(
        {
            "arch": ["modernbert", "modernbert", "gpt2"],
            "tau": [1.0, 0.1, 1.0],
            "seed": [0, 0, 0],
            "initial_effective_rank": [2.0, 4.0, 5.0],
            "final_effective_rank": [2.1, 2.0, 5.0],
        }
    )
    c = rules.relative_change(d, ["effective_rank"])
    assert list(c.rel_change) == pytest.approx([0.05, 0.5, 0.0])
    assert list(c.increased) == [True, False, False]
    t = rules.stability_table(c, 0.1)
    assert t.loc[("effective_rank", "modernbert")].tolist() == [0.5, 0.5, 0.5]
    assert t.loc[("effective_rank", "gpt2"), "share_stable"] == 1.0


def test_convergence_speed_level_and_censoring():
    runs_df = pd.DataFrame(
        {
            "key": ["a", "b", "c"],
            "arch": ["modernbert"] * 3,
            "status": ["complete"] * 3,
            "max_steps": [30] * 3,
            "log_every": [10] * 3,
        }
    )
    logs = pd.concat(
        [
            pd.DataFrame({"key": k, "step": [10, 20, 30], "loss": v})
            for k, v in (("a", [3.0, 2.0, 1.0]), ("b", [3.0, 3.0, 3.0]), ("c", [2.0, 1.0, 1.0]))
        ]
    )
    out, levels, cens = rules.convergence_speed(runs_df, logs, quantile=0.5, smooth=1)
    assert levels == {"modernbert": 1.0} and cens == {"modernbert": 40}
    assert list(out.final_train_loss) == [1.0, 3.0, 1.0]
    assert list(out.steps_plot) == [30.0, 40.0, 20.0] and list(out.censored) == [False, True, False]


def test_tables_of_the_sweep_rules_have_one_row_per_measure_and_arch():
    est = _est(1.0, 0.5, 1.5)
    arch = {
        a: rules.ArchResult(
            Judgement("supported", est, 0.0, "above"),
            shape=_est(0.016, 0.004, 0.064),
            spread=0.1,
            parts={"tau_range": est, "head_dim_range": est, "head_dim_change": est},
        )
        for a in ("modernbert", "gpt2")
    }
    sv = rules.SweepVerdict("supported", arch, 20)
    t = temp.temperature_table({"effective_rank": sv, "stable_rank": sv}, 0.001)
    t = t.set_index(["measure", "model"])
    assert (
        t.shape[0] == 4
        and t.loc[("stable rank", "GPT-2 (CLM)"), "peak on the grid at τ [95% bootstrap]"] == "0.016 [0.004, 0.064]"
    )
    assert "τ = 1 minus τ = 0.001 [95% Welch-t CI]" in t.columns and set(t["sign"]) == {"the study's sign"}
    assert temp.temperature_loss_table(sv).set_index("model").loc["ModernBERT (MLM)", "seed sd (nats)"] == "0.1000"
    lever = headdim.lever_table({"effective_rank": sv}).set_index(["measure", "model"])
    assert "verdict" not in lever.columns  # the whole grid is reported, not judged
    assert lever.loc[("effective rank", "ModernBERT (MLM)"), "runs"] == sv.arch["modernbert"].verdict.estimate.n
    windows = {"stock": (1.0, (0.0625, 1.0), (8, 128)), "cold": (0.001, (0.001, 0.016), (8, 128))}
    rule = headdim.window_table({"stock": {"effective_rank": sv}, "cold": {"effective_rank": sv}}, windows)
    assert list(rule["end"].unique()) == ["stock (dₕ at τ = 1)", "cold (dₕ at τ = 0.001)"]
    assert set(rule.verdict) == {"supported"} and len(rule) == 4
    eff = headdim.lever_effects({"rank": sv})
    assert len(eff) == 6 and set(eff.lever) == set(headdim.LEVERS.values()) and (eff.estimate == 1.0).all()


def test_lever_texts_and_direction_note():
    def arch(change):
        return rules.ArchResult(
            Judgement("supported", _est(2.0, 1.0, 3.0), 0.0, "above"),
            spread=0.25,
            parts={"tau_range": _est(3.0, 2.0, 4.0), "head_dim_range": _est(1.0, 0.5, 1.5), "head_dim_change": change},
        )

    lv = rules.SweepVerdict(
        "supported", {"modernbert": arch(_est(-0.6, -0.9, -0.3)), "gpt2": arch(_est(0.6, 0.3, 0.9))}, 20
    )
    means = {a: pd.Series([3.1, 2.5], index=[4, 32]) for a in ("modernbert", "gpt2")}
    t = headdim.lever_texts(lv, lv, lv, means)
    assert (
        t["tau_range_modernbert"] == "3.00 [2.00, 4.00], n = 10"
        and t["loss_hd_range_gpt2"] == "1.000 [0.500, 1.500], n = 10"
    )
    assert t["diff_gpt2"] == "2.00 [1.00, 3.00]" and t["spread_modernbert"] == "0.250"  # no n: the arms share runs
    assert t["direction_modernbert"].startswith("falls") and t["direction_gpt2"].startswith("rises")
    assert (
        headdim.direction_note(lv)
        == "the measured rank rises with the head dimension for GPT-2 (CLM), and falls for ModernBERT (MLM)"
    )
    flat = rules.SweepVerdict("x", {"modernbert": arch(_est(0.1, -0.2, 0.3))}, 5)
    assert headdim.direction_note(flat) == "at this width the measured rank does not follow the staircase bound upward"


def test_bound_holds_text_says_every_one_or_how_many_fail():
    assert headdim.bound_holds_text(0, 7680) == "The bound holds for every one of the 7,680 ModernBERT matrices"
    assert headdim.bound_holds_text(3, 7680) == "The bound fails for 3 of the 7,680 ModernBERT matrices"


def test_multiplicity_counts_from_the_number_of_verdicts():
    """12 verdicts at 95%: 0.6 expected decided by chance, Bonferroni level 0.05 / 12 = 0.0042."""
    from attnrank.sections import reproducibility

    m = reproducibility.multiplicity(12)
    assert m == {
        "repro_n_verdicts": 12,
        "repro_chance_decided": "0.6",
        "repro_bonferroni": "0.0042",
        "repro_level": "95%",
    }
    assert reproducibility.multiplicity(5)["repro_bonferroni"] == "0.01"
    with pytest.raises(ConfigError, match="n_verdicts"):
        reproducibility.multiplicity(0)


def test_causal_answer_text_by_status():
    """Each status in words; an unresolved temperature effect says there is nothing to split."""
    from attnrank.sections import causal

    def arch(status, temp_effect):
        return rules.ArchResult(
            Judgement(status, _est(0.1, -0.1, 0.3), 0.0, "above"), parts={"temperature": temp_effect}
        )

    v = rules.SweepVerdict(
        "inconclusive at this scale",
        {
            "modernbert": arch("inconclusive at this scale", _est(0.01, -0.02, 0.04)),
            "gpt2": arch("supported", _est(0.5, 0.3, 0.7)),
        },
        20,
    )
    assert causal.answer_text(v) == (
        "For ModernBERT the temperature has no resolved effect on the final loss, so there is nothing to split; for GPT-2 "
        "the loss follows the initial logit scale (and so the initial rank), not the query/key step size."
    )
    w = rules.SweepVerdict(
        "not supported",
        {
            "modernbert": arch("inconclusive at this scale", _est(0.5, 0.3, 0.7)),
            "gpt2": arch("not supported", _est(0.5, 0.3, 0.7)),
        },
        20,
    )
    assert causal.answer_text(w) == (
        "For ModernBERT the runs do not tell which half the temperature's loss effect follows; for GPT-2 the loss follows "
        "the query/key step size, not the initial logit scale."
    )


def test_seq_len_content_free_text_says_uniform_attention_passes():
    """Uniform causal attention (effective rank 13.6 at n = 32) is below the bound 21.2: a content-free model
    passes, and the largest trained gap is found (GPT-2 at n = 64, 2.0 from 27.0, 7%)."""
    from attnrank.sections import seqlen

    d = pd.DataFrame(
        {
            "arch": ["modernbert", "modernbert", "gpt2", "gpt2"],
            "n": [32, 64, 32, 64],
            "mean": [1.5, 1.2, 13.7, 29.0],
            "uniform": [1.0, 1.0, 13.6, 27.0],
        }
    )
    text = seqlen.content_free_text(d)
    assert text.startswith("Uniform attention, which ignores the content, also lies below the bound at every n")
    assert text.endswith("at most 2.0 from uniform attention (GPT-2 at n = 64, 7% of its value).")
    above = d.assign(uniform=[1.0, 1.0, 30.0, 60.0])
    assert seqlen.content_free_text(above).startswith("Uniform attention exceeds the bound")


def test_an_interior_peak_is_located_between_its_neighbouring_grid_values():
    """A zero-width bootstrap interval of the grid argmax (two seeds) still locates the maximum only to within the
    grid values next to it."""
    grid = [0.001, 0.016, 0.25, 1.0]
    text = temp.peak_shape(Estimate(0.016, 0.016, 0.016, 8, "argmax"), grid)
    assert text == (
        "interior peak at 0.016: the maximum lies between the grid values 0.001 and 0.25 "
        "(bootstrap interval of the grid argmax 0.016 to 0.016)"
    )
    assert temp.peak_shape(Estimate(0.001, 0.001, 0.001, 8, "argmax"), grid) == "peak at the low end of the grid"


def test_censored_runs_are_drawn_after_their_own_architectures_last_step():
    runs_df = pd.DataFrame(
        {
            "key": ["a", "b"],
            "arch": ["modernbert", "gpt2"],
            "status": ["complete"] * 2,
            "max_steps": [20, 40],
            "log_every": [10, 10],
        }
    )
    logs = pd.DataFrame({"key": ["a", "a", "b", "b"], "step": [10, 20, 20, 40], "loss": [3.0, 3.0, 3.0, 3.0]})
    out, _, cens = rules.convergence_speed(runs_df.assign(status="complete"), logs, quantile=0.0, smooth=1)
    assert cens == {"modernbert": 30, "gpt2": 50}
    assert loss.cens_text(cens) == "50 for GPT-2, 30 for ModernBERT" and loss.cens_text({"modernbert": 30}) == "30"
