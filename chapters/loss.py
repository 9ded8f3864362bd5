# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
#     formats: ipynb,py:percent
#     notebook_metadata_filter: kernelspec,jupytext,mystnb
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Higher rank, lower loss? Association and cause
#
# The study's second claim {cite}`min2023efficiency` is that **models whose attention
# matrices have a higher rank reach a lower loss and converge faster**. Its evidence is a
# sweep over the softmax temperature: a lower temperature gives a higher initial rank, and
# (so the claim goes) a lower loss. The reviewers' first objection is that this does not
# separate rank from temperature: the temperature could change the optimisation directly,
# and the rank could be a bystander.
#
# There is a concrete reason to take the objection seriously. The attention logits are
# $Q K^\top / T$ with $T = \tau\sqrt{d_h}$, and $Q = X W_Q$, $K = X W_K$. Any attention
# pattern reachable at one $\tau$ is reachable at every other (rescale $W_Q W_K^\top$ by
# $\tau$), so $\tau$ does not limit what a trained model can express. What $\tau$ does change
# is the scale of the logits at initialisation and how fast a gradient step moves them: for
# Adam, training at temperature $\tau$ follows the same attention trajectory as training at
# $\tau = 1$ with the initial scale of $W_Q, W_K$ divided by $\sqrt\tau$ and their learning rate
# divided by $\sqrt\tau$ ({ref}`P3 <target-p3>`, proved and checked in the high-rank-target chapter). An effect of $\tau$ on the loss is,
# in that sense, an effect of initialisation scale and step size.
#
# So we ask the data three questions, on BERT {cite}`devlin2019bert` and GPT-2
# {cite}`radford2019language` trained from scratch:
#
# 1. **Association.** Across the runs of the shared sweep, does a higher initial mean rank go
#    with a lower final validation loss and with fewer steps to reach a fixed training loss?
# 2. **Beyond temperature.** Does the association survive within one temperature (each $\tau$
#    a category of its own, so any effect of $\tau$, monotone or peaked, is removed)?
# 3. **Rank moved without temperature.** In the head-dimension grid at fixed $\tau$, where
#    the initial rank changes through $d_h$ {cite}`bhojanapalli2020lowrank` and not through the
#    temperature, does more rank still mean lower loss?

# %% tags=["parameters"]
profile = "auto"
seeds = None
taus = None
head_dims = None
level_quantile = 0.75   # the convergence level is this quantile of the runs' final training losses (per arch)
smooth = 3              # logged training-loss points averaged before testing the level
dataset = None  # training corpus: shakespeare or hf:NAME[:CONFIG]; None: ATTNRANK_DATASET or shakespeare

# %%
import time

import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from attnrank import baselines, book, experiments, plots, rank, rules, stats, store
from attnrank.errors import ConfigError
from attnrank.plots import training as tplots
from attnrank.profiles import resolve_config

book.check_parameters(globals(), ("profile", "seeds", "taus", "head_dims", "level_quantile", "smooth", "dataset"))
grid = experiments.sweep_defaults(profile, taus=taus, head_dims=head_dims, seeds=seeds)
profile = book.setup(profile)
MEASURES, ARCH_LABELS = rank.MEASURES, plots.ARCH_LABELS
m = experiments.PRIMARY_MEASURE
rank_label = f"initial mean rank ({MEASURES[m].label})"

# %% [markdown]
# ## The runs
#
# The runs are the book's shared sweep (the same ones the {doc}`dynamics chapter <dynamics>` reads):
# the temperature grid $\tau \in$ {glue:text}`loss_taus` at the profile's head dimension, and a
# head-dimension grid $d_h \in$ {glue:text}`loss_head_dims` at fixed width (so more heads of
# smaller dimension) at $\tau = 1$ and at the smallest $\tau$, each with
# {glue:text}`loss_n_seeds` seeds: {glue:text}`loss_n_runs` runs, of which
# {glue:text}`loss_n_failed` diverged.

