"""build_model / resolve_heads / set_tau validation, and the compute profiles."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import BertForMaskedLM, GPT2LMHeadModel

from attnrank.core.errors import ConfigError, check_choice, check_positive_float, check_positive_int
from attnrank.core.models import build_model, set_tau
from attnrank.core.profiles import (
    ARCH_DEFAULTS,
    ARCHS,
    PROFILES,
    TAU_RANGE,
    RunConfig,
    check_tau,
    profile_defaults,
    resolve_config,
    resolve_heads,
    resolve_profile,
)
from attnrank.runs import grid

KW = dict(hidden_size=32, num_layers=2, max_len=16, vocab_size=64)


def _config_error(fn, *args, **kwargs) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        fn(*args, **kwargs)
    assert isinstance(err.value, ValueError)
    return err.value


# ---------------------------------------------------------------- build_model


@pytest.mark.parametrize("arch,cls", [("bert", BertForMaskedLM), ("gpt2", GPT2LMHeadModel)])
def test_build_model_config(arch, cls):
    m = build_model(arch, num_heads=4, tau=0.3, dropout=0.2, intermediate_size=48, **KW)
    assert isinstance(m, cls)
    assert m.training  # documented: returned in train mode
    c = m.config
    assert c.tau == 0.3
    assert c._attn_implementation == "attnrank"
    assert c.vocab_size == 64
    assert next(m.parameters()).dtype == torch.float32
    if arch == "bert":
        assert (c.hidden_size, c.num_hidden_layers, c.num_attention_heads) == (32, 2, 4)
        assert (c.intermediate_size, c.max_position_embeddings) == (48, 16)
        assert c.attention_probs_dropout_prob == c.hidden_dropout_prob == 0.2
    else:
        assert (c.n_embd, c.n_layer, c.n_head, c.n_inner, c.n_positions) == (32, 2, 4, 48, 16)
        assert c.attn_pdrop == c.resid_pdrop == c.embd_pdrop == 0.2


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("head_dim", [1, 4, 8, 16, 32])
def test_head_dim_gives_num_heads(arch, head_dim):
    m = build_model(arch, head_dim=head_dim, **KW)
    heads = m.config.n_head if arch == "gpt2" else m.config.num_attention_heads
    assert heads == 32 // head_dim


def test_resolve_heads():
    assert resolve_heads(32, num_heads=4) == (4, 8)
    assert resolve_heads(32, head_dim=4) == (8, 4)
    assert resolve_heads(32, num_heads=2, head_dim=16) == (2, 16)
    assert resolve_heads(48, num_heads=3) == (3, 16)
    assert resolve_heads(32, num_heads=4.0) == (4, 8)  # integral floats accepted


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("num_heads", [3, 5, 7, 64])
def test_num_heads_not_dividing_hidden_size_raises(arch, num_heads):
    err = _config_error(build_model, arch, num_heads=num_heads, **KW)
    assert err.param == "num_heads"
    msg = str(err)
    assert msg.startswith("num_heads:")
    assert "allowed values" in msg and "[1, 2, 4, 8, 16, 32]" in msg


@pytest.mark.parametrize(
    "kwargs,param",
    [
        (dict(head_dim=5), "head_dim"),
        (dict(head_dim=64), "head_dim"),
        (dict(num_heads=4, head_dim=4), "head_dim"),  # disagree: 4 * 4 != 32
        (dict(), "num_heads"),  # neither given
        (dict(num_heads=0), "num_heads"),
        (dict(num_heads=2.5), "num_heads"),
        (dict(head_dim=0), "head_dim"),
    ],
)
def test_bad_heads_raise(kwargs, param):
    assert _config_error(build_model, "gpt2", **kwargs, **KW).param == param
    assert _config_error(resolve_heads, 32, **kwargs).param == param


def test_bad_head_dim_lists_divisors():
    assert "allowed values: [1, 2, 4, 8, 16, 32]" in str(_config_error(resolve_heads, 32, head_dim=5))


@pytest.mark.parametrize(
    "tau", [0, 0.0, -1.0, float("nan"), float("inf"), -float("inf"), 1e-4, 1e4, 9.99e-4, 1000.1, "1.0", None, True]
)
@pytest.mark.parametrize("arch", ARCHS)
def test_bad_tau_raises(arch, tau):
    err = _config_error(build_model, arch, num_heads=4, tau=tau, **KW)
    assert err.param == "tau"
    assert str(err).startswith("tau:")


@pytest.mark.parametrize("tau", [TAU_RANGE[0], 0.01, 1, 1.0, 37.5, TAU_RANGE[1]])
def test_tau_range_is_inclusive(tau):
    assert TAU_RANGE == (1e-3, 1e3)
    assert check_tau(tau) == float(tau)
    m = build_model("bert", num_heads=4, tau=tau, **KW)
    assert m.config.tau == float(tau) and isinstance(m.config.tau, float)


def test_set_tau_validates_and_sets():
    m = build_model("gpt2", num_heads=4, **KW)
    assert m.config.tau == 1.0
    assert set_tau(m, 0.05) is m
    assert m.config.tau == 0.05
    for bad in (0, 1e4, float("nan")):
        assert _config_error(set_tau, m, bad).param == "tau"
    assert m.config.tau == 0.05  # unchanged by the failed calls


@pytest.mark.parametrize("arch", ["BERT", "gpt", "roberta", "", None])
def test_unknown_arch_raises(arch):
    err = _config_error(build_model, arch, num_heads=4, **KW)
    assert err.param == "arch"
    assert "'bert'" in str(err) and "'gpt2'" in str(err)


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
def test_stock_attention_needs_tau_one(impl):
    m = build_model("bert", num_heads=4, attn_implementation=impl, **KW)
    assert m.config._attn_implementation == impl
    assert _config_error(build_model, "bert", num_heads=4, tau=0.5, attn_implementation=impl, **KW).param == "tau"


@pytest.mark.parametrize(
    "kwargs,param",
    [
        (dict(dropout=1.0), "dropout"),
        (dict(dropout=-0.1), "dropout"),
        (dict(num_layers=0), "num_layers"),
        (dict(max_len=1), "max_len"),
        (dict(vocab_size=1), "vocab_size"),
        (dict(hidden_size=0), "hidden_size"),
    ],
)
def test_other_bad_parameters_raise(kwargs, param):
    assert _config_error(build_model, "gpt2", num_heads=1, **{**KW, **kwargs}).param == param


@pytest.mark.parametrize("arch", ARCHS)
def test_seed_determines_weights_and_leaves_global_rng_alone(arch):
    torch.manual_seed(123)
    state = torch.get_rng_state()
    a = build_model(arch, num_heads=4, seed=1, **KW).state_dict()
    assert torch.equal(torch.get_rng_state(), state)
    b = build_model(arch, num_heads=4, seed=1, **KW).state_dict()
    c = build_model(arch, num_heads=4, seed=2, **KW).state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)
    # tau does not change the initialisation
    d = build_model(arch, num_heads=4, seed=1, tau=0.01, **KW).state_dict()
    assert all(torch.equal(a[k], d[k]) for k in a)


# ---------------------------------------------------------------- errors helpers


def test_error_helpers():
    e = ConfigError("x", "bad")
    assert e.param == "x" and str(e) == "x: bad"
    assert _config_error(check_choice, "p", "z", ("a", "b")).param == "p"
    assert check_positive_float("f", 2) == 2.0
    assert _config_error(check_positive_float, "f", 5.0, low=1, high=4).param == "f"
    assert check_positive_int("i", 3.0) == 3
    assert _config_error(check_positive_int, "i", 3.5).param == "i"
    assert _config_error(check_positive_int, "i", True).param == "i"
    assert _config_error(check_positive_int, "i", 0).param == "i"
    assert check_positive_int("i", 0, low=0) == 0


# ---------------------------------------------------------------- profiles


def test_resolve_profile_auto_honours_environment(monkeypatch):
    for name in PROFILES:
        monkeypatch.setenv("ATTNRANK_PROFILE", name)
        assert resolve_profile("auto") == name
        assert resolve_profile() == name
    monkeypatch.setenv("ATTNRANK_PROFILE", "ci")
    assert resolve_profile("quick") == "quick"  # an explicit profile wins over the environment
    monkeypatch.delenv("ATTNRANK_PROFILE")
    assert resolve_profile("auto") == ("paper" if torch.cuda.is_available() else "quick")
    monkeypatch.setenv("ATTNRANK_PROFILE", "")
    assert resolve_profile("auto") == ("paper" if torch.cuda.is_available() else "quick")
    monkeypatch.setenv("ATTNRANK_PROFILE", "auto")  # the variable takes what --profile takes
    assert resolve_profile("auto") == ("paper" if torch.cuda.is_available() else "quick")


def test_bad_environment_profile_raises(monkeypatch):
    monkeypatch.setenv("ATTNRANK_PROFILE", "huge")
    err = _config_error(resolve_profile, "auto")
    assert err.param == "ATTNRANK_PROFILE"
    assert "'ci'" in str(err)


@pytest.mark.parametrize("bad", ["CI", "fast", "", None, "auto "])
def test_unknown_profile_raises(bad):
    err = _config_error(resolve_profile, bad)
    assert err.param == "profile"
    assert "'quick'" in str(err) and "'paper'" in str(err)


def test_profile_defaults_are_copies(monkeypatch):
    monkeypatch.setenv("ATTNRANK_PROFILE", "ci")
    d = profile_defaults()
    assert d["hidden_size"] == 32 and d["num_heads"] == 2
    d["hidden_size"] = 999
    assert profile_defaults("ci")["hidden_size"] == 32
    for name in PROFILES:
        p = profile_defaults(name)
        assert p["hidden_size"] % p["num_heads"] == 0
    assert profile_defaults("paper")["hidden_size"] > profile_defaults("quick")["hidden_size"] > 32


def test_run_config_properties():
    ci = profile_defaults("ci")
    rc = RunConfig(**{**ci, "arch": "bert", "profile": "ci", "hidden_size": 64, "num_heads": 8})
    assert rc.head_dim == 8 and rc.objective == "MLM"
    assert RunConfig(**ci, arch="gpt2", profile="ci").objective == "CLM"
    assert rc.to_dict()["num_heads"] == 8 and rc.to_dict()["arch"] == "bert"
    with pytest.raises(AttributeError):
        rc.tau = 2.0  # frozen


def _resolve_config():
    pytest.importorskip("attnrank.core.data")
    from attnrank.core.profiles import resolve_config

    return resolve_config


def test_resolve_config_ci_gpt2():
    resolve_config = _resolve_config()
    rc = resolve_config("gpt2", "ci", tau=0.3)
    assert isinstance(rc, RunConfig)
    assert (rc.arch, rc.profile, rc.tau) == ("gpt2", "ci", 0.3)
    assert (rc.hidden_size, rc.num_heads, rc.head_dim) == (32, 2, 16)
    assert rc.objective == "CLM"
    assert rc.max_len == 32 and rc.max_steps == 40 and rc.dataset == "shakespeare"
    assert rc == resolve_config("gpt2", "ci", tau=0.3)
    assert hash(rc) == hash(resolve_config("gpt2", "ci", tau=0.3))
    assert rc != resolve_config("gpt2", "ci", tau=0.31)


def test_resolve_config_head_dim_and_overrides(monkeypatch):
    resolve_config = _resolve_config()
    rc = resolve_config("bert", "ci", head_dim=8)
    assert (rc.num_heads, rc.head_dim, rc.objective, rc.tau) == (4, 8, "MLM", 1.0)
    rc = resolve_config("bert", "ci", hidden_size=48, num_heads=3, seed=5, max_steps=None)
    assert (rc.hidden_size, rc.num_heads, rc.head_dim, rc.seed) == (48, 3, 16, 5)
    assert rc.max_steps == 40  # None keeps the profile default
    monkeypatch.setenv("ATTNRANK_PROFILE", "ci")
    assert resolve_config("gpt2").profile == "ci"


@pytest.mark.parametrize(
    "kwargs,param",
    [
        (dict(tau=0), "tau"),
        (dict(tau=1e4), "tau"),
        (dict(tau=float("nan")), "tau"),
        (dict(num_heads=3), "num_heads"),
        (dict(head_dim=5), "head_dim"),
        (dict(bogus=1), "bogus"),
        (dict(dropout=1.0), "dropout"),
        (dict(max_len=4), "max_len"),
        (dict(learning_rate=-1e-3), "learning_rate"),
        (dict(mlm_probability=0.0), "mlm_probability"),
        (dict(dataset="wikipedia"), "dataset"),
    ],
)
def test_resolve_config_bad_values_raise(kwargs, param):
    resolve_config = _resolve_config()
    assert _config_error(resolve_config, "gpt2", "ci", **kwargs).param == param


def test_resolve_config_bad_arch_and_profile():
    resolve_config = _resolve_config()
    assert _config_error(resolve_config, "t5", "ci").param == "arch"
    assert _config_error(resolve_config, "gpt2", "medium").param == "profile"


def test_resolve_config_builds_a_model():
    resolve_config = _resolve_config()
    rc = resolve_config("gpt2", "ci", tau=0.3, head_dim=8)
    m = build_model(
        rc.arch,
        hidden_size=rc.hidden_size,
        num_layers=rc.num_layers,
        num_heads=rc.num_heads,
        tau=rc.tau,
        max_len=rc.max_len,
        vocab_size=rc.vocab_size,
        dropout=rc.dropout,
        seed=rc.seed,
    )
    assert m.config.n_head == 4 and math.isclose(m.config.tau, 0.3)


@pytest.mark.parametrize("arch, loss_type", [("bert", "ForMaskedLM"), ("gpt2", "ForCausalLM")])
def test_evaluating_outside_the_trainer_prints_no_loss_notice(arch, loss_type, capfd):
    """A trained model evaluated with labels (the causal chapter's intervention) names its loss:
    transformers printed "`loss_type=None` was set in the config but it is unrecognized" for GPT-2."""
    from transformers.loss.loss_utils import LOSS_MAPPING
    from transformers.utils import logging as hf_logging

    hf_logging.get_logger("transformers.modeling_utils").warning_once.cache_clear()
    model = build_model(arch, num_heads=2, **KW).eval()
    assert model.loss_type == loss_type
    ids = torch.randint(0, 64, (2, 16), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        out = model(input_ids=ids, labels=ids)
    assert "loss_type" not in capfd.readouterr().err
    if arch == "gpt2":  # the loss transformers used before, named
        expected = LOSS_MAPPING["ForCausalLM"](out.logits, ids, vocab_size=64)
        assert torch.equal(out.loss, expected)


def test_arch_defaults_give_bert_half_the_quick_steps():
    assert resolve_config("bert", "quick").max_steps == 500
    assert resolve_config("gpt2", "quick").max_steps == 1000
    # scale is three times quick for each architecture; ci and paper train both the same
    for arch in ("bert", "gpt2"):
        assert resolve_config(arch, "scale").max_steps == 3 * resolve_config(arch, "quick").max_steps
        assert profile_defaults("quick", arch)["max_steps"] == resolve_config(arch, "quick").max_steps
    assert ARCH_DEFAULTS["ci"] == {} and ARCH_DEFAULTS["paper"] == {}
    assert resolve_config("bert", "ci").max_steps == resolve_config("gpt2", "ci").max_steps
    # an architecture's own default is not listed as a setting of its run; an override is
    assert "max_steps" not in grid._settings(resolve_config("bert", "quick"))
    assert "max_steps=1000" in grid._settings(resolve_config("bert", "quick", max_steps=1000))
    with pytest.raises(ConfigError, match="arch"):
        profile_defaults("quick", "t5")
