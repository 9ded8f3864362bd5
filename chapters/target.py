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
# # A high-rank target: where standard attention falls short, and why
#
# **Claim (v) of the study, in our words.** On a synthetic task whose solution needs a
# high-rank attention matrix, the standard settings (temperature ratio $\tau = 1$, small
# heads) fail to fit the target, which the study reads as support for its account: a low
# attention rank limits what the model can do, and a lower temperature or a larger head
# raises the rank {cite}`min2023efficiency`. The study's task itself is not public, so we
# build the smallest task of this kind and ask two questions: *do* the standard settings
# fall short, and if they do, is the reason the one the study gives?
#
# **The toy.** One attention layer reads $n$ one-hot tokens (orthonormal inputs), so its
# queries and keys are the rows of learned matrices $W_Q, W_K \in \mathbb{R}^{n \times d_h}$.
# The values are fixed to the identity, $V = I$, so the layer's output *is* its attention
# matrix $A$. It is trained, full batch with Adam, to minimise the mean over rows of
# $\mathrm{KL}(T_i \,\|\, A_i)$ (in nats) for a fixed row-stochastic target $T$. Two variants:
#
# * **plain** dot-product attention, $A = \operatorname{softmax}\big(QK^\top / (\tau\sqrt{d_h})\big)$;
# * **normalised** $q$ and $k$, $A = \operatorname{softmax}\big(\cos(q_i, k_j)/\tau\big)$, where
#   $|S_{ij}| \le 1/\tau$: the temperature caps the logits.
#
# Three targets (`attnrank.synthetic.make_target`, a new one per seed): a random
# **permutation** matrix (rank $n$, the hardest), a **sharp** random matrix
# $\operatorname{softmax}(sG)$ with Gaussian $G$ and sharpness $s$ = {glue:text}`target_sharpness`
# (high numerical rank, peaked rows), and a **low-rank** control $UV$ with $U, V$
# row-stochastic of rank {glue:text}`target_lowrank_rank`. The grid covers a log-spaced
# range of temperature ratios around $\tau = 1$, head dimensions from 1 (for the propositions
# below) through realistic sizes (standard BERT and GPT-2 heads are 64 wide) up to a head as
# wide as the sequence, both variants and several seeds (sizes below); it is trained as one
# batched tensor program per head dimension (`synthetic.run_grid`).

# %% tags=["parameters"]
profile = "auto"
seed = 0
taus = None
head_dims = None
n = None
steps = None
n_seeds = None

# %%
import inspect
import math
import time

import numpy as np
import pandas as pd
import torch
from IPython.display import Markdown, display
from attnrank import book
from attnrank.errors import ConfigError
from attnrank.profiles import base_profile

book.check_parameters(globals(), ("profile", "seed", "taus", "head_dims", "n", "steps", "n_seeds"))
profile = book.setup(profile)

from attnrank import stats, synthetic, theory, verdicts
from attnrank.plots import theory as tplots
from attnrank.rank import numerical_rank

DEFAULTS = {
    "ci": dict(n=32, steps=200, taus=[0.01, 0.1, 1.0, 10.0], head_dims=[1, 2, 16, 32], n_seeds=4, log_every=10),
    "quick": dict(n=64, steps=600, taus=[0.01, 0.03, 0.1, 0.3, 1.0, 10.0], head_dims=[1, 2, 16, 32, 64],
                  n_seeds=6, log_every=20),
    "paper": dict(n=128, steps=2000, taus=[float(f"{t:.3g}") for t in np.logspace(-2, 1, 13)],
                  head_dims=[1, 2, 4, 16, 32, 64, 128], n_seeds=6, log_every=20),
}[base_profile(profile)]  # long: the quick sizes
if taus is not None:
    if 1.0 not in taus:
        raise ConfigError("taus", f"got {taus!r}; the grid must contain the standard tau = 1")
    DEFAULTS["taus"] = sorted(set(taus))
if head_dims is not None:
    DEFAULTS["head_dims"] = sorted(set(head_dims))
for name, value in (("n", n), ("steps", steps), ("n_seeds", n_seeds)):
    if value is not None:
        DEFAULTS[name] = value
N, STEPS, TAUS, HEAD_DIMS = DEFAULTS["n"], DEFAULTS["steps"], DEFAULTS["taus"], DEFAULTS["head_dims"]
if DEFAULTS["n_seeds"] < 4:
    raise ConfigError("n_seeds", f"got {DEFAULTS['n_seeds']}; the held-out selection needs at least 4 (2 to select, 2 to estimate)")
