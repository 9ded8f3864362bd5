"""Library functions that build the theory, protocol and causal chapters' figures, tables, glued
numbers and verdict sentences, on small constructed cases."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from attnrank.analysis import rules, spectra
from attnrank.analysis.stats import Estimate
from attnrank.core import rank
from attnrank.core.errors import ConfigError
from attnrank.core.rank import MEASURES
from attnrank.plots import causal as cplots
from attnrank.plots import measure as mplots
from attnrank.plots import theory as tplots
from attnrank.sections import causal, protocol, seqlen, study
from attnrank.sections import measure as ms
from attnrank.sections import theory as tx


@pytest.fixture(autouse=True)
def _data(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNRANK_DATA", str(tmp_path))
    yield
    plt.close("all")


# --- theory -------------------------------------------------------------------------------------


def test_theory_sizes_overrides_head_dims_and_samples():
    base = tx.sizes("ci")
    assert base["mc_head_dims"] == [1, 2, 4, 8, 16, 64, 256] and base["mc_samples"] == 40
    z = tx.sizes("ci", head_dims=[8, 2, 8, 4], mc_samples=7)
    assert z["mc_head_dims"] == z["sat_head_dims"] == [2, 4, 8] and z["mc_samples"] == 7
    assert {k: v for k, v in z.items() if k not in ("mc_head_dims", "sat_head_dims", "mc_samples")} == {
        k: v for k, v in base.items() if k not in ("mc_head_dims", "sat_head_dims", "mc_samples")
    }
    with pytest.raises(ConfigError, match="profile"):
        tx.sizes("nope")


def test_theory_totals_count_only_checks():
    sections = {
        "a": tx.Check(check="a", tested=10, violations=1),
        "part": tx.Check(tested=99, violations=9),
        "b": tx.Check(check="b", tested=5, violations=0),
    }
    assert tx.totals(sections) == {"theory_total_tested": 15, "theory_total_violations": 1}


def test_theory_section_figure_names_data_and_source():
    z = {"taylor_n": 8, "taylor_inst": 1, "p0_n": 6, "p0_inst": 2, "p0_digits": 30}
    ty = tx.p1_taylor(**z)
    fig, data, name, source = tplots.section_figure("p1_taylor", ty, z)
    assert name == "theory_p1_bound" and data is ty.tables["bound"] and len(data) == 40
    assert source == ""  # the chapter writes the caption, its sizes pasted from the check's glue
    assert (ty.glue["theory_ty_n"], ty.glue["theory_ty_inst"], ty.glue["theory_ty_points"]) == (8, 1, 40)
    assert (data.bound >= data.measured).all()
    p0 = tx.p0(**z)
    fig, data, name, source = tplots.section_figure("p0", p0, z)
    assert name == "theory_p0_spectrum" and len(data) == 2 * 6 * 2  # instances x n x {float64, exact}
    assert source == ""
    assert (p0.glue["theory_p0_n"], p0.glue["theory_p0_digits"], p0.glue["theory_p0_inst"]) == (6, 30, 2)
    with pytest.raises(ConfigError, match="name"):
        tplots.section_figure("p9", p0, z)


def _seq_runs(values: dict) -> pd.DataFrame:
    rows = []
    for (arch, n), finals in values.items():
        for seed, v in enumerate(finals):
            row = {"arch": arch, "max_len": n, "seed": seed, "status": "complete"}
            row.update({f"{w}_{m}": v for m in MEASURES for w in ("initial", "final")})
            rows.append(row)
    return pd.DataFrame(rows)


def test_seq_len_report_glue_figure_and_verdict():
    bound = {n: (1 - math.exp(-1)) * n + 1 for n in (32, 64)}  # 21.23, 41.46
    runs = _seq_runs(
        {
            ("modernbert", 32): [1.1, 1.2, 1.3],
            ("modernbert", 64): [1.5, 1.6, 1.7],
            ("gpt2", 32): [10.0, 10.1, 10.2],
            ("gpt2", 64): [bound[64] + 5, bound[64] + 5.1, bound[64] + 5.2],
        }
    )
    r = seqlen.report_from_runs(runs, "ci sizes, 40 steps", "ci", (32, 64))
    assert r.glue == {
        "seq_len_ns": "32, 64",
        "seq_len_setting": "ci sizes, 40 steps",
        "seq_len_n_runs": 12,
        "seq_len_n_seeds": 3,
        "seq_len_profile": "ci",
    }
    fig, data, name, source = r.figure
    assert name == "seq_len" and set(data.measure) == {"effective_rank", "rank_rtol_1e-2"} and len(data) == 16
    assert source == ""  # the chapter writes the caption, its sizes pasted from the glue
    assert r.status == "not supported"  # GPT-2 at n = 64 lies wholly above the bound
    assert set(r.by_measure) == set(MEASURES) and set(r.by_measure.values()) == {"not supported"}
    assert "GPT-2 (CLM) at n = 64, 46.6 [46.3, 46.8], n = 3 against 41.5" in r.summary
    assert "(12 runs, ci sizes, 40 steps)." in r.summary
    below = seqlen.report_from_runs(runs[~((runs.arch == "gpt2") & (runs.max_len == 64))], "s", "ci", (32, 64))
    assert below.status == "supported" and below.glue["seq_len_n_runs"] == 9


# --- protocol -----------------------------------------------------------------------------------


def _records() -> study.Records:
    seq = pd.DataFrame(
        [
            {"split": sp, "sequence": i, "step": st}
            for sp, k in (("val", 6), ("train", 3))
            for i in range(k)
            for st in (0, 1, 5, 20)
        ]
    )
    ok = pd.DataFrame(
        {
            "arch": ["modernbert"] * 4 + ["gpt2"] * 4,
            "tau": [1.0, 1.0, 1e-3, 1e-3] * 2,
            "head_dim": 16,
            "seed": [0, 1] * 4,
            "final_effective_rank": [5.0, 5.2, 3.0, 3.1, 2.0, 2.1, 2.9, 3.0],
        }
    )
    return study.Records(ok, ok, 16, seq, pd.DataFrame(), {"modernbert": 20, "gpt2": 20})


def test_protocol_select_and_records_glue():
    runs = pd.DataFrame(
        {
            "status": ["complete", "complete", "failed", "complete"],
            "head_dim": [16, 16, 16, 32],
            "tau": [1.0, 0.001, 1.0, 1.0],
            "seed": [0, 0, 1, 0],
        }
    )
    ok, pair = study.select(runs, 16)
    assert list(ok.index) == [0, 1, 3] and list(pair.index) == [0, 1]
    with pytest.raises(ConfigError, match="runs"):
        study.select(runs.drop(columns="tau"), 16)


def _flips(bert: Estimate, gpt2: Estimate) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"arch": "modernbert", "step": 20, "estimate": bert, "reference": 2.0},
            {"arch": "gpt2", "step": 20, "estimate": gpt2, "reference": 0.8},
            {"arch": "modernbert", "step": 0, "estimate": bert, "reference": 0.1},
        ]
    )


def _within_runs(noise: float, seed: int = 0):
    """12 runs (3 temperatures x 4 seeds) of one architecture whose initial rank lowers the loss within each
    temperature, and their probe records at step 0: each sequence the run's initial rank plus ``noise``."""
    rng = np.random.default_rng(seed)
    runs = pd.DataFrame({"arch": "gpt2", "tau": np.repeat([1.0, 2.0, 4.0], 4), "key": [f"k{i}" for i in range(12)]})
    runs["initial_effective_rank"] = np.tile([1.0, 2.0, 3.0, 4.0], 3) + runs.tau
    runs["final_val_loss"] = 5.0 - 0.1 * runs.initial_effective_rank
    runs["initial_rank_atol_1e-8"] = 64.0  # the study's count: full at every temperature
    seq = pd.DataFrame(
        [
            {"key": r.key, "arch": "gpt2", "tau": r.tau, "seed": i % 4, "step": step, "split": split, "sequence": k}
            for i, r in enumerate(runs.itertuples())
            for step in (0, 10)
            for split, n in (("train", 6), ("val", 8))
            for k in range(n)
        ]
    )
    seq = seq.merge(runs[["key", "initial_effective_rank"]], on="key")
    seq["effective_rank"] = seq.initial_effective_rank + noise * rng.normal(size=len(seq))
    seq["rank_atol_1e-8"] = 64.0
    return seq.drop(columns="initial_effective_rank"), runs


