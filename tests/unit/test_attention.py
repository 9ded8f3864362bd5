"""Tempered attention against the stock HF eager/SDPA models, masks at extreme temperatures.

Every comparison is in eval mode. ``_sharpen`` multiplies the query and key projections so
that logits are O(1) (at HF's initialisation, std 0.02, attention is nearly uniform and a
wrong temperature would change the probabilities by only ~1e-3).
"""

from __future__ import annotations

import math

import pytest
import torch
from transformers import AttentionInterface
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface, sdpa_mask

from attnrank.core import attention
from attnrank.core.attention import ATTN_IMPLEMENTATION, get_tau, probabilities_requested, tempered_attention
from attnrank.core.models import build_model, set_tau

HIDDEN, HEADS, LAYERS, VOCAB, N = 32, 4, 2, 64, 10
HEAD_DIM = HIDDEN // HEADS
KW = dict(hidden_size=HIDDEN, num_layers=LAYERS, num_heads=HEADS, max_len=16, vocab_size=VOCAB, dropout=0.1)


def _build(arch, impl=ATTN_IMPLEMENTATION, tau=1.0, seed=0):
    return build_model(arch, tau=tau, seed=seed, attn_implementation=impl, **KW).eval()


def _qk_weights(model, arch, layer):
    """(weight, bias) slices of the query and the key projections of one layer (views)."""
    if arch == "bert":
        s = model.bert.encoder.layer[layer].attention.self
        return [(s.query.weight, s.query.bias), (s.key.weight, s.key.bias)]
    if arch == "modernbert":  # Linear: weight [3 * hidden, in], rows q | k | v; no bias
        w = model.model.layers[layer].attn.Wqkv.weight
        return [(w[:HIDDEN], None), (w[HIDDEN : 2 * HIDDEN], None)]
    c = model.transformer.h[layer].attn.c_attn  # Conv1D: weight [in, 3 * hidden], columns q | k | v
    return [(c.weight[:, :HIDDEN], c.bias[:HIDDEN]), (c.weight[:, HIDDEN : 2 * HIDDEN], c.bias[HIDDEN : 2 * HIDDEN])]


@torch.no_grad()
def _scale_queries(model, arch, factor):
    for layer in range(LAYERS):
        (w, b), _ = _qk_weights(model, arch, layer)
        w.mul_(factor)
        if b is not None:
            b.mul_(factor)
    return model


@torch.no_grad()
def _sharpen(model, arch, factor=8.0):
    for layer in range(LAYERS):
        for w, b in _qk_weights(model, arch, layer):
            w.mul_(factor)
            if b is not None:
                b.mul_(factor)
    return model


def _pair(arch, impl="eager", tau=1.0, seed=0, sharpen=True):
    """(ours, stock) with identical weights."""
    ours = _build(arch, tau=tau, seed=seed)
    if sharpen:
        _sharpen(ours, arch)
    stock = _build(arch, impl=impl, seed=seed + 1)  # a different seed: the state dict is copied
    stock.load_state_dict(ours.state_dict())
    return ours, stock


def _ids(batch=3, n=N, seed=0):
    return torch.randint(1, VOCAB, (batch, n), generator=torch.Generator().manual_seed(seed))


def _mask(lengths, n=N, left=False):
    m = torch.zeros(len(lengths), n, dtype=torch.long)
    for b, L in enumerate(lengths):
        if left:
            m[b, n - L :] = 1
        else:
            m[b, :L] = 1
    return m


def _valid_keys(arch, mask):
    """Bool [batch, 1, n, n]: which keys each query may attend to (padding and, for GPT-2, causality)."""
    n = mask.shape[-1]
    allowed = mask.bool()[:, None, None, :].expand(-1, 1, n, n)
    if arch == "gpt2":
        allowed = allowed & torch.ones(n, n, dtype=torch.bool).tril()
    return allowed


def _run(model, ids, mask=None, probs=True):
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=mask, output_attentions=probs, output_hidden_states=True)


def _max_diff(a, b):
    return (a.double() - b.double()).abs().max().item()


# ---------------------------------------------------------------- registration


def test_attention_and_mask_functions_are_registered():
    assert AttentionInterface._global_mapping[ATTN_IMPLEMENTATION] is tempered_attention
    # without a mask function transformers builds no mask for a custom name (padding is lost)
    assert ATTN_IMPLEMENTATION in AttentionMaskInterface._global_mapping
    assert ALL_MASK_ATTENTION_FUNCTIONS[ATTN_IMPLEMENTATION] is sdpa_mask
    for arch in ("bert", "gpt2"):
        m = _build(arch, tau=0.25)
        assert m.config._attn_implementation == ATTN_IMPLEMENTATION
        assert m.config.tau == 0.25
        assert get_tau(m.transformer.h[0].attn if arch == "gpt2" else m.bert.encoder.layer[0].attention.self) == 0.25


