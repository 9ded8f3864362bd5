"""Every input is checked before any work: run config fields (one table, also for direct
construction) and the command line (one line on stderr, exit status 2)."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from attnrank.cli import main
from attnrank.core.errors import ConfigError
from attnrank.core.profiles import RunConfig, profile_defaults, resolve_config


def _direct(**changes) -> RunConfig:
    """A RunConfig built directly (not through resolve_config) from the ci profile's values."""
    return RunConfig(**{**profile_defaults("ci"), "arch": "gpt2", "profile": "ci", **changes})


# --------------------------------------------------------------------- run config


def test_every_field_of_a_run_config_has_a_check():
    """docs/guarantees.md, "Bad input fails first": every RunConfig field has a type and range check in one table
    (FIELD_CHECKS); the ends of the ranges are accepted (seed 0 and 2**32 - 1, weight_decay 0, dropout
    0)."""
    from attnrank.core.profiles import FIELD_CHECKS

    assert set(FIELD_CHECKS) == {f.name for f in dataclasses.fields(RunConfig)}
    assert FIELD_CHECKS["seed"]("seed", 2**32 - 1) == 2**32 - 1 and FIELD_CHECKS["seed"]("seed", 0) == 0
    assert _direct(seed=2**32 - 1, weight_decay=0.0, dropout=0.0).weight_decay == 0.0


def test_a_run_config_needs_a_profiles_values():
    """docs/guarantees.md, "Bad input fails first": a RunConfig has no defaults of its own: built without a profile's
    values it fails; every profile sets every field."""
    with pytest.raises(TypeError, match="missing"):
        RunConfig(arch="gpt2", profile="ci")
    names = {f.name for f in dataclasses.fields(RunConfig)} - {"arch", "profile"}
    for profile in ("ci", "quick", "paper"):
        assert set(profile_defaults(profile)) == names
        assert _direct(**profile_defaults(profile, "gpt2"), profile=profile) == resolve_config("gpt2", profile)


BAD = [
    (dict(seed=2**32), "seed"),
    (dict(seed=-1), "seed"),
    (dict(seed=1.5), "seed"),
    (dict(weight_decay=float("nan")), "weight_decay"),
    (dict(weight_decay=-0.01), "weight_decay"),
    (dict(weight_decay=float("inf")), "weight_decay"),
    (dict(weight_decay="0.01"), "weight_decay"),
    (dict(dropout="0.1"), "dropout"),
    (dict(dropout=1.0), "dropout"),
    (dict(learning_rate="1e-3"), "learning_rate"),
    (dict(max_len=100_000), "max_len"),
    (dict(max_len=4), "max_len"),
    (dict(max_steps=2**31), "max_steps"),
    (dict(hidden_size=True), "hidden_size"),
    (dict(tau=0.0), "tau"),
    (dict(tau=np.float64("nan")), "tau"),
    (dict(num_heads=3), "num_heads"),
    (dict(dataset=3), "dataset"),
    (dict(mlm_probability=1.0), "mlm_probability"),
    (dict(vocab_size=2**40), "vocab_size"),
    (dict(warmup_steps=-1), "warmup_steps"),
    (dict(probe_size=0), "probe_size"),
]


@pytest.mark.parametrize("bad, param", BAD, ids=[f"{p}={v!r}" for b, p in BAD for v in b.values()])
def test_every_field_is_checked_whichever_way_a_config_is_built(bad, param):
    """docs/guarantees.md, "Bad input fails first": an invalid field (type, range, upper bounds: seed in [0, 2**32 - 1],
    max_len within memory, weight_decay finite and >= 0, dropout a number in [0, 1)) raises a
    ConfigError naming it, whether the config comes from resolve_config or is built directly."""
    for build in (lambda: resolve_config("gpt2", "ci", **bad), lambda: _direct(**bad)):
        with pytest.raises(ConfigError) as e:
            build()
        assert e.value.param == param and "got" in str(e.value)


