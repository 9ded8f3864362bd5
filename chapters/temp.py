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
# # Temperature: does a colder softmax raise the attention rank?
#
# **Claim (iii) of the study, in our words.** Dividing the attention logits by a smaller
# temperature raises the rank of the attention matrices at initialisation, and (through
# claim (ii), a higher rank goes with a lower loss) a colder softmax trains to a lower
# loss {cite}`min2023efficiency`. The study compares the standard transformer
# {cite}`vaswani2017attention` with temperatures a thousand times smaller.
#
# We write the attention of one head as
#
# $$A = \operatorname{softmax}\!\left(\frac{QK^\top}{T}\right), \qquad T = \tau\sqrt{d_\mathrm{head}},$$
#
# so the temperature *ratio* $\tau = 1$ is the stock BERT {cite}`devlin2019bert` and GPT-2
# {cite}`radford2019language`, and $\tau = 10^{-3}$ is the study's cold setting. This
# chapter sweeps $\tau$ over a grid of {glue:text}`temp_grid_text`, trains both models from
# scratch at every grid point with several seeds, and asks two separate questions:
#
# 1. does a lower $\tau$ raise the rank *at initialisation* (for every rank measure of the
#    chapter on measuring rank)?
# 2. does a lower $\tau$ give a lower validation loss after training?
#
# One setting, the parameter `tau` below, is shown in detail against the baseline
# $\tau = 1$; change it with `papermill temp.ipynb out.ipynb -p tau 0.3` (a value off the
# grid trains its own runs, for both architectures and every seed of the sweep).

# %% tags=["parameters"]
profile = "auto"
seeds = None
taus = None
head_dims = None
tau = 0.25

# %%
import warnings

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a kernel without ipywidgets
import math
import time

import numpy as np
import pandas as pd
import torch
from IPython.display import Markdown, display

from attnrank import book, experiments, models, probe, rank, stats, store, train
from attnrank.errors import ConfigError
from attnrank.plots import sweeps
from attnrank.profiles import resolve_config

book.check_parameters(globals(), ("profile", "seeds", "taus", "head_dims", "tau"))
profile = book.setup(profile)
t_chapter = time.perf_counter()
BASELINE = 1.0
PRIMARY = experiments.PRIMARY_MEASURE
MEASURE_NAMES = list(rank.MEASURES)

# %% [markdown]
# ## The runs
#
# All chapters on trained models share one sweep (`experiments.main_sweep`): the
# temperature grid at the profile's standard head dimension, plus a head-dimension grid
# (next chapter). A cold build trains each run once; afterwards the run store serves them.
# Here we keep the temperature grid at the standard head dimension. If the detailed `tau`
# (or the baseline $\tau = 1$) is not on the grid, its runs are trained now, with the same
# seeds.

# %%
grid = experiments.sweep_defaults(profile, taus=taus, head_dims=head_dims, seeds=seeds)
_g = sorted(grid["taus"])
book.glue("temp_grid_text", f"{len(_g)} values a factor of about {(_g[-1] / _g[0]) ** (1 / (len(_g) - 1)):.0f} apart"
          if len(_g) > 1 else "one value")
_init_std = {a: models.build_model(a, hidden_size=32, num_layers=1, num_heads=2, max_len=16, vocab_size=64).config.initializer_range
             for a in models.ARCHS}
assert len(set(_init_std.values())) == 1, _init_std
book.glue("temp_init_std", float(next(iter(_init_std.values()))))
t0 = time.perf_counter()
runs = store.sweep(experiments.main_sweep(profile, taus=taus, head_dims=head_dims, seeds=seeds), progress=False)
sweep_seconds = time.perf_counter() - t0

head_dim0 = resolve_config("bert", profile).head_dim  # the profile's standard head dimension (same for both archs)
missing = [t for t in sorted({tau, BASELINE}) if not any(math.isclose(t, g, rel_tol=1e-9) for g in grid["taus"])]
t0 = time.perf_counter()
extra = (store.sweep(experiments.tau_sweep(profile, taus=missing, seeds=list(grid["seeds"])), progress=False)
         if missing else runs.iloc[:0])
