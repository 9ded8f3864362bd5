"""Attention probabilities through a clean hook point, and the rank probe.

:func:`attention_probabilities` asks the HF model for ``output_attentions=True`` (the
tempered attention then takes its explicit softmax path) in eval mode and under
``torch.no_grad``, and stacks the result as ``[layers, batch, heads, n, n]``.

:class:`RankProbe` measures a fixed set of held-out sequences (and optionally a few training
sequences, recorded per sequence) with every rank measure, per layer and per head, without
changing the training run: it forks the RNG, switches
to eval mode (attention dropout changes the probabilities) and restores train mode.
"""

from __future__ import annotations

import contextlib
import time

import numpy as np
import pandas as pd
import torch

from .architectures import of_model
from .attention import capture_logits
from .errors import ConfigError
from .rank import DEFAULT_MEASURES, check_measures, rank_measures

__all__ = ["attention_probabilities", "attention_logits", "RankProbe", "evaluation_mode", "full_precision"]


@contextlib.contextmanager
def full_precision(model: torch.nn.Module):
    """Run ``model`` in its own dtype (float32 or float64) for the duration, as on the CPU.

    Turns autocast off (CPU and CUDA) and TF32 matmuls off, and bypasses the autocast
    wrapper that ``accelerate`` (the ``Trainer`` with ``bf16=True``) puts around
    ``model.forward`` for the whole run; everything is restored on exit.
    """
    wrapped = "_original_forward" in vars(model) and "forward" in vars(model)
    tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    if wrapped:
        autocast_forward = vars(model)["forward"]
        model.forward = model._original_forward
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(torch.autocast("cpu", enabled=False))
            if torch.cuda.is_available():
                stack.enter_context(torch.autocast("cuda", enabled=False))
            yield model
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
        if wrapped:
            model.forward = autocast_forward


@contextlib.contextmanager
def evaluation_mode(model: torch.nn.Module):
    """Eval mode, ``no_grad``, a forked RNG and :func:`full_precision` for the duration.

    Restores the previous mode, autocast wrapper and TF32 switches.
    """
    was_training = model.training
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices), torch.no_grad(), full_precision(model):
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
    with :func:`attnrank.core.rank.rank_measures`'s ``attention_mask``).
    """
    positions = getattr(model.config, "max_position_embeddings", None) or getattr(model.config, "n_positions", None)
    if positions is not None and input_ids.shape[-1] > positions:
        raise ConfigError(
            "max_len",
            f"input_ids have {input_ids.shape[-1]} tokens but the model has {positions} positions; "
            f"use sequences of at most {positions} tokens",
        )
    with evaluation_mode(model):
        return torch.cat([p.cpu() for p in _probabilities(model, input_ids, attention_mask, batch_size)], dim=1)


def _backbone(model: torch.nn.Module) -> torch.nn.Module:
    """The transformer without its LM head (``model.base_model``: ``BertModel`` inside
    ``BertForMaskedLM``, ``GPT2Model`` inside ``GPT2LMHeadModel``), or ``model`` itself.

    Attention is computed in the backbone; the head's vocabulary projection (the largest
    matmul of a small model's forward) does not change it, so the probes skip it.
    """
    return getattr(model, "base_model", model)


def _probabilities(model, input_ids, attention_mask=None, batch_size: int = 64):
    """Yield ``[layers, b, heads, n, n]`` chunks of at most ``batch_size`` sequences on the
    model's device (call inside :func:`evaluation_mode`)."""
    device = next(model.parameters()).device
    backbone = _backbone(model)
    for i in range(0, len(input_ids), batch_size):
        ids = input_ids[i : i + batch_size].to(device)
        mask = None if attention_mask is None else attention_mask[i : i + batch_size].to(device)
        out = backbone(input_ids=ids, attention_mask=mask, output_attentions=True)
        yield torch.stack([a.to(torch.promote_types(a.dtype, torch.float32)) for a in out.attentions])


def attention_logits(model: torch.nn.Module, input_ids: torch.Tensor, *, batch_size: int = 64) -> torch.Tensor:
    """Scaled logits ``S = Q K^T / (tau sqrt(head_dim))`` of every layer, before any mask.

    Returns float32 ``[layers, batch, heads, n, n]`` on the CPU, read through the hook point
    :func:`attnrank.core.attention.capture_logits` in eval mode under ``no_grad``. For GPT-2
    the entries above the diagonal are computed but masked in the model.
    """
    device = next(model.parameters()).device
    backbone = _backbone(model)
    chunks = []
    with evaluation_mode(model):
        for i in range(0, len(input_ids), batch_size):
            with capture_logits() as logits:
                backbone(input_ids=input_ids[i : i + batch_size].to(device))
            chunks.append(torch.stack([s.cpu() for s in logits]))
    return torch.cat(chunks, dim=1)