@pytest.mark.parametrize("param, value", [("max_len", 100_000), ("num_layers", 100_000_000), ("batch_size", 10**7)])
def test_a_size_is_bounded_by_memory(monkeypatch, param, value):
    """docs/guarantees.md, "Bad input fails first": a size is bounded by the machine's memory through the run's
    peak estimate (memory_estimate); the message names the size that is too large (not another one), and the
    bound it names is accepted, one more is rejected."""
    from attnrank.core import profiles

    monkeypatch.setattr(profiles, "_memory_limit", lambda: 2 * 10**9)
    with pytest.raises(ConfigError) as e:
        resolve_config("gpt2", "ci", **{param: value})
    assert e.value.param == param and "memory" in str(e.value)
    bound = int(re.search(rf"{param} <= (\d+)", str(e.value)).group(1))
    sizes = dict(hidden_size=32, num_layers=2, num_heads=2, max_len=32, vocab_size=512, batch_size=8, probe_size=16)
    assert sum(profiles.memory_estimate(**{**sizes, param: bound}).values()) <= 2 * 10**9
    assert sum(profiles.memory_estimate(**{**sizes, param: bound + 1}).values()) > 2 * 10**9
    assert getattr(resolve_config("gpt2", "ci", **{param: bound}), param) == bound
    with pytest.raises(ConfigError):
        resolve_config("gpt2", "ci", **{param: bound + 1})
    with pytest.raises(ConfigError) as e:  # just over the bound: the size raised is named, not another one
        resolve_config("gpt2", "ci", **{param: bound + 1})
    assert e.value.param == param and f"{param} <= {bound}" in str(e.value)


@pytest.mark.parametrize("arch", ["gpt2", "modernbert"])
def test_a_width_bound_is_a_width_that_can_be_used(monkeypatch, arch):
    """The largest width that fits is lowered to one the heads divide (and, with rotary positions, to an even head
    dimension): the bound named is accepted as it is."""
    from attnrank.core import profiles

    monkeypatch.setattr(profiles, "_memory_limit", lambda: 2 * 10**9)
    with pytest.raises(ConfigError) as e:
        resolve_config(arch, "ci", hidden_size=10**6)
    bound = int(re.search(r"hidden_size <= (\d+)", str(e.value)).group(1))
    assert resolve_config(arch, "ci", hidden_size=bound).hidden_size == bound


def test_two_sizes_raised_are_both_named(monkeypatch):
    from attnrank.core import profiles

    monkeypatch.setattr(profiles, "_memory_limit", lambda: 2 * 10**9)
    with pytest.raises(ConfigError) as e:
        resolve_config("gpt2", "ci", batch_size=10**9, max_len=10**6)
    assert e.value.param == "batch_size"  # raised furthest above its default (8)
    assert "no value of batch_size alone" in str(e.value) and "max_len also above the ci profile's default" in str(
        e.value
    )


def test_numpy_numbers_become_plain_numbers_with_the_same_key():
    """docs/guarantees.md, "Bad input fails first": NumPy numbers are accepted and stored as plain int/float, so the run
    key is the same as for the plain value; integer-valued floats are accepted for integer fields."""
    from attnrank.runs.store import run_key

    cfg = resolve_config("gpt2", "ci", tau=np.float32(0.25), seed=np.int64(3), hidden_size=np.float64(64.0))
    plain = resolve_config("gpt2", "ci", tau=0.25, seed=3, hidden_size=64)
    assert cfg == plain and run_key(cfg) == run_key(plain)
    assert type(cfg.tau) is float and type(cfg.seed) is int and type(cfg.hidden_size) is int
    direct = _direct(tau=np.float64(0.3))
    assert type(direct.tau) is float and run_key(direct) == run_key(resolve_config("gpt2", "ci", tau=0.3))


