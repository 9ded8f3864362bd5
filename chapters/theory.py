# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Theory: what the rank of a softmax attention matrix can be
#
# **Claim (iv) of the study, in our words.** At low temperature the rank of an attention
# matrix has a simple description, and as a function of the head dimension it is bounded above: with hardmax
# attention (the zero-temperature limit), orthonormal inputs and random Gaussian query and key projections, the
# expected rank of an $n \times n$ attention matrix is at most $(1 - 1/e)\,n + 1 \approx 0.63\,n$; small heads
# stay below it and larger heads approach it {cite}`min2023efficiency`.
#
# This chapter states that theorem and five propositions around it in our own words, sketches each proof, and
# checks every one on random instances. A proposition is a bound or an identity, so a check counts the instances
# tested and the violations found. The propositions explain the rest of the book: why every "rank" is a
# numerical rank (P0), why small logits cap the rank by a staircase in the head dimension (P1), what the rank of
# random attention tends to as heads grow (P1'), and what the study's low-temperature rank is (P2 and the
# theorem).
#
# **Notation.** One head has queries and keys $Q, K \in \mathbb{R}^{n \times d_h}$ and logits
# $S = QK^\top / \sqrt{d_h}$, and $\tau$ is the temperature *ratio* ($\tau = 1$ is the standard transformer
# {cite}`vaswani2017attention`, the study's cold setting is $\tau = 10^{-3}$). The attention matrix is $A =
# \operatorname{softmax}(S/\tau)$ row by row (where no $\tau$ is written, $\tau = 1$), with singular values
# $\sigma_1 \ge \dots \ge \sigma_n$. Because every row of $A$ sums to one, $A\mathbf{1} = \mathbf{1}$ and
# $\sigma_1 \ge 1$. The relative numerical rank is $\operatorname{rank}_\varepsilon(A) = \#\{k : \sigma_k >
# \varepsilon\,\sigma_1\}$ and the study's rule is the absolute count $\#\{k : \sigma_k > 10^{-8}\}$. Finally
# $r_m = \binom{d_h + m}{m}$ is the number of monomials of degree at most $m$ in $d_h$ variables. All functions
# used here live in `attnrank.analysis.theory`, the checks below in
# `attnrank.sections.theory` (tested in
# `tests/unit/test_theory.py`).

# %% tags=["parameters", "hide-input"]
profile: str = "auto"  # compute profile: auto (paper on a GPU, quick on a CPU), ci, quick, paper or scale
seed: int = 0  # seed of the random logit matrices every check draws
head_dims: list = None  # head dimensions of the grid; None: the profile's
mc_samples: int = None  # random matrices per Monte Carlo estimate; None: the profile's
dataset: str = None  # training corpus of the sequence-length runs; None: ATTNRANK_DATASET or shakespeare

# %% tags=["hide-input"]
from attnrank import book
from attnrank.sections import theory

params = book.check_parameters(globals(), theory.section)
book.publish(theory.section(**params))

# %% [markdown]
# ## P0. The exact rank is always full
#
# **Statement.** If $Q$ and $K$ are drawn from any distribution with a density, then $A$ is
# invertible with probability one, for every head dimension $d_h \ge 1$ and every temperature $\tau > 0$. For
# causal attention, $A$ is invertible for *every* $Q, K$.
#
# **Proof sketch.** $A = D^{-1} \exp(S)$ with $D$ the diagonal matrix of row sums, so
# $\det A \ne 0$ exactly when $\det \exp(QK^\top/c) \ne 0$. That determinant is a real-analytic
# function of $(Q, K)$. It is not identically zero: for $Q = K$ with distinct rows,
# $\exp(QQ^\top / c)$ is the Gram matrix of the kernel $e^{\langle x, y\rangle / c}$, which
# is strictly positive definite, so the determinant is positive. An analytic function that is
# not identically zero vanishes only on a set of measure zero. A causal $A$ is
# lower-triangular with a positive diagonal, so $\det A = \prod_i A_{ii} > 0$; its
# eigenvalues are the $A_{ii}$, and $\sigma_{\min}(A) \le |\lambda|$ for every eigenvalue
# $\lambda$ (take a unit eigenvector $v$: $\|Av\| = |\lambda|$), so
# $\sigma_{\min}(A) \le \min_i A_{ii}$.
#
# **Consequence.** Every "rank" of an attention matrix in this book, the study's included, is
# a *numerical* rank, and its tolerance decides the answer. The hardest case is the smallest head, $d_h = 1$.
# Below we take random logits at $\tau = 1$, compute the singular values of $A$ in float64 and again in
# high-precision arithmetic (`mpmath`, with exp, the row normalisation and the SVD all in that precision), and
# count the rank that float64 reports with NumPy's default tolerance $\sigma_1 n \epsilon_{64}$.

