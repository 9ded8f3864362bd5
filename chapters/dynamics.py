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
# # Rank through training: stable, and set at initialisation?
#
# The study's first claim {cite}`min2023efficiency` is that **the mean rank of the attention
# matrices hardly moves while a model trains, so that the rank at initialisation is a
# dependable forecast of the rank at the end**. If that holds, everything the later chapters
# say about the initial rank (how temperature and head dimension set it) carries over to the
# trained model; if it fails, the initial rank is only a property of the random weights.
#
# We test the claim on BERT (masked LM) {cite}`devlin2019bert` and GPT-2 (causal LM)
# {cite}`radford2019language` trained from scratch, over the book's shared sweep: a fine grid of
# temperatures and several head dimensions, each with several seeds. We ask three questions:
#
# 1. How does the mean rank move through training, for each rank measure, temperature and
#    head dimension?
# 2. Across runs, does the initial mean rank predict the final one, and does it still do so
#    once the temperature, which sets the initial rank, is held fixed?
# 3. How large is the change $|r_\text{final} - r_\text{init}| / r_\text{init}$ of a single
#    run, and is it the same in every layer and head?

# %% tags=["parameters"]
profile = "auto"
seeds = None
taus = None
head_dims = None
heatmap_tau = 1.0        # temperature ratio of the layer x head heat maps (must be in the sweep)
stable_tolerance = 0.1   # a run is "stable" if its relative change of mean rank is at most this

# %%
import time

import numpy as np
import pandas as pd
import torch
from IPython.display import Markdown, display

from attnrank import book, experiments, plots, rank, stats, store
from attnrank.errors import ConfigError
from attnrank.plots import training as tplots
from attnrank.profiles import resolve_config

book.check_parameters(globals(), ("profile", "seeds", "taus", "head_dims", "heatmap_tau", "stable_tolerance"))
grid = experiments.sweep_defaults(profile, taus=taus, head_dims=head_dims, seeds=seeds)
if not any(np.isclose(heatmap_tau, t) for t in grid["taus"]):
    raise ConfigError("heatmap_tau", f"got {heatmap_tau!r}; allowed values (the sweep's temperatures): "
                      f"{', '.join(f'{t:g}' for t in grid['taus'])}")
profile = book.setup(profile)
t_start = time.perf_counter()
MEASURES, ARCH_LABELS = rank.MEASURES, plots.ARCH_LABELS

# %% [markdown]
# ## The runs
#
# Every trained-model chapter reads the same runs from the run store: the temperature grid
# $\tau \in$ {glue:text}`dynamics_taus` at the profile's head dimension, plus a head-dimension
# grid $d_h \in$ {glue:text}`dynamics_head_dims` (at fixed width, so more heads of smaller
# dimension) at $\tau = 1$ and at the smallest $\tau$; each setting with
# {glue:text}`dynamics_n_seeds` seeds. Here $\tau$ is the ratio of the softmax temperature to the
# standard one, $T = \tau\sqrt{d_h}$ in $\operatorname{softmax}(QK^\top / T)$: $\tau = 1$ is
# the stock transformer {cite}`vaswani2017attention`, $\tau = 10^{-3}$ the study's
# low-temperature setting. A cold build trains each run once (the first chapter that needs it);
# afterwards this cell only reads.

# %%
configs = experiments.main_sweep(profile, taus=taus, head_dims=head_dims, seeds=seeds)
runs = store.sweep(configs, progress=False)
default_head_dim = resolve_config("bert", profile).head_dim
runs["sweep"] = np.where(runs.head_dim == default_head_dim, "temperature grid", "head-dimension grid")
ok_runs = runs[runs.status == "complete"]
n_runs, n_seeds = len(runs), runs.seed.nunique()
max_len = int(runs.max_len.iloc[0])

book.glue("dynamics_taus", ", ".join(f"{t:g}" for t in grid["taus"]))
book.glue("dynamics_head_dims", ", ".join(str(h) for h in grid["head_dims"]))
book.glue("dynamics_n_seeds", n_seeds)
book.glue("dynamics_n_runs", n_runs)
book.glue("dynamics_n_failed", int((runs.status != "complete").sum()))
book.glue("dynamics_default_head_dim", default_head_dim)
book.glue("dynamics_n", max_len)
book.glue("dynamics_steps", int(ok_runs.steps.max()) if len(ok_runs) else 0)