SEEDS = list(range(seed, seed + DEFAULTS["n_seeds"]))
SELECT_SEEDS, ESTIMATE_SEEDS = synthetic.split_seeds(SEEDS)
D_SMALL = [d for d in HEAD_DIMS if d <= 2] or HEAD_DIMS[:1]
D_MAX = max(HEAD_DIMS)
D_REAL_MIN = 16  # standard heads are 64 wide; the smallest head of any common transformer configuration is about 16
D_REAL = [d for d in HEAD_DIMS if D_REAL_MIN <= d < min(N, D_MAX)]
if not D_REAL:
    raise ConfigError("head_dims", f"got {HEAD_DIMS} with n = {N}; the verdict needs a realistic head, {D_REAL_MIN} <= d_h < "
                      f"min(n, largest head), and a larger head to compare it with")
LR, INIT_STD = 1e-2, 1.0
DEVICE = "cuda" if profile == "paper" and torch.cuda.is_available() else None  # the toy runs on the CPU otherwise
t_chapter = time.perf_counter()
checks = {}


def record_check(name: str, tested: int, violations: int) -> None:
    checks[name] = (int(tested), int(violations))
    book.glue(f"target_{name}_tested", int(tested))
    book.glue(f"target_{name}_violations", int(violations))


book.glue("target_profile", profile)
book.glue("target_n", N)
book.glue("target_steps", STEPS)
book.glue("target_n_seeds", len(SEEDS))
book.glue("target_lr", LR)
book.glue("target_taus", ", ".join(f"{t:g}" for t in TAUS))
book.glue("target_head_dims", ", ".join(map(str, HEAD_DIMS)))
book.glue("target_real_dims", ", ".join(map(str, D_REAL)))
book.glue("target_real_min", D_REAL_MIN)
book.glue("target_select_seeds", ", ".join(map(str, SELECT_SEEDS)))
book.glue("target_estimate_seeds", ", ".join(map(str, ESTIMATE_SEEDS)))
P3_TAUS = (0.01, 0.1, 10.0)
P3_D, P3_STEPS = 4, 300          # head dimension and Adam steps of the P3 check
KL_GOOD, KL_BAD = 0.05, 1.0      # final KL (nats) of a good fit, and of a bad one
book.glue("target_p3_taus", ", ".join(f"{t:g}" for t in P3_TAUS))
book.glue("target_p3_d", P3_D)
book.glue("target_p3_steps", P3_STEPS)
book.glue("target_kl_good", KL_GOOD)
book.glue("target_kl_bad", KL_BAD)
_target_defaults = inspect.signature(synthetic.make_target).parameters
book.glue("target_sharpness", _target_defaults["sharpness"].default)
book.glue("target_lowrank_rank", _target_defaults["rank"].default);

# %% [markdown]
# Sizes of this run: $n$ = {glue:text}`target_n` tokens, {glue:text}`target_steps` Adam steps
# (learning rate {glue:text}`target_lr`, initial weights with unit standard deviation, so the
# logits at $\tau = 1$ start with unit variance), {glue:text}`target_n_seeds` seeds, $\tau$ in
# {glue:text}`target_taus` and $d_h$ in {glue:text}`target_head_dims`
# ({glue:text}`target_profile` profile); the realistic heads of the verdict are
# $d_h$ = {glue:text}`target_real_dims`. The same seed gives the same initial weights at every
# temperature and in both variants, so comparisons across $\tau$ are paired; each seed has its
# own targets, so the seeds are the independent units of every interval. A temperature chosen
# as the best is chosen on seeds {glue:text}`target_select_seeds` and its effect is measured
# on seeds {glue:text}`target_estimate_seeds`.

# %%
targets_info = []
for kind in synthetic.TARGETS:
    for s in SEEDS:
        Tm = synthetic.make_target(kind, N, seed=s)
        targets_info.append(dict(target=kind, seed=s, rank_rtol_1e_2=int(numerical_rank(Tm, rtol=1e-2)),
                                 mean_max_prob=float(Tm.amax(-1).mean())))
targets_info = pd.DataFrame(targets_info)
display(targets_info.groupby("target")[["rank_rtol_1e_2", "mean_max_prob"]].mean().round(3))
for kind, d in targets_info.groupby("target"):
    book.glue(f"target_rank_{kind}", float(d["rank_rtol_1e_2"].mean()))

t0 = time.perf_counter()
final, curves = synthetic.run_grid(N, TAUS, HEAD_DIMS, synthetic.VARIANTS, SEEDS, synthetic.TARGETS, steps=STEPS, lr=LR,
                                   init_std=INIT_STD, log_every=DEFAULTS["log_every"], device=DEVICE)
grid_seconds = time.perf_counter() - t0
book.glue("target_n_runs", int(len(final)))
book.glue("target_grid_seconds", float(grid_seconds))
display(Markdown(f"{len(final)} runs trained in {grid_seconds:.1f} s ({profile} profile)."))