# %% [markdown]
# ```{glue:figure} theory_p0_spectrum
# :name: fig-theory_p0_spectrum
# :alt: Singular values of a few random softmax matrices against their index, computed exactly and in float64, on a log scale.
#
# P0: singular values of $\operatorname{softmax}(S)$ for head dimension {glue:text}`theory_p0_d`, $n$ =
# {glue:text}`theory_p0_n`, $\tau = 1$, in float64 and in {glue:text}`theory_p0_digits`-digit arithmetic
# ({glue:text}`theory_profile` profile, {glue:text}`theory_p0_inst` random instances).
# {glue:md}`theory_p0_spectrum__source`
# ```

# %% [markdown]
# With $d_h$ = {glue:text}`theory_p0_d` and $n$ = {glue:text}`theory_p0_n`, float64 with the default tolerance
# reports {glue:text}`theory_p0_float_rank` on the
# {glue:text}`theory_p0_inst` instances, while {glue:text}`theory_p0_digits`-digit arithmetic resolves every
# singular value: the smallest lies between $10^{x}$ with $x$ = {glue:text}`theory_p0_minlog_min` and
# {glue:text}`theory_p0_minlog_max`, tiny but not zero. The float64 curve flattens at rounding noise, and
# every count of "rank" is a statement about where that noise is cut. For causal attention the log-determinant
# $\log_{10}\det A$ is finite on all {glue:text}`theory_p0_causal_inst` instances (smallest
# {glue:text}`theory_p0_causal_logdet_min`), as the triangular structure demands.
#
# **Check P0:** {glue:text}`theory_p0_tested` instances tested (exact SVD, and causal
# determinant with $\sigma_{\min} \le \min_i A_{ii}$), {glue:text}`theory_p0_violations` violations.
#
# ## P1. The Taylor bound and the staircase: why a larger head raises the rank
#
# **Statement.** Let $M = \max_i \tfrac12(\max_j S_{ij} - \min_j S_{ij})$ be the largest
# half-range of a row of logits. Then for every $m \ge 0$
#
# $$\sigma_{r_m + 1}(A) \;\le\; \frac{e^{2M} M^{m+1}}{(m+1)!},$$
#
# hence
#
# $$\operatorname{rank}_\varepsilon(A) \le \min\Big\{ r_m : \frac{e^{2M} M^{m+1}}{(m+1)!} \le \varepsilon \Big\}.$$
#
# Moreover, for $A(\beta) = \operatorname{softmax}(\beta S_0)$ with $\beta \to 0$ the singular values fall in
# blocks: $\sigma_k = \Theta(\beta^m)$ for $r_{m-1} < k \le r_m$.
#
# **Proof sketch.** Subtract each row's mid-range $c_i$ (softmax does not change), so that
# $|S_{ij} - c_i| \le M$, and expand $e^x = \sum_{k \le m} x^k / k! + R$ with $|R| \le e^M M^{m+1}/(m+1)!$. Each
# term $(q_i^\top k_j/c - c_i)^k$ is a polynomial of degree $\le k$ in the key $k_j$, so the truncated
# exponential lies in the span of the $r_m$ key monomials of degree $\le m$: its rank is at most $r_m$. The row
# sums are at least $n e^{-M}$, so $A$ is a rank-$r_m$ matrix plus a remainder with entries at most
# $e^{2M}M^{m+1}/((m+1)!\,n)$, whose spectral norm is at most $n$ times that. Eckart–Young gives the bound on
# $\sigma_{r_m+1}$; $\sigma_1 \ge 1$ turns it into the rank bound. For the staircase, the $m$-th Taylor term
# carries the factor $\beta^m$ and adds at most $r_m - r_{m-1}$ new directions.
#
# The bound matters at initialisation: with standard weight initialisation the logits are small, and the rank at
# a tolerance $\varepsilon$ is then capped by $r_1 = d_h + 1$ or $r_2 = \binom{d_h+2}{2}$. The cap grows with
# $d_h$, but it is an upper bound, not a prediction: when the rank sits below the cap a larger head need not
# raise it, and whether the initial rank of the trained models grows with $d_h$ at a fixed width is measured,
# not assumed, in {doc}`headdim`.
#
# **The staircase, measured.** We take one random $S_0 = QK^\top/\sqrt{d_h}$ with $d_h = 4$,
# compute the singular values of $\operatorname{softmax}(\beta S_0)$ in float64 for
# {glue:text}`theory_stair_nbetas` values of $\beta$ between $10^{-2}$ and $10^{-1}$, and fit the exponent of
# $\beta$ for each $\sigma_k$ by least squares on the log–log scale.

