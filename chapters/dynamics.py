# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Rank through training: stable, and set at initialisation?
#
# The study's first claim {cite}`min2023efficiency` is that **the mean rank of the attention matrices hardly moves
# while a model trains, so that the rank at initialisation is a dependable forecast of the rank at the end**. If that
# holds, everything the later chapters say about the initial rank (how temperature and head dimension set it) carries
# over to the trained model; if it fails, the initial rank is only a property of the random weights.
#
# We test the claim on ModernBERT (masked LM) {cite}`warner2024modernbert` and GPT-2 (causal LM) {cite}`radford2019language`
# trained from scratch, over the book's shared sweep: a grid of temperatures from the study's cold setting past the stock
# transformer and several head dimensions, each with several seeds (below). We ask three questions:
#
# 1. How does the mean rank move through training, for each rank measure, temperature and head dimension?
# 2. Across runs, does the initial mean rank predict the final one, and does it still do so within one temperature,
#    which sets the initial rank?
# 3. How large is the change $|r_\text{final} - r_\text{init}| / r_\text{init}$ of a single run, and is it the same in
#    every layer and head?

# %% tags=["parameters", "hide-input"]
profile: str = "auto"  # compute profile: auto (paper on a GPU, quick on a CPU), ci, quick, paper or scale
seeds: list = None  # seeds: a list, or n for seeds 0..n-1; None: the profile's
taus: list = None  # temperature ratios τ of the grid; None: the profile's
head_dims: list = None  # head dimensions of the grid; None: the profile's
heatmap_tau: float = 1.0  # temperature ratio of the layer x head heat maps (must be in the sweep)
stable_tolerance: float = 0.1  # a run is "stable" if its relative change of mean rank is at most this
dataset: str = None  # training corpus: shakespeare, stdlib or hf:NAME[:CONFIG]; None: ATTNRANK_DATASET or shakespeare

# %% tags=["hide-input"]
from attnrank import book
from attnrank.sections import dynamics

params = book.check_parameters(globals(), dynamics.section)
book.publish(dynamics.section(**params))

# %% [markdown]
# ## The runs
#
# Every trained-model chapter reads the same runs from the run store: the temperature grid $\tau \in$
# {glue:text}`dynamics_taus` at the profile's head dimension, plus a head-dimension grid $d_h \in$
# {glue:text}`dynamics_head_dims` (at fixed width, so more heads of smaller dimension) at $\tau = 1$ and at the
# smallest $\tau$; each setting with {glue:text}`dynamics_n_seeds` seeds. Here $\tau$ is the ratio of the softmax
# temperature to the standard one, $T = \tau\sqrt{d_h}$ in $\operatorname{softmax}(QK^\top / T)$: $\tau = 1$ is the
# stock transformer {cite}`vaswani2017attention`, $\tau = 10^{-3}$ the study's low-temperature setting. A cold build
# trains each run once, before any chapter is executed; afterwards the chapters only read them.

# %% [markdown]
# (dynamics-rule)=
# ## The rule (version 3, changed after looking on 2026-11-30 and 2026-12-05)
#
# The deviations from the first version, and why, are in {doc}`changes`.
#
# We judge the claim on the primary measure, the **effective rank** (the exponential of the entropy of the normalised
# singular values {cite}`roy2007effective`), over the runs that learned, each held to the target of {doc}`learned`
# ({glue:text}`dynamics_n_learned`; a run at a cold temperature whose softmax never learned to attend keeps its rank
# because it never trained its attention, which says nothing about training), and require both of its halves for both
# architectures:
#
# * *predictive*: the 95% percentile bootstrap interval (over runs) of Spearman's $\rho$ between initial and final mean rank
#   lies above {glue:text}`dynamics_rho_min` (it fails if the whole interval lies below it);
# * *stable*: the 95% interval of the median relative change (exact, from order statistics) lies below the tolerance
#   {glue:text}`dynamics_tolerance_pct` (it fails if the whole interval lies above it).
#
# The claim is **supported** if all four halves hold, **not supported** if any fails, and **inconclusive at this
# scale** otherwise. The within-temperature correlation is reported beside the rule, not in it (the claim is about
# prediction across settings).