extra_seconds = time.perf_counter() - t0

on_grid = runs[(runs.head_dim == head_dim0) & runs.tau.isin(grid["taus"])]
tsweep = pd.concat([on_grid, extra]).drop_duplicates("key").sort_values(["arch", "tau", "seed"]).reset_index(drop=True)
tsweep["log10_tau"] = np.log10(tsweep.tau)
n_seeds = tsweep.seed.nunique()
n_runs = len(tsweep)
failed = tsweep[tsweep.status != "complete"]
book.glue("temp_n_runs", int(n_runs))
book.glue("temp_n_seeds", int(n_seeds))
book.glue("temp_n_taus", int(tsweep.tau.nunique()))
book.glue("temp_head_dim", int(head_dim0))
book.glue("temp_tau", tau)
book.glue("temp_n_failed", int(len(failed)))
book.glue("temp_tau_min", float(min(grid["taus"])))
book.glue("temp_tau_max", float(max(grid["taus"])))
display(Markdown(f"{n_runs} runs ({profile} profile): {tsweep.tau.nunique()} temperatures x 2 architectures x "
                 f"{n_seeds} seeds at head dimension {head_dim0}; off-grid settings added (trained once, then served by the store): "
                 f"{', '.join(map(str, missing)) or 'none'}."))
cols = ["arch", "tau", "seed", "status", "failure_step", "failure_reason"]
display(failed[cols] if len(failed) else Markdown("No run diverged."))


def caption_runs(d: pd.DataFrame) -> str:
    return f"{profile} profile, {len(d)} runs, {d.seed.nunique()} seeds per setting"


# %% [markdown]
# {glue:text}`temp_n_runs` runs, {glue:text}`temp_n_seeds` seeds per setting, of which
# {glue:text}`temp_n_failed` diverged (listed above; they stay in every figure, drawn as
# red crosses, and are left out only of the statistics that need a final loss).
#
# ## Why temperature acts on the rank at initialisation
#
# At initialisation the HF weights have standard deviation {glue:text}`temp_init_std`, so the query and key of a
# token are small and the logits $S = QK^\top/T$ are tiny at $\tau = 1$: every row of $A$
# is then almost the uniform row $\frac1n\mathbf 1^\top$. Expand the exponential: with
# logits $S_{ij}$ of size $\epsilon$,
#
# $$A_{ij} = \frac{e^{S_{ij}}}{\sum_k e^{S_{ik}}} = \frac1n\Bigl(1 + (S_{ij} - \bar S_{i}) + O(\epsilon^2)\Bigr),$$
#
# a rank-one matrix plus a correction of rank at most $d_\mathrm{head}+1$ and size
# $\epsilon/n$, plus higher powers. This is the staircase of the theory chapter (P1): the
# $m$-th power of the logits contributes at most $r_m = \binom{d_\mathrm{head}+m}{m}$
# directions, with singular values of order $\epsilon^m$. A numerical rank with a
# tolerance counts only the blocks whose singular values clear it, so it grows as the
# logits grow, and lowering $\tau$ multiplies every logit by $1/\tau$. In the opposite
# limit ($\tau \to 0$) every row becomes one-hot at its argmax and the rank tends to the
# number of distinct argmax columns (P2), about $0.63\,n$ or fewer: the rank need not keep
# rising all the way down.
#
# We measure the logit scale directly on the freshly initialised models: the within-row
# standard deviation of $S$, on the probe sequences of the runs.

# %%
attention_logits = probe.attention_logits  # S = Q K^T / (tau sqrt(d_head)), [layers, batch, heads, n, n]


def logit_sd(S: torch.Tensor, causal: bool) -> float:
    """Mean over rows (with at least two visible keys) of the standard deviation of the visible logits."""
    n = S.shape[-1]
    vis = torch.ones(n, n, dtype=torch.bool).tril() if causal else torch.ones(n, n, dtype=torch.bool)
    cnt = vis.sum(-1).double()
    S = S.double().masked_fill(~vis, 0.0)
    mean = S.sum(-1) / cnt
    var = ((S - mean[..., None]).masked_fill(~vis, 0.0) ** 2).sum(-1) / (cnt - 1).clamp_min(1)
    keep = cnt >= 2
    return float(var.sqrt()[..., keep].mean())


