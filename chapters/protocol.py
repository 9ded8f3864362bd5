# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The study's own protocol, and whether the rank is set early
#
# The study {cite}`min2023efficiency` compared the stock temperature $T = \sqrt{d_h}$ ($\tau = 1$)
# with $T = 0.001\sqrt{d_h}$ ($\tau = 10^{-3}$), counted as rank the singular values above
# $10^{-8}$, and averaged that count over layers, heads and **4 training plus 4 test examples** of
# one BERT {cite}`devlin2019bert` and one GPT-2 {cite}`radford2019language` per temperature; the
# reviewers asked whether four examples are enough. Our runs (ModernBERT and GPT-2) record every measure for each of
# {glue:text}`protocol_n_val` held-out sequences and {glue:text}`protocol_n_train` training blocks
# at every probe step, so we replay that protocol many times on the book's main grid (no new runs)
# beside ours. With probes on a log-spaced schedule early in training we also ask from which step
# the rank predicts the final one (the study: the rank settles early).

# %% tags=["parameters", "hide-input"]
profile: str = "auto"  # compute profile: auto (paper on a GPU, quick on a CPU), ci, quick, paper or scale
seeds: list = None  # seeds: a list, or n for seeds 0..n-1; None: the profile's
n_draws: int = 1000  # random draws of the study's 4 + 4 examples and its one run per temperature
dataset: str = None  # training corpus: shakespeare, stdlib or hf:NAME[:CONFIG]; None: ATTNRANK_DATASET or shakespeare

# %% tags=["hide-input"]
from attnrank import book
from attnrank.sections import protocol

params = book.check_parameters(globals(), protocol.section)
book.publish(protocol.section(**params))

# %% [markdown]
# (protocol-rule)=
# ## The rules (the protocol's: version 2, its comparison moved next to the stock temperature after looking on 2026-12-07; set early: version 2, its window moved past the warm-up after looking on 2026-12-05; see {doc}`changes`)
#
# **The study's statistic** is the mean rank at $\tau = 1$ minus the mean rank at $\tau = 10^{-3}$,
# each the average over 4 + 4 examples of one run; its *conclusion* is the sign (which temperature
# has the higher rank). One *draw* picks one run per temperature among our
# {glue:text}`protocol_n_seeds` seeds and 4 training and 4 held-out sequences from the records.
# The **flip rate** is the share of {glue:text}`protocol_n_draws` draws whose sign differs from the
# sign of the same statistic computed with every run and every recorded sequence (the reference).
#
# Verdict `protocol`, per architecture, at the last probe step, on the comparison where four examples could
# mislead: $\tau = 1$ against the trained temperature next to it, $\tau$ = {glue:text}`protocol_near` (the
# statistic is the same, the mean rank at $\tau = 1$ minus the mean rank there). The protocol is *stable* if the
# flip rate's 95% interval (exact binomial over draws) lies below {glue:text}`protocol_max_flip`,
# and it *agrees* with ours if our statistic (primary measure, the effective rank, every probe
# sequence, every seed, Welch interval) resolves a sign and it is the reference's. Both must hold
# for both architectures; not supported if either fails for either, else inconclusive. Version 1 asked this of the
# study's own comparison, three decades apart, whose effect is so large that no draw of four examples could flip
# it; that comparison is reported beside the verdict.
#
# **Set early**: for every probe step $k$ Spearman's $\rho$ over the runs of the
# main grid that learned (each run held to the target of {doc}`learned`) between the mean rank (primary
# measure) at $k$ and at the last step, with a 95% percentile bootstrap over runs. Supported for an
# architecture if at some step after the learning-rate warm-up ({glue:text}`protocol_warmup` steps) and
# within the first {glue:text}`protocol_early_pct` of training the interval lies above $\rho$ =
# {glue:text}`protocol_rho_min` (we report the first such step), not supported if every early
# interval lies below it; both architectures must hold.
#
# ## The figures as the study would have drawn them
#
# One run per temperature (the first seed), the study's rank averaged over the first 4 training and
# 4 held-out sequences, at the probe steps {glue:text}`protocol_steps`; below it the validation
# loss of the same runs.

# %% [markdown]
# ```{glue:figure} protocol_study_view
# :name: fig-protocol_study_view
# :alt: The study's figures replayed: rank through training at two temperatures for one run each, and the validation loss below, for ModernBERT and GPT-2.
#
# The study's view: rank (absolute threshold $10^{-8}$, mean over 4 training + 4 held-out sequences, layers and
# heads) and validation loss through training at $\tau = 1$ (bold) and $\tau = 0.001$, one run each
# {glue:md}`protocol_study_view__source`
# ```

