# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Temperature: does a higher temperature raise the attention rank?
#
# **Claim (iii) of the study, as it made it.** The abstract says that "modifying the softmax temperature or the head
# dimension can amplify the ranks, with the former exerting a more significant effect" {cite}`min2023efficiency`. It
# does not write the direction down; the reviewers read it from the study's figures: a *higher* temperature gives a
# higher measured rank and a lower loss, and the low temperature gives a rank near $0.63\,n$, the hardmax value the
# theory characterises. So the claim we test is the study's: **the higher the temperature, the higher the attention
# rank at initialisation**, and (with claim (ii), a higher rank goes with a lower loss) **the higher the temperature,
# the lower the loss after training**. The study compares the standard transformer {cite}`vaswani2017attention` with
# temperatures a thousand times smaller.
#
# We write the attention of one head as
#
# $$A = \operatorname{softmax}\!\left(\frac{QK^\top}{T}\right), \qquad T = \tau\sqrt{d_\mathrm{head}},$$
#
# so the temperature *ratio* $\tau = 1$ is the stock ModernBERT {cite}`warner2024modernbert` and GPT-2
# {cite}`radford2019language`, and $\tau = 10^{-3}$ is the study's cold setting. This chapter sweeps $\tau$ over a
# grid of {glue:text}`temp_grid_text`, trains both models from scratch at every grid point with several seeds, and
# asks two separate questions:
#
# 1. does a higher $\tau$ give a higher rank *at initialisation*, and on which rank measures (the study's absolute
#    threshold and every threshold-free measure of the chapter on measuring rank)?
# 2. does a higher $\tau$ give a lower validation loss after training?
#
# One setting, the parameter `tau` below, is shown in detail against the baseline $\tau = 1$; change it with
# `papermill temp.ipynb out.ipynb -p tau 0.3` (a value off the grid trains its own runs, for both architectures and
# every seed of the sweep).
#
# **The rules** (version 4: the statistics and thresholds of version 2, 2026-11-30, with the sign turned to the
# study's on 2026-12-02 and the percentile interval for the loss correlation on 2026-12-05; each changed after
# looking, see {doc}`changes`). Both questions are judged per architecture on the runs of the grid (one value
# per run: the run is the independent unit, never a probe sequence), and the claim is made for both ModernBERT and GPT-2, so
# it is *supported* only if it holds for both, *not supported* if the data rule it out for either, and otherwise
# *inconclusive at this scale*.
#
# 1. *Rank*. The statistic is the study's own comparison: the mean initial rank (primary measure, the
#    effective rank) at the stock $\tau = 1$ minus its mean at the coldest grid value $\tau = 10^{-3}$, with Welch's
#    $t$ interval (95%); the interval decides, and an exact permutation test over seeds is shown beside it (with $k$
#    seeds per arm its $p$ cannot fall below $2/\binom{2k}{k}$, {glue:text}`temp_min_p` with this build's {glue:text}`temp_n_seeds` seeds, so it never decides alone). Supported (the study's sign) if the
#    interval lies above zero, not supported (the sign reversed) if below. The theory below predicts a *peak* rather than a monotone trend, so beside the verdict we
#    report where on the grid the mean initial rank peaks, with a stratified-bootstrap interval of that grid argmax (a
#    peak is *interior* when the interval excludes both ends). A grid locates a maximum only to within the grid values
#    next to it, however stable the argmax: with few seeds the bootstrap interval of the argmax can have no width, so
#    an interior peak is stated with the neighbouring grid values between which the maximum lies. The same rule is
#    applied with every rank measure.
# 2. *Loss* (version 6, the rule of version 4 restored on 2026-12-07; see {doc}`changes`). The study's claim is that
#    a hotter softmax trains to a lower loss, i.e. Spearman's $\rho(\log\tau, \text{final loss}) < 0$, over every
#    complete run of the grid, whether or not it learned: keeping only the runs that learned would choose them by the
#    loss the rule tests. Supported if the 95% interval (percentile bootstrap over runs,
#    {glue:text}`temp_n_resamples` resamples) lies below zero, not supported (hotter trains *worse*) if above. Beside
#    it: the grid value with the lowest mean final loss.
#
# When a verdict is unresolved (inconclusive) we state how many seeds (or runs) would resolve the pre-registered effect
# at the observed spread: one unit of effective rank for the rank comparison, $|\rho| = 0.5$ for the loss correlation
# (from the width of the observed interval).

