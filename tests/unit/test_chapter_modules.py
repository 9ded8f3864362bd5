"""The run tables (attnrank.runs.tables), the reference losses and regime (attnrank.analysis.baselines), the tables and
texts of the chapter modules and the figure helpers the chapters on trained models call, on small
constructed tables (no training: every run table here is written by hand)."""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from attnrank import book
from attnrank.analysis import baselines, rules, stats
from attnrank.analysis.rules import DynamicsResult
from attnrank.analysis.stats import Estimate
from attnrank.core import profiles, rank
from attnrank.core.errors import ConfigError
from attnrank.core.profiles import PROFILES, resolve_config
from attnrank.plots import sweeps
from attnrank.plots import training as tp
from attnrank.runs import experiments, tables
from attnrank.sections import headdim, loss, reproducibility, section
from attnrank.sections.section import (
    Figure,
    Section,
    Table,
    Verdict,
    by_measure_table,
    gate_text,
    regime_brief,
    regime_text,
)
from attnrank.sphinxext import directives
from attnrank.words import glossary
from attnrank.words.glossary import ARCH_NAMES, fmt_estimate


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _est(value, low, high, n=6, p=float("nan")):
    return Estimate(value, low, high, n, "constructed", p=p)


def _runs() -> pd.DataFrame:
    """Two archs x taus (0.01, 1) x head dims (8, 16) x seeds (0, 1, 2); one gpt2 run failed."""
    rows = []
    for a in ("modernbert", "gpt2"):
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
                            failure_step=7 if failed else np.nan,
                            failure_reason="loss is nan" if failed else "",
                            initial_effective_rank=10 * h + s - math.log10(t),
                            final_val_loss=5.0 - 0.1 * h - 0.01 * s + t,
                        )
                    )
    return pd.DataFrame(rows)


def test_main_runs_labels_each_run_with_its_grid(monkeypatch):
    wide = _runs()
    monkeypatch.setattr(tables, "table", lambda configs, long: wide.copy())
    monkeypatch.setattr(tables, "main_sweep", lambda *a, **k: [])
    plan = experiments.SweepPlan(
        "ci", taus=(0.01, 1.0), head_dims=(8, 16), seeds=(0, 1, 2), dataset="shakespeare", head_dim=16, hidden_size=32
    )
    d = tables.main_runs(plan)
    assert set(d[d.head_dim == 16].sweep) == {"temperature grid"}
    assert set(d[d.head_dim == 8].sweep) == {"head-dimension grid"}
    assert len(d) == len(wide)


def test_sweep_facts_count_runs_seeds_and_failures():
    plan = experiments.sweep_plan("ci", taus=[0.01, 0.25, 1.0], head_dims=[8, 16])
    facts = section.sweep_facts("x", _runs(), plan)
    assert facts == {"x_taus": "0.01, 0.25, 1", "x_head_dims": "8, 16", "x_n_seeds": "3", "x_n_runs": 24}


def test_caption_counts_runs_once_and_seeds():
    d = pd.DataFrame({"key": ["a", "a", "b", "c"], "seed": [0, 0, 1, 0]})
    assert section.runs_caption(d, "ci") == "The ci profile, 3 runs, 2 seeds per setting"


def test_grid_correlations_per_temperature_and_architecture():
    d = _runs()
    d = d[d.status == "complete"]
    rho = loss.grid_correlations(d, "initial_effective_rank", "final_val_loss", [0.01, 1.0])
    assert list(rho) == [0.01, 1.0] and list(rho[1.0]) == ["gpt2", "modernbert"]
    # within one temperature the loss falls as the rank rises: rho = -1 over the complete runs
    assert rho[0.01]["modernbert"].value == pytest.approx(-1.0) and rho[0.01]["modernbert"].n == 6
    assert rho[1.0]["gpt2"].n == 5
    direct = stats.spearman(
        d[(d.arch == "gpt2") & (d.tau == 1.0)].initial_effective_rank,
        d[(d.arch == "gpt2") & (d.tau == 1.0)].final_val_loss,
    )
    assert fmt_estimate(rho[1.0]["gpt2"]) == fmt_estimate(direct)