def init_probe(arch: str, t: float, seed: int = 0):
    """The freshly initialised model of a run (same seed, so exactly the weights its training started from)."""
    cfg = resolve_config(arch, profile, tau=t, seed=seed)
    _, tokenizer, _, probe_ids, _ = train.prepare_data(cfg)
    model = models.build_model(arch, hidden_size=cfg.hidden_size, num_layers=cfg.num_layers, num_heads=cfg.num_heads,
                               tau=t, max_len=cfg.max_len, vocab_size=len(tokenizer), dropout=cfg.dropout, seed=seed,
                               pad_token_id=tokenizer.pad_token_id)
    S = attention_logits(model, probe_ids)
    A = probe.attention_probabilities(model, probe_ids)
    check = float((torch.softmax(S.masked_fill(~torch.ones(S.shape[-1], S.shape[-1], dtype=torch.bool).tril(), -torch.inf)
                                 if arch == "gpt2" else S, -1) - A).abs().max())
    assert check < 1e-4, f"hooked logits do not reproduce the model's attention ({check})"
    values = rank.rank_measures(A, measures=(PRIMARY, "attention_entropy"))
    return dict(arch=arch, tau=t, logit_sd=logit_sd(S, arch == "gpt2"), n=S.shape[-1],
                **{m: float(v.mean()) for m, v in values.items()})


init = pd.DataFrame([init_probe(a, t) for a in ("bert", "gpt2") for t in sorted({tau, BASELINE})])
display(init.round(4))
for a in ("bert", "gpt2"):
    for t, name in ((tau, "tau"), (BASELINE, "base")):
        row = init[(init.arch == a) & np.isclose(init.tau, t)].iloc[0]
        book.glue(f"temp_logit_sd_{name}_{a}", float(row.logit_sd))
        book.glue(f"temp_entropy_{name}_{a}", float(row.attention_entropy))
n_tok = int(init.n.iloc[0])
uniform_causal = rank.rank_measures(torch.tril(torch.ones(n_tok, n_tok, dtype=torch.float64))
                                    / torch.arange(1, n_tok + 1, dtype=torch.float64)[:, None], measures=(PRIMARY,))
_ = book.glue("temp_uniform_causal_rank", float(uniform_causal[PRIMARY]))
_ = book.glue("temp_log_n", float(math.log(n_tok)))
_ = book.glue("temp_n", n_tok)

# %% [markdown]
# At $\tau = 1$ the logits of BERT have a within-row standard deviation of
# {glue:text}`temp_logit_sd_base_bert:.3g` (GPT-2: {glue:text}`temp_logit_sd_base_gpt2:.3g`)
# and the attention entropy is {glue:text}`temp_entropy_base_bert:.4f` nats for BERT,
# against $\log n =$ {glue:text}`temp_log_n:.4f` for exactly uniform rows over
# $n =$ {glue:text}`temp_n` tokens. At the detailed setting $\tau =$ {glue:text}`temp_tau:g`
# the logits are $1/\tau$ times larger ({glue:text}`temp_logit_sd_tau_bert:.3g` for BERT,
# {glue:text}`temp_logit_sd_tau_gpt2:.3g` for GPT-2), with entropy
# {glue:text}`temp_entropy_tau_bert:.4f` nats (BERT). Lowering $\tau$ at initialisation
# therefore does one thing: it moves every head away from uniform attention.
#
# **What $\tau$ does not do ({ref}`P3 <target-p3>`).** Once $W_Q$ and $W_K$ are trained, $\tau$ is not a
# capacity parameter: any attention pattern reachable at one temperature is reachable at
# another by rescaling $W_Q W_K^\top$. For Adam without weight decay on $W_Q, W_K$ (our runs
# use a small decoupled weight decay, so there it holds approximately) a run
# at $(\tau, \sigma_\mathrm{init}, \eta)$ follows exactly the trajectory of the run at
# $(1, \sigma_\mathrm{init}/\sqrt\tau, \eta/\sqrt\tau)$ on $W_Q, W_K$. So whatever $\tau$ does
# to the *loss* must come from the larger logits at initialisation and from the larger
# effective learning rate of $W_Q, W_K$, not from a different set of reachable models.
# Keep that in mind when reading the loss section below: a loss effect of $\tau$ is not
# evidence that rank causes loss.
#
# ## Rank at initialisation against temperature, for every measure
#
# Each run's rank probe measured every head of every layer on the same held-out probe
# sequences before the first step. The figure shows the mean over heads, layers and
# sequences for each run, averaged over seeds (error bars: $\pm 1$ standard deviation over
# seeds; faint dots: single seeds), at initialisation (solid) and after training (dashed).

