"""The query/key scales of a run (P3 twins), their optimizer groups, and the evaluation-temperature intervention."""

import math
import subprocess
import sys
import tempfile
from dataclasses import replace

import pytest
import torch

from attnrank.core import models, probe, train
from attnrank.core.errors import ConfigError
from attnrank.core.profiles import resolve_config
from attnrank.runs.store import run_key
from attnrank.sections import causal

pytestmark = pytest.mark.usefixtures("one_thread")
SIZES = dict(hidden_size=32, num_layers=2, num_heads=2, max_len=16, vocab_size=64, dropout=0.0, seed=3)


def test_twin_has_the_attention_of_its_temperature_at_initialisation():
    """Guarantee (docs/guarantees.md): "A temperature is a query/key scale." (at initialisation)

    A model at tau and its twin at tau = 1 with the query/key weights and biases scaled by
    1/sqrt(tau) have the same attention probabilities at initialisation (to 1e-6); an unscaled model
    at tau = 1 does not."""
    ids = torch.randint(0, 64, (4, 16), generator=torch.Generator().manual_seed(0))
    for arch in ("modernbert", "gpt2"):
        for tau in (0.01, 4.0):
            cold = models.build_model(arch, tau=tau, **SIZES).double()
            twin = models.build_model(arch, tau=1.0, qk_init_scale=causal.twin_scale(tau), **SIZES).double()
            stock = models.build_model(arch, tau=1.0, **SIZES).double()
            a, b, c = (probe.attention_probabilities(m, ids) for m in (cold, twin, stock))
            assert float((a - b).abs().max()) < 1e-6, (arch, tau)
            assert float((a - c).abs().max()) > 1e-3, (arch, tau)


def _train64(cfg, steps: int):
    """Train ``cfg`` in float64 with the run's own Trainer; returns the probe attention at init and after."""
    data, tok, coll, ids, _ = train.prepare_data(cfg)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    model = models.build_model(
        cfg.arch,
        hidden_size=cfg.hidden_size,
        num_layers=cfg.num_layers,
        num_heads=cfg.num_heads,
        tau=cfg.tau,
        max_len=cfg.max_len,
        vocab_size=len(tok),
        dropout=0.0,
        seed=cfg.seed,
        pad_token_id=pad,
        qk_init_scale=cfg.qk_init_scale,
    ).double()
    ids = ids[:4]
    before = probe.attention_probabilities(model, ids)
    with tempfile.TemporaryDirectory() as tmp, models.split_qk(model):
        train.make_trainer(replace(cfg, max_steps=steps), model, data, coll, output_dir=tmp).train()
    return before, probe.attention_probabilities(model, ids)


@pytest.mark.parametrize("arch", ["modernbert", "gpt2"])
def test_twins_follow_the_same_trajectory_in_float64(arch):
    """Guarantee (docs/guarantees.md): "A temperature is a query/key scale." (through training)

    Under P3's conditions (Adam epsilon -> 0, no weight decay on query/key, no clipping) a run at
    tau = 0.25 and its twin at tau = 1 (qk_init_scale = qk_lr_scale = 2) have the same attention after
    4 float64 steps (measured 1e-13); the twin without the learning-rate scale drifts away (> 1e-3)."""
    tau, s = 0.25, causal.twin_scale(0.25)
    base = dict(warmup_steps=0, **causal.P3_CONDITIONS)
    a0, a1 = _train64(resolve_config(arch, "ci", tau=tau, **base), 4)
    b0, b1 = _train64(resolve_config(arch, "ci", qk_init_scale=s, qk_lr_scale=s, **base), 4)
    _, c1 = _train64(resolve_config(arch, "ci", qk_init_scale=s, **base), 4)
    assert float((a0 - b0).abs().max()) < 1e-6
    assert float((a1 - b1).abs().max()) < 1e-9
    assert float((a1 - c1).abs().max()) > 1e-3


@pytest.mark.parametrize("arch", ["bert", "modernbert", "gpt2"])
def test_query_key_parameters_get_their_own_learning_rate(arch):
    """Guarantee (docs/guarantees.md): "A temperature is a query/key scale." (the optimizer groups)

    The Trainer's optimizer puts exactly the query/key weights and biases (GPT-2: the query/key part
    of c_attn) in groups with learning rate x qk_lr_scale and weight decay x qk_decay_scale; every
    other parameter keeps the stock groups, and after training c_attn is one plain tensor again."""
    cfg = resolve_config(arch, "ci", qk_lr_scale=3.0, qk_decay_scale=0.5)
    model = models.build_model(arch, **SIZES)
    names_before = [n for n, _ in model.named_parameters()]
    with tempfile.TemporaryDirectory() as tmp, models.split_qk(model):
        trainer = train.make_trainer(cfg, model, [], None, output_dir=tmp)
        opt = trainer.create_optimizer()
        qk = {id(p) for n, p in model.named_parameters() if n in models.qk_parameter_names(model)}
        # BERT: weight + bias of q and k; GPT-2: the fused query/key weight and bias; ModernBERT: its fused weight
        expected = {"bert": 4, "gpt2": 2, "modernbert": 1}[arch] * cfg.num_layers
        assert len(qk) == expected
        fast = [g for g in opt.param_groups if math.isclose(g["lr"], 3.0 * cfg.learning_rate)]
        assert {id(p) for g in fast for p in g["params"]} == qk
        slow = [g for g in opt.param_groups if math.isclose(g["lr"], cfg.learning_rate)]
        assert not qk & {id(p) for g in slow for p in g["params"]}
        assert sum(len(g["params"]) for g in opt.param_groups) == len(list(model.parameters()))
        decayed = [g["weight_decay"] for g in fast if g["weight_decay"] > 0]
        assert decayed == [pytest.approx(0.5 * cfg.weight_decay)]
        shapes = {tuple(p.shape) for g in fast for p in g["params"]}
        if arch == "gpt2":
            assert shapes == {(32, 64), (64,)}  # 2 x hidden columns: query and key, not value
        if arch == "modernbert":
            assert shapes == {(64, 32)}  # 2 x hidden rows of Wqkv: query and key, not value
    assert [n for n, _ in model.named_parameters()] == names_before


