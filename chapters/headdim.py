# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Head dimension: a second lever on the rank, and the weaker one?
#
# **Claims (iii) and (iv) of the study, in our words.** A larger head dimension also raises the rank of the attention
# matrices, but only up to a ceiling: the rank saturates as $d_\mathrm{head}$ grows. Of the two levers, temperature
# and head dimension, temperature has the larger effect {cite}`min2023efficiency`. The low-rank bottleneck of small
# heads is a known argument for larger heads {cite}`bhojanapalli2020lowrank`.
#
# We vary the head dimension at a *fixed* model width (`hidden_size`): doubling $d_\mathrm{head}$ halves the number of
# heads, so the parameter count stays the same. The grid is run at the standard temperature ratio $\tau = 1$ and at
# the sweep's smallest $\tau$ (temperature $T = \tau\sqrt{d_\mathrm{head}}$, as in the previous chapter). Against the
# measurements we draw two predictions of the theory chapter, both computed here:
#
# * **the staircase (P1).** A head's logit matrix $S = QK^\top/T$ has rank at most $d_\mathrm{head}$; its elementwise
#   $m$-th power has rank at most $\binom{d_\mathrm{head}+m-1}{m}$, so the first $m$ terms of the Taylor expansion of
#   $\exp$ span at most $r_m = \binom{d_\mathrm{head}+m}{m}$ directions: $r_1 = d_\mathrm{head}+1$,
#   $r_2 = \binom{d_\mathrm{head}+2}{2}$. With small logits (half-range $M$) the singular values beyond $r_m$ are at
#   most $e^{2M}M^{m+1}/(m+1)!$, so a numerical rank at tolerance $\varepsilon$ is at most the first $r_m$ whose
#   remainder falls below $\varepsilon$. At initialisation this is the regime that applies: the *bound* grows with
#   $d_\mathrm{head}$ step by step, but whether the measured rank follows it depends on whether the logits are large
#   enough for the steps to clear the tolerance (below we state what the data show).
# * **the saturation (P1').** With independent random $Q, K$, the logits $S$ tend to a matrix of i.i.d. Gaussians as
#   $d_\mathrm{head}\to\infty$ (central limit theorem at fixed logit scale), so every rank measure tends to its value
#   for the softmax of i.i.d. Gaussian logits *with the same logit scale*. We compute that limit by Monte Carlo; it is
#   a limit, approached from either side, not a ceiling.
#
# **The rule** (version 3, changed after looking on 2026-12-05: see {doc}`changes`). "Temperature is the stronger lever
# on the initial rank" is judged, per architecture, at initialisation (no training is needed), with each lever moved
# over the same factor of its own setting, {glue:text}`headdim_lever_factor`, fixed before looking: the temperature
# ratio over five values a factor of 2 apart at the standard head dimension, and the head dimension over five values a
# factor of 2 apart at fixed width ($d_h$ = {glue:text}`headdim_window_dims`). It is judged in two regimes: at the
# stock end ($\tau$ up to 1, head dimensions at $\tau = 1$) and at the cold end ($\tau$ from the coldest grid value,
# head dimensions there). The statistic is the range (maximum minus minimum) of the mean initial rank (primary
# measure, the effective rank; {glue:text}`headdim_window_seeds` seeds per setting) over the temperature window minus
# its range over the head-dimension window, with a 95% interval from a stratified bootstrap
# ({glue:text}`headdim_n_resamples` resamples). *Supported* if the interval lies above zero for both ModernBERT and
# GPT-2 in both regimes; *not supported* if it lies below zero for either in either; otherwise *inconclusive at this
# scale*. The same rule is applied with every rank measure ({numref}`tab-headdim_lever_rule`). The comparison over the
# trained grid (the temperature grid against the two head dimensions of the trained runs) is reported beside it.
#
# ```{attnrank-table} headdim_lever_rule
# The rule at both ends, per measure and model: the range of the mean initial rank over the temperature window and
# over the head-dimension window (each a factor of {glue:text}`headdim_lever_factor` of its setting) with 95%
# stratified-bootstrap intervals, their
# difference, the initialisations it rests on and that case's verdict.
# ```

