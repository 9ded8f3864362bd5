# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Temperature: does a colder softmax raise the attention rank?
#
# **Claim (iii) of the study, in our words.** Dividing the attention logits by a smaller temperature raises the rank
# of the attention matrices at initialisation, and (through claim (ii), a higher rank goes with a lower loss) a colder
# softmax trains to a lower loss {cite}`min2023efficiency`. The study compares the standard transformer
# {cite}`vaswani2017attention` with temperatures a thousand times smaller.
#
# We write the attention of one head as
#
# $$A = \operatorname{softmax}\!\left(\frac{QK^\top}{T}\right), \qquad T = \tau\sqrt{d_\mathrm{head}},$$
#
# so the temperature *ratio* $\tau = 1$ is the stock BERT {cite}`devlin2019bert` and GPT-2
# {cite}`radford2019language`, and $\tau = 10^{-3}$ is the study's cold setting. This chapter sweeps $\tau$ over a
# grid of {glue:text}`temp_grid_text`, trains both models from scratch at every grid point with several seeds, and
# asks two separate questions:
#
# 1. does a lower $\tau$ raise the rank *at initialisation* (for every rank measure of the chapter on measuring rank)?
# 2. does a lower $\tau$ give a lower validation loss after training?
#
# One setting, the parameter `tau` below, is shown in detail against the baseline $\tau = 1$; change it with
# `papermill temp.ipynb out.ipynb -p tau 0.3` (a value off the grid trains its own runs, for both architectures and
# every seed of the sweep).
#
# **The rules, fixed before looking.** Both questions are judged per architecture on the runs of the grid (one value
# per run: the run is the independent unit, never a probe sequence), and the claim is made for both BERT and GPT-2, so
# it is *supported* only if it holds for both, *not supported* if the data rule it out for either, and otherwise
# *inconclusive at this scale*.
#
# 1. *Rank* (verdict `temp`). The statistic is the study's own comparison: the mean initial rank (primary measure, the
#    effective rank) at the coldest grid value $\tau = 10^{-3}$ minus its mean at the stock $\tau = 1$, with Welch's
#    $t$ interval (95%) and an exact permutation test over seeds. Supported if the interval lies above zero, not
#    supported if below. The theory below predicts a *peak* rather than a monotone trend, so beside the verdict we
#    report where on the grid the mean initial rank peaks, with a stratified-bootstrap interval on the grid (a peak is
#    *interior* when the interval excludes both ends). The same rule is applied with every rank measure.
# 2. *Loss* (verdict `temp_loss`). The study's claim is that a colder softmax trains to a lower loss, i.e. Spearman's
#    $\rho(\log\tau, \text{final loss}) > 0$. Supported if the 95% interval (BCa bootstrap over runs,
#    {glue:text}`temp_n_resamples` resamples) lies above zero, not supported (colder trains *worse*) if below. Beside
#    it: the grid value with the lowest mean final loss.
#
# When a verdict is not supported we state how many seeds (or runs) would resolve the pre-registered effect at the
# observed seed spread: one unit of effective rank for the rank comparison, $|\rho| = 0.5$ for the loss correlation.
#
# **What changed from the previous version of this chapter, and why.** The rank verdict was a Spearman correlation of
# $\log\tau$ with the rank at relative tolerance $10^{-2}$; a rank correlation tests a monotone trend, while the
# chapter predicts a peak, and its 2,000-resample percentile interval moved with the bootstrap seed and the row order.
# The verdict now tests the stated shape: the study's two-point comparison (an exact test and a $t$ interval, which
# need no resampling) plus the location of the peak. The primary measure is now the effective rank, which, unlike a
# numerical rank, is not saturated by the causal mask of GPT-2 at $n =$ {glue:text}`temp_n` tokens; the uniform
# (causal) baseline is drawn beside the runs. The loss question, whether a colder softmax trains better or worse, is
# now its own verdict.

# %% tags=["parameters"]
profile = "auto"
seeds = None
taus = None
head_dims = None
tau = 0.25
dataset = None  # training corpus: shakespeare or hf:NAME[:CONFIG]; None: ATTNRANK_DATASET or shakespeare

# %%
import math
import time