def test_head_changes_is_the_largest_relative_change_of_one_head():
    rows = []
    for a, (first, last) in {"modernbert": ((2.0, 4.0), (3.0, 3.0)), "gpt2": ((5.0, 10.0), (4.0, 6.0))}.items():
        for step, values in ((0, first), (20, last)):
            for head, v in enumerate(values):
                rows.append(dict(arch=a, when=f"step {step}", step=step, layer=0, head=head, value=v))
    out = tables.head_changes(pd.DataFrame(rows))
    assert out == {"modernbert": pytest.approx(0.5), "gpt2": pytest.approx(0.4)}  # |3-2|/2 ; |6-10|/10
    # GPT-2 trained twice as long: each architecture between its own first and last step
    longer = pd.DataFrame(rows).assign(step=lambda d: np.where((d.arch == "gpt2") & (d.step == 20), 40, d.step))
    assert tables.head_changes(longer) == out


def test_means_at_names_each_setting_and_architecture():
    init = pd.DataFrame({"arch": ["modernbert", "gpt2"], "tau": [1.0, 1.0], "logit_sd": [0.1, 0.2]})
    assert tables.means_at(init, "logit_sd", {"x": 1.0}, prefix="p_") == {"p_x_modernbert": 0.1, "p_x_gpt2": 0.2}
    assert math.isnan(tables.means_at(init, "logit_sd", {"y": 0.5})["y_modernbert"])


def test_divergence_is_said_once_with_each_diverged_run():
    d = _runs()
    assert section.divergence(d, "x") == {
        "x_n_failed": 1,
        "x_diverged": "1 diverged: GPT-2 (CLM) at τ = 1, head dimension 16, seed 2, at step 7 (loss is nan)",
    }
    assert section.divergence(d[d.status == "complete"], "x") == {"x_n_failed": 0, "x_diverged": "none diverged"}
    assert section.divergence(d, "x", listed=False)["x_diverged"] == "1 diverged"


