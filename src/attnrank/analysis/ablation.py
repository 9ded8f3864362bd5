"""Attention's own contribution: the validation loss a trained model loses when its attention carries no content.

A model can end below its count baselines without using attention much (a GPT-2 reaches its bigram from
a token's own embedding). The *attention ablation gain* of a run measures what attention itself is worth:

.. math:: g = L_\\text{content-free} - L,

both the token-weighted mean cross-entropy (nats per target token) on the run's own fixed validation
batches (:func:`attnrank.core.train.prepare_data`), ``L`` with the stored final weights as trained and
``L_content-free`` with the same weights and every attention layer made content-free.

**The intervention.** Every attention matrix becomes

.. math:: A = \\operatorname{softmax}(0 + M), \\qquad A_{ij} = \\frac{1[j \\text{ visible to } i]}{\\#\\{\\text{visible keys of } i\\}},

uniform over the positions each query may attend to: for GPT-2 the causal mask is kept (row ``i`` is
``1 / i`` over keys ``j <= i``, :func:`attnrank.analysis.baselines.uniform_attention`), for BERT every position of
the sequence. It is the limit ``tau -> infinity`` of the book's attention
``softmax(Q K^T / (tau sqrt(head_dim)) + M)`` (:mod:`attnrank.core.attention`), taken exactly: the query is
replaced by zeros before the tempered attention function runs, so the logits are exactly 0 and the
mask, applied after the scaling, is the only thing left. A large finite ``tau`` (1000) only approximates
it, with an error that grows with the trained logits; :func:`validation_loss` evaluates at any ``tau``
too, and converges to the content-free loss as ``tau`` grows. The values, the MLPs, the embeddings,
the position embeddings and the output layer are untouched, so the gain is the part of the loss that
depends on *which* positions attention selects, not on attention's averaging of the context (a
content-free model still sees the mean of its visible values). Replacing trained attention by a constant
matrix is the probe of Hassid et al. (2022), "How Much Does Attention Actually Attend? Questioning the
Importance of Attention in Pretrained Transformers" (Findings of EMNLP), which uses the average attention
over a corpus; the uniform matrix needs no corpus statistics and is the one the book's theory uses as
its content-free baseline.

The evaluation is the training run's own validation loss (:meth:`attnrank.core.probe.RankProbe.validation_loss`)
under the run's settings (its torch thread count, float32 at full precision, subnormals flushed on a CPU
as during training), so with the intervention off it reproduces the run's stored final validation loss.

:func:`attention_gain` computes one run's gain from its stored weights, cached by the run's key, the
SHA-256 of its weights and the dataset's content (:func:`attnrank.runs.cache.cached`, which adds the code
and the environment); :func:`gains` does it for a table of runs. Not part of the training path:
editing this module re-trains nothing.
"""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path

import pandas as pd
import torch
from transformers import AttentionInterface
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from ..core.architectures import architecture
from ..core.attention import ATTN_IMPLEMENTATION, tempered_attention
from ..core.data import dataset_fingerprint
from ..core.errors import ConfigError, check_choice
from ..core.probe import RankProbe
from ..core.profiles import check_tau
from ..core.train import prepare_data, run_numerics
from ..runs import store
from ..runs.cache import cached

__all__ = [
    "CONTENT_FREE",
    "ATTENTION",
    "GAIN_COLUMNS",
    "content_free_attention",
    "content_free",
    "validation_loss",
    "run_losses",
    "gain_table",
    "attention_gain",
    "gains",
]

#: Name under which the content-free attention is registered with ``transformers``.
CONTENT_FREE = "attnrank_content_free"
#: The attention a model is evaluated with: as trained, or content-free (see the module docstring).
ATTENTION = ("trained", "content_free")
#: The columns of :func:`gain_table` (one row per run): losses and gain in nats per target token.
GAIN_COLUMNS = ("val_loss", "content_free_loss", "attention_gain", "stored_val_loss", "n_targets")


def content_free_attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, **kwargs):
    """The book's tempered attention (:func:`attnrank.core.attention.tempered_attention`) with the query set to zero.

    The logits ``Q K^T / (tau sqrt(head_dim))`` are then exactly 0 whatever ``tau``, and the softmax after the
    mask is uniform over the visible keys (causal for GPT-2). Shapes as :func:`~attnrank.core.attention.tempered_attention`:
    ``query, key, value`` ``[batch, heads, seq, head_dim]``; returns ``(output [batch, seq, heads, head_dim],
    probabilities or None)``.
    """
    return tempered_attention(module, torch.zeros_like(query), key, value, attention_mask, dropout, scaling, **kwargs)


AttentionInterface.register(CONTENT_FREE, content_free_attention)
AttentionMaskInterface.register(CONTENT_FREE, sdpa_mask)


