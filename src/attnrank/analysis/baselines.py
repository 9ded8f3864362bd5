"""Count-based language-model baselines: what a unigram and a bigram model score on the runs' validation targets.

A trained transformer is only interesting once it beats the models that need no attention at all.
:func:`ngram_losses` fits two count models on the training blocks and scores them on exactly the
validation targets the runs are scored on (:func:`attnrank.core.train.prepare_data`):

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

A masked token sees both of its neighbours, so BERT also gets a two-sided count model
(:func:`two_sided_counts`, :func:`two_sided_nll`), scored on the same masked positions given the
*visible* left and right neighbours ``l = x_{i-1}``, ``r = x_{i+1}`` (either may be ``[MASK]``, which
never occurs as a context in the training blocks and so carries no information):

* the right bigram ``P_R(w | r)``: the Witten-Bell bigram above with the right neighbour as context;
* the two bigrams combined as independent evidence (a product of experts, normalised over the
  vocabulary): ``Q(w | l, r) = P_L(w | l) P_R(w | r) / P(w) / Z(l, r)``;
* the two-sided model, Witten-Bell interpolation of the counts of ``(l, w, r)`` with ``Q``:
  ``P(w | l, r) = (c(l, w, r) + T(l, r) Q(w | l, r)) / (c(l, r) + T(l, r))``, where ``T(l, r)`` is the
  number of distinct tokens seen between ``l`` and ``r``; an unseen pair ``(l, r)`` gives ``Q``.

The masking itself gives a masked LM something for free: HF's collator (Devlin et al. 2019, sec. 3.1) shows
a scored token as ``[MASK]`` with probability ``m`` (0.8), as a random id with probability ``r`` (0.1) and
unchanged otherwise (``k = 1 - m - r``). The *context-free* model (:func:`context_free_nll`) is the best
prediction that uses no neighbour at all: the unigram ``P(w)`` where the input is ``[MASK]``, and where a scored
token is shown as ``x``, ``P(w | x) = P(w) (k [w = x] + r / V) / (k P(x) + r / V)`` (the chance that ``x`` was
kept). A BERT at that loss has learned nothing from context.

Losses are the mean negative log-likelihood in nats per target token, the unit of the runs'
validation loss. No parameter is tuned on the validation targets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from scipy.sparse import csr_matrix

from ..core.architectures import architecture
from ..core.data import dataset_fingerprint
from ..core.errors import ConfigError
from ..core.models import build_model, model_from_config, tokenizer_pad_id
from ..core.probe import attention_logits, attention_probabilities
from ..core.profiles import ARCH_ORDER, ARCHS, MLM_ARCH, RunConfig, profile_defaults, resolve_config
from ..core.rank import MEASURES, rank_measures
from ..core.train import prepare_data
from ..runs.cache import cached
from . import ablation
from .rules import LEARNED_MARGIN, LEARNED_WORTH
from .theory import monte_carlo_rank, taylor_rank_bound

__all__ = [
    "BASELINES",
    "gaps",
    "flops_per_token",
    "init_statistics",
    "init_means",
    "init_std",
    "ngram_counts",
    "ngram_nll",
    "target_pairs",
    "two_sided_counts",
    "two_sided_nll",
    "target_triples",
    "context_free_nll",
    "ngram_losses",
    "NGRAM_COLUMNS",
    "ngram_table",
    "causal_mask",
    "visible_keys",
    "uniform_attention",
    "uniform_ranks",
    "logit_sd",
    "iid_limits",
    "staircase",
    "small_logits",
    "bound_check",
    "reference_losses",
    "DATA_FIELDS",
    "baseline_losses",
    "bigram_gaps",
    "Regime",
    "regime",
    "reference_gains",
    "learned_runs",
    "reference_table",
]


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
    hit = (
        (pos < len(counts["pairs"])) & (counts["pairs"][pos_ok] == code)
        if len(counts["pairs"])
        else np.zeros(len(t), bool)
    )
    cvw = np.where(hit, counts["pair_counts"][pos_ok] if len(counts["pairs"]) else 0.0, 0.0)
    cv, Tv = counts["context_counts"][c], counts["types"][c]
    with np.errstate(invalid="ignore", divide="ignore"):
        p_bi = np.where(cv > 0, (cvw + Tv * p_uni) / (cv + Tv), p_uni)
    return {"unigram": float(-np.log(p_uni).mean()), "bigram": float(-np.log(p_bi).mean()), "n_targets": int(len(t))}


def target_pairs(input_ids, labels, arch: str):
    """``(context, target)`` of the scored positions of a batch, as the runs' validation loss scores them.

    Args:
        input_ids, labels: ``[B, n]`` int arrays (labels ``-100`` where not scored).
        arch: a causal LM (``"gpt2"``: target ``labels[:, 1:]``, context ``input_ids[:, :-1]``) or a masked LM
            (``"modernbert"``, ``"bert"``: target ``labels[:, i]`` at masked positions ``i >= 1``, context the
            visible ``input_ids[:, i - 1]``).
    """
    causal = architecture(arch).causal
    x, y = np.asarray(input_ids), np.asarray(labels)
    if causal:
        ctx, tgt = x[:, :-1], y[:, 1:]
    else:
        if (y[:, 0] != -100).any():
            raise ConfigError("labels", "a masked target at position 0 has no left neighbour")
        ctx, tgt = x[:, :-1], y[:, 1:]
    keep = tgt != -100
    return ctx[keep].astype(np.int64), tgt[keep].astype(np.int64)


def _unigram(counts: dict) -> np.ndarray:
    """Laplace unigram ``[V]`` of ``counts``."""
    return (counts["unigram"] + 1.0) / (counts["unigram"].sum() + counts["vocab_size"])


def _bigram_rows(counts: dict, context: np.ndarray, table) -> np.ndarray:
    """Witten-Bell bigram rows ``[len(context), V]``: ``P(. | v)`` for each ``v`` of ``context``
    (``table``: the ``[V, V]`` sparse matrix of pair counts)."""
    uni = _unigram(counts)
    cv, Tv = counts["context_counts"][context], counts["types"][context]
    rows = np.asarray(table[context].todense(), dtype=float) + Tv[:, None] * uni[None, :]
    seen = cv > 0
    rows[seen] /= (cv + Tv)[seen, None]
    rows[~seen] = uni
    return rows


def _pair_table(counts: dict):
    V = counts["vocab_size"]
    return csr_matrix((counts["pair_counts"], (counts["pairs"] // V, counts["pairs"] % V)), shape=(V, V))


def two_sided_counts(left, target, right, vocab_size: int) -> dict:
    """Counts of the two-sided model from training triples ``(left[k], target[k], right[k])``.

    Args:
        left, target, right: ``[N]`` token ids (the left neighbour, the token, the right neighbour).
        vocab_size: ``V``, the number of token ids (every id must be below it).

    Returns a dict with ``left`` and ``right`` (:func:`ngram_counts` of the left and right bigram),
    ``triples`` (sorted unique codes ``(l V + w) V + r``), ``triple_counts``, ``pair_codes`` (sorted
    unique ``l V + r``), ``pair_counts`` (``c(l, r)``), ``pair_types`` (``T(l, r)``) and ``vocab_size``.

    Raises:
        ConfigError: ``vocab_size`` not a positive int, ids out of range, or unequal lengths.
    """
    lc = ngram_counts(left, target, vocab_size)
    V = lc["vocab_size"]
    r = _ids("right", right)
    if len(r) != len(_ids("target", target)):
        raise ConfigError("right", f"got length {len(r)}; target has length {len(target)}")
    rc = ngram_counts(right, target, V)
    lr = _ids("left", left) * V + r
    triples, triple_counts = np.unique(lr * V + _ids("target", target), return_counts=True)
    # codes (l V + r) V + w: sorted by the pair (l, r) first, so pair counts and types are run lengths
    pair_codes, pair_counts = np.unique(lr, return_counts=True)
    pair_types = np.bincount(np.searchsorted(pair_codes, triples // V), minlength=len(pair_codes)).astype(float)
    return {
        "vocab_size": V,
        "left": lc,
        "right": rc,
        "triples": triples,
        "triple_counts": triple_counts.astype(float),
        "pair_codes": pair_codes,
        "pair_counts": pair_counts.astype(float),
        "pair_types": pair_types,
    }


def _lookup(keys: np.ndarray, values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``values`` at ``codes`` in the sorted ``keys`` (0 where a code is absent)."""
    if len(keys) == 0:
        return np.zeros(len(codes))
    pos = np.searchsorted(keys, codes)
    ok = pos < len(keys)
    pos = np.minimum(pos, len(keys) - 1)
    return np.where(ok & (keys[pos] == codes), values[pos], 0.0)