# %% tags=["parameters", "hide-input"]
profile: str = "auto"  # compute profile: auto (paper on a GPU, quick on a CPU), ci, quick, paper or scale
seeds: list = None  # seeds: a list, or n for seeds 0..n-1; None: the profile's
taus: list = None  # temperature ratios τ of the grid; None: the profile's
head_dims: list = None  # head dimensions of the grid; None: the profile's
tau: float = 2.0  # temperature ratio shown in detail beside the stock ratio 1; off the grid, its runs are trained
dataset: str = None  # training corpus: shakespeare, stdlib or hf:NAME[:CONFIG]; None: ATTNRANK_DATASET or shakespeare

# %% tags=["hide-input"]
from attnrank import book
from attnrank.sections import temp

params = book.check_parameters(globals(), temp.section)
book.publish(temp.section(**params))

# %% [markdown]
# ## The runs
#
# All chapters on trained models share one sweep (`experiments.main_sweep`): the temperature grid at the profile's
# standard head dimension, plus a head-dimension grid (next chapter). A cold build trains each run once; afterwards
# the run store serves them. Here we keep the temperature grid at the standard head dimension. If the detailed `tau`
# (or the baseline $\tau = 1$) is not on the grid, its runs are trained now, with the same seeds.
# Off-grid settings added to this build (trained once, then served by the store): {glue:text}`temp_added`.

# %% [markdown]
# {glue:text}`temp_n_runs` runs, {glue:text}`temp_n_seeds` seeds per setting ({glue:text}`temp_diverged`). A run that
# diverges stays in every figure, drawn as a red cross, and is left out only of the statistics that need a final
# loss.
#
# ## Why temperature acts on the rank at initialisation
#
# At initialisation the HF weights have standard deviation {glue:text}`temp_init_std`, so the query and key of a token
# are small and the logits $S = QK^\top/T$ are tiny at $\tau = 1$: every row of $A$ is then almost the uniform row
# $\frac1n\mathbf 1^\top$. Expand the exponential: with logits $S_{ij}$ of size $\epsilon$,
#
# $$A_{ij} = \frac{e^{S_{ij}}}{\sum_k e^{S_{ik}}} = \frac1n\Bigl(1 + (S_{ij} - \bar S_{i}) + O(\epsilon^2)\Bigr),$$
#
# a rank-one matrix plus a correction of rank at most $d_\mathrm{head}+1$ and size $\epsilon/n$, plus higher powers.
# This is the staircase of the theory chapter (P1): the $m$-th power of the logits contributes at most
# $r_m = \binom{d_\mathrm{head}+m}{m}$ directions, with singular values of order $\epsilon^m$. A numerical rank with a
# tolerance counts only the blocks whose singular values clear it, so it grows as the logits grow, and lowering $\tau$
# multiplies every logit by $1/\tau$. In the opposite limit ($\tau \to 0$) every row becomes one-hot at its argmax and
# the rank tends to the number of distinct argmax columns (P2), about $0.63\,n$ or fewer: the rank need not keep
# rising all the way down.
#
# Which way the study's comparison comes out therefore depends on how rank is counted. An *absolute* threshold of
# $10^{-8}$ counts every block whose singular values exceed $10^{-8}$, however small beside $\sigma_1 \geq 1$: near
# $\tau = 1$ the higher blocks of the staircase are tiny but above it (and float32 round-off adds more), so a nearly
# uniform matrix can count as close to full rank, while the hardmax limit counts about $0.63\,n$. The effective rank
# weighs each direction by its size, so a nearly uniform matrix scores close to 1 and the sharper cold matrices
# score more. The two kinds of measure can give opposite signs; the data below say which.
#
# We measure the logit scale directly on the freshly initialised models: the within-row standard deviation of $S$, on
# the probe sequences of the runs.