# %% [markdown]
# ```{attnrank-table} theory_staircase_blocks
# The blocks of the staircase spectrum near uniform attention: for each degree m the singular values k it spans,
# whether the block is clean, and the median fitted slope against β with its largest deviation.
# ```
#
# ```{glue:figure} theory_p1_staircase
# :name: fig-theory_p1_staircase
# :alt: Singular values of softmax matrices against the logit scale on log axes, grouped in the blocks of the Taylor staircase, and their slopes.
#
# P1 staircase: singular values of $\operatorname{softmax}(\beta S_0)$ against $\beta$ (left, coloured by predicted
# block $m$) and fitted exponents (right) for one random $S_0$ with head dimension {glue:text}`theory_stair_d`, $n$ =
# {glue:text}`theory_stair_n` ({glue:text}`theory_profile` profile, 1 instance, {glue:text}`theory_stair_nbetas` values
# of $\beta$). {glue:md}`theory_p1_staircase__source`
# ```

# %% [markdown]
# The blocks of equal exponent are exactly the predicted ones for the {glue:text}`theory_stair_nblocks` blocks
# that stay (at least {glue:text}`theory_stair_clean_pct` of their singular values) above the float64 floor, $k$
# = {glue:text}`theory_stair_blocks` (that is $r_0, r_1, r_2, \dots$ for $d_h$ = {glue:text}`theory_stair_d`),
# with median fitted exponents {glue:text}`theory_stair_slopes`; the largest deviation of any single singular
# value from its block's exponent is {glue:text}`theory_stair_maxdev:.3f`.
#
# **The bound against the measured rank.** Next, random logits for head dimensions
# {glue:text}`theory_ty_dims`, scaled to {glue:text}`theory_ty_nscales` logit sizes (multipliers
# {glue:text}`theory_ty_scales` of unit-variance logits), at tolerances {glue:text}`theory_ty_eps`. Each point
# is one instance; the bound must never be below the measured rank.

# %% [markdown]
# ```{glue:figure} theory_p1_bound
# :name: fig-theory_p1_bound
# :alt: Scatter plot of the measured numerical rank against the Taylor bound for random logits, with the equality line.
#
# P1 bound: measured numerical rank against the Taylor bound, n = {glue:text}`theory_ty_n`, head dimensions 1-8, logit
# multipliers 0.03-3 ({glue:text}`theory_profile` profile, {glue:text}`theory_ty_inst` instances per setting,
# {glue:text}`theory_ty_points` points); dashed: equality. {glue:md}`theory_p1_bound__source`
# ```