def two_sided_nll(counts: dict, left, target, right, *, chunk: int = 512) -> dict:
    """Mean negative log-likelihood (nats per token) of the two-sided model on ``(left, target, right)``.

    Args:
        counts: from :func:`two_sided_counts`.
        left, target, right: ``[M]`` evaluation triples (``M >= 1``): the visible neighbours of each
            scored token.
        chunk: evaluation positions whose ``[chunk, V]`` rows are held at once (memory only).

    Returns ``{"left_bigram", "right_bigram", "product", "two_sided": float, "n_targets": M}``: the
    left and right bigrams alone, their normalised product ``Q`` and the two-sided model.
    """
    V = counts["vocab_size"]
    lft, tgt, rgt = _ids("left", left), _ids("target", target), _ids("right", right)
    if len(tgt) == 0 or not len(lft) == len(tgt) == len(rgt):
        raise ConfigError("target", f"need at least one evaluation triple and equal lengths; got {len(tgt)}")
    if max(lft.max(), tgt.max(), rgt.max()) >= V:
        raise ConfigError("vocab_size", f"got {V}; the evaluation data hold a larger token id")
    uni = _unigram(counts["left"])
    tables = {side: _pair_table(counts[side]) for side in ("left", "right")}
    nll = {k: np.empty(len(tgt)) for k in ("left_bigram", "right_bigram", "product", "two_sided")}
    for s in range(0, len(tgt), chunk):
        sl = slice(s, s + chunk)
        w, k = tgt[sl], np.arange(len(tgt[sl]))
        pl = _bigram_rows(counts["left"], lft[sl], tables["left"])
        pr = _bigram_rows(counts["right"], rgt[sl], tables["right"])
        q = pl * pr / uni[None, :]
        q /= q.sum(axis=1, keepdims=True)
        pair = lft[sl] * V + rgt[sl]
        c_lr = _lookup(counts["pair_codes"], counts["pair_counts"], pair)
        t_lr = _lookup(counts["pair_codes"], counts["pair_types"], pair)
        c_lwr = _lookup(counts["triples"], counts["triple_counts"], pair * V + w)
        q_w = q[k, w]
        with np.errstate(invalid="ignore", divide="ignore"):
            p = np.where(c_lr > 0, (c_lwr + t_lr * q_w) / (c_lr + t_lr), q_w)
        nll["left_bigram"][sl] = -np.log(pl[k, w])
        nll["right_bigram"][sl] = -np.log(pr[k, w])
        nll["product"][sl] = -np.log(q_w)
        nll["two_sided"][sl] = -np.log(p)
    return {**{k: float(v.mean()) for k, v in nll.items()}, "n_targets": int(len(tgt))}


