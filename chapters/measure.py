# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # What is the rank of an attention matrix?
#
# **Claim.** A softmax attention matrix never loses rank: in exact arithmetic it is
# invertible, so every "rank" reported for attention is a *numerical* rank, and the tolerance decides the
# answer. The study counts singular values above an absolute threshold of $10^{-8}$. We show on real attention
# from our trained ModernBERT and GPT-2 that this rule counts dimensions far below anything that matters (and below
# float32 round-off): when the temperature is so high that ModernBERT's attention is uniform and, to any practical
# tolerance, of rank one, it keeps counting about as many dimensions as a head has, plus one. Relative
# tolerances, the effective rank and the stable rank do see that limit. The book's primary measure is the
# effective rank, with the ranks at relative tolerances $10^{-2}$ and $10^{-4}$ and the stable rank reported
# beside it: of the measures that see the rank-one limit, it is the one that separates what causal attention
# attends to from what its mask alone imposes (the causal baseline below). This chapter answers the reviewers'
# fourth critique (why an absolute $10^{-8}$ threshold?).

# %% tags=["parameters", "hide-input"]
profile: str = "auto"  # compute profile: auto (paper on a GPU, quick on a CPU), ci, quick, paper or scale
seeds: list = None  # seeds: a list, or n for seeds 0..n-1; None: the profile's
taus: list = None  # temperature ratios τ of the grid; None: the profile's
head_dims: list = None  # head dimensions of the grid; None: the profile's
probe_size: int = 64  # probe sequences; confidence intervals need two
tau_grid_extreme: list = [0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]  # temperature ratios probed on trained models
dataset: str = None  # training corpus: shakespeare, stdlib or hf:NAME[:CONFIG]; None: ATTNRANK_DATASET or shakespeare

# %% tags=["hide-input"]
from attnrank import book
from attnrank.sections import measure

params = book.check_parameters(globals(), measure.section)
book.publish(measure.section(**params))

# %% [markdown]
# ## The runs
#
# Every trained-model chapter shares one sweep over temperature and head dimension (a cold build trains each run
# once). This chapter needs only the runs trained at the standard temperature $\tau = 1$ (temperature $T =
# \tau\sqrt{d_h}$) and the profile's standard head dimension, for both architectures and every seed. Each is
# probed twice: as trained, and at initialisation (the same architecture rebuilt from the same seed, which gives
# exactly the weights training started from). Of the sweep's runs {glue:text}`measure_diverged`, and
# {glue:text}`measure_n_not_probed` of the runs at $\tau = 1$ are left out of the probe for it: the chapter probes
# {glue:text}`measure_n_runs` runs.

# %% [markdown]
# The probe sequences are {glue:text}`measure_probe_size` held-out validation blocks, spread evenly over the
# validation plays (the plays never seen in training), of the run's full length $n$; no sequence is padded, so
# every matrix is $n \times n$.

# %% [markdown]
# ## What an attention matrix looks like
#
# Every number in this book is computed from matrices like those of {numref}`fig-measure_attention_patterns`: the
# attention of one head to the first tokens of a held-out sequence, row $i$ the weights query $i$ puts on each
# key $j$. GPT-2's rows see only the keys up to their own position (the causal mask), ModernBERT's see every key. At
# $\tau = 10^{-3}$ each row puts its weight on one key (the hardmax limit of the theory chapter); at $\tau = 10^{3}$
# it spreads it evenly over the keys it may see. The spectra on the right are what a rank measure reads: how many
# singular values stand out, and where the study's threshold $10^{-8}$ cuts them.
#
# ```{glue:figure} measure_attention_patterns
# :name: fig-measure_attention_patterns
# :alt: Grid of small heat maps of attention weights with the tokens on both axes, one row per model and state, one column per temperature, and a line chart of singular values at the end of each row.
#
# Attention of layer 1, head 1 of ModernBERT and GPT-2 on the first {glue:text}`measure_example_tokens` tokens of a
# held-out sequence (query down, key across; one colour scale for every panel, from the lightest at weight 0 to the
# darkest at weight 1), for the model a run started from and the trained one, each evaluated at $\tau = 10^{-3}$, $1$
# and $10^{3}$ with its weights fixed; right: the singular values of the row's three matrices (log axis; dotted: the
# study's threshold $10^{-8}$). {glue:md}`measure_attention_patterns__source`
# ```