# %% [markdown]
# Of the {glue:text}`theory_ty_points` (instance, tolerance) points, {glue:text}`theory_ty_informative` have a
# bound below $n$ = {glue:text}`theory_ty_n`, and in {glue:text}`theory_ty_tight` of those the bound is attained
# exactly: it is a worst case, driven by the widest row. In the regime of standard initialisation (logits of
# standard deviation {glue:text}`theory_ty_ex_scale`, $d_h$ = {glue:text}`theory_ty_ex_d`, half-range $M$ =
# {glue:text}`theory_ty_ex_M:.2f`) the bound gives {glue:text}`theory_ty_ex_bound_2` at $\varepsilon = 10^{-2}$
# and {glue:text}`theory_ty_ex_bound_4` at $\varepsilon = 10^{-4}$ (capped at $n$), while the median measured
# ranks are {glue:text}`theory_ty_ex_meas_2:.1f` and {glue:text}`theory_ty_ex_meas_4:.1f`, at or just below
# $r_1$ = {glue:text}`theory_ty_r1` and $r_2$ = {glue:text}`theory_ty_r2`: the staircase is sharper than the
# bound, and at small logits the rank is set by the Taylor degree that the tolerance lets through.
#
# **Check P1:** {glue:text}`theory_p1_tested` comparisons (rank bound, singular-value bound for
# $m \le 3$, staircase block exponents within {glue:text}`theory_stair_tol`), {glue:text}`theory_p1_violations`
# violations.
#
# ## P1'. Saturation in the head dimension
#
# **Statement.** With independent standard Gaussian $Q, K$ and the standard
# $1/\sqrt{d_h}$ scaling, the logits $S$ converge in distribution, as $d_h \to \infty$, to a matrix $G/\tau$ of
# independent standard Gaussians. Every rank measure is a continuous function of $S$ away from ties of singular
# values with the threshold, so it converges to its value for $\operatorname{softmax}(G/\tau)$ as $d_h$ grows.
# The statement is about the limit only: it does not say from which side the limit is approached, so the limit
# is not a ceiling in general (for small $d_h$ the logits are products of Gaussians, with heavier tails than the
# limit's), and the direction is read off the measurements below.
#
# **Proof sketch.** $S_{ij}/\tau = \sum_{l} Q_{il}K_{jl} / (\tau\sqrt{d_h})$ is a normalised sum of
# $d_h$ independent products of unit variance; by the multivariate central limit theorem the whole matrix tends
# to a Gaussian matrix, whose covariance is the identity because $\mathbb{E}[S_{ij}S_{i'j'}] = 0$ unless $(i,j)
# = (i',j')$. The limit has a density, so the measure's discontinuity set has probability zero.
#
# **Measured** at $\tau = 1$ by Monte Carlo, with the i.i.d. Gaussian limit drawn directly.

# %% [markdown]
# ```{glue:figure} theory_p1p_saturation
# :name: fig-theory_p1p_saturation
# :alt: Line chart of rank measures of random softmax matrices against the head dimension on a log axis, approaching the i.i.d. limit drawn dashed.
#
# P1': rank measures of $\operatorname{softmax}(QK^\top / \sqrt{d_h})$ at $\tau = 1$, $n$ = {glue:text}`theory_sat_n`,
# against head dimension; dashed lines and bands: the i.i.d. Gaussian limit ({glue:text}`theory_profile` profile,
# {glue:text}`theory_sat_samples` random matrices per point). {glue:md}`theory_p1p_saturation__source`
# ```