# %%
configs = experiments.main_sweep(profile, taus=taus, head_dims=head_dims, seeds=seeds, dataset=dataset)
runs = store.sweep(configs, progress=False)
default_head_dim = resolve_config("bert", profile).head_dim
runs["sweep"] = np.where(runs.head_dim == default_head_dim, "temperature grid", "head-dimension grid")
t_loaded = time.perf_counter()  # the analysis below reads the store only
n_runs, n_seeds = len(runs), runs.seed.nunique()
book.glue("loss_rho_effect", f"{rules.LOSS_EFFECT:g}")
book.glue("loss_primary_label", MEASURES[m].label)

book.glue("loss_taus", ", ".join(f"{t:g}" for t in grid["taus"]))
book.glue("loss_head_dims", ", ".join(str(h) for h in grid["head_dims"]))
book.glue("loss_n_seeds", n_seeds)
book.glue("loss_n_runs", n_runs)
book.glue("loss_n_failed", int((runs.status != "complete").sum()))


def caption_tail(df=runs):
    """Profile, runs and seeds behind a figure, for its caption."""
    return f"({profile} profile, {len(df)} runs, {df.seed.nunique()} seeds per setting)"


failed = runs[runs.status != "complete"]
if len(failed):
    display(Markdown(f"**{len(failed)} run(s) diverged.** They are left out of the correlations and drawn with a "
                     "cross (or counted in the panel) in every figure:"))
    display(failed[["arch", "tau", "head_dim", "num_heads", "seed", "failure_step", "failure_reason"]])
else:
    display(Markdown("No run diverged."))

# %% [markdown]
# (loss-rule)=
# ## The rule, fixed before looking
#
# The outcome is the final validation loss and the rank is the initial mean rank on the primary
# measure, the **effective rank** ({glue:text}`loss_primary_label`). For each architecture, two
# rank correlations, each with a 95 % interval from a bootstrap over runs:
#
# * *association*: Spearman's $\rho$(initial rank, final validation loss) across all complete
#   runs (BCa bootstrap);
# * *within temperatures*: the same correlation with $\tau$ as a categorical fixed effect (ranks
#   centred within each temperature; stratified bootstrap; stratified permutation $p$).
#
# The claim predicts both below 0. An architecture's evidence is **supported** if both intervals
# lie below 0, **not supported** if either lies wholly above 0, and **inconclusive at this scale**
# otherwise; the claim is supported if both architectures are, not supported if either is not,
# inconclusive otherwise. When not supported, we state how many runs would resolve a
# within-temperature correlation of {glue:text}`loss_rho_effect`. Convergence speed and the
# head-dimension grid are reported beside the verdict, not inside it: the former is censored and
# the latter has few runs per panel.
#
# *What changed from the previous version of this chapter, and why.* The primary measure was the
# rank at relative threshold $10^{-2}$, which on GPT-2 equals the rank of the uniform causal matrix
# (it reads the mask); it is now the effective rank. "Holding $\tau$ fixed" was a partial
# correlation on $\log\tau$, which removes only a linear trend: with a peaked response of the rank
# to $\tau$ it leaves most of the temperature's effect in (on a constructed example with no
# rank-loss link at all it stays far from zero; tested). Each $\tau$ is now its own category.
# The intervals were 2,000-resample percentile bootstraps that moved with the bootstrap seed and the
# row order; they are now 100,000 resamples on canonically ordered runs (tested stable). An
# interval that merely reaches 0 used to count against the claim ("vanishes with temperature",
# hence "not supported"); with a few seeds per temperature that is a lack of power, and it is now
# "inconclusive at this scale", with the runs that would resolve it. The sensitivity check that
# also held the seed fixed is gone: the BERT validation masks are the same in every run, so the
# seed does not change what the runs are scored on. Finally, the loss figures show a unigram and a
# bigram baseline, and the verdict states the regime the models are in.
#
# ## Loss curves
#
# First the raw material: validation loss (measured on fixed held-out blocks at every probe)
# and training loss through training, for each temperature of the grid at the default head
# dimension. The band is the range over seeds.
#
# To measure **convergence speed** we need a loss level that every architecture can be judged
# against. We take it from the data: the {glue:text}`loss_level_quantile` quantile of the
# final training losses of all complete runs of an architecture (final = mean of the last
# {glue:text}`loss_smooth` logged values). This gives {glue:text}`loss_level_bert` nats for BERT
# (MLM) and {glue:text}`loss_level_gpt2` nats for GPT-2 (CLM), the dotted lines. A run's speed is
# the first step at which its training loss, averaged over {glue:text}`loss_smooth` consecutive
# logged values, is at or below the level. Runs that never get there ({glue:text}`loss_n_censored`
# of {glue:text}`loss_n_complete` complete runs here) are **censored** (shown as hollow
# triangles at the last step) rather than dropped.
#
# The validation panels also show two count-based baselines fitted on the training blocks and
# scored on the same validation targets as the runs (GPT-2: every next token; BERT: the masked
# positions, the bigram given the visible left neighbour): a **unigram** model (token
# frequencies, no context) and a **bigram** model (one token of context). The masked-LM (BERT) and
# causal-LM (GPT-2) losses are different tasks on different tokenizers and sit on separate axes.

