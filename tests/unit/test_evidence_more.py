"""`attnrank.evidence` and the figure helpers the chapters on trained models call, on small constructed tables
(no training: every run table here is written by hand)."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from attnrank import baselines, evidence, glossary, rank, rules, stats
from attnrank.errors import ConfigError
from attnrank.glossary import fmt_estimate
from attnrank.plots import sweeps
from attnrank.plots import training as tp
from attnrank.rules import ArchResult, DynamicsResult, SweepVerdict
from attnrank.stats import Estimate
from attnrank.verdicts import Verdict


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _est(value, low, high, n=6, p=float("nan")):
    return Estimate(value, low, high, n, "constructed", p=p)


def _runs() -> pd.DataFrame:
    """Two archs x taus (0.01, 1) x head dims (8, 16) x seeds (0, 1, 2); one gpt2 run failed."""
    rows = []
    for a in ("bert", "gpt2"):
        for t in (0.01, 1.0):
            for h in (8, 16):
                for s in (0, 1, 2):
                    failed = (a, t, h, s) == ("gpt2", 1.0, 16, 2)
                    rows.append(
                        dict(
                            key=f"{a}-{t}-{h}-{s}",
                            arch=a,
                            tau=t,
                            head_dim=h,
                            seed=s,
                            status="failed" if failed else "complete",
                            initial_effective_rank=10 * h + s - math.log10(t),
                            final_val_loss=5.0 - 0.1 * h - 0.01 * s + t,
                        )
                    )
    return pd.DataFrame(rows)


def test_check_in_grid_accepts_a_grid_value_and_names_the_parameter_otherwise():
    evidence.check_in_grid("heatmap_tau", 0.25 + 1e-12, [0.0625, 0.25, 1.0])
    with pytest.raises(ConfigError) as e:
        evidence.check_in_grid("heatmap_tau", 0.3, [0.0625, 0.25, 1.0])
    assert e.value.param == "heatmap_tau"
    assert "got 0.3; allowed values (the sweep's temperatures): 0.0625, 0.25, 1" in str(e.value)


def test_main_runs_labels_each_run_with_its_grid(monkeypatch):
    wide = _runs()
    monkeypatch.setattr(evidence, "table", lambda configs, long: wide.copy())
    monkeypatch.setattr("attnrank.experiments.main_sweep", lambda *a, **k: [])
    monkeypatch.setattr(evidence, "resolve_config", lambda arch, profile: type("C", (), {"head_dim": 16})())
    d = evidence.main_runs("ci")
    assert set(d[d.head_dim == 16].sweep) == {"temperature grid"}
    assert set(d[d.head_dim == 8].sweep) == {"head-dimension grid"}
    assert len(d) == len(wide)


def test_sweep_facts_count_runs_seeds_and_failures():
    facts = evidence.sweep_facts("x", _runs(), {"taus": [0.01, 0.25, 1.0], "head_dims": [8, 16]})
    assert facts == {"x_taus": "0.01, 0.25, 1", "x_head_dims": "8, 16", "x_n_seeds": 3, "x_n_runs": 24, "x_n_failed": 1}


def test_estimate_texts_names_each_estimate_by_prefix_name_and_arch():
    out = evidence.estimate_texts(
        "loss", {"val_rho": {"bert": _est(-0.5, -0.8, -0.1, n=12)}, "speed_rho": {"gpt2": _est(0.25, 0.0, 0.5, n=9)}}
    )
    assert out == {
        "loss_val_rho_bert": "−0.50 [−0.80, −0.10], n = 12",
        "loss_speed_rho_gpt2": "0.25 [0.00, 0.50], n = 9",
    }
    short = evidence.estimate_texts("d", {"r": {"bert": _est(0.5, 0.4, 0.6)}}, n=False)
    assert short == {"d_r_bert": "0.50 [0.40, 0.60]"}


def test_grid_correlations_per_temperature_and_architecture():
    d = _runs()
    d = d[d.status == "complete"]
    rho = evidence.grid_correlations(d, "initial_effective_rank", "final_val_loss", [0.01, 1.0], ("bert", "gpt2"))
    assert list(rho) == [0.01, 1.0] and list(rho[1.0]) == ["bert", "gpt2"]
    # within one temperature the loss falls as the rank rises: rho = -1 over the complete runs
    assert rho[0.01]["bert"].value == pytest.approx(-1.0) and rho[0.01]["bert"].n == 6
    assert rho[1.0]["gpt2"].n == 5
    direct = stats.spearman(
        d[(d.arch == "gpt2") & (d.tau == 1.0)].initial_effective_rank,
        d[(d.arch == "gpt2") & (d.tau == 1.0)].final_val_loss,
    )
    assert fmt_estimate(rho[1.0]["gpt2"]) == fmt_estimate(direct)


def test_stability_facts_read_the_median_change_and_the_shares():
    change = pd.DataFrame(
        {
            "measure": "effective_rank",
            "arch": ["bert"] * 4 + ["gpt2"] * 2,
            "rel_change": [0.05, 0.2, 0.01, 0.5, 0.02, 0.03],
            "increased": [True, False, False, True, False, False],
        }
    )
    shares = rules.stability_table(change, 0.1)
    res = DynamicsResult(
        "inconclusive at this scale", change={"bert": _est(0.12, 0.03, 0.4, n=4), "gpt2": _est(0.025, 0.02, 0.03, n=2)}
    )
    f = evidence.stability_facts("dyn", res, shares, "effective_rank")
    assert f["dyn_median_change_bert"] == "12% [3%, 40%], n = 4"
    assert f["dyn_share_stable_bert"] == "50%" and f["dyn_share_increased_bert"] == "50%"
    assert f["dyn_max_change_bert"] == "50%" and f["dyn_max_change_gpt2"] == "3%"
    assert f["dyn_share_stable_gpt2"] == "100%" and len(f) == 8


def test_head_changes_is_the_largest_relative_change_of_one_head():
    rows = []
    for a, (first, last) in {"bert": ((2.0, 4.0), (3.0, 3.0)), "gpt2": ((5.0, 10.0), (4.0, 6.0))}.items():
        for step, values in ((0, first), (20, last)):
            for head, v in enumerate(values):
                rows.append(dict(arch=a, when=f"step {step}", step=step, layer=0, head=head, value=v))
    out = evidence.head_changes(pd.DataFrame(rows))
    assert out == {"bert": pytest.approx(0.5), "gpt2": pytest.approx(0.4)}  # |3-2|/2 ; |6-10|/10


def test_convergence_facts():
    runs = pd.DataFrame({"status": ["complete", "complete", "failed"], "censored": [True, False, False]})
    f = evidence.convergence_facts("loss", runs, {"bert": 2.34567, "gpt2": 3.0}, 130, quantile=0.75, smooth=3)
    assert f == {
        "loss_level_bert": "2.346",
        "loss_level_gpt2": "3.000",
        "loss_level_quantile": "75%",
        "loss_smooth": 3,
        "loss_n_censored": 1,
        "loss_n_complete": 2,
        "loss_cens_value": 130,
    }


def test_ngram_references_keep_the_two_count_models(monkeypatch):
    monkeypatch.setattr(
        baselines, "ngram_losses", lambda cfg: {"unigram": len(cfg.arch) + 0.5, "bigram": 1.0, "n_targets": 7}
    )
    losses, refs = evidence.ngram_references("ci", ("bert", "gpt2"))
    assert losses["gpt2"]["n_targets"] == 7
    assert refs == {"bert": {"unigram": 4.5, "bigram": 1.0}, "gpt2": {"unigram": 4.5, "bigram": 1.0}}


def test_temperature_facts_and_grid_text():
    d = _runs()[lambda x: x.head_dim == 16].assign(tau=lambda x: x.tau.where(x.tau != 1.0, 0.25))
    d.attrs["missing"] = [0.3]
    f = evidence.temperature_facts("temp", d, {"taus": [0.001, 0.01, 1.0]}, 0.3)
    assert f["temp_grid_text"] == "3 values a factor of about 32 apart" and f["temp_tau"] == "0.3"
    assert (f["temp_n_runs"], f["temp_n_seeds"], f["temp_n_taus"], f["temp_head_dim"], f["temp_n_failed"]) == (
        12,
        3,
        2,
        16,
        1,
    )
    assert (f["temp_tau_min"], f["temp_tau_max"]) == ("0.001", "1")
    assert f["temp_init_std"] == pytest.approx(0.02) and isinstance(f["temp_n_runs"], int)
    assert evidence.temperature_grid_text(d, "ci") == (
        "12 runs (ci profile): 2 temperatures x 2 architectures x 3 seeds at head dimension 16; off-grid settings "
        "added (trained once, then served by the store): 0.3."
    )
    d.attrs["missing"] = []
    assert evidence.temperature_grid_text(d, "ci").endswith("served by the store): none.")


def _sweep_verdict() -> SweepVerdict:
    bert = ArchResult(
        Verdict("supported", _est(1.5, 0.5, 2.5, n=6, p=0.1), 0.0, "above", 1.0, None),
        shape=_est(0.01, 0.001, 0.1),
        grid=(0.0001, 0.001, 0.01, 0.1, 1.0),
        spread=0.25,
    )
    gpt2 = ArchResult(
        Verdict(
            "inconclusive at this scale", _est(-0.2, -1.0, 0.6, n=6, p=0.7), 0.0, "above", 1.0, 12, "seeds per arm"
        ),
        shape=_est(1.0, 0.25, 1.0),
        grid=(0.25, 1.0),
        spread=0.5,
    )
    return SweepVerdict("inconclusive at this scale", {"bert": bert, "gpt2": gpt2}, 12)


def test_rank_and_loss_verdict_facts():
    rv = _sweep_verdict()
    f = evidence.rank_verdict_facts("temp", rv)
    assert f["temp_cold_diff_bert"] == "1.50 [0.50, 2.50], n = 6" and f["temp_cold_p_gpt2"] == pytest.approx(0.7)
    assert f["temp_rank_spread_gpt2"] == 0.5
    assert f["temp_peak_bert"] == "0.01 (95% interval on the grid 0.001 to 0.1; interior peak at 0.01)"
    assert f["temp_rank_needed_bert"] == "none (resolved)" and f["temp_rank_needed_gpt2"] == "12"
    g = evidence.loss_verdict_facts("temp", rv)
    assert g == {
        "temp_loss_rho_bert": "1.50 [0.50, 2.50], n = 6",
        "temp_loss_spread_bert": 0.25,
        "temp_loss_best_bert": "0.01 (95% interval on the grid 0.001 to 0.1)",
        "temp_loss_rho_gpt2": "−0.20 [−1.00, 0.60], n = 6",
        "temp_loss_spread_gpt2": 0.5,
        "temp_loss_best_gpt2": "1 (95% interval on the grid 0.25 to 1)",
    }


def test_init_facts_and_means_at_prefix():
    init = pd.DataFrame(
        {
            "arch": ["bert", "bert", "gpt2", "gpt2"],
            "tau": [0.25, 1.0, 0.25, 1.0],
            "n": 8,
            "logit_sd": [0.4, 0.1, 0.8, 0.2],
            "attention_entropy": [2.0, 2.07, 1.0, 1.5],
        }
    )
    uniform = baselines.uniform_ranks(8)
    f = evidence.init_facts("temp", init, uniform, {"tau": 0.25, "base": 1.0})
    assert f["temp_logit_sd_tau_gpt2"] == 0.8 and f["temp_entropy_base_bert"] == 2.07
    assert f["temp_n"] == 8 and f["temp_log_n"] == pytest.approx(math.log(8))
    assert f["temp_uniform_bert"] == pytest.approx(1.0)  # uniform bidirectional rows: rank one
    assert f["temp_uniform_causal_rank_rtol"] == 8.0 and f["temp_uniform_gpt2"] > 1.5
    assert evidence.means_at(init, "logit_sd", {"x": 1.0}, prefix="p_") == {"p_x_bert": 0.1, "p_x_gpt2": 0.2}


def test_failures_without_an_intro_is_the_table_alone():
    d = _runs()
    shown = evidence.failures(d, None, ("arch", "seed", "status"))
    assert len(shown) == 1 and shown[0].to_dict("records") == [{"arch": "gpt2", "seed": 2, "status": "failed"}]
    ok = evidence.failures(d[d.status == "complete"], None, none="No run of the sweep diverged.")
    assert len(ok) == 1 and ok[0].data == "No run of the sweep diverged."


def test_grid_runs_select_and_sort():
    d = _runs().sample(frac=1.0, random_state=0)
    g = evidence.grid_runs(d, head_dims=[8], taus=[1.0])
    assert len(g) == 6 and set(g.head_dim) == {8} and set(g.tau) == {1.0}
    assert list(zip(g.arch, g.seed)) == [("bert", 0), ("bert", 1), ("bert", 2), ("gpt2", 0), ("gpt2", 1), ("gpt2", 2)]


def test_head_dim_grid_text():
    d = _runs()[lambda x: x.tau == 1.0]
    assert evidence.head_dim_grid_text(d, "ci", [8, 16], 64, [1.0, 0.001]) == (
        "12 head-dimension runs (ci profile): head dimensions 8, 16 at hidden size 64 (heads: 8, 4), tau in "
        "{1, 0.001}, 3 seeds, both archs."
    )


def test_lever_verdicts_are_the_rule_applied_per_measure_on_loss_and_cold():
    d = _runs()
    for m in rank.RANK_MEASURES:
        d[f"initial_{m}"] = d.initial_effective_rank + len(m)
    t_runs = d[(d.head_dim == 16)]
    hd1, hdmin = d[d.tau == 1.0], d[d.tau == 0.01]
    by_m, loss, cold = evidence.lever_verdicts(t_runs, hd1, hdmin, primary="effective_rank", effect=1.0)
    assert tuple(by_m) == rank.RANK_MEASURES
    direct = rules.lever_comparison(t_runs, hd1, "initial_effective_rank", effect=1.0, archs=("bert", "gpt2"))
    assert fmt_estimate(by_m["effective_rank"]["bert"].verdict.estimate) == fmt_estimate(
        direct["bert"].verdict.estimate
    )
    assert loss.n_runs == len(t_runs[t_runs.status == "complete"]) + len(hd1[hd1.status == "complete"])
    assert cold.n_runs == len(t_runs) + len(hdmin)


def test_verdict_table_and_measure_constants():
    results = {"rank_rtol_1e-2": DynamicsResult("supported"), "effective_rank": DynamicsResult("not supported")}
    t = evidence.verdict_table(results)
    assert t.to_dict("list") == {
        "measure": ["rank, rtol 1e-2", "effective rank"],
        "verdict under this measure": ["supported", "not supported"],
    }
    assert "attention_entropy" not in rank.RANK_MEASURES and len(rank.RANK_MEASURES) == 5
    assert glossary.MEASURE_LABELS["attention_entropy"] == "attention entropy (nats)"


def test_environment_profile_tables_and_paper_facts():
    env, facts = evidence.environment("repro", "ci")
    assert list(env.columns) == ["package", "version", "locked"] and env.package.iloc[0] == "python"
    assert "pandas" in set(env.package) and env.set_index("package").version["pandas"] == pd.__version__
    from attnrank.provenance import locked_versions

    assert env.set_index("package").locked["torch"] == locked_versions()["torch"]  # the lock file's pin
    assert facts["repro_lock"].startswith("requirements.lock (SHA-256 ")
    assert facts["repro_profile"] == "ci" and isinstance(facts["repro_threads"], int)
    assert len(facts["repro_code_hash"]) == 16
    defaults, grids = evidence.profile_tables()
    assert "paper" in defaults.columns and defaults.loc["hidden_size", "paper"].isdigit()
    from attnrank.experiments import SWEEP_DEFAULTS
    from attnrank.profiles import profile_defaults

    assert grids.loc["seeds", "ci"] == str(SWEEP_DEFAULTS["ci"]["seeds"])
    paper = evidence.paper_facts("repro")
    assert paper["repro_paper_width"] == profile_defaults("paper")["hidden_size"]
    assert paper["repro_paper_seeds"] == len(SWEEP_DEFAULTS["paper"]["seeds"]) and len(paper) == 6


# ------------------------------------------------------------------ figure helpers


def _rank_summary() -> pd.DataFrame:
    rows = []
    for a in ("bert", "gpt2"):
        for m in ("effective_rank", "rank_rtol_1e-2"):
            for t in (0.01, 1.0):
                for s in (0, 1):
                    for step in (0, 10):
                        rows.append(
                            dict(
                                arch=a,
                                measure=m,
                                tau=t,
                                head_dim=16,
                                seed=s,
                                status="complete",
                                step=step,
                                mean=5 + s + step / 10 - math.log10(t),
                            )
                        )
    return pd.DataFrame(rows)


def _dotted(ax):
    return [ln.get_ydata()[0] for ln in ax.get_lines() if ln.get_linestyle() == ":"]


def test_measure_trajectories_draw_the_uniform_baseline_only_for_the_given_archs():
    uniform = {
        "bert": {"effective_rank": 1.0, "rank_rtol_1e-2": 1.0},
        "gpt2": {"effective_rank": 7.5, "rank_rtol_1e-2": 32},
    }
    fig = tp.measure_trajectories(_rank_summary(), uniform, label="uniform", archs=("gpt2",))
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(panels) == 4
    assert [_dotted(ax) for ax in panels] == [[], [7.5], [], [32]]  # rows: measures; columns: bert, gpt2
    assert panels[0].get_ylabel() == "effective rank" and panels[2].get_ylabel() == "rank, rtol 1e-2"
    both = tp.measure_trajectories(_rank_summary(), uniform, label="uniform")
    assert [_dotted(ax) for ax in both.axes if ax.get_label() != "<colorbar>"] == [[1.0], [7.5], [1.0], [32]]


def test_head_dim_trajectories_and_val_loss_trajectories():
    d = _rank_summary()
    d = d[d.measure == "effective_rank"].assign(head_dim=lambda x: np.where(x.seed == 0, 8, 16))
    fig = tp.head_dim_trajectories(d, highlight=16, ylabel="effective rank")
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(panels) == 4 and "τ = 0.01" in panels[0].get_title() and "τ = 1" in panels[1].get_title()
    assert all(len([ln for ln in ax.get_lines() if ln.get_linewidth() > 2.5]) == 1 for ax in panels)
    ev = d.rename(columns={"mean": "val_loss"})
    fig = tp.val_loss_trajectories(ev, highlight=1.0)
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(panels) == 2 and panels[0].get_ylabel() == "validation loss (nats/token)"


def test_loss_trajectories_levels_and_references():
    d = _rank_summary()[lambda x: x.measure == "effective_rank"]
    curves = pd.concat(
        [d.assign(curve="validation loss", value=d["mean"]), d.assign(curve="training loss", value=d["mean"] - 1)]
    )
    fig = tp.loss_trajectories(curves, {"bert": 5.5, "gpt2": 6.5}, {"bert": {"unigram": 6.0}, "gpt2": {"unigram": 7.0}})
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(panels) == 4
    assert _dotted(panels[2]) == [5.5] and _dotted(panels[3]) == [6.5]  # levels on the training-loss row
    assert panels[0].get_ylabel() == "validation loss (nats)" and panels[2].get_ylabel() == "training loss (nats)"


def test_head_dim_scatter_annotates_each_panel_with_its_rho():
    d = _runs()
    rho = {
        1.0: {"bert": _est(-0.5, -0.9, 0.1, n=6), "gpt2": _est(0.2, -0.4, 0.7, n=5)},
        0.01: {"bert": _est(-1.0, -1.0, -1.0, n=6), "gpt2": _est(-1.0, -1.0, -1.0, n=6)},
    }
    fig = tp.head_dim_scatter(
        d,
        x="initial_effective_rank",
        y="final_val_loss",
        rho=rho,
        references={"bert": {"unigram": 9.0}, "gpt2": {"unigram": 9.0}},
        xlabel="initial",
        ylabel="final",
    )
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    # the corner text of a panel: its rho and runs, then the reference lines outside the y-range
    assert texts == ["ρ = −1.00 [−1.00, −1.00]\nn = 6 runs\nunigram 9.00 (above the scale)"] * 2 + [
        "ρ = −0.50 [−0.90, 0.10]\nn = 6 runs\nunigram 9.00 (above the scale)",
        "ρ = 0.20 [−0.40, 0.70]\nn = 5 runs\nunigram 9.00 (above the scale)",
    ]
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(panels) == 4 and "τ = 0.01" in panels[0].get_title() and "τ = 1" in panels[2].get_title()


def test_limit_lines_and_by_setting_title():
    limits = pd.DataFrame(
        {
            "arch": ["bert", "bert", "gpt2"],
            "tau": [1.0, 0.001, 1.0],
            "measure": ["effective_rank"] * 3,
            "value": [3.0, 9.0, 4.0],
        }
    )
    lines = sweeps.limit_lines(limits, 1.0, "limit")
    assert lines[["hue", "value", "label"]].to_dict("records") == [
        {"hue": "bert", "value": 3.0, "label": "limit"},
        {"hue": "gpt2", "value": 4.0, "label": "limit"},
    ]
    d = _runs().assign(measure="effective_rank", value=lambda x: x.initial_effective_rank)
    fig = sweeps.by_setting(d, "head_dim", facet="measure", title="τ = 1")
    assert fig._suptitle is not None and fig._suptitle.get_text() == "τ = 1"
    assert sweeps.by_setting(d, "head_dim", facet="measure")._suptitle is None
