"""Content-free evaluation (attnrank.analysis.ablation) on constructed models whose answer is known, and its equality
with the stock HF models where the two must agree."""

import math

import pandas as pd
import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from attnrank.analysis import ablation, baselines
from attnrank.analysis.baselines import DATA_FIELDS, uniform_attention
from attnrank.core.attention import ATTN_IMPLEMENTATION
from attnrank.core.errors import ConfigError
from attnrank.core.models import build_model
from attnrank.core.probe import RankProbe, attention_probabilities
from attnrank.sections import learned
from attnrank.sections.section import worth

V, N, D = 8, 8, 32  # tokens, positions, width of the constructed copy model
COPY = 16  # first dimension of the subspace the attention output writes to


def copy_model(query: float = 10.0) -> GPT2LMHeadModel:
    """A one-layer, one-head GPT-2 that copies the first token of a sequence to every later position.

    Token ``x`` embeds as ``e_x``, position 0 adds a flag ``e_V``. The query is a constant (``query`` along
    key dimension 0, from the bias), the key reads the flag, so every position attends to position 0
    (logit gap about 70 at ``query = 10``); the value copies the token dimensions, the output projection
    writes them to a copy subspace that the (untied) output layer reads; the MLP is zero. With
    ``query = 0`` its attention is uniform already.
    """
    cfg = GPT2Config(
        vocab_size=V,
        n_embd=D,
        n_layer=1,
        n_head=1,
        n_positions=N,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        tie_word_embeddings=False,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=None,
    )
    cfg.tau = 1.0
    cfg._attn_implementation = ATTN_IMPLEMENTATION
    model = GPT2LMHeadModel(cfg)
    model.loss_type = "ForCausalLM"
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        t, block = model.transformer, model.transformer.h[0]
        t.wte.weight[:, :V] = torch.eye(V)
        t.wpe.weight[0, V] = 1.0
        for ln in (block.ln_1, block.ln_2, t.ln_f):
            ln.weight.fill_(1.0)
        w, b = block.attn.c_attn.weight, block.attn.c_attn.bias  # Conv1D [D, 3 D]: query, key, value
        b[0] = query
        w[V, D] = 10.0
        w[:V, 2 * D : 2 * D + V] = torch.eye(V)
        block.attn.c_proj.weight[:V, COPY : COPY + V] = 4.0 * torch.eye(V)
        model.lm_head.weight[:, COPY : COPY + V] = 4.0 * torch.eye(V)
    return model.eval()


@pytest.fixture
def copy_batches():
    """Random sequences whose every target is the first token (``labels[:, 0]`` is never scored)."""
    x = torch.randint(0, V, (64, N), generator=torch.Generator().manual_seed(0))
    labels = x[:, :1].expand(-1, N).clone()
    labels[:, 0] = -100
    return [{"input_ids": x, "labels": labels}]


def test_a_model_that_copies_through_attention_loses_it_without_content(copy_batches, one_thread):
    """Attending to position 0 copies the answer (loss near 0); uniform attention dilutes it over the prefix."""
    model = copy_model()
    trained = ablation.validation_loss(model, copy_batches)
    free = ablation.validation_loss(model, copy_batches, attention="content_free")
    assert trained < 0.05
    assert free - trained > 1.0
    # the switch is undone: the same model evaluates as trained again
    assert ablation.validation_loss(model, copy_batches) == trained
    assert model.config._attn_implementation == ATTN_IMPLEMENTATION


def test_a_model_whose_attention_is_uniform_already_gains_nothing(copy_batches, one_thread):
    model = copy_model(query=0.0)
    trained = ablation.validation_loss(model, copy_batches)
    free = ablation.validation_loss(model, copy_batches, attention="content_free")
    assert free - trained == pytest.approx(0.0, abs=1e-6)
    assert trained > 1.0  # without attention to position 0 the copy fails


def test_high_temperature_approaches_the_content_free_loss_but_is_not_it(copy_batches, one_thread):
    """The loss at a finite tau moves towards the content-free loss as tau grows; at the largest allowed tau
    (1000) a model with large trained logits is still far from it, which is why the intervention is exact."""
    model = copy_model()
    free = ablation.validation_loss(model, copy_batches, attention="content_free")
    errors = [abs(ablation.validation_loss(model, copy_batches, tau=t) - free) for t in (1.0, 10.0, 100.0, 1000.0)]
    assert errors == sorted(errors, reverse=True)
    assert errors[-1] < 0.2 * errors[0]
    assert errors[-1] > 0.1  # nats: tau = 1000 is not content-free here
    assert model.config.tau == 1.0  # restored


@pytest.mark.parametrize("arch", ["gpt2", "modernbert"])
def test_content_free_attention_is_uniform_over_the_visible_keys(arch, one_thread):
    model = build_model(arch, hidden_size=32, num_layers=2, num_heads=4, max_len=16, vocab_size=64, seed=3)
    ids = torch.randint(0, 64, (3, 16), generator=torch.Generator().manual_seed(1))
    with ablation.content_free(model):
        probs = attention_probabilities(model, ids)  # [layers, batch, heads, n, n]
    expected = uniform_attention(16, causal=arch == "gpt2").float()
    assert torch.allclose(probs, expected.expand_as(probs), atol=1e-7)


def _batches(arch: str, seed: int = 5):
    ids = torch.randint(5, 64, (8, 16), generator=torch.Generator().manual_seed(seed))
    labels = ids.clone()
    if arch == "modernbert":  # score a few masked positions, as the MLM collator does
        keep = torch.zeros_like(ids, dtype=torch.bool)
        keep[:, 3::4] = True
        labels[~keep] = -100
        ids = ids.masked_fill(keep, 4)
    return [{"input_ids": ids, "labels": labels}]