# %% [markdown]
# At $\tau = 1$ and $n$ = {glue:text}`theory_sat_n`, the mean rank at $\varepsilon = 10^{-2}$ for $d_h$ =
# {glue:text}`theory_sat_dims` is {glue:text}`theory_sat_list`, and the i.i.d. limit is
# {glue:text}`theory_sat_limit:.1f` (95% CI {glue:text}`theory_sat_limit_lo:.1f` to
# {glue:text}`theory_sat_limit_hi:.1f`), a fraction {glue:text}`theory_sat_limit_frac:.2f` of $n$; at $d_h$ =
# {glue:text}`theory_sat_last_d` the rank is {glue:text}`theory_sat_last:.1f`. Per measure, the smallest head
# lies relative to the limit as follows ("from below": the rank rises towards the limit; "from above": it falls
# towards it): {glue:text}`theory_sat_direction`. The limit is a property of the softmax of Gaussian logits at
# $\tau = 1$. It is *not* the $0.63\,n$ of the study's theorem, which concerns the zero-temperature limit
# (below). Against that bound, $(1 - 1/e)n + 1$ = {glue:text}`theory_sat_bound:.1f` here, the mean rank at $\tau
# = 1$ {glue:text}`theory_sat_first_over`.
#
# **Check P1':** {glue:text}`theory_p1p_tested` comparisons (one per measure: the largest head
# within {glue:text}`theory_sat_tol_pct` of the limit, or within the two intervals),
# {glue:text}`theory_p1p_violations` violations; {glue:text}`theory_sat_farthest`.
#
# ## P2. The low-temperature (hardmax) limit
#
# **Statement.** Suppose every row of $S$ has a unique maximum, at column $a_i$. As
# $\tau \to 0$, $A(\tau) = \operatorname{softmax}(S/\tau)$ tends to the hardmax matrix $H$ with $H_{ij} =
# \mathbb{1}[j = a_i]$, whose rank $r_H$ is the number of *distinct* argmax columns. Quantitatively, with
# $\delta_i = \sum_{j \ne a_i} \exp\!\big(-(S_{i a_i} - S_{ij})/\tau\big)$,
#
# $$\|A(\tau) - H\|_2 \;\le\; \Delta(\tau) = \Big(2\sum_i \delta_i^2\Big)^{1/2},$$
#
# and if $\Delta(\tau) \le \varepsilon$ and $\varepsilon(\sqrt{c_{\max}} + \varepsilon) < 1 - \varepsilon$
# ($c_{\max}$ the largest number of rows sharing an argmax column), then
# $\operatorname{rank}_\varepsilon(A(\tau)) = r_H$ exactly. The limit is discontinuous: by P0,
# $\operatorname{rank} A(\tau) = n$ in exact arithmetic for every $\tau > 0$.
#
# **Proof sketch.** Off the argmax, $A_{ij} \le e^{-(S_{ia_i} - S_{ij})/\tau}$; on it,
# $1 - A_{ia_i} = \sum_{j \ne a_i} A_{ij} \le \delta_i$. So row $i$ of $A - H$ has squared norm at most
# $2\delta_i^2$, and the spectral norm is at most the Frobenius norm. $H^\top H$ is diagonal with the column
# counts, so the non-zero singular values of $H$ are the square roots of the counts: all at least 1, the largest
# $\sqrt{c_{\max}}$. By Weyl's inequality the first $r_H$ singular values of $A$ are at least $1 - \Delta$ and
# the rest at most $\Delta$, while $1 \le \sigma_1(A) \le \sqrt{c_{\max}} + \Delta$; the two conditions separate
# them at the threshold $\varepsilon\sigma_1$. Since $\Delta(\tau)$ increases with $\tau$, the certificate holds
# for all $\tau$ below a threshold $\tau^*_{\text{pred}}$ (`theory.hardmax_threshold`), and because $\Delta \ge
# \sqrt{2}\,e^{-g/\tau}$, with $g$ the smallest top-1 minus top-2 gap, $\tau^*_{\text{pred}} \le g / \log(\sqrt
# 2/\varepsilon)$: the certified threshold scales with that gap.
#
# **Measured.** Random logits ($d_h = 8$, unit-variance logits at $\tau = 1$), a log-spaced
# grid of $\tau$ from $10^{-6}$ to 10, and $\varepsilon = 10^{-2}$. The measured threshold
# $\tau^*_{\text{meas}}$ is the largest grid value below which every grid point has rank $r_H$. A violation is a
# grid point at or below $\tau^*_{\text{pred}}$ whose rank is not $r_H$, or an instance whose rank at $\tau =
# 10^{-5}$ differs from $r_H$.

# %% [markdown]
# ```{glue:figure} theory_p2_hardmax
# :name: fig-theory_p2_hardmax
# :alt: Rank of a softmax matrix against the temperature on a log axis, falling to the number of distinct argmax columns, with the predicted thresholds marked.
#
# P2: numerical rank (rtol $10^{-2}$) over the hardmax rank against $\tau$ (left) and the predicted and measured
# thresholds against the smallest logit gap (right), n = {glue:text}`theory_p2_n`, head dimension
# {glue:text}`theory_p2_d` ({glue:text}`theory_profile` profile, {glue:text}`theory_p2_inst` random instances,
# {glue:text}`theory_p2_grid` temperatures). {glue:md}`theory_p2_hardmax__source`
# ```

