"""The run store and training end to end: caching, crash safety, locking, failures, determinism."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from attnrank.core.errors import ConfigError
from attnrank.core.profiles import resolve_config
from attnrank.core.train import train
from attnrank.runs import grid, store


def _child(code: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_end_to_end_run_lowers_loss_and_is_cached(private_store, monkeypatch):
    cfg = resolve_config("gpt2", "ci")
    r = store.run(cfg)
    assert r.fresh
    files = {p.name for p in r.path.iterdir()}
    assert {
        "config.json",
        "train_log.csv",
        "eval_log.csv",
        "ranks.parquet",
        "rank_summary.csv",
        "sequences.parquet",
        "summary.json",
        "model.safetensors",
        "COMPLETE",
    } <= files
    s = r.summary
    assert s["status"] == "complete" and s["steps"] == cfg.max_steps
    assert s["final_val_loss"] < s["initial_val_loss"] - 0.2
    ranks = r.ranks
    assert cfg.warmup_steps > 0  # no step-1 probe under a warm-up: its weights are step 0's
    assert sorted(set(ranks.step)) == [0, 2, 4, 8, 10, 20, 30, 40]  # log-spaced below rank_every
    assert len(ranks) == len(set(ranks.step)) * cfg.num_layers * cfg.num_heads * 6
    # a second call reads the store and never trains
    monkeypatch.setattr("attnrank.core.train.train", lambda *a, **k: pytest.fail("trained again"))
    again = store.run(cfg)
    assert not again.fresh and again.path == r.path and again.summary == r.summary
    df = store.load_runs()
    assert list(df.key) == [r.key] and df.final_val_loss.iloc[0] == pytest.approx(s["final_val_loss"])
    # the trained weights come back (safetensors) and give the stored final validation loss
    model = r.load_model()
    assert model.config.tau == cfg.tau and not model.training


def test_same_seed_gives_identical_tables():
    cfg = resolve_config("modernbert", "ci", max_steps=20)
    a, b = train(cfg, progress=False), train(cfg, progress=False)
    pd.testing.assert_frame_equal(a.train_log, b.train_log)
    pd.testing.assert_frame_equal(a.ranks, b.ranks)
    pd.testing.assert_frame_equal(a.eval_log, b.eval_log)
    other = train(resolve_config("modernbert", "ci", max_steps=20, seed=1), progress=False)
    assert not other.train_log.loss.equals(a.train_log.loss)


def test_probing_does_not_change_the_training_run():
    often = train(resolve_config("modernbert", "ci", max_steps=20, rank_every=5), progress=False)
    rarely = train(resolve_config("modernbert", "ci", max_steps=20, rank_every=20), progress=False)
    # the ci profile warms up, so step 1 (the weights of step 0) is not probed
    assert sorted(set(often.ranks.step)) == [0, 2, 4, 5, 10, 15, 20]
    assert sorted(set(rarely.ranks.step)) == [0, 2, 4, 8, 16, 20]
    pd.testing.assert_series_equal(often.train_log.loss, rarely.train_log.loss)


def test_diverging_run_is_stored_as_failed_and_sweep_goes_on(private_store):
    bad = resolve_config("gpt2", "ci", learning_rate=1e3, warmup_steps=0)
    good = resolve_config("gpt2", "ci", max_steps=10)
    df = grid.sweep([bad, good], executor="serial", progress=False)
    assert list(df.status) == ["failed", "complete"]
    assert df.failure_step.iloc[0] > 0 and "nan" in df.failure_reason.iloc[0].lower()
    assert not store.run(bad).fresh  # a failed run is a result too: not retrained


def test_damaged_results_are_retrained(private_store):
    cfg = resolve_config("gpt2", "ci", max_steps=10)
    r = store.run(cfg)
    expected = r.ranks
    (r.path / "ranks.parquet").write_bytes(b"garbage")
    assert store.load_runs().empty  # a damaged run is never read as a result
    again = store.run(cfg)
    assert again.fresh
    pd.testing.assert_frame_equal(again.ranks, expected)  # retrained deterministically
    (again.path / "summary.json").write_text((again.path / "summary.json").read_text()[:20])  # truncated
    assert store.run(cfg).fresh


def test_sigkill_during_training_leaves_the_store_clean(private_store):
    code = """
        from attnrank.runs import store
        store.run(arch="gpt2", profile="ci", max_steps=100000)
    """
    child = _child(code, {"ATTNRANK_RUNS": str(private_store)})
    deadline = time.time() + 120
    while time.time() < deadline and not list(private_store.glob(".*.lock")):
        time.sleep(0.2)
    time.sleep(3)  # well into training
    assert child.poll() is None, child.stderr.read()
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert not [p for p in private_store.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert store.load_runs().empty
    r = store.run(resolve_config("gpt2", "ci", max_steps=100000 // 10000))  # the lock is free again
    assert r.fresh and r.summary["status"] == "complete"


def test_two_processes_share_one_training(private_store):
    code = """
        from attnrank.runs import store
        r = store.run(arch="modernbert", profile="ci", max_steps=30)
        print("FRESH" if r.fresh else "STORED", r.key)
    """
    children = [_child(code, {"ATTNRANK_RUNS": str(private_store)}) for _ in range(2)]
    outs = [c.communicate(timeout=300) for c in children]
    assert all(c.returncode == 0 for c in children), [o[1][-2000:] for o in outs]
    words = sorted(o[0].split()[-2] for o in outs)
    keys = {o[0].split()[-1] for o in outs}
    assert words == ["FRESH", "STORED"] and len(keys) == 1
    (path,) = [p for p in private_store.iterdir() if p.is_dir() and not p.name.startswith(".")]
    manifest = json.loads((path / "COMPLETE").read_text())
    assert manifest["key"] in keys


def test_invalid_config_fails_before_training(private_store, monkeypatch):
    monkeypatch.setattr("attnrank.core.train.train", lambda *a, **k: pytest.fail("trained"))
    with pytest.raises(ConfigError) as e:
        store.run(arch="gpt2", profile="ci", tau=0.0)
    assert e.value.param == "tau"
    with pytest.raises(ConfigError) as e:
        store.run(arch="gpt2", profile="ci", num_heads=3)
    assert e.value.param == "num_heads" and "allowed values" in str(e.value)
    with pytest.raises(ConfigError) as e:
        store.run(arch="gpt2", profile="ci", learning_rte=1e-3)
    assert e.value.param == "learning_rte"
    assert not private_store.exists() or not any(private_store.iterdir())


def test_equal_weights_give_byte_identical_files(tmp_path):
    """docs/guarantees.md, "Determinism on CPU": a model's weight file (and so its checksum in the run's
    marker) is the same bytes every time it is written; tied embeddings are stored once and
    re-tied on loading."""
    import torch
    from safetensors.torch import load_file

    from attnrank.core.models import build_model
    from attnrank.runs.store import save_weights

    for arch in ("modernbert", "gpt2"):
        model = build_model(
            arch,
            hidden_size=32,
            num_layers=1,
            num_heads=2,
            tau=1.0,
            max_len=16,
            vocab_size=64,
            dropout=0.0,
            seed=0,
            pad_token_id=0,
        )
        files = [tmp_path / f"{arch}-{i}.safetensors" for i in range(6)]
        for f in files:
            save_weights(model, f)
        assert len({f.read_bytes() for f in files}) == 1
        state = load_file(str(files[0]))
        assert len(state) < len(model.state_dict())  # the tied output embedding is stored once
        fresh = build_model(
            arch,
            hidden_size=32,
            num_layers=1,
            num_heads=2,
            tau=1.0,
            max_len=16,
            vocab_size=64,
            dropout=0.0,
            seed=1,
            pad_token_id=0,
        )
        fresh.load_state_dict(state, strict=False)
        for name, t in model.state_dict().items():
            assert torch.equal(fresh.state_dict()[name], t), name


def test_nothing_is_loaded_with_pickle_or_remote_code():
    """No module of the library can unpickle or run a hub repository's code: no `torch.load`, no
    `pickle`, no pandas/NumPy pickles, no `trust_remote_code=True`.

    Guarantee (docs/guarantees.md): "Safe loading." (the stored weights are read with `safetensors`, tested above)."""
    import re

    import attnrank

    patterns = [
        r"torch\.load\(",
        r"^\s*(?:import|from)\s+(?:c?pickle|joblib|dill)\b",
        r"pickle\.loads?\(",
        r"read_pickle\(",
        r"to_pickle\(",
        r"allow_pickle\s*=\s*True",
        r"trust_remote_code\s*=\s*True",
    ]
    found = [
        f"{p.name}: {m.group(0).strip()}"
        for p in Path(attnrank.__file__).parent.rglob("*.py")
        for pattern in patterns
        for m in re.finditer(pattern, p.read_text(), flags=re.M)
    ]
    assert not found, found