class RankProbe:
    """Measures attention ranks and validation loss on fixed held-out data.

    Args:
        probe_ids: ``[probe_size, n]`` token ids of the probe sequences.
        val_batches: list of dicts (``input_ids``, ``labels``, optional ``attention_mask``)
            for the validation loss; for MLM the masking is drawn once, so every probe
            sees the same masked tokens.
        measures: rank measures to record (names in :data:`attnrank.core.rank.MEASURES`).
        chunk_size: sequences per forward pass; their probabilities and float64 SVDs stay
            on the model's device, so memory is bounded by one chunk
            (``layers x chunk_size x heads x n x n`` float64 values).

        train_ids: optional ``[k, n]`` token ids of training sequences, measured like the
            probe sequences but recorded only in :attr:`sequences` (split ``"train"``).
        attention_steps: steps at which the attention probabilities of the first
            ``attention_sequences`` probe sequences are kept (:attr:`attention`).
        attention_sequences: how many probe sequences (the first ones) to keep at those steps.

    After each call the tables :attr:`ranks` (``step, layer, head, measure, value, sd``:
    mean and standard deviation over probe sequences) and :attr:`summary`
    (``step, measure, mean, sd, sem``: over all heads, layers and sequences; ``sem`` is
    the standard error over sequences) grow by one step, both over the (held-out) probe
    sequences only; :attr:`sequences` (``step, split, sequence`` and one float32 column per
    measure: the value of one sequence averaged over layers and heads; ``split`` is
    ``"val"`` for the probe sequences and ``"train"`` for ``train_ids``) grows by one row per
    sequence. :attr:`timing` records wall seconds spent in the forward pass, the SVDs, the
    bookkeeping and the validation loss, and the process CPU seconds of the rank probe
    (``probe_cpu``: forward, SVDs and bookkeeping) and of the validation loss (``validation_cpu``);
    ``"attention"`` (and ``"attention_cpu"``), the seconds spent copying the kept attention
    probabilities (not part of the rank-tracking cost: the tensors are the ones the probe measures
    anyway, and ``probe_cpu`` leaves them out).
    """

    def __init__(
        self,
        probe_ids: torch.Tensor,
        val_batches: list[dict],
        measures=DEFAULT_MEASURES,
        *,
        chunk_size: int = 16,
        train_ids: torch.Tensor | None = None,
        attention_steps=(),
        attention_sequences: int = 0,
    ):
        self.probe_ids = probe_ids
        self.attention_steps = frozenset(int(s) for s in attention_steps)
        self.attention_sequences = min(int(attention_sequences), len(probe_ids)) if self.attention_steps else 0
        self._attention: dict[int, torch.Tensor] = {}
        self.train_ids = train_ids
        self._sequence_rows: list[pd.DataFrame] = []
        self.chunk_size = chunk_size
        self.val_batches = val_batches
        self.measures = check_measures(measures)
        self._rank_rows: list[pd.DataFrame] = []
        self._summary_rows: list[dict] = []
        self.eval_rows: list[dict] = []
        self.timing = {
            "forward": 0.0,
            "svd": 0.0,
            "bookkeeping": 0.0,
            "validation": 0.0,
            "attention": 0.0,
            "probe_cpu": 0.0,
            "validation_cpu": 0.0,
            "attention_cpu": 0.0,
        }

    def validation_loss(self, model: torch.nn.Module) -> float:
        """Token-weighted mean cross-entropy (nats) on the fixed validation batches.

        Batches are evaluated ``chunk_size`` sequences at a time, so the logits held at once
        are ``chunk_size x n x vocab`` floats.
        """
        device = next(model.parameters()).device
        total, count = 0.0, 0
        with evaluation_mode(model):
            for full in self.val_batches:
                for i in range(0, len(full["input_ids"]), self.chunk_size):
                    batch = {k: v[i : i + self.chunk_size].to(device) for k, v in full.items()}
                    labels = batch["labels"]
                    n = int(((labels[..., 1:] if of_model(model).causal else labels) != -100).sum())
                    if n == 0:
                        continue
                    total += model(**batch).loss.float().item() * n
                    count += n
        return total / max(count, 1)

    def _measure(
        self, model: torch.nn.Module, ids: torch.Tensor, keep: int = 0
    ) -> tuple[dict[str, np.ndarray], float, float, torch.Tensor | None]:
        """Every measure of every attention matrix of ``ids``: ``({measure: [L, B, H]}, forward s, svd s, kept)``.

        ``kept`` is a float32 CPU copy of the probabilities of the first ``keep`` sequences,
        ``[L, keep, H, n, n]`` (None when ``keep`` is 0); copying them is timed apart, as
        ``"attention"``.
        """
        forward = svd = 0.0
        kept: list[torch.Tensor] = []
        count = 0
        parts: dict[str, list[torch.Tensor]] = {m: [] for m in self.measures}
        # chunks of sequences: probabilities and their float64 SVDs stay on the model's
        # device (batched on a GPU) and host memory stays bounded by one chunk
        with evaluation_mode(model):
            chunks = _probabilities(model, ids, batch_size=self.chunk_size)
            while True:
                t = time.perf_counter()
                probs = next(chunks, None)  # [L, b, H, n, n]
                forward += time.perf_counter() - t
                if probs is None:
                    break
                if count < keep:
                    t, c = time.perf_counter(), time.process_time()
                    kept.append(probs[:, : keep - count].to("cpu", torch.float32, copy=True))
                    count += kept[-1].shape[1]
                    self.timing["attention"] += time.perf_counter() - t
                    self.timing["attention_cpu"] += time.process_time() - c
                t = time.perf_counter()
                for name, v in rank_measures(probs, measures=self.measures).items():
                    parts[name].append(v.cpu())
                del probs
                svd += time.perf_counter() - t
        values = {name: torch.cat(v, dim=1).numpy() for name, v in parts.items()}
        return values, forward, svd, torch.cat(kept, dim=1) if kept else None

    def __call__(self, model: torch.nn.Module, step: int) -> dict:
        """Probe ``model`` at training ``step``; returns ``{"val_loss": ..., measure: mean, ...}``."""
        c0, a0 = time.process_time(), self.timing["attention_cpu"]
        keep = self.attention_sequences if step in self.attention_steps else 0
        # the held-out and the training sequences in one pass (one batch of chunks), split after; the kept
        # attention is of the first held-out sequences
        n_val = len(self.probe_ids)
        both = self.probe_ids if self.train_ids is None else torch.cat([self.probe_ids, self.train_ids])
        measured, forward, svd, kept = self._measure(model, both, min(keep, n_val))  # [L, B + k, H] each
        if kept is not None:
            self._attention[step] = kept
        values = {name: v[:, :n_val] for name, v in measured.items()}
        splits = {"val": values}
        if self.train_ids is not None and len(self.train_ids):
            splits["train"] = {name: v[:, n_val:] for name, v in measured.items()}
        t2 = time.perf_counter()
        L, B, H = values[self.measures[0]].shape
        frames = []
        result: dict = {}
        for name, v in values.items():
            frames.append(
                pd.DataFrame(
                    {
                        "step": step,
                        "layer": np.repeat(np.arange(L), H),
                        "head": np.tile(np.arange(H), L),
                        "measure": name,
                        "value": v.mean(axis=1).reshape(-1),
                        "sd": v.std(axis=1, ddof=1).reshape(-1) if B > 1 else 0.0,
                    }
                )
            )
            per_seq = v.mean(axis=(0, 2))
            mean = float(v.mean())
            self._summary_rows.append(
                {
                    "step": step,
                    "measure": name,
                    "mean": mean,
                    "sd": float(v.std(ddof=1)),
                    "sem": float(per_seq.std(ddof=1) / np.sqrt(B)) if B > 1 else float("nan"),
                }
            )
            result[name] = mean
        self._rank_rows.append(pd.concat(frames, ignore_index=True))
        for split, vals in splits.items():
            b = vals[self.measures[0]].shape[1]
            self._sequence_rows.append(
                pd.DataFrame(
                    {
                        "step": np.full(b, step, dtype=np.int32),
                        "split": split,
                        "sequence": np.arange(b, dtype=np.int32),
                        **{name: v.mean(axis=(0, 2)).astype(np.float32) for name, v in vals.items()},
                    }
                )
            )
        t3, c3 = time.perf_counter(), time.process_time()
        result["val_loss"] = self.validation_loss(model)
        t4, c4 = time.perf_counter(), time.process_time()
        self.eval_rows.append({"step": step, "val_loss": result["val_loss"]})
        for k, dt in zip(
            ("forward", "svd", "bookkeeping", "validation", "probe_cpu", "validation_cpu"),
            (forward, svd, t3 - t2, t4 - t3, c3 - c0 - (self.timing["attention_cpu"] - a0), c4 - c3),
        ):
            self.timing[k] += dt
        return result

    @property
    def ranks(self) -> pd.DataFrame:
        return pd.concat(self._rank_rows, ignore_index=True) if self._rank_rows else pd.DataFrame()

    @property
    def summary(self) -> pd.DataFrame:
        return pd.DataFrame(self._summary_rows)

    @property
    def sequences(self) -> pd.DataFrame:
        """One row per probe step, split and sequence: ``step, split, sequence`` and one float32
        column per measure (the sequence's value averaged over layers and heads)."""
        return pd.concat(self._sequence_rows, ignore_index=True) if self._sequence_rows else pd.DataFrame()

    @property
    def attention(self) -> dict[str, torch.Tensor] | None:
        """The kept attention probabilities, or None when none were kept.

        ``{"steps": int64 [T], "probabilities": float32 [T, layers, attention_sequences, heads, n, n]}``:
        the probabilities of the first ``attention_sequences`` probe sequences at each step of
        ``attention_steps`` that was probed, in increasing step order (the matrices the rank
        probe measured at that step, in eval mode and full precision).
        """
        if not self._attention:
            return None
        steps = sorted(self._attention)
        return {
            "steps": torch.tensor(steps, dtype=torch.int64),
            "probabilities": torch.stack([self._attention[s] for s in steps]),
        }

    @property
    def eval_log(self) -> pd.DataFrame:
        return pd.DataFrame(self.eval_rows)
