"""Per-sequence probe records, the log-spaced probe schedule, their storage, and the tables built on them."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest
from conftest import fake_train

from attnrank.core.errors import ConfigError
from attnrank.core.profiles import resolve_config
from attnrank.core.rank import MEASURES
from attnrank.core.train import TRAIN_PROBE_SIZE, probe_steps
from attnrank.runs import store
from attnrank.sections import protocol, study


def test_probe_schedule_is_log_spaced_below_rank_every():
    ci = resolve_config("gpt2", "ci")
    # with a warm-up the first step has learning rate 0: step 1 would repeat step 0 and is not probed
    assert probe_steps(ci.max_steps, ci.rank_every, ci.warmup_steps) == [0, 2, 4, 8, 10, 20, 30, 40]
    assert probe_steps(ci.max_steps, ci.rank_every) == [0, 1, 2, 4, 8, 10, 20, 30, 40]  # no warm-up
    assert probe_steps(20, 5) == [0, 1, 2, 4, 5, 10, 15, 20]
    assert probe_steps(7, 10) == [0, 1, 2, 4, 7]  # the last step is always probed
    assert probe_steps(1, 1) == [0, 1]
    with pytest.raises(ConfigError, match="rank_every"):
        probe_steps(40, 0)


def test_trained_run_records_every_sequence_at_every_scheduled_step(private_store):
    """docs/guarantees.md, "Per-sequence probe records": a trained ci run has one row per scheduled step, split and
    sequence, and its held-out rows average to the stored summary."""
    cfg = resolve_config("gpt2", "ci")
    r = store.run(cfg)
    steps = [0, 2, 4, 8, 10, 20, 30, 40]
    seq, summary = r.sequences, r.rank_summary
    assert sorted(set(r.ranks.step)) == steps and sorted(set(summary.step)) == steps
    assert sorted(set(seq.step)) == steps
    sizes = seq.groupby(["step", "split"]).sequence.nunique().unstack()
    assert (sizes["val"] == cfg.probe_size).all() and (sizes["train"] == TRAIN_PROBE_SIZE).all()
    assert len(seq) == len(steps) * (cfg.probe_size + TRAIN_PROBE_SIZE)
    assert all(seq[m].dtype == np.float32 for m in MEASURES)
    # the held-out sequences' mean is the stored summary mean, for every measure and step
    means = seq[seq.split == "val"].groupby("step")[list(MEASURES)].mean(numeric_only=True)
    for m in MEASURES:
        expected = summary[summary.measure == m].set_index("step")["mean"]
        np.testing.assert_allclose(means[m].to_numpy(float), expected.loc[means.index].to_numpy(), rtol=2e-6)
    # the training blocks are other sequences than the held-out ones
    final = seq[seq.step == 40]
    assert not np.allclose(
        final[final.split == "train"].effective_rank.mean(),
        final[final.split == "val"].effective_rank.mean(),
        rtol=1e-7,
    )


SEQ = pd.DataFrame(
    {
        "step": np.array([0, 0, 0, 7], np.int32),
        "split": ["val", "val", "train", "val"],
        "sequence": np.array([0, 1, 0, 0], np.int32),
        "effective_rank": np.array([1.5, 2.25, 3.0, 4.125], np.float32),
        "rank_atol_1e-8": np.array([31, 30, 32, 29], np.float32),
    }
)


def test_sequences_table_round_trips_through_the_store(private_store, monkeypatch):
    """docs/guarantees.md, "Per-sequence probe records": the table comes back as written, and one of the wrong
    shape makes the run damaged (trained again)."""
    monkeypatch.setattr("attnrank.core.train.train", fake_train(sequences=SEQ))
    r = store.run(arch="gpt2", profile="ci", max_steps=7)
    assert (r.path / "sequences.parquet").exists()
    pd.testing.assert_frame_equal(r.sequences, SEQ, check_dtype=True)
    pd.testing.assert_frame_equal(store.load_table(store.load_runs(), "sequences")[SEQ.columns], SEQ)
    # a float64 measure column (or an unknown column) is the wrong shape, even with valid checksums
    for bad in (SEQ.astype({"effective_rank": "float64"}), SEQ.assign(other=np.float32(1)), SEQ.drop(columns="split")):
        bad.to_parquet(r.path / "sequences.parquet", index=False)
        manifest = json.loads((r.path / "COMPLETE").read_text())
        manifest["files"]["sequences.parquet"] = hashlib.sha256((r.path / "sequences.parquet").read_bytes()).hexdigest()
        (r.path / "COMPLETE").write_text(json.dumps(manifest))
        assert store.load_runs().empty
    assert store.run(arch="gpt2", profile="ci", max_steps=7).fresh


def test_a_run_without_records_says_so(private_store, monkeypatch):
    monkeypatch.setattr("attnrank.core.train.train", fake_train(sequences=pd.DataFrame()))
    r = store.run(arch="gpt2", profile="ci", max_steps=7)
    assert not (r.path / "sequences.parquet").exists()
    with pytest.raises(ConfigError, match="per-sequence"):
        _ = r.sequences
    with pytest.raises(ConfigError, match="allowed values"):
        r.table("nope")


def _records(stock_train, stock_val, cold_value, steps=(0, 10), n_runs=1):
    rows = []
    for tau, key0 in ((1.0, "s"), (1e-3, "c")):
        for k in range(n_runs):
            for step in steps:
                for split, vals in (("train", stock_train), ("val", stock_val)):
                    for i, v in enumerate(vals):
                        rows.append(
                            {
                                "key": f"{key0}{k}",
                                "arch": "modernbert",
                                "tau": tau,
                                "seed": k,
                                "step": step,
                                "split": split,
                                "sequence": i,
                                "rank_atol_1e-8": v if tau == 1.0 else cold_value,
                            }
                        )
    return pd.DataFrame(rows)


def test_study_draws_pick_runs_by_seed_not_by_their_keys():
    """The same runs under other keys (the training code changed, the runs did not) give the same draws: a
    draw picks a run by its seed. With the runs in key order the renamed keys would reorder them."""
    seq = _records([1.0, 0.0, 0.5, 0.25] * 2, [0.0] * 8, 0.1, n_runs=3)
    seq["rank_atol_1e-8"] += seq.seed  # each seed's run its own values
    draws = study.study_draws(seq, n_draws=50, seed=0, examples=(4, 4))
    renamed = seq.assign(key=seq.key.map(lambda k: f"{9 - int(k[-1])}{k}"))  # key order now the seeds' reverse
    again = study.study_draws(renamed, n_draws=50, seed=0, examples=(4, 4))
    assert again.stat.tolist() == draws.stat.tolist() and draws.stat.nunique() > 3


def test_study_draws_flip_as_often_as_the_one_outlier_sequence_is_drawn():
    # stock: one training sequence at 1, the other 15 at 0; cold: 0.1 everywhere. A draw of 4 + 4
    # holds the outlier with probability 4/8, and then reads stock > cold (+1/8 - 0.1); the mean over
    # every sequence reads stock < cold (1/16 - 0.1), so half the draws flip.
    seq = _records([1.0] + [0.0] * 7, [0.0] * 8, 0.1)
    ref = study.study_reference(seq)
    np.testing.assert_allclose(ref.stat, [1 / 16 - 0.1] * 2)
    draws = study.study_draws(seq, n_draws=4000, seed=1)
    assert len(draws) == 4000 * 2 and set(np.round(draws.stat, 12)) == {round(1 / 8 - 0.1, 12), -0.1}
    flips = study.flip_rate(draws, ref)
    assert list(flips.step) == [0, 10] and (flips.draws == 4000).all()
    est = flips.estimate.iloc[0]
    assert abs(est.value - 0.5) < 0.03 and est.low < 0.5 < est.high and est.n == 4000
    # drawing every sequence (8 + 8) reproduces the reference: nothing flips
    all_in = study.study_draws(seq, examples=(8, 8), n_draws=50)
    np.testing.assert_allclose(all_in.stat, 1 / 16 - 0.1)
    assert (study.flip_rate(all_in, ref).flips == 0).all()
    with pytest.raises(ConfigError, match="examples"):
        study.study_draws(seq, examples=(9, 4))
    with pytest.raises(ConfigError, match="tau"):
        study.study_draws(seq[seq.tau == 1.0])


def test_study_draws_pick_one_run_per_temperature():
    seq = _records([2.0] * 8, [2.0] * 8, 1.0, n_runs=3)
    seq.loc[seq.key == "s2", "rank_atol_1e-8"] = 0.0  # one stock run below the cold runs
    draws = study.study_draws(seq, n_draws=3000)
    low = draws.key_stock == "s2"
    assert set(draws[low].stat) == {-1.0} and set(draws[~low].stat) == {1.0}
    assert abs(low.mean() - 1 / 3) < 0.03
    assert study.study_reference(seq).stat.iloc[0] == pytest.approx(4 / 3 - 1)


def test_rank_by_step_correlates_every_step_with_the_last():
    rng = np.random.default_rng(0)
    final = rng.normal(size=30)
    rows = []
    for i, f in enumerate(final):
        for step, v in ((0, rng.normal()), (5, -f), (10, f + 0.01 * rng.normal()), (40, f)):
            rows.append({"key": f"k{i}", "arch": "gpt2", "step": step, "measure": "effective_rank", "mean": v})
    t = study.rank_by_step(pd.DataFrame(rows), "effective_rank", n_resamples=2000)
    assert list(t.step) == [0, 5, 10] and (t.final_step == 40).all() and (t.n == 30).all()
    assert abs(t.rho.iloc[0]) < 0.5 and t.rho.iloc[1] == -1.0 and t.rho.iloc[2] > 0.99
    with pytest.raises(ConfigError, match="measure"):
        study.rank_by_step(pd.DataFrame(rows), "stable_rank")


def test_agreement_names_each_protocols_side():
    from attnrank.analysis.stats import Estimate

    up, down, open_ = (Estimate(v, lo, hi, 5, "t") for v, lo, hi in ((2, 1, 3), (-2, -3, -1), (1, -1, 3)))
    text = protocol.agreement(
        {"modernbert": 20.0, "gpt2": 9.0, "x": 1.0},
        {"modernbert": down, "gpt2": up, "x": open_},
        {"modernbert": "ModernBERT", "gpt2": "GPT-2"},
    )
    assert text[1].startswith("for ModernBERT they part: the study's rank puts tau = 1 higher (difference 20.00")
    assert "the effective rank tau = 0.001 (-2.00" in text[1].replace("−", "-")
    assert text[0] == "for GPT-2 both protocols rank tau = 1 higher"
    assert text[2].startswith("for x they part") and text[2].endswith(", unresolved)")


@pytest.mark.parametrize("arch", ["modernbert", "gpt2"])
def test_the_first_step_of_a_warm_up_leaves_the_weights_unchanged(arch):
    """Why step 1 is not probed under a warm-up: the linear warm-up's first learning rate is 0, so the
    weights after step 1 are exactly the initial ones (and a run without warm-up does move them)."""
    import torch

    from attnrank.core.models import model_from_config, tokenizer_pad_id
    from attnrank.core.train import prepare_data, train

    for warmup, same in ((4, True), (0, False)):
        cfg = resolve_config(arch, "ci", max_steps=1, warmup_steps=warmup, rank_every=1)
        trained = train(cfg, progress=False).model
        tokenizer = prepare_data(cfg)[1]
        initial = model_from_config(cfg, vocab_size=len(tokenizer), pad_token_id=tokenizer_pad_id(tokenizer))
        equal = all(torch.equal(a, b) for a, b in zip(trained.state_dict().values(), initial.state_dict().values()))
        assert equal is same