import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from attnrank import baselines, book, evidence, experiments, glossary, rules, runs, stats, temp
from attnrank.plots import sweeps
from attnrank.plots import training as tplots
from attnrank.profiles import resolve_config

book.check_parameters(globals(), ("profile", "seeds", "taus", "head_dims", "tau", "dataset"))
profile = book.setup(profile)
t_chapter = time.perf_counter()
BASELINE, PRIMARY, fmt_tau = 1.0, rules.PRIMARY_MEASURE, glossary.fmt_setting  # fmt_tau: 0.001, 1, 9.7e7

# %% [markdown]
# ## The runs
#
# All chapters on trained models share one sweep (`experiments.main_sweep`): the temperature grid at the profile's
# standard head dimension, plus a head-dimension grid (next chapter). A cold build trains each run once; afterwards
# the run store serves them. Here we keep the temperature grid at the standard head dimension. If the detailed `tau`
# (or the baseline $\tau = 1$) is not on the grid, its runs are trained now, with the same seeds.

# %%
grid = experiments.sweep_defaults(profile, taus=taus, head_dims=head_dims, seeds=seeds)
tsweep = evidence.temperature_grid(
    profile, extra=(tau, BASELINE), taus=taus, head_dims=head_dims, seeds=seeds, dataset=dataset
)
n_seeds, head_dim0 = tsweep.seed.nunique(), int(tsweep.head_dim.iloc[0])
book.glue_all(evidence.temperature_facts("temp", tsweep, grid, tau))
display(Markdown(evidence.temperature_grid_text(tsweep, profile)))
display(*evidence.failures(tsweep, None, ("arch", "tau", "seed", "status", "failure_step", "failure_reason")))

# %% [markdown]
# {glue:text}`temp_n_runs` runs, {glue:text}`temp_n_seeds` seeds per setting, of which {glue:text}`temp_n_failed`
# diverged (listed above; they stay in every figure, drawn as red crosses, and are left out only of the statistics
# that need a final loss).
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
# We measure the logit scale directly on the freshly initialised models: the within-row standard deviation of $S$, on
# the probe sequences of the runs.

# %%
# S = Q K^T / (tau sqrt(d_head)) read at the attention hook of each freshly initialised model, seed 0
init = evidence.init_means(
    [resolve_config(a, profile, tau=t, seed=0) for a in ("bert", "gpt2") for t in sorted({tau, BASELINE})]
)
display(init.assign(tau=init.tau.map(fmt_tau))[["arch", "tau", "logit_sd", "n", PRIMARY, "attention_entropy"]].round(4))
n_tok, at = int(init.n.iloc[0]), {"tau": tau, "base": BASELINE}
uniform = baselines.uniform_ranks(n_tok)  # the content-free baseline: uniform rows (causal for GPT-2)
book.glue_all(evidence.init_facts("temp", init, uniform, at, primary=PRIMARY))

# %% [markdown]
# At $\tau = 1$ the logits of BERT have a within-row standard deviation of {glue:text}`temp_logit_sd_base_bert:.3g`
# (GPT-2: {glue:text}`temp_logit_sd_base_gpt2:.3g`) and the attention entropy is
# {glue:text}`temp_entropy_base_bert:.4f` nats for BERT, against $\log n =$ {glue:text}`temp_log_n:.4f` for exactly
# uniform rows over $n =$ {glue:text}`temp_n` tokens. At the detailed setting $\tau =$ {glue:text}`temp_tau` the
# logits are $1/\tau$ times larger ({glue:text}`temp_logit_sd_tau_bert:.3g` for BERT,
# {glue:text}`temp_logit_sd_tau_gpt2:.3g` for GPT-2), with entropy {glue:text}`temp_entropy_tau_bert:.4f` nats (BERT).
# Lowering $\tau$ at initialisation therefore does one thing: it moves every head away from uniform attention.
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