def test_the_regime_of_a_verdict_says_where_each_model_stands_against_its_bigram_model(monkeypatch):
    d = _runs()
    bigram = {"modernbert": 3.0, "gpt2": 5.5}
    monkeypatch.setattr(baselines, "baseline_losses", lambda run: {"bigram": bigram[run["arch"]]})
    # the reference runs are the complete tau = 1 ones: 5.0 - 0.1 h - 0.01 s + 1 over h in (8, 16), s in (0, 1, 2)
    # (GPT-2 without its failed run h = 16, s = 2); the gate reads the worst of them
    bert = max([6.0 - 0.1 * h - 0.01 * s for h in (8, 16) for s in (0, 1, 2)])
    gpt2 = max([6.0 - 0.1 * h - 0.01 * s for h in (8, 16) for s in (0, 1, 2) if (h, s) != (16, 2)])
    gaps = baselines.bigram_gaps(d)
    assert list(gaps) == ["gpt2", "modernbert"]
    assert gaps == {"gpt2": pytest.approx(gpt2 - 5.5), "modernbert": pytest.approx(bert - 3.0)}
    assert gaps["modernbert"] > 0 > gaps["gpt2"]  # ModernBERT above its bigram: not learned
    gate = rules.learned_gate({"modernbert": "supported", "gpt2": "supported"}, gaps)
    gains = {"gpt2": 0.4549, "modernbert": 0.01}
    assert regime_text(baselines.Regime(gate, gains)) == (
        f"τ = 1: GPT-2 at worst {5.5 - gpt2:.2f} nats below bigram, attention worth at least 0.45 nats; "
        f"ModernBERT at worst {bert - 3.0:.2f} nats above bigram, not learned"
    )
    # the clause states the gate's number, the worst run's worth, not the mean (a sceptic read 0.75 and 0.77 in one
    # paragraph, both under "at worst")
    d = d.assign(attention_gain=np.arange(len(d), dtype=float) / 10)
    reg = baselines.regime(d, gate)
    assert reg.gains == baselines.reference_gains(d, worst=True) != baselines.reference_gains(d)
    # the clause names the set of runs the gate read: its settings, its seeds and how many runs (per model when
    # they differ); the reference runs are the complete tau = 1 ones of every head dimension (no profile to say
    # which is the stock one)
    assert reg.reference.groupby("arch").size().to_dict() == {"gpt2": 5, "modernbert": 6}
    assert regime_text(reg).startswith(
        f"τ = 1, head dimension 8 and 16, seeds 0–2 (11 runs): GPT-2 at worst {5.5 - gpt2:.2f} nats below bigram"
    )
    # the intro's table: whether each model has learned, nothing more, from the same inputs
    reg = baselines.regime(d, gate)
    assert regime_brief(reg) == "trained, GPT-2 learned, ModernBERT not"
    assert regime_brief(baselines.Regime(rules.learned_gate({"gpt2": "supported"}, {"gpt2": 0.2}))) == (
        "trained, GPT-2 not learned"
    )
    assert regime_brief(baselines.Regime(SimpleNamespace(gaps={}, not_learned=()))) == "no complete run"
    v = Verdict(
        "x",
        "supported",
        "It holds.",
        "1",
        "2 runs",
        regime_text(reg),
        "S.",
    )
    assert v.parts()["regime_brief"] == v.regime  # no brief: the intro shows the clause itself
    v.brief = regime_brief(reg)
    assert v.parts()["regime_brief"] == "trained, GPT-2 learned, ModernBERT not"
    text = gate_text(reg)
    assert "ModernBERT counts as inconclusive at this scale" in text and "would be supported" in text
    # every model has learned: the rule is still stated, and nothing changed
    assert gate_text(baselines.Regime(rules.learned_gate({"gpt2": "supported"}, {"gpt2": -0.3}))).endswith(
        "Every architecture here has learned. Over its runs at τ = 1: GPT-2's worst run 0.30 nats below it."
    )
    assert "Over its runs at τ = 1, head dimension 8 and 16, seeds 0–2 (11 runs): GPT-2's worst run" in gate_text(reg)
    # with the attention gains read, the rule names the attention target and each model's smallest gain
    text = gate_text(baselines.Regime(rules.learned_gate({"gpt2": "supported"}, {"gpt2": -0.4}, {"gpt2": 0.71})))
    assert "with attention worth at least 0.3 nats" in text
    assert text.endswith(": GPT-2's worst run 0.40 nats below it with attention worth 0.71 nats.")
    # a gain at float32's rounding of the loss is said to be nothing, not printed as 4.8×10⁻⁷ nats
    text = gate_text(baselines.Regime(rules.learned_gate({"gpt2": "supported"}, {"gpt2": 1.9}, {"gpt2": 4.8e-7})))
    assert "GPT-2's worst run 1.90 nats above it with attention worth under 0.01 nats" in text
    with pytest.raises(ConfigError) as e:
        baselines.bigram_gaps(d.iloc[:0])
    assert e.value.param == "runs"


def test_by_measure_table_and_measure_constants():
    results = {"rank_rtol_1e-2": DynamicsResult("supported"), "effective_rank": DynamicsResult("not supported")}
    v = dict(finding="A short line.", effect="1 [0, 2]", n="4 runs", regime="r", summary="s")
    ungated = Verdict("x", "not supported", by_measure={m: r.status for m, r in results.items()}, **v)
    t = by_measure_table("x_by_measure", ungated, "effective_rank", results)
    assert t.frame.to_dict("list") == {
        "measure": ["rank, rtol 1e-2", "effective rank (primary)"],
        "verdict under this measure": ["supported", "not supported"],
    }
    assert "attention_entropy" not in rank.RANK_MEASURES and len(rank.RANK_MEASURES) == 5
    assert glossary.MEASURE_LABELS["attention_entropy"] == "attention entropy (nats)"


