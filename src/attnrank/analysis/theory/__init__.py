"""Propositions about the rank of softmax attention, as computable checks.

**One convention for logits and temperature, followed by every module here.** The logits of
one head are ``S = Q K^T / sqrt(d_h)``, an ``n x n`` matrix *without* the temperature (the
logits at ``tau = 1``). The attention matrix at temperature ``tau`` is
``A = softmax(S / tau)`` row-wise. A function that takes a ``tau`` divides ``S`` by it
exactly once (through :func:`softmax_attention`, or in its own formula, as
:func:`hardmax_gap_bound` does); a function without a ``tau`` works on ``S`` as given
(``tau = 1``, or a temperature-free quantity: argmaxes and gaps). No function returns
logits divided by ``tau``, so no caller can divide twice. ``sigma_1 >= ... >= sigma_n`` are
the singular values of ``A`` and ``rank_eps(A) = #{k : sigma_k > eps sigma_1}`` the relative
numerical rank (:func:`attnrank.core.rank.numerical_rank` with ``rtol=eps``). Functions work on
logits of shape ``[..., n, n]`` (any leading batch dimensions) in float64 unless stated
otherwise; bad input raises :class:`attnrank.core.errors.ConfigError` naming the parameter.

The propositions (stated, proved in sketch and checked in the theory chapter, and the
study's theorem as its reviewers restate it), one module each:

* **P0** the exact rank is full (:mod:`.exact`): :func:`exact_singular_values` (mpmath),
  :func:`causal_log10_det`.
* **P1** Taylor bound and staircase (:mod:`.taylor`): :func:`logit_halfrange`,
  :func:`taylor_rank_bound`, :func:`staircase_blocks`, :func:`staircase_slopes`.
* **P1'** saturation in head dimension and the i.i.d. Gaussian limit, and the **study's
  theorem** ``E[r_H] <= (1 - 1/e) n + 1`` (:mod:`.sampling`): :func:`sample_logits` (with
  ``head_dim=None`` for the limit), :func:`monte_carlo_rank`, :func:`expected_distinct`,
  :func:`study_bound`, :func:`monte_carlo_hardmax_rank`.
* **P2** the hardmax limit (:mod:`.hardmax`): :func:`hardmax_rank`,
  :func:`hardmax_gap_bound`, :func:`hardmax_threshold`, :func:`measured_threshold`.
* **P4, P5** toy limits on a permutation target (:mod:`.toy`):
  :func:`permutation_accuracy_bound`, :func:`normalised_kl_floor`, :func:`simplex_kl`.

The chapters' experiments on these propositions (tables of instances, cached) are in
:mod:`.tables`. Means with intervals are :func:`attnrank.analysis.stats.mean_ci`.
"""

from ._common import softmax_attention
from .exact import causal_log10_det, exact_singular_values
from .hardmax import (
    GapBound,
    HardmaxRank,
    hardmax_gap_bound,
    hardmax_rank,
    hardmax_threshold,
    measured_threshold,
    new_column_gap,
    top_gap,
)
from .sampling import expected_distinct, monte_carlo_hardmax_rank, monte_carlo_rank, sample_logits, study_bound
from .taylor import logit_halfrange, loglog_slope, staircase_blocks, staircase_slopes, taylor_rank_bound, taylor_terms
from .toy import normalised_kl_floor, permutation_accuracy_bound, simplex_kl

__all__ = [
    "HardmaxRank",
    "GapBound",
    "softmax_attention",
    "hardmax_rank",
    "hardmax_gap_bound",
    "hardmax_threshold",
    "measured_threshold",
    "top_gap",
    "new_column_gap",
    "logit_halfrange",
    "taylor_terms",
    "taylor_rank_bound",
    "staircase_blocks",
    "staircase_slopes",
    "loglog_slope",
    "expected_distinct",
    "study_bound",
    "sample_logits",
    "monte_carlo_hardmax_rank",
    "monte_carlo_rank",
    "exact_singular_values",
    "causal_log10_det",
    "permutation_accuracy_bound",
    "normalised_kl_floor",
    "simplex_kl",
]