# %%
ranks_long = runs.long_form(tsweep)
refs = sweeps.reference_lines(uniform, "uniform attention (causal for GPT-2)")
fig = sweeps.by_setting(ranks_long, "tau", facet="measure", style="when", highlight=tau, baseline=BASELINE, refs=refs)
book.show(
    fig,
    pd.concat([ranks_long.assign(kind="run"), refs.assign(kind="uniform baseline")], ignore_index=True),
    "temp_rank_vs_tau",
    f"Attention rank against the temperature ratio tau (log axis), one panel per rank measure, at "
    f"initialisation (solid) and after training (dashed); BERT and GPT-2; mean over seeds with +-1 sd bars, faint "
    f"dots: single runs. Dotted horizontal lines: the same measure for uniform attention (BERT) and uniform causal "
    f"attention (GPT-2) over n = {n_tok} tokens, the content-free baseline. Red: the detailed tau = {fmt_tau(tau)}; "
    f"dashed black line: the baseline tau = 1; red crosses: diverged runs ({evidence.caption(tsweep, profile)}, head "
    f"dimension {head_dim0}).",
)

# %% [markdown]
# The dotted lines are what a head that ignores the content would give: uniform rows have effective rank
# {glue:text}`temp_uniform_bert:.2f` (BERT), and the uniform causal matrix of GPT-2 has effective rank
# {glue:text}`temp_uniform_gpt2:.2f`; at relative tolerance $10^{-2}$ the uniform causal matrix already has full rank
# ({glue:text}`temp_uniform_causal_rank_rtol:.0f` of {glue:text}`temp_n`), so that measure cannot tell GPT-2's content
# from its mask.
#
# ## The verdict on the rank: the study's comparison and the peak
#
# The rule (above) on the runs of the grid only; off-grid settings trained for the detailed view are left out, so the
# verdict does not depend on the `tau` parameter.

# %%
grid_runs = tsweep[tsweep.tau.isin(grid["taus"])]
tau_min = float(min(grid["taus"]))
rank_v = {
    m: rules.temperature_rank(
        grid_runs, f"initial_{m}", stock=BASELINE, cold=tau_min, effect=rules.TEMP_RANK_EFFECT, archs=("bert", "gpt2")
    )
    for m in glossary.RANK_MEASURES
}
rv = rank_v[PRIMARY]
display(
    Markdown(
        f"The rule with every rank measure (Welch-t interval of the difference of means, exact permutation p; "
        f"peak: argmax of the mean initial rank over the {len(grid['taus'])} grid values, stratified bootstrap "
        f"interval on the grid):"
    )
)
display(temp.temperature_table(rank_v, tau_min))
book.glue_all(
    {
        **evidence.rank_verdict_facts("temp", rv),
        "temp_n_resamples": f"{stats.N_RESAMPLES:,}",
        **evidence.means_at(tsweep, f"initial_{PRIMARY}", {**at, "min": tau_min}, prefix="temp_rank0_"),
        "temp_min_p": 2 / math.comb(2 * n_seeds, n_seeds),
        "temp_rank_min_p": float(min(rv[a].verdict.estimate.p for a in ("bert", "gpt2"))),
    }
)

# %% [markdown]
# The mean initial effective rank goes from {glue:text}`temp_rank0_base_bert:.2f` at $\tau = 1$ to
# {glue:text}`temp_rank0_tau_bert:.2f` at $\tau =$ {glue:text}`temp_tau` and {glue:text}`temp_rank0_min_bert:.2f` at
# $\tau =$ {glue:text}`temp_tau_min` for BERT (GPT-2: {glue:text}`temp_rank0_base_gpt2:.2f`,
# {glue:text}`temp_rank0_tau_gpt2:.2f`, {glue:text}`temp_rank0_min_gpt2:.2f`). The study's comparison, coldest minus
# stock, is {glue:text}`temp_cold_diff_bert` runs for BERT (exact permutation $p =$ {glue:text}`temp_cold_p_bert:.2f`)
# and {glue:text}`temp_cold_diff_gpt2` runs for GPT-2 ($p =$ {glue:text}`temp_cold_p_gpt2:.2f`). With
# {glue:text}`temp_n_seeds` seeds per arm the Welch interval has few degrees of freedom and the smallest possible
# exact $p$ is {glue:text}`temp_min_p:.2f`, so only a difference far larger than the seed spread can clear the rule;
# at the observed seed spread of the initial rank ({glue:text}`temp_rank_spread_bert:.3f` for BERT,
# {glue:text}`temp_rank_spread_gpt2:.3f` for GPT-2) the seeds per arm needed to resolve one unit of effective rank are
# {glue:text}`temp_rank_needed_bert` (BERT) and {glue:text}`temp_rank_needed_gpt2` (GPT-2). The mean initial rank
# peaks at $\tau =$ {glue:text}`temp_peak_bert` for BERT and at $\tau =$ {glue:text}`temp_peak_gpt2` for GPT-2.
#
# Two of the measures in the table are not counts of directions: the stable rank is 1 for uniform rows and grows as
# attention sharpens; the attention entropy (left out of the rule, which is about rank) is $\log n$ for uniform rows
# and falls as attention sharpens. For GPT-2 a colder softmax moves each row from uniform-over-the-visible-keys toward
# its argmax, which can only move the rank from the uniform causal value toward the number of distinct argmax columns
# (P2); the figure shows on which side of the dotted line each temperature lies.
#
# ## The detailed setting against $\tau = 1$: rank through training
#
# The probe measured the ranks every few steps. Below, the mean over heads, layers and sequences through training for
# the detailed $\tau$ (bold) and the baseline, for the primary measure, the study's absolute rule and the rank at
# relative tolerance $10^{-2}$ (band: min-max over seeds; dotted: uniform causal attention, GPT-2), drawn as in the
# chapter on dynamics.

