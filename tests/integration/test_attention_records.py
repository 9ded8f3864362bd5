"""The attention probabilities a run keeps for the explorer page: which, where, and that they are the probed ones."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import torch

from attnrank.core.data import get_tokenizer
from attnrank.core.errors import ConfigError
from attnrank.core.probe import attention_probabilities
from attnrank.core.profiles import resolve_config
from attnrank.core.rank import MEASURES, rank_measures
from attnrank.core.train import ATTENTION_SEQUENCES, attention_steps
from attnrank.runs import store


@pytest.mark.parametrize("arch", ["modernbert", "gpt2"])
def test_a_run_keeps_the_probed_attention_of_its_first_probe_sequences(private_store, arch):
    """The kept matrices are the ones the probe measured: their rank measures, averaged over
    layers and heads, are the per-sequence records of the same steps; the final ones are the
    trained model's attention on the first probe sequences; the file is checksummed."""
    cfg = resolve_config(arch, "ci")
    run = store.run(cfg)
    att = run.attention()
    steps = attention_steps(cfg.max_steps, cfg.rank_every, warmup_steps=cfg.warmup_steps)
    assert att.steps.tolist() == steps == [0, 2, 8, 20, 40]
    S = ATTENTION_SEQUENCES
    assert att.probabilities.shape == (len(steps), cfg.num_layers, S, cfg.num_heads, cfg.max_len, cfg.max_len)
    assert att.probabilities.dtype == torch.float32
    torch.testing.assert_close(att.probabilities.sum(-1), torch.ones(att.probabilities.shape[:-1]))
    if arch == "gpt2":  # causal: nothing above the diagonal
        assert att.probabilities.triu(1).abs().max() == 0
    assert torch.equal(att.input_ids, run.probe_batch()[:S])
    assert len(att.tokens) == S and all(len(row) == cfg.max_len for row in att.tokens)
    tok = get_tokenizer(arch, cfg.dataset, cfg.vocab_size)
    assert att.tokens[1][:5] == [tok.decode([i]) for i in att.input_ids[1, :5].tolist()]

    seq = run.table("sequences").query("split == 'val'")
    for t, step in enumerate(steps):
        values = rank_measures(att.probabilities[t])  # [L, S, H] each
        for m in MEASURES:
            per_sequence = values[m].mean(dim=(0, 2)).numpy()  # over layers and heads
            stored = seq[(seq.step == step) & (seq.sequence < S)].sort_values("sequence")[m].to_numpy()
            np.testing.assert_allclose(per_sequence, stored, rtol=1e-6, err_msg=f"{m} at step {step}")
    final = attention_probabilities(run.load_model(), att.input_ids)
    torch.testing.assert_close(att.at(cfg.max_steps), final, rtol=1e-5, atol=1e-6)
    with pytest.raises(ConfigError, match="step") as e:
        att.at(3)
    assert "[0, 2, 8, 20, 40]" in str(e.value)

    manifest = json.loads((run.path / "COMPLETE").read_text())
    digest = hashlib.sha256((run.path / store.ATTENTION_FILE).read_bytes()).hexdigest()
    assert manifest["files"][store.ATTENTION_FILE] == digest
    s = run.summary
    assert s["attention_seconds"] >= 0 and "attention" in s["probe_timing"]
    assert s["probe_seconds"] == pytest.approx(sum(s["probe_timing"][k] for k in ("forward", "svd", "bookkeeping")))


def test_equal_runs_write_the_same_attention_bytes(private_store):
    cfg = resolve_config("gpt2", "ci", max_steps=4, rank_every=2)
    first = store.run(cfg)
    digest = hashlib.sha256((first.path / store.ATTENTION_FILE).read_bytes()).hexdigest()
    again = store.run(cfg, force=True)
    assert again.fresh
    assert hashlib.sha256((again.path / store.ATTENTION_FILE).read_bytes()).hexdigest() == digest


def _reseal(path, name):
    manifest = json.loads((path / "COMPLETE").read_text())
    manifest["files"][name] = hashlib.sha256((path / name).read_bytes()).hexdigest()
    (path / "COMPLETE").write_text(json.dumps(manifest))


def test_an_attention_file_of_the_wrong_shape_makes_the_run_damaged(private_store):
    """Even with a valid checksum, probabilities of another shape (or no token strings) are a
    damaged run: it is ignored and trained again."""
    cfg = resolve_config("modernbert", "ci", max_steps=2, rank_every=1)
    r = store.run(cfg)
    att = r.attention()
    good = {"steps": att.steps, "probabilities": att.probabilities, "input_ids": att.input_ids, "tokens": att.tokens}
    bad = [
        {**good, "probabilities": att.probabilities[:, :, :, :1]},  # one head fewer than the config's
        {**good, "probabilities": att.probabilities.double()},
        {**good, "tokens": att.tokens[:1]},
    ]
    for variant in bad:
        store.save_attention(variant, r.path / store.ATTENTION_FILE)
        _reseal(r.path, store.ATTENTION_FILE)
        assert store.load_runs().empty
    (r.path / store.ATTENTION_FILE).write_bytes(b"not a safetensors file")
    _reseal(r.path, store.ATTENTION_FILE)
    assert store.load_runs().empty
    assert store.run(cfg).fresh


def test_a_run_without_kept_attention_says_so(private_store, monkeypatch):
    """A run whose marker lost the attention file its summary names is damaged and trained again; a run
    that names none anywhere (its summary and its marker) is served, and ``attention()`` says so."""
    cfg = resolve_config("gpt2", "ci", max_steps=2, rank_every=1)
    r = store.run(cfg)

    def drop_attention(path, from_summary):
        (path / store.ATTENTION_FILE).unlink()
        manifest = json.loads((path / "COMPLETE").read_text())
        del manifest["files"][store.ATTENTION_FILE]
        if from_summary:
            summary = json.loads((path / "summary.json").read_text())
            summary["files"] = [f for f in summary["files"] if f != store.ATTENTION_FILE]
            (path / "summary.json").write_text(json.dumps(summary))
            manifest["files"]["summary.json"] = store.file_sha256(path / "summary.json")
        (path / "COMPLETE").write_text(json.dumps(manifest))

    drop_attention(r.path, from_summary=False)
    damaged = store.run(cfg)
    assert damaged.fresh and (damaged.path / store.ATTENTION_FILE).is_file()
    drop_attention(damaged.path, from_summary=True)
    again = store.run(cfg)
    assert not again.fresh
    with pytest.raises(ConfigError, match="attention") as e:
        again.attention()
    assert e.value.param == "attention"