def target_triples(input_ids, labels):
    """``(left, target, right)`` of the masked positions of a BERT batch, as its validation loss scores them.

    Args:
        input_ids, labels: ``[B, n]`` int arrays (labels ``-100`` where not scored); the neighbours are
            the *visible* input tokens at ``i - 1`` and ``i + 1`` (possibly ``[MASK]``).

    Raises:
        ConfigError: naming ``labels`` for a masked target in the first or last position (no neighbour).
    """
    x, y = np.asarray(input_ids), np.asarray(labels)
    if (y[:, 0] != -100).any() or (y[:, -1] != -100).any():
        raise ConfigError("labels", "a masked target in the first or last position lacks a neighbour")
    keep = y[:, 1:-1] != -100
    return (
        x[:, :-2][keep].astype(np.int64),
        y[:, 1:-1][keep].astype(np.int64),
        x[:, 2:][keep].astype(np.int64),
    )


def context_free_nll(
    counts: dict, input_ids, labels, *, mask_id: int, mask_replace_prob: float, random_replace_prob: float
) -> float:
    """Mean negative log-likelihood (nats per scored token) of the context-free model of a masked LM's targets.

    The best prediction that uses no neighbour (module docstring): the Laplace unigram of ``counts`` where the
    input is ``[MASK]``, and ``P(w | x) = P(w) (k [w = x] + r / V) / (k P(x) + r / V)`` where a scored token is
    shown as ``x`` (``r = random_replace_prob``, ``k = 1 - mask_replace_prob - r``, ``V`` the vocabulary size of
    ``counts``, the range HF's collator draws random ids from).

    Args:
        counts: from :func:`ngram_counts` (its unigram is used).
        input_ids, labels: ``[B, n]`` int arrays of masked batches (labels ``-100`` where not scored).
        mask_id: the ``[MASK]`` token id.
        mask_replace_prob, random_replace_prob: the collator's shares of scored tokens shown as ``[MASK]``
            and as a random id (HF defaults 0.8 and 0.1).

    Raises:
        ConfigError: naming ``labels`` when no token is scored, or the probability out of range.
    """
    m, r = float(mask_replace_prob), float(random_replace_prob)
    if not (0.0 <= m <= 1.0):
        raise ConfigError("mask_replace_prob", f"got {mask_replace_prob!r}; allowed values: 0 to 1")
    if not (0.0 <= r <= 1.0 - m):
        raise ConfigError(
            "random_replace_prob", f"got {random_replace_prob!r}; allowed values: 0 to 1 - mask_replace_prob"
        )
    x, y = np.asarray(input_ids), np.asarray(labels)
    scored = y != -100
    if not scored.any():
        raise ConfigError("labels", "no scored token (every label is -100)")
    x, y = x[scored].astype(np.int64), y[scored].astype(np.int64)
    uni, V, k = _unigram(counts), counts["vocab_size"], 1.0 - m - r
    shown = x != mask_id
    p = uni[y].copy()
    xs, ys = x[shown], y[shown]
    p[shown] = uni[ys] * (k * (xs == ys) + r / V) / (k * uni[xs] + r / V)
    return float(-np.log(p).mean())


def ngram_losses(cfg) -> dict:
    """Unigram and bigram validation losses (nats per target token) for the runs of ``cfg``'s data.

    Counts come from the training blocks of :func:`attnrank.core.train.prepare_data` (GPT-2: every
    next-token pair whose target is not the padding id, as its collator labels them; BERT: every
    pair whose target is not a special token, the tokens the masking can choose). The evaluation
    pairs are those of the runs' fixed validation batches. Depends only on the data settings of
    ``cfg`` (architecture, dataset, vocabulary, sequence length, validation blocks, masking
    probability), not on its model settings or seed. Takes about a second on the ci data.

    For BERT also ``two_sided``: the two-sided count model of :func:`two_sided_nll`, fitted on the
    training blocks' triples (a non-special token and its two neighbours) and scored on the same masked
    validation positions, and ``context_free``: :func:`context_free_nll` at the collator's masking shares.

    Returns ``{"unigram": float, "bigram": float, "n_targets": int}`` (and ``"two_sided"``, ``"context_free"``
    for ModernBERT).
    """
    blocks, tokenizer, collator, _probe, val_batches = prepare_data(cfg)
    train = blocks.blocks.numpy() if hasattr(blocks, "blocks") else np.asarray(blocks)
    V = len(tokenizer)
    ctx, tgt = train[:, :-1].reshape(-1), train[:, 1:].reshape(-1)
    if architecture(cfg.arch).causal:
        keep = tgt != tokenizer.pad_token_id
    else:
        keep = ~np.isin(tgt, np.asarray(tokenizer.all_special_ids))
    counts = ngram_counts(ctx[keep], tgt[keep], V)
    pairs = [target_pairs(b["input_ids"].numpy(), b["labels"].numpy(), cfg.arch) for b in val_batches]
    out = ngram_nll(counts, np.concatenate([p[0] for p in pairs]), np.concatenate([p[1] for p in pairs]))
    if not architecture(cfg.arch).causal:
        left, mid, right = train[:, :-2].reshape(-1), train[:, 1:-1].reshape(-1), train[:, 2:].reshape(-1)
        keep = ~np.isin(mid, np.asarray(tokenizer.all_special_ids))
        two = two_sided_counts(left[keep], mid[keep], right[keep], V)
        triples = [target_triples(b["input_ids"].numpy(), b["labels"].numpy()) for b in val_batches]
        out["two_sided"] = two_sided_nll(two, *(np.concatenate([t[i] for t in triples]) for i in range(3)))["two_sided"]
        out["context_free"] = context_free_nll(
            counts,
            np.concatenate([b["input_ids"].numpy().reshape(-1) for b in val_batches]),
            np.concatenate([b["labels"].numpy().reshape(-1) for b in val_batches]),
            mask_id=tokenizer.mask_token_id,
            mask_replace_prob=collator.mask_replace_prob,
            random_replace_prob=collator.random_replace_prob,
        )
    return out