@contextlib.contextmanager
def content_free(model):
    """Evaluate ``model`` (built by :func:`attnrank.core.models.build_model`) with content-free attention for the duration.

    Switches the model's attention implementation to :data:`CONTENT_FREE` (the same mask function, the same
    tempered attention with a zero query) and restores it on exit. The weights are not touched.

    Raises:
        ConfigError: naming ``model`` when it does not use the book's tempered attention.
    """
    before = model.config._attn_implementation
    if before != ATTN_IMPLEMENTATION:
        raise ConfigError(
            "model", f"uses attention {before!r}; content-free evaluation needs the tempered {ATTN_IMPLEMENTATION!r}"
        )
    model.config._attn_implementation = CONTENT_FREE
    try:
        yield model
    finally:
        model.config._attn_implementation = before


@contextlib.contextmanager
def _at_tau(model, tau):
    before = float(getattr(model.config, "tau", 1.0))
    if tau is not None:
        model.config.tau = check_tau(tau)
    try:
        yield model
    finally:
        model.config.tau = before


def validation_loss(model, val_batches, *, attention: str = "trained", tau: float | None = None) -> float:
    """Token-weighted mean cross-entropy of ``model`` on ``val_batches``, nats per target token.

    Args:
        model: a BERT or GPT-2 of :func:`attnrank.core.models.build_model` (the book's tempered attention).
        val_batches: the fixed validation batches of :func:`attnrank.core.train.prepare_data`, dicts of
            ``input_ids`` and ``labels`` ``[batch, n]`` (``-100``: not scored).
        attention: ``"trained"`` (as the weights give it) or ``"content_free"`` (:func:`content_free`).
        tau: evaluate at this temperature ratio instead of the model's own (``None``: the model's), in
            the range of :func:`attnrank.core.profiles.check_tau`; the weights stay as they are. Ignored by
            ``"content_free"``, whose logits are 0 at every ``tau``.

    The evaluation is :meth:`attnrank.core.probe.RankProbe.validation_loss` (eval mode, no gradient, float32), the
    code the training run scores its validation loss with; the model's mode and settings are restored.

    Raises:
        ConfigError: naming ``attention`` for another value, ``tau`` outside the allowed range or for a
        model without the tempered attention (a stock HF model evaluates only ``"trained"`` at its own
        softmax), or ``model`` for ``"content_free"`` on such a model.
    """
    check_choice("attention", attention, ATTENTION)
    probe = RankProbe(torch.empty(0, 1, dtype=torch.long), val_batches)
    switch = content_free(model) if attention == "content_free" else contextlib.nullcontext()
    if tau is not None and model.config._attn_implementation != ATTN_IMPLEMENTATION:
        raise ConfigError(
            "tau",
            f"got {tau!r} for a model with attention {model.config._attn_implementation!r}, which has no temperature",
        )
    with _at_tau(model, tau), switch:
        return probe.validation_loss(model)


#: The validation batches of the data settings evaluated in this process, by those settings and the dataset's content.
_BATCHES: dict = {}
#: The run settings :func:`attnrank.core.train.prepare_data` builds the validation batches from.
_DATA_FIELDS = ("arch", "dataset", "vocab_size", "max_len", "val_blocks", "mlm_probability", "batch_size", "probe_size")


def _validation_batches(cfg) -> list[dict]:
    """The fixed validation batches of ``cfg`` (:func:`attnrank.core.train.prepare_data`), built once per data settings
    and dataset content in a process (the runs of a grid share them; nothing evaluated writes to them)."""
    key = (*(getattr(cfg, k) for k in _DATA_FIELDS), dataset_fingerprint(cfg.dataset))
    if key not in _BATCHES:
        if len(_BATCHES) >= 16:
            _BATCHES.clear()
        _BATCHES[key] = prepare_data(cfg)[4]
    return _BATCHES[key]


def _n_targets(val_batches, arch: str) -> int:
    causal = architecture(arch).causal
    return int(sum(int((b["labels"][:, 1:] if causal else b["labels"]).ne(-100).sum()) for b in val_batches))


def run_losses(run: store.Run) -> dict:
    """The validation losses of a stored run's final weights, as trained and content-free.

    Args:
        run: a complete :class:`attnrank.runs.store.Run` (its ``model.safetensors`` and config).

    Returns ``{"val_loss", "content_free_loss", "attention_gain", "stored_val_loss", "n_targets"}``: the two
    losses (nats per target token, :func:`validation_loss` on the run's own validation batches, on the run's
    torch thread count), their difference (the gain) and the final validation loss the run stored.

    Raises:
        ConfigError: naming ``run`` when it did not complete (a failed run has no final model).
    """
    if run.summary.get("status") != "complete" or run.summary.get("final_val_loss") is None:
        raise ConfigError("run", f"run {run.path.name} did not complete; a failed run has no final model to evaluate")
    cfg = run.run_config
    val_batches = _validation_batches(cfg)
    model = run.load_model()
    if torch.cuda.is_available():
        model = model.cuda()
    with run_numerics(cfg.threads):
        loss = validation_loss(model, val_batches)
        free = validation_loss(model, val_batches, attention="content_free")
    return {
        "val_loss": loss,
        "content_free_loss": free,
        "attention_gain": free - loss,
        "stored_val_loss": float(run.summary["final_val_loss"]),
        "n_targets": _n_targets(val_batches, cfg.arch),
    }