def test_probabilities_requested_reads_kwargs():
    assert probabilities_requested({"output_attentions": True})
    assert not probabilities_requested({"output_attentions": False})
    assert not probabilities_requested({})


# ---------------------------------------------------------------- tau = 1 equals the stock model


@pytest.mark.parametrize("arch", ["bert", "modernbert", "gpt2"])
def test_same_seed_gives_same_weights_as_stock_eager(arch):
    ours = _build(arch, seed=7)
    stock = _build(arch, impl="eager", seed=7)
    a, b = ours.state_dict(), stock.state_dict()
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    ids, mask = _ids(), _mask([N, 7, 4])
    o, e = _run(ours, ids, mask), _run(stock, ids, mask)
    for x, y in zip(o.attentions, e.attentions):
        assert _max_diff(x, y) <= 1e-6
    assert _max_diff(o.logits, e.logits) <= 1e-5


@pytest.mark.parametrize("arch", ["bert", "modernbert"])
def test_masked_lm_tau1_with_padding_equals_stock_eager(arch):
    ours, stock = _pair(arch)
    ids, mask = _ids(), _mask([N, 7, 4])
    o, e = _run(ours, ids, mask), _run(stock, ids, mask)
    assert len(o.attentions) == LAYERS
    for x, y in zip(o.attentions, e.attentions):
        assert x.shape == (3, HEADS, N, N)
        assert x.dtype == torch.float32
        assert _max_diff(x, y) <= 1e-6
    for x, y in zip(o.hidden_states, e.hidden_states):
        assert _max_diff(x, y) <= 1e-5
    assert _max_diff(o.logits, e.logits) <= 1e-5
    # sanity: the sharpened weights give attention far from uniform, and padding is in use
    assert o.attentions[0].amax(-1).mean() > 0.25  # uniform over the 10 keys: 0.1
    assert (o.attentions[0][2, :, :, 4:] == 0).all()


@pytest.mark.parametrize("left", [False, True])
def test_gpt2_tau1_equals_stock_eager(left):
    ours, stock = _pair("gpt2")
    ids = _ids()
    for mask in (None, _mask([N, 7, 4], left=left)):
        o, e = _run(ours, ids, mask), _run(stock, ids, mask)
        # fully masked query rows (left padding: a padded query sees only padded keys) are
        # zeros in ours and uniform in HF's eager; compare the rest
        rows = torch.ones(3, N, dtype=torch.bool) if mask is None else _valid_keys("gpt2", mask).any(-1)[:, 0]
        for x, y in zip(o.attentions, e.attentions):
            assert _max_diff(x.permute(0, 2, 1, 3)[rows], y.permute(0, 2, 1, 3)[rows]) <= 1e-6
            assert (x.permute(0, 2, 1, 3)[~rows] == 0).all()
        assert _max_diff(o.logits[rows], e.logits[rows]) <= 1e-5
        assert _max_diff(o.hidden_states[-1][rows], e.hidden_states[-1][rows]) <= 1e-5
        if mask is None or not left:
            assert rows.all() and _max_diff(o.logits, e.logits) <= 1e-5


# ---------------------------------------------------------------- temperature


@pytest.mark.parametrize("arch", ["bert", "modernbert", "gpt2"])
@pytest.mark.parametrize("tau", [0.5, 0.25, 2.0])
def test_tau_equals_stock_eager_with_scaled_queries(arch, tau):
    """softmax(QK^T / (tau sqrt d)) is the stock model with W_Q, b_Q multiplied by 1 / tau."""
    ours, stock = _pair(arch, tau=tau)
    _scale_queries(stock, arch, 1.0 / tau)
    ids, mask = _ids(seed=1), _mask([N, 8, 5])
    o, e = _run(ours, ids, mask), _run(stock, ids, mask)
    for x, y in zip(o.attentions, e.attentions):
        assert _max_diff(x, y) <= 1e-6
    assert _max_diff(o.logits, e.logits) <= 1e-5
    # and it is not the tau = 1 model
    set_tau(ours, 1.0)
    assert _max_diff(_run(ours, ids, mask).attentions[0], o.attentions[0]) > 1e-2