# %%
pair = tsweep[np.isclose(tsweep.tau, tau) | np.isclose(tsweep.tau, BASELINE)]
summ = evidence.rank_curves(pair, [PRIMARY, "rank_atol_1e-8", "rank_rtol_1e-2"])
fig = tplots.measure_trajectories(
    summ, uniform, label="uniform causal attention (GPT-2)", y="value", highlight=tau, archs=("gpt2",), height=2.4
)
book.show(
    fig,
    summ[["arch", "tau", "seed", "status", "measure", "step", "value"]],
    "temp_rank_curves",
    f"Mean attention rank through training for tau = {fmt_tau(tau)} (bold) and tau = 1, three measures (rows) for "
    f"BERT and GPT-2 (columns); line: mean over seeds, band: min-max over seeds; dotted: uniform causal attention "
    f"(GPT-2) ({evidence.caption(pair, profile)}).",
)

# %% [markdown]
# ## Per-layer ranks
#
# The mean hides the layers. Here the primary rank of each layer at initialisation (filled markers) and after training
# (open markers), for the two temperatures (error bars: $\pm 1$ sd over heads and seeds).

# %%
layer_df = evidence.layer_ranks(pair, PRIMARY)
fig = sweeps.per_layer(layer_df, highlight=tau, baseline=BASELINE, ylabel=glossary.MEASURE_LABELS[PRIMARY])
book.show(
    fig,
    layer_df,
    "temp_rank_per_layer",
    f"Primary rank ({glossary.MEASURE_LABELS[PRIMARY]}) per layer at initialisation (filled) and after training "
    f"(open), tau = {fmt_tau(tau)} (red) and tau = 1 (black); +-1 sd over heads and seeds ({evidence.caption(pair, profile)}).",
)

# %% [markdown]
# ## Does a lower temperature give a lower loss?
#
# The validation loss (cross-entropy in nats per predicted token, masked tokens for BERT, next tokens for GPT-2)
# through training for every temperature of the sweep: one curve per $\tau$ coloured on a log scale, $\tau = 1$ bold,
# as in the chapter on loss.

# %%
evals = evidence.load_table(tsweep, "eval_log")
fig = tplots.val_loss_trajectories(evals, highlight=BASELINE)
book.show(
    fig,
    evals[["arch", "tau", "seed", "status", "step", "val_loss"]],
    "temp_loss_curves",
    f"Validation loss through training for every temperature ratio tau (colour, log scale; tau = 1 bold); line: "
    f"mean over seeds, band: min-max over seeds; dashed ending in a cross: diverged runs ({evidence.caption(tsweep, profile)}).",
)