# %% [markdown]
# ```{attnrank-table} temp_init
# The freshly initialised models of seed 0, per model and temperature (the prose gives the means over seeds): the standard deviation of the logits within a row, the
# tokens per row, the effective rank and the attention entropy.
# ```

# %% [markdown]
# At $\tau = 1$ the logits of ModernBERT have a within-row standard deviation of {glue:text}`temp_logit_sd_base_modernbert`
# (GPT-2: {glue:text}`temp_logit_sd_base_gpt2`) and the attention entropy is
# {glue:text}`temp_entropy_base_modernbert` nats for ModernBERT, against $\log n =$ {glue:text}`temp_log_n` for exactly
# uniform rows over $n =$ {glue:text}`temp_n` tokens. At the detailed setting $\tau =$ {glue:text}`temp_tau` the
# logits are scaled by $1/\tau$ ({glue:text}`temp_logit_sd_tau_modernbert` for ModernBERT,
# {glue:text}`temp_logit_sd_tau_gpt2` for GPT-2), with entropy {glue:text}`temp_entropy_tau_modernbert` nats (ModernBERT).
# At initialisation $\tau$ does one thing: a lower $\tau$ moves every head away from uniform attention, a higher one
# towards it.
#
# **What $\tau$ does not do ({ref}`P3 <target-p3>`).** Once $W_Q$ and $W_K$ are trained, $\tau$ is not a capacity
# parameter: any attention pattern reachable at one temperature is reachable at another by rescaling $W_Q W_K^\top$.
# For Adam without weight decay on $W_Q, W_K$ (our runs use a small decoupled weight decay, so there it holds
# approximately) a run at $(\tau, \sigma_\mathrm{init}, \eta)$ follows exactly the trajectory of the run at
# $(1, \sigma_\mathrm{init}/\sqrt\tau, \eta/\sqrt\tau)$ on $W_Q, W_K$. So whatever $\tau$ does to the *loss* must come
# from the larger logits at initialisation and from the larger effective learning rate of $W_Q, W_K$, not from a
# different set of reachable models. Keep that in mind when reading the loss section below: a loss effect of $\tau$ is
# not evidence that rank causes loss.
#
# ## Rank at initialisation against temperature, for every measure
#
# Each run's rank probe measured every head of every layer on the same held-out probe sequences before the first step.
# The figure shows the mean over heads, layers and sequences for each run, averaged over seeds (error bars: $\pm 1$
# standard deviation over seeds; faint dots: single seeds), at initialisation (solid) and after training (dashed).

# %% [markdown]
# ```{glue:figure} temp_rank_vs_tau
# :name: fig-temp_rank_vs_tau
# :alt: One panel per rank measure: mean attention rank against temperature on a log axis, at initialisation and after training, for ModernBERT and GPT-2, with dotted lines for uniform attention.
#
# Attention rank against the temperature ratio $\tau$ (log axis), one panel per rank measure, at initialisation
# (solid) and after training (dashed); ModernBERT and GPT-2; mean over seeds with ±1 sd bars, faint dots: single runs.
# Dotted: the same measure for uniform attention (ModernBERT) and uniform causal attention (GPT-2) over $n$ =
# {glue:text}`temp_n` tokens, the content-free baseline. Red: the detailed $\tau$ = {glue:text}`temp_tau`; dashed
# black: $\tau = 1$. Head dimension {glue:text}`temp_head_dim`.
# {glue:md}`temp_rank_vs_tau__source`
# ```