# %%
def tidy_ranks(d: pd.DataFrame) -> pd.DataFrame:
    """Initial and final value of every measure, one row per (run, measure, when)."""
    rows = []
    for when in ("initial", "final"):
        part = d[["key", "arch", "tau", "head_dim", "seed", "status"] + [f"{when}_{m}" for m in MEASURE_NAMES]]
        part = part.melt(id_vars=["key", "arch", "tau", "head_dim", "seed", "status"], var_name="measure", value_name="value")
        part["measure"] = part.measure.str.removeprefix(f"{when}_")
        part["when"] = when
        rows.append(part)
    return pd.concat(rows, ignore_index=True)


ranks_long = tidy_ranks(tsweep)
fig = sweeps.by_setting(ranks_long, "tau", facet="measure", style="when", highlight=tau, baseline=BASELINE)
book.show(fig, ranks_long, "temp_rank_vs_tau",
          f"Attention rank against the temperature ratio tau (log axis), one panel per rank measure, at "
          f"initialisation (solid) and after training (dashed); BERT and GPT-2; mean over seeds with +-1 sd bars. "
          f"Red: the detailed tau = {tau:g}; dashed black line: the baseline tau = 1; red crosses: diverged runs "
          f"({caption_runs(tsweep)}, head dimension {head_dim0}).")

# %% [markdown]
# The test of the claim on the primary measure (rank at relative tolerance $10^{-2}$) is
# Spearman's rank correlation between $\log\tau$ and the initial rank over all runs of the
# grid (every temperature and seed), per architecture, with a 95% bootstrap interval over
# runs. Off-grid settings trained for the detailed view are left out, so the verdict does
# not depend on the `tau` parameter. A negative $\rho$ means that a lower temperature gives
# a higher rank.

# %%
grid_runs = tsweep[tsweep.tau.isin(grid["taus"])]
rho = {}
for a in ("bert", "gpt2"):
    d = grid_runs[grid_runs.arch == a]
    rho[a] = stats.spearman_ci(np.log(d.tau), d[f"initial_{PRIMARY}"])
    for k in ("rho", "low", "high"):
        book.glue(f"temp_rho_{a}_{k}", float(rho[a][k]))
    book.glue(f"temp_rho_{a}_n", int(rho[a]["n"]))
    for t, name in ((tau, "tau"), (BASELINE, "base"), (min(grid["taus"]), "min")):
        v = tsweep[(tsweep.arch == a) & np.isclose(tsweep.tau, t)][f"initial_{PRIMARY}"]
        book.glue(f"temp_rank0_{name}_{a}", float(v.mean()))
rho_all = pd.DataFrame([
    {"arch": a, "measure": m, **stats.spearman_ci(np.log(grid_runs[grid_runs.arch == a].tau),
                                                  grid_runs[grid_runs.arch == a][f"initial_{m}"])}
    for a in ("bert", "gpt2") for m in MEASURE_NAMES])