# %% [markdown]
# ## Four ways to count
#
# Let $A$ be an $n \times n$ attention matrix with singular values $\sigma_1 \ge \dots \ge \sigma_n \ge 0$. Its
# rows are probability vectors, so $A\mathbf 1 = \mathbf 1$ and $\sigma_1 = \|A\|_2 \ge 1$. The measures
# compared here (all in `attnrank.core.rank`) are
#
# * the study's rule, $\operatorname{rank}_{\text{abs}}(A) = \#\{i : \sigma_i > 10^{-8}\}$;
# * relative tolerances, $\operatorname{rank}_{\varepsilon}(A) = \#\{i : \sigma_i > \varepsilon\,\sigma_1\}$
#   with $\varepsilon = 10^{-2}$ and $10^{-4}$;
# * the effective rank {cite}`roy2007effective` (the book's primary measure), $\exp\big(-\sum_i p_i \log p_i\big)$ with
#   $p_i = \sigma_i / \sum_j \sigma_j$: a continuous count, 1 for any rank-one matrix and
#   $n$ for the identity;
# * the stable rank $\|A\|_F^2 / \|A\|_2^2 = \sum_i \sigma_i^2 / \sigma_1^2$, between 1 and
#   the rank, dominated by the largest singular values.
#
# What does a numerical rank measure? By the Eckart–Young–Mirsky theorem, $\#\{i : \sigma_i > t\} =
# \min\{\operatorname{rank} B : \|A - B\|_2 \le t\}$: the rank at tolerance $t$ is the smallest rank of any
# matrix within spectral distance $t$ of $A$. So the study's rule asks how many dimensions survive a
# perturbation of size $10^{-8}$, for a matrix whose largest singular value is at least 1 and whose entries,
# stored in float32, carry round-off of relative size $2^{-24} \approx 6 \times 10^{-8}$. A relative tolerance
# asks the question at a scale tied to the matrix itself.
#
# The trained models run in float32. To separate the precision of the probabilities from the precision of the
# SVD, we also run a float64 copy of each model: the tempered attention then computes its softmax, and returns
# the probabilities, in float64 (same temperature, same masking after scaling).

# %% [markdown]
# From one SVD per matrix we read every measure (the same definitions as
# `attnrank.core.rank.rank_measures`; the tests check that they agree). A *pipeline* is the
# precision of the probabilities and the precision of the SVD; float64 for both is the reference.

# %% [markdown]
# The probe loop (`attnrank.analysis.spectra.probe_tables`, its tables cached): each trained model over the temperature grid
# (set with
# `attnrank.core.models.set_tau`, weights unchanged) and each initial model at $\tau = 1$,
# every pipeline, every measure, per sequence (averaged over layers and heads). Spectra are kept at $\tau = 1$
# and at the two ends of the grid.