def test_within_draws_read_the_loss_chapters_within_correlation_with_four_examples():
    """The loss claim's within-temperature rho with each run's initial rank over 4 + 4 examples: the loss rule's own
    rho is the reference (-1 here: within a temperature a higher rank, a lower loss); with no sequence noise no draw
    flips its sign, with noise far above the seed spread many do; a count that does not vary has no reference."""
    seq, runs = _within_runs(noise=0.0)
    draws, reference = study.within_draws(seq, runs, "effective_rank", n_draws=200)
    assert reference.stat.tolist() == [pytest.approx(-1.0)] and len(draws) == 200
    assert (study.flip_rate(draws, reference).flips == 0).all()
    seq, runs = _within_runs(noise=20.0)
    draws, reference = study.within_draws(seq, runs, "effective_rank", n_draws=200)
    assert 0.1 < study.flip_rate(draws, reference).estimate[0].value < 0.9
    draws, reference = study.within_draws(seq, runs, "rank_atol_1e-8", n_draws=20)
    assert np.isnan(reference.stat).all() and np.isnan(draws.stat).all()
    text = protocol.within_words(protocol.within_results(*_within_runs(noise=0.0), 200), 12, 200)
    assert (
        "on the effective rank, GPT-2 ρ from −1.00 to −1.00 in 95% of draws against the whole probe's −1.00 in every "
        "resample (the other sign in 0.0% [0.0%, 1.8%])" in text
    )
    assert "on the study's count, GPT-2 none: its initial rank does not vary within a temperature, so there" in text
    assert "the within-temperature ρ of its 12 learned runs (200 draws) reads" in text
    with pytest.raises(ConfigError, match="examples"):
        study.within_draws(seq, runs, "effective_rank", examples=(7, 4))
    with pytest.raises(ConfigError, match="runs"):
        study.within_draws(seq, runs.drop(columns="final_val_loss"), "effective_rank")
    # the reference is the rule's own (the runs' initial rank), whatever the recorded sequences say
    seq.loc[seq.key == "k0", "effective_rank"] += 100.0
    assert study.within_draws(seq, runs, "effective_rank", n_draws=5)[1].stat[0] == pytest.approx(-1.0)