display(Markdown("Spearman's rho of log tau against the initial value of each measure (95% bootstrap interval):"))
rho_all["rho [95% CI]"] = [f"{book.fmt(r.rho)} [{book.fmt(r.low)}, {book.fmt(r.high)}]" for r in rho_all.itertuples()]
display(rho_all.pivot(index="measure", columns="arch", values="rho [95% CI]").loc[MEASURE_NAMES])

# %% [markdown]
# For BERT, $\rho =$ {glue:text}`temp_rho_bert_rho:.2f` (95% CI
# {glue:text}`temp_rho_bert_low:.2f` to {glue:text}`temp_rho_bert_high:.2f`,
# {glue:text}`temp_rho_bert_n` runs); for GPT-2, $\rho =$ {glue:text}`temp_rho_gpt2_rho:.2f`
# ({glue:text}`temp_rho_gpt2_low:.2f` to {glue:text}`temp_rho_gpt2_high:.2f`). The mean
# initial primary rank goes from {glue:text}`temp_rank0_base_bert:.2f` at $\tau = 1$ to
# {glue:text}`temp_rank0_tau_bert:.2f` at $\tau =$ {glue:text}`temp_tau:g` and
# {glue:text}`temp_rank0_min_bert:.2f` at $\tau =$ {glue:text}`temp_tau_min:g` for BERT
# (GPT-2: {glue:text}`temp_rank0_base_gpt2:.2f`, {glue:text}`temp_rank0_tau_gpt2:.2f`,
# {glue:text}`temp_rank0_min_gpt2:.2f`). The table above gives the same correlation for every
# measure. Two of them are not counts of directions: the stable rank is 1 for uniform rows
# and grows as attention sharpens, and the attention entropy is $\log n$ for uniform rows
# and *falls* as attention sharpens, so its correlation has the opposite sign by
# construction.
#
# GPT-2 needs its own baseline. A causal attention matrix is lower-triangular with a
# positive diagonal, and at $\tau = 1$ its rows are close to uniform over the visible
# tokens; that uniform causal matrix is invertible and, at $n =$ {glue:text}`temp_n`, has
# rank {glue:text}`temp_uniform_causal_rank:.0f` at relative tolerance $10^{-2}$. A lower
# temperature makes each row concentrate on its argmax, which can only move the rank from
# that value toward the number of distinct argmax columns (P2). So for causal attention the
# claim predicts the sign of the effect only where the uniform causal matrix is itself of
# low numerical rank (long sequences).
#
# A rank correlation summarises a monotone trend. P1 and P2 predict a response that rises
# as the logits grow and then falls toward the hardmax rank, so we also report where the
# mean initial rank peaks on the grid, and the comparison the study itself made: the
# stock model ($\tau = 1$) against the coldest setting, as a difference of means with a
# 95% bootstrap interval over seeds.

# %%
peak_rows = []
for a in ("bert", "gpt2"):
    d = grid_runs[grid_runs.arch == a]
    means = d.groupby("tau")[f"initial_{PRIMARY}"].mean()
    cold = d[np.isclose(d.tau, min(grid["taus"]))][f"initial_{PRIMARY}"].to_numpy(float)
    stock = d[np.isclose(d.tau, BASELINE)][f"initial_{PRIMARY}"].to_numpy(float)
    diff = float(cold.mean() - stock.mean()) if len(cold) and len(stock) else float("nan")
    low, high = (stats.bootstrap_ci(lambda x, y: np.mean(x) - np.mean(y), cold, stock, paired=False)
                 if len(cold) > 1 and len(stock) > 1 else (float("nan"), float("nan")))
    peak_rows.append({"arch": a, "tau at the peak": float(means.idxmax()), "peak rank": float(means.max()),
                      "rank at tau = 1": float(stock.mean()), f"rank at tau = {min(grid['taus']):g}": float(cold.mean()),
                      "difference": diff, "95% CI low": low, "95% CI high": high})
    book.glue(f"temp_peak_tau_{a}", float(means.idxmax()))
    book.glue(f"temp_peak_rank_{a}", float(means.max()))
    book.glue(f"temp_cold_diff_{a}", diff)
    book.glue(f"temp_cold_diff_{a}_low", float(low))
    _ = book.glue(f"temp_cold_diff_{a}_high", float(high))
