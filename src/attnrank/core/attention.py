"""Softmax attention with a temperature, registered with ``transformers.AttentionInterface``.

The attention of every layer becomes

.. math:: A = \\operatorname{softmax}\\!\\left(\\frac{Q K^\\top}{\\tau \\sqrt{d_\\text{head}}} + M\\right),

so ``tau = 1`` is the stock model and the study's temperature is ``T = tau * sqrt(head_dim)``.
The mask ``M`` (causal and padding) is applied *after* the logits are scaled, so it never
leaks however small ``tau`` is.

Nothing in the HF modeling files is edited or patched: the function below is registered
under the name :data:`ATTN_IMPLEMENTATION` together with a mask function (without one,
current ``transformers`` builds no mask for a custom attention name and GPT-2 silently
loses its causal mask). A model uses it when its config has
``_attn_implementation = "attnrank"`` and a float attribute ``tau``.

Two paths:

* training and plain forward passes call PyTorch SDPA through HF's own
  ``sdpa_attention_forward`` with ``scale = 1 / (tau * sqrt(head_dim))``;
* when attention probabilities are asked for (``output_attentions=True``), an explicit
  float32 softmax computes them and returns them as the layer's attention weights.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

__all__ = ["ATTN_IMPLEMENTATION", "tempered_attention", "probabilities_requested", "get_tau", "capture_logits"]

#: Name under which the tempered attention is registered with ``transformers``.
ATTN_IMPLEMENTATION = "attnrank"


_LOGIT_SINK: ContextVar[list | None] = ContextVar("attnrank_logit_sink", default=None)


@contextlib.contextmanager
def capture_logits():
    """Hook point: collect each layer's scaled logits ``S = Q K^T / (tau sqrt(head_dim))``.

    Inside the ``with`` block every call of :func:`tempered_attention` appends its logits,
    float32 ``[batch, heads, q_len, kv_len]`` *before* any mask, to the yielded list (one
    entry per layer and forward pass, in call order). Nothing in the model is changed.
    """
    sink: list = []
    token = _LOGIT_SINK.set(sink)
    try:
        yield sink
    finally:
        _LOGIT_SINK.reset(token)


def get_tau(module: torch.nn.Module) -> float:
    """Temperature ratio ``tau`` of an HF attention module (``module.config.tau``, default 1)."""
    return float(getattr(module.config, "tau", 1.0))


def probabilities_requested(kwargs: dict) -> bool:
    """Whether the caller asked the model for attention probabilities.

    HF passes ``output_attentions`` to some models' attention functions; for the others
    (GPT-2 in ``transformers`` 5) the request lives only in the output-capturing context
    that ``output_attentions=True`` opens, which is read here.
    """
    if kwargs.get("output_attentions"):
        return True
    try:  # the capture context is internal to transformers; absent in older releases
        from transformers.utils.output_capturing import _active_collector
    except ImportError:  # pragma: no cover - depends on the installed transformers
        return False
    collected = _active_collector.get()
    return bool(collected) and "attentions" in collected


def _explicit_probabilities(module, query, key, attention_mask, scale: float) -> torch.Tensor:
    """Attention probabilities ``[batch, heads, q_len, kv_len]`` in float32, or float64 for a float64 model.

    Fully masked rows (possible with left padding and a causal mask) come out as zeros,
    never NaN.
    """
    dtype = torch.promote_types(query.dtype, torch.float32)
    logits = torch.matmul(query.to(dtype), key.to(dtype).transpose(-1, -2)) * scale
    q_len, kv_len = logits.shape[-2:]
    if attention_mask is None and getattr(module, "is_causal", False) and q_len > 1:
        attention_mask = torch.ones(q_len, kv_len, dtype=torch.bool, device=logits.device).tril(kv_len - q_len)
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            logits = logits.masked_fill(~attention_mask, float("-inf"))
        else:  # an additive float mask (0 or the dtype's minimum); added after scaling
            logits = logits + attention_mask.to(dtype)
    probs = torch.softmax(logits, dim=-1)
    return torch.nan_to_num(probs, nan=0.0)


def tempered_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Attention with temperature ``tau = module.config.tau``.

    Args:
        module: the HF attention module (``BertSelfAttention`` or ``GPT2Attention``).
        query, key, value: ``[batch, heads, seq, head_dim]``.
        attention_mask: boolean ``[batch, 1, q_len, kv_len]`` (True = attend), or None
            for unmasked (or, with ``module.is_causal``, plain causal) attention.
        dropout: attention-dropout probability (0 in eval mode).
        scaling: the model's own logit scale, ``1 / sqrt(head_dim)``; divided by ``tau``.

    Returns:
        ``(output [batch, seq, heads, head_dim], probabilities or None)``; the
        probabilities ``[batch, heads, q_len, kv_len]`` (float32, or float64 for a
        float64 model; before dropout) are
        computed only when :func:`probabilities_requested`.
    """
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    scale = scaling / get_tau(module)
    sink = _LOGIT_SINK.get()
    if sink is not None:
        sink.append((torch.matmul(query.float(), key.float().transpose(-1, -2)) * scale).detach())
    if not probabilities_requested(kwargs):
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scale, **kwargs
        )
    probs = _explicit_probabilities(module, query, key, attention_mask, scale)
    weights = torch.nn.functional.dropout(probs, p=dropout, training=module.training)
    output = torch.matmul(weights.to(value.dtype), value).transpose(1, 2).contiguous()
    return output, probs


AttentionInterface.register(ATTN_IMPLEMENTATION, tempered_attention)
AttentionMaskInterface.register(ATTN_IMPLEMENTATION, sdpa_mask)