# %% [markdown]
# ## The exact rank is always full
#
# Write $S = QK^\top / (\tau\sqrt{d_h})$ for the logits. For ModernBERT, $A = D^{-1} e^{S}$ with $D$ the
# diagonal of row sums, and $\det e^{S}$ is an analytic function of $(Q, K)$ that is not identically
# zero ($e^{\langle x, y\rangle}$ is a strictly positive-definite kernel), so $A$ is invertible for
# almost every input and weight ({doc}`theory`, P0). For GPT-2, $A$ is lower-triangular with a
# positive diagonal, so $\det A = \prod_i A_{ii} > 0$ and $\sigma_{\min} \le \min_i A_{ii}$. Exact
# rank is $n$ in both cases; what a numerical rank reports is where its threshold cuts a spectrum
# that has no zero in it.
#
# The spectra of real attention (trained at $\tau = 1$ and at initialisation, float64 throughout) decay over
# orders of magnitude without ever reaching zero. Across all matrices the median of the largest ratio of
# consecutive singular values, $\max_k \sigma_k / \sigma_{k+1}$, is {glue:text}`measure_gap_modernbert_trained:s`
# for trained ModernBERT and {glue:text}`measure_gap_gpt2_trained:s` for trained GPT-2
# ({glue:text}`measure_gap_modernbert_init:s` and {glue:text}`measure_gap_gpt2_init:s` at initialisation; where
# attention is close to uniform the spectrum is the staircase of {doc}`the theory chapter <theory>`, and its
# steps are the largest ratios), whereas a matrix of exact rank $r < n$ computed in float64 would drop by some
# $10^{13}$ at $k = r$, to round-off. The smallest singular value is tiny: its median is
# {glue:text}`measure_smin_modernbert_trained` (ModernBERT) and {glue:text}`measure_smin_gpt2_trained` (GPT-2) for the
# trained models and {glue:text}`measure_smin_modernbert_init` / {glue:text}`measure_smin_gpt2_init` at
# initialisation. It exceeds float64 round-off, $n\,\varepsilon_{64}\,\sigma_1$, in
# {glue:text}`measure_certified_modernbert_pct:.1f`% of the ModernBERT and {glue:text}`measure_certified_gpt2_pct:.1f`% of
# the GPT-2 matrices, so for those float64 arithmetic itself certifies full rank. For GPT-2 the determinant
# settles every case exactly: the smallest diagonal entry of trained GPT-2 attention has median
# {glue:text}`measure_mindiag_gpt2_trained` (the weight some token puts on its own position), the determinant is
# about $10^{x}$ with median $x$ = {glue:text}`measure_logdet_gpt2_trained`: tiny, never zero; and
# $\sigma_{\min} \le \min_i A_{ii}$ holds in {glue:text}`measure_diag_bound_pct:.1f`% of the matrices.

# %% [markdown]
# ```{glue:figure} measure_spectra_tau1
# :name: fig-measure_spectra_tau1
# :alt: Line charts of the singular values of real attention matrices against their index on a log scale, ModernBERT and GPT-2, trained and at initialisation, with horizontal threshold lines.
#
# Singular values of attention matrices at τ = 1 (median over layers, heads, {glue:text}`measure_probe_size` validation
# sequences and seeds; band: 10-90% of matrices), float64 probabilities and SVD, n = {glue:text}`measure_n`. Grey lines:
# where each measure cuts (relative thresholds at the panel's median σ₁) and the round-off levels of float32 and float64
# {glue:md}`measure_spectra_tau1__source`
# ```