def test_protocol_flip_table_and_judge():
    good, flaky = Estimate(0.01, 0.0, 0.03, 1000, ""), Estimate(0.3, 0.27, 0.33, 1000, "")
    t = protocol.flip_table(_flips(good, flaky))
    assert list(t["probe step"]) == [0, 20]
    assert t.set_index("probe step").loc[20, "GPT-2 (CLM): flip rate [95% CI]"] == "30.0% [27.0%, 33.0%]"
    res, glue, summary = protocol.judge(_records(), _flips(good, good), 500, "effective_rank")
    # ModernBERT: ours 5.1 - 3.05 > 0 resolved, reference 2.0 > 0: agree; GPT-2: ours -0.9 resolved, reference 0.8: part
    assert res.parts[("agrees", "modernbert")] == "supported" and res.parts[("agrees", "gpt2")] == "not supported"
    assert res.status == "not supported"
    assert glue["protocol_agreement"].startswith("For GPT-2 (CLM) they part")
    assert glue["protocol_flip_modernbert"] == "1.0% [0.0%, 3.0%]"
    assert summary.startswith("Over 500 draws of 4 + 4 examples and one run per temperature")
    assert "so few examples are enough for the sign." in summary
    assert (
        "(effective rank, every probe sequence, 2 seeds) finds for ModernBERT the same sign; for GPT-2 the opposite"
        in summary
    )
    assert protocol.protocol_finding(res, 500) == (
        "On τ = 1 against 0.001, 4 + 4 examples flip the sign in up to 1.0% of draws; that sign is ModernBERT ours, "
        "GPT-2 opposite to ours."
    )
    # no draw flips: the sentence says so in words, with the upper bounds
    never = rules.protocol_rule(
        {a: Estimate(0.0, 0.0, 0.006, 500, "built") for a in ("modernbert", "gpt2")}, res.reference, res.ours
    )
    assert protocol.flip_words(never, 500).startswith("In none of the 500 draws of 4 + 4 examples")
    assert protocol.protocol_finding(never, 500, 2.0).startswith(
        "On τ = 1 against 2, 4 + 4 examples never flip the sign"
    )
    assert "the sign of the study's statistic on τ = 1 against 2 at the last step" in protocol.flip_words(
        never, 500, 2.0
    )
    # the rule (version 2) decides on the temperature next to the stock one: our statistic reads those runs
    near = _records()
    near.ok = pd.concat([near.ok, near.ok.assign(tau=2.0, final_effective_rank=near.ok.final_effective_rank + 10)])
    judged = protocol.judge(near, _flips(good, good), 500, "effective_rank", other=2.0)[0]
    assert all(e.value < -5 for e in judged.ours.values())  # tau = 1 minus tau = 2, not minus 0.001
    assert study.neighbour((0.001, 1.0, 2.0, 4.0, 8.0)) == 2.0
    assert study.neighbour((0.001, 0.25, 1.0, 4.0)) == 4.0  # equally near on a log scale: the hotter
    with pytest.raises(ConfigError, match="taus"):
        study.neighbour((1.0,))
    # architectures trained for different steps: each is judged at its own last probe step
    uneven = _records()
    uneven.final_steps = {"modernbert": 20, "gpt2": 40}
    assert uneven.steps_text() == "40 (GPT-2) and 20 (ModernBERT) steps" and _records().steps_text() == "20 steps"
    flips40 = pd.concat(
        [
            _flips(good, good).replace({"step": {20: 40}}).query("arch == 'gpt2'"),
            _flips(good, good).query("arch == 'modernbert'"),
        ]
    )
    assert sorted(map(tuple, uneven.at_final_step(flips40)[["arch", "step"]].values)) == [
        ("gpt2", 40),
        ("modernbert", 20),
    ]
    assert protocol.judge(uneven, flips40, 500, "effective_rank")[0].status == res.status
    t = protocol.flip_table(flips40)
    assert t.set_index("probe step").loc[40, "ModernBERT (MLM): flip rate [95% CI]"] == "not trained this long"
    _, _, flaky_summary = protocol.judge(_records(), _flips(good, flaky), 500, "effective_rank")
    assert "for GPT-2 the draws do not show whether so few examples are enough" in flaky_summary or (
        "for GPT-2 so few examples are not enough for the sign" in flaky_summary
    )


