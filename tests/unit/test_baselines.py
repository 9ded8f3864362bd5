"""Count-based unigram / bigram baselines (attnrank.baselines) against hand-computed values."""

import math

import numpy as np
import pytest

from attnrank import baselines
from attnrank.errors import ConfigError


def _tiny():
    # training text "a b a b a c" with a=0, b=1, c=2: pairs (a,b) (b,a) (a,b) (b,a) (a,c)
    seq = np.array([0, 1, 0, 1, 0, 2])
    return baselines.ngram_counts(seq[:-1], seq[1:], 3)


def test_unigram_and_bigram_match_hand_computed_values():
    """Laplace unigram and Witten-Bell bigram on a six-token corpus, scored on three pairs by hand."""
    counts = _tiny()
    # unigram targets b, a, b, a, c: c(a)=2, c(b)=2, c(c)=1, N=5, V=3 -> P = (c+1)/8
    # bigram: context a has c=3, T=2 (b twice, c once); context b has c=2, T=1; context c unseen
    # P(c|a) = (1 + 2*2/8)/(3+2) = 0.3; P(a|c) = P(a) = 3/8 (unseen context); P(c|b) = (0 + 1*2/8)/3 = 1/12
    out = baselines.ngram_nll(counts, [0, 2, 1], [2, 0, 2])
    assert out["n_targets"] == 3
    assert out["unigram"] == pytest.approx(-(math.log(2 / 8) + math.log(3 / 8) + math.log(2 / 8)) / 3, rel=1e-12)
    assert out["bigram"] == pytest.approx(-(math.log(0.3) + math.log(3 / 8) + math.log(1 / 12)) / 3, rel=1e-12)


def test_bigram_probabilities_sum_to_one_over_the_vocabulary():
    """For every context (seen or not) the bigram's probabilities over all targets sum to 1."""
    counts = _tiny()
    for v in range(3):
        nll = [baselines.ngram_nll(counts, [v], [w])["bigram"] for w in range(3)]
        assert sum(math.exp(-x) for x in nll) == pytest.approx(1.0, rel=1e-12)


def test_target_pairs_follow_the_validation_loss():
    """GPT-2 scores next tokens (labels shifted); BERT scores masked positions given the visible left token."""
    ids = np.array([[5, 6, 7, 8]])
    ctx, tgt = baselines.target_pairs(ids, np.array([[5, 6, -100, 8]]), "gpt2")
    assert ctx.tolist() == [5, 7] and tgt.tolist() == [6, 8]
    masked = np.array([[2, 4, 7, 3]])  # position 1 shows [MASK] (id 4), its label is 6
    ctx, tgt = baselines.target_pairs(masked, np.array([[-100, 6, -100, -100]]), "bert")
    assert ctx.tolist() == [2] and tgt.tolist() == [6]


def test_bad_input_is_a_config_error():
    """Out-of-range ids and a bad vocabulary size name the parameter."""
    with pytest.raises(ConfigError, match="vocab_size"):
        baselines.ngram_counts([0, 3], [1, 2], 3)
    with pytest.raises(ConfigError, match="vocab_size"):
        baselines.ngram_counts([0], [1], 0)
    with pytest.raises(ConfigError, match="arch"):
        baselines.target_pairs(np.zeros((1, 2), int), np.zeros((1, 2), int), "t5")