def _layer0_logits(model, arch, hidden0):
    """Q K^T / sqrt(d) of layer 0 computed by hand from the layer's weights, [batch, heads, n, n]."""
    b, n, _ = hidden0.shape
    if arch == "bert":
        s = model.bert.encoder.layer[0].attention.self
        q, k = s.query(hidden0), s.key(hidden0)
    else:
        blk = model.transformer.h[0]
        q, k, _ = blk.attn.c_attn(blk.ln_1(hidden0)).split(HIDDEN, dim=-1)
    q = q.view(b, n, HEADS, HEAD_DIM).transpose(1, 2).double()
    k = k.view(b, n, HEADS, HEAD_DIM).transpose(1, 2).double()
    return q @ k.transpose(-1, -2) / math.sqrt(HEAD_DIM)


@pytest.mark.parametrize("arch", ["bert", "gpt2"])
@pytest.mark.parametrize("tau", [0.5, 1.0, 3.0])
def test_probabilities_equal_softmax_of_hand_computed_logits(arch, tau):
    model = _sharpen(_build(arch, tau=tau, seed=2), arch)
    ids, mask = _ids(seed=2), _mask([N, 6, 3])
    out = _run(model, ids, mask)
    with torch.no_grad():
        logits = _layer0_logits(model, arch, out.hidden_states[0])
    expected = torch.softmax((logits / tau).masked_fill(~_valid_keys(arch, mask), float("-inf")), dim=-1)
    assert _max_diff(out.attentions[0], expected) <= 2e-6
    # tau halves: the logits double
    assert not torch.allclose(
        out.attentions[0].double(),
        torch.softmax((logits / (2 * tau)).masked_fill(~_valid_keys(arch, mask), float("-inf")), -1),
        atol=1e-3,
    )


# ---------------------------------------------------------------- the SDPA (training) path


class _Spy:
    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fn(*args, **kwargs)


@pytest.mark.parametrize("arch", ["bert", "modernbert", "gpt2"])
def test_training_path_goes_through_sdpa_and_equals_explicit_path(arch, monkeypatch):
    spy = _Spy(attention.sdpa_attention_forward)
    monkeypatch.setattr(attention, "sdpa_attention_forward", spy)
    ids, mask = _ids(seed=3), _mask([N, 7, 4])
    ours, stock_sdpa = _pair(arch, impl="sdpa")
    _, stock_eager = _pair(arch, impl="eager")
    stock_eager.load_state_dict(ours.state_dict())

    plain = _run(ours, ids, mask, probs=False)
    assert spy.calls == LAYERS
    assert plain.attentions is None
    explicit = _run(ours, ids, mask, probs=True)
    assert spy.calls == LAYERS  # the explicit path does not call SDPA
    assert _max_diff(plain.logits, explicit.logits) <= 1e-5
    assert _max_diff(plain.logits, _run(stock_sdpa, ids, mask, probs=False).logits) <= 1e-5
    assert _max_diff(plain.logits, _run(stock_eager, ids, mask, probs=True).logits) <= 1e-5

    for tau in (0.3, 5.0):
        set_tau(ours, tau)
        plain_t = _run(ours, ids, mask, probs=False)
        explicit_t = _run(ours, ids, mask, probs=True)
        assert _max_diff(plain_t.logits, explicit_t.logits) <= 1e-5
        assert _max_diff(plain_t.logits, plain.logits) > 1e-4  # tau acts on the SDPA path too (ignored: ~1e-7)
        # no padding: HF may pass no mask at all (SDPA's is_causal for GPT-2)
        assert _max_diff(_run(ours, ids, None, probs=False).logits, _run(ours, ids, None, probs=True).logits) <= 1e-5


@pytest.mark.parametrize("arch", ["bert", "modernbert", "gpt2"])
def test_training_path_backward_is_finite_at_both_ends(arch):
    model = build_model(arch, tau=1.0, seed=4, **KW)  # train mode, dropout on
    assert model.training
    ids, mask = _ids(seed=4), _mask([N, 7, 4])
    labels = ids.masked_fill(mask == 0, -100)
    for tau in (1e-3, 1.0, 1e3):
        set_tau(model, tau)
        model.zero_grad()
        out = model(input_ids=ids, attention_mask=mask, labels=labels)
        assert torch.isfinite(out.loss)
        out.loss.backward()
        for name, p in model.named_parameters():
            assert p.grad is None or torch.isfinite(p.grad).all(), (tau, name)
        fused = {
            "gpt2": lambda: model.transformer.h[0].attn.c_attn,
            "modernbert": lambda: model.model.layers[0].attn.Wqkv,
        }
        q_grad = _qk_weights(model, arch, 0)[0][0].grad if arch == "bert" else fused[arch]().weight.grad
        assert q_grad is not None and q_grad.abs().sum() > 0


