# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Higher rank, lower loss? Association and cause
#
# The study's second claim {cite}`min2023efficiency` is that **models whose attention matrices have a higher rank
# reach a lower loss and converge faster**. Its evidence is a sweep over the softmax temperature: as the reviewers read
# it, a higher temperature gives a higher initial rank on the study's absolute threshold, and (so the claim goes) a
# lower loss (the {doc}`temperature chapter <temp>` tests that sign on every rank measure). The reviewers' first objection is that this does
# not separate rank from temperature: the temperature could change the optimisation directly, and the rank could be a
# bystander.
#
# There is a concrete reason to take the objection seriously. The attention logits are $Q K^\top / T$ with
# $T = \tau\sqrt{d_h}$, and $Q = X W_Q$, $K = X W_K$. Any attention pattern reachable at one $\tau$ is reachable at
# every other (rescale $W_Q W_K^\top$ by $\tau$), so $\tau$ does not limit what a trained model can express. What
# $\tau$ does change is the scale of the logits at initialisation and how fast a gradient step moves them: for Adam,
# training at temperature $\tau$ follows the same attention trajectory as training at $\tau = 1$ with the initial
# scale of $W_Q, W_K$ divided by $\sqrt\tau$ and their learning rate divided by $\sqrt\tau$ ({ref}`P3 <target-p3>`,
# proved and checked in the high-rank-target chapter). An effect of $\tau$ on the loss is, in that sense, an effect of
# initialisation scale and step size.
#
# So we ask the data four questions, on ModernBERT {cite}`warner2024modernbert` and GPT-2 {cite}`radford2019language` trained
# from scratch:
#
# 1. **Rank moved at a fixed temperature** (decides). Two runs of one seed differ only in the scale of their query
#    and key weights at initialisation ($\tau = 1$ in both, the same learning rate): the smaller scale gives the logits
#    of a hotter softmax, and with them another initial rank. Does the run that starts with the higher rank end with
#    the lower loss?
# 2. **Association.** Across the runs of the shared sweep, does a higher initial mean rank go with a lower final
#    validation loss and with fewer steps to reach a fixed training loss?
# 3. **Beyond temperature.** Does the association survive within one temperature (each $\tau$ a category of its own,
#    so any effect of $\tau$, monotone or peaked, is removed)?
# 4. **Rank moved by the head dimension.** In the head-dimension grid at fixed $\tau$, where the initial rank changes
#    through $d_h$ {cite}`bhojanapalli2020lowrank` and not through the temperature, does more rank still mean lower
#    loss?
#
# Within one temperature the sweep's initial ranks differ only from seed to seed, by a small fraction of a unit, so a
# correlation there reads noise rather than a rank a user could choose; the first question moves the rank by design,
# and it decides.

# %% tags=["parameters", "hide-input"]
profile: str = "auto"  # compute profile: auto (paper on a GPU, quick on a CPU), ci, quick, paper or scale
seeds: list = None  # seeds: a list, or n for seeds 0..n-1; None: the profile's
taus: list = None  # temperature ratios τ of the grid; None: the profile's
head_dims: list = None  # head dimensions of the grid; None: the profile's
level_quantile: float = 0.75  # the convergence level is this quantile of the runs' final training losses (per arch)
smooth: int = 3  # logged training-loss points averaged before testing the level
dataset: str = None  # training corpus: shakespeare, stdlib or hf:NAME[:CONFIG]; None: ATTNRANK_DATASET or shakespeare

# %% tags=["hide-input"]
from attnrank import book
from attnrank.sections import loss

params = book.check_parameters(globals(), loss.section)
book.publish(loss.section(**params))

# %% [markdown]
# ## The runs
#
# The runs are the book's shared sweep (the same ones the {doc}`dynamics chapter <dynamics>` reads): the temperature
# grid $\tau \in$ {glue:text}`loss_taus` at the profile's head dimension, and a head-dimension grid $d_h \in$
# {glue:text}`loss_head_dims` at fixed width (so more heads of smaller dimension) at $\tau = 1$ and at the smallest
# $\tau$, each with {glue:text}`loss_n_seeds` seeds: {glue:text}`loss_n_runs` runs
# ({glue:text}`loss_diverged`).