#: The run :func:`attention_gain` is asking :func:`gain_table` about (the cache passes plain inputs only).
_ASKED: dict = {}


def _find(arch: str, key: str) -> store.Run:
    asked = _ASKED.get((arch, key))
    again = store.read(asked.path) if asked is not None else None  # checksums verified again
    if again is not None:
        return again
    found = store.load_runs(keys=[key], current_code=False)
    found = found[found.arch == arch] if len(found) else found
    if not len(found):
        raise ConfigError("key", f"no complete {arch} run with key {key!r} in the run store {store.runs_dir()}")
    return store.read(Path(found.path.iloc[0]))


def gain_table(arch: str, key: str, weights: str, fingerprint: str) -> pd.DataFrame:
    """:func:`run_losses` of the stored run ``arch-key`` as a one-row table with :data:`GAIN_COLUMNS`, for
    :func:`attnrank.runs.cache.cached`; ``weights`` (the SHA-256 of its ``model.safetensors``) and ``fingerprint``
    (the dataset's content) are inputs of the cache key only.

    Raises:
        ConfigError: naming ``key`` when the store holds no such run.
    """
    return pd.DataFrame([run_losses(_find(arch, key))])


def _weights_digest(run: store.Run) -> str:
    return json.loads((run.path / "COMPLETE").read_text())["files"]["model.safetensors"]


def attention_gain(run) -> dict:
    """The attention ablation gain of one stored run, computed once and then read from the table cache.

    Args:
        run: a :class:`attnrank.runs.store.Run`, or a row (dict or named tuple) of a run table with ``path``
            (:func:`attnrank.runs.store.load_runs`, :func:`attnrank.runs.tables.table` with ``long=False``).

    Returns :func:`run_losses`'s dict. The cache key holds the run's key (its config, the training code,
    the dataset and the environment it trained in), the SHA-256 of its weights, the dataset's content and,
    through :func:`attnrank.runs.cache.cached`, this module's code and the evaluating environment (threads, device).

    Raises:
        ConfigError: naming ``run`` for something without a stored complete run, or a failed run.
    """
    if not isinstance(run, store.Run):
        get = run.get if isinstance(run, dict) else (lambda k, d=None: getattr(run, k, d))
        path = get("path")
        found = store.read(Path(path)) if isinstance(path, (str, Path)) and str(path) else None
        if found is None:
            raise ConfigError(
                "run", f"expected a stored run or a run-table row with the path of one; got path {path!r}"
            )
        run = found
    if run.summary.get("status") != "complete":
        raise ConfigError("run", f"run {run.path.name} did not complete; a failed run has no final model to evaluate")
    _ASKED.clear()
    _ASKED[(run.config["arch"], run.key)] = run
    try:
        t = cached(
            "attention_gain",
            gain_table,
            arch=run.config["arch"],
            key=run.key,
            weights=_weights_digest(run),
            fingerprint=dataset_fingerprint(run.config["dataset"]),
        )
    finally:
        _ASKED.clear()
    row = t.iloc[0]
    return {k: (int(row[k]) if k == "n_targets" else float(row[k])) for k in GAIN_COLUMNS}


def gains(runs: pd.DataFrame) -> pd.DataFrame:
    """:func:`attention_gain` of every run of a wide run table: one row per run.

    Args:
        runs: a wide run table with ``arch``, ``path``, ``status`` and ``final_val_loss`` (and ``key``,
            ``tau``, ``head_dim``, ``seed``, copied when present).

    Returns those identity columns, ``val_loss`` (re-evaluated: the run's stored final validation loss),
    ``content_free_loss`` and ``attention_gain`` (nats per target token); NaN for a run that did not complete.
    """
    ident = [k for k in ("key", "arch", "tau", "head_dim", "seed", "status") if k in runs]
    values = ("val_loss", "content_free_loss", "attention_gain")
    rows = []
    for r in runs.to_dict("records"):
        loss = r.get("final_val_loss")
        done = r.get("status", "complete") == "complete" and loss is not None and math.isfinite(float(loss))
        g = attention_gain(r) if done else dict.fromkeys(values, math.nan)
        rows.append({**{k: r[k] for k in ident}, **{k: g[k] for k in values}})
    return pd.DataFrame(rows, columns=[*ident, *values])