# %% [markdown]
# ## The causal baseline
#
# A causal matrix can never be uniform: its row $i$ has only $i$ keys. The most spread-out causal attention is
# the uniform causal matrix $U_n$ with $(U_n)_{ij} = 1/i$ for $j \le i$, which is what every GPT-2 head tends to
# at high temperature. It is lower-triangular with diagonal $1/i$, hence invertible; its spectrum decays
# smoothly, so its "rank" depends on the measure. At the probe length $n$ = {glue:text}`measure_n`, $U_n$ has
# rank {glue:text}`measure_causal_rank_rtol_1e-2:.0f` at rtol $10^{-2}$,
# {glue:text}`measure_causal_rank_rtol_1e-4:.0f` at rtol $10^{-4}$,
# {glue:text}`measure_causal_rank_atol_1e-8:.0f` by the study's rule, effective rank
# {glue:text}`measure_causal_effective_rank:.1f` and stable rank {glue:text}`measure_causal_stable_rank:.2f`.
# GPT-2 ranks are only meaningful against this baseline: a GPT-2 rank at or below it is what causal attention
# that ignores the content altogether already has. (ModernBERT's content-free baseline, uniform attention, has rank
# one under every measure.)
#
# The table below divides GPT-2's rank under each measure by the baseline's, per run (at $\tau = 1$, float64
# throughout), and gives the mean ratio with a 95% interval over the {glue:text}`measure_n_gpt2_runs` GPT-2
# runs. A ratio of 1 means that a content-blind causal matrix scores the same: the measure reads the mask, not
# the attention. The column "Uₙ / n" is the baseline as a fraction of the largest value a measure can take. At
# rtol $10^{-2}$ the uniform causal matrix already has rank {glue:text}`measure_causal_rank_rtol_1e-2:.0f` of
# {glue:text}`measure_n` ({glue:text}`measure_causal_frac_rank_rtol_1e-2:.2f` of $n$): causal attention can
# hardly score above its mask under this measure, whatever it attends to, and trained GPT-2's rank at rtol
# $10^{-2}$ is {glue:text}`measure_gpt2_ratio_rank_rtol_1e-2` times the baseline's (at initialisation
# {glue:text}`measure_gpt2_init_ratio_rank_rtol_1e-2`). The effective rank of the baseline is
# {glue:text}`measure_causal_frac_effective_rank:.2f` of $n$, which leaves room on both sides for attention that
# depends on the content; trained GPT-2's effective rank is {glue:text}`measure_gpt2_ratio_effective_rank` times
# the baseline's (at initialisation {glue:text}`measure_gpt2_init_ratio_effective_rank`). This is why the book's
# primary measure is the effective rank.

# %% [markdown]
# ```{attnrank-table} measure_causal_ratios
# Each measure of GPT-2's attention beside the uniform causal matrix Uₙ: its value at initialisation and trained,
# and the ratio to Uₙ's with a 95% interval over runs.
# ```

# %% [markdown]
# On the same matrices the measures can disagree widely. For trained ModernBERT at $\tau = 1$ the rank is
# {glue:text}`measure_modernbert_trained_rank_rtol_1e-2:.2f` at rtol $10^{-2}$,
# {glue:text}`measure_modernbert_trained_rank_rtol_1e-4:.1f` at rtol $10^{-4}$ and
# {glue:text}`measure_modernbert_trained_rank_atol_1e-8:.1f` by the study's rule (of $n$ = {glue:text}`measure_n`);
# its effective rank is {glue:text}`measure_modernbert_trained_effective_rank:.2f` and its stable rank
# {glue:text}`measure_modernbert_trained_stable_rank:.2f`. The figure draws the uniform causal baseline beside GPT-2's
# points (black bars), so a reader sees under each measure how far GPT-2 is from content-blind attention.

# %% [markdown]
# ```{glue:figure} measure_ranks_tau1
# :name: fig-measure_ranks_tau1
# :alt: Points with interval bars for every rank measure of trained and initial ModernBERT and GPT-2 at temperature 1, beside the uniform causal matrix.
#
# Every rank measure at τ = 1, at initialisation and trained (per run: mean over {glue:text}`measure_probe_size`
# validation sequences, layers and heads; points: mean over runs, bars: 95% CI over runs), float64 throughout. Black
# bars: the uniform causal matrix Uₙ; dotted: n = {glue:text}`measure_n` {glue:md}`measure_ranks_tau1__source`
# ```
#
# ```{attnrank-table} measure_ranks_tau1_table
# The mean rank at τ = 1 on every measure, per model, at initialisation and trained: the runs of the figure above,
# re-probed in float64 on {glue:text}`measure_probe_size` validation sequences. The other chapters quote each run's own
# probe taken during training (float32), so a value there can differ from this one in the last digit.
# ```