# %% tags=["parameters", "hide-input"]
profile: str = "auto"  # compute profile: auto (paper on a GPU, quick on a CPU), ci, quick, paper or scale
seeds: list = None  # seeds: a list, or n for seeds 0..n-1; None: the profile's
taus: list = None  # temperature ratios τ of the grid; None: the profile's
head_dims: list = None  # head dimensions of the grid; None: the profile's
mc_samples: int = 256  # random matrices per Monte Carlo estimate; None: 256
dataset: str = None  # training corpus: shakespeare, stdlib or hf:NAME[:CONFIG]; None: ATTNRANK_DATASET or shakespeare

# %% tags=["hide-input"]
from attnrank import book
from attnrank.sections import headdim

params = book.check_parameters(globals(), headdim.section)
book.publish(headdim.section(**params))

# %% [markdown]
# ## The runs
#
# The runs are the shared sweep of all trained-model chapters (`experiments.main_sweep`): its head-dimension grid at
# $\tau = 1$ and at the smallest $\tau$, and its temperature grid at the standard head dimension (used below to put
# the two levers on one scale).

# %% [markdown]
# {glue:text}`headdim_n_runs` runs at hidden size {glue:text}`headdim_hidden`: head dimensions
# {glue:text}`headdim_head_dims` (heads: {glue:text}`headdim_heads`) at each temperature ratio of {glue:text}`headdim_taus`, {glue:text}`headdim_n_seeds` seeds per
# setting; of the whole sweep {glue:text}`headdim_diverged` (a run that diverges is drawn as a red cross, never
# dropped).
#
# ## The theory, computed on the freshly initialised models
#
# Both predictions need the logits at initialisation. We rebuild each model from its seed (exactly the weights its
# training started from) and read the logits $S = QK^\top/(\tau\sqrt{d_\mathrm{head}})$ of every head on the runs'
# probe sequences through the attention function's hook point (`attnrank.core.probe.attention_logits`). From $S$ we record,
# per head and sequence, the logit scale (within-row standard deviation), the half-range $M$ of P1 and the P1 bound
# for the two relative tolerances; the softmax of the hooked logits reproduces the model's own attention probabilities
# (checked below).

# %% [markdown]
# ```{attnrank-table} headdim_logit_scale
# The within-row standard deviation of the scaled logits of the freshly initialised models, per model and
# temperature, for each head dimension.
# ```

# %% [markdown]
# The logit scale hardly depends on the head dimension (the $1/\sqrt{d_\mathrm{head}}$ in $T$ is there for that):
# about {glue:text}`headdim_logit_sd_base_modernbert` for ModernBERT and {glue:text}`headdim_logit_sd_base_gpt2` for GPT-2
# at $\tau = 1$, and $1/\tau$ times more at $\tau =$ {glue:text}`headdim_tau_min`
# ({glue:text}`headdim_logit_sd_min_modernbert` for ModernBERT). The i.i.d. limit of P1' is therefore one number per
# architecture and temperature: the mean of each measure over {glue:text}`headdim_mc_samples` random $n\times n$ matrices
# $\operatorname{softmax}(\sigma G)$, $G_{ij}\sim\mathcal N(0,1)$, with $\sigma$ the measured scale and the causal
# mask for GPT-2.
#
# **What the lever comparison can say.** At $\tau = 1$ the logits of a freshly initialised model are this small for
# every head dimension, so its attention is close to uniform whatever $d_\mathrm{head}$ is: that the head dimension
# barely moves the *initial* rank at $\tau = 1$ is a property of the initialisation (the $1/\sqrt{d_\mathrm{head}}$
# in $T$ and the small initial weights), not a measurement of what the head dimension does in a trained model. The
# rule below compares the two levers on the initial rank, as the study did; the trained ranks are drawn beside it in
# the figures and are not part of the rule.

# %% [markdown]
# ```{attnrank-table} headdim_iid_limits
# The i.i.d. limit of P1': each measure's mean over random matrices softmax(σG) with σ the measured logit scale, per
# model and temperature.
# ```

# %% [markdown]
# ## Rank against head dimension
#
# One figure per temperature. Each panel is one rank measure; solid lines are the ranks at initialisation, dashed
# lines after training (mean over seeds, $\pm 1$ sd bars). Grey curves: the staircase $r_1 = d_\mathrm{head}+1$ and
# $r_2 = \binom{d_\mathrm{head}+2}{2}$ (capped at $n$; drawn for the ranks at a relative tolerance, not for the
# study's absolute rule, and strictly a bound for bidirectional attention only). It is drawn only where the logits are
# small enough for the P1 bound to be below $n$; at very low temperature the logits are large, the Taylor argument
# bounds nothing, and the figure shows no staircase. Coloured horizontal lines: the i.i.d.-logit limit of P1' for each
# architecture at that temperature (a prediction for initialisation), and the same measure for uniform attention
# (causal for GPT-2), which a head that ignores the content would give: effective rank
# {glue:text}`headdim_uniform_modernbert` (ModernBERT) and {glue:text}`headdim_uniform_gpt2` (GPT-2).