# %% [markdown]
# (loss-rule)=
# ## The rule (version 6, changed after looking on 2026-11-30, 2026-12-05 and 2026-12-07)
#
# The deviations from the first version, and why, are in {doc}`changes`.
#
# The rule reads two cells, trained under the stock conditions: the shared sweep's stock model ($\tau = 1$, the
# profile's head dimension) and the same model whose query and key weights start at $s$ = {glue:text}`loss_scale`
# times theirs ("init × s": the initial logits of $\tau = 1/s^2$ = {glue:text}`loss_scale_tau`, a temperature at which
# both models learn in the shared sweep). For each model and seed, the difference init × s − stock of the initial mean
# rank on the primary measure, the **effective rank** ({glue:text}`loss_primary_label`), and of the final validation
# loss; each is a mean over seeds with a Student-t 95% interval (the seed is the pair):
#
# 1. if the rank's interval contains 0, the design did not move the rank, and the case is **inconclusive at this
#    scale**;
# 2. otherwise the statistic is the loss the higher-rank cell saves, in nats (the lower-rank cell's loss minus the
#    higher-rank cell's): **supported** if its interval lies above 0, **not supported** if it lies below 0, and
#    **inconclusive at this scale** otherwise, with the seeds that would resolve {glue:text}`loss_nats_to_resolve` nats at the
#    observed spread.
#
# The claim is supported if both models are, not supported if either is not, inconclusive otherwise. The learned gate
# of {doc}`learned` reads every run of both cells: a model with a run that did not learn is inconclusive, since a
# model that has not learned says nothing about trained transformers, whichever cell it is in.
#
# What the design holds fixed is the temperature and the learning rate, not everything else the initial scale
# changes. With query and key weights scaled by $s$, an Adam step of the same size moves the logits about $s$ times as
# far (they are a product of the two weights), and by {ref}`P3 <target-p3>` the init × s run
# is, up to the weight decay and gradient clipping P3 leaves out, the run at $\tau = 1/s^2$ with the query/key
# learning rate divided by $s$; the causal chapter finds that the loss follows the query/key step size, so part of
# what this rule reads may be the step rather than the rank. No training design moves the initial rank alone: the
# rank is a function of the logits, and each route to it (the logit scale here, the head dimension in the grid below)
# changes something else too. (The causal chapter's intervention at fixed weights moves the rank of a trained model
# with everything else fixed, but it trains nothing.)
#
# Beside the rule, on the book's shared sweep ({glue:text}`loss_n_learned`): Spearman's $\rho$(initial rank, final
# validation loss) within temperatures ($\tau$ a categorical fixed effect: ranks centred within each temperature,
# stratified bootstrap, stratified permutation $p$), which decided the claim under version 3, and the same correlation
# across all those runs; convergence speed and the head-dimension grid.
#
# ## Loss curves
#
# First the raw material: validation loss (measured on fixed held-out blocks at every probe) and training loss through
# training, for each temperature of the grid at the default head dimension. The band is the range over seeds.
#
# To measure **convergence speed** we need a loss level that every architecture can be judged against. We take it from
# the data: the {glue:text}`loss_level_quantile` quantile of the final training losses of all complete runs of an
# architecture (final = mean of the last {glue:text}`loss_smooth` logged values). This gives
# {glue:text}`loss_level_modernbert` nats for ModernBERT (MLM) and {glue:text}`loss_level_gpt2` nats for GPT-2 (CLM), the dotted
# lines. A run's speed is the first step at which its training loss, averaged over {glue:text}`loss_smooth`
# consecutive logged values, is at or below the level. Runs that never get there ({glue:text}`loss_n_censored` of
# {glue:text}`loss_n_complete` complete runs here) are **censored** (shown as hollow triangles at the last step)
# rather than dropped.
#
# The validation panels also show two count-based baselines fitted on the training blocks and scored on the same
# validation targets as the runs (GPT-2: every next token; ModernBERT: the masked positions, the bigram given the visible
# left neighbour): a **unigram** model (token frequencies, no context) and a **bigram** model (one token of context).
# The masked-LM (ModernBERT) and causal-LM (GPT-2) losses are different tasks on different tokenizers and sit on separate
# axes.

# %% [markdown]
# ```{glue:figure} loss_curves
# :name: fig-loss_curves
# :alt: Four line charts: validation and training loss against training step for ModernBERT and GPT-2, one line per temperature, with horizontal lines for the count models and the convergence level.
#
# Validation loss (top) and training loss (bottom) through training for each temperature ratio $\tau$ (colour, log
# scale; $\tau = 1$ bold), head dimension {glue:text}`loss_default_head_dim`. Line: mean over seeds; band: range over
# seeds. Dotted: the convergence level ({glue:text}`loss_level_quantile` quantile of the final training losses). Dashed
# and fine-dotted (validation panels): unigram and bigram count models on the same validation targets (written in a
# panel's corner when far off its range). Each panel has its own axis. {glue:md}`loss_curves__source`
# ```

