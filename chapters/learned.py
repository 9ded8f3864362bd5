# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Have the models learned?
#
# Every claim this book tests on trained models is a claim about transformers that use their attention. A model that
# predicts no better than a count model of one neighbouring token has not started to do so, and a claim that fails on
# it says nothing about the study. So before any claim: where do the book's models stand?
#
# **Three models.** The book's masked LM is ModernBERT {cite}`warner2024modernbert` (rotary positions, pre-LayerNorm,
# full attention in every layer), its causal LM GPT-2 {cite}`radford2019language`, each built from the stock
# `transformers` class with the temperature in its attention function. The study's BERT {cite}`devlin2019bert`
# (post-LayerNorm, learned absolute positions) is trained here beside them, at the same sizes and data, to show why it
# is not the book's masked LM: at the default profile on a CPU it does not leave the plateau of a model that reads no
# context, where ModernBERT does; where both stand in this build is below.
# The masked LMs read a WordPiece vocabulary of {glue:text}`learned_vocab_modernbert` tokens, GPT-2 a byte-level one of
# {glue:text}`learned_vocab_gpt2` (the 256 bytes, the end-of-text token and the most frequent merges): a token that
# carries little by itself leaves more of the prediction to the context, and so to attention.
#
# **Four count models that need no attention**, fitted on the training blocks and scored on exactly the validation
# targets of the runs (`attnrank.analysis.baselines`):
#
# * *unigram*: how often each token occurs (Laplace smoothing);
# * *bigram*: the token given the visible token before it (Witten-Bell interpolation with the unigram); for a masked
#   LM, the left neighbour of the masked position, which may itself be masked;
# * *two-sided* (masked LMs only): the token given both visible neighbours: the left and the right bigram combined as
#   independent evidence, interpolated with the counts of the triple (left, token, right);
# * *context-free* (masked LMs only): what the masking gives away. HF's collator shows 80% of the scored tokens as
#   `[MASK]`, 10% as a random token and 10% unchanged {cite}`devlin2019bert`, so a model that reads no neighbour at
#   all predicts the unigram at `[MASK]` and, where a scored token is shown, the chance that it was kept.
#
# A GPT-2 reaches its bigram without attention (a token's own embedding predicts the next token), so ending below it
# is necessary, not sufficient, for using attention; a neural model also smooths better than counts. A masked-LM
# position shown as `[MASK]` sees nothing of its own token: every nat a masked LM gains over the context-free model
# comes through attention to other positions, and beating the two-sided model needs more than the two nearest ones. At
# $\tau = 1$ this book's ModernBERT ends {glue:text}`learned_context_free_modernbert` the context-free model, the study's
# BERT {glue:text}`learned_context_free_bert` it.
#
# **The targets, fixed before the runs were trained.** At $\tau = 1$, in every seed, each model's final validation loss
# is at least {glue:text}`learned_target_gpt2` nats below its bigram count model (for the masked LMs, the left
# neighbour's), and attention is worth at least {glue:text}`learned_worth` nats (the attention ablation gain, below);
# the two-sided model and, for GPT-2, nothing stronger are reported beside it. The same target is the *learned gate* of
# every verdict on trained models ({doc}`changes`). The study's BERT is held to it for the record.

# %% tags=["parameters", "hide-input"]
profile: str = "auto"  # compute profile: auto (paper on a GPU, quick on a CPU), ci, quick, paper or scale
seeds: list = None  # seeds: a list, or n for seeds 0..n-1; None: the profile's
dataset: str = None  # training corpus: shakespeare, stdlib or hf:NAME[:CONFIG]; None: ATTNRANK_DATASET or shakespeare

# %% tags=["hide-input"]
from attnrank import book
from attnrank.sections import learned

params = book.check_parameters(globals(), learned.section)
book.publish(learned.section(**params))