def test_the_section_record_checks_its_parts():
    v = dict(status="supported", finding="A short line.", effect="1 [0, 2]", n="4 runs", regime="r", summary="s")
    with pytest.raises(ConfigError, match="status"):
        Verdict("x", **{**v, "status": "maybe"})
    with pytest.raises(ConfigError, match="regime"):
        Verdict("x", **{**v, "regime": " "})
    with pytest.raises(ConfigError, match="finding"):
        Verdict("x", **{**v, "finding": " ".join(["word"] * 31)})
    with pytest.raises(ConfigError, match="name"):
        Figure("f-1", None, pd.DataFrame())
    with pytest.raises(ConfigError, match="name"):
        Table("bad name", pd.DataFrame())
    with pytest.raises(ConfigError, match="twice"):
        Section("c", {"a": 1}, tables=[Table("a", pd.DataFrame())])
    s = Section("c", {"a": 1}, verdicts=[Verdict("x", **v)])
    assert s.verdict("x").status == "supported"
    with pytest.raises(ConfigError, match="verdicts: x"):
        s.verdict("y")


def test_environment_and_profile_tables():
    env, lock = reproducibility.environment()
    assert list(env.columns) == ["package", "installed", "locked"] and env.package.iloc[0] == "Python"
    assert "pandas" in set(env.package) and env.set_index("package").installed["pandas"] == pd.__version__
    assert lock.startswith(("requirements.lock (SHA-256 ", "no lock file"))
    defaults, grids = reproducibility.profile_tables()
    assert "paper" in defaults.columns and defaults.set_index("setting").loc["width", "paper"].isdigit()
    # every setting by its reader label, and each architecture's own resolved steps (ModernBERT trains fewer at quick)
    assert not [s for s in defaults.setting if re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)+", s)]
    steps = defaults.set_index("setting").loc["training steps"]
    for p in PROFILES:
        own = {a: resolve_config(a, p).max_steps for a in ("gpt2", "modernbert")}
        if own["gpt2"] == own["modernbert"]:
            assert steps[p] == str(own["gpt2"])
        else:
            assert steps[p] == ", ".join(f"{ARCH_NAMES[a]} {n}" for a, n in sorted(own.items(), key=lambda x: -x[1]))
    from attnrank.runs.experiments import SWEEP_DEFAULTS

    seeds = grids.set_index("grid").loc["seeds", "ci"]
    assert seeds == ", ".join(map(str, SWEEP_DEFAULTS["ci"]["seeds"]))
    assert set(grids.grid) == {"τ", "head dimensions", "seeds", "seeds off the stock head dimension"}
    assert grids.set_index("grid").loc["seeds off the stock head dimension", "quick"] == "0, 1"


def test_profile_directive_names_each_architectures_steps(monkeypatch):
    """The conventions page's profile table: each architecture's own resolved steps, never GPT-2's for both."""
    header, rows = directives.profile_rows()
    training = dict(zip([r[0] for r in rows], [r[header.index("training")] for r in rows]))
    assert set(training) == set(PROFILES)
    for p in PROFILES:
        g, b = resolve_config("gpt2", p), resolve_config("modernbert", p)
        if g.max_steps == b.max_steps:
            assert training[p] == f"{g.max_steps} steps of {g.batch_size} sequences"
        else:
            assert f"ModernBERT {b.max_steps} steps" in training[p] and f"GPT-2 {g.max_steps} steps" in training[p]
    q = resolve_config("modernbert", "quick")
    assert training["quick"] == f"{q.max_steps} steps of {q.batch_size} sequences"
    # the case the table must tell apart: the book's two models trained for different steps
    monkeypatch.setitem(profiles.ARCH_DEFAULTS["quick"], "modernbert", dict(max_steps=500))
    header, rows = directives.profile_rows()
    quick = dict(zip([r[0] for r in rows], [r[header.index("training")] for r in rows]))["quick"]
    assert quick == f"GPT-2 1000 steps, ModernBERT 500 steps of {q.batch_size} sequences"


def test_reproducibility_tables_use_reader_labels():
    """The sizes, run presets and verdict scales name chapters, sizes and settings by their labels, not in code."""
    sizes, chapter_runs = reproducibility.preset_tables()
    snake = re.compile(r"[a-z0-9]+(_[a-z0-9]+)+")
    cells = [*sizes.chapter, *sizes["size"], *chapter_runs.chapter, *chapter_runs.overrides]
    assert cells and not [c for c in cells if not isinstance(c, str) or snake.search(c)]
    assert "P0: matrix size" in set(sizes["size"]) and "sequence length" in set(chapter_runs.chapter)
    assert set(glossary.VERDICT_LABELS) == set(experiments.VERDICT_RUNS)
    assert glossary.VERDICT_LABELS["temp_loss"] == "(ii + iii) a higher temperature trains lower"
    assert reproducibility.multiplicity(10)["repro_level"] == "95%"


