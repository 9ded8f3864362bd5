"""The run tables (attnrank.runs.tables), the initial-model statistics (attnrank.analysis.baselines) and the sections of the
chapters on trained models, computed from stored runs and freshly initialised models."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnrank.analysis import baselines
from attnrank.core.probe import attention_logits
from attnrank.core.profiles import resolve_config
from attnrank.core.train import probe_steps
from attnrank.runs import store, tables
from attnrank.sections import section


def test_init_statistics_agree_with_the_stored_initial_ranks_and_the_logits(private_store):
    """The initial-model statistics give the run's stored step-0 mean ranks (float64 softmax of the hooked
    logits against the probe's float32 attention), the logit sd of the hooked logits and P1 bounds that hold (P1 covers bidirectional attention)."""
    cfg = resolve_config("modernbert", "ci", max_steps=5, rank_every=5, tau=0.25)
    run = store.run(cfg)
    d = baselines.init_statistics(cfg, measures=("effective_rank", "rank_rtol_1e-2", "rank_rtol_1e-4"), bounds=True)
    L, B, H = cfg.num_layers, cfg.probe_size, cfg.num_heads
    assert len(d) == L * B * H and set(d.arch) == {"modernbert"} and d.n.iloc[0] == cfg.max_len
    assert d.effective_rank.mean() == pytest.approx(run.summary["initial_rank"]["effective_rank"], rel=1e-5)
    S = attention_logits(run.initial_model(), run.probe_batch())
    assert d.logit_sd.mean() == pytest.approx(float(baselines.logit_sd(S, causal=False).mean()), rel=1e-9)
    assert (d["rank_rtol_1e-2"] <= d["bound_rtol_1e-2"]).all()
    m = baselines.init_means([cfg], measures=("effective_rank",))
    assert m.effective_rank.iloc[0] == pytest.approx(d.effective_rank.mean())


def test_run_tables(private_store):
    cfgs = [
        resolve_config("modernbert", "ci", max_steps=4, rank_every=2, log_every=2, tau=t, seed=s)
        for t in (1.0, 0.25)
        for s in (0, 1)
    ]
    wide = tables.table(cfgs, long=False)
    curves = tables.rank_curves(wide, ["rank_rtol_1e-2", "effective_rank"])
    assert list(curves.measure.unique()) == ["rank_rtol_1e-2", "effective_rank"]  # in the order given
    steps = probe_steps(4, 2, cfgs[0].warmup_steps)
    assert len(curves) == 2 * 4 * len(steps) and "value" in curves  # steps 0, 2, 4 (step 1 repeats step 0)
    layers = tables.layer_ranks(wide, "effective_rank")
    assert set(layers.when) == {"initial", "final"} and len(layers) == 4 * 2 * cfgs[0].num_layers * cfgs[0].num_heads
    assert set(layers[layers.when == "initial"].step) == {0} and set(layers[layers.when == "final"].step) == {4}
    heat = tables.layer_head_means(wide[wide.tau == 1.0], "effective_rank")
    assert set(heat.when) == {"step 0", "last step"} and len(heat) == 2 * cfgs[0].num_layers * cfgs[0].num_heads
    one = layers[(layers.tau == 1.0) & (layers.when == "final") & (layers.layer == 0) & (layers["head"] == 0)]
    assert heat.query("step == 4 and layer == 0 and head == 0").value.iloc[0] == pytest.approx(one.value.mean())
    loss = tables.loss_curves(wide)
    assert set(loss.curve) == {"validation loss", "training loss"}
    assert len(loss[loss.curve == "validation loss"]) == 4 * len(steps)
    assert section.divergence(wide, "x") == {"x_n_failed": 0, "x_diverged": "none diverged"}
    bad = wide.assign(status=["failed", "complete", "complete", "complete"])
    assert section.divergence(bad, "x")["x_diverged"].startswith("1 diverged: ")


def test_temperature_grid_adds_an_off_grid_setting(private_store, monkeypatch):
    from attnrank.runs import experiments

    small = {"ci": dict(taus=(1.0,), head_dims=(16,), seeds=(0,))}
    monkeypatch.setattr(experiments, "SWEEP_DEFAULTS", small)
    t = tables.temperature_grid(experiments.sweep_plan("ci"), extra=(0.5, 1.0))
    assert t.attrs["missing"] == [0.5] and sorted(t.tau.unique()) == [0.5, 1.0]
    assert list(t.log10_tau.round(6)) == list(np.log10(t.tau).round(6))
    assert (t.groupby("arch").size() == 2).all()


def test_init_std_is_the_hf_initializer_range():
    assert baselines.init_std() == 0.02


def test_uniform_causal_logits_give_the_uniform_baseline():
    n = 6
    A = torch.softmax(torch.zeros(n, n).masked_fill(~baselines.causal_mask(n), -math.inf), -1).double()
    assert torch.allclose(A, baselines.uniform_attention(n, causal=True))
