"""The regime clause and the loss-against-baseline tables of attnrank.sections.learned, on constructed runs."""

import math

import numpy as np
import pandas as pd
import pytest

from attnrank.analysis import baselines
from attnrank.analysis.baselines import DATA_FIELDS
from attnrank.core.errors import ConfigError
from attnrank.sections import learned, section

BASE = {
    "gpt2": {"unigram": 5.8, "bigram": 4.1, "two_sided": math.nan, "context_free": math.nan, "n_targets": 100},
    "modernbert": {"unigram": 5.9, "bigram": 4.8, "two_sided": 4.4, "context_free": 5.3, "n_targets": 50},
}


@pytest.fixture
def fixed_baselines(monkeypatch):
    monkeypatch.setattr(learned, "baseline_losses", lambda run: dict(BASE[run["arch"]]))
    monkeypatch.setattr(baselines, "baseline_losses", lambda run: dict(BASE[run["arch"]]))


def _runs(rows):
    data = {k: "x" for k in DATA_FIELDS}
    return pd.DataFrame([{**data, "status": "complete", "seed": i, **r} for i, r in enumerate(rows)])


def test_gaps_are_final_loss_minus_each_baseline(fixed_baselines):
    runs = _runs(
        [{"arch": "gpt2", "tau": 1.0, "final_val_loss": 3.8}, {"arch": "modernbert", "tau": 1.0, "final_val_loss": 4.7}]
    )
    g = learned.gaps(runs).set_index("arch")
    assert g.loc["gpt2", "gap_bigram"] == pytest.approx(-0.3)
    assert g.loc["gpt2", "gap_unigram"] == pytest.approx(-2.0)
    assert math.isnan(g.loc["gpt2", "gap_two_sided"])
    assert g.loc["modernbert", "gap_bigram"] == pytest.approx(-0.1)
    assert g.loc["modernbert", "gap_two_sided"] == pytest.approx(0.3)


def test_regime_states_the_mean_gap_at_tau_1_and_how_many_runs_are_below(fixed_baselines):
    """The mean gap comes from the tau = 1 runs; the count of runs below the bigram from all of them;
    a failed run counts as not below."""
    runs = _runs(
        [
            {"arch": "gpt2", "tau": 1.0, "final_val_loss": 3.8},
            {"arch": "gpt2", "tau": 1.0, "final_val_loss": 3.9},
            {"arch": "gpt2", "tau": 0.001, "final_val_loss": 4.5},
            {"arch": "gpt2", "tau": 0.001, "final_val_loss": math.nan, "status": "failed"},
            {"arch": "modernbert", "tau": 1.0, "final_val_loss": 4.6},
            {"arch": "modernbert", "tau": 0.001, "final_val_loss": 4.7},
        ]
    )
    assert learned.regime(runs) == (
        "GPT-2 on average 0.25 nats below bigram at τ = 1 (2 of 4 runs below bigram); "
        "ModernBERT on average 0.20 nats below bigram at τ = 1, 0.20 nats above two-sided, 0.70 nats below context-free (2 of 2 runs below bigram)"
    )


def test_regime_of_runs_at_one_setting_and_of_a_model_worse_than_bigram(fixed_baselines):
    """Without tau = 1 runs every run gives the mean; above the bigram reads 'above'; one run has no count."""
    assert (
        learned.regime(_runs([{"arch": "gpt2", "tau": 0.25, "final_val_loss": 4.6}]))
        == "GPT-2 on average 0.50 nats above bigram"
    )
    two = _runs(
        [
            {"arch": "modernbert", "tau": 1.0, "final_val_loss": 4.8},
            {"arch": "modernbert", "tau": 1.0, "final_val_loss": 4.8},
        ]
    )
    assert (
        learned.regime(two)
        == "ModernBERT on average level with bigram, 0.40 nats above two-sided, 0.50 nats below context-free (0 of 2 runs below bigram)"
    )


def test_regime_reads_the_stock_model_as_the_gate_does(fixed_baselines):
    """At tau = 1 the head-dimension grid's runs are not the stock model: the gap is the stock head dimension's (the
    first screen averaged head dimensions 8 and 32, 5.33 and 4.59 nats, into one number), and says so."""
    runs = _runs(
        [
            {"arch": "gpt2", "profile": "quick", "tau": 1.0, "head_dim": 32, "final_val_loss": 3.8},
            {"arch": "gpt2", "profile": "quick", "tau": 1.0, "head_dim": 16, "final_val_loss": 4.4},
            {"arch": "gpt2", "profile": "quick", "tau": 2.0, "head_dim": 32, "final_val_loss": 3.9},
        ]
    )
    assert (
        learned.regime(runs)
        == "GPT-2 on average 0.30 nats below bigram at τ = 1, head dimension 32 (2 of 3 runs below bigram)"
    )


