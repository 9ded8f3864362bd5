"""Count-based language-model baselines: what a unigram and a bigram model score on the runs' validation targets.

A trained transformer is only interesting once it beats the models that need no attention at all.
:func:`ngram_losses` fits two count models on the training blocks and scores them on exactly the
validation targets the runs are scored on (:func:`attnrank.train.prepare_data`):

* GPT-2 (causal LM): every next token ``x_i`` (``i >= 1``) whose label is not ignored, given the
  visible previous token ``x_{i-1}``;
* BERT (masked LM): the masked positions of the fixed validation masks, given the *visible* left
  neighbour (the input token at ``i - 1``, which may itself be ``[MASK]``: then the bigram has no
  counts for that context and falls back to the unigram).

Models, with ``V`` the tokenizer's vocabulary size and counts taken over the training targets:

* unigram, add-one (Laplace) smoothing: ``P(w) = (c(w) + 1) / (N + V)``;
* bigram, Witten-Bell interpolation with that unigram (Witten & Bell 1991; Chen & Goodman 1999,
  sec. 2.5): ``P(w | v) = (c(v, w) + T(v) P(w)) / (c(v) + T(v))`` where ``T(v)`` is the number of
  distinct tokens seen after ``v``; a context never seen in training (``c(v) = 0``) gives ``P(w)``.

Losses are the mean negative log-likelihood in nats per target token, the unit of the runs'
validation loss. No parameter is tuned on the validation targets.
"""

from __future__ import annotations

import numpy as np

from .errors import ConfigError

__all__ = ["ngram_counts", "ngram_nll", "target_pairs", "ngram_losses", "relative_text"]


def _ids(name, a) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 1 or (a.size and (a.dtype.kind not in "iu" or a.min() < 0)):
        raise ConfigError(name, f"expected a 1-D array of non-negative token ids, got shape {a.shape}, dtype {a.dtype}")
    return a.astype(np.int64)