display(pd.DataFrame(peak_rows).round(3))

# %% [markdown]
# The mean initial rank peaks at $\tau =$ {glue:text}`temp_peak_tau_bert:g` for BERT (rank
# {glue:text}`temp_peak_rank_bert:.1f`) and at $\tau =$ {glue:text}`temp_peak_tau_gpt2:g` for
# GPT-2 ({glue:text}`temp_peak_rank_gpt2:.1f`). Going from $\tau = 1$ to $\tau =$
# {glue:text}`temp_tau_min:g` changes it by {glue:text}`temp_cold_diff_bert:.2f` for BERT (95%
# CI {glue:text}`temp_cold_diff_bert_low:.2f` to {glue:text}`temp_cold_diff_bert_high:.2f`)
# and {glue:text}`temp_cold_diff_gpt2:.2f` for GPT-2 ({glue:text}`temp_cold_diff_gpt2_low:.2f`
# to {glue:text}`temp_cold_diff_gpt2_high:.2f`). With only a few seeds these intervals are
# crude; the figure above shows the whole curve.
#
# ## The detailed setting against $\tau = 1$: rank through training
#
# The probe measured the ranks every few steps. Below, the mean over heads, layers and
# sequences through training for the detailed $\tau$ and the baseline (band: $\pm 1$ sd over
# seeds), for the primary measure, the study's absolute rule and the effective rank.

# %%
pair = tsweep[np.isclose(tsweep.tau, tau) | np.isclose(tsweep.tau, BASELINE)]
summ = store.load_table(pair, "rank_summary")
curve_measures = [PRIMARY, "rank_atol_1e-8", "effective_rank"]
summ = summ[summ.measure.isin(curve_measures)].rename(columns={"mean": "value"})
summ["measure"] = pd.Categorical(summ.measure, curve_measures, ordered=True)
summ = summ.sort_values(["measure", "arch", "tau", "seed", "step"])
summ["measure"] = summ.measure.astype(str)
fig = sweeps.curves(summ, y="value", row="measure", col="arch", highlight=tau, baseline=BASELINE, height=2.6)
book.show(fig, summ, "temp_rank_curves",
          f"Mean attention rank through training for tau = {tau:g} (red) and tau = 1 (black, dashed), three measures "
          f"(rows) for BERT and GPT-2 (columns); band: +-1 sd over seeds ({caption_runs(pair)}).")

# %% [markdown]
# ## Per-layer ranks
#
# The mean hides the layers. Here the primary rank of each layer at initialisation (filled
# markers) and after training (open markers), for the two temperatures (error bars: $\pm 1$ sd
# over heads and seeds).

# %%
ranks_tab = store.load_table(pair, "ranks")
ranks_tab = ranks_tab[ranks_tab.measure == PRIMARY]
first, last = ranks_tab.groupby("key").step.transform("min"), ranks_tab.groupby("key").step.transform("max")
layer_df = pd.concat([ranks_tab[ranks_tab.step == first].assign(when="initial"),
                      ranks_tab[ranks_tab.step == last].assign(when="final")], ignore_index=True)
fig = sweeps.per_layer(layer_df, highlight=tau, baseline=BASELINE, ylabel=rank.MEASURES[PRIMARY].label)
book.show(fig, layer_df, "temp_rank_per_layer",
          f"Primary rank ({rank.MEASURES[PRIMARY].label}) per layer at initialisation (filled) and after training "
          f"(open), tau = {tau:g} (red) and tau = 1 (black); +-1 sd over heads and seeds ({caption_runs(pair)}).")

# %% [markdown]
# ## Does a lower temperature give a lower loss?
#
# The validation loss (cross-entropy in nats per predicted token, masked tokens for BERT,
# next tokens for GPT-2) through training for every temperature of the sweep: thin lines
# coloured by $\tau$ on a log scale, the detailed setting in red, the baseline in black.