# %% [markdown]
# ## Temperature without bound
#
# Now the reviewers' argument. Take a trained model and change only its temperature (`set_tau`, weights fixed).
# As $\tau \to \infty$ the logits $S/\tau$ shrink to zero and every ModernBERT row tends to the uniform distribution:
# $A \to \tfrac1n \mathbf 1 \mathbf 1^\top$, of rank one. Expanding around it,
#
# $$A = \tfrac1n\mathbf 1\mathbf 1^\top + \tfrac{1}{n\tau}\, S_0\big(I - \tfrac1n \mathbf 1\mathbf 1^\top\big) + O(\tau^{-2}),
# \qquad S_0 = QK^\top/\sqrt{d_h},$$
#
# and $S_0$ has rank at most $d_h$. So the singular values beyond the first fall in blocks: up to $d_h$ of order
# $\tau^{-1}$, then a block of order $\tau^{-2}$, and so on (the staircase of the theory chapter). A relative
# tolerance $\varepsilon$ stops counting a block once it falls below $\varepsilon\sigma_1$; an absolute
# tolerance of $10^{-8}$ keeps counting a block until its size itself is below $10^{-8}$. Once the second block
# is gone, the study's rule reports about $d_h + 1$ (here {glue:text}`measure_dh_plus_1`): the head dimension,
# not the attention pattern. Extrapolating $\sigma_2 \propto 1/\tau$ from the largest temperature of the grid,
# ModernBERT's median $\sigma_2$ would fall below $10^{-8}$, and the study's rule read one, only at $\tau \approx$
# {glue:text}`measure_tau_atol_one`. GPT-2 rows tend instead to the uniform causal rows, so every GPT-2 measure
# should tend to its value for $U_n$ (dashed lines). In the other direction, $\tau \to 0$, each row tends to a
# one-hot vector at its largest logit and every measure tends to the number of distinct argmax columns $r_H$.
#
# At $\tau$ = {glue:text}`measure_tau_max` the ModernBERT rank at rtol $10^{-2}$ is
# {glue:text}`measure_modernbert_taumax_rank_rtol_1e-2:.2f`, the effective rank
# {glue:text}`measure_modernbert_taumax_effective_rank:.2f` and the stable rank
# {glue:text}`measure_modernbert_taumax_stable_rank:.3f`, while the study's rule still counts
# {glue:text}`measure_modernbert_taumax_rank_atol_1e-8:.1f` of $n$ = {glue:text}`measure_n` dimensions, against $d_h +
# 1$ = {glue:text}`measure_dh_plus_1` (rtol $10^{-4}$: {glue:text}`measure_modernbert_taumax_rank_rtol_1e-4:.1f`; the
# finer tolerance needs a higher temperature to reach one). For GPT-2 at the same temperature, the rank at rtol
# $10^{-2}$ is {glue:text}`measure_gpt2_taumax_rank_rtol_1e-2:.1f` against
# {glue:text}`measure_causal_rank_rtol_1e-2:.0f` for $U_n$ and the effective rank
# {glue:text}`measure_gpt2_taumax_effective_rank:.1f` against {glue:text}`measure_causal_effective_rank:.1f`. At
# $\tau$ = {glue:text}`measure_tau_min` the rank at rtol $10^{-2}$ is
# {glue:text}`measure_modernbert_taumin_rank_rtol_1e-2:.1f` (ModernBERT) and
# {glue:text}`measure_gpt2_taumin_rank_rtol_1e-2:.1f` (GPT-2), against
# {glue:text}`measure_modernbert_taumin_argmax:.1f` and {glue:text}`measure_gpt2_taumin_argmax:.1f` distinct argmax
# columns.