# %% [markdown]
# ## Validation loss against compute
#
# The shared grid of the trained-model chapters and the study's BERT, {glue:text}`learned_n_runs` runs trained for {glue:text}`learned_steps` steps
# ({glue:text}`learned_profile` profile). The figure follows the runs at $\tau = 1$ and at the coldest temperature of the
# grid through training, against the training FLOP spent on them.
#
# ```{glue:figure} learned_loss
# :name: fig-learned_loss
# :alt: Line charts of validation loss against training FLOP on a log axis, one panel per model, one line per run at the stock and the coldest temperature, beside horizontal lines for the unigram, bigram, two-sided and context-free count models.
#
# Validation loss through training against training FLOP (6 N + 12 L n d per token), {glue:text}`learned_profile`
# profile, {glue:text}`learned_n_shown` runs ({glue:text}`learned_shown_seeds` seeds per temperature), beside the count
# models fitted on the training blocks and scored on the same validation targets: unigram (dotted), bigram (dashed),
# and for the masked LMs the two-sided model of both neighbours (dash-dot) and the context-free model (long and short
# dashes: the unigram at [MASK], and the chance a shown token was kept; a masked LM at that loss uses no context).
# {glue:md}`learned_loss__source`
# ```
#
# Over the whole grid: {glue:text}`learned_regime`. Over the runs drawn: {glue:text}`learned_regime_shown`.
#
# **The targets:** {glue:text}`learned_targets_text`
#
# ```{attnrank-table} learned_targets
# Each model's target and its τ = 1 runs against it: the worst and the mean gap to the baseline, the mean gap to the
# two-sided and the context-free count models, and what attention is worth.
# ```
#
# ## What attention is worth
#
# Ending below a count model does not show that a model uses its attention. So every trained run is evaluated a
# second time, with the same final weights and its attention made content-free: every attention matrix uniform over
# the positions its query may see (causal for GPT-2), the limit $\tau \to \infty$ of the softmax taken exactly
# (`attnrank.analysis.ablation`). The *attention ablation gain* is that loss minus the run's validation loss, in nats per
# token on the run's own validation targets: what the choice of positions, rather than the mean of the context, is
# worth. At $\tau = 1$, GPT-2: {glue:text}`learned_attention_gpt2`; ModernBERT:
# {glue:text}`learned_attention_modernbert`; the study's BERT: {glue:text}`learned_attention_bert`. Every verdict on
# trained models states it in its regime clause.
#
# **What the book does with a model that has not learned.** Every verdict on trained models applies one gate
# ({doc}`changes`): an architecture's case counts only when it meets the target above in every one of its stock
# runs ($\tau = 1$ at the profile's head dimension; each verdict names them); otherwise that case is *inconclusive at this scale*, whatever its statistics say, and the chapter
# states what they alone would have given.
#
# ```{attnrank-table} learned_attention
# What attention is worth at each temperature, per model: the final loss and the loss with content-free attention,
# each against the bigram model, and their difference over the runs at that temperature, every head dimension of the grid pooled (mean, smallest and largest; the targets above read the stock head dimension alone).
# ```
#
# Models that learn cost more steps per run, so within the cold build's budget the default profile trains fewer
# settings than a profile of shorter runs could: every verdict states the runs it rests on, its interval widens with fewer runs, and an
# unresolved verdict states how many runs would resolve it ({doc}`reproducibility` lists the runs and steps each
# verdict of this build rests on).
#
# ## Where the compute goes
#
# The CPU seconds of the shared grid's runs, as they recorded them (process CPU time: training steps, rank probes,
# validation loss):
#
# ```{attnrank-table} learned_split
# The CPU seconds of the shared grid's runs per model, split into training steps, rank probes and validation, with
# the probes' share.
# ```
#
# A cold build of the book trains the runs below before any chapter executes; what more it would cost to hold more
# in the default build itself (another seed, the masked LM's half of the causal design, which the default trains for
# GPT-2 alone, and the second corpus, which the book runs as recorded checks of their own, {doc}`reproducibility`) is
# the second table. Both are costed from each run's training FLOP at the rate the shared grid's runs measured on this machine
# ({glue:text}`learned_rate_gpt2` FLOP per CPU second for GPT-2, {glue:text}`learned_rate_modernbert` for ModernBERT,
# {glue:text}`learned_rate_bert` for BERT, probes and validation included); two cores train two runs at a time.
#
# ```{attnrank-table} learned_budget_build
# This build's runs by part: training FLOP, CPU seconds and minutes on two cores, costed at the rate this machine
# measured.
# ```
#
# ```{attnrank-table} learned_budget_next
# What each further addition would cost at the same rate.
# ```