#: The columns of :func:`ngram_table`.
NGRAM_COLUMNS = ("unigram", "bigram", "two_sided", "context_free", "n_targets")


def ngram_table(fingerprint: str, arch: str, **data_settings) -> pd.DataFrame:
    """:func:`ngram_losses` of the runs with ``arch`` and ``data_settings`` (dataset, vocabulary, sequence length,
    validation blocks, masking rate, batch and probe size) as a one-row table with :data:`NGRAM_COLUMNS`
    (``two_sided`` and ``context_free`` NaN for GPT-2), for :func:`attnrank.runs.cache.cached`; ``fingerprint`` (the dataset's content,
    :func:`attnrank.core.data.dataset_fingerprint`) is an input of the cache key only.
    """
    out = ngram_losses(resolve_config(arch, "ci", **data_settings))
    return pd.DataFrame([{k: out.get(k, float("nan")) for k in NGRAM_COLUMNS}])


def causal_mask(n: int, device=None) -> torch.Tensor:
    """Boolean ``[n, n]`` mask of the keys a causal (GPT-2) query sees: ``j <= i``."""
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def visible_keys(n: int, causal: bool, device=None) -> torch.Tensor:
    """Boolean ``[n, n]`` mask of the visible keys: :func:`causal_mask`, or all keys for bidirectional attention."""
    return causal_mask(n, device) if causal else torch.ones(n, n, dtype=torch.bool, device=device)