# %% [markdown]
# ```{glue:figure} measure_ranks_vs_tau
# :name: fig-measure_ranks_vs_tau
# :alt: Line charts of every rank measure against the evaluation temperature on a log axis, one panel per model.
#
# Rank measures of trained models (trained at τ = 1, dash-dotted line) when only the temperature is changed, $\tau$ from
# {glue:text}`measure_tau_min` to {glue:text}`measure_tau_max`; float64 probabilities and SVD; per run the mean over
# {glue:text}`measure_probe_size` validation sequences, then the mean over runs, band: 95% CI over runs. Dashed: each
# measure's value for the uniform causal matrix Uₙ (GPT-2) {glue:md}`measure_ranks_vs_tau__source`
# ```

# %% [markdown]
# The spectra show why. At high temperature the ModernBERT spectrum is one singular value near 1, a first block of
# $d_h$ values far below it, and a second block lower again; the relative thresholds cut above the first block,
# the study's rule below it. At low temperature rows are nearly one-hot: the spectrum stays near 1 for a few
# values and then plunges, far below round-off (values under $10^{-20}$ run off the bottom of the plot). Lower
# precision replaces the tail by round-off noise: at $\tau$ = {glue:text}`measure_tau_max` the median smallest
# ModernBERT singular value is {glue:text}`measure_floor_ref` in float64, {glue:text}`measure_floor_probs32` from
# float32 probabilities and {glue:text}`measure_floor_svd32` from a float32 SVD: compare the study's threshold,
# $10^{-8}$, with the smallest relative one, $10^{-4}\sigma_1$.

# %% [markdown]
# ```{glue:figure} measure_spectra_extremes
# :name: fig-measure_spectra_extremes
# :alt: Line charts of the singular values of attention at the lowest and highest temperature, on a log scale, for ModernBERT and GPT-2.
#
# Singular values of trained attention at the ends of the temperature grid and at τ = 1 (median and 10-90% band over
# matrices), for each precision pipeline; n = {glue:text}`measure_n`. Grey lines as in
# {numref}`fig-measure_spectra_tau1`
# {glue:md}`measure_spectra_extremes__source`
# ```

# %% [markdown]
# ## Float32 or float64?
#
# The training probe stores float32 probabilities; a GPU would also do the SVD in float32. Which measures
# survive? A backward-stable SVD in precision $\varepsilon$ returns singular values with absolute errors up to
# about $\varepsilon\,\sigma_1$ ($\varepsilon_{32} \approx
# 1.2 \times 10^{-7}$). Rounding the probabilities to float32 changes each entry by a
# relative $2^{-24}$ at most; for spread-out rows (entries near $1/n$) these errors add up to a perturbation of
# spectral norm of order $\varepsilon_{32}/\sqrt n$ (Weyl: no singular value moves by more). Any measure whose
# threshold sits well above these levels is safe; the study's $10^{-8}$ sits among them. The largest
# disagreement with the float64 reference over both architectures and all temperatures, in units of rank, is
# {glue:text}`measure_dev_rtol2:.2f` for rtol $10^{-2}$, {glue:text}`measure_dev_rtol4:.2f` for rtol $10^{-4}$,
# {glue:text}`measure_dev_eff` for the effective rank and {glue:text}`measure_dev_stable` for the stable
# rank, but {glue:text}`measure_dev_atol:.1f` for the study's rule (table below; float32 probabilities:
# {glue:text}`measure_dev_atol_probs:.1f`, float32 SVD: {glue:text}`measure_dev_atol_svd:.1f`).

# %% [markdown]
# ```{glue:figure} measure_precision
# :name: fig-measure_precision
# :alt: Line charts of each rank measure against temperature when the probabilities or the SVD are computed in float32 or float64, the float64 reference in bold.
#
# Each rank measure of trained models against $\tau$ for three precision pipelines (bold: float64 reference; solid
# ModernBERT, dashed GPT-2); mean over runs of each run's mean over {glue:text}`measure_probe_size` validation sequences
# {glue:md}`measure_precision__source`
# ```
#
# ```{attnrank-table} measure_precision_deviation
# The largest difference of each measure from the float64 reference when the attention probabilities or the singular
# value decomposition are computed in float32.
# ```