# %% [markdown]
# ## Association across the sweep, and what is left within a temperature
#
# For each architecture we correlate the initial mean rank (primary measure, measured at step 0) with the two outcomes
# over all complete runs of the sweep: Spearman's $\rho$ with a 95% percentile bootstrap interval (resampling runs). The
# claim predicts $\rho < 0$ for both outcomes. Censored runs enter the convergence correlation with a step count of
# {glue:text}`loss_cens_value` (later than any observed step); Spearman's $\rho$ only uses the order, so this treats
# them exactly as "slower than every run that got there".
#
# Then the same correlation within temperatures: every $\tau$ is its own category, both ranks are centred within it,
# and the interval resamples runs within their temperature. What is left is the variation across seeds and, at
# $\tau = 1$ and the smallest $\tau$, across head dimensions. If rank acts on the loss in its own right, this
# correlation stays negative; if the temperature does the work, it is near zero.

# %% [markdown]
# ```{glue:figure} loss_final_vs_rank
# :name: fig-loss_final_vs_rank
# :alt: Two scatter plots, ModernBERT and GPT-2, of each run's final validation loss against its initial effective rank, coloured by temperature, with the correlations above each panel.
#
# Final validation loss against the initial mean rank, one point per run of the shared sweep, colour: $\tau$ (log
# scale); each model on its own axis. Text: Spearman's ρ (95% percentile bootstrap over runs) and the rank correlation
# within temperatures. Lines or corner notes: unigram and bigram count models. {glue:md}`loss_final_vs_rank__source`
# ```

# %% [markdown]
# Across the runs that learned ({glue:text}`loss_n_learned`; the figure draws every complete run), $\rho$(initial
# rank, final validation loss) is {glue:text}`loss_val_rho_modernbert` for ModernBERT and
# {glue:text}`loss_val_rho_gpt2` for GPT-2. Within temperatures it is {glue:text}`loss_val_within_modernbert` (ModernBERT) and
# {glue:text}`loss_val_within_gpt2` (GPT-2). The same for convergence speed:

# %% [markdown]
# ```{glue:figure} loss_speed_vs_rank
# :name: fig-loss_speed_vs_rank
# :alt: Two scatter plots of the steps each run needed to reach a fixed training loss against its initial effective rank; hollow triangles mark runs that never reached it.
#
# Training steps until the smoothed training loss first reaches the level (GPT-2 {glue:text}`loss_level_gpt2` nats,
# ModernBERT {glue:text}`loss_level_modernbert` nats; the {glue:text}`loss_level_quantile` quantile of final training
# losses) against the initial mean rank; hollow triangles: never reached (censored, drawn at step
# {glue:text}`loss_cens_value`). Colour: $\tau$ (log scale). {glue:md}`loss_speed_vs_rank__source`
# ```

# %% [markdown]
# Each run's validation loss is measured on the same held-out blocks, and for ModernBERT on the same masked positions in
# every run (the masks are drawn once, with a fixed seed, not per run), so differences between runs are differences
# between models, not between test sets.
#
# $\rho$(initial rank, steps to the level) is {glue:text}`loss_speed_rho_modernbert` for ModernBERT and
# {glue:text}`loss_speed_rho_gpt2` for GPT-2 across all runs, and {glue:text}`loss_speed_within_modernbert` and
# {glue:text}`loss_speed_within_gpt2` within temperatures ({glue:text}`loss_n_censored` runs censored).
#
# ## Rank moved without touching the temperature
#
# The head-dimension grid varies the initial rank at a fixed $\tau$ (at fixed width, more heads of smaller dimension;
# see the {doc}`head-dimension chapter <headdim>` for how the initial rank responds). It is not a clean experiment
# either (fewer, wider heads also change the model in other ways), but it moves rank by a route the temperature
# argument above does not cover. Lines join the runs of one seed.