def test_protocol_set_early_summary():
    t = pd.DataFrame(
        [
            {"arch": a, "step": s, "final_step": 40, "estimate": Estimate((lo + hi) / 2, lo, hi, 30, "")}
            for a, iv in (("modernbert", {0: (0.5, 0.95), 4: (0.91, 0.99)}), ("gpt2", {0: (0.2, 0.5), 4: (0.3, 0.6)}))
            for s, (lo, hi) in iv.items()
        ]
    )
    text = protocol.set_early_summary(rules.set_early_rule(t), "40 steps")
    assert text.startswith(f"The rank at step k predicts the final rank (Spearman ρ above {rules.SET_EARLY_RHO:g}")
    assert "ModernBERT (MLM): first early step 4, ρ 0.95 [0.91, 0.99]" in text
    assert "GPT-2 (CLM): none clears it; last early step 4" in text


# --- causal -------------------------------------------------------------------------------------


def _outcomes() -> pd.DataFrame:
    rows = []
    for a in ("modernbert", "gpt2"):
        for c, shift in (("stock", 0.0), ("init", 0.1), ("lr", 0.0), ("twin", 0.1), ("tau", 0.1)):
            for seed in range(3):
                gap = 0.01 * seed if c == "tau" else 0.0
                rows.append(
                    {
                        "arch": a,
                        "cell": c,
                        "seed": seed,
                        "status": "complete",
                        "initial": 2.0 + 10 * shift,
                        "during": 3.0 + shift + gap,
                        "final_val_loss": 5.0 + shift + seed * 0.02 + gap,
                    }
                )
    return pd.DataFrame(rows)


