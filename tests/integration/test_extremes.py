"""Numerics at the ends of the temperature range: training stays finite, probabilities normalised."""

from __future__ import annotations

import math

import pytest
import torch

from attnrank.core.models import build_model
from attnrank.core.probe import attention_probabilities
from attnrank.core.profiles import resolve_config
from attnrank.core.train import train


@pytest.mark.parametrize("arch", ["modernbert", "gpt2"])
@pytest.mark.parametrize("tau", [1e-3, 1e3])
def test_training_at_extreme_tau_stays_finite(arch, tau):
    r = train(resolve_config(arch, "ci", tau=tau, max_steps=15, rank_every=5), progress=False, keep_model=True)
    assert r.summary["status"] == "complete", r.summary["failure"]
    assert r.train_log.loss.map(math.isfinite).all() and r.eval_log.val_loss.map(math.isfinite).all()
    assert r.ranks.value.notna().all()
    ids = torch.randint(5, 500, (3, 32))
    A = attention_probabilities(r.model, ids)
    assert torch.isfinite(A).all()
    torch.testing.assert_close(A.sum(-1), torch.ones_like(A.sum(-1)), atol=1e-5, rtol=0)
    if arch == "gpt2":
        assert (A.triu(1) == 0).all()  # no future token leaks, however small tau is


def test_probe_rejects_sequences_longer_than_the_positions():
    from attnrank.core.errors import ConfigError

    model = build_model("gpt2", hidden_size=32, num_layers=1, num_heads=2, max_len=16, vocab_size=50)
    with pytest.raises(ConfigError) as e:
        attention_probabilities(model, torch.zeros(1, 17, dtype=torch.long))
    assert e.value.param == "max_len"