def _zero_queries(model) -> None:
    hidden = model.config.hidden_size
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".attention.self.query." in name:
                p.zero_()
            elif name.endswith("attn.c_attn.weight"):
                p[:, :hidden] = 0.0
            elif name.endswith("attn.c_attn.bias"):
                p[:hidden] = 0.0


@pytest.mark.parametrize("arch", ["gpt2", "modernbert"])
def test_evaluation_equals_the_stock_hf_model(arch, one_thread):
    """As trained at tau = 1 the loss is the stock SDPA model's; content-free it is the stock model's with
    zero query weights and biases (whose logits are 0: the same uniform attention)."""
    sizes = dict(hidden_size=32, num_layers=2, num_heads=4, max_len=16, vocab_size=64, seed=7)
    ours = build_model(arch, **sizes).eval()
    stock = build_model(arch, **sizes, attn_implementation="sdpa").eval()
    batches = _batches(arch)
    stock_loss = RankProbe(torch.empty(0, 1, dtype=torch.long), batches).validation_loss(stock)
    assert ablation.validation_loss(ours, batches) == pytest.approx(stock_loss, abs=1e-6)
    assert ablation.validation_loss(stock, batches) == pytest.approx(stock_loss, abs=1e-6)
    _zero_queries(stock)
    zero_query = RankProbe(torch.empty(0, 1, dtype=torch.long), batches).validation_loss(stock)
    assert ablation.validation_loss(ours, batches, attention="content_free") == pytest.approx(zero_query, abs=1e-6)
    # untrained weights give small logits, but not zero: the two differ
    assert ablation.validation_loss(ours, batches, attention="content_free") != stock_loss


def test_bad_input_names_the_parameter(copy_batches):
    model = copy_model()
    with pytest.raises(ConfigError, match="attention") as e:
        ablation.validation_loss(model, copy_batches, attention="uniform")
    assert e.value.param == "attention" and "content_free" in str(e.value)
    for tau in (0.0, -1.0, math.inf, 1e9):
        with pytest.raises(ConfigError) as e:
            ablation.validation_loss(model, copy_batches, tau=tau)
        assert e.value.param == "tau"
    assert model.config.tau == 1.0
    stock = build_model("gpt2", hidden_size=32, num_layers=1, num_heads=2, max_len=8, vocab_size=8)
    stock.config._attn_implementation = "sdpa"
    with pytest.raises(ConfigError) as e:
        ablation.validation_loss(stock, copy_batches, attention="content_free")
    assert e.value.param == "model"
    with pytest.raises(ConfigError) as e:
        ablation.validation_loss(stock, copy_batches, tau=2.0)
    assert e.value.param == "tau"
    for bad in ({"path": None, "arch": "gpt2"}, {"path": "/nonexistent/gpt2-0123456789abcdef"}):
        with pytest.raises(ConfigError) as e:
            ablation.attention_gain(bad)
        assert e.value.param == "run"


def test_worth_in_words():
    assert worth(0.4549) == "attention worth 0.45 nats"
    assert worth(0.004) == "attention worth under 0.01 nats"
    assert worth(-0.0231) == "content-free attention 0.02 nats better"
    assert worth(math.nan) == "attention's worth n/a"


BASE = {
    "gpt2": {"unigram": 5.8, "bigram": 4.1, "two_sided": math.nan, "context_free": math.nan, "n_targets": 100},
    "modernbert": {"unigram": 5.9, "bigram": 4.8, "two_sided": 4.4, "context_free": 5.3, "n_targets": 50},
}


def _runs(rows):
    data = {k: "x" for k in DATA_FIELDS}
    return pd.DataFrame([{**data, "status": "complete", "seed": i, **r} for i, r in enumerate(rows)])


def test_regime_clauses_state_what_attention_is_worth(monkeypatch):
    """learned.regime and the gate's inputs: the mean gain of the runs at tau = 1."""
    monkeypatch.setattr(learned, "baseline_losses", lambda run: dict(BASE[run["arch"]]))
    monkeypatch.setattr(baselines, "baseline_losses", lambda run: dict(BASE[run["arch"]]))
    runs = _runs(
        [
            {"arch": "gpt2", "tau": 1.0, "final_val_loss": 3.8, "attention_gain": 0.40},
            {"arch": "gpt2", "tau": 1.0, "final_val_loss": 3.9, "attention_gain": 0.50},
            {"arch": "gpt2", "tau": 0.001, "final_val_loss": 4.5, "attention_gain": 0.01},
            {"arch": "modernbert", "tau": 1.0, "final_val_loss": 4.6, "attention_gain": 0.021},
        ]
    )
    assert learned.regime(runs) == (
        "GPT-2 on average 0.25 nats below bigram at τ = 1, attention worth 0.45 nats (2 of 3 runs below bigram); "
        "ModernBERT on average 0.20 nats below bigram, 0.20 nats above two-sided, 0.70 nats below context-free, attention worth 0.02 nats"
    )
    t = learned.attention_table(runs)
    assert list(zip(t.arch, t.tau)) == [("gpt2", 0.001), ("gpt2", 1.0), ("modernbert", 1.0)]
    row = t.iloc[1]
    assert (row.runs, row.attention_gain, row.gain_min, row.gain_max) == (2, pytest.approx(0.45), 0.40, 0.50)
    assert row.content_free_gap == pytest.approx(-0.25 + 0.45)
    assert baselines.reference_gains(runs) == {"gpt2": pytest.approx(0.45), "modernbert": pytest.approx(0.021)}
    assert set(baselines.reference_table(runs).tau) == {1.0}  # the gate reads the tau = 1 runs