def test_causal_twins_table_and_gaps():
    twins = causal.twins_table(_outcomes())
    t = twins.set_index(["model", "outcome"])
    loss, initial, during = (causal.OUTCOMES[o] for o in ("final_val_loss", "initial", "during"))
    assert list(twins.outcome[:3]) == [initial, during, loss] and list(twins.model[:1]) == ["ModernBERT (MLM)"]
    assert t.loc[("ModernBERT (MLM)", loss), "largest per-seed |τ − twin|"] == pytest.approx(0.02)
    assert t.loc[("ModernBERT (MLM)", initial), "largest per-seed |τ − twin|"] == 0.0
    assert t.loc[("GPT-2 (CLM)", loss), "seed sd"] == pytest.approx(0.03)  # 5.1 + 0.03 seed
    assert t.loc[("ModernBERT (MLM)", during), "τ − twin, over seeds [95% CI]"].startswith("0.0100 [")
    assert causal.twin_gaps(twins) == {"causal_twin_max_loss": "0.02", "causal_twin_max_rank": "0.02"}


def test_causal_effects_table_glue_and_order():
    eff = causal.effects(_outcomes())
    tab, glue = causal.effects_table(eff)
    cells = [f"“{causal.CELL_LABELS[c]}” minus “τ = 1”" for c in ("init", "lr", "twin", "tau")]
    assert list(tab.columns) == ["model", "outcome", *cells]
    # constructed: no spread; each model named after its effect, in the book's order
    assert glue["causal_initial_init"] == "1.000 in every resample (ModernBERT) and 1.000 in every resample (GPT-2)"
    assert (
        glue["causal_final_val_loss_lr"] == "0.0000 in every resample (ModernBERT) and 0.0000 in every resample (GPT-2)"
    )
    assert len(glue) == 3 * 4 and not any("twin_" in k and "tau - twin" in k for k in glue)
    # a design of one model (the default's, GPT-2 alone): its sentences and tables name it alone
    one = _outcomes()[lambda d: d.arch == "gpt2"]
    assert causal.effects_table(causal.effects(one))[1]["causal_initial_init"] == "1.000 in every resample (GPT-2)"
    assert list(causal.twins_table(one).model.unique()) == ["GPT-2 (CLM)"]
    assert (
        tab.set_index(["model", "outcome"]).loc[("ModernBERT (MLM)", causal.OUTCOMES["initial"]), cells[-1]]
        == "1.000 in every resample"
    )


def test_causal_runs_text_spans_and_summary():
    runs = pd.DataFrame(
        {
            "hidden_size": [32] * 4,
            "num_layers": 2,
            "head_dim": 8,
            "max_steps": 40.0,
            "status": ["complete", "complete", "failed", "complete"],
        }
    )
    assert causal.runs_text(runs, "quick", 2) == (
        "4 runs (the quick profile: hidden size 32, 2 layers, head dimension 8, 40 steps; 2 seeds), 1 diverged"
    )  # the default trains the 2 x 2 at its own sizes; a profile at another's says so
    assert causal.runs_text(runs, "paper", 2).startswith("4 runs (the paper profile, at the quick profile's sizes: ")
    inter = pd.DataFrame(
        {
            "arch": "modernbert",
            "train_tau": [1.0] * 3 + [0.01] * 3,
            "seed": 0,
            "effective_rank": [1.0, 2.0, 4.0, 3.0, 3.5, 3.25],
            "val_loss": [5.0, 5.1, 5.3, 5.0, 5.0, 5.01],
        }
    )
    assert causal.intervention_spans(inter, "effective_rank") == {
        "causal_int_rank": "0.50 to 3.00",
        "causal_int_loss": "0.01 to 0.30",
    }
    tiny = inter.assign(val_loss=[5.0, 5.0 + 7.1e-5, 5.0, 5.0, 5.0 + 2.2e-4, 5.0])
    assert causal.intervention_spans(tiny, "effective_rank")["causal_int_loss"] == "7.1×10⁻⁵ to 0.00022"
    table = _outcomes()
    v = rules.causal_rule(table)
    text = causal.verdict_summary(v, causal.twins_table(table), tau=0.01, profile="ci", n_runs=30)
    # the answer in words first, per architecture, from each one's status
    assert text.startswith(causal.answer_text(v))
    for a, r in v.arch.items():
        name = {"modernbert": "ModernBERT", "gpt2": "GPT-2"}[a]
        want = {
            "supported": f"or {name} the loss follows the initial logit scale",
            "not supported": f"or {name} the loss follows the query/key step size",
        }.get(r.verdict.status, f"or {name} the ")
        assert want in text
    assert "tau = 0.01, s = 10." in text
    # the twins' gaps with their units, loss and rank apart
    assert (
        "differ by at most 0.02 nats in final validation loss and 0.02 units of rank. The ci profile, 30 runs." in text
    )
    assert causal.causal_text(v, "gpt2") in text


