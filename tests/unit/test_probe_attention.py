"""The rank probe keeps the attention probabilities of its first sequences at chosen steps, apart from its timing."""

from __future__ import annotations

import pytest
import torch

from attnrank.core.errors import ConfigError
from attnrank.core.models import build_model
from attnrank.core.probe import RankProbe, attention_probabilities
from attnrank.core.profiles import resolve_config
from attnrank.core.train import attention_steps, probe_steps


def test_attention_steps_are_first_last_and_log_spaced_probe_steps():
    ci, quick = resolve_config("gpt2", "ci"), resolve_config("gpt2", "quick")
    assert attention_steps(ci.max_steps, ci.rank_every) == [0, 2, 8, 20, 40]
    assert attention_steps(ci.max_steps, ci.rank_every, warmup_steps=ci.warmup_steps) == [0, 2, 8, 20, 40]
    assert attention_steps(quick.max_steps, quick.rank_every, warmup_steps=quick.warmup_steps) == [0, 4, 32, 128, 1000]
    assert attention_steps(250, 50) == [0, 4, 16, 50, 250]
    assert attention_steps(5000, 250) == [0, 8, 64, 500, 5000]
    assert attention_steps(40, 10, count=2) == [0, 40]
    assert attention_steps(1, 1) == [0, 1]  # fewer when the schedule has fewer steps
    for args in ((40, 10), (250, 50), (5000, 250), (7, 3)):
        assert set(attention_steps(*args)) <= set(probe_steps(*args))
        # under a warm-up step 1 is not probed, so it is never kept
        assert set(attention_steps(*args, warmup_steps=5)) <= set(probe_steps(*args, warmup_steps=5))
    with pytest.raises(ConfigError, match="count"):
        attention_steps(40, 10, count=1)


def test_probe_keeps_the_first_sequences_at_the_chosen_steps_only(one_thread):
    model = build_model("gpt2", hidden_size=16, num_layers=2, num_heads=2, max_len=12, vocab_size=50, dropout=0.0)
    ids = torch.randint(0, 50, (5, 12), generator=torch.Generator().manual_seed(0))
    probe = RankProbe(ids, [], chunk_size=2, attention_steps=[0, 3], attention_sequences=3)
    probe.validation_loss = lambda m: 0.0
    assert probe.attention is None
    for step in (0, 1, 3):
        probe(model, step)
    att = probe.attention
    assert att["steps"].tolist() == [0, 3]
    assert att["probabilities"].shape == (2, 2, 3, 2, 12, 12)  # steps, layers, sequences (over two chunks), heads
    torch.testing.assert_close(att["probabilities"][1], attention_probabilities(model, ids[:3]), rtol=0, atol=0)
    assert probe.timing["attention"] > 0
    # without attention steps nothing is kept and nothing is timed
    bare = RankProbe(ids, [], attention_sequences=3)
    bare.validation_loss = lambda m: 0.0
    bare(model, 0)
    assert bare.attention is None and bare.timing["attention"] == 0.0


@pytest.mark.parametrize("arch", ["modernbert", "gpt2"])
def test_the_probe_reads_the_backbone_and_gets_the_whole_models_attention_and_logits(arch, one_thread):
    """The probes run ``model.base_model`` (no LM head); attention and logits are the whole model's, bit for bit."""
    from attnrank.core.attention import capture_logits
    from attnrank.core.probe import _backbone, attention_logits

    model = build_model(
        arch, hidden_size=16, num_layers=2, num_heads=2, max_len=12, vocab_size=50, dropout=0.0, tau=0.5
    )
    assert _backbone(model) is model.base_model and _backbone(model) is not model
    assert type(_backbone(model)).__name__ == {"modernbert": "ModernBertModel", "gpt2": "GPT2Model"}[arch]
    ids = torch.randint(0, 50, (3, 12), generator=torch.Generator().manual_seed(1))
    model.eval()
    with torch.no_grad():
        whole = torch.stack(model(input_ids=ids, output_attentions=True).attentions)
        with capture_logits() as logits:
            model(input_ids=ids)
    torch.testing.assert_close(attention_probabilities(model, ids), whole, rtol=0, atol=0)
    torch.testing.assert_close(attention_logits(model, ids), torch.stack(logits), rtol=0, atol=0)