# %% [markdown]
# Over {glue:text}`theory_p2_inst` instances ($n$ = {glue:text}`theory_p2_n`, $d_h$ = {glue:text}`theory_p2_d`,
# mean hardmax rank {glue:text}`theory_p2_rH_mean:.1f`), the rank reaches $r_H$ and stays there below a
# threshold. The certified threshold is conservative: the measured one is a median
# {glue:text}`theory_p2_ratio_med:.1f` times larger (at most {glue:text}`theory_p2_ratio_max:.0f` times),
# because a row that blends two columns that are already argmax columns of other rows does not add a direction.
# Leaving the plateau, the rank goes *up* in {glue:text}`theory_p2_leave_up` of {glue:text}`theory_p2_leave_n`
# instances, which points to weight $e^{-g/\tau}$ on a column that no row selects. So the measured threshold is
# better described by the smallest gap between a row's maximum and its best
# *unused* column, $g_{\text{new}}$ (`theory.new_column_gap`, a heuristic, not a bound):
# log–log slope {glue:text}`theory_p2_slope_new:.2f`, correlation {glue:text}`theory_p2_corr_new:.2f`, and
# $\tau^*_{\text{meas}}$ is a median {glue:text}`theory_p2_new_ratio_med:.2f` times
# $g_{\text{new}}/\log(1/\varepsilon)$; against the top-1 minus top-2 gap the slope is
# {glue:text}`theory_p2_slope_top:.2f` and the correlation {glue:text}`theory_p2_corr_top:.2f`.
#
# At the study's cold setting $\tau = 10^{-3}$, the relative rank is at $r_H$ for
# {glue:text}`theory_p2_cold_rel_hits` of the {glue:text}`theory_p2_inst` instances (mean rank/$n$ =
# {glue:text}`theory_p2_cold_rel_frac:.2f`, against $r_H/n$ = {glue:text}`theory_p2_cold_rH_frac:.2f`), but the
# study's absolute rule counts off-argmax mass of order $e^{-g/\tau}$ above $10^{-8}$ and reads a mean rank/$n$
# of {glue:text}`theory_p2_cold_study_frac:.2f` ({glue:text}`theory_p2_cold_study_hits` instances at $r_H$).
# Which rank the study's low-temperature models report therefore depends on the logit gaps, not only on the
# temperature.
#
# **Check P2:** {glue:text}`theory_p2_tested` comparisons (grid points under the predicted
# threshold, and the limit at $\tau = 10^{-5}$ for both rules), {glue:text}`theory_p2_violations` violations.
#
# ## The study's theorem: the expected hardmax rank is at most $(1-1/e)\,n + 1$
#
# **Statement.** With orthonormal inputs $X$ and independent standard Gaussian $W_Q, W_K$, for
# every head dimension $d_h$,
#
# $$\mathbb{E}[r_H] \;\le\; n\Big(1 - \big(1 - \tfrac1n\big)^n\Big) \;\le\; \Big(1 - \frac1e\Big) n + 1,$$
#
# with equality in the first inequality in the limit $d_h \to \infty$ (i.i.d. logits), and $r_H \le 2$ for $d_h
# = 1$.
#
# **Proof sketch.** $Q = XW_Q$ and $K = XW_K$ have i.i.d. standard Gaussian entries (rotation
# invariance, as $X$ has orthonormal rows), and $Q$ is independent of $K$. Given $K$, the rows of $Q$ are
# i.i.d., so the argmaxes $a_i = \arg\max_j q_i^\top k_j$ are i.i.d. draws from some distribution $p$ over the
# $n$ columns (almost surely without ties). The expected number of distinct draws is $\sum_j \big(1 - (1 -
# p_j)^n\big)$, a symmetric concave function of $p$, maximised by the uniform $p$: $n(1 - (1-1/n)^n)$. Finally
# $(1 - 1/n)^{n-1} \ge 1/e$ (from $\log(1-x) \ge -x/(1-x)$), so $n(1-1/n)^n \ge (n-1)/e$ and the expectation is
# at most $n(1 - 1/e) + 1/e$. Small heads make $p$ far from uniform (the argmax of $q^\top k_j$ is always a
# vertex of the convex hull of the keys; for $d_h = 1$, the largest or the smallest key), so the rank grows with
# $d_h$ toward the bound.
#
# **Measured** by Monte Carlo for $n = 64$ and $n = 256$ (95% Student-t intervals). A
# violation is a head dimension whose whole confidence interval lies above $n(1 - (1-1/n)^n)$, a drop of the
# mean beyond both intervals as $d_h$ doubles, or $r_H > 2$ at $d_h = 1$.

# %% [markdown]
# ```{glue:figure} theory_thm_montecarlo
# :name: fig-theory_thm_montecarlo
# :alt: Monte Carlo mean hardmax rank against the head dimension on a log axis for each sequence length, below the bound drawn as a line.
#
# The study's theorem: mean hardmax rank over $n$ against head dimension, $n$ = {glue:text}`theory_thm_ns`, with the
# i.i.d. value $n(1-(1-1/n)^n)$ (dashed) and the study's bound $(1-1/e)n+1$ (dotted) ({glue:text}`theory_profile`
# profile, {glue:text}`theory_thm_samples` draws of $(W_Q, W_K)$ per point). {glue:md}`theory_thm_montecarlo__source`
# ```