# %% [markdown]
# ```{glue:figure} headdim_rank_vs_head_dim_stock
# :name: fig-headdim_rank_vs_head_dim_stock
# :alt: One panel per rank measure: mean attention rank against head dimension at temperature 1, before and after training, for ModernBERT and GPT-2, beside reference lines.
#
# Attention rank against head dimension at fixed hidden size {glue:text}`headdim_hidden` and $\tau$ = 1, one panel
# per measure: initialisation (solid) and after training (dashed), mean over seeds with ±1 sd bars;
# {glue:md}`headdim_staircase_stock` coloured horizontal lines: the P1' limit for i.i.d. Gaussian logits of the same scale
# ({glue:text}`headdim_mc_samples` Monte Carlo matrices) and uniform attention (causal for GPT-2), the content-free
# baseline. {glue:md}`headdim_rank_vs_head_dim_stock__source`
# ```
#
# ```{glue:figure} headdim_rank_vs_head_dim_cold
# :name: fig-headdim_rank_vs_head_dim_cold
# :alt: One panel per rank measure: mean attention rank against head dimension at the coldest temperature of the grid, before and after training, for ModernBERT and GPT-2, beside reference lines.
#
# Attention rank against head dimension at fixed hidden size {glue:text}`headdim_hidden` and $\tau$ =
# {glue:text}`headdim_tau_min`, one panel per measure: initialisation (solid) and after training (dashed), mean over
# seeds with ±1 sd bars;
# {glue:md}`headdim_staircase_cold` coloured horizontal lines: the P1' limit for i.i.d. Gaussian logits of the same scale
# ({glue:text}`headdim_mc_samples` Monte Carlo matrices) and uniform attention (causal for GPT-2), the content-free
# baseline. {glue:md}`headdim_rank_vs_head_dim_cold__source`
# ```

# %% [markdown]
# ### How close is the staircase bound?
#
# For ModernBERT (P1 covers bidirectional attention) the table compares the P1 bound, computed per head and sequence from
# its measured half-range $M$, with the measured rank of the same matrices (seed 0, mean over layers, heads and
# sequences). The bound holds matrix by matrix when every entry of the "measured" column is at most its "bound".

# %% [markdown]
# ```{attnrank-table} headdim_bound_check
# The bound on the relative-tolerance rank from the logits' median half-range M (with the monomial counts r₁ and r₂)
# beside the measured rank of the same matrices, per temperature and head dimension (seed 0).
# ```

# %% [markdown]
# {glue:text}`headdim_p1_holds`. At
# $\tau = 1$ the bound at relative tolerance $10^{-2}$ computed from each matrix's half-range $M$ is exactly
# $r_1 = d_\mathrm{head}+1$ (capped at $n$) for {glue:text}`headdim_p1_bound_is_r1` of the matrices.
# The measured rank equals $r_1$ for {glue:text}`headdim_p1_r1_at_rtol2` of them at tolerance $10^{-2}$
# (and is 1, the uniform direction alone, for {glue:text}`headdim_p1_rank1_at_rtol2`), and for
# {glue:text}`headdim_p1_r1_at_rtol4` of them at tolerance $10^{-4}$. Where the rank equals $r_1$, the first
# Taylor step is resolved in full and nothing beyond it: there the head dimension sets the initial rank through the
# number of directions of the first step, not through anything learned. Where the rank is 1, even the first step lies
# below the tolerance, and the head dimension cannot show at all.
#
# ## Temperature against head dimension, over the ranges a user can set
#
# The rule (stated at the top) compares how far each lever moves the mean initial rank over its whole grid: the
# temperature grid at head dimension {glue:text}`headdim_head_dim0`, and the head-dimension grid at fixed width and
# $\tau = 1$. The range is a magnitude: a lever that lowers the rank counts as much as one that raises it by the same
# amount. Beside it we give the signed change from the smallest to the largest head dimension (Welch-t interval), so
# the direction is visible, and the same ranges for the final validation loss (completed runs), which are reported,
# not judged.