def caption_tail(df=runs):
    """Profile, runs and seeds behind a figure, for its caption."""
    return f"({profile} profile, {len(df)} runs, {df.seed.nunique()} seeds per setting)"


failed = runs[runs.status != "complete"]
if len(failed):
    display(Markdown(f"**{len(failed)} run(s) diverged** and are drawn with a cross in every figure:"))
    display(failed[["arch", "tau", "head_dim", "num_heads", "seed", "failure_step", "failure_reason"]])
else:
    display(Markdown("No run diverged."))

# %% [markdown]
# The sweep holds {glue:text}`dynamics_n_runs` runs ({glue:text}`dynamics_n_failed` diverged), each
# trained for {glue:text}`dynamics_steps` steps on sequences of $n =$ {glue:text}`dynamics_n`
# tokens. During training a probe measures every attention matrix $A^{(\ell, h)}(x)$ of every
# layer $\ell$ and head $h$ on a fixed set of held-out sequences $x$ at step 0 (the
# initialisation) and at regular steps after. The **mean rank** at a step is
#
# $$\bar r(t) = \frac{1}{L\,H\,B} \sum_{\ell=1}^{L} \sum_{h=1}^{H} \sum_{b=1}^{B} r\big(A^{(\ell,h)}(x_b; \theta_t)\big),$$
#
# for each measure $r$ of the {doc}`measure chapter <measure>`: the study's absolute threshold
# ($\sigma_i > 10^{-8}$), relative thresholds ($\sigma_i > \epsilon\,\sigma_1$,
# $\epsilon = 10^{-2}$ (our primary measure) and $10^{-4}$), effective rank
# {cite}`roy2007effective`, stable rank $\|A\|_F^2/\|A\|_2^2$, and the mean row entropy of $A$
# (not a rank, but the quantity temperature acts on directly {cite}`zhai2023stabilizing`).
#
# A causal (GPT-2) attention matrix is lower-triangular with a positive diagonal, so even the
# uniform causal matrix $U_{ij} = 1[j \le i]/i$, which carries no information at all, has a
# sizeable numerical rank. We draw its value for each measure as a dotted line in the GPT-2
# panels: a GPT-2 rank near that line means "close to uniform attention", not "rich attention".

# %%
summary = store.load_table(runs, "rank_summary")
measures = list(MEASURES)
U = torch.tril(torch.ones(max_len, max_len, dtype=torch.float64))
U = U / U.sum(-1, keepdim=True)
uniform_causal = {m: float(v) for m, v in rank.rank_measures(U, measures=measures).items()}
baseline = {(m, "gpt2"): uniform_causal[m] for m in measures}
labels = {m: MEASURES[m].label for m in measures}

tau_runs = runs[runs.sweep == "temperature grid"]
d = summary[summary.key.isin(tau_runs.key)]
fig = tplots.trajectories(d, y="mean", row="measure", col="arch", hue="tau", highlight=1.0, ylabel=labels,
                          row_labels=labels, col_labels=ARCH_LABELS, baseline=baseline,
                          baseline_label="uniform causal attention", width=4.3, height=2.3)
g1 = tau_runs[(tau_runs.arch == "gpt2") & np.isclose(tau_runs.tau, 1.0)]
book.glue("dynamics_gpt2_tau1_init", f"{g1[f'initial_{experiments.PRIMARY_MEASURE}'].mean():.1f}")
book.glue("dynamics_uniform_causal", f"{uniform_causal[experiments.PRIMARY_MEASURE]:.1f}")
book.show(fig, d[["arch", "tau", "head_dim", "seed", "status", "measure", "step", "mean", "sem"]],
          "dynamics_rank_trajectories",
          f"Mean rank through training for every measure (rows), BERT and GPT-2 (columns), one curve per "
          f"temperature ratio tau (colour, log scale; tau = 1 bold), head dimension {default_head_dim}. "
          f"Line: mean over seeds; band: min-max over seeds. Dotted: the uniform causal matrix (GPT-2). "
          f"{caption_tail(tau_runs)}.")