def test_runs_table_fits_the_column():
    """The sweep's runs as listed: head dimension by heads and the device with its threads in one cell each."""
    sweep = pd.DataFrame(
        dict(
            key=["k1", "k2"],
            arch=["modernbert", "gpt2"],
            tau=[1.0, 0.001],
            head_dim=[16, 8],
            num_heads=[2, 4],
            seed=[0, 1],
            status=["complete", "failed"],
            steps=[40, 7],
            final_val_loss=[5.97, float("nan")],
            device=["cpu", "cuda"],
            threads=[1, 4],
        )
    )
    shown = reproducibility.runs_shown(sweep)
    assert list(shown.columns) == [
        "key",
        "model",
        "τ",
        "dₕ × heads",
        "seed",
        "status",
        "steps",
        "final loss (nats)",
        "device",
    ]
    assert list(shown["dₕ × heads"]) == ["16 × 2", "8 × 4"] and list(shown.device) == [
        "cpu, 1 thread",
        "cuda, 4 threads",
    ]
    assert list(shown.model) == ["ModernBERT (MLM)", "GPT-2 (CLM)"]


def test_a_table_writes_each_float_column_in_one_format():
    """book.table_html: a column of small and ordinary values is written in one notation (the learned chapter's
    attention worth read "−0.00033 | 2.4e−05 | 0.00" before), percentages as the formatter writes them."""
    frame = pd.DataFrame({"worth": [-0.00033, 2.4e-05, 0.0, 2e-05], "loss": [1.9, 1.25, 1.0, 2.0], "n": [1, 2, 3, 4]})
    html = book.table_html(Table("t", frame))
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", html)
    worth, loss = cells[0::3], cells[1::3]
    assert worth == ["\u22123.3×10⁻⁴", "2.4×10⁻⁵", "0", "2.0×10⁻⁵"]  # powers of ten, as the prose writes them
    assert loss == ["1.90", "1.25", "1.00", "2.00"] and cells[2::3] == ["1", "2", "3", "4"]


def test_bound_table_headers_are_measure_labels():
    check = pd.DataFrame(
        columns=[
            "tau",
            "head_dim",
            "r_1",
            "r_2",
            "M",
            "rank rtol_1e-2",
            "rank rtol_1e-4",
            "bound rtol_1e-2",
            "bound rtol_1e-4",
        ]
    )
    cols = list(headdim._bound_table(check).columns)
    assert cols[-4:] == [
        glossary.MEASURE_LABELS["rank_rtol_1e-2"],
        glossary.MEASURE_LABELS["rank_rtol_1e-4"],
        "bound, rtol 1e-2",
        "bound, rtol 1e-4",
    ]
    assert not [c for c in cols if "_" in c]


# ------------------------------------------------------------------ figure helpers


def _rank_summary() -> pd.DataFrame:
    rows = []
    for a in ("modernbert", "gpt2"):
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
        "modernbert": {"effective_rank": 1.0, "rank_rtol_1e-2": 1.0},
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
    fig = tp.loss_trajectories(
        curves, {"modernbert": 5.5, "gpt2": 6.5}, {"modernbert": {"unigram": 6.0}, "gpt2": {"unigram": 7.0}}
    )
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(panels) == 4
    assert _dotted(panels[2]) == [5.5] and _dotted(panels[3]) == [6.5]  # levels on the training-loss row
    assert panels[0].get_ylabel() == "validation loss (nats)" and panels[2].get_ylabel() == "training loss (nats)"