def test_causal_figures_name_data_and_source():
    table = _outcomes()
    fig, data, name, source = cplots.cells_figure(table, tau=0.01, measure="effective_rank", profile="paper", n_runs=30)
    assert name == "causal_cells" and data is table
    assert source == "paper profile, at the quick profile's sizes, 30 runs."
    labels = [t.get_text() for ax in fig.axes for t in ax.get_xticklabels()]
    assert "τ = 0.01" in labels and "q/k lr × s" in labels
    inter = pd.DataFrame(
        {
            "arch": ["modernbert"] * 4,
            "train_tau": [1.0, 1.0, 0.01, 0.01],
            "seed": 0,
            "eval_tau": [0.1, 1.0, 0.01, 1.0],
            "effective_rank": [1.0, 2.0, 3.0, 4.0],
            "val_loss": [5.0, 5.1, 5.2, 5.3],
        }
    )
    fig, data, name, source = cplots.intervention_figure(inter, measure="effective_rank", profile="ci")
    assert name == "causal_intervention" and source == "The ci profile."
    assert np.isclose(data.effective_rank.sum(), 10.0)


# --- measure ------------------------------------------------------------------------------------


def _setting() -> ms.Setting:
    used = pd.DataFrame(
        {"arch": ["modernbert", "modernbert", "modernbert", "gpt2", "gpt2"], "seed": [0, 1, 2, 0, 1], "max_len": 64}
    )
    return ms.Setting.of(used, "ci", 16, [10.0, 0.1, 1.0])


def test_measure_setting_glue_and_caption_tail():
    S = _setting()
    assert (S.n_runs, S.n_seeds, S.n, S.taus) == (5, 2, 64, [0.1, 1.0, 10.0])  # fewest seeds of an architecture
    assert S.glue() == dict(
        measure_n=64,
        measure_probe_size=16,
        measure_n_runs=5,
        measure_n_seeds=2,
        measure_tau_max="10",
        measure_tau_min="0.1",
    )
    assert S.runs_text == "ci profile, 5 runs, 2 seeds per architecture"
    with pytest.raises(ConfigError, match="used"):
        ms.Setting.of(pd.DataFrame(columns=["arch", "seed", "max_len"]), "ci", 16, [1.0])


def test_measure_baselines_and_trained_facts():
    causal_ranks = {"rank_rtol_1e-2": 30.0, "effective_rank": 20.0}
    b = mplots.baselines(causal_ranks, 64)
    assert list(b.label) == ["uniform causal attention $U_n$"] * 2 + ["n", "n"]
    assert list(b.arch) == ["gpt2", "gpt2", "modernbert", "gpt2"] and b.value.tolist() == [30.0, 20.0, 64.0, 64.0]
    t = mplots.baselines(causal_ranks, 64, temperature=True)
    assert t.label.isna().sum() == 2 and "n = 64" in set(t.label)
    one = t[t.measure == "rank one"].iloc[0]
    assert (one.arch, one.value, one.label) == ("modernbert", 1.0, "uniform attention: rank 1")
    at1 = pd.DataFrame(
        [
            dict(arch=a, state=s, measure=m, mean=i + (10 if s == "trained" else 0))
            for a in ("modernbert", "gpt2")
            for s in ("initialisation", "trained")
            for i, m in enumerate(rank.RANK_MEASURES)
        ]
    )
    facts = ms.trained_facts(at1)
    assert len(facts) == 2 * len(rank.RANK_MEASURES)
    assert facts[f"measure_gpt2_trained_{rank.RANK_MEASURES[2]}"] == 12.0


