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
# reviewers asked whether four examples are enough. Our runs record every measure for each of
# {glue:text}`protocol_n_val` held-out sequences and {glue:text}`protocol_n_train` training blocks
# at every probe step, so we replay that protocol many times on the book's main grid (no new runs)
# beside ours. With probes on a log-spaced schedule early in training we also ask from which step
# the rank predicts the final one (the study: the rank settles early).

# %% tags=["parameters"]
profile = "auto"
seeds = None
n_draws = 1000  # random draws of the study's 4 + 4 examples and its one run per temperature
dataset = None  # training corpus: shakespeare or hf:NAME[:CONFIG]; None: ATTNRANK_DATASET or shakespeare

# %%
import numpy as np
import pandas as pd

from attnrank import book, experiments, plots, protocol, rank, rules, store
from attnrank.plots import sweeps as splots, training as tplots
from attnrank.profiles import resolve_config

book.check_parameters(globals(), ("profile", "seeds", "n_draws", "dataset"))
profile = book.setup(profile)
MEASURES, ARCH_LABELS, PRIMARY = rank.MEASURES, plots.ARCH_LABELS, experiments.PRIMARY_MEASURE
STUDY, (STOCK, COLD), (N_TRAIN, N_TEST) = protocol.STUDY_MEASURE, protocol.STUDY_TAUS, protocol.STUDY_EXAMPLES
runs = store.sweep(experiments.main_sweep(profile, seeds=seeds, dataset=dataset), progress=False)
ok = runs[runs.status == "complete"]
head_dim = resolve_config("bert", profile).head_dim
pair = ok[(ok.head_dim == head_dim) & (np.isclose(ok.tau, STOCK) | np.isclose(ok.tau, COLD))]
seq, summary = store.load_table(pair, "sequences"), store.load_table(pair, "rank_summary")
final_step = int(seq.step.max())
for k, v in {"n_val": seq[seq.split == "val"].sequence.nunique(), "n_train": seq[seq.split == "train"].sequence.nunique(),
             "n_seeds": pair.seed.nunique(), "n_draws": n_draws, "final_step": final_step, "n_runs": len(ok),
             "max_flip": f"{rules.MAX_FLIP:.0%}", "rho_min": rules.SET_EARLY_RHO,
             "early_pct": f"{rules.EARLY_FRACTION:.0%}", "steps": ", ".join(map(str, sorted(seq.step.unique())))}.items():
    book.glue(f"protocol_{k}", v)

# %% [markdown]
# (protocol-rule)=
# ## The rules, fixed before looking
#
# **The study's statistic** is the mean rank at $\tau = 1$ minus the mean rank at $\tau = 10^{-3}$,
# each the average over 4 + 4 examples of one run; its *conclusion* is the sign (which temperature
# has the higher rank). One *draw* picks one run per temperature among our
# {glue:text}`protocol_n_seeds` seeds and 4 training and 4 held-out sequences from the records.
# The **flip rate** is the share of {glue:text}`protocol_n_draws` draws whose sign differs from the
# sign of the same statistic computed with every run and every recorded sequence (the reference).
# Verdict `protocol`, per architecture, at the last probe step: the protocol is *stable* if the
# flip rate's 95 % interval (exact binomial over draws) lies below {glue:text}`protocol_max_flip`,
# and it *agrees* with ours if our statistic (primary measure, the effective rank, every probe
# sequence, every seed, Welch interval) resolves a sign and it is the reference's. Both must hold
# for both architectures; not supported if either fails for either, else inconclusive.
#
# **Set early** (verdict `set_early`): for every probe step $k$ Spearman's $\rho$ over all complete
# runs of the main grid between the mean rank (primary measure) at $k$ and at the last step, with a
# 95 % BCa bootstrap over runs. Supported for an architecture if at some step within the first
# {glue:text}`protocol_early_pct` of training the interval lies above $\rho$ =
# {glue:text}`protocol_rho_min` (we report the first such step), not supported if every early
# interval lies below it; both architectures must hold.
#
# ## The figures as the study would have drawn them
#
# One run per temperature (the first seed), the study's rank averaged over the first 4 training and
# 4 held-out sequences, at the probe steps {glue:text}`protocol_steps`; below it the validation
# loss of the same runs.