# %% [markdown]
# With {glue:text}`theory_thm_samples` draws per point: for $n = 64$ the mean hardmax rank rises from
# {glue:text}`theory_thm_64_d1:.2f` at $d_h = 1$ to {glue:text}`theory_thm_64_dmax_mean:.1f` at $d_h$ =
# {glue:text}`theory_thm_dmax`, against $n(1-(1-1/n)^n)$ = {glue:text}`theory_thm_64_ed:.2f` (i.i.d. Monte
# Carlo: {glue:text}`theory_thm_64_iid:.2f`) and the study's bound {glue:text}`theory_thm_64_bound:.2f`; for $n
# = 256$ from {glue:text}`theory_thm_256_d1:.2f` to {glue:text}`theory_thm_256_dmax_mean:.1f` (a fraction
# {glue:text}`theory_thm_256_dmax_frac:.3f` of $n$), against {glue:text}`theory_thm_256_ed:.2f` and
# {glue:text}`theory_thm_256_bound:.2f`. The rank grows with the head dimension and saturates at the bound, as
# the study says. The approach is slow, though: {glue:text}`theory_thm_reach_pct` of the limit is first reached
# at $d_h$ = {glue:text}`theory_thm_64_d90` for $n = 64$ and $d_h$ = {glue:text}`theory_thm_256_d90` for $n =
# 256$, far above $\log n$ ({glue:text}`theory_thm_64_logn:.1f` and {glue:text}`theory_thm_256_logn:.1f`).
#
# **Check of the theorem:** {glue:text}`theory_thm_tested` estimates,
# {glue:text}`theory_thm_violations` violations.

# %% [markdown]
# **Verdict on the theory:** {glue:md}`theory_badge` {glue:md}`theory_summary`
#
# The propositions are proven, so this verdict could fail only if a proof, the arithmetic or the code were wrong: it is
# a check, listed apart from the claims on the {doc}`first page <intro>`, not support for one.

# %% [markdown]
# ## Rank and sequence length
#
# The bound above grows with $n$; so does the rank of content-free attention. Both models at
# $\tau = 1$ are trained at $n \in$ {glue:text}`seq_len_ns` ({glue:text}`seq_len_setting`,
# {glue:text}`seq_len_n_runs` runs), and their initial and trained ranks are set beside uniform
# attention over the visible keys (causal for GPT-2) and the study's bound $(1 - 1/e)\,n + 1$.
# **Rule, fixed before looking (version 1, unchanged):** for each model and $n$, the mean trained effective rank over
# seeds with its 95% Student-t interval is compared with the bound: supported if every interval
# lies below it, not supported if any lies wholly above it, otherwise inconclusive at this scale.
# The same rule is applied with every measure ({numref}`tab-conventions-measures`).

# %% [markdown]
# ```{glue:figure} seq_len
# :name: fig-seq_len
# :alt: Log-log line charts of the mean rank against the sequence length, at initialisation and trained, for ModernBERT and GPT-2, beside uniform attention and the study's bound.
#
# Mean rank against sequence length, {glue:text}`seq_len_setting`, {glue:text}`seq_len_n_seeds` seeds per setting
# ({glue:text}`seq_len_profile` build). Dashed: initialisation; solid with 95% intervals: trained; dotted: uniform
# attention (causal for GPT-2); black: the study's bound (1 - 1/e) n + 1. {glue:md}`seq_len__source`
# ```
#
# **Verdict on the bound at every sequence length:** {glue:md}`seq_len_badge` {glue:md}`seq_len_summary` Regime: {glue:md}`seq_len_regime`.

# %% [markdown]
# What this means for the rest of the book: a "rank" is always a numerical rank,
# so each chapter names its tolerance; at initialisation, where logits are small, the rank of a head is capped
# by the Taylor bound, a cap that grows with $d_h$ in steps (a cap, not a prediction of the rank); and the
# study's $0.63\,n$ is the rank of the zero-temperature limit, which trained models at $\tau = 1$ are far from.