def test_measure_figures_name_data_and_source():
    S = _setting()
    rows = [
        dict(arch=a, tau=t, pipeline=p, measure=m, mean=5.0, low=4.0, high=6.0, n=2)
        for a in ("modernbert", "gpt2")
        for t in (0.1, 1.0, 10.0)
        for p in (spectra.REFERENCE, "float32 probs, float64 SVD")
        for m in rank.RANK_MEASURES
    ]
    by_tau = pd.DataFrame(rows)
    fig, data, name, source = mplots.precision_figure(by_tau, S)
    assert name == "measure_precision" and data is by_tau
    assert source == "(ci profile, 5 runs, 2 seeds per architecture)."
    ref = by_tau[by_tau.pipeline == spectra.REFERENCE]
    fig, data, name, source = mplots.ranks_vs_tau_figure(ref, ms.uniform_causal(8), S, highlight="effective_rank")
    assert name == "measure_ranks_vs_tau" and source == "(ci profile, 5 runs, 2 seeds per architecture)."
    assert (S.glue()["measure_tau_min"], S.glue()["measure_tau_max"]) == ("0.1", "10")  # the caption's tau range


def test_matrix_facts_print_a_tiny_smallest_singular_value_as_it_is_not_as_zero():
    """The measure chapter argues sigma_min is tiny but never zero: 1e-15 is printed as 1×10⁻¹⁵, not 0.00."""
    rows = [
        dict(tau=1.0, arch=a, state=s, max_gap=10.0, sigma_min=v, sigma_1=1.0, min_diag=0.01, log10_det=-40.0)
        for a in ("modernbert", "gpt2")
        for s, v in (("initialisation", 1e-15), ("trained", 3e-4))
    ]
    facts = ms.matrix_facts(pd.DataFrame(rows), n=64)
    assert facts["measure_smin_gpt2_init"] == "1×10⁻¹⁵" and facts["measure_smin_modernbert_trained"] == "0.0003"
    assert facts["measure_certified_gpt2_pct"] == 50.0  # 3e-4 is above 64 ε σ₁, 1e-15 is not


def test_the_temperature_peak_is_reported_with_its_interval_and_whether_the_study_straddles_it():
    """(iii)'s trend over the whole fine grid: where the primary measure peaks, bracketed by the grid values beside
    its bootstrap interval, and whether the study's two temperatures lie on either side (a two-point comparison
    across a peak reads two slopes of opposite sign)."""
    from attnrank.sections import temp

    taus = [0.001, 0.004, 0.016, 0.063, 0.25, 1.0, 4.0]
    rows = [
        dict(
            arch=a, tau=t, seed=s, effective_rank=(10 - abs(np.log(t / 0.016)) if a == "gpt2" else np.log(t)) + 0.01 * s
        )
        for a in ("gpt2", "modernbert")
        for t in taus
        for s in range(2)
    ]
    text = temp.peak_text(pd.DataFrame(rows), "effective_rank", cold=0.001)
    assert "peaks at the grid's hot end (τ = 4, still rising there) for ModernBERT" in text  # no peak on the grid
    assert "and at τ = 0.016 (between 0.004 and 0.063) for GPT-2" in text
    assert text.endswith("lie on either side of the peak for GPT-2.")


def test_the_loss_rule_says_how_far_the_rank_moves_within_a_temperature():
    """(ii) is decided within a temperature, where the initial rank moves from seed to seed and, where the
    head-dimension grid adds runs, with the head dimension: the sentence gives that range (median over temperatures,
    and the largest, named when it holds two head dimensions) beside the range between temperatures, per model."""
    from attnrank.sections import loss

    learned = pd.DataFrame(
        {
            "arch": ["gpt2"] * 6,
            "tau": [1.0, 1.0, 1.0, 2.0, 2.0, 4.0],
            "head_dim": [32, 32, 16, 32, 32, 32],
            "initial_effective_rank": [5.0, 5.1, 5.3, 6.0, 6.1, 9.0],
        }
    )
    text = loss.exposure_text(learned, "effective_rank", ["gpt2", "modernbert"])
    # median of 0.3 and 0.1; the widest at tau = 1, which holds two head dimensions; 9.0 - 5.13
    assert (
        "spans, as a median over temperatures, 0.20 for GPT-2 (up to 0.30 at τ = 1, with two head dimensions; between "
        "temperatures 3.87), so" in text
    )
    assert "variation of the rank (and, where a temperature holds two head dimensions, their difference), not" in text
    one = loss.exposure_text(learned.assign(head_dim=32), "effective_rank", ["gpt2"])
    assert "(up to 0.30 at τ = 1; between" in one and "their difference" not in one
    assert "ModernBERT" not in text and loss.exposure_text(learned.iloc[[0, 3, 5]], "effective_rank", ["gpt2"]) == ""