# %%
first = pair[pair.seed == pair.seed.min()]
few = seq[seq.key.isin(first.key) & (seq.sequence < np.where(seq.split == "train", N_TRAIN, N_TEST))]
study_curve = few.groupby(["arch", "tau", "seed", "status", "step"], as_index=False)[STUDY].mean()
study_view = pd.concat([study_curve.rename(columns={STUDY: "value"}).assign(panel="rank"), store.load_table(
    first, "eval_log").rename(columns={"val_loss": "value"}).assign(panel="loss")], ignore_index=True)
labels = {"rank": f"rank (atol 1e-8), {N_TRAIN} + {N_TEST} examples", "loss": "validation loss (nats)"}
fig = tplots.trajectories(study_view, y="value", row="panel", col="arch", hue="tau", ylabel=labels, row_labels=labels,
                          col_labels=ARCH_LABELS, highlight=STOCK, width=4.3, height=2.6)
book.show(fig, study_view[["arch", "tau", "seed", "panel", "step", "value"]], "protocol_study_view",
          f"The study's view: rank (absolute threshold 1e-8, mean over {N_TRAIN} training + {N_TEST} held-out "
          f"sequences, layers and heads) and validation loss through training at tau = 1 (bold) and tau = 0.001, "
          f"one run each ({profile} profile, seed {int(first.seed.min())}, head dimension {head_dim}).")

# %% [markdown]
# ## How much do four plus four examples decide?
#
# The same statistic over {glue:text}`protocol_n_draws` random draws, at initialisation and at the
# last probe step (step {glue:text}`protocol_final_step`); the dotted line is zero, where the
# conclusion flips. The table gives the flip rate at every probe step; at the last one it is
# {glue:text}`protocol_flip_bert` for BERT and {glue:text}`protocol_flip_gpt2` for GPT-2.

# %%
draws = protocol.study_draws(seq, n_draws=n_draws, seed=0)
reference = protocol.study_reference(seq)
flips = protocol.flip_rate(draws, reference)
ends = draws[draws.step.isin([0, final_step])].assign(when=lambda d: np.where(d.step == 0, "step 0", "last step"))
fig = tplots.change_distribution(ends, x="stat", y="when", reference=0.0,
                                 xlabel="rank at tau = 1 minus rank at tau = 0.001 (atol 1e-8)")
book.show(fig, ends, "protocol_draws",
          f"The study's statistic over {n_draws} draws of one run per temperature and {N_TRAIN} + {N_TEST} sequences, "
          f"one dot per draw (box: quartiles). {profile} profile, {pair.seed.nunique()} seeds per temperature.")
flips.assign(**{"flip rate [95% CI]": flips.estimate.map(lambda e: e.text(1, n=False, percent=True))}).pivot(
    index="step", columns="arch", values="flip rate [95% CI]")

# %% [markdown]
# ## The same comparison under our protocol
#
# Every probe sequence and every seed (line: mean over seeds, band: min-max), under the study's
# rank and under our primary measure.

# %%
ours_view = summary[summary.measure.isin([STUDY, PRIMARY])]
mlabels = {m: MEASURES[m].label for m in (STUDY, PRIMARY)}
fig = tplots.trajectories(ours_view, y="mean", row="measure", col="arch", hue="tau", ylabel=mlabels, row_labels=mlabels,
                          col_labels=ARCH_LABELS, highlight=STOCK, width=4.3, height=2.6)
book.show(fig, ours_view[["arch", "tau", "seed", "measure", "step", "mean", "sem"]], "protocol_our_view",
          f"Our view: mean rank over all {seq[seq.split == 'val'].sequence.nunique()} held-out probe sequences, "
          f"layers and heads, at tau = 1 (bold) and 0.001, mean and min-max over {pair.seed.nunique()} seeds "
          f"({profile} profile, head dimension {head_dim}).")
end = {a: ok[(ok.arch == a) & (ok.head_dim == head_dim)] for a in sorted(pair.arch.unique())}
ours = {a: rules.two_point(d.loc[np.isclose(d.tau, STOCK), f"final_{PRIMARY}"],
                           d.loc[np.isclose(d.tau, COLD), f"final_{PRIMARY}"]) for a, d in end.items()}