# %% [markdown]
# Read the figure row by row: the temperature largely sorts the curves at step 0, and the
# question is whether the curves stay where they started. For GPT-2 at $\tau = 1$ the initial
# mean rank is {glue:text}`dynamics_gpt2_tau1_init` against {glue:text}`dynamics_uniform_causal`
# for the uniform causal matrix (primary measure): at the stock temperature a freshly
# initialised GPT-2 attends almost uniformly, and its "rank" is the triangular structure. The same view
# for the head-dimension grid, on the primary measure, at $\tau = 1$ and at the smallest
# $\tau$ (colour is now $d_h$; the profile's default $d_h$ = {glue:text}`dynamics_default_head_dim`
# is bold):

# %%
hd_taus = sorted({1.0, min(grid["taus"])})
hd_runs = runs[runs.tau.isin(hd_taus)]
d = summary[summary.key.isin(hd_runs.key) & (summary.measure == experiments.PRIMARY_MEASURE)]
fig = tplots.trajectories(d, y="mean", row="arch", col="tau", hue="head_dim", log_hue=True, cmap=tplots.HEAD_DIM_CMAP,
                          highlight=default_head_dim, ylabel=MEASURES[experiments.PRIMARY_MEASURE].label,
                          col_labels={t: f"τ = {t:g}" for t in hd_taus}, width=4.3, height=2.8)
book.show(fig, d[["arch", "tau", "head_dim", "num_heads", "seed", "status", "step", "mean", "sem"]],
          "dynamics_rank_trajectories_head_dim",
          f"Mean rank ({MEASURES[experiments.PRIMARY_MEASURE].label}) through training for each head dimension "
          f"(colour, log scale) at fixed width, at tau = {', '.join(f'{t:g}' for t in hd_taus)} (columns). "
          f"Line: mean over seeds; band: min-max over seeds. {caption_tail(hd_runs)}.")

# %% [markdown]
# ## Does the initial rank predict the final rank?
#
# For each run we take the mean rank at the first probe (step 0) and at the last one, and
# compute Spearman's $\rho$ between them across all complete runs of an architecture, with a
# 95 % bootstrap interval (resampling runs). The catch: across runs, the temperature sets the
# initial rank, and it also shapes the whole training run. A high $\rho$ across the grid can
# therefore come from $\tau$ alone ("runs with a small $\tau$ start high and end high"). To see
# whether the initial rank carries information *beyond* the temperature, we also report the
# partial Spearman correlation controlling for $\log\tau$: both ranks are residualised on the
# rank of $\tau$, and what is left varies only through the seed and the head dimension.

# %%
def correlations(df, measure):
    x, y = df[f"initial_{measure}"], df[f"final_{measure}"]
    r = stats.spearman_ci(x, y)
    p = stats.partial_spearman(x, y, np.log(df.tau))
    return {"rho": r["rho"], "rho_low": r["low"], "rho_high": r["high"], "partial": p["rho"],
            "partial_low": p["low"], "partial_high": p["high"], "n": r["n"]}


corr = pd.DataFrame([{"arch": a, "measure": m, **correlations(ok_runs[ok_runs.arch == a], m)}
                     for m in measures for a in runs.arch.unique()])
primary = corr[corr.measure == experiments.PRIMARY_MEASURE].set_index("arch")


def ci_text(row, key, pct=False):
    """'value [low, high]' for a correlation (2 decimals) or a relative change (percent)."""
    f = (lambda v: "n/a" if not np.isfinite(v) else f"{v:.0%}") if pct else \
        (lambda v: "n/a" if not np.isfinite(v) else f"{v:.2f}")
    return f"{f(row[key])} [{f(row[key + '_low'])}, {f(row[key + '_high'])}]"


for a, row in primary.iterrows():
    book.glue(f"dynamics_rho_{a}", ci_text(row, "rho"))
    book.glue(f"dynamics_partial_{a}", ci_text(row, "partial"))
    book.glue(f"dynamics_n_ok_{a}", int(row["n"]))