# %% [markdown]
# The sweep holds {glue:text}`dynamics_n_runs` runs ({glue:text}`dynamics_diverged`), each trained for
# {glue:text}`dynamics_steps` steps on sequences of $n =$ {glue:text}`dynamics_n` tokens. During training a probe
# measures every attention matrix $A^{(\ell, h)}(x)$ of every layer $\ell$ and head $h$ on a fixed set of held-out
# sequences $x$ at step 0 (the initialisation), at steps 1, 2, 4, 8, ... early on, then at regular steps. The
# **mean rank** at a step is
#
# $$\bar r(t) = \frac{1}{L\,H\,B} \sum_{\ell=1}^{L} \sum_{h=1}^{H} \sum_{b=1}^{B} r\big(A^{(\ell,h)}(x_b; \theta_t)\big),$$
#
# for each measure $r$ of the {doc}`measure chapter <measure>`: the study's absolute threshold ($\sigma_i > 10^{-8}$),
# relative thresholds ($\sigma_i > \epsilon\,\sigma_1$, $\epsilon = 10^{-2}$ and $10^{-4}$), the effective rank
# {cite}`roy2007effective` (our primary measure: continuous, and not pinned to the causal mask), stable rank
# $\|A\|_F^2/\|A\|_2^2$, and the mean row entropy of $A$ (not a rank, but the quantity temperature acts on directly
# {cite}`zhai2023stabilizing`).
#
# A causal (GPT-2) attention matrix is lower-triangular with a positive diagonal, so even the uniform causal matrix
# $U_{ij} = 1[j \le i]/i$, which carries no information at all, has a sizeable numerical rank. We draw its value for
# each measure as a dotted line in the GPT-2 panels, and the value of uniform bidirectional attention ($U_{ij} = 1/n$,
# rank one) in the ModernBERT panels: a rank near that line means "close to content-free attention", not "rich attention".

# %% [markdown]
# ```{glue:figure} dynamics_rank_trajectories
# :name: fig-dynamics_rank_trajectories
# :alt: Grid of line charts, one row per rank measure and one column per model: mean attention rank against training step, one coloured line per temperature, with a dotted line for uniform attention.
#
# Mean rank through training for every measure (rows), ModernBERT and GPT-2 (columns), one curve per temperature
# ratio $\tau$ (colour, log scale; $\tau = 1$ bold), head dimension {glue:text}`dynamics_default_head_dim`. Line: mean
# over seeds; band: range over seeds. Dotted: uniform attention (causal for GPT-2).
# {glue:md}`dynamics_rank_trajectories__source`
# ```

# %% [markdown]
# Read {numref}`fig-dynamics_rank_trajectories` row by row: the temperature largely sorts the curves at step 0, and the question is whether the
# curves stay where they started. For GPT-2 at $\tau = 1$ the initial mean rank is
# {glue:text}`dynamics_gpt2_tau1_init` (final: {glue:text}`dynamics_gpt2_tau1_final`) against
# {glue:text}`dynamics_uniform_causal` for the uniform causal matrix (primary measure,
# {glue:text}`dynamics_primary_label`): a GPT-2 value close to that line is the triangular mask, not content. The same
# view for the head-dimension grid, on the primary measure, at $\tau = 1$ and at the smallest $\tau$, is
# {numref}`fig-dynamics_rank_trajectories_head_dim` (colour is now $d_h$; the profile's default
# $d_h$ = {glue:text}`dynamics_default_head_dim` is bold).

# %% [markdown]
# ```{glue:figure} dynamics_rank_trajectories_head_dim
# :name: fig-dynamics_rank_trajectories_head_dim
# :alt: Line charts of the mean effective rank against training step, one line per head dimension, one panel per model and temperature.
#
# Mean effective rank through training for each head dimension $d_h$ (colour, log scale; $d_h$ =
# {glue:text}`dynamics_default_head_dim` bold) at fixed width, at $\tau$ = {glue:text}`dynamics_hd_taus` (columns).
# Line: mean over seeds; band: range over seeds. {glue:md}`dynamics_rank_trajectories_head_dim__source`
# ```

# %% [markdown]
# ## Does the initial rank predict the final rank?
#
# For each run we take the mean rank at the first probe (step 0) and at the last one, and compute Spearman's $\rho$
# between them across the runs of an architecture that learned, with a 95% percentile bootstrap interval that resamples runs
# (one run is one independent unit; the probe sequences of a run are not). The catch: across runs, the temperature
# sets the initial rank, and it also shapes the whole training run. A high $\rho$ across the grid can therefore come
# from $\tau$ alone ("runs with a small $\tau$ start high and end high"). To see whether the initial rank carries
# information *beyond* the temperature, we also report the rank correlation **within temperatures**: each value of
# $\tau$ is its own category (a fixed effect), both ranks are centred within each temperature, and the $p$-value comes
# from permuting runs only within a temperature. What is left varies through the seed and, at $\tau = 1$ and the
# smallest $\tau$, the head dimension; any effect of $\tau$ on either rank, monotone or peaked, is removed.

# %% [markdown]
# ```{glue:figure} dynamics_initial_vs_final
# :name: fig-dynamics_initial_vs_final
# :alt: Two scatter plots, ModernBERT and GPT-2, of final against initial mean effective rank per run, coloured by temperature, with the identity line and the correlations written above each panel.
#
# Final against initial mean effective rank, one point per run of the shared sweep (temperature and head-dimension
# grids), colour: $\tau$ (log scale). Dashed: final = initial. Text: Spearman's ρ (95% percentile bootstrap over runs)
# and the rank correlation within temperatures ($\tau$ as a fixed effect). {glue:md}`dynamics_initial_vs_final__source`
# ```

# %% [markdown]
# On the primary measure, Spearman's $\rho$ between initial and final mean rank is {glue:text}`dynamics_rho_modernbert` for
# ModernBERT and {glue:text}`dynamics_rho_gpt2` for GPT-2 (95% intervals in brackets, $n$ = runs). Within temperatures it
# is {glue:text}`dynamics_within_modernbert` (ModernBERT) and {glue:text}`dynamics_within_gpt2` (GPT-2). The table gives the same
# numbers for every measure.