# %%
train_log = store.load_table(runs, "train_log")
eval_log = store.load_table(runs, "eval_log")


def smoothed_final(g):
    return float(g.sort_values("step").loss.tail(smooth).mean())


ok = runs.status == "complete"
final_train = train_log[train_log.key.isin(runs.key[ok])].groupby("key").apply(smoothed_final, include_groups=False)
runs["final_train_loss"] = runs.key.map(final_train)
levels = runs[ok].groupby("arch").final_train_loss.quantile(level_quantile).to_dict()
for a, lv in levels.items():
    book.glue(f"loss_level_{a}", f"{lv:.3f}")
book.glue("loss_level_quantile", f"{level_quantile:.0%}")
book.glue("loss_smooth", smooth)

max_step = int(runs.max_steps.max())
cens_value = max_step + int(runs.log_every.max())   # "later than every observed step"
steps = {}
for key, g in train_log.groupby("key"):
    arch = runs.set_index("key").loc[key, "arch"]
    steps[key] = stats.steps_to_level(g, levels[arch], smooth=smooth)
runs["steps_to_level"] = runs.key.map(steps)
runs["censored"] = ok & runs.steps_to_level.isna()
runs["steps_plot"] = runs.steps_to_level.fillna(cens_value)
book.glue("loss_n_censored", int(runs.censored.sum()))
book.glue("loss_n_complete", int(ok.sum()))
loss_base = {a: baselines.ngram_losses(resolve_config(a, profile)) for a in runs.arch.unique()}
refs = {a: {"unigram": b["unigram"], "bigram": b["bigram"]} for a, b in loss_base.items()}
book.glue("loss_cens_value", cens_value)

tau_keys = runs.key[runs.sweep == "temperature grid"]
curves = pd.concat([
    eval_log[eval_log.key.isin(tau_keys)].assign(curve="validation loss", value=lambda x: x.val_loss),
    train_log[train_log.key.isin(tau_keys)].assign(curve="training loss", value=lambda x: x.loss),
], ignore_index=True)[["curve", "arch", "tau", "head_dim", "seed", "status", "step", "value"]]
fig = tplots.trajectories(curves, y="value", row="curve", col="arch", hue="tau", highlight=1.0,
                          ylabel={"validation loss": "validation loss (nats)", "training loss": "training loss (nats)"},
                          row_labels={}, col_labels=ARCH_LABELS,
                          baseline={("training loss", a): lv for a, lv in levels.items()},
                          baseline_label="level for convergence speed",
                          references={("validation loss", a): r for a, r in refs.items()}, width=4.6, height=3.0)