@pytest.mark.parametrize(
    "field,value",
    [
        ("qk_init_scale", 0.0),
        ("qk_lr_scale", 1e4),
        ("qk_decay_scale", -1.0),
        ("adam_epsilon", 0.0),
        ("max_grad_norm", -1.0),
    ],
)
def test_field_out_of_range_names_it(field, value):
    """Guarantee (docs/guarantees.md): "Bad input fails first." (the query/key and optimizer fields)

    A query/key scale, Adam epsilon or clipping norm out of range gives a ConfigError naming the field
    and stating the allowed range, before any work."""
    with pytest.raises(ConfigError, match=rf"^{field}: got .*allowed range is"):
        resolve_config("modernbert", "ci", **{field: value})


def test_new_fields_are_in_the_run_key():
    """Changing any of the new fields changes the run key (so a stored run is never served for another)."""
    cfg = resolve_config("gpt2", "ci")
    keys = {run_key(cfg)} | {
        run_key(replace(cfg, **{f: v}))
        for f, v in [
            ("qk_init_scale", 2.0),
            ("qk_lr_scale", 2.0),
            ("qk_decay_scale", 0.0),
            ("adam_epsilon", 1e-12),
            ("max_grad_norm", 0.0),
        ]
    }
    assert len(keys) == 6


def test_cli_rejects_a_bad_scale_with_one_line():
    """`attnrank train --qk-lr-scale 0` exits with status 2 and one line naming qk_lr_scale."""
    r = subprocess.run(
        [sys.executable, "-m", "attnrank", "train", "--arch", "modernbert", "--profile", "ci", "--qk-lr-scale", "0"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "qk_lr_scale" in r.stderr and "allowed range" in r.stderr


def test_causal_runs_and_cells():
    """The chapter's runs: five cells per seed and architecture, all under P3's conditions, each
    labelled back to its cell."""
    import pandas as pd

    cfgs = causal.causal_runs("ci", tau=0.01, seeds=[0, 1])
    assert len(cfgs) == 2 * 5 * 2
    assert all(c.adam_epsilon == 1e-16 and c.qk_decay_scale == 0.0 and c.max_grad_norm == 0.0 for c in cfgs)
    df = pd.DataFrame([c.to_dict() for c in cfgs])
    cells = causal.label_cells(df, 0.01)
    assert list(cells[:10]) == [c for c in causal.CELLS for _ in (0, 1)]
    twin = df[cells == "twin"].iloc[0]
    assert twin.tau == 1.0 and twin.qk_init_scale == pytest.approx(10.0) and twin.qk_lr_scale == pytest.approx(10.0)
    from attnrank.runs import experiments

    assert experiments.book_runs("ci", "causal") == causal.causal_runs("ci")  # `attnrank sweep` trains them up front
    assert len(experiments.book_runs("ci", "causal")) == 50
    # at the default, GPT-2's runs at the default's sizes; the scale check's hold them, beside the masked LM's
    quick = causal.causal_runs("quick", seeds=[0])
    assert {c.arch for c in quick} == {"gpt2"} and set(quick) < set(causal.causal_runs("scale"))


def test_eval_temperatures_moves_rank_not_weights(tmp_path, monkeypatch):
    """The intervention: a stored model evaluated at other temperatures. At its own tau it reproduces
    the run's final probe (rank and validation loss); at a colder tau the effective rank and the loss
    change; the weights and the model's tau are untouched."""
    from attnrank.runs import store

    monkeypatch.setenv("ATTNRANK_RUNS", str(tmp_path))
    r = store.run(resolve_config("modernbert", "ci", max_steps=10))
    before = {n: p.clone() for n, p in r.load_model().named_parameters()}
    out = causal.eval_temperatures(r, [1.0, 0.01])
    assert list(out.eval_tau) == [1.0, 0.01] and (out.train_tau == 1.0).all()
    assert out.val_loss.iloc[0] == pytest.approx(r.summary["final_val_loss"], abs=1e-5)
    assert out.effective_rank.iloc[0] == pytest.approx(r.summary["final_rank"]["effective_rank"], abs=1e-4)
    assert out.effective_rank.iloc[1] - out.effective_rank.iloc[0] > 1.0  # measured 1.19 -> 10.6
    assert abs(out.val_loss.iloc[1] - out.val_loss.iloc[0]) > 1e-6  # measured 1.7e-5 after 10 steps
    after = r.load_model()
    assert all(torch.equal(p, before[n]) for n, p in after.named_parameters()) and after.config.tau == 1.0
    with pytest.raises(ConfigError, match="^taus"):
        causal.eval_temperatures(r, [0.0])