m = experiments.PRIMARY_MEASURE
d = runs[["arch", "tau", "head_dim", "num_heads", "seed", "status", "sweep", f"initial_{m}", f"final_{m}"]]
notes = {a: f"ρ = {ci_text(r, 'rho')}\npartial ρ | log τ = {ci_text(r, 'partial')}\nn = {int(r['n'])} runs"
         for a, r in primary.iterrows()}
fig = tplots.run_scatter(d, x=f"initial_{m}", y=f"final_{m}", hue="tau", identity=True, annotations=notes,
                         xlabel=f"initial mean rank ({MEASURES[m].label})", ylabel="final mean rank")
book.show(fig, d, "dynamics_initial_vs_final",
          f"Final against initial mean rank ({MEASURES[m].label}), one point per run of the main sweep (temperature "
          f"and head-dimension grids), colour = tau (log scale). Dashed: final = initial. Text: Spearman rho and the "
          f"partial rho controlling for log tau, with 95% bootstrap intervals. {caption_tail()}.")

# %% [markdown]
# On the primary measure, Spearman's $\rho$ between initial and final mean rank is
# {glue:text}`dynamics_rho_bert` for BERT and {glue:text}`dynamics_rho_gpt2` for GPT-2 (95 %
# bootstrap intervals in brackets). Holding the temperature fixed, the partial correlation is
# {glue:text}`dynamics_partial_bert` (BERT) and {glue:text}`dynamics_partial_gpt2` (GPT-2). The
# table gives the same two numbers for every measure.

# %%
table = corr.assign(
    measure=corr.measure.map(labels), arch=corr.arch.map(ARCH_LABELS),
    **{"Spearman ρ [95% CI]": corr.apply(lambda r: ci_text(r, "rho"), axis=1),
       "partial ρ | log τ [95% CI]": corr.apply(lambda r: ci_text(r, "partial"), axis=1)},
)[["measure", "arch", "Spearman ρ [95% CI]", "partial ρ | log τ [95% CI]", "n"]]
table

# %% [markdown]
# ## How much does a run's rank change?
#
# A correlation near one says the runs keep their *order*; it does not say the rank stays
# put (every run could double its rank). The claim of stability is about the size of the
# change, so for every complete run and every rank measure we compute the relative change
#
# $$\Delta_\text{rel} = \frac{|\bar r_\text{final} - \bar r_\text{init}|}{\bar r_\text{init}}.$$
#
# We call a run stable on a measure when $\Delta_\text{rel} \le$ {glue:text}`dynamics_tolerance_pct`
# (the parameter `stable_tolerance`). The attention entropy is left out here: it is not a rank,
# and at low temperature it starts near zero, where a relative change is meaningless.

# %%
rank_measures_only = [m for m in measures if MEASURES[m].kind != "entropy"]
change = pd.concat([
    ok_runs[["arch", "tau", "head_dim", "seed", "sweep"]].assign(
        measure=mm, initial=ok_runs[f"initial_{mm}"], final=ok_runs[f"final_{mm}"])
    for mm in rank_measures_only], ignore_index=True)
change["rel_change"] = (change.final - change.initial).abs() / change.initial
change["increased"] = change.final > change.initial
book.glue("dynamics_tolerance_pct", f"{stable_tolerance:.0%}")

fig = tplots.change_distribution(change, x="rel_change", y="measure", y_labels=labels, reference=stable_tolerance,
                                 xlabel=r"relative change of mean rank $|\bar r_{final} - \bar r_{init}| / \bar r_{init}$")
book.show(fig, change, "dynamics_relative_change",
          f"Relative change of mean rank from the first to the last probe, one dot per complete run, per rank measure "
          f"and architecture (box: quartiles). Dotted: the stability tolerance {stable_tolerance:g}. {caption_tail()}.")

# %%
def stability(df):
    v = df.rel_change.to_numpy()
    med = float(np.median(v))
    low, high = stats.bootstrap_ci(np.median, v) if len(v) >= 4 and np.ptp(v) > 0 else (med, med)
    return pd.Series({"median": med, "median_low": low, "median_high": high,
                      "share_stable": float((v <= stable_tolerance).mean()),
                      "share_increased": float(df.increased.mean()), "max": float(v.max()), "n": len(v)})


