"""Attention probabilities through a clean hook point, and the rank probe.

:func:`attention_probabilities` asks the HF model for ``output_attentions=True`` (the
tempered attention then takes its explicit softmax path) in eval mode and under
``torch.no_grad``, and stacks the result as ``[layers, batch, heads, n, n]``.

:class:`RankProbe` measures a fixed set of held-out sequences with every rank measure,
per layer and per head, without changing the training run: it forks the RNG, switches
to eval mode (attention dropout changes the probabilities) and restores train mode.
"""

from __future__ import annotations

import contextlib
import time

import numpy as np
import pandas as pd
import torch

from .attention import capture_logits
from .errors import ConfigError
from .rank import DEFAULT_MEASURES, check_measures, rank_measures

__all__ = ["attention_probabilities", "attention_logits", "RankProbe", "evaluation_mode"]


@contextlib.contextmanager
def evaluation_mode(model: torch.nn.Module):
    """Eval mode, ``no_grad`` and a forked RNG for the duration; restores the previous mode."""
    was_training = model.training
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices), torch.no_grad():
        model.eval()
        try:
            yield model
        finally:
            model.train(was_training)


def attention_probabilities(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    *,
    batch_size: int = 64,
) -> torch.Tensor:
    """Attention probabilities of every layer: ``[layers, batch, heads, n, n]`` on the CPU.

    float32, or float64 when the model is float64 (``model.double()``): the study's
    absolute 1e-8 threshold is below float32 resolution.

    Runs in eval mode under ``no_grad`` (the model's mode is restored). ``input_ids`` and
    ``attention_mask`` are ``[batch, n]``; padded positions stay in the output (crop them
    with :func:`attnrank.rank.rank_measures`'s ``attention_mask``).
    """
    positions = getattr(model.config, "max_position_embeddings", None) or getattr(model.config, "n_positions", None)
    if positions is not None and input_ids.shape[-1] > positions:
        raise ConfigError(
            "max_len", f"input_ids have {input_ids.shape[-1]} tokens but the model has {positions} positions; "
            f"use sequences of at most {positions} tokens"
        )
    device = next(model.parameters()).device
    chunks = []
    with evaluation_mode(model):
        for i in range(0, len(input_ids), batch_size):
            ids = input_ids[i : i + batch_size].to(device)
            mask = None if attention_mask is None else attention_mask[i : i + batch_size].to(device)
            out = model(input_ids=ids, attention_mask=mask, output_attentions=True)
            chunks.append(torch.stack([a.to(torch.promote_types(a.dtype, torch.float32)).cpu() for a in out.attentions]))
    return torch.cat(chunks, dim=1)


def attention_logits(model: torch.nn.Module, input_ids: torch.Tensor, *, batch_size: int = 64) -> torch.Tensor:
    """Scaled logits ``S = Q K^T / (tau sqrt(head_dim))`` of every layer, before any mask.

    Returns float32 ``[layers, batch, heads, n, n]`` on the CPU, read through the hook point
    :func:`attnrank.attention.capture_logits` in eval mode under ``no_grad``. For GPT-2
    the entries above the diagonal are computed but masked in the model.
    """
    device = next(model.parameters()).device
    chunks = []
    with evaluation_mode(model):
        for i in range(0, len(input_ids), batch_size):
            with capture_logits() as logits:
                model(input_ids=input_ids[i : i + batch_size].to(device))
            chunks.append(torch.stack([s.cpu() for s in logits]))
    return torch.cat(chunks, dim=1)


class RankProbe:
    """Measures attention ranks and validation loss on fixed held-out data.

    Args:
        probe_ids: ``[probe_size, n]`` token ids of the probe sequences.
        val_batches: list of dicts (``input_ids``, ``labels``, optional ``attention_mask``)
            for the validation loss; for MLM the masking is drawn once, so every probe
            sees the same masked tokens.
        measures: rank measures to record (names in :data:`attnrank.rank.MEASURES`).

    After each call the tables :attr:`ranks` (``step, layer, head, measure, value, sd``:
    mean and standard deviation over probe sequences) and :attr:`summary`
    (``step, measure, mean, sd, sem``: over all heads, layers and sequences; ``sem`` is
    the standard error over sequences) grow by one step; :attr:`timing` records seconds
    spent in the forward pass, the SVDs and the bookkeeping.
    """

    def __init__(self, probe_ids: torch.Tensor, val_batches: list[dict], measures=DEFAULT_MEASURES):
        self.probe_ids = probe_ids
        self.val_batches = val_batches
        self.measures = check_measures(measures)
        self._rank_rows: list[pd.DataFrame] = []
        self._summary_rows: list[dict] = []
        self.eval_rows: list[dict] = []
        self.timing = {"forward": 0.0, "svd": 0.0, "bookkeeping": 0.0, "validation": 0.0}

    def validation_loss(self, model: torch.nn.Module) -> float:
        """Token-weighted mean cross-entropy (nats) on the fixed validation batches."""
        device = next(model.parameters()).device
        total, count = 0.0, 0
        with evaluation_mode(model):
            for batch in self.val_batches:
                batch = {k: v.to(device) for k, v in batch.items()}
                loss = model(**batch).loss.float().item()
                labels = batch["labels"]
                n = int((labels[..., 1:] != -100).sum()) if not _is_mlm(model) else int((labels != -100).sum())
                total += loss * n
                count += n
        return total / max(count, 1)

    def __call__(self, model: torch.nn.Module, step: int) -> dict:
        """Probe ``model`` at training ``step``; returns ``{"val_loss": ..., measure: mean, ...}``."""
        t0 = time.perf_counter()
        probs = attention_probabilities(model, self.probe_ids)  # [L, B, H, n, n]
        t1 = time.perf_counter()
        values = rank_measures(probs, measures=self.measures)
        t2 = time.perf_counter()
        L, B, H = probs.shape[:3]
        frames = []
        result: dict = {}
        for name, v in values.items():
            v = v.numpy()  # [L, B, H]
            frames.append(pd.DataFrame({
                "step": step, "layer": np.repeat(np.arange(L), H), "head": np.tile(np.arange(H), L),
                "measure": name, "value": v.mean(axis=1).reshape(-1), "sd": v.std(axis=1, ddof=1).reshape(-1) if B > 1 else 0.0,
            }))
            per_seq = v.mean(axis=(0, 2))
            mean = float(v.mean())
            self._summary_rows.append({
                "step": step, "measure": name, "mean": mean, "sd": float(v.std(ddof=1)),
                "sem": float(per_seq.std(ddof=1) / np.sqrt(B)) if B > 1 else float("nan"),
            })
            result[name] = mean
        self._rank_rows.append(pd.concat(frames, ignore_index=True))
        t3 = time.perf_counter()
        result["val_loss"] = self.validation_loss(model)
        t4 = time.perf_counter()
        self.eval_rows.append({"step": step, "val_loss": result["val_loss"]})
        for k, dt in zip(("forward", "svd", "bookkeeping", "validation"), (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            self.timing[k] += dt
        return result

    @property
    def ranks(self) -> pd.DataFrame:
        return pd.concat(self._rank_rows, ignore_index=True) if self._rank_rows else pd.DataFrame()

    @property
    def summary(self) -> pd.DataFrame:
        return pd.DataFrame(self._summary_rows)

    @property
    def eval_log(self) -> pd.DataFrame:
        return pd.DataFrame(self.eval_rows)


def _is_mlm(model) -> bool:
    return model.config.model_type == "bert"
