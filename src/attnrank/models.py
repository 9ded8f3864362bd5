"""BERT (masked LM) and GPT-2 (causal LM) built from config, with a softmax temperature.

The models are the stock ``transformers`` classes, initialised from scratch (no hub
download); the temperature enters only through the registered attention function of
:mod:`attnrank.attention`.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from transformers import BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel, PreTrainedModel

from . import attention
from .errors import ConfigError, check_choice, check_positive_int
from .profiles import ARCHS, FIELD_CHECKS, TAU_RANGE, RunConfig, check_tau, resolve_heads  # the checks live with the run config

__all__ = ["ARCHS", "TAU_RANGE", "build_model", "model_from_config", "tokenizer_pad_id", "resolve_heads", "set_tau"]

def set_tau(model: PreTrainedModel, tau: float) -> PreTrainedModel:
    """Set the temperature ratio of a model built by :func:`build_model` (in place)."""
    model.config.tau = check_tau(tau)
    return model


def build_model(
    arch: str,
    *,
    hidden_size: int,
    num_layers: int,
    num_heads: int | None = None,
    head_dim: int | None = None,
    tau: float = 1.0,
    max_len: int,
    vocab_size: int,
    dropout: float = 0.1,
    seed: int = 0,
    intermediate_size: int | None = None,
    pad_token_id: int = 0,
    attn_implementation: str = attention.ATTN_IMPLEMENTATION,
) -> PreTrainedModel:
    """Build ``BertForMaskedLM`` or ``GPT2LMHeadModel`` from config with temperature ``tau``.

    Args:
        arch: ``"bert"`` or ``"gpt2"``.
        hidden_size: model width; ``head_dim = hidden_size / num_heads``.
        num_layers: number of transformer blocks.
        num_heads, head_dim: give one (see :func:`resolve_heads`).
        tau: temperature ratio; logits are divided by ``tau * sqrt(head_dim)``.
        max_len: number of position embeddings (longest sequence, in tokens).
        vocab_size: tokenizer vocabulary size.
        dropout: dropout on embeddings, residuals and attention probabilities.
        seed: seed of the weight initialisation (the global RNG is left untouched).
        intermediate_size: MLP width, default ``4 * hidden_size``.
        pad_token_id: id of the padding token.
        attn_implementation: ``"attnrank"`` (tempered), or a stock HF name such as
            ``"eager"`` or ``"sdpa"`` for comparisons (then ``tau`` must be 1).

    Returns:
        The HF model in train mode, weights in float32 on the CPU.

    Raises:
        ConfigError: for an unknown ``arch``, a ``tau`` outside [1e-3, 1e3], or heads that
        do not divide ``hidden_size``.
    """
    check_choice("arch", arch, ARCHS)
    tau = check_tau(tau)
    num_heads, head_dim = resolve_heads(hidden_size, num_heads, head_dim)
    num_layers = check_positive_int("num_layers", num_layers)
    max_len = check_positive_int("max_len", max_len, low=2)
    vocab_size = check_positive_int("vocab_size", vocab_size, low=2)
    dropout = FIELD_CHECKS["dropout"]("dropout", dropout)
    if attn_implementation != attention.ATTN_IMPLEMENTATION and tau != 1.0:
        raise ConfigError("tau", f"tau={tau} needs attn_implementation={attention.ATTN_IMPLEMENTATION!r}")
    intermediate_size = intermediate_size or 4 * hidden_size
    if arch == "bert":
        config = BertConfig(
            vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=num_layers,
            num_attention_heads=num_heads, intermediate_size=intermediate_size,
            max_position_embeddings=max_len, hidden_dropout_prob=dropout,
            attention_probs_dropout_prob=dropout, pad_token_id=pad_token_id,
        )
        cls = BertForMaskedLM
    else:
        config = GPT2Config(
            vocab_size=vocab_size, n_embd=hidden_size, n_layer=num_layers, n_head=num_heads,
            n_inner=intermediate_size, n_positions=max_len, resid_pdrop=dropout, embd_pdrop=dropout,
            attn_pdrop=dropout, bos_token_id=pad_token_id, eos_token_id=pad_token_id, pad_token_id=pad_token_id,
        )
        cls = GPT2LMHeadModel
    config.tau = tau
    config._attn_implementation = attn_implementation
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = cls(config)
    model.train()
    return model


def tokenizer_pad_id(tokenizer) -> int:
    """The pad id a model of ``tokenizer`` is built with.

    GPT-2's tokenizer has no padding token (its batches are never padded); its model
    config names ``<|endoftext|>`` as bos/eos, and as the pad id that no loss or collator uses.
    """
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


def _fields(cfg) -> dict:
    if isinstance(cfg, RunConfig):
        return {**cfg.to_dict(), "head_dim": cfg.head_dim}
    if isinstance(cfg, Mapping):
        return dict(cfg)
    raise ConfigError("cfg", f"got a {type(cfg).__name__}; expected a RunConfig (resolve_config(...)) or a stored "
                      "config.json mapping")


def model_from_config(cfg, *, vocab_size: int | None = None, pad_token_id: int | None = None, tau: float | None = None,
                      seed: int | None = None, attn_implementation: str | None = None):
    """The model of a run, freshly initialised from its seed: exactly the weights its training started from.

    Args:
        cfg: a :class:`~attnrank.profiles.RunConfig`, or a run's stored ``config.json``
            (a mapping with ``arch``, ``hidden_size``, ``num_layers``, ``num_heads``, ``tau``,
            ``max_len``, ``dropout``, ``seed``).
        vocab_size, pad_token_id: of the run's tokenizer; by default read from the tokenizer
            of ``cfg`` (built and cached by :func:`attnrank.data.get_tokenizer`, which needs
            ``dataset`` and ``vocab_size`` in ``cfg``).
        tau, seed: override the config's temperature ratio and initialisation seed.
        attn_implementation: ``None`` for the tempered attention of :mod:`attnrank.attention`,
            or a stock HF name (``"eager"``, ``"sdpa"``; then ``tau`` must be 1).

    Returns:
        ``BertForMaskedLM`` or ``GPT2LMHeadModel`` in train mode, float32 on the CPU.

    Raises:
        ConfigError: for a ``cfg`` that is neither, or the checks of
        :func:`attnrank.models.build_model`.
    """
    c = _fields(cfg)
    if vocab_size is None or pad_token_id is None:
        from .data import get_tokenizer

        tokenizer = get_tokenizer(c["arch"], c["dataset"], c["vocab_size"])
        vocab_size = len(tokenizer) if vocab_size is None else vocab_size
        pad_token_id = tokenizer_pad_id(tokenizer) if pad_token_id is None else pad_token_id
    return build_model(
        c["arch"], hidden_size=c["hidden_size"], num_layers=c["num_layers"], num_heads=c["num_heads"],
        tau=c["tau"] if tau is None else tau, max_len=c["max_len"], vocab_size=vocab_size, dropout=c["dropout"],
        seed=c["seed"] if seed is None else seed, pad_token_id=pad_token_id,
        attn_implementation=attn_implementation or attention.ATTN_IMPLEMENTATION,
    )