# %% [markdown]
# The dotted lines are what a head that ignores the content would give: uniform rows have effective rank
# {glue:text}`temp_uniform_modernbert` (ModernBERT), and the uniform causal matrix of GPT-2 has effective rank
# {glue:text}`temp_uniform_gpt2`; at relative tolerance $10^{-2}$ the uniform causal matrix already counts
# {glue:text}`temp_uniform_causal_rank_rtol` of {glue:text}`temp_n` directions, so that measure cannot tell GPT-2's
# content from its mask.
#
# ## The verdict on the rank: the study's comparison and the peak
#
# The rule (above) on the runs of the grid only; off-grid settings trained for the detailed view are left out, so the
# verdict does not depend on the `tau` parameter.

# %% [markdown]
# The rule with every rank measure (Welch-t interval of the difference of means, which decides, and its exact
# permutation $p$ beside it; "sign": whether the interval gives the study's sign, reverses it or does not decide; the
# peak is where the mean initial rank is largest over the grid, with a stratified-bootstrap interval of that argmax).
# {glue:text}`temp_sign`
#
# ```{attnrank-table} temp_rank_rule
# The study's comparison of the initial rank, per measure and model: τ = 1 minus the smallest τ with a Welch-t 95%
# interval and the exact permutation p, the sign it gives, where the mean initial rank peaks on the grid, and the
# verdict.
# ```

# %% [markdown]
# The mean initial effective rank goes from {glue:text}`temp_rank0_base_modernbert` at $\tau = 1$ to
# {glue:text}`temp_rank0_tau_modernbert` at $\tau =$ {glue:text}`temp_tau` and {glue:text}`temp_rank0_min_modernbert` at
# $\tau =$ {glue:text}`temp_tau_min` for ModernBERT (GPT-2: {glue:text}`temp_rank0_base_gpt2`,
# {glue:text}`temp_rank0_tau_gpt2`, {glue:text}`temp_rank0_min_gpt2`). The study's comparison, stock minus
# coldest, is {glue:text}`temp_cold_diff_modernbert` runs for ModernBERT (exact permutation $p =$ {glue:text}`temp_cold_p_modernbert`)
# and {glue:text}`temp_cold_diff_gpt2` runs for GPT-2 ($p =$ {glue:text}`temp_cold_p_gpt2`). With
# {glue:text}`temp_n_seeds` seeds per arm the Welch interval has few degrees of freedom and the smallest possible
# exact $p$ is {glue:text}`temp_min_p`, so only a difference far larger than the seed spread can clear the rule.
# The observed seed spread of the initial effective rank is {glue:text}`temp_rank_spread_modernbert` (ModernBERT) and
# {glue:text}`temp_rank_spread_gpt2` (GPT-2). {glue:text}`temp_rank_needed` On the trained grid the mean initial rank
# is largest at $\tau =$ {glue:text}`temp_peak_modernbert` for ModernBERT and at $\tau =$ {glue:text}`temp_peak_gpt2`
# for GPT-2; that grid is too coarse to locate a peak, which the fine grid below does.
#
# Two of the measures in the table are not counts of directions: the stable rank is 1 for uniform rows and grows as
# attention sharpens; the attention entropy (left out of the rule, which is about rank) is $\log n$ for uniform rows
# and falls as attention sharpens. For GPT-2 a colder softmax moves each row from uniform-over-the-visible-keys toward
# its argmax, which can only move the rank from the uniform causal value toward the number of distinct argmax columns
# (P2); the figure shows on which side of the dotted line each temperature lies.
#
# ## Where the initial rank peaks: a fine grid
#
# The trained grid ({glue:text}`temp_grid_text`) is finer than the study's trained comparison, two values a factor
# of 1000 apart ($\tau = 1$ and $10^{-3}$), but still too coarse to say where the rank peaks. At initialisation
# no training is needed, so the book also measures freshly initialised models on a fine grid of
# {glue:text}`temp_fine_n` temperature ratios from {glue:text}`temp_fine_min` to {glue:text}`temp_fine_max`, each a
# factor of {glue:text}`temp_fine_factor` from the next ({glue:text}`temp_fine_seeds` seeds a setting). On the
# effective rank the mean initial rank peaks {glue:text}`temp_fine_peak_modernbert_effective_rank` for ModernBERT
# and {glue:text}`temp_fine_peak_gpt2_effective_rank` for GPT-2 (the grid values beside the peak's 95% bootstrap
# interval over seeds, between which a smooth maximum lies); on the study's absolute rule it peaks
# {glue:text}`temp_fine_peak_modernbert_rank_atol_1e-8` (ModernBERT) and
# {glue:text}`temp_fine_peak_gpt2_rank_atol_1e-8` (GPT-2). The table gives every measure.
#
# ```{glue:figure} temp_fine
# :name: fig-temp_fine
# :alt: One panel per rank measure: mean initial attention rank against temperature on a fine log grid, for ModernBERT and GPT-2, with dotted lines for uniform attention.
#
# Mean initial attention rank against the temperature ratio $\tau$ on a fine grid ({glue:text}`temp_fine_n` values a
# factor of {glue:text}`temp_fine_factor` apart, log axis), one panel per rank measure; freshly initialised ModernBERT
# and GPT-2, {glue:text}`temp_fine_seeds` seeds a setting (mean with ±1 sd bars), no training. Dotted: uniform
# attention over $n$ = {glue:text}`temp_n` tokens (causal for GPT-2). Dashed black: $\tau = 1$.
# {glue:md}`temp_fine__source`
# ```
#
# ```{attnrank-table} temp_fine_peaks
# Where the mean initial rank peaks on the fine grid, per model and measure (between the grid values beside the
# peak's 95% bootstrap interval over seeds), and the mean rank there.
# ```
#
# ## The detailed setting against $\tau = 1$: rank through training
#
# The probe measured the ranks every few steps. {numref}`fig-temp_rank_curves` shows the mean over heads, layers and
# sequences through training for
# the detailed $\tau$ (bold) and the baseline, for the primary measure, the study's absolute rule and the rank at
# relative tolerance $10^{-2}$ (band: min-max over seeds; dotted: uniform causal attention, GPT-2), drawn as in the
# chapter on dynamics.