# %%
evals = store.load_table(tsweep, "eval_log")
fig = sweeps.curves(evals, y="val_loss", col="arch", highlight=tau, baseline=BASELINE)
book.show(fig, evals, "temp_loss_curves",
          f"Validation loss through training for every temperature ratio tau (colour, log scale); red: tau = {tau:g}, "
          f"black dashed: tau = 1; band: +-1 sd over seeds; dotted with a cross: diverged runs ({caption_runs(tsweep)}).")

# %%
loss_df = tsweep[["key", "arch", "tau", "seed", "status", "final_val_loss", "initial_val_loss"]].copy()
fig = sweeps.by_setting(loss_df, "tau", "final_val_loss", facet=None, highlight=tau, baseline=BASELINE,
                        width=5.0, height=3.4, ylabel="final validation loss (nats/token)")
book.show(fig, loss_df, "temp_final_loss_vs_tau",
          f"Final validation loss against tau (log axis); mean over seeds with +-1 sd bars, faint dots: seeds; red: "
          f"tau = {tau:g}; dashed: tau = 1; crosses at the top: diverged runs ({caption_runs(tsweep)}).")

# %% [markdown]
# The loss test mirrors the rank test: Spearman's $\rho$ between $\log\tau$ and the final
# validation loss over the completed runs of the grid, per architecture (a *positive*
# $\rho$ means a lower temperature gives a lower loss). We also report the loss difference
# between the detailed setting and the baseline (mean over seeds).

# %%
done = grid_runs[grid_runs.status == "complete"]
loss_rho = {}
for a in ("bert", "gpt2"):
    d = done[done.arch == a]
    loss_rho[a] = stats.spearman_ci(np.log(d.tau), d.final_val_loss)
    for k in ("rho", "low", "high"):
        book.glue(f"temp_loss_rho_{a}_{k}", float(loss_rho[a][k]))
    ok = tsweep[(tsweep.arch == a) & (tsweep.status == "complete")]
    lt, lb = (ok[np.isclose(ok.tau, t)].final_val_loss for t in (tau, BASELINE))
    book.glue(f"temp_loss_tau_{a}", float(lt.mean()))
    book.glue(f"temp_loss_base_{a}", float(lb.mean()))
    best = ok.groupby("tau").final_val_loss.mean()
    book.glue(f"temp_loss_best_tau_{a}", float(best.idxmin()) if len(best) else float("nan"))

# %% [markdown]
# Final loss: $\rho =$ {glue:text}`temp_loss_rho_bert_rho:.2f` for BERT (95% CI
# {glue:text}`temp_loss_rho_bert_low:.2f` to {glue:text}`temp_loss_rho_bert_high:.2f`) and
# {glue:text}`temp_loss_rho_gpt2_rho:.2f` for GPT-2 ({glue:text}`temp_loss_rho_gpt2_low:.2f`
# to {glue:text}`temp_loss_rho_gpt2_high:.2f`). At $\tau =$ {glue:text}`temp_tau:g` the mean
# final loss is {glue:text}`temp_loss_tau_bert:.3f` (BERT) and {glue:text}`temp_loss_tau_gpt2:.3f`
# (GPT-2), against {glue:text}`temp_loss_base_bert:.3f` and {glue:text}`temp_loss_base_gpt2:.3f`
# at $\tau = 1$; the lowest mean final loss on the grid is at $\tau =$
# {glue:text}`temp_loss_best_tau_bert:g` (BERT) and {glue:text}`temp_loss_best_tau_gpt2:g` (GPT-2).
# By P3 this is an effect of the initial logit scale and of the effective learning rate of
# $W_Q, W_K$; whether it goes *through* the rank is the question of the chapter on loss.
#
# ## Verdict
#
# **Rule (stated before looking).** On the primary measure, the claim that a lower
# temperature raises the initial rank is *supported* if the 95% interval of Spearman's
# $\rho(\log\tau, \text{initial rank})$ lies below zero for both BERT and GPT-2; *not
# supported* if it lies above zero for either architecture; otherwise *inconclusive at this
# scale*. The loss claim is judged by the same rule on $\rho(\log\tau, \text{final loss})$
# with the sign reversed (supported if both intervals lie above zero).