def test_regime_needs_runs():
    with pytest.raises(ConfigError) as e:
        learned.regime(pd.DataFrame())
    assert e.value.param == "runs"


def test_targets_are_met_only_when_every_seed_is_below_by_the_margin(fixed_baselines):
    """Each model must end 0.3 nats below its bigram, with attention worth 0.3 nats, in every seed: the worst seed
    decides."""
    runs = _runs(
        [
            {"arch": "gpt2", "tau": 1.0, "final_val_loss": 3.7, "attention_gain": 0.5},
            {"arch": "gpt2", "tau": 1.0, "final_val_loss": 3.85, "attention_gain": 0.5},  # only 0.25 below
            {"arch": "modernbert", "tau": 1.0, "final_val_loss": 4.4, "attention_gain": 0.5},
            {"arch": "modernbert", "tau": 1.0, "final_val_loss": 4.5, "attention_gain": 0.31},
            {"arch": "modernbert", "tau": 0.001, "final_val_loss": 5.5, "attention_gain": 0.0},  # not a target run
        ]
    )
    t = learned.targets(runs).set_index("arch")
    assert not t.loc["gpt2", "met"] and t.loc["gpt2", "worst_gap"] == pytest.approx(-0.25)
    assert t.loc["modernbert", "met"] and t.loc["modernbert", "runs"] == 2
    assert t.loc["modernbert", "worst_gain"] == pytest.approx(0.31)
    # below by the target, but attention worth too little in one seed: not met
    assert t.loc["gpt2", "worst_head_dim"] is None  # one setting: the worst run needs no name
    # runs at two head dimensions: the sentence names the worst run's
    two = runs.assign(head_dim=[32, 8, 32, 8, 32])
    assert "worst run 0.25 nats below (head dimension 8)" in learned.targets_text(learned.targets(two))
    weak = runs.assign(attention_gain=np.where(runs.final_val_loss == 4.5, 0.29, runs.attention_gain))
    assert not learned.targets(weak).set_index("arch").loc["modernbert", "met"]
    assert t.loc["modernbert", "two_sided_gap"] == pytest.approx(0.05)
    assert t.loc["modernbert", "context_free_gap"] == pytest.approx(-0.85)  # 4.45 against 5.3
    assert "context-free: mean 0.85 nats below" in learned.targets_text(t.reset_index())


def test_targets_read_the_stock_model_as_the_learned_gate_does(fixed_baselines):
    """The target is decided on the stock runs (tau = 1 at the profile's head dimension), the gate's own: a run of the
    head-dimension grid at tau = 1 no longer gives the chapter a second answer beside the gate's."""
    stock = {"arch": "gpt2", "profile": "quick", "tau": 1.0, "head_dim": 32, "num_heads": 4, "final_val_loss": 3.7}
    narrow = {**stock, "head_dim": 16, "num_heads": 8, "final_val_loss": 4.4}
    runs = _runs([stock, narrow]).assign(attention_gain=[0.5, 0.1])
    t = learned.targets(runs).set_index("arch")
    assert t.loc["gpt2", "runs"] == 1 and t.loc["gpt2", "met"] and t.loc["gpt2", "worst_gap"] == pytest.approx(-0.4)


def test_flops_per_token_count_the_layers_and_the_tied_output_layer():
    """6 N + 12 L n d, with N the layers' weights and the (tied) embedding: the hand count of a small GPT-2."""
    run = {"arch": "gpt2", "hidden_size": 8, "num_layers": 2, "max_len": 16, "vocab_size": 10}
    n = 2 * (12 * 64 + 13 * 8) + 10 * 8 + 2 * 8
    assert learned.flops_per_token(run) == 6 * n + 12 * 2 * 16 * 8


def test_steps_text_names_each_architecture_when_they_differ():
    same = pd.DataFrame({"arch": ["modernbert", "gpt2"], "max_steps": [1000, 1000]})
    assert section.steps_text(same) == "1000"
    differ = pd.DataFrame({"arch": ["modernbert", "modernbert", "gpt2"], "max_steps": [500, 500, 1000]})
    assert section.steps_text(differ) == "1000 (GPT-2) and 500 (ModernBERT)"
    three = pd.DataFrame({"arch": ["modernbert", "gpt2", "bert"], "max_steps": [1000, 1000, 500]})
    assert section.steps_text(three) == "1000 (GPT-2 and ModernBERT) and 500 (BERT)"  # equal steps named together
    with pytest.raises(ValueError, match="runs"):
        section.steps_text(differ.iloc[:0])
