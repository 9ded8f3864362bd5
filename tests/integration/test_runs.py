"""One model builder (`attnrank.core.models.model_from_config`), a stored run as an object (`attnrank.runs.store.Run`), run tables (`attnrank.runs.tables`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from transformers import (
    BertConfig,
    BertForMaskedLM,
    GPT2Config,
    GPT2LMHeadModel,
    ModernBertConfig,
    ModernBertForMaskedLM,
)

from attnrank.core import models
from attnrank.core.errors import ConfigError
from attnrank.core.probe import RankProbe
from attnrank.core.profiles import resolve_config
from attnrank.core.rank import MEASURES
from attnrank.core.train import probe_steps
from attnrank.runs import store, tables


@pytest.mark.parametrize("arch", ["bert", "modernbert", "gpt2"])
def test_model_from_config_equals_the_stock_hf_model_at_tau_1(arch):
    """At tau = 1 the model built by `model_from_config` gives the outputs of the stock HF class
    (eager attention) built from the same config and seed."""
    cfg = resolve_config(arch, "ci", tau=1.0, seed=3)
    ours = models.model_from_config(cfg, vocab_size=100, pad_token_id=0).eval()
    kw = dict(vocab_size=100, pad_token_id=0)
    if arch == "modernbert":  # full attention in every layer, the tokenizer's special ids, a gated MLP of 2 x width
        hf = ModernBertConfig(
            hidden_size=cfg.hidden_size,
            num_hidden_layers=cfg.num_layers,
            num_attention_heads=cfg.num_heads,
            intermediate_size=2 * cfg.hidden_size,
            max_position_embeddings=cfg.max_len,
            layer_types=["full_attention"] * cfg.num_layers,
            embedding_dropout=cfg.dropout,
            mlp_dropout=cfg.dropout,
            attention_dropout=cfg.dropout,
            cls_token_id=2,
            sep_token_id=3,
            bos_token_id=2,
            eos_token_id=3,
            **kw,
        )
        cls = ModernBertForMaskedLM
    elif arch == "bert":
        hf = BertConfig(
            hidden_size=cfg.hidden_size,
            num_hidden_layers=cfg.num_layers,
            num_attention_heads=cfg.num_heads,
            intermediate_size=4 * cfg.hidden_size,
            max_position_embeddings=cfg.max_len,
            hidden_dropout_prob=cfg.dropout,
            attention_probs_dropout_prob=cfg.dropout,
            **kw,
        )
        cls = BertForMaskedLM
    else:
        hf = GPT2Config(
            n_embd=cfg.hidden_size,
            n_layer=cfg.num_layers,
            n_head=cfg.num_heads,
            n_inner=4 * cfg.hidden_size,
            n_positions=cfg.max_len,
            resid_pdrop=cfg.dropout,
            embd_pdrop=cfg.dropout,
            attn_pdrop=cfg.dropout,
            bos_token_id=0,
            eos_token_id=0,
            **kw,
        )
        cls = GPT2LMHeadModel
    hf._attn_implementation = "eager"
    torch.manual_seed(cfg.seed)
    stock = cls(hf).eval()
    ids = torch.randint(1, 100, (3, cfg.max_len), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        a, b = ours(input_ids=ids).logits, stock(input_ids=ids).logits
    assert a.shape == (3, cfg.max_len, 100)
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    # the seed and tau overrides act: another seed gives other weights, tau enters the config
    other = models.model_from_config(cfg, vocab_size=100, pad_token_id=0, seed=4, tau=0.5)
    assert other.config.tau == 0.5
    assert not torch.equal(other.get_input_embeddings().weight, ours.get_input_embeddings().weight)


def test_model_from_config_reads_a_stored_config_and_rejects_other_input():
    cfg = resolve_config("gpt2", "ci")
    stored = {**cfg.to_dict(), "head_dim": cfg.head_dim}
    a = models.model_from_config(cfg, vocab_size=64, pad_token_id=1)
    b = models.model_from_config(stored, vocab_size=64, pad_token_id=1)
    for (n, p), (_, q) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(p, q), n
    with pytest.raises(ConfigError, match="cfg"):
        models.model_from_config(["gpt2"], vocab_size=64, pad_token_id=1)
    with pytest.raises(ConfigError, match="config"):
        store.run({"arch": "gpt2"})


def test_tokenizer_pad_id_falls_back_to_end_of_text():
    class Tok:
        pad_token_id, eos_token_id = None, 7

    assert models.tokenizer_pad_id(Tok()) == 7
    Tok.pad_token_id = 2
    assert models.tokenizer_pad_id(Tok()) == 2


@pytest.mark.parametrize("arch", ["modernbert", "gpt2"])
def test_run_initial_model_and_probe_batch_reproduce_the_stored_initial_ranks(private_store, arch):
    """`Run.initial_model()` on `Run.probe_batch()` gives exactly the stored step-0 ranks and
    validation-free summary; `Run.load_model()` gives the last stored ranks."""
    cfg = resolve_config(arch, "ci", max_steps=10, rank_every=10)
    run = store.run(cfg)
    assert run.fresh and run.run_config == cfg and run.summary["status"] == "complete"
    ids = run.probe_batch()
    assert ids.shape == (cfg.probe_size, cfg.max_len) and ids.dtype == torch.int64
    for model, step, which in ((run.initial_model(), 0, "initial_rank"), (run.load_model(), 10, "final_rank")):
        probe = RankProbe(ids, [])
        probe.validation_loss = lambda m: float("nan")  # ranks only
        got = probe(model, step)
        assert {m: got[m] for m in run.summary[which]} == run.summary[which]  # exactly, not approximately
        stored = run.ranks.query("step == @step").reset_index(drop=True)
        pd.testing.assert_frame_equal(probe.ranks, stored, check_dtype=False)
    wide = run.ranks_wide()
    assert set(wide.columns) == {"step", "layer", "head", *run.summary["initial_rank"]}
    assert (
        len(wide) == len(probe_steps(cfg.max_steps, cfg.rank_every, cfg.warmup_steps)) * cfg.num_layers * cfg.num_heads
    )  # 0, 1, 2, 4, 8, 10
    again = store.run(cfg)
    assert not again.fresh and again.key == run.key


def test_table_long_has_the_numbers_of_the_wide_table(private_store):
    cfgs = [resolve_config("gpt2", "ci", max_steps=5, rank_every=5, tau=t) for t in (1.0, 0.1)]
    wide = tables.table(cfgs, long=False)
    long = tables.table(cfgs)
    assert list(wide.tau) == [1.0, 0.1]
    measures = list(MEASURES)
    assert len(long) == 2 * 2 * len(measures)
    assert list(long.columns[-3:]) == ["measure", "when", "value"]
    assert not any(
        c.startswith(("initial_", "final_")) and c != "initial_val_loss" and c != "final_val_loss" for c in long.columns
    )
    for _, r in long.iterrows():
        w = wide[wide.key == r.key].iloc[0]
        assert r.value == w[f"{r.when}_{r.measure}"]
        assert r.final_val_loss == w.final_val_loss and r.tau == w.tau
    assert list(long.drop_duplicates("key").key) == list(wide.key)  # order of the configs


def test_long_form_order_and_values_on_a_constructed_frame():
    wide = pd.DataFrame(
        {
            "key": ["b", "a"],
            "tau": [1.0, 0.5],
            "final_val_loss": [3.0, 2.0],
            "initial_effective_rank": [1.5, 2.5],
            "final_effective_rank": [1.7, 2.9],
            "initial_stable_rank": [1.1, 1.2],
            "final_stable_rank": [1.3, 1.4],
        }
    )
    long = tables.long_form(wide)
    assert list(long.key) == ["b"] * 4 + ["a"] * 4
    assert list(long.when[:4]) == ["initial", "initial", "final", "final"]
    got = long.set_index(["key", "when", "measure"]).value
    assert got[("a", "final", "effective_rank")] == 2.9 and got[("b", "initial", "stable_rank")] == 1.1
    assert np.allclose(long.groupby("key", sort=False).final_val_loss.first(), [3.0, 2.0])


def test_the_model_builder_is_in_the_run_key_and_the_run_layer_is_not():
    """`model_from_config` (in `models.py`) builds every trained model, so its module is in the import
    closure that keys the run store; the run layer itself (`runs/store.py`, `runs/grid.py`, the run tables `runs/tables.py`) is not, so editing how chapters read runs retrains nothing."""
    from attnrank.runs import provenance

    closure = {str(p.relative_to(provenance._ROOT)) for p in provenance.closure(provenance.RUN_ROOTS)}
    assert {"core/models.py", "core/attention.py", "core/train.py", "core/probe.py", "core/rank.py"} <= closure
    assert (
        not {
            "runs/tables.py",
            "runs/store.py",
            "runs/grid.py",
            "chapters/dynamics.py",
            "chapters/temp.py",
            "words/glossary.py",
        }
        & closure
    )


@pytest.mark.parametrize("arch", ["bert", "modernbert", "gpt2"])
def test_every_architecture_is_stored_and_read_back(arch, private_store):
    """Every architecture a config accepts (the study's BERT too) has a store folder the store reads back."""
    r = store.run(resolve_config(arch, "ci", max_steps=4, warmup_steps=0, rank_every=2))
    assert r.fresh and r.path.name.startswith(f"{arch}-") and r.summary["status"] == "complete"
    again = store.run(resolve_config(arch, "ci", max_steps=4, warmup_steps=0, rank_every=2))
    assert not getattr(again, "fresh", False) and again.key == r.key
    assert store.read(r.path).summary["final_val_loss"] == r.summary["final_val_loss"]