def caption(extra: str, d: pd.DataFrame, cells: bool = False) -> str:
    what = "; cells show seed means" if cells else ""
    return f"{extra} n = {N}, {STEPS} Adam steps ({profile} profile, {len(d)} runs, {d.seed.nunique()} seeds{what})."


# %% [markdown]
# The targets have mean numerical rank (rtol $10^{-2}$) {glue:text}`target_rank_permutation:.1f`
# (permutation), {glue:text}`target_rank_sharp:.1f` (sharp) and
# {glue:text}`target_rank_lowrank:.1f` (low-rank control), out of $n$ = {glue:text}`target_n`.
# The whole grid, {glue:text}`target_n_runs` runs, trained in
# {glue:text}`target_grid_seconds:.0f` seconds.
#
# ## The grid: final fit and achieved rank
#
# The heat maps show the final KL (log colour scale) and the achieved numerical rank for every
# (temperature, head dimension) cell, per variant and target. The red outline marks the
# standard $\tau = 1$.

# %%
fig = tplots.toy_heatmaps(final, "kl", log=True, fmt=".2g", label="final KL (nats)")
book.show(fig, final, "target_kl_heatmap", caption("Final KL to the target over temperature ratio and head dimension;", final, cells=True))
fig = tplots.toy_heatmaps(final, "rank", fmt=".0f", label="achieved rank (rtol 1e-2), count")
book.show(fig, final, "target_rank_heatmap",
          caption("Achieved numerical rank (rtol 1e-2) of the trained attention matrix;", final, cells=True))

# %% [markdown]
# ## Where $\tau = 1$ falls short on the permutation target
#
# The permutation target is the sharpest test: every row must put its mass on a different
# column. The next figure shows the final KL against $\tau$ for each head dimension, with the
# two limits derived below drawn for the normalised variant.

# %%
perm = final[final.target == "permutation"]
tau_line = np.geomspace(min(TAUS), max(TAUS), 60)
floor_df = pd.concat([
    pd.DataFrame(dict(tau=tau_line, kl=theory.normalised_kl_floor(N, torch.tensor(tau_line)).numpy(),
                      curve="P5 floor log(1+(n-1)e^{-2/tau})")),
    pd.DataFrame(dict(tau=tau_line, kl=theory.simplex_kl(N, torch.tensor(tau_line)).numpy(),
                      curve="simplex keys (needs d_h >= n-1)")),
], ignore_index=True)
fig = tplots.toy_kl_vs_tau(perm, floor=floor_df)
book.show(fig, pd.concat([perm.assign(curve="run"), floor_df], ignore_index=True), "target_perm_kl",
          caption("Permutation target: final KL against tau per head dimension (mean and +-2 standard errors over seeds), plain (left) "
                  "and normalised (right) attention, with the P5 floor and the simplex value (KL below 1e-6 drawn at 1e-6);", perm))


def cell(variant, d, t, kind="permutation", col="kl"):
    sel = final[(final.target == kind) & (final.variant == variant) & (final.head_dim == d) & np.isclose(final.tau, t)]
    return sel.sort_values("seed")[col].to_numpy()


for v in synthetic.VARIANTS:
    for d in (1, D_MAX):
        book.glue(f"target_kl_{v}_d{'max' if d == D_MAX else d}_tau1", float(cell(v, d, 1.0).mean()))
    book.glue(f"target_kl_{v}_d1_min", float(perm[(perm.variant == v) & (perm.head_dim == 1)].groupby("tau").kl.mean().min()))
book.glue("target_dmax", D_MAX);

# %% [markdown]
# ### P4. A head of dimension 1 cannot represent a permutation
#
# **Statement.** With $d_h = 1$, for $n \ge 3$, no choice of weights and no temperature makes
# the argmax of every row of $A$ match a permutation: at most 2 of the $n$ rows can be right,
# so the argmax accuracy is at most $2/n$. Consequently the mean KL is at least
# $(1 - 2/n)\log 2$ nats: a row whose argmax misses the target column puts at most half its
# mass there.
#
# **Proof.** With $d_h = 1$, row $i$ of the logits is $q_i k_j / c$ for scalars $q_i$ and
# $k_j$. If $q_i > 0$ it is maximised at the largest key, if $q_i < 0$ at the smallest
# (normalised: $q_i, k_j \in \{\pm 1\}$, the same conclusion; there the gradient even
# vanishes, so those runs stay at their initialisation). So at most two columns are ever
# an argmax, while a permutation needs $n$ distinct ones. The temperature only rescales the
# row and cannot change its argmax. For the KL: if the target column $\pi(i)$ is not the
# argmax, another entry is at least as large, so $A_{i\pi(i)} \le 1/2$ and the row's KL
# $-\log A_{i\pi(i)} \ge \log 2$.
#
# With $d_h = 2$ any argmax pattern is possible (keys on a circle, each query pointing at its
# key), but the margin between neighbouring keys shrinks like $1 - \cos(2\pi/n)$, so a near
# one-hot fit needs large logits.