at_end = flips[flips.step == final_step].set_index("arch")
res = rules.protocol_rule(at_end.estimate.to_dict(), at_end.reference.to_dict(), ours)
sentences = protocol.agreement(res.reference, ours, ARCH_LABELS)
book.glue("protocol_agreement", "; ".join(sentences)[0].upper() + "; ".join(sentences)[1:])
_ = [book.glue(f"protocol_flip_{a}", e.text(1, n=False, percent=True)) for a, e in res.flip.items()]
stable = all(res.parts[("stable", a)] == "supported" for a in res.flip)
book.glue("protocol_examples", "Eight examples and one run were enough for the sign the study read: the gap between "
          "the temperatures under its threshold is large against the spread between sequences and seeds" if stable else
          "Eight examples and one run do not settle the sign the study read: the flip rate is not resolved below "
          f"{rules.MAX_FLIP:.0%}")

# %% [markdown]
# ## Verdict on the protocol
#
# **Verdict: {glue:text}`protocol_status`.** {glue:text}`protocol_summary`
#
# *Where the two protocols agree and where they part.* {glue:text}`protocol_agreement`.
# {glue:text}`protocol_examples`. The protocols part in the measure: the study's threshold counts singular values below
# float32 resolution (rows sum to one, so $\sigma_1 \ge 1$), so near-uniform attention at
# $\tau = 1$ can score close to full rank where the effective rank sees nearly rank one; and one
# run per setting shows no spread over seeds, which our intervals carry.

# %%
book.verdict("protocol", res.status, (
    f"Over {n_draws} draws of {N_TRAIN} + {N_TEST} examples and one run per temperature, the study's conclusion at "
    f"the last step flips in {res.flip['bert'].text(1, n=False, percent=True)} of draws for BERT and "
    f"{res.flip['gpt2'].text(1, n=False, percent=True)} for GPT-2 (at most {rules.MAX_FLIP:.0%} allowed). Against our "
    f"protocol (effective rank, all sequences, {pair.seed.nunique()} seeds): {'; '.join(sentences)}. "
    + "; ".join(f"{part} for {ARCH_LABELS[a]}: {st}" for (part, a), st in res.parts.items()) + "."))

# %% [markdown]
# ## Is the rank set early?
#
# Spearman's $\rho$ between the mean rank at each probe step and at the last step, over all
# {glue:text}`protocol_n_runs` complete runs of the main grid (temperatures and head dimensions;
# primary measure; 95 % BCa bootstrap over runs, a tenth of the book's usual resamples per step).

# %%
all_summary = store.load_table(ok, "rank_summary")
by_step = protocol.rank_by_step(all_summary, PRIMARY)
early = rules.set_early_rule(by_step)
forest = by_step.assign(panel=MEASURES[PRIMARY].label, lever=by_step.step.map(lambda s: f"step {s}"))
fig = splots.effect_forest(forest, panel="panel", label="lever", estimate="rho",
                           xlabels={MEASURES[PRIMARY].label: f"Spearman rho, rank at step k vs step {final_step}"})
for ax in fig.axes:
    ax.axvline(rules.SET_EARLY_RHO, color="0.3", ls=":")
book.show(fig, by_step.drop(columns="estimate"), "protocol_set_early",
          f"Spearman rho (95% BCa bootstrap over runs) of the mean {MEASURES[PRIMARY].label} at each probe step "
          f"against the last step, per architecture; dotted: the pre-registered {rules.SET_EARLY_RHO:g}. {profile} "
          f"profile, {len(ok)} complete runs of the main grid.")
text = "; ".join(f"{ARCH_LABELS[a]}: {'first' if early.first[a] is not None else 'none clears it; last'} early step "
                 f"{early.shown[a][0]}, rho {early.shown[a][1]}" for a in early.per_arch if early.shown[a])
book.verdict("set_early", early.status, (
    f"The rank at step k predicts the final rank (Spearman rho above {rules.SET_EARLY_RHO:g}, 95% interval) within "
    f"the first {rules.EARLY_FRACTION:.0%} of training ({final_step} steps, {MEASURES[PRIMARY].label}): {text}."))

# %% [markdown]
# **Verdict: {glue:text}`set_early_status`.** {glue:text}`set_early_summary` (Step 1 equals step 0
# by construction: the learning rate warms up from zero.)