# %% [markdown]
# ```{attnrank-table} dynamics_correlations
# Spearman's ρ between the initial and the final mean rank over the learned runs, across every setting and within
# each temperature, per measure and model, with 95% intervals, the p of the within-temperature correlation and the
# runs.
# ```

# %% [markdown]
# ## How much does a run's rank change?
#
# A correlation near one says the runs keep their *order*; it does not say the rank stays put (every run could double
# its rank). The claim of stability is about the size of the change, so for every complete run and every rank measure
# we compute the relative change
#
# $$\Delta_\text{rel} = \frac{|\bar r_\text{final} - \bar r_\text{init}|}{\bar r_\text{init}}.$$
#
# We call a run stable on a measure when $\Delta_\text{rel} \le$ {glue:text}`dynamics_tolerance_pct` (the parameter
# `stable_tolerance`). The attention entropy is left out here: it is not a rank, and at low temperature it starts near
# zero, where a relative change is meaningless.

# %% [markdown]
# ```{glue:figure} dynamics_relative_change
# :name: fig-dynamics_relative_change
# :alt: Horizontal box plots with dots, one row per rank measure, of each run's relative change of mean rank for ModernBERT and GPT-2, beside a dotted tolerance line.
#
# Relative change of the mean rank from the first to the last probe, one dot per complete run, per rank measure and
# model (box: quartiles). Dotted: the stability tolerance {glue:text}`dynamics_tolerance_pct`.
# {glue:md}`dynamics_relative_change__source`
# ```

# %% [markdown]
# ```{attnrank-table} dynamics_stability
# The relative change Δrel of each learned run's mean rank from initialisation to the last step, per measure and
# model: the median with its 95% interval, the share of runs within the tolerance, the share whose rank went up and
# the largest change.
# ```

# %% [markdown]
# On the primary measure the median relative change of the runs that learned (the rule's) is
# {glue:text}`dynamics_median_change_modernbert` for ModernBERT and {glue:text}`dynamics_median_change_gpt2` for GPT-2
# (95% distribution-free interval of the median from order statistics, no resampling). Of all complete runs, drawn
# above, {glue:text}`dynamics_share_stable_modernbert` of ModernBERT runs and
# {glue:text}`dynamics_share_stable_gpt2` of GPT-2 runs stay within the tolerance, and the largest changes are
# {glue:text}`dynamics_max_change_modernbert` and {glue:text}`dynamics_max_change_gpt2`. The rank went *up* in
# {glue:text}`dynamics_share_increased_modernbert` (ModernBERT) and {glue:text}`dynamics_share_increased_gpt2` (GPT-2) of the
# runs.
#
# ## Layer by layer, head by head
#
# A stable mean can hide heads that move in opposite directions. The heat maps show the rank of each layer and head
# (mean over probe sequences and seeds) at the first and the last probe, and their difference, at $\tau$ =
# {glue:text}`dynamics_heatmap_tau` and the default head dimension.

# %% [markdown]
# ```{glue:figure} dynamics_layer_head
# :name: fig-dynamics_layer_head
# :alt: Heat maps, one row per model, of the effective rank of every layer and head at the first and the last probe step and of their difference.
#
# Effective rank of each layer (rows) and head (columns) at the first and the last probe, and their difference,
# $\tau$ = {glue:text}`dynamics_heatmap_tau`, head dimension {glue:text}`dynamics_default_head_dim`, mean over probe
# sequences and {glue:md}`dynamics_layer_head__source`
# ```

# %% [markdown]
# The largest relative change of a single head's rank at this setting is {glue:text}`dynamics_head_max_change_modernbert`
# for ModernBERT and {glue:text}`dynamics_head_max_change_gpt2` for GPT-2.
#
# ## Verdict
#
# The rule was stated before the evidence (see {ref}`the rule <dynamics-rule>`); applied on the primary measure it
# gives the verdict below. The same rule on every other rank measure gives {numref}`tab-conventions-measures`. The
# *regime* of these models matters for how far any verdict carries: a count-based unigram model (no context) and
# bigram model (one token of context), fitted on the training blocks and scored on the runs' own validation targets,
# set the loss a model reaches without using attention for anything beyond the previous token.

# %% [markdown]
# **Verdict:** {glue:md}`dynamics_badge` {glue:md}`dynamics_summary` Regime: {glue:md}`dynamics_regime`.
#
# The same rule with every rank measure:
#
# ```{attnrank-table} dynamics_by_measure
# The dynamics rule applied with every rank measure in turn; the verdict above uses the effective rank.
# ```
#
# How to read the within-temperature correlation: the temperature is the main knob that separates the runs, so an
# across-run correlation can be the temperature showing up twice, at the start and at the end, without the initial
# rank adding anything. The within-temperature correlation is the part of the claim that would let a practitioner read
# the final rank off an initialisation *without* already knowing the temperature.