# %%
d1 = perm[perm.head_dim == 1]
p4_kl_floor = (1 - 2 / N) * math.log(2)
p4_viol = int((d1.accuracy > theory.permutation_accuracy_bound(1, N) + 1e-12).sum()) + int((d1.kl < p4_kl_floor - 1e-6).sum())
record_check("p4", 2 * len(d1), p4_viol)
book.glue("target_p4_kl_floor", p4_kl_floor)
book.glue("target_p4_bound", 2 / N)
book.glue("target_p4_at_bound", int(np.isclose(d1.accuracy, 2 / N).sum()))
book.glue("target_p4_runs", int(len(d1)))
if 2 in HEAD_DIMS:
    book.glue("target_p4_acc_d2", float(perm[(perm.head_dim == 2) & (perm.variant == "plain")].accuracy.mean()))
else:
    book.glue("target_p4_acc_d2", float("nan"))

# %% [markdown]
# All {glue:text}`target_p4_runs` runs with $d_h = 1$ on the permutation target (every
# temperature, both variants) reach an argmax accuracy of at most $2/n$ =
# {glue:text}`target_p4_bound:.3f`, and {glue:text}`target_p4_at_bound` of them reach it
# exactly; with $d_h = 2$ the plain variant's mean accuracy is
# {glue:text}`target_p4_acc_d2:.2f`. In the plain variant the final KL at $d_h = 1$ is
# {glue:text}`target_kl_plain_d1_tau1:.2f` nats at $\tau = 1$ and at best
# {glue:text}`target_kl_plain_d1_min:.2f` over all temperatures, above the floor
# {glue:text}`target_p4_kl_floor:.2f`: for a head of dimension 1 the shortfall is a limit of
# the head dimension, which no temperature removes.
#
# **Check P4:** {glue:text}`target_p4_tested` comparisons (accuracy and KL floor of every
# $d_h = 1$ run), {glue:text}`target_p4_violations` violations.
#
# ### P5. With normalised queries and keys, the temperature is a ceiling
#
# **Statement.** If $|S_{ij}| \le 1/\tau$, the mean KL to a permutation target is at least
# $\log\big(1 + (n-1)e^{-2/\tau}\big)$ nats, for every head dimension and every weight. Keys on
# a regular simplex ($d_h \ge n - 1$) with $q_i = k_{\pi(i)}$ reach
# $\log\big(1 + (n-1)e^{-n/((n-1)\tau)}\big)$.
#
# **Proof.** For a one-hot target row, the KL is
# $-\log A_{i\pi(i)} = \log\big(1 + \sum_{j \ne \pi(i)} e^{S_{ij} - S_{i\pi(i)}}\big)$ and every
# exponent is at least $-2/\tau$. On the simplex, distinct keys have cosine $-1/(n-1)$, so every
# gap is $n/((n-1)\tau)$.

# %%
pn = perm[perm.variant == "normalised"]
p5_viol = int((pn.kl < pn.kl_floor - 1e-6).sum())
record_check("p5", len(pn), p5_viol)
book.glue("target_p5_floor_tau1", theory.normalised_kl_floor(N, 1.0))
book.glue("target_p5_simplex_tau1", theory.simplex_kl(N, 1.0))
best_small = pn[(pn.tau < 1) & (pn.head_dim == D_MAX)].groupby("tau").kl.mean()
book.glue("target_p5_best_tau", float(best_small.idxmin()) if len(best_small) else float("nan"))
book.glue("target_p5_best_kl", float(best_small.min()) if len(best_small) else float("nan"))
book.glue("target_p5_rank_tau1", float(cell("normalised", D_MAX, 1.0, col="rank").mean()));