def ngram_counts(context, target, vocab_size: int) -> dict:
    """Unigram and bigram counts of training pairs ``(context[k], target[k])``.

    Args:
        context, target: ``[N]`` token ids (the previous token and the token to predict).
        vocab_size: ``V``, the number of token ids (every id must be below it).

    Returns a dict with ``unigram`` (``[V]`` counts of targets), ``pairs`` (sorted unique codes
    ``v * V + w``), ``pair_counts``, ``context_counts`` (``[V]``, ``c(v)``) and ``types`` (``[V]``,
    ``T(v)``), and ``vocab_size``.

    Raises:
        ConfigError: ``vocab_size`` not a positive int, ids out of range, or unequal lengths.
    """
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)) or vocab_size < 1:
        raise ConfigError("vocab_size", f"got {vocab_size!r}; expected a positive int")
    V = int(vocab_size)
    c, t = _ids("context", context), _ids("target", target)
    if len(c) != len(t):
        raise ConfigError("target", f"got length {len(t)}; context has length {len(c)}")
    if len(c) and max(c.max(), t.max()) >= V:
        raise ConfigError("vocab_size", f"got {V}; the data hold token id {max(c.max(), t.max())}")
    pairs, pair_counts = np.unique(c * V + t, return_counts=True)
    return {
        "vocab_size": V,
        "unigram": np.bincount(t, minlength=V).astype(float),
        "pairs": pairs,
        "pair_counts": pair_counts.astype(float),
        "context_counts": np.bincount(c, minlength=V).astype(float),
        "types": np.bincount(pairs // V, minlength=V).astype(float),
    }


def ngram_nll(counts: dict, context, target) -> dict:
    """Mean negative log-likelihood (nats per token) of the unigram and bigram models on ``(context, target)``.

    Args:
        counts: from :func:`ngram_counts`.
        context, target: ``[M]`` evaluation pairs (``M >= 1``).

    Returns ``{"unigram": float, "bigram": float, "n_targets": M}``.
    """
    V = counts["vocab_size"]
    c, t = _ids("context", context), _ids("target", target)
    if len(t) == 0 or len(c) != len(t):
        raise ConfigError("target", f"need at least one evaluation pair and equal lengths; got {len(c)} and {len(t)}")
    uni = (counts["unigram"] + 1.0) / (counts["unigram"].sum() + V)
    p_uni = uni[t]
    code = c * V + t
    pos = np.searchsorted(counts["pairs"], code)
    pos_ok = np.minimum(pos, max(len(counts["pairs"]) - 1, 0))
    hit = (pos < len(counts["pairs"])) & (counts["pairs"][pos_ok] == code) if len(counts["pairs"]) else np.zeros(len(t), bool)
    cvw = np.where(hit, counts["pair_counts"][pos_ok] if len(counts["pairs"]) else 0.0, 0.0)
    cv, Tv = counts["context_counts"][c], counts["types"][c]
    with np.errstate(invalid="ignore", divide="ignore"):
        p_bi = np.where(cv > 0, (cvw + Tv * p_uni) / (cv + Tv), p_uni)
    return {"unigram": float(-np.log(p_uni).mean()), "bigram": float(-np.log(p_bi).mean()), "n_targets": int(len(t))}


def target_pairs(input_ids, labels, arch: str):
    """``(context, target)`` of the scored positions of a batch, as the runs' validation loss scores them.

    Args:
        input_ids, labels: ``[B, n]`` int arrays (labels ``-100`` where not scored).
        arch: ``"gpt2"`` (target ``labels[:, 1:]``, context ``input_ids[:, :-1]``) or ``"bert"``
            (target ``labels[:, i]`` at masked positions ``i >= 1``, context the visible
            ``input_ids[:, i - 1]``).
    """
    from .errors import check_choice

    check_choice("arch", arch, ("bert", "gpt2"))
    x, y = np.asarray(input_ids), np.asarray(labels)
    if arch == "gpt2":
        ctx, tgt = x[:, :-1], y[:, 1:]
    else:
        if (y[:, 0] != -100).any():
            raise ConfigError("labels", "a masked target at position 0 has no left neighbour")
        ctx, tgt = x[:, :-1], y[:, 1:]
    keep = tgt != -100
    return ctx[keep].astype(np.int64), tgt[keep].astype(np.int64)


def ngram_losses(cfg) -> dict:
    """Unigram and bigram validation losses (nats per target token) for the runs of ``cfg``'s data.

    Counts come from the training blocks of :func:`attnrank.train.prepare_data` (GPT-2: every
    next-token pair whose target is not the padding id, as its collator labels them; BERT: every
    pair whose target is not a special token, the tokens the masking can choose). The evaluation
    pairs are those of the runs' fixed validation batches. Depends only on the data settings of
    ``cfg`` (architecture, dataset, vocabulary, sequence length, validation blocks, masking
    probability), not on its model settings or seed. Takes about a second on the ci data.

    Returns ``{"unigram": float, "bigram": float, "n_targets": int}``.
    """
    from .train import prepare_data

    blocks, tokenizer, _collator, _probe, val_batches = prepare_data(cfg)
    train = blocks.blocks.numpy() if hasattr(blocks, "blocks") else np.asarray(blocks)
    V = len(tokenizer)
    ctx, tgt = train[:, :-1].reshape(-1), train[:, 1:].reshape(-1)
    if cfg.arch == "gpt2":
        keep = tgt != tokenizer.pad_token_id
    else:
        keep = ~np.isin(tgt, np.asarray(tokenizer.all_special_ids))
    counts = ngram_counts(ctx[keep], tgt[keep], V)
    pairs = [target_pairs(b["input_ids"].numpy(), b["labels"].numpy(), cfg.arch) for b in val_batches]
    return ngram_nll(counts, np.concatenate([p[0] for p in pairs]), np.concatenate([p[1] for p in pairs]))


def relative_text(loss: float, baseline: float, digits: int = 2) -> str:
    """Where a model's loss lies against a baseline, in words: ``"0.19 nats below"`` or ``"0.31 nats above"``
    (``"level with"`` when equal at ``digits`` decimals)."""
    d = round(float(baseline) - float(loss), digits)
    if d == 0:
        return "level with"
    return f"{abs(d):.{digits}f} nats {'below' if d > 0 else 'above'}"