# %%
loss_df = tsweep[["key", "arch", "tau", "seed", "status", "final_val_loss", "initial_val_loss"]]
fig = sweeps.by_setting(
    loss_df,
    "tau",
    "final_val_loss",
    facet="arch",
    highlight=tau,
    baseline=BASELINE,
    ncols=2,
    width=4.0,
    height=3.2,
    ylabel="final validation loss (nats/token)",
)
book.show(
    fig,
    loss_df,
    "temp_final_loss_vs_tau",
    f"Final validation loss against tau (log axis), one panel per architecture with its own y axis (masked-token "
    f"loss for BERT, next-token loss for GPT-2); mean over seeds with +-1 sd bars, faint dots: single runs; red: "
    f"tau = {fmt_tau(tau)}; dashed: tau = 1; crosses at the top: diverged runs ({evidence.caption(tsweep, profile)}).",
)

# %% [markdown]
# The rule for the loss (above) on the completed runs of the grid:

# %%
loss_v = rules.temperature_loss(
    grid_runs[grid_runs.status == "complete"], "final_val_loss", effect=rules.TEMP_LOSS_EFFECT, archs=("bert", "gpt2")
)
book.glue_all(
    {
        **evidence.loss_verdict_facts("temp", loss_v),
        **evidence.means_at(
            tsweep[tsweep.status == "complete"], "final_val_loss", {**at, "min": tau_min}, prefix="temp_loss_"
        ),
    }
)
display(temp.temperature_loss_table(loss_v))

# %% [markdown]
# Spearman's $\rho(\log\tau, \text{final loss})$ is {glue:text}`temp_loss_rho_bert` runs for BERT and
# {glue:text}`temp_loss_rho_gpt2` runs for GPT-2 (a negative $\rho$: the colder, the worse). The lowest mean final
# loss on the grid is at $\tau =$ {glue:text}`temp_loss_best_bert` for BERT and $\tau =$
# {glue:text}`temp_loss_best_gpt2` for GPT-2. At $\tau =$ {glue:text}`temp_tau` the mean final loss is
# {glue:text}`temp_loss_tau_bert:.3f` (BERT) and {glue:text}`temp_loss_tau_gpt2:.3f` (GPT-2), against
# {glue:text}`temp_loss_base_bert:.3f` and {glue:text}`temp_loss_base_gpt2:.3f` at $\tau = 1$ and
# {glue:text}`temp_loss_min_bert:.3f` and {glue:text}`temp_loss_min_gpt2:.3f` at $\tau =$ {glue:text}`temp_tau_min`;
# the seed spread of the final loss is {glue:text}`temp_loss_spread_bert:.4f` nats (BERT) and
# {glue:text}`temp_loss_spread_gpt2:.4f` (GPT-2). By P3 this is an effect of the initial logit scale and of the
# effective learning rate of $W_Q, W_K$; whether it goes *through* the rank is the question of the chapter on loss.
#
# ## Verdicts

# %% tags=["remove-output"]
summary = temp.temperature_summary(
    rv, label=glossary.MEASURE_LABELS[PRIMARY], cold=tau_min, profile=profile, n_seeds=n_seeds
)
book.verdict("temp", rv.status, summary, by_measure={m: rank_v[m].status for m in glossary.RANK_MEASURES})
book.verdict("temp_loss", loss_v.status, temp.temperature_loss_summary(loss_v, profile=profile, n_seeds=n_seeds))
_ = book.glue("temp_seconds", float(time.perf_counter() - t_chapter))
_ = book.glue("temp_extra_seconds", float(tsweep.attrs["extra_seconds"]))

# %% [markdown]
# **Claim (iii), a colder softmax raises the initial rank: {glue:text}`temp_status`.** {glue:text}`temp_summary`
#
# **A colder softmax trains to a lower loss: {glue:text}`temp_loss_status`.** {glue:text}`temp_loss_summary`
#
# The rank half of the claim is a statement about initialisation, and the mechanism is simple: $\tau$ multiplies the
# initial logits by $1/\tau$, and the rank measures how far the softmax is from its uniform first-order term, up to
# the hardmax limit where it falls again. Whether that initial rank then matters for the loss, separately from the
# temperature's direct effect on optimisation (P3), is tested in the chapter on loss; the comparison with head
# dimension, the other lever the study names, is in the next chapter.
#
# ```{note}
# Re-run this chapter with another detailed temperature, for example
# `papermill chapters/temp.ipynb /tmp/temp.ipynb -p tau 0.3 -p profile quick`. A value off
# the grid trains its runs (both architectures, every seed) and adds them to the figures;
# the verdicts are always computed on the grid.
# ```