# %% [markdown]
# At $\tau = 1$ the floor is {glue:text}`target_p5_floor_tau1:.2f` nats and the simplex value
# {glue:text}`target_p5_simplex_tau1:.2f`; the normalised runs with $d_h$ =
# {glue:text}`target_dmax` end at {glue:text}`target_kl_normalised_dmax_tau1:.2f`, while at
# $\tau$ = {glue:text}`target_p5_best_tau` they reach {glue:text}`target_p5_best_kl:.3f`. In
# this variant the floor forbids a good fit at $\tau = 1$ whatever the head dimension, and
# lowering $\tau$ lowers the floor. The limit is the cap $1/\tau$ on the logits, not the
# rank: the runs at $\tau = 1$ and $d_h$ = {glue:text}`target_dmax` have a mean rank of
# {glue:text}`target_p5_rank_tau1:.1f` out of {glue:text}`target_n`.
#
# **Check P5:** {glue:text}`target_p5_tested` runs, {glue:text}`target_p5_violations`
# violations.
#
# (target-p3)=
# ### P3. In plain attention, $\tau$ is not a capacity parameter
#
# **Statement.** The set of attention matrices reachable with some $W_Q, W_K$ is the same for
# every $\tau$ (rescale $W_Q W_K^\top$ by $\tau$). More: under Adam without weight decay and
# with $\epsilon_{\text{Adam}} \to 0$, training at $(\tau, \sigma, \eta)$ (temperature, initial
# weight scale, learning rate) follows *exactly* the trajectory of $A$ of training at
# $(1, \sigma/\sqrt\tau, \eta/\sqrt\tau)$.
#
# **Proof.** Put $W' = W/\sqrt\tau$ for both projections: the logits
# $XW_Q W_K^\top X^\top/(\tau\sqrt{d_h})$ become $XW'_Q W'^\top_K X^\top/\sqrt{d_h}$, and the
# initial scale becomes $\sigma/\sqrt\tau$. The gradient with respect to $W'$ is $\sqrt\tau$
# times the gradient with respect to $W$, and Adam's update $m/\sqrt{v}$ does not depend on a
# constant gradient scale, so a step of $\eta$ in $W$ is a step of $\eta/\sqrt\tau$ in $W'$.
# With normalised $q$ and $k$ this fails: rescaling the weights leaves the cosines unchanged.
#
# Measured: the toy in float64 with $\epsilon_{\text{Adam}} = 0$, $d_h$ = {glue:text}`target_p3_d`,
# {glue:text}`target_p3_steps` steps, on a
# sharp target, comparing each $\tau$ in {glue:text}`target_p3_taus` with its rescaled twin at
# $\tau = 1$ and with a control at $\tau = 1$ with the original scale and learning rate.

# %%
p3_rows, p3_viol = [], 0
for s in SEEDS:
    for tau_eq in P3_TAUS:
        r = synthetic.train_toy(synthetic.make_target("sharp", N, seed=s), P3_D, [tau_eq, 1.0, 1.0], "plain",
                                seeds=[s] * 3, steps=P3_STEPS, lr=[LR, LR / math.sqrt(tau_eq), LR],
                                init_std=[INIT_STD, INIT_STD / math.sqrt(tau_eq), INIT_STD], adam_eps=0.0,
                                dtype=torch.float64)
        same = float((r.attention[0] - r.attention[1]).abs().max())
        control = float((r.attention[0] - r.attention[2]).abs().max())
        p3_viol += int(same > 1e-9)
        p3_rows.append(dict(seed=s, tau=tau_eq, max_diff_equivalent=same, max_diff_control=control))
p3 = pd.DataFrame(p3_rows)
display(p3)
record_check("p3", len(p3), p3_viol)
book.glue("target_p3_same_max", float(p3.max_diff_equivalent.max()))
book.glue("target_p3_control_min", float(p3.max_diff_control.min()));

# %% [markdown]
# The largest entrywise difference between the attention matrices of the twin runs is
# {glue:text}`target_p3_same_max:.1e` (rounding), against at least
# {glue:text}`target_p3_control_min:.2f` for the controls. So in the plain variant every
# effect of $\tau$ on the fit is an effect of the initial logit scale and of the effective
# learning rate, not of what the layer can represent.
#
# **Check P3:** {glue:text}`target_p3_tested` twin pairs, {glue:text}`target_p3_violations`
# violations (difference above $10^{-9}$).
#
# ## Training curves: what the temperature does in plain attention
#
# Curves for a few cells of the permutation target (mean and $\pm 2$ standard errors over
# seeds).

# %%
d_mid = 4 if 4 in HEAD_DIMS else HEAD_DIMS[min(2, len(HEAD_DIMS) - 1)]
cells = [("plain", min(D_SMALL[-1], 2) if 2 in HEAD_DIMS else D_SMALL[-1]), ("plain", d_mid), ("normalised", D_MAX)]
cperm = curves[curves.target == "permutation"]
fig = tplots.toy_curves(cperm, cells)
in_cells = cperm.set_index(["variant", "head_dim"]).index.isin(cells)
book.show(fig, cperm[in_cells], "target_curves",
          caption("Permutation target: KL against Adam step for selected (variant, head dimension) cells, coloured by tau;",
                  perm[perm.set_index(["variant", "head_dim"]).index.isin(cells)]))

# steps to reach KL < 0.1 nats, plain variant, heads that can fit (d_h >= d_mid), per tau
THRESH = 0.1
reach = (cperm[(cperm.variant == "plain") & (cperm.head_dim >= d_mid) & (cperm.kl < THRESH)]
         .groupby(["head_dim", "tau", "seed"]).step.min())