# %% [markdown]
# ## Why not an absolute $10^{-8}$ threshold? The measures this book uses
#
# *Why an absolute $10^{-8}$ threshold?* The evidence above says it should not be used to
# compare attention ranks:
#
# 1. it measures a property no softmax matrix lacks (full rank holds exactly), at a scale
#    eight orders of magnitude below $\sigma_1 \ge 1$, where it counts directions that change
#    $A$ by less than float32 round-off;
# 2. it depends on the arithmetic: with float32 probabilities or a float32 SVD it changes by
#    up to {glue:text}`measure_dev_atol:.1f` ranks while every other measure moves by at most
#    {glue:text}`measure_dev_others`;
# 3. it does not see the rank-one limit of uniform attention: at high temperature it counts
#    the head dimension (the verdict below).
#
# The book therefore reports the **effective rank** as its primary measure
# (`attnrank.analysis.rules.PRIMARY_MEASURE`): it has no threshold at all (it weighs every singular value by its
# share), so it is scale-free, insensitive to precision, continuous, and it goes to 1 when attention becomes
# uniform; and unlike the rank at rtol $10^{-2}$, under which the content-free uniform causal matrix already
# scores {glue:text}`measure_causal_frac_rank_rtol_1e-2:.2f` of the largest possible value, it leaves GPT-2's
# attention room to differ from what its causal mask alone imposes (table above). Beside it: the ranks at rtol
# $10^{-2}$ and $10^{-4}$ (counts above a cut tied to $\sigma_1$; the finer one still above float32 round-off)
# and the
# **stable rank** (how far $A$ is from rank one; it ignores the tail and barely sees head
# dimension). Every verdict computed from a rank is also shown under each of these measures in
# {numref}`tab-conventions-measures`. In the trained-model chapters the probabilities come from the float32 models
# of the training probe and every SVD is computed in float64; this chapter's float64 pipelines show which
# measures that rounding can move. The study's rule is still recorded, so its numbers can be compared with the
# study's.
#
# ## Verdict
#
# **Rule** (version 2, changed after looking on 2026-11-30: see {doc}`changes`). At the largest temperature of the grid, measure ModernBERT
# (whose limit is the rank-one uniform matrix) with the float64 reference pipeline and express each measure as
# excess rank $e = (\text{rank} - 1)/(n - 1)$: 0 at rank one, 1 at full rank, averaged over each run's probe
# sequences, with a Student-t 95% interval over runs (`attnrank.analysis.stats.mean_ci` with the runs as clusters). A
# measure *detects* the rank-one limit if the whole interval of $e$ lies below {glue:text}`measure_e_max`, and
# *misses* it if the whole interval lies above (`attnrank.analysis.verdicts.classify`). The critique
# is **supported** if the study's rule misses the limit while the rank at rtol $10^{-2}$ and the effective rank
# both detect it; **not supported** if the study's rule detects it too, or if the rank at rtol $10^{-2}$ or the
# effective rank misses it as well; **inconclusive at this scale** otherwise, or if the grid stops below $\tau$
# = {glue:text}`measure_tau_high`.
#

# %% [markdown]
# **Verdict:** {glue:md}`measure_badge` {glue:md}`measure_summary` Regime: {glue:md}`measure_regime`.
#
# At $\tau$ = {glue:text}`measure_tau_max` the expansion above decides this verdict before any model is measured: a
# block of about $d_h$ singular values beyond the first is of order $1/\tau$, far below any practical tolerance and far
# above $10^{-8}$, so the study's rule counts about $d_h + 1$. It is a check of that arithmetic, listed apart from the claims on the {doc}`first page <intro>`; at the temperatures in use
# the question of the threshold is answered by claim (iii), whose sign turns on how rank is counted ({doc}`temp`).