# %% [markdown]
# ```{glue:figure} headdim_effect_sizes
# :name: fig-headdim_effect_sizes
# :alt: Forest plot: for each model, the range of the initial effective rank and of the final loss over the temperature grid, over the head-dimension grid, and their difference, with intervals.
#
# How far each lever moves the mean over its whole grid (range of the seed means, a magnitude): the initial effective
# rank (left) and the final validation loss (right); $\tau$ over its grid of {glue:text}`headdim_n_taus` values at head
# dimension {glue:text}`headdim_head_dim0`, $d_h$ over {glue:text}`headdim_head_dims` at hidden size
# {glue:text}`headdim_hidden` and $\tau = 1$, and their difference; each range bias-corrected with a 95% basic
# stratified-bootstrap interval over runs (a range of noisy means is biased upward), the difference as the rule computes
# it (percentile interval). {glue:md}`headdim_effect_sizes__source`
# ```
#
# The same comparison with every rank measure, reported beside the rule and not judged:
#
# ```{attnrank-table} headdim_grid_ranges
# Over the whole trained grids (not the rule's windows), per measure and model: the range of the mean initial rank
# over the temperature grid and over the head-dimension grid with 95% stratified-bootstrap intervals, the signed
# change from the smallest to the largest head dimension (Welch-t interval), the difference of the ranges and the
# runs.
# ```

# %% [markdown]
# At $\tau = 1$ and fixed width, the mean initial effective rank of ModernBERT {glue:text}`headdim_direction_modernbert`, and that
# of GPT-2 {glue:text}`headdim_direction_gpt2` as the head dimension grows: {glue:text}`headdim_direction_note`. Over
# the whole grids, the temperature moves the mean initial rank by {glue:text}`headdim_tau_range_modernbert` runs (range,
# ModernBERT) against {glue:text}`headdim_hd_range_modernbert` runs for the head dimension (difference
# {glue:text}`headdim_diff_modernbert`); for GPT-2 by {glue:text}`headdim_tau_range_gpt2` against
# {glue:text}`headdim_hd_range_gpt2` (difference {glue:text}`headdim_diff_gpt2`). At $\tau =$
# {glue:text}`headdim_tau_min` the head-dimension range is {glue:text}`headdim_hd_range_min_modernbert` (ModernBERT) and
# {glue:text}`headdim_hd_range_min_gpt2` (GPT-2). The range of noisy means is biased upward by the seed noise (seed
# spread {glue:text}`headdim_spread_modernbert` for ModernBERT, {glue:text}`headdim_spread_gpt2` for GPT-2), and with
# {glue:text}`headdim_n_seeds` seeds per setting a bootstrap within each setting understates the spread of a mean, so
# the intervals are optimistic; the verdict is robust to that only where the difference is many times the seed spread.
#
# For the final loss (in nats), over the same grids: temperature {glue:text}`headdim_loss_tau_range_modernbert` against head
# dimension {glue:text}`headdim_loss_hd_range_modernbert` for ModernBERT, and {glue:text}`headdim_loss_tau_range_gpt2` against
# {glue:text}`headdim_loss_hd_range_gpt2` for GPT-2.
#
# ## Verdict

# %% [markdown]
# **Temperature is the stronger lever on the initial rank:** {glue:md}`headdim_badge` {glue:md}`headdim_summary`
# Regime: {glue:md}`headdim_regime`.
#
# The same rule with every rank measure:
#
# ```{attnrank-table} headdim_by_measure
# The head-dimension rule applied with every rank measure in turn; the verdict above uses the effective rank.
# ```
#
# Head dimension and temperature act on the initial rank through the same expansion. The head dimension sets how many
# directions each Taylor step of the softmax can open (the staircase bound, toward the i.i.d.-logit limit), and the
# temperature sets the size of the logits, hence how many steps clear the tolerance. A larger head can only raise the
# rank by the steps that the logit scale already lets through, and at fixed width it also means fewer heads and a
# different logit scale per head, so the measured effect of the head dimension at this width can be small or even
# negative. The comparison depends on the logit scale at initialisation, which grows with the model width: the effect
# sizes above are for this profile's width and sequence length. With trained weights neither lever is a capacity limit
# of the kind the initial rank suggests ({ref}`P3 <target-p3>`), so what matters for the study's conclusion is whether
# the initial rank predicts the loss: that is the chapter on loss.