# %% [markdown]
# ```{glue:figure} temp_rank_curves
# :name: fig-temp_rank_curves
# :alt: Line charts of three rank measures through training, one row per measure and one column per model, for the detailed temperature and the stock one.
#
# Mean attention rank through training for $\tau$ = {glue:text}`temp_tau` (bold) and $\tau = 1$, three measures (rows)
# for ModernBERT and GPT-2 (columns); line: mean over seeds, band: range over seeds; dotted: uniform causal attention
# (GPT-2). {glue:md}`temp_rank_curves__source`
# ```

# %% [markdown]
# ## Per-layer ranks
#
# The mean hides the layers. Here the primary rank of each layer at initialisation (filled markers) and after training
# (open markers), for the two temperatures (error bars: $\pm 1$ sd over heads and seeds).

# %% [markdown]
# ```{glue:figure} temp_rank_per_layer
# :name: fig-temp_rank_per_layer
# :alt: Dot plots of the effective rank of each layer, before and after training, for the detailed and the stock temperature, one panel per model.
#
# The effective rank per layer at initialisation (filled) and after training (open), $\tau$ = {glue:text}`temp_tau`
# (red) and $\tau = 1$ (black); ±1 sd over heads and seeds. {glue:md}`temp_rank_per_layer__source`
# ```

# %% [markdown]
# ## Does a higher temperature give a lower loss?
#
# The validation loss (cross-entropy in nats per predicted token, masked tokens for ModernBERT, next tokens for GPT-2)
# through training for every temperature of the sweep: one curve per $\tau$ coloured on a log scale, $\tau = 1$ bold,
# as in the chapter on loss.

# %% [markdown]
# ```{glue:figure} temp_loss_curves
# :name: fig-temp_loss_curves
# :alt: Line charts of validation loss against training step, one line per temperature, one panel per model.
#
# Validation loss through training for every temperature ratio $\tau$ (colour, log scale; $\tau = 1$ bold); line: mean
# over seeds, band: range over seeds. {glue:md}`temp_loss_curves__source`
# ```