def uniform_attention(n: int, *, causal: bool) -> torch.Tensor:
    """The content-free attention matrix, float64 ``[n, n]``: ``1/n`` everywhere (bidirectional) or
    ``U_ij = 1[j <= i] / i`` (causal, rows uniform over the visible keys).

    Raises:
        ConfigError: for ``n`` < 1.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ConfigError("n", f"got {n!r}; expected a positive int")
    U = visible_keys(int(n), causal).double()
    return U / U.sum(-1, keepdim=True)


def uniform_ranks(n: int, measures=None) -> dict[str, dict[str, float]]:
    """Every rank measure of :func:`uniform_attention` over ``n`` tokens, the baseline a head that
    ignores the content gives, for each of the book's models: ``{"modernbert": {measure: value}, "gpt2": {...}}``
    (causal for the causal LM)."""
    measures = list(measures or MEASURES)
    return {
        arch: {
            m: float(v)
            for m, v in rank_measures(uniform_attention(n, causal=architecture(arch).causal), measures=measures).items()
        }
        for arch in ARCHS
    }


def logit_sd(S: torch.Tensor, causal: bool) -> torch.Tensor:
    """Within-row standard deviation of the visible logits, averaged over the rows with at least two
    visible keys: ``[..., n, n] -> [...]`` (float64; the unbiased sd of each row)."""
    n = S.shape[-1]
    vis = visible_keys(n, causal, S.device)
    cnt = vis.sum(-1).double()
    Sv = S.double().masked_fill(~vis, 0.0)
    mean = Sv.sum(-1) / cnt
    var = ((Sv - mean[..., None]).masked_fill(~vis, 0.0) ** 2).sum(-1) / (cnt - 1).clamp_min(1)
    return var.sqrt()[..., cnt >= 2].mean(-1)


def iid_limits(scale, n: int, samples: int, *, seed: int = 0):
    """The i.i.d.-logit limit of P1' for each architecture and temperature: every rank measure of
    ``softmax(sigma G)``, ``G`` an ``n x n`` matrix of i.i.d. standard Gaussians (causal mask for GPT-2),
    by Monte Carlo (:func:`attnrank.analysis.theory.monte_carlo_rank` with ``tau = 1 / sigma``).

    Args:
        scale: a frame with ``arch``, ``tau`` and ``logit_sd`` (the measured logit scale ``sigma``), one
            row per architecture and temperature.
        n: tokens per sequence.
        samples: Monte Carlo matrices per row of ``scale``.

    Returns one row per ``arch, tau, measure`` with ``sigma``, ``value`` (the Monte Carlo mean) and
    ``mc_sem`` (its standard error).
    """
    import pandas as pd

    rows = []
    for r in scale.itertuples():
        sigma = float(r.logit_sd)
        mc = monte_carlo_rank(
            n, None, samples, tau=1.0 / sigma, measures=tuple(MEASURES), seed=seed, causal=architecture(r.arch).causal
        )
        rows += [
            {
                "arch": r.arch,
                "tau": r.tau,
                "sigma": sigma,
                "measure": m,
                "value": est.value,
                "mc_sem": float(values.double().std()) / np.sqrt(len(values)),
            }
            for m, (est, values) in mc.items()
        ]
    return pd.DataFrame(rows)


#: Labels of the first two steps of the P1 staircase, ``r_1`` and ``r_2``.
STAIRCASE_LABELS = {1: r"staircase $r_1 = d_\mathrm{head}+1$", 2: r"staircase $r_2 = \binom{d_\mathrm{head}+2}{2}$"}


def staircase(head_dims, n: int):
    """Reference curves of the P1 staircase ``r_m = C(d_head + m, m)`` (``m = 1, 2``), capped at ``n``.

    One row per relative-tolerance measure (the bound is on ranks relative to ``sigma_1``), step and
    head dimension: ``measure, label, x, value, hue`` (``hue`` NaN: grey), as
    :func:`attnrank.plots.sweeps.by_setting` draws them.
    """
    import math

    import pandas as pd

    return pd.DataFrame(
        [
            {"measure": m, "label": lab, "x": h, "value": min(math.comb(h + k, k), n), "hue": np.nan}
            for m, spec in MEASURES.items()
            if spec.kind == "numerical" and spec.rtol is not None
            for k, lab in STAIRCASE_LABELS.items()
            for h in head_dims
        ]
    )


def small_logits(init, n: int) -> dict:
    """``{tau: bool}``: whether the P1 bound at relative tolerance 1e-2, from the measured half-range ``M``,
    is below ``n`` for the median ModernBERT matrix at some head dimension (the small-logit regime where the
    staircase bounds anything). ``init`` holds the rows of :func:`init_statistics` with bounds."""
    b = init[init.arch == MLM_ARCH]
    return {t: bool(g.groupby("head_dim")["bound_rtol_1e-2"].median().lt(n).any()) for t, g in b.groupby("tau")}


def bound_check(init, n: int):
    """How close the P1 bound is, on the rows of :func:`init_statistics` (with bounds) of ModernBERT.

    Returns ``(table, facts)``: the table has one row per ``tau, head_dim`` with the median ``M``, ``r_1``,
    ``r_2`` (capped at ``n``) and the mean measured ranks and bounds at relative tolerances 1e-2 and 1e-4;
    ``facts`` has ``matrices`` (rows), ``violations`` (matrices whose rank exceeds its bound at either
    tolerance) and, at ``tau = 1``, the fractions ``bound_is_r1`` (bound at 1e-2 equals ``r_1``),
    ``r1_at_rtol2``, ``r1_at_rtol4`` (measured rank equals ``r_1``) and ``rank1_at_rtol2`` (rank 1 at 1e-2).
    """
    import math

    table = (
        init.groupby(["tau", "head_dim"])
        .agg(
            M=("M", "median"),
            **{f"rank {c.removeprefix('rank_')}": (c, "mean") for c in ("rank_rtol_1e-2", "rank_rtol_1e-4")},
            **{f"bound {c}": (f"bound_{c}", "mean") for c in ("rtol_1e-2", "rtol_1e-4")},
        )
        .reset_index()
    )
    table.insert(2, "r_1", np.minimum(table.head_dim + 1, n))
    table.insert(3, "r_2", [min(math.comb(h + 2, 2), n) for h in table.head_dim])
    viol = (init["rank_rtol_1e-2"] > init["bound_rtol_1e-2"]) | (init["rank_rtol_1e-4"] > init["bound_rtol_1e-4"])
    b1 = init[np.isclose(init.tau, 1.0)]
    r1 = np.minimum(b1.head_dim + 1, n)
    facts = {
        "matrices": int(len(init)),
        "violations": int(viol.sum()),
        "bound_is_r1": float((b1["bound_rtol_1e-2"] == r1).mean()),
        "r1_at_rtol2": float((b1["rank_rtol_1e-2"] == r1).mean()),
        "r1_at_rtol4": float((b1["rank_rtol_1e-4"] == r1).mean()),
        "rank1_at_rtol2": float((b1["rank_rtol_1e-2"] == 1).mean()),
    }
    return table, facts


def reference_losses(profile: str, archs, dataset: str | None = None) -> dict:
    """The count models of each architecture's validation targets at ``profile``'s settings on ``dataset``:
    ``{arch: ngram_losses(...)}`` (:func:`ngram_losses`; ``unigram`` and ``bigram`` in nats per token)."""
    return {a: ngram_losses(resolve_config(a, profile, dataset=dataset)) for a in archs}


# --------------------------------------------------------------------------- the regime of a verdict
#: The run settings the count baselines depend on (they never see a model, a seed or a temperature).
DATA_FIELDS = ("arch", "dataset", "vocab_size", "max_len", "val_blocks", "mlm_probability", "batch_size", "probe_size")


def _data_settings(row) -> dict:
    get = row.get if isinstance(row, dict) else (lambda k: getattr(row, k))
    return {k: get(k) for k in DATA_FIELDS}


def baseline_losses(run) -> dict:
    """The count baselines of a run's validation targets, nats per target token.

    Args:
        run: a :class:`~attnrank.core.profiles.RunConfig`, a row of a wide run table
            (:func:`attnrank.runs.tables.table` with ``long=False``) or a dict with the :data:`DATA_FIELDS`.

    Returns ``{"unigram", "bigram", "two_sided", "context_free", "n_targets"}`` (``two_sided`` and
    ``context_free`` NaN for GPT-2), as
    :func:`attnrank.analysis.baselines.ngram_losses` computes them; cached (:func:`attnrank.runs.cache.cached`) by
    the data settings and :func:`attnrank.core.data.dataset_fingerprint`, so each is computed once per build.

    Raises:
        ConfigError: naming the missing data setting.
    """
    if hasattr(run, "to_dict"):  # a RunConfig or a table row
        run = run.to_dict()
    try:
        settings = _data_settings(run)
    except (KeyError, AttributeError) as exc:
        raise ConfigError("run", f"lacks the data setting {exc}; needs {', '.join(DATA_FIELDS)}") from None
    settings = {k: (v.item() if hasattr(v, "item") else v) for k, v in settings.items()}
    t = cached("baseline_losses", ngram_table, **settings, fingerprint=dataset_fingerprint(settings["dataset"]))
    row = t.iloc[0]
    return {**{k: float(row[k]) for k in NGRAM_COLUMNS[:-1]}, "n_targets": int(row["n_targets"])}


def _reference(a: pd.DataFrame, reference_tau: float) -> pd.DataFrame:
    """The complete runs of one architecture at ``reference_tau`` and its profile's stock head dimension (since
    2026-12-06; the deviations appendix): the stock model. Without a run at the stock head dimension, its runs at
    ``reference_tau``; without one at ``reference_tau``, all its complete runs."""
    done = a[(a.status == "complete") & np.isfinite(a.final_val_loss.astype(float))]
    ref = done[np.isclose(done.tau.astype(float), reference_tau)]
    if len(ref) and {"profile", "num_heads"} <= set(ref):
        stock = [profile_defaults(p, arch)["num_heads"] for p, arch in zip(ref.profile, ref.arch, strict=True)]
        at_stock = ref[ref.num_heads.to_numpy() == np.asarray(stock)]
        ref = at_stock if len(at_stock) else ref
    return ref if len(ref) else done


def _archs(runs: pd.DataFrame) -> list:
    return [a for a in ARCH_ORDER if a in set(runs.arch)]


def bigram_gaps(runs: pd.DataFrame, *, reference_tau: float = 1.0) -> dict:
    """Per architecture, how far its worst model is below the bigram count model: the learned gate's input.

    Args:
        runs: a wide run table (:func:`attnrank.runs.tables.table` with ``long=False``: ``arch``, ``tau``, ``status``,
            ``final_val_loss`` and the :data:`DATA_FIELDS`; ``path`` is not needed).
        reference_tau: the temperature ratio of the reference runs (the stock softmax); an architecture
            without a complete run there is judged on all its complete runs.

    Returns ``{arch: gap}``: the largest over the reference runs (the worst seed: the gate asks every run to
    pass) of the final validation loss minus the run's bigram count model (:func:`baseline_losses`), nats per
    token; negative: below the bigram; NaN: no complete run.

    Raises:
        ConfigError: naming ``runs`` when it holds no run.
    """
    if not len(runs):
        raise ConfigError("runs", "got no runs; the learned gate is computed from the runs a verdict rests on")
    out = {}
    for arch in _archs(runs):
        ref = _reference(runs[runs.arch == arch], reference_tau)
        diffs = [float(r["final_val_loss"]) - baseline_losses(r)["bigram"] for r in ref.to_dict("records")]
        out[arch] = float(np.max(diffs)) if diffs else math.nan
    return out


@dataclass(frozen=True)
class Regime:
    """Where a verdict on trained models was measured: the one record its clauses are worded from
    (:func:`attnrank.sections.section.regime_text`, :func:`~attnrank.sections.section.regime_brief`,
    :func:`~attnrank.sections.section.gate_text`).

    Attributes:
        gate: the verdict's :class:`attnrank.analysis.rules.LearnedGate` (its ``gaps``, ``not_learned``, ...).
        gains: ``{arch: nats}``, what attention is worth in the worst of the reference runs (:func:`reference_gains`
            with ``worst``: the learned gate's input, so the clause and the gate state one number).
        reference_tau: the temperature ratio of the reference runs (the stock softmax).
        reference: those runs themselves, one row each (:func:`reference_table`), so that every clause can name
            the set its numbers come from; ``None`` where there is none.
    """

    gate: object
    gains: dict = field(default_factory=dict)
    reference_tau: float = 1.0
    reference: pd.DataFrame | None = field(default=None, compare=False)


def regime(runs: pd.DataFrame, gate, *, reference_tau: float = 1.0) -> Regime:
    """The :class:`Regime` of a verdict with learned gate ``gate`` that rests on ``runs`` (a wide run table)."""
    return Regime(
        gate,
        reference_gains(runs, reference_tau=reference_tau, worst=True),
        reference_tau,
        reference_table(runs, reference_tau=reference_tau),
    )


def reference_table(runs: pd.DataFrame, *, reference_tau: float = 1.0) -> pd.DataFrame:
    """The reference runs of every architecture of ``runs`` (those :func:`bigram_gaps` reads: the stock model at
    ``reference_tau``), one row each, architectures in the gate's order; the learned gate's numbers come from them."""
    parts = [_reference(runs[runs.arch == arch], reference_tau) for arch in _archs(runs)]
    return pd.concat(parts) if parts else runs.iloc[:0]


def reference_gains(runs: pd.DataFrame, *, reference_tau: float = 1.0, worst: bool = False) -> dict:
    """Per architecture, what attention is worth in its reference runs (those of :func:`bigram_gaps`).

    Returns ``{arch: gain}``: the mean (with ``worst``, the smallest: the learned gate's input) attention ablation gain (:func:`attnrank.analysis.ablation.attention_gain`: the
    validation loss with content-free attention minus the loss, nats per token) of the architecture's
    reference runs, read from an ``attention_gain`` column or computed from the stored runs' ``path``; NaN
    when ``runs`` has neither or no reference run has a gain.
    """
    out = {}
    for arch in _archs(runs):
        ref = _reference(runs[runs.arch == arch], reference_tau)
        if "attention_gain" in ref:
            values = ref.attention_gain.astype(float)
        elif "path" in ref:
            values = pd.Series(
                [ablation.attention_gain(r)["attention_gain"] for r in ref.to_dict("records")], dtype=float
            )
        else:
            values = pd.Series([], dtype=float)
        out[arch] = float(values.min() if worst else values.mean()) if values.notna().any() else math.nan
    return out


def learned_runs(runs: pd.DataFrame, *, margin: float = LEARNED_MARGIN, worth: float = LEARNED_WORTH) -> pd.Series:
    """Which runs have learned: each run held to the pre-registered target on its own (the learned gate's test,
    :func:`attnrank.analysis.rules.learned_gate`, applied run by run).

    A run has learned when it completed, its final validation loss is at least ``margin`` nats below its bigram
    count model (:func:`baseline_losses`) and attention is worth at least ``worth`` nats in it (the ablation
    gain, from an ``attention_gain`` column or :func:`attnrank.analysis.ablation.attention_gain` of its ``path``; computed
    only for runs that pass the first test).

    Args:
        runs: a wide run table (:func:`attnrank.runs.tables.table` with ``long=False``).

    Returns a boolean Series on ``runs``'s index (False for a failed run).
    """
    out = pd.Series(False, index=runs.index)
    for i, r in runs.iterrows():
        loss = float(r.get("final_val_loss", math.nan))
        if r.get("status") != "complete" or not np.isfinite(loss):
            continue
        if loss - baseline_losses(r)["bigram"] > -margin:
            continue
        gain = float(r["attention_gain"]) if "attention_gain" in r else ablation.attention_gain(r)["attention_gain"]
        out[i] = bool(gain >= worth)
    return out


# --------------------------------------------------------------------------- freshly initialised models
def init_statistics(
    cfg: RunConfig, *, measures=("effective_rank", "attention_entropy"), bounds: bool = False, check: float = 1e-4
) -> pd.DataFrame:
    """Statistics of the attention logits of a run's freshly initialised model on its probe sequences.

    The model is :func:`attnrank.core.models.model_from_config` of ``cfg`` (exactly the weights its training starts
    from); the logits ``S = QK^T / (tau sqrt(d_head))`` are read at the attention function's hook
    point (:func:`attnrank.core.probe.attention_logits`) and their float64 softmax (causal for GPT-2)
    is checked against the model's own attention probabilities.

    Args:
        cfg: the run's config.
        measures: rank measures of the attention matrices (names in :data:`attnrank.core.rank.MEASURES`).
        bounds: also the P1 bound (:func:`attnrank.analysis.theory.taylor_rank_bound`) from each matrix's
            half-range ``M`` at relative tolerances 1e-2 and 1e-4 (``bound_rtol_1e-2``, ``bound_rtol_1e-4``).
        check: largest allowed difference between the softmax of the hooked logits and the model's
            attention probabilities.

    Returns:
        One row per ``layer, seq, head``: ``logit_sd`` (within-row sd of the visible logits,
        :func:`attnrank.analysis.baselines.logit_sd`), ``M`` (half-range of each row's visible logits,
        maximum over rows), one column per measure, the bounds if asked, and ``arch, tau,
        head_dim, seed, n``.

    Raises:
        RuntimeError: when the hooked logits do not reproduce the model's attention (by more than ``check``).
    """
    import numpy as np
    import torch

    _, tokenizer, _, probe_ids, _ = prepare_data(cfg)
    model = model_from_config(cfg, vocab_size=len(tokenizer), pad_token_id=tokenizer_pad_id(tokenizer))
    n = probe_ids.shape[-1]
    causal = architecture(cfg.arch).causal
    vis = visible_keys(n, causal)
    S = attention_logits(model, probe_ids).double()  # [L, B, H, n, n]
    A = torch.softmax(S.masked_fill(~vis, -torch.inf), -1)
    worst = float((A - attention_probabilities(model, probe_ids).double()).abs().max())
    if worst > check:
        raise RuntimeError(f"hooked logits do not reproduce the model's attention (largest difference {worst:.2g})")
    half = ((S.masked_fill(~vis, -torch.inf).amax(-1) - S.masked_fill(~vis, torch.inf).amin(-1)) / 2).amax(-1)
    L, B, H = S.shape[:3]
    idx = np.indices((L, B, H)).reshape(3, -1)
    df = pd.DataFrame(
        {
            "layer": idx[0],
            "seq": idx[1],
            "head": idx[2],
            "logit_sd": logit_sd(S, causal).reshape(-1).numpy(),
            "M": half.reshape(-1).numpy(),
            **{m: v.reshape(-1).numpy() for m, v in rank_measures(A, measures=list(measures)).items()},
        }
    )
    if bounds:
        for eps, col in ((1e-2, "bound_rtol_1e-2"), (1e-4, "bound_rtol_1e-4")):
            df[col] = [taylor_rank_bound(cfg.head_dim, M, eps, n) for M in df.M]
    return df.assign(arch=cfg.arch, tau=cfg.tau, head_dim=cfg.head_dim, seed=cfg.seed, n=n)


def init_means(configs, *, measures=("effective_rank", "attention_entropy"), bounds: bool = False) -> pd.DataFrame:
    """:func:`init_statistics` of each config, averaged over layers, probe sequences and heads.

    One row per config: ``arch, tau, head_dim, seed, n``, the mean ``logit_sd``, the median
    half-range ``M_median`` and the mean of each measure (and bound).
    """
    rows = []
    for cfg in configs:
        d = init_statistics(cfg, measures=measures, bounds=bounds)
        cols = [c for c in d.columns if c not in ("layer", "seq", "head", "arch", "tau", "head_dim", "seed", "n", "M")]
        rows.append(
            {
                "arch": cfg.arch,
                "tau": cfg.tau,
                "head_dim": cfg.head_dim,
                "seed": cfg.seed,
                "n": int(d.n.iloc[0]),
                **d[cols].mean().to_dict(),
                "M_median": float(d.M.median()),
            }
        )
    return pd.DataFrame(rows)


def init_std() -> float:
    """Standard deviation of the weight initialisation of both architectures (``initializer_range``).

    Raises:
        RuntimeError: when ModernBERT and GPT-2 differ (the chapters state one value).
    """
    values = {
        a: build_model(a, hidden_size=32, num_layers=1, num_heads=2, max_len=16, vocab_size=64).config.initializer_range
        for a in ARCHS
    }
    if len(set(values.values())) != 1:
        raise RuntimeError(f"the architectures are initialised with different standard deviations: {values}")
    return float(next(iter(values.values())))


# --------------------------------------------------------------------------- runs against the baselines
#: The count baselines, in the order a table shows them, with their labels.
BASELINES = {"unigram": "unigram", "bigram": "bigram", "two_sided": "two-sided", "context_free": "context-free"}


def gaps(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run: its final validation loss against each count baseline.

    Args:
        runs: a wide run table (one row per run, with the :data:`DATA_FIELDS`, ``tau``, ``seed``,
            ``status`` and ``final_val_loss``).

    Returns the columns ``key`` (when present), ``arch``, ``tau``, ``head_dim`` (when present), ``seed``,
    ``status``, ``final_val_loss``, each baseline of :data:`BASELINES` and ``gap_<baseline>`` (final
    loss minus baseline, nats; negative: below it), and ``attention_gain`` (nats: the loss with
    content-free attention minus the loss, :func:`attnrank.analysis.ablation.attention_gain`) when ``runs`` has it
    or has the ``path`` of stored runs to compute it from. A failed run keeps its row with NaN gaps.
    """
    if not len(runs):
        return pd.DataFrame(columns=["arch", "tau", "seed", "status", "final_val_loss", *BASELINES])
    rows = []
    for r in runs.to_dict("records"):
        base = baseline_losses(r)
        ok = r.get("status", "complete") == "complete" and math.isfinite(float(r["final_val_loss"]))
        loss = float(r["final_val_loss"]) if ok else math.nan
        row = {
            **{k: r[k] for k in ("key", "arch", "tau", "head_dim", "seed") if k in r},
            "status": r.get("status", "complete"),
            "final_val_loss": loss,
            **{b: base[b] for b in BASELINES},
            **{f"gap_{b}": loss - base[b] for b in BASELINES},
        }
        if "attention_gain" in r:
            row["attention_gain"] = float(r["attention_gain"]) if ok else math.nan
        elif "path" in r:
            row["attention_gain"] = ablation.attention_gain(r)["attention_gain"] if ok else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def flops_per_token(run) -> float:
    """Training FLOP per token of a run's model, from its sizes: ``6 N + 12 L n d`` (Kaplan et al. 2020),
    ``N`` the parameters without position embeddings (tied output layer counted once).

    Args:
        run: a config, a dict or a row with ``arch``, ``hidden_size``, ``num_layers``, ``max_len``, ``vocab_size``.
    """
    get = run.get if isinstance(run, dict) else (lambda k: getattr(run, k))
    d, L, n, V = (int(get(k)) for k in ("hidden_size", "num_layers", "max_len", "vocab_size"))
    # attention 4 d^2 + MLP 8 d^2 (ModernBERT's gated MLP of intermediate size 2 d: 6 d^2), biases and LayerNorms
    record = architecture(get("arch"))
    per_layer = record.layer_weights(d) + 13 * d
    mlm = not record.causal
    head = d * d + 3 * d if mlm else 0  # the masked LM's prediction head (dense, norm) before the decoder
    N = L * per_layer + V * d + head + (V if mlm else 0) + 2 * d
    return float(6 * N + 12 * L * n * d)
