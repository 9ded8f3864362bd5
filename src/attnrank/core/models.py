"""ModernBERT and BERT (masked LMs) and GPT-2 (causal LM) built from config, with a softmax temperature.

The models are the stock ``transformers`` classes, initialised from scratch (no hub
download); the temperature enters only through the registered attention function of
:mod:`attnrank.core.attention`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

import torch
import transformers
from torch.nn.utils import parametrize
from transformers import PreTrainedModel

from . import attention
from .architectures import architecture, of_model
from .errors import ConfigError, check_positive_int
from .profiles import FIELD_CHECKS, RunConfig, check_tau, resolve_heads

__all__ = [
    "build_model",
    "model_from_config",
    "tokenizer_pad_id",
    "set_tau",
    "scale_qk",
    "qk_parameter_names",
    "split_qk",
]


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
    qk_init_scale: float = 1.0,
) -> PreTrainedModel:
    """Build the HF LM of ``arch`` (its record's :attr:`~attnrank.core.architectures.Architecture.hf_model`:
    ``ModernBertForMaskedLM``, ``BertForMaskedLM`` or ``GPT2LMHeadModel``) from config with temperature ``tau``.

    Args:
        arch: a key of :data:`attnrank.core.architectures.ARCHITECTURES` (``"modernbert"``, ``"bert"``,
            ``"gpt2"``).
        hidden_size: model width; ``head_dim = hidden_size / num_heads``.
        num_layers: number of transformer blocks.
        num_heads, head_dim: give one (see :func:`resolve_heads`).
        tau: temperature ratio; logits are divided by ``tau * sqrt(head_dim)``.
        max_len: number of position embeddings (longest sequence, in tokens).
        vocab_size: tokenizer vocabulary size.
        dropout: dropout on embeddings, residuals and attention probabilities.
        seed: seed of the weight initialisation (the global RNG is left untouched).
        intermediate_size: MLP width, default the record's ``mlp_ratio * hidden_size`` (``4 * hidden_size``;
            ModernBERT's gated MLP: ``2 * hidden_size``).
        pad_token_id: id of the padding token.
        attn_implementation: ``"attnrank"`` (tempered), or a stock HF name such as
            ``"eager"`` or ``"sdpa"`` for comparisons (then ``tau`` must be 1).
        qk_init_scale: factor on the initial query and key weights and biases
            (:func:`scale_qk`); at ``tau = 1``, ``1 / sqrt(t)`` gives the initial logits of ``tau = t``.

    Returns:
        The HF model in train mode, weights in float32 on the CPU.

    Raises:
        ConfigError: for an unknown ``arch``, a ``tau`` outside [1e-3, 1e3], heads that
        do not divide ``hidden_size``, or a ``qk_init_scale`` outside [1e-3, 1e3].
    """
    tau = check_tau(tau)
    num_heads, head_dim = resolve_heads(hidden_size, num_heads, head_dim)
    num_layers = check_positive_int("num_layers", num_layers)
    max_len = check_positive_int("max_len", max_len, low=2)
    vocab_size = check_positive_int("vocab_size", vocab_size, low=2)
    dropout = FIELD_CHECKS["dropout"]("dropout", dropout)
    qk_init_scale = FIELD_CHECKS["qk_init_scale"]("qk_init_scale", qk_init_scale)
    if attn_implementation != attention.ATTN_IMPLEMENTATION and tau != 1.0:
        raise ConfigError("tau", f"tau={tau} needs attn_implementation={attention.ATTN_IMPLEMENTATION!r}")
    record = architecture(arch)
    cls = getattr(transformers, record.hf_model)
    config = cls.config_class(
        **record.config_kwargs(
            hidden_size=hidden_size,
            num_layers=num_layers,
            num_heads=num_heads,
            intermediate_size=intermediate_size or record.mlp_ratio * hidden_size,
            max_len=max_len,
            vocab_size=vocab_size,
            dropout=dropout,
            pad_token_id=pad_token_id,
        )
    )
    config.tau = tau
    config._attn_implementation = attn_implementation
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = cls(config)
    if getattr(model, "loss_type", None) is None:
        # GPT2LMHeadModel's class name names no loss, so transformers falls back to its causal-LM
        # loss with a notice on every first evaluation outside the Trainer; name that loss here
        model.loss_type = "ForCausalLM"
    if qk_init_scale != 1.0:
        scale_qk(model, qk_init_scale)
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
    raise ConfigError(
        "cfg", f"got a {type(cfg).__name__}; expected a RunConfig (resolve_config(...)) or a stored config.json mapping"
    )


def model_from_config(
    cfg,
    *,
    vocab_size: int,
    pad_token_id: int,
    tau: float | None = None,
    seed: int | None = None,
    attn_implementation: str | None = None,
):
    """The model of a run, freshly initialised from its seed: exactly the weights its training started from.

    Args:
        cfg: a :class:`~attnrank.core.profiles.RunConfig`, or a run's stored ``config.json``
            (a mapping with ``arch``, ``hidden_size``, ``num_layers``, ``num_heads``, ``tau``,
            ``max_len``, ``dropout``, ``seed`` and ``qk_init_scale``).
        vocab_size, pad_token_id: of the run's tokenizer (``len(tokenizer)`` and
            :func:`tokenizer_pad_id`; a stored run's summary records both).
        tau, seed: override the config's temperature ratio and initialisation seed.
        attn_implementation: ``None`` for the tempered attention of :mod:`attnrank.core.attention`,
            or a stock HF name (``"eager"``, ``"sdpa"``; then ``tau`` must be 1).

    Returns:
        ``ModernBertForMaskedLM``, ``BertForMaskedLM`` or ``GPT2LMHeadModel`` in train mode, float32 on the CPU.

    Raises:
        ConfigError: for a ``cfg`` that is neither, or the checks of
        :func:`attnrank.core.models.build_model`.
    """
    c = _fields(cfg)
    return build_model(
        c["arch"],
        hidden_size=c["hidden_size"],
        num_layers=c["num_layers"],
        num_heads=c["num_heads"],
        tau=c["tau"] if tau is None else tau,
        max_len=c["max_len"],
        vocab_size=vocab_size,
        dropout=c["dropout"],
        seed=c["seed"] if seed is None else seed,
        pad_token_id=pad_token_id,
        attn_implementation=attn_implementation or attention.ATTN_IMPLEMENTATION,
        qk_init_scale=c.get("qk_init_scale", 1.0),  # runs stored before the field have 1
    )


def _qk_modules(model: PreTrainedModel):
    """``(kind, module)`` for every projection that holds queries or keys: ``("separate", m)`` for a query or key
    layer of its own, ``("fused", m)`` for a fused ``[query, key, value]`` projection (the record's
    :attr:`~attnrank.core.architectures.Architecture.qk_modules` and ``qkv_fused``)."""
    record = of_model(model)
    fused = record.qkv_fused[0] if record.qkv_fused else None
    for name, m in model.named_modules():
        if record.qk_modules and name.endswith(record.qk_modules):
            yield "separate", m
        elif fused and name.endswith(fused):
            yield "fused", m


def _tensors(m) -> list[str]:
    return [t for t in ("weight", "bias") if getattr(m, t, None) is not None]


def scale_qk(model: PreTrainedModel, scale: float) -> PreTrainedModel:
    """Multiply the query and key weights and biases of every layer by ``scale`` (in place).

    BERT: the ``query`` and ``key`` Linear layers; GPT-2: the first ``2 * hidden_size`` output
    columns of ``c_attn`` (``[hidden, 3 * hidden]`` Conv1D weight and ``[3 * hidden]`` bias: query,
    key, value in that order); ModernBERT: the first ``2 * hidden_size`` rows of ``Wqkv``
    (``[3 * hidden, hidden]`` Linear weight, no bias by default); where each lies is the model's
    :mod:`~attnrank.core.architectures` record. The logits ``Q K^T`` are then ``scale**2`` times larger, which
    at ``tau = 1`` with ``scale = 1 / sqrt(t)`` is the model at temperature ``t`` (P3).

    Raises:
        ConfigError: naming ``scale`` outside [1e-3, 1e3].
    """
    scale = FIELD_CHECKS["qk_init_scale"]("scale", scale)
    split = 2 * model.config.hidden_size
    dim = (of_model(model).qkv_fused or (None, 0))[1]
    with torch.no_grad():
        for kind, m in _qk_modules(model):
            for t in _tensors(m):
                p = getattr(m, t)
                (p if kind == "separate" else p.narrow(dim, 0, split)).mul_(scale)
    return model


def qk_parameter_names(model: PreTrainedModel) -> list[str]:
    """Names of the parameters that hold exactly the query and key weights and biases.

    BERT: ``...attention.self.query.weight`` (and ``.bias``, ``key``). GPT-2 and ModernBERT only inside
    :func:`split_qk`, which gives the query/key part of ``c_attn`` (``Wqkv``) a parameter of its own
    (``...c_attn.parametrizations.weight.original0``); outside it the list is empty for them (their
    query, key and value share one tensor).
    """
    ids = set()
    for kind, m in _qk_modules(model):
        if kind == "separate":
            ids.update(id(getattr(m, t)) for t in _tensors(m))
        elif parametrize.is_parametrized(m):
            ids.update(id(m.parametrizations[t].original0) for t in m.parametrizations)
    return [n for n, p in model.named_parameters() if id(p) in ids]


class _Concat(torch.nn.Module):
    """Parametrization of a fused ``[query, key, value]`` weight or bias as ``[query/key part, value part]``
    along dimension ``dim`` (GPT-2's ``c_attn``: the last; ModernBERT's ``Wqkv``: the first)."""

    def __init__(self, split: int, dim: int):
        super().__init__()
        self.split, self.dim = split, dim

    def forward(self, qk: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.cat([qk, v], dim=self.dim)

    def right_inverse(self, w: torch.Tensor):
        # contiguous copies: views of one storage would share it between the two parameters
        qk, v = w.split([self.split, w.shape[self.dim] - self.split], dim=self.dim)
        return qk.contiguous().clone(), v.contiguous().clone()


@contextlib.contextmanager
def split_qk(model: PreTrainedModel):
    """Give the query/key projection parameters of GPT-2 or ModernBERT their own for the duration (for an
    optimizer group).

    Each ``c_attn`` weight ``[hidden, 3 hidden]`` and bias ``[3 hidden]`` (ModernBERT: each ``Wqkv`` weight
    ``[3 hidden, hidden]``, and its bias if it has one) is parametrized (``torch.nn.utils.parametrize``) as
    the concatenation of a query/key parameter (the first ``2 hidden`` columns; rows for ModernBERT) and
    a value parameter; the model computes the same function. On exit the parametrizations are removed
    and the projection holds plain parameters with the trained values, under their usual names. BERT is
    left as it is (its query and key are separate layers).
    """
    record = of_model(model)
    if record.qkv_fused is None:
        yield model
        return
    dim = record.qkv_fused[1]
    split = 2 * model.config.hidden_size
    tensors = [(m, t) for kind, m in _qk_modules(model) for t in _tensors(m)]
    for m, tensor in tensors:
        parametrize.register_parametrization(m, tensor, _Concat(split, dim), unsafe=True)
    try:
        yield model
    finally:
        for m, tensor in tensors:
            parametrize.remove_parametrizations(m, tensor, leave_parametrized=True)
