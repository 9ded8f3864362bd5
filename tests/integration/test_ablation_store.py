"""The attention ablation gain of stored runs: the evaluation reproduces each run's stored validation loss, and
the cached gain is computed again whenever an input of its value changes."""

import hashlib
import json

import pytest
import torch

from attnrank.analysis import ablation
from attnrank.core.errors import ConfigError
from attnrank.core.profiles import resolve_config
from attnrank.runs import cache, store
from attnrank.sections import learned


@pytest.fixture
def tables(tmp_path, monkeypatch):
    """A private table cache (the tokenizers and token caches stay where they are)."""
    monkeypatch.setattr(cache, "tables_dir", lambda: tmp_path / "tables")
    return tmp_path / "tables"


@pytest.fixture
def computed(monkeypatch):
    """Counts the evaluations of stored runs (what the cache saves)."""
    calls = []
    real = ablation.run_losses

    def counting(run):
        calls.append(run.key)
        return real(run)

    monkeypatch.setattr(ablation, "run_losses", counting)
    return calls


@pytest.mark.parametrize("arch", ["gpt2", "modernbert"])
def test_evaluation_as_trained_reproduces_the_stored_validation_loss(arch, private_store, tables, one_thread):
    run = store.run(resolve_config(arch, "ci", max_steps=10))
    losses = ablation.run_losses(run)
    assert losses["val_loss"] == run.summary["final_val_loss"]  # exactly: the run's own evaluation
    assert losses["stored_val_loss"] == run.summary["final_val_loss"]
    assert losses["attention_gain"] == losses["content_free_loss"] - losses["val_loss"]
    assert losses["n_targets"] > 0
    runs = store.load_runs()
    g = ablation.gains(runs)
    assert g.attention_gain.iloc[0] == losses["attention_gain"]
    assert learned.gaps(runs).attention_gain.iloc[0] == losses["attention_gain"]


def _rewrite_weights(run: store.Run, scale: float) -> None:
    """Scale the run's query and key weights in place, and its marker's checksum with them."""
    model = run.load_model()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("attn.c_attn.weight"):
                p[:, : 2 * model.config.hidden_size] *= scale
    store.save_weights(model, run.path / "model.safetensors")
    marker = run.path / "COMPLETE"
    manifest = json.loads(marker.read_text())
    digest = hashlib.sha256((run.path / "model.safetensors").read_bytes()).hexdigest()
    manifest["files"]["model.safetensors"] = digest
    marker.write_text(json.dumps(manifest))


def test_the_cached_gain_is_computed_again_when_an_input_changes(
    private_store, tables, computed, monkeypatch, one_thread
):
    run = store.run(resolve_config("gpt2", "ci", max_steps=10))
    first = ablation.attention_gain(run)
    assert ablation.attention_gain(run) == first and len(computed) == 1  # read from the cache
    row = store.load_runs().iloc[0]
    assert ablation.attention_gain(row.to_dict()) == first and len(computed) == 1  # a run-table row: the same

    torch.set_num_threads(2)  # the evaluating environment
    ablation.attention_gain(run)
    assert len(computed) == 2
    torch.set_num_threads(1)

    with monkeypatch.context() as m:  # the dataset's content
        m.setattr(ablation, "dataset_fingerprint", lambda dataset: "other content")
        ablation.attention_gain(run)
    assert len(computed) == 3

    with monkeypatch.context() as m:  # the code
        m.setattr(cache.provenance, "code_hash", lambda roots=None: "other code")
        ablation.attention_gain(run)
    assert len(computed) == 4
    ablation.attention_gain(run)
    assert len(computed) == 4  # back to the first key

    _rewrite_weights(run, 3.0)  # other weights under the same run key
    changed = ablation.attention_gain(store.read(run.path))
    assert len(computed) == 5
    assert changed["attention_gain"] != first["attention_gain"]
    assert ablation.attention_gain(store.read(run.path)) == changed and len(computed) == 5

    other = store.run(resolve_config("gpt2", "ci", max_steps=10, seed=1))  # another run
    ablation.attention_gain(other)
    assert len(computed) == 6


def test_a_failed_run_has_no_gain(private_store, tables):
    bad = store.run(resolve_config("gpt2", "ci", learning_rate=1e3, warmup_steps=0))
    assert bad.summary["status"] == "failed"
    with pytest.raises(ConfigError) as e:
        ablation.attention_gain(bad)
    assert e.value.param == "run"
    g = ablation.gains(store.load_runs())
    assert g.attention_gain.isna().all()