def test_head_dim_scatter_annotates_each_panel_with_its_rho():
    d = _runs()
    rho = {
        1.0: {"modernbert": _est(-0.5, -0.9, 0.1, n=6), "gpt2": _est(0.2, -0.4, 0.7, n=5)},
        0.01: {"modernbert": _est(-1.0, -1.0, -1.0, n=6), "gpt2": _est(-1.0, -1.0, -1.0, n=6)},
    }
    fig = tp.head_dim_scatter(
        d,
        x="initial_effective_rank",
        y="final_val_loss",
        rho=rho,
        references={"modernbert": {"unigram": 9.0}, "gpt2": {"unigram": 9.0}},
        xlabel="initial",
        ylabel="final",
    )
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    # the corner text of a panel: its rho and runs, then the reference lines outside the y-range
    assert texts == ["ρ = −1.00 in every resample\nn = 6 runs\nunigram 9.00 (above the scale)"] * 2 + [
        "ρ = −0.50 [−0.90, 0.10]\nn = 6 runs\nunigram 9.00 (above the scale)",
        "ρ = 0.20 [−0.40, 0.70]\nn = 5 runs\nunigram 9.00 (above the scale)",
    ]
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(panels) == 4 and "τ = 0.01" in panels[0].get_title() and "τ = 1" in panels[2].get_title()


def test_limit_lines_and_by_setting_title():
    limits = pd.DataFrame(
        {
            "arch": ["modernbert", "modernbert", "gpt2"],
            "tau": [1.0, 0.001, 1.0],
            "measure": ["effective_rank"] * 3,
            "value": [3.0, 9.0, 4.0],
        }
    )
    lines = sweeps.limit_lines(limits, 1.0, "limit")
    assert lines[["hue", "value", "label"]].to_dict("records") == [
        {"hue": "gpt2", "value": 4.0, "label": "limit"},
        {"hue": "modernbert", "value": 3.0, "label": "limit"},
    ]
    d = _runs().assign(measure="effective_rank", value=lambda x: x.initial_effective_rank)
    fig = sweeps.by_setting(d, "head_dim", facet="measure", title="τ = 1")
    assert fig._suptitle is not None and fig._suptitle.get_text() == "τ = 1"
    assert sweeps.by_setting(d, "head_dim", facet="measure")._suptitle is None


def test_a_sweep_plan_is_resolved_once_with_the_chapters_checks():
    """sweep_plan resolves the profile and applies the chapters' own checks of seeds, taus and head_dims (one
    declaration each, book.PARAMETERS); tau_sweep's extra temperatures get the same check."""
    from attnrank.runs import parameters

    plan = experiments.sweep_plan("ci", taus=0.5, head_dims=[8], seeds=2)
    stock = resolve_config("modernbert", "ci")
    assert (plan.profile, plan.taus, plan.head_dims, plan.seeds) == ("ci", (0.5,), (8,), (0, 1))
    assert (plan.head_dim, plan.hidden_size, plan.dataset) == (stock.head_dim, stock.hidden_size, "shakespeare")
    for name in ("seeds", "taus", "head_dims"):
        assert book.PARAMETERS[name] is parameters.SWEEP_PARAMETERS[name]
    for name, bad in (("taus", [0.0]), ("head_dims", [4097]), ("seeds", [-1]), ("seeds", 0), ("taus", [])):
        with pytest.raises(ConfigError) as e:
            experiments.sweep_plan("ci", **{name: bad})
        assert e.value.param == name
    assert {(c.tau, c.seed) for c in experiments.tau_sweep(plan, archs="gpt2", taus=0.25)} == {(0.25, 0), (0.25, 1)}
    with pytest.raises(ConfigError) as e:
        experiments.tau_sweep(plan, taus=[2000.0])
    assert e.value.param == "taus"


def test_a_list_parameter_given_as_papermill_text_is_read_as_the_list():
    """``papermill -p taus '[0.25, 1]'`` hands the list over as its text: it is read as the list and checked as one."""
    assert book.check_parameters({"taus": "[0.25, 1]", "head_dims": "[8, 16]"}, ("taus", "head_dims")) == {
        "taus": [0.25, 1.0],
        "head_dims": [8, 16],
    }
    for name, text in (("taus", "[0.0]"), ("head_dims", "[5000]"), ("taus", "abc")):
        with pytest.raises(ConfigError) as e:
            book.check_parameters({name: text}, (name,))
        assert e.value.param == name


