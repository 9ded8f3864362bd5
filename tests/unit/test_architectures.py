"""The architecture records (``attnrank.core.architectures``): each record says what its built model is, and
every layer asks the record, never the name."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import torch

from attnrank.core import data
from attnrank.core.architectures import ARCHITECTURES, TOKENIZERS, architecture, of_model
from attnrank.core.errors import ConfigError
from attnrank.core.models import build_model, qk_parameter_names, scale_qk, split_qk
from attnrank.core.profiles import ALL_ARCHS, ARCHS, CLM_ARCH, MLM_ARCH, STUDY_ARCH

SRC = Path(__file__).resolve().parents[2] / "src" / "attnrank"
SIZES = dict(hidden_size=32, num_layers=2, num_heads=4, max_len=16, vocab_size=50)
#: The first block's parameters, whatever the architecture calls its blocks.
_BLOCK0 = re.compile(r"\.(?:layer|layers|h)\.0\.")


@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_a_record_describes_the_model_it_builds(arch):
    record = ARCHITECTURES[arch]
    model = build_model(arch, **SIZES)
    assert of_model(model) is record and model.config.model_type == arch
    assert type(model).__name__ == record.hf_model
    assert record.causal == (not record.hf_model.endswith("ForMaskedLM"))
    assert record.tokenizer in TOKENIZERS
    d = SIZES["hidden_size"]
    matmul = sum(p.numel() for n, p in model.named_parameters() if _BLOCK0.search(n) and p.dim() == 2)
    assert matmul == record.layer_weights(d)  # the FLOPs count's weights are the model's
    positions = [n for n, p in model.named_parameters() if p.dim() == 2 and p.shape[0] == SIZES["max_len"]]
    assert (not positions) == record.rotary  # a rotary model has no table of position embeddings


@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_the_record_finds_the_query_and_key_weights(arch):
    """scale_qk multiplies exactly the query and key weights (the first 2 d of a fused projection), and
    split_qk gives them names of their own: 2 per layer and tensor (weight, bias if any)."""
    record = ARCHITECTURES[arch]
    model = build_model(arch, **SIZES, dropout=0.0)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_()  # zero-initialised biases would not show a scaling
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    scale_qk(model, 2.0)
    changed = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    assert changed
    if record.qkv_fused:
        suffix, dim = record.qkv_fused
        for n in changed:
            assert suffix in n
            p, q = dict(model.named_parameters())[n], before[n]
            torch.testing.assert_close(p.narrow(dim, 0, 2 * SIZES["hidden_size"]), 2 * q.narrow(dim, 0, 64))
            torch.testing.assert_close(p.narrow(dim, 64, 32), q.narrow(dim, 64, 32))  # values untouched
        assert qk_parameter_names(model) == []
        with split_qk(model):
            names = qk_parameter_names(model)
        assert len(names) == len(changed) and all("original0" in n for n in names)
    else:
        assert sorted(qk_parameter_names(model)) == sorted(changed)
        assert len(changed) == 2 * SIZES["num_layers"] * 2  # query and key, weight and bias


def test_the_books_models_and_the_study_bert():
    assert set(ARCHS) | {STUDY_ARCH} == set(ALL_ARCHS) == set(ARCHITECTURES)
    assert not architecture(MLM_ARCH).causal and architecture(CLM_ARCH).causal and not architecture(STUDY_ARCH).causal
    assert set(data._SPECIALS) == set(TOKENIZERS)
    with pytest.raises(ConfigError) as e:
        architecture("llama")
    assert e.value.param == "arch" and "gpt2" in str(e.value)


def test_no_layer_tests_a_models_name():
    """Every ``x == "gpt2"`` (or another architecture's name, or ``in`` a tuple of names) outside the records is a
    question the record answers; the one left is inside a frozen rule (its text may not change)."""
    names = set(ARCHITECTURES)
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                consts = [c for c in ast.walk(node) if isinstance(c, ast.Constant) and c.value in names]
                if consts:
                    found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert found == ["sections/measure.py:148"], found  # in attnrank.sections.measure.verdict, frozen 2026-12-06
