"""Count-based unigram / bigram baselines (attnrank.analysis.baselines) against hand-computed values."""

import math

import numpy as np
import pytest

from attnrank.analysis import baselines
from attnrank.core.errors import ConfigError


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
    """GPT-2 scores next tokens (labels shifted); ModernBERT scores masked positions given the visible left token."""
    ids = np.array([[5, 6, 7, 8]])
    ctx, tgt = baselines.target_pairs(ids, np.array([[5, 6, -100, 8]]), "gpt2")
    assert ctx.tolist() == [5, 7] and tgt.tolist() == [6, 8]
    masked = np.array([[2, 4, 7, 3]])  # position 1 shows [MASK] (id 4), its label is 6
    ctx, tgt = baselines.target_pairs(masked, np.array([[-100, 6, -100, -100]]), "modernbert")
    assert ctx.tolist() == [2] and tgt.tolist() == [6]


def test_bad_input_is_a_config_error():
    """Out-of-range ids and a bad vocabulary size name the parameter."""
    with pytest.raises(ConfigError, match="vocab_size"):
        baselines.ngram_counts([0, 3], [1, 2], 3)
    with pytest.raises(ConfigError, match="vocab_size"):
        baselines.ngram_counts([0], [1], 0)
    with pytest.raises(ConfigError, match="arch"):
        baselines.target_pairs(np.zeros((1, 2), int), np.zeros((1, 2), int), "t5")


def _xor_corpus(n: int = 10):
    # every (left, right) in {0, 1}^2 exactly n times, the token between them 2 + (left xor right):
    # neither neighbour alone says anything about it, both together determine it
    pairs = np.array([(a, c) for a in (0, 1) for c in (0, 1)] * n)
    left, right = pairs[:, 0], pairs[:, 1]
    return left, 2 + (left ^ right), right


def test_two_sided_model_matches_hand_computed_values_on_a_corpus_where_both_neighbours_decide():
    """On the xor corpus one neighbour is worth nothing (log 2 for either bigram) and the two-sided model is
    near certain; every probability is the Witten-Bell formula of the module docstring, by hand."""
    n, V = 10, 4
    counts = baselines.two_sided_counts(*_xor_corpus(n), V)
    # unigram: tokens 2 and 3 are 2n of the 4n targets each: P = (2n + 1) / (4n + 4); P(0) = P(1) = 1 / (4n + 4)
    p_hi, p_lo = (2 * n + 1) / (4 * n + 4), 1 / (4 * n + 4)
    # each neighbour v is seen 2n times, followed by T(v) = 2 tokens (n times each)
    b_hi, b_lo = (n + 2 * p_hi) / (2 * n + 2), (2 * p_lo) / (2 * n + 2)
    q_hi, q_lo = b_hi**2 / p_hi, b_lo**2 / p_lo
    q = q_hi / (2 * q_hi + 2 * q_lo)  # the product of experts, normalised over the four tokens
    two_sided = (n + 1 * q) / (n + 1)  # c(l, r) = n, T(l, r) = 1, c(l, w, r) = n
    left, mid, right = _xor_corpus(1)
    out = baselines.two_sided_nll(counts, left, mid, right)
    assert out["n_targets"] == 4
    assert out["left_bigram"] == pytest.approx(-math.log(b_hi), rel=1e-12)
    assert out["right_bigram"] == pytest.approx(-math.log(b_hi), rel=1e-12)
    assert out["product"] == pytest.approx(-math.log(q), rel=1e-12)
    assert out["two_sided"] == pytest.approx(-math.log(two_sided), rel=1e-12)
    assert out["left_bigram"] > 0.9 * math.log(2) and out["two_sided"] < 0.1


def test_two_sided_probabilities_sum_to_one_for_seen_and_unseen_neighbours():
    """For every pair of neighbours (seen together, seen apart or never) the probabilities over the
    vocabulary sum to 1, and a pair never seen gives the product of the two bigrams."""
    V = 5
    counts = baselines.two_sided_counts(*_xor_corpus(3), V)
    for lft in range(V):
        for rgt in range(V):
            outs = [baselines.two_sided_nll(counts, [lft], [w], [rgt]) for w in range(V)]
            assert sum(math.exp(-o["two_sided"]) for o in outs) == pytest.approx(1.0, rel=1e-12)
            assert sum(math.exp(-o["product"]) for o in outs) == pytest.approx(1.0, rel=1e-12)
            if (lft, rgt) not in {(0, 0), (0, 1), (1, 0), (1, 1)}:
                assert all(o["two_sided"] == pytest.approx(o["product"], rel=1e-12) for o in outs)


def test_two_sided_model_on_independent_tokens_is_the_unigram():
    """On i.i.d. tokens the neighbours carry nothing: with much data every model tends to the entropy."""
    rng = np.random.default_rng(0)
    V, N = 6, 200_000
    p = np.array([0.4, 0.2, 0.15, 0.1, 0.1, 0.05])
    seq = rng.choice(V, size=N, p=p)
    counts = baselines.two_sided_counts(seq[:-2], seq[1:-1], seq[2:], V)
    test = rng.choice(V, size=20_000, p=p)
    out = baselines.two_sided_nll(counts, test[:-2], test[1:-1], test[2:], chunk=1000)
    entropy = float(-(p * np.log(p)).sum())
    for k in ("left_bigram", "right_bigram", "product", "two_sided"):
        assert out[k] == pytest.approx(entropy, abs=0.02)