runs_fit = perm[(perm.variant == "plain") & (perm.head_dim >= d_mid)].set_index(["head_dim", "tau", "seed"])
reach = reach.reindex(runs_fit.index)  # NaN: never reached within the budget
reach_tau = reach.groupby("tau").median()
book.glue("target_thresh", THRESH)
book.glue("target_dmid", d_mid)
book.glue("target_reach_tau1", float(reach_tau.get(1.0, np.nan)))
fastest = reach_tau.idxmin() if reach_tau.notna().any() else float("nan")
book.glue("target_reach_fastest_tau", float(fastest))
book.glue("target_reach_fastest", float(reach_tau.min()))
book.glue("target_reach_never", int(reach.isna().sum()))
book.glue("target_reach_total", int(len(reach)))
book.glue("target_reach_list", ", ".join(f"tau {t:g}: {'not reached' if np.isnan(v) else f'{v:.0f}'}" for t, v in reach_tau.items()))
plain_fit = perm[(perm.variant == "plain") & (perm.head_dim >= d_mid)]
kl_by_tau = plain_fit.groupby("tau").kl.mean()
book.glue("target_plain_fit_best_tau", float(kl_by_tau.idxmin()))
book.glue("target_plain_fit_kl_tau1", float(kl_by_tau.get(1.0, np.nan)))
book.glue("target_plain_fit_kl_min_tau", float(kl_by_tau.loc[min(TAUS)]))
book.glue("target_tau_min", float(min(TAUS)));

# %% [markdown]
# In the plain variant with $d_h \ge$ {glue:text}`target_dmid`, the median number of steps to
# bring the KL below {glue:text}`target_thresh` nats is {glue:text}`target_reach_list`
# ({glue:text}`target_reach_never` of {glue:text}`target_reach_total` runs never get there
# within the budget). The final KL averaged over these heads is lowest at
# $\tau$ = {glue:text}`target_plain_fit_best_tau`; it is
# {glue:text}`target_plain_fit_kl_tau1:.2g` nats at $\tau = 1$ and
# {glue:text}`target_plain_fit_kl_min_tau:.2g` at $\tau$ = {glue:text}`target_tau_min`. By P3,
# any difference here is an optimisation effect: a smaller $\tau$ is a larger initial logit
# scale and a larger effective learning rate.
#
# ## Is rank a proxy for fit?
#
# Each point is one run: its achieved numerical rank against its final KL.

# %%
fig = tplots.rank_vs_kl(final, n=N)
book.show(fig, final, "target_rank_vs_kl", caption("Achieved rank (rtol 1e-2) against final KL, one point per run;", final))
full_bad = final[(final["rank"] >= N) & (final.kl > KL_BAD)]
rho_all = stats.spearman(perm["rank"], perm.kl, clusters=perm.seed)
book.glue("target_full_rank_bad", int(len(full_bad)))
book.glue("target_full_rank_bad_max", float(full_bad.kl.max()) if len(full_bad) else float("nan"))
book.glue("target_rho_perm", rho_all.text(2))
low = final[final.target == "lowrank"]
low_over = low[(low.kl < KL_GOOD) & (low["rank"] > low.target_rank)]
book.glue("target_low_over", int(len(low_over)))
book.glue("target_low_runs", int(len(low)))
low_norm_tau1 = low[(low.variant == "normalised") & np.isclose(low.tau, 1.0) & (low.head_dim == D_MAX)].kl.mean()
book.glue("target_low_norm_tau1", float(low_norm_tau1))
book.glue("target_low_plain_tau1", float(low[(low.variant == "plain") & np.isclose(low.tau, 1.0) & (low.head_dim == D_MAX)].kl.mean()));