def test_probabilities_in_train_mode_are_taken_before_dropout():
    model = build_model("bert", seed=5, **{**KW, "dropout": 0.5})
    model.train()
    out = model(input_ids=_ids(seed=5), attention_mask=_mask([N, 7, 4]), output_attentions=True)
    for a in out.attentions:
        assert torch.allclose(a.sum(-1), torch.ones_like(a.sum(-1)), atol=1e-6)


# ---------------------------------------------------------------- GPT-2's causal mask (both paths)


@pytest.mark.parametrize("tau", [1.0, 1e-3])
@pytest.mark.parametrize("probs", [False, True], ids=["sdpa-path", "explicit-path"])
def test_gpt2_causal_mask_future_tokens_do_not_change_the_past(tau, probs):
    # the registration is what builds the (padding + causal) mask for our attention name
    assert ALL_MASK_ATTENTION_FUNCTIONS[ATTN_IMPLEMENTATION] is sdpa_mask
    model = _sharpen(_build("gpt2", tau=tau, seed=6), "gpt2")
    ids = _ids(seed=6)
    changed = ids.clone()
    changed[:, 6:] = (changed[:, 6:] + 17) % (VOCAB - 1) + 1
    for mask in (None, _mask([N, N, N]), _mask([N, 9, 8])):
        a, b = _run(model, ids, mask, probs), _run(model, changed, mask, probs)
        assert _max_diff(a.logits[:, :6], b.logits[:, :6]) <= 1e-6
        assert _max_diff(a.logits[:, 6:], b.logits[:, 6:]) > 1e-3  # the change is visible where allowed
        assert torch.isfinite(a.logits).all()


@pytest.mark.parametrize("tau", [1.0, 0.5, 1e-3, 1e3])
def test_gpt2_probabilities_are_exactly_lower_triangular(tau):
    model = _sharpen(_build("gpt2", tau=tau, seed=7), "gpt2")
    out = _run(model, _ids(seed=7))
    for a in out.attentions:
        assert (a.triu(1) == 0).all()
        assert (a.diagonal(dim1=-2, dim2=-1)[..., 0] == 1).all()  # the first token sees only itself
        if tau >= 0.5:
            assert (a.diagonal(dim1=-2, dim2=-1) > 0).all()
        assert torch.allclose(a.sum(-1), torch.ones(a.shape[:-1]), atol=1e-6)


@pytest.mark.parametrize("probs", [False, True], ids=["sdpa-path", "explicit-path"])
def test_gpt2_left_padding_is_masked_on_both_paths(probs):
    """Real tokens never see left padding: a mask that only the registered mask function builds."""
    ours, stock = _pair("gpt2")
    ids, mask = _ids(seed=8), _mask([N, 7, 4], left=True)
    changed = ids.masked_fill(mask == 0, 5)  # change only the padded tokens
    o, c = _run(ours, ids, mask, probs), _run(ours, changed, mask, probs)
    real = mask.bool()
    assert _max_diff(o.logits[real], c.logits[real]) <= 1e-6
    e = _run(stock, ids, mask, probs=True)
    assert _max_diff(o.logits[real], e.logits[real]) <= 1e-5


@pytest.mark.parametrize("probs", [False, True], ids=["sdpa-path", "explicit-path"])
@pytest.mark.parametrize("tau", [1.0, 1e-3])
def test_bert_padding_is_masked_on_both_paths(probs, tau):
    model = _sharpen(_build("bert", tau=tau, seed=9), "bert")
    ids, mask = _ids(seed=9), _mask([N, 7, 4])
    changed = ids.masked_fill(mask == 0, 5)
    a, b = _run(model, ids, mask, probs), _run(model, changed, mask, probs)
    real = mask.bool()
    assert _max_diff(a.logits[real], b.logits[real]) <= 1e-6
    # without the attention mask the padded tokens would be seen
    a0, b0 = _run(model, ids, None, probs), _run(model, changed, None, probs)
    assert _max_diff(a0.logits[real], b0.logits[real]) > 1e-3


# ---------------------------------------------------------------- extreme temperatures