# %% [markdown]
# ```{glue:figure} loss_head_dim
# :name: fig-loss_head_dim
# :alt: Scatter plots, one per model and temperature, of final validation loss against initial effective rank for each head dimension, the runs of one seed joined by lines.
#
# Final validation loss against the initial mean rank in the head-dimension grid (colour: head dimension, log scale;
# fixed width) at $\tau$ = {glue:text}`loss_hd_taus` (rows); each panel on its own axis. Lines join the runs of one
# seed. Text: Spearman's ρ with its 95% percentile bootstrap interval over runs. Lines or corner notes: unigram and
# bigram count models. {glue:md}`loss_head_dim__source`
# ```

# %% [markdown]
# All correlations of this chapter on every rank measure in one table (negative $\rho$ = higher rank, lower loss or
# faster convergence; $n$ = runs):

# %% [markdown]
# ```{attnrank-table} loss_correlations
# Every correlation of the chapter on every rank measure, per outcome and model: across runs and within each
# temperature, with 95% intervals, the p of the within-temperature correlation and the runs (negative ρ: higher
# rank, lower loss or faster convergence).
# ```
#
# A cell reads *not estimable* where a rank correlation has no value: the measure takes one value in every run it
# compares (a threshold count such as the rtol 10⁻⁴ rank often gives every matrix of a model the same count, and a
# constant has no ranks to correlate), or fewer than four runs are compared (within one temperature, or among the
# runs that learned).

# %% [markdown]
# ## Rank moved at a fixed temperature
#
# The rule's numbers, per rank measure and model: the initial rank the query/key scale s gives, the final loss
# it ends with, and the loss the higher-rank cell saves (the statistic that decides, on the effective rank). The
# verdict below says how each cell fared against the learned gate.

# %% [markdown]
# ```{attnrank-table} loss_design
# The two cells the rule reads, per rank measure and model: paired by seed, the difference init × s − stock of the
# initial rank and of the final validation loss, the loss the higher-rank cell saves (the rule's statistic; the
# effective rank decides) and the rule's status before the learned gate.
# ```

# %% [markdown]
# ## Verdict
#
# The rule, as {ref}`stated above <loss-rule>`, was frozen before any of its init × s runs was trained, here or in
# the recorded checks (its stock runs are the shared sweep's, which its earlier versions read), and is applied on the
# primary measure; the table below the verdict applies it with every rank measure. What the designs of its earlier
# versions found on the same builds, read after they were frozen, is recorded in {doc}`changes`: a reader should
# weigh it beside this verdict.

# %% [markdown]
# **Verdict:** {glue:md}`loss_badge` {glue:md}`loss_summary` Regime: {glue:md}`loss_regime`.
#
# The same frozen rule on the recorded checks, on the effective rank: on fresh seeds, trained after it was frozen,
# {glue:text}`reproducibility.ipynb::repro_confirm_loss:s`; on the second corpus, its init × s runs also trained after
# the rule was frozen, {glue:text}`reproducibility.ipynb::repro_stdlib_loss:s`; in the scale check (three times the
# training steps, its init × s runs trained after the freeze as well),
# {glue:text}`reproducibility.ipynb::repro_scale_loss:s` ({doc}`reproducibility`).
#
# The same rule with every rank measure:
#
# ```{attnrank-table} loss_by_measure
# The loss rule applied with every rank measure in turn; the verdict above uses the effective rank.
# ```
#
# Beside the verdict: convergence speed gives $\rho$ = {glue:text}`loss_speed_rho_modernbert` (ModernBERT) and
# {glue:text}`loss_speed_rho_gpt2` (GPT-2) across all runs, and {glue:text}`loss_speed_within_modernbert` /
# {glue:text}`loss_speed_within_gpt2` within temperatures. In the head-dimension grid, where rank moves without the
# temperature, $\rho$(initial rank, final validation loss) is {glue:text}`loss_val_hd1_modernbert` (ModernBERT) and
# {glue:text}`loss_val_hd1_gpt2` (GPT-2) at $\tau = 1$, and {glue:text}`loss_val_hdmin_modernbert` (ModernBERT) and
# {glue:text}`loss_val_hdmin_gpt2` (GPT-2) at $\tau$ = {glue:text}`loss_tau_min`.
#
# The {doc}`causal chapter <causal>` asks the question from the other side, on its own runs (trained under the
# conditions P3 needs): when the temperature
# changes the loss, does the loss follow the initial logit scale (and so the initial rank) or the query/key step size?
# Its answer in this build: {glue}`causal.ipynb::causal_badge` {glue:text}`causal.ipynb::causal_effect:s`
# (“scale − step”: the initial logit scale alone minus the query/key step size alone; regime:
# {glue:text}`causal.ipynb::causal_regime_brief:s`).