def test_the_plain_sign_finding_fits_the_word_limit_for_every_measure_of_the_registry():
    """The temperature chapter's plain-words finding names every rank measure of the registry: a measure added
    there must keep it within the word limit for every outcome (not only on the data at hand), and have a plain label."""
    import itertools
    from types import SimpleNamespace

    from attnrank.analysis.verdicts import VERDICTS
    from attnrank.core.measures import RANK_MEASURES
    from attnrank.core.profiles import ARCHS
    from attnrank.sections import temp
    from attnrank.sections.section import WORD_LIMIT
    from attnrank.words.glossary import PLAIN_LABELS

    assert set(PLAIN_LABELS) == set(RANK_MEASURES)
    longest = 0
    # every status of every measure for each model, independently (3^10 cases: a finding of 32 words once came
    # from a case the two models' shifted patterns never drew)
    for pattern in itertools.product(range(len(VERDICTS)), repeat=len(RANK_MEASURES) * len(ARCHS)):
        status = {a: [VERDICTS[p] for p in pattern[i :: len(ARCHS)]] for i, a in enumerate(ARCHS)}
        rank_v = {
            m: SimpleNamespace(arch={a: SimpleNamespace(verdict=SimpleNamespace(status=status[a][j])) for a in ARCHS})
            for j, m in enumerate(RANK_MEASURES)
        }
        longest = max(longest, len(temp._sign_by_arch(rank_v).split()))
    assert 20 < longest <= WORD_LIMIT


def test_a_run_set_is_named_by_what_tells_it_from_another():
    d = pd.DataFrame(
        dict(
            key=list("abcdef"),
            arch=["gpt2"] * 3 + ["modernbert"] * 3,
            seed=[0, 1, 2] * 2,
            tau=[1.0] * 6,
            head_dim=[32] * 6,
            max_len=[32, 64, 256] * 2,
            max_steps=[1000] * 3 + [500] * 3,
        )
    )
    assert section.run_set_text(d) == (
        "τ = 1, head dimension 32, sequences of 32 to 256 tokens, 1000 steps (GPT-2), 500 steps (ModernBERT), "
        "seeds 0–2 (3 runs a model)"
    )
    # the same runs trained under P3's conditions are another set, and say so
    p3 = d.assign(**experiments.P3_CONDITIONS)
    assert section.run_set_text(p3).endswith(
        "500 steps (ModernBERT), trained under P3's conditions (Adam's ε 1×10⁻¹⁶, no gradient clipping, no decay of the "
        "query and key weights), seeds 0–2 (3 runs a model)"
    )
    assert section.run_set_text(d.iloc[[0, 2, 3]]).endswith("seeds 0, 2 (3 runs)")
    assert section.run_set_text(d.iloc[:0]) == "no runs"


def test_the_build_check_finds_one_gate_quoted_twice_over_one_named_set():
    from attnrank.sphinxext.gluecheck import gate_conflicts

    same = {"set": "τ = 1 (3 runs a model)", "numbers": "GPT-2 at worst 0.50 nats below bigram"}
    quotes = {("loss", "loss"): same, ("dynamics", "dynamics"): same}
    assert gate_conflicts(quotes) == []  # one set, one answer
    named = {"set": "τ = 1, under P3's training conditions (3 runs a model)", "numbers": "GPT-2 at worst 0.40"}
    assert gate_conflicts({**quotes, ("causal", "causal"): named}) == []  # another answer over a named other set
    (line,) = gate_conflicts({**quotes, ("causal", "causal"): {**named, "set": same["set"]}})
    assert line.startswith("the learned gate over one run set (τ = 1 (3 runs a model)) is quoted with different")
    assert "causal (causal): GPT-2 at worst 0.40" in line and "dynamics (dynamics) and loss (loss): GPT-2" in line


def test_a_caption_names_the_diverged_runs_marker_only_where_a_run_diverged():
    d = _runs()  # one GPT-2 run failed
    assert section.diverged_marks(d, "Red crosses: diverged runs.") == " Red crosses: diverged runs."
    assert section.diverged_marks(d[d.status == "complete"], "Red crosses: diverged runs.") == ""