stab = change.groupby(["measure", "arch"], sort=False).apply(stability, include_groups=False).reset_index()
prim_stab = stab[stab.measure == m].set_index("arch")
for a, row in prim_stab.iterrows():
    book.glue(f"dynamics_median_change_{a}", ci_text(row, "median", pct=True))
    book.glue(f"dynamics_share_stable_{a}", f"{row['share_stable']:.0%}")
    book.glue(f"dynamics_share_increased_{a}", f"{row['share_increased']:.0%}")
    book.glue(f"dynamics_max_change_{a}", f"{row['max']:.0%}")

pd.DataFrame({
    "measure": stab.measure.map(labels), "arch": stab.arch.map(ARCH_LABELS),
    "median Δrel [95% CI]": stab.apply(lambda r: ci_text(r, "median", pct=True), axis=1),
    f"stable (Δrel ≤ {stable_tolerance:.0%})": stab.share_stable.map("{:.0%}".format),
    "rank went up": stab.share_increased.map("{:.0%}".format), "largest Δrel": stab["max"].map("{:.0%}".format),
    "runs": stab.n.astype(int),
})

# %% [markdown]
# On the primary measure the median relative change is {glue:text}`dynamics_median_change_bert`
# for BERT and {glue:text}`dynamics_median_change_gpt2` for GPT-2 (bootstrap 95 % interval of the
# median in brackets); {glue:text}`dynamics_share_stable_bert` of BERT runs and
# {glue:text}`dynamics_share_stable_gpt2` of GPT-2 runs stay within the tolerance, and the largest
# changes are {glue:text}`dynamics_max_change_bert` and {glue:text}`dynamics_max_change_gpt2`.
# The rank went *up* in {glue:text}`dynamics_share_increased_bert` (BERT) and
# {glue:text}`dynamics_share_increased_gpt2` (GPT-2) of the runs.
#
# ## Layer by layer, head by head
#
# A stable mean can hide heads that move in opposite directions. The heat maps show the
# rank of each layer and head (mean over probe sequences and seeds) at the first and the last
# probe, and their difference, at $\tau$ = {glue:text}`dynamics_heatmap_tau` and the default head
# dimension.

# %%
heat_runs = runs[np.isclose(runs.tau, heatmap_tau) & (runs.head_dim == default_head_dim)]
heat_ok = heat_runs[heat_runs.status == "complete"]
ranks = store.load_table(heat_ok, "ranks")
ranks = ranks[ranks.measure == m]
first, last = ranks.step.min(), ranks.step.max()
heat = ranks[ranks.step.isin([first, last])].assign(
    when=lambda x: np.where(x.step == first, f"step {first}", f"step {last}"))
heat = heat.groupby(["arch", "when", "step", "layer", "head"], as_index=False)["value"].mean()
heat = heat.sort_values(["arch", "step", "layer", "head"])
book.glue("dynamics_heatmap_tau", f"{heatmap_tau:g}")
fig = tplots.layer_head_heatmaps(heat, value="value", cbar_label=MEASURES[m].label)
book.show(fig, heat, "dynamics_layer_head",
          f"Rank ({MEASURES[m].label}) of each layer (rows) and head (columns) at the first and last probe and their "
          f"difference, tau = {heatmap_tau:g}, head dimension {default_head_dim}, mean over probe sequences and "
          f"{heat_ok.seed.nunique()} seeds ({profile} profile, {len(heat_ok)} complete runs of "
          f"{len(heat_runs)}).")

wide = heat.pivot_table(index=["arch", "layer", "head"], columns="step", values="value")
head_change = (wide[last] - wide[first]).abs() / wide[first]
for a in heat.arch.unique():
    book.glue(f"dynamics_head_max_change_{a}", f"{head_change.loc[a].max():.0%}")