def test_target_triples_read_the_visible_neighbours_of_masked_positions():
    """ModernBERT's two-sided pairs: the token at a masked position and its visible neighbours (may be [MASK])."""
    ids = np.array([[2, 4, 4, 9, 3]])  # positions 1 and 2 show [MASK] (id 4)
    labels = np.array([[-100, 6, 7, -100, -100]])
    left, mid, right = baselines.target_triples(ids, labels)
    assert left.tolist() == [2, 4] and mid.tolist() == [6, 7] and right.tolist() == [4, 9]
    with pytest.raises(ConfigError, match="labels"):
        baselines.target_triples(ids, np.array([[-100, -100, -100, -100, 5]]))


def _masked_batch(tokens, rng, V, mask_id, m=0.8, r=0.1):
    """Every token scored; shown as [MASK] with probability m, a uniform random id with probability r, else kept."""
    u = rng.random(tokens.shape)
    shown = np.where(u < m, mask_id, np.where(u < m + r, rng.integers(0, V, tokens.shape), tokens))
    return shown, tokens.copy()


def test_context_free_model_matches_hand_computed_values():
    """Vocabulary 4 ([MASK] = 3), unigram counts 2, 1, 0, 0 -> Laplace P = (3, 2, 1, 1) / 7; k = r = 0.1."""
    counts = baselines.ngram_counts([0, 0, 1], [0, 0, 1], 4)
    P = np.array([3, 2, 1, 1]) / 7
    x = np.array([[3, 0, 1]])  # [MASK], a shown 0 scoring 0 (kept or random), a shown 1 scoring 0 (random)
    y = np.array([[1, 0, 0]])
    want = [P[1], P[0] * (0.1 + 0.1 / 4) / (0.1 * P[0] + 0.1 / 4), P[0] * (0.1 / 4) / (0.1 * P[1] + 0.1 / 4)]
    got = baselines.context_free_nll(counts, x, y, mask_id=3, mask_replace_prob=0.8, random_replace_prob=0.1)
    assert got == pytest.approx(-np.log(want).mean(), rel=1e-12)


def test_context_free_model_is_the_expected_loss_of_the_masking_process():
    """On tokens drawn from a known unigram and masked as HF's collator does, the context-free loss equals its
    expectation (summed exactly over the shown token), beats the unigram by what the kept tokens give away, and
    with every scored token shown as [MASK] it is the unigram."""
    rng = np.random.default_rng(0)
    V, mask_id = 6, 5
    p = np.array([0.4, 0.3, 0.15, 0.1, 0.05, 0.0])
    train = rng.choice(V, size=400_000, p=p)
    counts = baselines.ngram_counts(train[:-1], train[1:], V)
    u = (counts["unigram"] + 1.0) / (counts["unigram"].sum() + V)
    k, r = 0.1, 0.1
    expected = 0.0
    for y in range(V):
        expected += p[y] * 0.8 * -np.log(u[y])
        for x in range(V):
            shown = k * (x == y) + r / V  # P(shown x | label y), shown as a token
            if x != mask_id:
                expected += p[y] * shown * -np.log(u[y] * (k * (x == y) + r / V) / (k * u[x] + r / V))
            else:  # a random id that happens to be [MASK]: read as [MASK]
                expected += p[y] * shown * -np.log(u[y])
    test = rng.choice(V, size=(200, 1000), p=p)
    x, y = _masked_batch(test, rng, V, mask_id)
    got = baselines.context_free_nll(counts, x, y, mask_id=mask_id, mask_replace_prob=0.8, random_replace_prob=0.1)
    unigram = baselines.ngram_nll(counts, x.reshape(-1), y.reshape(-1))["unigram"]
    assert got == pytest.approx(expected, abs=0.01)
    assert unigram - got > 0.05  # the kept tenth gives its tokens away
    x_all = np.full_like(test, mask_id)
    assert baselines.context_free_nll(
        counts, x_all, test, mask_id=mask_id, mask_replace_prob=1.0, random_replace_prob=0.0
    ) == pytest.approx(unigram, rel=1e-12)


def test_context_free_model_names_a_bad_parameter():
    counts = baselines.ngram_counts([0, 1], [1, 0], 3)
    with pytest.raises(ConfigError, match="random_replace_prob"):
        baselines.context_free_nll(counts, [[0]], [[1]], mask_id=2, mask_replace_prob=0.8, random_replace_prob=0.3)
    with pytest.raises(ConfigError, match="mask_replace_prob"):
        baselines.context_free_nll(counts, [[0]], [[1]], mask_id=2, mask_replace_prob=1.5, random_replace_prob=0.0)
    with pytest.raises(ConfigError, match="labels"):
        baselines.context_free_nll(counts, [[0]], [[-100]], mask_id=2, mask_replace_prob=0.8, random_replace_prob=0.1)