# %% [markdown]
# {glue:text}`target_full_rank_bad` runs reach full rank ($n$) and still end with a KL above
# {glue:text}`target_kl_bad:g` nat (up to {glue:text}`target_full_rank_bad_max:.2f`). On the permutation target the
# Spearman correlation between achieved rank and final KL over all runs is
# {glue:text}`target_rho_perm` (95% interval from a bootstrap over seeds, the
# independent units): fitting a permutation needs full rank, so a low rank does
# signal a bad fit, but the converse fails. On the low-rank control,
# {glue:text}`target_low_over` of {glue:text}`target_low_runs` runs fit well (KL below {glue:text}`target_kl_good:g`)
# with a rank *above* the target's, and the normalised variant at $\tau = 1$ ends at a KL of
# {glue:text}`target_low_norm_tau1:.2f` at $d_h$ = {glue:text}`target_dmax`, against
# {glue:text}`target_low_plain_tau1:.3f` for plain attention: the logit cap limits the fit of
# a target of rank {glue:text}`target_lowrank_rank` as well. A high rank is necessary to fit a high-rank target exactly, but
# the achieved rank says little about how well a target is fitted.
#
# ## Verdict
#
# **Rule, fixed before looking.** The claim is tested for plain dot-product attention (the
# attention of BERT and GPT-2) on the permutation target, and has two parts.
#
# 1. *Shortfall of the standard setting.* At $\tau = 1$, heads of a realistic size
#    ($d_h$ = {glue:text}`target_real_dims`: at least {glue:text}`target_real_min` wide, as in
#    every common transformer, and narrower than the sequence and than the largest head) end
#    with a final KL more than {glue:text}`target_material` nats above the largest head
#    ($d_h$ = {glue:text}`target_dmax`). Statistic: per seed, the KL averaged over the
#    realistic heads minus the KL of the largest head (paired: one target and one
#    initialisation per seed); mean with a Student-t 95% interval over seeds
#    (`attnrank.stats.mean_ci`).
# 2. *Rescue by temperature.* The best $\tau < 1$ for the realistic heads is chosen on the
#    selection seeds ({glue:text}`target_select_seeds`) only; its gain, KL at $\tau = 1$ minus
#    KL at the chosen $\tau$, is then estimated on the other seeds
#    ({glue:text}`target_estimate_seeds`), which the choice never saw. It must exceed
#    {glue:text}`target_material` nats.
#
# Each part is *supported* if its whole interval lies above {glue:text}`target_material`
# nats, *not supported* if the whole interval lies below, and *inconclusive at this scale*
# otherwise (`attnrank.verdicts.judge`, which also gives the seeds per arm needed to resolve
# an effect of {glue:text}`target_material` nats at the observed seed spread). The claim is
# supported if both parts are, not supported if either is not
# (`attnrank.verdicts.combine`).
#
# **What changed from the previous version of this chapter, and why.** The shortfall used to
# be measured for the heads $d_h \in \{1, 2\}$. By P4 a head of dimension 1 cannot represent
# a permutation at any temperature, so that comparison was close to guaranteed and said
# nothing about heads anyone uses; it is now made for realistic heads, and $d_h = 1$ is kept
# only for the P4 check. The best temperature used to be chosen on the same seeds on which
# its gain was then measured, which biases the gain upward (the winner's curse); the choice
# is now held out. The verdict used to rest on the shortfall alone; the study reads the
# shortfall as evidence that temperature is the remedy, so the remedy is now tested too.

# %%
MATERIAL = 0.1  # nats: a change smaller than this is not material
book.glue("target_material", MATERIAL)
pplain = perm[perm.variant == "plain"]


def per_seed(variant, dims, t, seeds, kind="permutation"):
    """KL of one (variant, tau) setting, averaged over the head dims ``dims``, per seed in ``seeds``."""
    sel = final[(final.target == kind) & (final.variant == variant) & final.head_dim.isin(dims) & np.isclose(final.tau, t)
                & final.seed.isin(seeds)]
    return sel.groupby("seed").kl.mean().sort_index()


def nats(e: stats.Estimate) -> str:
    """``value [low, high] nats (n = N seeds)``."""
    return f"{e.text(2, n=False)} nats (n = {e.n} seeds)"


def judged(diff: pd.Series) -> verdicts.Verdict:
    """The pre-registered rule on per-seed differences (nats)."""
    spread = float(diff.std(ddof=1)) if len(diff) > 1 else float("nan")
    return verdicts.judge(stats.mean_ci(diff), MATERIAL, "above", effect=MATERIAL, spread=spread)


small_taus = [t for t in TAUS if t < 1]
# (1) shortfall at tau = 1 of the realistic heads against the largest head, every seed
short = per_seed("plain", D_REAL, 1.0, SEEDS) - per_seed("plain", [D_MAX], 1.0, SEEDS)
v_short = judged(short)
# (2) the best tau < 1 for the realistic heads, chosen on the selection seeds, its gain on the estimation seeds
real_rows = pplain[pplain.head_dim.isin(D_REAL)].groupby(["seed", "tau"], as_index=False).kl.mean()
best_t_plain = float(synthetic.select_best(real_rows, "tau", "kl", SELECT_SEEDS, candidates=small_taus))
rescue = per_seed("plain", D_REAL, 1.0, ESTIMATE_SEEDS) - per_seed("plain", D_REAL, best_t_plain, ESTIMATE_SEEDS)
v_rescue = judged(rescue)
status = verdicts.combine([v_short.status, v_rescue.status])

# readings beside the verdict (held out in the same way)
per_dim = []
for d in D_REAL:
    bt = float(synthetic.select_best(pplain[pplain.head_dim == d], "tau", "kl", SELECT_SEEDS, candidates=small_taus))
    gain = per_seed("plain", [d], 1.0, ESTIMATE_SEEDS) - per_seed("plain", [d], bt, ESTIMATE_SEEDS)
    gap = per_seed("plain", [d], 1.0, SEEDS) - per_seed("plain", [D_MAX], 1.0, SEEDS)
    per_dim.append(f"at d_h = {d} the shortfall is {nats(stats.mean_ci(gap))} and tau = {bt:g} lowers the KL by "
                   f"{nats(stats.mean_ci(gain))}")