book.show(fig, curves, "loss_curves",
          f"Validation loss (top) and training loss (bottom) through training for each temperature ratio tau (colour, "
          f"log scale; tau = 1 bold), head dimension {default_head_dim}. Line: mean over seeds; band: min-max over "
          f"seeds. Dotted: the convergence level ({level_quantile:.0%} quantile of final training losses). "
          f"Dashed / fine-dotted (validation panels): unigram and bigram count models on the same validation "
          f"targets (or, when far off the runs' range, their values in the panel's corner). Each panel has its "
          f"own y-axis. "
          f"{caption_tail(runs[runs.key.isin(tau_keys)])}.")

# %% [markdown]
# ## Association across the sweep, and what is left within a temperature
#
# For each architecture we correlate the initial mean rank (primary measure, measured at step 0)
# with the two outcomes over all complete runs of the sweep: Spearman's $\rho$ with a 95 % BCa
# bootstrap interval (resampling runs). The claim predicts $\rho < 0$ for both outcomes. Censored
# runs enter the convergence correlation with a step count of {glue:text}`loss_cens_value` (later
# than any observed step); Spearman's $\rho$ only uses the order, so this treats them exactly as
# "slower than every run that got there".
#
# Then the same correlation within temperatures: every $\tau$ is its own category, both ranks are
# centred within it, and the interval resamples runs within their temperature. What is left is
# the variation across seeds and, at $\tau = 1$ and the smallest $\tau$, across head dimensions.
# If rank acts on the loss in its own right, this correlation stays negative; if the temperature
# does the work, it is near zero.

# %%
OUTCOMES = {"final_val_loss": "final validation loss (nats)", "steps_plot": "steps to reach the level"}
ok_runs = runs[ok]
rank_measures_only = [mm for mm in MEASURES if MEASURES[mm].kind != "entropy"]
results = {mm: rules.loss_rule(ok_runs, mm) for mm in rank_measures_only}
res = results[m]
speed = rules.loss_rule(ok_runs, m, outcome="steps_plot")
archs = list(res.rho)
hd_taus = sorted(runs.tau[runs.sweep == "head-dimension grid"].unique())
hd_rho = {}
for t in hd_taus:
    for a in archs:
        dh = ok_runs[(ok_runs.arch == a) & np.isclose(ok_runs.tau, t)]
        hd_rho[(t, a)] = stats.spearman(dh[f"initial_{m}"], dh.final_val_loss)
for a in archs:
    book.glue(f"loss_val_rho_{a}", res.rho[a].text())
    book.glue(f"loss_val_within_{a}", res.within[a].text())
    book.glue(f"loss_speed_rho_{a}", speed.rho[a].text())
    book.glue(f"loss_speed_within_{a}", speed.within[a].text())
    for t in hd_taus:
        book.glue(f"loss_val_hd{t:g}_{a}".replace(".", "p"), hd_rho[(t, a)].text())
tau_min = min(grid["taus"])
book.glue("loss_tau_min", f"{tau_min:g}")
for a in archs:
    book.glue(f"loss_val_hdmin_{a}", hd_rho[(tau_min, a)].text())


def notes(r):
    return {a: f"ρ = {r.rho[a].text(n=False)}\nwithin τ: ρ = {r.within[a].text(n=False)}\nn = {r.rho[a].n} runs"
            for a in archs}


cols = ["arch", "tau", "head_dim", "num_heads", "seed", "status", "sweep", f"initial_{m}", "final_val_loss",
        "final_train_loss", "steps_to_level", "censored", "steps_plot"]
fig = tplots.run_scatter(runs[cols], x=f"initial_{m}", y="final_val_loss", hue="tau", annotations=notes(res),
                         references=refs, xlabel=rank_label, ylabel="final validation loss (nats)")
book.show(fig, runs[cols], "loss_final_vs_rank",
          f"Final validation loss against initial mean rank, one point per run of the main sweep (temperature and "
          f"head-dimension grids), colour = tau (log scale); each architecture on its own y-axis. Text: Spearman rho "
          f"(95% BCa bootstrap over runs) and the rank correlation within temperatures (tau as a fixed effect). "
          f"Lines or corner notes: unigram and bigram count models on the same validation targets. {caption_tail()}.")