# %% [markdown]
# ## How much do four plus four examples decide?
#
# The same statistic over {glue:text}`protocol_n_draws` random draws, at initialisation and at the
# last probe step (after {glue:text}`protocol_final_step`); the dotted line is zero, where the
# conclusion flips. The table gives the flip rate at every probe step; at the last one it is
# {glue:text}`protocol_flip_modernbert` for ModernBERT and {glue:text}`protocol_flip_gpt2` for GPT-2.

# %% [markdown]
# ```{glue:figure} protocol_draws
# :name: fig-protocol_draws
# :alt: Dot plots with quartile boxes of the study's statistic over random draws of four plus four examples, at initialisation and at the last step, with zero marked.
#
# The study's statistic over {glue:text}`protocol_n_draws` draws of one run per temperature and 4 + 4 sequences, one
# dot per draw (box: quartiles). {glue:md}`protocol_draws__source`
# ```
#
# ```{attnrank-table} protocol_flips
# The flip rate of the study's 4 + 4 protocol on its own comparison (τ = 1 against 0.001) at every probe step, per
# model: the share of draws whose sign differs from the reference, with an exact binomial 95% interval.
# ```
#
# On the comparison next to the stock temperature, $\tau = 1$ against {glue:text}`protocol_near`, the flip rate at
# the last step is {glue:text}`protocol_near_flip_modernbert` for ModernBERT and
# {glue:text}`protocol_near_flip_gpt2` for GPT-2:
#
# ```{attnrank-table} protocol_near_flips
# The flip rate of the study's 4 + 4 protocol on τ = 1 against the trained temperature next to it (the comparison the
# rule decides on) at every probe step, per model, with an exact binomial 95% interval.
# ```
#
# The other small comparison is the one the loss chapter ({doc}`loss`) reports beside its rule: within a temperature
# the initial rank moves little (from seed to seed, and where the head-dimension grid adds runs, with the head
# dimension), so its correlation with the final loss is where four examples per run could mislead most. The protocol
# rule does not read it; we report it beside. {glue:text}`protocol_within_text`

# %% [markdown]
# ## The same comparison under our protocol
#
# Here the comparison reads every probe sequence and every seed (line: mean over seeds, band: min-max), under the
# study's rank and under our primary measure.

# %% [markdown]
# ```{glue:figure} protocol_our_view
# :name: fig-protocol_our_view
# :alt: Rank through training at two temperatures over every seed and sequence, under the study's rank and the effective rank, for ModernBERT and GPT-2.
#
# Our view: mean rank over all {glue:text}`protocol_n_val` held-out probe sequences, layers and heads, at τ = 1
# (bold) and 0.001, mean and min-max over {glue:text}`protocol_n_seeds` seeds {glue:md}`protocol_our_view__source`
# ```

# %% [markdown]
# ## Verdict on the protocol
#
# **Verdict:** {glue:md}`protocol_badge` {glue:md}`protocol_summary` Regime: {glue:md}`protocol_regime`.
#
# *The study's own comparison, reported beside it.* {glue:text}`protocol_study_summary`
#
# *Where the two protocols agree and where they part.* On $\tau = 1$ against {glue:text}`protocol_near`:
# {glue:text}`protocol_near_agreement`. On the study's comparison: {glue:text}`protocol_agreement`.
# The protocols part in the measure: the study's threshold counts singular values below
# float32 resolution (rows sum to one, so $\sigma_1 \ge 1$), so near-uniform attention at
# $\tau = 1$ can score close to full rank where the effective rank sees nearly rank one; and one
# run per setting shows no spread over seeds, which our intervals carry.

# %% [markdown]
# ## Is the rank set early?
#
# Spearman's $\rho$ between the mean rank at each probe step and at the last step, over the runs of the
# main grid that learned ({glue:text}`protocol_n_learned`, of temperatures and head dimensions; a run at a
# cold temperature whose softmax never learned to attend says nothing about training); primary measure;
# 95% percentile bootstrap over runs, a tenth of the book's usual resamples per step. A probe during the
# warm-up is not early training: the step size is still growing from zero.

# %% [markdown]
# ```{glue:figure} protocol_set_early
# :name: fig-protocol_set_early
# :alt: Spearman's ρ between the rank at each probe step and the final rank, against the step, with intervals and the threshold line.
#
# Spearman ρ (95% percentile bootstrap over runs) of the mean effective rank at each probe step against the last
# step, per architecture; dotted: the pre-registered {glue:text}`protocol_rho_min`.
# {glue:md}`protocol_set_early__source`
# ```

# %% [markdown]
# **Verdict:** {glue:md}`set_early_badge` {glue:md}`set_early_summary`