d1_gap = per_seed("plain", [min(HEAD_DIMS)], 1.0, SEEDS) - per_seed("plain", [D_MAX], 1.0, SEEDS)
reading_plain = (f"In plain dot-product attention (the attention of BERT and GPT-2), realistic heads at tau = 1 end "
                 f"{nats(v_short.estimate)} of KL above the largest head (d_h = {D_MAX}), and the best lower "
                 f"temperature, chosen on seeds {SELECT_SEEDS} ({best_t_plain:g}), lowers their KL by "
                 f"{nats(v_rescue.estimate)} on the held-out seeds {ESTIMATE_SEEDS} ({'; '.join(per_dim)}). "
                 f"A head far narrower than any in use, d_h = {min(HEAD_DIMS)}, ends {nats(stats.mean_ci(d1_gap))} above "
                 f"the largest head at tau = 1; for d_h = 1 that is a limit of the head dimension that no temperature "
                 f"removes (P4). By P3 tau acts in plain attention only through the initial logit scale and the "
                 f"effective learning rate.")
pnorm = perm[(perm.variant == "normalised") & (perm.head_dim == D_MAX)]
best_t_norm = float(synthetic.select_best(pnorm, "tau", "kl", SELECT_SEEDS, candidates=small_taus))
rescue_norm = per_seed("normalised", [D_MAX], 1.0, ESTIMATE_SEEDS) - per_seed("normalised", [D_MAX], best_t_norm, ESTIMATE_SEEDS)
e_norm = stats.mean_ci(rescue_norm)
if verdicts.classify(e_norm, MATERIAL, "above") == verdicts.SUPPORTED:
    reading_norm = (f"With normalised q and k the study's reading holds: the logits are capped at 1/tau, tau = 1 cannot fit the "
                    f"permutation at any head dimension (P5), and tau = {best_t_norm:g} (chosen on the selection seeds) at "
                    f"d_h = {D_MAX} cuts the KL by {nats(e_norm)} on the held-out seeds.")
else:
    reading_norm = (f"With normalised q and k, tau = {best_t_norm:g} (chosen on the selection seeds) at d_h = {D_MAX} changes "
                    f"the KL by {nats(e_norm)} on the held-out seeds, not a material gain at this scale.")
if len(full_bad):
    reading_rank = (f"A full rank is necessary for a permutation but says little about the fit: {len(full_bad)} runs reach "
                    f"full rank and still end above {KL_BAD:g} nat of KL (across permutation runs, Spearman's rho between "
                    f"achieved rank and final KL is {rho_all.text(2)} seeds).")
else:
    reading_rank = (f"No run combines full rank with a KL above {KL_BAD:g} nat here; across permutation runs Spearman's rho "
                    f"between achieved rank and final KL is {rho_all.text(2)} seeds.")
n_checks = sum(t for t, _ in checks.values())
n_viol = sum(v for _, v in checks.values())


def part(name: str, v: verdicts.Verdict) -> str:
    return f"{name}: {v.text(2)}"


summary = (f"On the toy ({N} tokens, {STEPS} Adam steps, {len(SEEDS)} seeds, each its own target, {profile} profile), plain "
           f"attention with realistic heads (d_h = {', '.join(map(str, D_REAL))}) on a permutation target; "
           f"{part('shortfall at tau = 1 against d_h = ' + str(D_MAX) + ' (nats, seeds)', v_short)}; "
           f"{part(f'gain of tau = {best_t_plain:g}, chosen on seeds {SELECT_SEEDS}, on held-out seeds {ESTIMATE_SEEDS} (nats)', v_rescue)}. "
           f"{n_checks - n_viol} of {n_checks} proposition checks hold.")
book.glue("target_reading_plain", reading_plain)
book.glue("target_reading_norm", reading_norm)
book.glue("target_reading_rank", reading_rank)
book.verdict("target", status, summary)
book.glue("target_short_mean", v_short.estimate.value)
book.glue("target_rescue_plain_mean", v_rescue.estimate.value)
book.glue("target_rescue_norm_mean", e_norm.value)
book.glue("target_seconds", float(time.perf_counter() - t_chapter));

# %% [markdown]
# The verdict is printed above. Where the study's reading holds and where it does not, in short:
#
# * {glue:text}`target_reading_norm`
# * {glue:text}`target_reading_plain`
# * {glue:text}`target_reading_rank`
#
# The chapter ran in {glue:text}`target_seconds:.0f` seconds ({glue:text}`target_profile`
# profile).