# %% [markdown]
# Across all runs, $\rho$(initial rank, final validation loss) is {glue:text}`loss_val_rho_bert`
# for BERT and {glue:text}`loss_val_rho_gpt2` for GPT-2. Within temperatures it is
# {glue:text}`loss_val_within_bert` (BERT) and {glue:text}`loss_val_within_gpt2` (GPT-2).
# The same for convergence speed:

# %%
fig = tplots.run_scatter(runs[cols], x=f"initial_{m}", y="steps_plot", hue="tau", censored="censored",
                         annotations=notes(speed), xlabel=rank_label, ylabel="steps to reach the loss level")
book.show(fig, runs[cols], "loss_speed_vs_rank",
          f"Training steps until the smoothed training loss first reaches the level (BERT {levels.get('bert', np.nan):.3f}, "
          f"GPT-2 {levels.get('gpt2', np.nan):.3f} nats; {level_quantile:.0%} quantile of final training losses) against "
          f"initial mean rank; hollow triangles: never reached (censored, drawn at step {cens_value}). "
          f"Colour = tau (log scale). {caption_tail()}.")

# %% [markdown]
# Each run's validation loss is measured on the same held-out blocks, and for BERT on the same
# masked positions in every run (the masks are drawn once, with a fixed seed, not per run), so
# differences between runs are differences between models, not between test sets.
#
# $\rho$(initial rank, steps to the level) is {glue:text}`loss_speed_rho_bert` for BERT and
# {glue:text}`loss_speed_rho_gpt2` for GPT-2 across all runs, and {glue:text}`loss_speed_within_bert`
# and {glue:text}`loss_speed_within_gpt2` within temperatures ({glue:text}`loss_n_censored` runs
# censored).
#
# ## Rank moved without touching the temperature
#
# The head-dimension grid varies the initial rank at a fixed $\tau$ (at fixed width, more heads of
# smaller dimension; see the {doc}`head-dimension chapter <headdim>` for how the initial rank
# responds). It is not a clean experiment either (fewer, wider heads also change the model in
# other ways), but it moves rank by a route the temperature argument above does not cover. Lines
# join the runs of one seed.

# %%
hd = runs[runs.tau.isin(hd_taus)]
hd_notes = {(t, a): f"ρ = {hd_rho[(t, a)].text(n=False)}\nn = {hd_rho[(t, a)].n} runs" for t in hd_taus for a in archs}
fig = tplots.run_scatter(hd[cols], x=f"initial_{m}", y="final_val_loss", hue="head_dim", row="tau", col="arch",
                         cmap=tplots.HEAD_DIM_CMAP, connect="seed", annotations=hd_notes,
                         references={(t, a): refs[a] for t in hd_taus for a in archs},
                         row_labels={t: f"τ = {t:g}" for t in hd_taus}, xlabel=rank_label,
                         ylabel="final validation loss (nats)")
book.show(fig, hd[cols], "loss_head_dim",
          f"Final validation loss against initial mean rank in the head-dimension grid (colour = head dimension, log "
          f"scale; fixed width) at tau = {', '.join(f'{t:g}' for t in hd_taus)} (rows); each panel on its own y-axis. "
          f"Lines join runs of one seed. Text: Spearman rho with 95% BCa bootstrap interval over runs. Lines or corner "
          f"notes: unigram and bigram count models. {caption_tail(hd)}.")

# %% [markdown]
# All correlations of this chapter on every rank measure in one table (negative $\rho$ = higher
# rank, lower loss or faster convergence; $n$ = runs):

# %%
speed_all = {mm: rules.loss_rule(ok_runs, mm, outcome="steps_plot") for mm in rank_measures_only}
pd.DataFrame([{"measure": MEASURES[mm].label, "outcome": OUTCOMES[y], "arch": ARCH_LABELS[a],
               "Spearman ρ [95% CI]": r.rho[a].text(n=False), "within τ: ρ [95% CI]": r.within[a].text(n=False),
               "p (within τ)": f"{r.within[a].p:.3f}", "runs": r.rho[a].n}
              for mm in rank_measures_only for y, r in (("final_val_loss", results[mm]), ("steps_plot", speed_all[mm]))
              for a in archs])