# %% [markdown]
# The largest relative change of a single head's rank at this setting is
# {glue:text}`dynamics_head_max_change_bert` for BERT and {glue:text}`dynamics_head_max_change_gpt2`
# for GPT-2.
#
# ## Verdict
#
# **Rule, stated before it is applied.** We judge the claim on the primary measure
# (rank at relative threshold $10^{-2}$) and require both of its halves for both architectures:
#
# * *predictive*: the 95 % bootstrap interval of Spearman's $\rho$ between initial and final
#   mean rank lies above {glue:text}`dynamics_rho_min` (it fails if the whole interval lies below it);
# * *stable*: the 95 % bootstrap interval of the median relative change lies below the
#   tolerance {glue:text}`dynamics_tolerance_pct` (it fails if the whole interval lies above it).
#
# The claim is **supported** if both halves hold for both architectures, **not supported** if
# either half fails for either architecture, and **inconclusive at this scale** otherwise. The
# partial correlation given $\log\tau$ is not part of the rule (the claim is about prediction
# across settings), but we report what it shows: whether the initial rank says anything about
# the final rank that the temperature does not already say.

# %%
def half(low, high, threshold, above):
    """'holds', 'fails' or 'unclear' for an interval against a threshold."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return "unclear"
    if above:
        return "holds" if low > threshold else "fails" if high < threshold else "unclear"
    return "holds" if high < threshold else "fails" if low > threshold else "unclear"


RHO_MIN = 0.5  # the predictive half needs Spearman's rho above this
book.glue("dynamics_rho_min", RHO_MIN)
halves = {}
for a in runs.arch.unique():
    r, st = primary.loc[a], prim_stab.loc[a]
    halves[("predictive", a)] = half(r.rho_low, r.rho_high, RHO_MIN, above=True)
    halves[("stable", a)] = half(st.median_low, st.median_high, stable_tolerance, above=False)
parts = list(halves.values())
status = "supported" if all(p == "holds" for p in parts) else "not supported" if "fails" in parts else \
    "inconclusive at this scale"
halves_text = "; ".join(f"the {h} half {'is ' if v == 'unclear' else ''}{v} for {ARCH_LABELS[a]}" for (h, a), v in halves.items())
book.glue("dynamics_halves", halves_text)

partial_says = []
for a in runs.arch.unique():
    r = primary.loc[a]
    if not np.isfinite(r.partial):
        partial_says.append(f"{ARCH_LABELS[a]}: not computable ({int(r.n)} complete runs)")
    elif r.partial_low > 0:
        partial_says.append(f"{ARCH_LABELS[a]}: still positive ({ci_text(r, 'partial')})")
    elif r.partial_high < 0:
        partial_says.append(f"{ARCH_LABELS[a]}: negative ({ci_text(r, 'partial')})")
    else:
        partial_says.append(f"{ARCH_LABELS[a]}: indistinguishable from zero ({ci_text(r, 'partial')})")

summary_text = (
    f"Across runs, initial and final mean rank ({MEASURES[m].label}) have Spearman rho "
    f"{ci_text(primary.loc['bert'], 'rho')} (BERT) and {ci_text(primary.loc['gpt2'], 'rho')} (GPT-2), and the median "
    f"relative change is {ci_text(prim_stab.loc['bert'], 'median', True)} (BERT) and "
    f"{ci_text(prim_stab.loc['gpt2'], 'median', True)} (GPT-2) against a {stable_tolerance:.0%} tolerance, so "
    f"{halves_text}. Within a temperature (partial rho given log tau) the correlation is {'; '.join(partial_says)}."
)
book.glue("dynamics_partial_says", "; ".join(partial_says))
verdict_line = book.verdict("dynamics", status, summary_text)

# %% [markdown]
# **Verdict: {glue:text}`dynamics_status`.** {glue:text}`dynamics_summary`
#
# How to read the partial correlation: the temperature is the main knob that separates the
# runs, so an across-run correlation can be the temperature showing up twice, at the start and
# at the end, without the initial rank adding anything. What remains once $\log\tau$ is held fixed — {glue:text}`dynamics_partial_says`
# — is the part of the claim that would let a practitioner read the final rank off an
# initialisation *without* already knowing the temperature.

# %%
book.glue("dynamics_seconds", round(time.perf_counter() - t_start, 1))
print(f"chapter computed in {time.perf_counter() - t_start:.1f} s after the sweep was loaded")