def test_the_within_correlation_is_asked_again_with_the_head_dimension_held_fixed():
    """Where a temperature holds two head dimensions, the within-temperature ρ can be carried by the head-dimension
    contrast: built so that within each cell of τ × head dimension a higher rank goes with a higher loss (ρ = 1)
    while the head-dimension-16 runs (lower rank, higher loss) turn the pooled ρ with τ alone negative (−7.5/19.5)."""
    from attnrank.analysis import stats
    from attnrank.sections import loss

    learned = pd.DataFrame(
        {
            "arch": ["gpt2"] * 9,
            "tau": [1.0] * 6 + [2.0] * 3,
            "head_dim": [32, 32, 32, 16, 16, 16, 32, 32, 32],
            "initial_effective_rank": [5.0, 5.1, 5.2, 4.0, 4.1, 4.2, 6.0, 6.1, 6.2],
            "final_val_loss": [3.0, 3.1, 3.2, 3.5, 3.6, 3.7, 2.0, 2.1, 2.2],
        }
    )
    pooled = stats.spearman_within(learned.initial_effective_rank, learned.final_val_loss, learned.tau)
    assert pooled.value == pytest.approx(-7.5 / 19.5)
    text = loss.exposure_text(learned, "effective_rank", ["gpt2", "modernbert"], {"gpt2": pooled})
    assert (
        "With the head dimension held fixed as well (strata τ × head dimension, seed-to-seed variation alone)" in text
    )
    assert "the within ρ reads: GPT-2 1.00 in every resample against −0.38 [−0.71, 1.00] with τ alone." in text
    assert "ModernBERT" not in text.split("held fixed")[1]
    assert "rests on the head-dimension contrast" not in text  # the fixed ρ is resolved: nothing carried
    # a sign resolved with τ alone that the fixed strata leave unresolved is said to rest on the head-dimension contrast
    from attnrank.analysis.stats import Estimate

    noisy = learned.assign(final_val_loss=[3.1, 3.0, 3.2, 3.6, 3.5, 3.7, 2.1, 2.0, 2.2])
    ruled = {"gpt2": Estimate(-0.5, -0.9, -0.1, 9, "")}
    assert "for GPT-2 the sign resolved with τ alone rests on the head-dimension contrast" in loss.exposure_text(
        noisy, "effective_rank", ["gpt2"], ruled
    )
    # one head dimension per temperature: nothing to hold fixed, no second sentence
    assert "held fixed" not in loss.exposure_text(
        learned.assign(head_dim=32), "effective_rank", ["gpt2"], {"gpt2": pooled}
    )


def test_the_causal_chapter_says_which_cells_learned(monkeypatch):
    """The learned gate reads the stock cell alone; the sentence names, per model, the cells whose worst run ends below
    its bigram count model and those that end above it in some seed (bigram fixed at 5.0 here)."""
    from attnrank.analysis import baselines

    monkeypatch.setattr(baselines, "baseline_losses", lambda r: {"bigram": 5.0})
    runs = _outcomes()[lambda d: d.arch == "gpt2"].assign(
        final_val_loss=lambda d: d.cell.map({"stock": 4.4, "init": 4.5, "lr": 5.05, "twin": 5.04, "tau": 5.03}),
        tau=lambda d: d.cell.map(lambda c: 0.01 if c == "tau" else 1.0),
    )
    assert causal.cells_learned_text(runs) == (
        "Worst run of each cell against its bigram count model (nats; the learned gate reads the stock cell alone): "
        "for GPT-2, every run of “τ = 1” (−0.60), “init × s” (−0.50) ends below its bigram count model; "
        "“q/k lr × s” (0.05), “init × s, lr × s (twin)” (0.04), “τ” (0.03) end above it in at least one seed."
    )