def test_build_model_rejects_a_dropout_string():
    """docs/guarantees.md, "Bad input fails first": build_model checks dropout with the run config's check (a string is a
    ConfigError)."""
    from attnrank.core.models import build_model

    with pytest.raises(ConfigError) as e:
        build_model("gpt2", hidden_size=32, num_layers=1, num_heads=2, max_len=16, vocab_size=64, dropout="0.1")
    assert e.value.param == "dropout"


# --------------------------------------------------------------------- command line


@pytest.mark.parametrize(
    "argv, param",
    [
        (["train", "--arch", "gpt2", "--tau", "abc"], "tau"),
        (["train", "--arch", "gpt2", "--tau", "-inf"], "tau"),
        (["train", "--arch", "gpt2", "--tau", "-1e-3"], "tau"),
        (["train", "--arch", "gpt2", "--profile", "ci", "--seed", "4294967296"], "seed"),
        (["train", "--arch", "gpt2", "--seed", "1.5"], "seed"),
        (["train", "--arch", "gpt2", "--num-heads", "two"], "num_heads"),
        (["train", "--arch", "gpt2", "--head-dim", "-inf"], "head_dim"),
        (["train", "--arch", "gpt2", "--max-steps", "1e3"], "max_steps"),
        (["train", "--arch", "gpt2", "--tau"], "tau"),
        (["train", "--arch", "gpt2", "--bogus", "1"], "unrecognized arguments"),
        (["train"], "the following arguments are required"),
        (["fly"], "command"),
        ([], "the following arguments are required"),
    ],
)
def test_command_line_errors_are_one_line_with_exit_status_2(argv, param, capsys, monkeypatch):
    """docs/guarantees.md, "Bad input fails first": every command-line input error (wrong type, missing or unknown option
    or command, invalid value) prints one line on stderr, starting with the parameter's name, no usage
    block, and exits with status 2; `--tau -inf` parses and is rejected by the tau check."""
    monkeypatch.setattr("attnrank.core.train.train", lambda *a, **k: pytest.fail("trained"))
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err
    assert err.startswith(f"attnrank: error: {param}") and err.count("\n") == 1, err
    assert "usage" not in err and "Traceback" not in err and not captured.out
    if argv[-2:] == ["--tau", "-inf"]:
        assert err.strip() == "attnrank: error: tau: got -inf; allowed range is [0.001, 1000]"


def test_modernbert_with_an_odd_head_dim_is_refused_when_the_config_is_built(capsys):
    """ModernBERT's rotary positions rotate pairs of dimensions: an odd head dimension once failed at the first probe,
    after training had started, in a 90-line RuntimeError; now the config refuses it, on the command line too."""
    with pytest.raises(ConfigError) as e:
        resolve_config("modernbert", "ci", hidden_size=30)
    assert e.value.param == "head_dim" and "got 15" in str(e.value) and "even head_dim" in str(e.value)
    assert resolve_config("gpt2", "ci", hidden_size=30).head_dim == 15  # learned positions: any head dimension
    assert resolve_config("modernbert", "ci", hidden_size=28).head_dim == 14
    assert main(["train", "--arch", "modernbert", "--profile", "ci", "--hidden-size", "30"]) == 2
    assert "even head_dim" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("setting", "value", "text"),
    [
        ("ATTNRANK_DATA", "/tmp/" + "a" * 300, "has a folder name of 300 bytes; names are at most 255 bytes"),
        ("ATTNRANK_RUNS", "/tmp/" + "a/" * 2100, "is a path of 4204 bytes; expected at most 3840"),
    ],
)
def test_a_folder_setting_too_long_to_use_is_refused_in_one_line(monkeypatch, capsys, setting, value, text):
    """An ATTNRANK_DATA with a component over 255 bytes once gave 25-63 lines of `File name too long`."""
    monkeypatch.setenv(setting, value)
    assert main(["train", "--arch", "gpt2", "--profile", "ci"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"attnrank: error: {setting}: {text}"