# %% [markdown]
# ```{glue:figure} temp_final_loss_vs_tau
# :name: fig-temp_final_loss_vs_tau
# :alt: Two panels of final validation loss against temperature on a log axis, ModernBERT and GPT-2.
#
# Final validation loss against $\tau$ (log axis), one panel per model with its own axis (masked-token loss for
# ModernBERT, next-token loss for GPT-2); mean over seeds with ±1 sd bars, faint dots: single runs; red: $\tau$ =
# {glue:text}`temp_tau`; dashed: $\tau = 1$.
# {glue:md}`temp_final_loss_vs_tau__source`
# ```

# %% [markdown]
# The rule for the loss (above) on the completed runs of the grid:

# %% [markdown]
# ```{attnrank-table} temp_loss_rule
# The loss rule per model: Spearman's ρ between log τ and the final loss with its 95% interval, the temperature with
# the lowest mean loss, the seed-to-seed standard deviation and the verdict.
# ```

# %% [markdown]
# Spearman's $\rho(\log\tau, \text{final loss})$ is {glue:text}`temp_loss_rho_modernbert` runs for ModernBERT and
# {glue:text}`temp_loss_rho_gpt2` runs for GPT-2 (a negative $\rho$: the hotter, the lower the loss, the study's
# sign). The lowest mean final
# loss on the grid is at $\tau =$ {glue:text}`temp_loss_best_modernbert` for ModernBERT and $\tau =$
# {glue:text}`temp_loss_best_gpt2` for GPT-2. At $\tau =$ {glue:text}`temp_tau` the mean final loss is
# {glue:text}`temp_loss_tau_modernbert` (ModernBERT) and {glue:text}`temp_loss_tau_gpt2` (GPT-2), against
# {glue:text}`temp_loss_base_modernbert` and {glue:text}`temp_loss_base_gpt2` at $\tau = 1$ and
# {glue:text}`temp_loss_min_modernbert` and {glue:text}`temp_loss_min_gpt2` at $\tau =$ {glue:text}`temp_tau_min`;
# the seed spread of the final loss is {glue:text}`temp_loss_spread_modernbert` nats (ModernBERT) and
# {glue:text}`temp_loss_spread_gpt2` (GPT-2). By P3 this is an effect of the initial logit scale and of the
# effective learning rate of $W_Q, W_K$; whether it goes *through* the rank is the question of the chapter on loss.
#
# ## Verdicts

# %% [markdown]
# **Claim (iii), a higher temperature gives a higher initial rank:** {glue:md}`temp_badge` {glue:md}`temp_summary`
# Regime: {glue:md}`temp_regime`.
#
# *The trend over the whole range.* {glue:text}`temp_peak_text` The verdict reads the study's own two-point
# comparison; the peak is where the answer to claim (iii) changes sign.
#
# The rank rule with every rank measure:
#
# ```{attnrank-table} temp_by_measure
# The rank rule applied with every rank measure in turn; the verdict above uses the effective rank.
# ```
#
# **Claims (ii) and (iii) together, a higher temperature trains to a lower loss:** {glue:md}`temp_loss_badge`
# {glue:md}`temp_loss_summary`
#
# The rank half of the claim is a statement about initialisation, and the mechanism is simple: $\tau$ multiplies the
# initial logits by $1/\tau$, and a threshold-free rank measures how far the softmax is from its uniform first-order
# term, up to the hardmax limit where it falls again; the study's absolute threshold counts the tiny directions of a
# nearly uniform matrix as rank, which is how it can read the opposite sign. Whether that initial rank then matters for the loss, separately from the
# temperature's direct effect on optimisation (P3), is tested in the chapter on loss; the comparison with head
# dimension, the other lever the study names, is in the next chapter.
#
# ```{note}
# Re-run this chapter with another detailed temperature, for example
# `papermill chapters/temp.ipynb /tmp/temp.ipynb -p tau 0.3 -p profile quick`. A value off
# the grid trains its runs (both architectures, every seed) and adds them to the figures;
# the verdicts are always computed on the grid.
# ```