# %% [markdown]
# ## Verdict
#
# The rule is the one stated before the evidence ({ref}`the rule <loss-rule>`), on the primary
# measure; the table after the verdict applies it with every rank measure.

# %%
best = ok_runs.groupby("arch").final_val_loss.min()
tau1 = ok_runs[np.isclose(ok_runs.tau, 1.0) & (ok_runs.sweep == "temperature grid")].groupby("arch").final_val_loss.mean()
regime = "; ".join(
    f"{ARCH_LABELS[a]}'s best final validation loss is {best[a]:.2f} nats (tau = 1: {tau1.get(a, np.nan):.2f}), "
    f"{baselines.relative_text(best[a], loss_base[a]['unigram'])} a unigram model ({loss_base[a]['unigram']:.2f}) and "
    f"{baselines.relative_text(best[a], loss_base[a]['bigram'])} a bigram model ({loss_base[a]['bigram']:.2f})"
    for a in archs)
needed = [f"{ARCH_LABELS[a]} about {res.judged[a].needed}" for a in archs
          if res.per_arch[a] != "supported" and res.judged[a].needed]
summary_text = (
    f"On the {MEASURES[m].label}, across {', '.join(f'{res.rho[a].n} {ARCH_LABELS[a]}' for a in archs)} runs "
    f"({n_seeds} seeds per setting), initial mean rank and final validation loss have Spearman rho "
    f"{res.rho['bert'].text(n=False)} (BERT) and {res.rho['gpt2'].text(n=False)} (GPT-2); within temperatures "
    f"(tau as a fixed effect) rho is {res.within['bert'].text(n=False)} (BERT, p = {res.within['bert'].p:.2f}) and "
    f"{res.within['gpt2'].text(n=False)} (GPT-2, p = {res.within['gpt2'].p:.2f}): "
    + ", ".join(f"{res.per_arch[a]} for {ARCH_LABELS[a]}" for a in archs) + ". "
    + (f"Runs needed to resolve a within-temperature rho of {rules.LOSS_EFFECT:g}".replace("of -", "of \u2212")
       + f": {', '.join(needed)}. " if needed else "")
    + f"Regime: {regime}."
)
by_measure = {mm: r.status for mm, r in results.items()}
verdict_line = book.verdict("loss", res.status, summary_text, by_measure=by_measure)
pd.DataFrame({"measure": [MEASURES[mm].label for mm in by_measure], "verdict under this measure": list(by_measure.values())})

# %% [markdown]
# **Verdict: {glue:text}`loss_status`.** {glue:text}`loss_summary`
#
# Beside the verdict: convergence speed gives $\rho$ = {glue:text}`loss_speed_rho_bert` (BERT) and
# {glue:text}`loss_speed_rho_gpt2` (GPT-2) across all runs, and {glue:text}`loss_speed_within_bert`
# / {glue:text}`loss_speed_within_gpt2` within temperatures. In the head-dimension grid, where
# rank moves without the temperature, $\rho$(initial rank, final validation loss) is
# {glue:text}`loss_val_hd1_bert` (BERT) and {glue:text}`loss_val_hd1_gpt2` (GPT-2) at $\tau = 1$,
# and {glue:text}`loss_val_hdmin_bert` (BERT) and {glue:text}`loss_val_hdmin_gpt2` (GPT-2) at
# $\tau$ = {glue:text}`loss_tau_min`.
#
# What would settle the causal question beyond this book: hold $\tau = 1$ and change the rank
# by another route that leaves the optimiser alone (for example the initial scale of
# $W_Q, W_K$ with the learning rate compensated, the equivalence of the theory chapter run
# backwards), and check whether the loss follows the rank or the step size.

# %%
print(f"analysis computed in {time.perf_counter() - t_loaded:.1f} s after the runs were loaded (training excluded)")