# %%
def judge(r: dict, sign: int) -> str:
    """Apply the rule: 'supported' if every interval of sign * rho lies above zero, 'not supported' if one lies below."""
    bounds = [sorted((sign * r[a]["low"], sign * r[a]["high"])) for a in r]
    if any(not np.isfinite(v) for b in bounds for v in b):
        return "inconclusive at this scale"
    if all(lo > 0 for lo, _ in bounds):
        return "supported"
    if any(hi < 0 for _, hi in bounds):
        return "not supported"
    return "inconclusive at this scale"


def ci_text(r: dict) -> str:
    return f"rho = {book.fmt(r['rho'])} [{book.fmt(r['low'])}, {book.fmt(r['high'])}]"


def mean_at(a: str, t: float, col: str) -> float:
    d = tsweep[(tsweep.arch == a) & np.isclose(tsweep.tau, t) & ((tsweep.status == "complete") | col.startswith("initial"))]
    return float(d[col].mean())


tau_min = min(grid["taus"])
status = judge(rho, -1)
summary = (f"Spearman's rho between log tau and the initial {rank.MEASURES[PRIMARY].label} is "
           f"{ci_text(rho['bert'])} for BERT and {ci_text(rho['gpt2'])} for GPT-2 ({profile} profile, "
           f"{n_seeds} seeds x {len(grid['taus'])} temperatures); from tau = 1 to tau = {tau_min:g} the mean initial "
           f"rank moves from {book.fmt(mean_at('bert', 1.0, f'initial_{PRIMARY}'))} to "
           f"{book.fmt(mean_at('bert', tau_min, f'initial_{PRIMARY}'))} (BERT) and from "
           f"{book.fmt(mean_at('gpt2', 1.0, f'initial_{PRIMARY}'))} to {book.fmt(mean_at('gpt2', tau_min, f'initial_{PRIMARY}'))} (GPT-2).")
book.verdict("temp", status, summary)

loss_status = judge(loss_rho, +1)
loss_summary = (f"Spearman's rho between log tau and the final validation loss is {ci_text(loss_rho['bert'])} for BERT "
                f"and {ci_text(loss_rho['gpt2'])} for GPT-2 (positive means colder is better); the mean final loss at "
                f"tau = {tau:g} against tau = 1 is {book.fmt(mean_at('bert', tau, 'final_val_loss'), 3)} against "
                f"{book.fmt(mean_at('bert', 1.0, 'final_val_loss'), 3)} nats (BERT) and "
                f"{book.fmt(mean_at('gpt2', tau, 'final_val_loss'), 3)} against {book.fmt(mean_at('gpt2', 1.0, 'final_val_loss'), 3)} nats (GPT-2).")
book.verdict("temp_loss", loss_status, loss_summary)
_ = book.glue("temp_seconds", float(time.perf_counter() - t_chapter))
_ = book.glue("temp_extra_seconds", float(extra_seconds))

# %% [markdown]
# **Rank at initialisation: {glue:text}`temp_status`.** {glue:text}`temp_summary`
#
# **Loss: {glue:text}`temp_loss_status`.** {glue:text}`temp_loss_summary`
#
# The rank half of the claim is a statement about initialisation, and the mechanism is
# simple: $\tau$ multiplies the initial logits by $1/\tau$, and a numerical rank counts how
# far the softmax is from its uniform first-order term. Whether that initial rank then
# matters for the loss, separately from the temperature's direct effect on optimisation
# (P3), is tested in the chapter on loss; the comparison with head dimension, the other
# lever the study names, is in the next chapter.
#
# ```{note}
# Re-run this chapter with another detailed temperature, for example
# `papermill chapters/temp.ipynb /tmp/temp.ipynb -p tau 0.3 -p profile quick`. A value off
# the grid trains its runs (both architectures, every seed) and adds them to the figures;
# the verdict is always computed on the grid.
# ```