@pytest.mark.parametrize("arch", ["bert", "modernbert", "gpt2"])
def test_tiny_tau_masks_never_leak_and_rows_sum_to_one(arch):
    model = _sharpen(_build(arch, tau=1e-3, seed=10), arch)
    ids, mask = _ids(seed=10), _mask([N, 7, 4])
    out = _run(model, ids, mask)
    allowed = _valid_keys(arch, mask).expand(-1, HEADS, -1, -1)
    for a in out.attentions:
        assert not torch.isnan(a).any()
        assert (a[~allowed] == 0).all()  # padded (and future) keys: exactly zero
        assert torch.allclose(a.sum(-1), torch.ones(a.shape[:-1]), atol=1e-6)
        # near the hardmax limit: most rows are almost one-hot
        assert a.amax(-1).mean() > 0.9
    for h in out.hidden_states:
        assert torch.isfinite(h).all()
    plain = _run(model, ids, mask, probs=False)
    assert torch.isfinite(plain.logits).all()
    real = mask.bool()
    assert _max_diff(plain.logits[real], out.logits[real]) <= 1e-4


@pytest.mark.parametrize("arch", ["bert", "modernbert", "gpt2"])
def test_huge_tau_gives_uniform_attention_over_valid_keys(arch):
    ids, mask = _ids(seed=11), _mask([N, 7, 4])
    allowed = _valid_keys(arch, mask).expand(-1, HEADS, -1, -1).float()
    uniform = allowed / allowed.sum(-1, keepdim=True)
    model = _sharpen(_build(arch, tau=1e3, seed=11), arch)
    out = _run(model, ids, mask)
    set_tau(model, 1.0)
    ref = _run(model, ids, mask)
    for a, a1 in zip(out.attentions, ref.attentions):
        assert not torch.isnan(a).any()
        assert (a[allowed == 0] == 0).all()
        assert torch.allclose(a.sum(-1), torch.ones(a.shape[:-1]), atol=1e-6)
        dev, dev1 = _max_diff(a, uniform), _max_diff(a1, uniform)
        assert dev < 1e-3
        assert dev < dev1 / 100  # far closer to uniform than at tau = 1
    assert torch.isfinite(out.logits).all()
    set_tau(model, 1e3)
    assert torch.isfinite(_run(model, ids, mask, probs=False).logits).all()


def test_fully_masked_rows_are_zero_not_nan():
    # GPT-2 with left padding: a padded query sees only padded keys
    model = _build("gpt2", tau=1e-3, seed=12)
    mask = _mask([N, 3], left=True)
    out = _run(model, _ids(batch=2, seed=12), mask)
    for a in out.attentions:
        assert not torch.isnan(a).any()
        assert (a[1, :, : N - 3] == 0).all()
        assert torch.allclose(a[1, :, N - 3 :].sum(-1), torch.ones(HEADS, 3), atol=1e-6)
    assert torch.isfinite(out.logits).all()
    assert torch.isfinite(_run(model, _ids(batch=2, seed=12), mask, probs=False).logits).all()


# ---------------------------------------------------------------- head dimension


@pytest.mark.parametrize("arch", ["bert", "modernbert", "gpt2"])
@pytest.mark.parametrize("head_dim,heads", [(4, 8), (8, 4), (32, 1)])
def test_head_dim_sets_number_of_heads_in_the_attention(arch, head_dim, heads):
    kw = {k: v for k, v in KW.items() if k != "num_heads"}
    model = build_model(arch, head_dim=head_dim, **kw).eval()
    out = _run(model, _ids(batch=2))
    assert out.attentions[0].shape == (2, heads, N, N)


@pytest.mark.parametrize("arch", ["bert", "modernbert", "gpt2"])
def test_logit_hook_point_reproduces_the_probabilities(arch):
    """probe.attention_logits reads S = QK^T/(tau sqrt d) through capture_logits; softmax(S + mask) = A."""
    from attnrank.core.probe import attention_logits, attention_probabilities

    model = build_model(arch, hidden_size=32, num_layers=2, num_heads=4, tau=0.3, max_len=16, vocab_size=50, seed=3)
    ids = torch.randint(0, 50, (3, 16), generator=torch.Generator().manual_seed(0))
    S = attention_logits(model, ids, batch_size=2)
    A = attention_probabilities(model, ids)
    assert S.shape == A.shape == (2, 3, 4, 16, 16)
    masked = S.masked_fill(~torch.ones(16, 16, dtype=torch.bool).tril(), float("-inf")) if arch == "gpt2" else S
    torch.testing.assert_close(torch.softmax(masked, -1), A, atol=1e-6, rtol=0)
    # the first layer's logits (whose input does not depend on tau) scale as 1/tau
    model.config.tau = 0.6
    torch.testing.assert_close(attention_logits(model, ids)[0], S[0] / 2, atol=1e-5, rtol=1e-5)
