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
# # Head dimension: a second lever on the rank, and the weaker one?
#
# **Claims (iii) and (iv) of the study, in our words.** A larger head dimension also
# raises the rank of the attention matrices, but only up to a ceiling: the rank saturates
# as $d_\mathrm{head}$ grows. Of the two levers, temperature and head dimension,
# temperature has the larger effect {cite}`min2023efficiency`. The low-rank bottleneck of
# small heads is a known argument for larger heads {cite}`bhojanapalli2020lowrank`.
#
# We vary the head dimension at a *fixed* model width (`hidden_size`): doubling
# $d_\mathrm{head}$ halves the number of heads, so the parameter count stays the same. The
# grid is run at the standard temperature ratio $\tau = 1$ and at the sweep's smallest
# $\tau$ (temperature $T = \tau\sqrt{d_\mathrm{head}}$, as in the previous chapter). Against
# the measurements we draw two predictions of the theory chapter, both computed here:
#
# * **the staircase (P1).** A head's logit matrix $S = QK^\top/T$ has rank at most
#   $d_\mathrm{head}$; its elementwise $m$-th power has rank at most
#   $\binom{d_\mathrm{head}+m-1}{m}$, so the first $m$ terms of the Taylor expansion of
#   $\exp$ span at most $r_m = \binom{d_\mathrm{head}+m}{m}$ directions: $r_1 = d_\mathrm{head}+1$,
#   $r_2 = \binom{d_\mathrm{head}+2}{2}$. With small logits (half-range $M$) the singular values
#   beyond $r_m$ are at most $e^{2M}M^{m+1}/(m+1)!$, so a numerical rank at tolerance
#   $\varepsilon$ is at most the first $r_m$ whose remainder falls below $\varepsilon$. At
#   initialisation this is the regime that applies: the *bound* grows with $d_\mathrm{head}$
#   step by step, but whether the measured rank follows it depends on whether the logits are
#   large enough for the steps to clear the tolerance (below we state what the data show).
# * **the saturation (P1').** With independent random $Q, K$, the logits $S$ tend to a
#   matrix of i.i.d. Gaussians as $d_\mathrm{head}\to\infty$ (central limit theorem at fixed
#   logit scale), so every rank measure tends to its value for the softmax of i.i.d.
#   Gaussian logits *with the same logit scale*. We compute that limit by Monte Carlo; it
#   is a limit, approached from either side, not a ceiling.
#
# **The rule, fixed before looking.** "Temperature is the stronger lever on the initial rank"
# is judged, per architecture, on the range a user can actually set: how much the mean
# initial rank (primary measure, the effective rank; one value per run, the run is the
# independent unit) moves across the whole temperature grid at the standard head
# dimension, minus how much it moves across the whole head-dimension grid at the standard
# $\tau = 1$, both as magnitudes (the range, maximum minus minimum, of the mean over seeds
# at each grid value), with a 95% interval from a stratified bootstrap over runs
# ({glue:text}`headdim_n_resamples` resamples). *Supported* if the interval lies above zero for both BERT and GPT-2; *not
# supported* if it lies below zero for either; otherwise *inconclusive at this scale*, with
# the seeds per setting that would resolve a difference of one unit of effective rank at the
# observed seed spread. The same rule is applied with every rank measure.
#
# **What changed from the previous version of this chapter, and why.** The verdict compared
# signed slopes "per factor of two" (per halving of $\tau$ against per doubling of
# $d_\mathrm{head}$). That normalisation is arbitrary (the temperature grid spans about ten
# halvings, the head-dimension grid three doublings) and a signed slope scores a lever that
# moves the rank *down* as weaker than none. The levers are now compared over the ranges a
# user can set, in magnitude. The primary measure is now the effective rank (a numerical rank
# at relative tolerance $10^{-2}$ is saturated by GPT-2's causal mask), and the uniform
# (causal) baseline is drawn beside the runs.

# %% tags=["parameters"]
profile = "auto"
seeds = None
taus = None
head_dims = None
mc_samples = 256
dataset = None  # training corpus: shakespeare or hf:NAME[:CONFIG]; None: ATTNRANK_DATASET or shakespeare

# %%
import warnings

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a kernel without ipywidgets
import math
import time

import numpy as np
import pandas as pd
import torch
from IPython.display import Markdown, display

from attnrank import book, experiments, models, probe, rank, rules, stats, store, theory, train
from attnrank.errors import ConfigError
from attnrank.plots import sweeps
from attnrank.profiles import resolve_config

book.check_parameters(globals(), ("profile", "seeds", "taus", "head_dims", "mc_samples", "dataset"))
mc_samples = 256 if mc_samples is None else mc_samples
profile = book.setup(profile)
t_chapter = time.perf_counter()
PRIMARY = experiments.PRIMARY_MEASURE
MEASURE_NAMES = list(rank.MEASURES)
NUMERICAL = [m for m in MEASURE_NAMES if rank.MEASURES[m].kind == "numerical"]
RANK_MEASURES = [m for m in MEASURE_NAMES if m != "attention_entropy"]  # the rule is about rank
fmt_tau = rules.fmt_setting  # grid values for prose: 0.001, 1, 32

# %% [markdown]
# ## The runs
#
# The runs are the shared sweep of all trained-model chapters (`experiments.main_sweep`):
# its head-dimension grid at $\tau = 1$ and at the smallest $\tau$, and its temperature grid
# at the standard head dimension (used below to put the two levers on one scale).

# %%
grid = experiments.sweep_defaults(profile, taus=taus, head_dims=head_dims, seeds=seeds)
t0 = time.perf_counter()
runs = store.sweep(experiments.main_sweep(profile, taus=taus, head_dims=head_dims, seeds=seeds, dataset=dataset), progress=False)
sweep_seconds = time.perf_counter() - t0
TAU_MIN = float(min(grid["taus"]))
HD_TAUS = sorted({1.0, TAU_MIN}, reverse=True)
head_dim0 = resolve_config("bert", profile).head_dim
hidden = resolve_config("bert", profile).hidden_size

hd_runs = runs[runs.head_dim.isin(grid["head_dims"]) & runs.tau.isin(HD_TAUS)].sort_values(["arch", "tau", "head_dim", "seed"])
t_runs = runs[(runs.head_dim == head_dim0) & runs.tau.isin(grid["taus"])]
failed = runs[runs.status != "complete"]
n_seeds = runs.seed.nunique()
book.glue("headdim_n_runs", int(len(hd_runs)))
book.glue("headdim_n_seeds", int(n_seeds))
book.glue("headdim_hidden", int(hidden))
book.glue("headdim_tau_min", fmt_tau(TAU_MIN))
book.glue("headdim_n_failed", int(len(failed)))
display(Markdown(f"{len(hd_runs)} head-dimension runs ({profile} profile): head dimensions "
                 f"{', '.join(map(str, grid['head_dims']))} at hidden size {hidden} (heads: "
                 f"{', '.join(str(hidden // h) for h in grid['head_dims'])}), tau in {{{', '.join(map(fmt_tau, HD_TAUS))}}}, {n_seeds} seeds, both archs."))
display(failed[["arch", "tau", "head_dim", "seed", "status", "failure_step", "failure_reason"]] if len(failed)
        else Markdown("No run of the sweep diverged."))


def caption_runs(d: pd.DataFrame) -> str:
    return f"{profile} profile, {len(d)} runs, {d.seed.nunique()} seeds per setting"


# %% [markdown]
# {glue:text}`headdim_n_runs` runs at hidden size {glue:text}`headdim_hidden`,
# {glue:text}`headdim_n_seeds` seeds per setting; {glue:text}`headdim_n_failed` runs of the
# whole sweep diverged (listed above, drawn as red crosses, never dropped).
#
# ## The theory, computed on the freshly initialised models
#
# Both predictions need the logits at initialisation. We rebuild each model from its seed
# (exactly the weights its training started from) and read the logits
# $S = QK^\top/(\tau\sqrt{d_\mathrm{head}})$ of every head on the runs' probe sequences
# through the attention function's hook point (`attnrank.probe.attention_logits`). From $S$ we record, per head and sequence, the logit scale
# (within-row standard deviation), the half-range $M$ of P1 and the P1 bound for the two
# relative tolerances; the softmax of the hooked logits reproduces the model's own
# attention probabilities (checked below).

# %%
attention_logits = probe.attention_logits  # S = Q K^T / (tau sqrt(d_head)), [layers, batch, heads, n, n]
taylor_bound = theory.taylor_rank_bound  # P1: min r_m with e^{2M} M^{m+1}/(m+1)! <= eps, capped at n


def causal_mask(n: int) -> torch.Tensor:
    return torch.ones(n, n, dtype=torch.bool).tril()


def init_stats(arch: str, head_dim: int, t: float, seed: int = 0) -> pd.DataFrame:
    """Per (layer, sequence, head) statistics of the logits of the initialised model, and its ranks."""
    cfg = resolve_config(arch, profile, tau=t, head_dim=head_dim, seed=seed)
    _, tokenizer, _, probe_ids, _ = train.prepare_data(cfg)
    model = models.build_model(arch, hidden_size=cfg.hidden_size, num_layers=cfg.num_layers, num_heads=cfg.num_heads,
                               tau=t, max_len=cfg.max_len, vocab_size=len(tokenizer), dropout=cfg.dropout, seed=seed,
                               pad_token_id=tokenizer.pad_token_id)
    A_model = probe.attention_probabilities(model, probe_ids)
    n = probe_ids.shape[-1]
    vis = causal_mask(n) if arch == "gpt2" else torch.ones(n, n, dtype=torch.bool)
    cnt = vis.sum(-1).double()
    frames, start, worst = [], 0, 0.0
    for S in [attention_logits(model, probe_ids)]:
        S = S.double()
        A = torch.softmax(S.masked_fill(~vis, -torch.inf), -1)
        worst = max(worst, float((A - A_model[:, start:start + S.shape[1]].double()).abs().max()))
        Sv = S.masked_fill(~vis, 0.0)
        mean = Sv.sum(-1) / cnt
        sd = (((Sv - mean[..., None]).masked_fill(~vis, 0.0) ** 2).sum(-1) / (cnt - 1).clamp_min(1)).sqrt()[..., cnt >= 2].mean(-1)
        half = ((S.masked_fill(~vis, -torch.inf).amax(-1) - S.masked_fill(~vis, torch.inf).amin(-1)) / 2).amax(-1)
        values = rank.rank_measures(A, measures=("rank_rtol_1e-2", "rank_rtol_1e-4"))
        L, B, H = S.shape[:3]
        idx = np.indices((L, B, H)).reshape(3, -1)
        frames.append(pd.DataFrame({"layer": idx[0], "seq": idx[1] + start, "head": idx[2], "logit_sd": sd.reshape(-1).numpy(),
                                    "M": half.reshape(-1).numpy(),
                                    **{m: v.reshape(-1).numpy() for m, v in values.items()}}))
        start += B
    assert worst < 1e-4, f"hooked logits do not reproduce the model's attention ({worst})"
    df = pd.concat(frames, ignore_index=True)
    for eps, col in ((1e-2, "bound_rtol_1e-2"), (1e-4, "bound_rtol_1e-4")):
        df[col] = [taylor_bound(head_dim, M, eps, n) for M in df.M]
    return df.assign(arch=arch, head_dim=head_dim, tau=t, n=n)


t0 = time.perf_counter()
init = pd.concat([init_stats(a, h, t) for a in ("bert", "gpt2") for h in grid["head_dims"] for t in HD_TAUS], ignore_index=True)
theory_seconds = time.perf_counter() - t0
scale = init.groupby(["arch", "tau", "head_dim"]).agg(logit_sd=("logit_sd", "mean"), M_median=("M", "median")).reset_index()
display(Markdown("Logit scale at initialisation (mean within-row sd of the logits; median half-range M), seed 0:"))
display(scale.assign(tau=scale.tau.map(fmt_tau)).pivot(index=["arch", "tau"], columns="head_dim", values="logit_sd").round(4))
for a in ("bert", "gpt2"):
    for t, name in ((1.0, "base"), (TAU_MIN, "min")):
        book.glue(f"headdim_logit_sd_{name}_{a}", float(scale[(scale.arch == a) & np.isclose(scale.tau, t)].logit_sd.mean()))
_ = book.glue("headdim_n", int(init.n.iloc[0]))

# %% [markdown]
# The logit scale hardly depends on the head dimension (the $1/\sqrt{d_\mathrm{head}}$ in $T$
# is there for that): about {glue:text}`headdim_logit_sd_base_bert:.3g` for BERT and
# {glue:text}`headdim_logit_sd_base_gpt2:.3g` for GPT-2 at $\tau = 1$, and $1/\tau$ times more
# at $\tau =$ {glue:text}`headdim_tau_min` ({glue:text}`headdim_logit_sd_min_bert:.3g` for
# BERT). The i.i.d. limit of P1' is therefore one number per architecture and temperature:
# the mean of each measure over `mc_samples` random $n\times n$ matrices
# $\operatorname{softmax}(\sigma G)$, $G_{ij}\sim\mathcal N(0,1)$, with $\sigma$ the measured
# scale and the causal mask for GPT-2.

# %%
def iid_limit(n: int, sigma: float, causal: bool, samples: int, seed: int = 0) -> dict:
    """Mean of every measure for softmax(sigma * G) with i.i.d. standard Gaussian G, n x n, in float64."""
    g = torch.Generator().manual_seed(seed)
    out = {m: [] for m in MEASURE_NAMES}
    for s in range(0, samples, 64):
        G = torch.randn(min(64, samples - s), n, n, generator=g, dtype=torch.float64) * sigma
        if causal:
            G = G.masked_fill(~causal_mask(n), -torch.inf)
        for m, v in rank.rank_measures(torch.softmax(G, -1)).items():
            out[m].append(v)
    return {m: torch.cat(v) for m, v in out.items()}


n_tok = int(init.n.iloc[0])
limit_rows = []
for (a, t), grp in scale.groupby(["arch", "tau"]):
    sigma = float(grp.logit_sd.mean())
    for m, v in iid_limit(n_tok, sigma, a == "gpt2", mc_samples).items():
        limit_rows.append({"arch": a, "tau": t, "sigma": sigma, "measure": m, "value": float(v.mean()),
                           "mc_sem": float(v.std() / math.sqrt(len(v)))})
limits = pd.DataFrame(limit_rows)
display(limits.assign(tau=limits.tau.map(fmt_tau)).pivot(index="measure", columns=["arch", "tau"], values="value").round(2))

# the content-free baseline: uniform rows (BERT) and uniform rows over the visible keys (GPT-2)
uniform = {a: {m: float(v) for m, v in rank.rank_measures(
    theory.softmax_attention(torch.zeros(n_tok, n_tok, dtype=torch.float64), causal=a == "gpt2")).items()}
    for a in ("bert", "gpt2")}
for a in ("bert", "gpt2"):
    _ = book.glue(f"headdim_uniform_{a}", float(uniform[a][PRIMARY]))

# %% [markdown]
# ## Rank against head dimension
#
# One figure per temperature. Each panel is one rank measure; solid lines are the ranks at
# initialisation, dashed lines after training (mean over seeds, $\pm 1$ sd bars). Grey
# curves: the staircase $r_1 = d_\mathrm{head}+1$ and $r_2 = \binom{d_\mathrm{head}+2}{2}$
# (capped at $n$; drawn for the ranks at a relative tolerance, not for the study's absolute
# rule, and strictly a bound for bidirectional attention only). It is drawn only where the logits are small enough for the P1 bound
# to be below $n$; at very low temperature the logits are large, the Taylor argument
# bounds nothing, and the figure shows no staircase. Coloured horizontal lines: the
# i.i.d.-logit limit of P1' for each architecture at that temperature (a prediction for
# initialisation), and the same measure for uniform attention (causal for GPT-2), which a
# head that ignores the content would give: effective rank
# {glue:text}`headdim_uniform_bert:.2f` (BERT) and {glue:text}`headdim_uniform_gpt2:.2f` (GPT-2).

# %%
def tidy(d: pd.DataFrame) -> pd.DataFrame:
    parts = []
    for when in ("initial", "final"):
        p = d[["key", "arch", "tau", "head_dim", "num_heads", "seed", "status"] + [f"{when}_{m}" for m in MEASURE_NAMES]]
        p = p.melt(id_vars=["key", "arch", "tau", "head_dim", "num_heads", "seed", "status"], var_name="measure", value_name="value")
        parts.append(p.assign(measure=p.measure.str.removeprefix(f"{when}_"), when=when))
    return pd.concat(parts, ignore_index=True)


hd_long = tidy(hd_runs)
# the Taylor argument bounds ranks at a tolerance relative to sigma_1, so the staircase is drawn on those panels only
staircase = pd.DataFrame([{"measure": m, "label": lab, "x": h, "value": min(math.comb(h + k, k), n_tok), "hue": np.nan}
                          for m in NUMERICAL if rank.MEASURES[m].rtol is not None
                          for k, lab in ((1, r"staircase $r_1 = d_\mathrm{head}+1$"), (2, r"staircase $r_2 = \binom{d_\mathrm{head}+2}{2}$"))
                          for h in grid["head_dims"]])
# the staircase is the P1 bound only in the small-logit regime: draw it where the bound computed from the measured
# half-range M is below n for the median BERT matrix (at tau = 1 at initialisation; not at very low tau)
small_logits = {t: bool(init[(init.arch == "bert") & np.isclose(init.tau, t)].groupby("head_dim")["bound_rtol_1e-2"].median().lt(n_tok).any())
                for t in HD_TAUS}
for t in HD_TAUS:
    d = hd_long[np.isclose(hd_long.tau, t)]
    lim = limits[np.isclose(limits.tau, t)].assign(label="P1' i.i.d.-logit limit (initialisation)", x=np.nan, hue=lambda x: x.arch)
    uni = pd.DataFrame([{"measure": m, "label": "uniform attention (causal for GPT-2)", "x": np.nan, "hue": a,
                         "value": uniform[a][m]} for a in ("bert", "gpt2") for m in MEASURE_NAMES])
    refs = pd.concat(([staircase] if small_logits[t] else []) + [lim[["measure", "label", "x", "value", "hue"]], uni],
                     ignore_index=True)
    fig = sweeps.by_setting(d, "head_dim", facet="measure", style="when", refs=refs, baseline=None)
    fig.suptitle(rf"$\tau$ = {fmt_tau(t)}", fontsize="medium")
    book.show(fig, pd.concat([d.assign(kind="run"), refs.assign(kind="reference", tau=t)], ignore_index=True),
              f"headdim_rank_vs_head_dim_tau{fmt_tau(t)}",
              f"Attention rank against head dimension at fixed hidden size {hidden} and tau = {fmt_tau(t)}, one panel per "
              f"measure: initialisation (solid) and after training (dashed), mean over seeds with +-1 sd bars; "
              + ("grey: P1 staircase r_1, r_2 (capped at n); " if small_logits[t] else
                 "no staircase: at this temperature the P1 bound computed from the logits is n; ")
              + f"coloured horizontal: P1' limit for i.i.d. Gaussian logits of the same scale and uniform "
              f"attention (causal for GPT-2), the content-free baseline "
              f"({mc_samples} Monte Carlo matrices) ({caption_runs(d.drop_duplicates('key'))}).")

# %% [markdown]
# ### How close is the staircase bound?
#
# For BERT (P1 covers bidirectional attention) the table compares the P1 bound, computed
# per head and sequence from its measured half-range $M$, with the measured rank of the same
# matrices (seed 0, mean over layers, heads and sequences). The bound holds matrix by
# matrix when every entry of the "measured" column is at most its "bound".

# %%
bert0 = init[init.arch == "bert"]
check = bert0.groupby(["tau", "head_dim"]).agg(
    M=("M", "median"), **{f"rank {c.removeprefix('rank_')}": (c, "mean") for c in ("rank_rtol_1e-2", "rank_rtol_1e-4")},
    **{f"bound {c}": (f"bound_{c}", "mean") for c in ("rtol_1e-2", "rtol_1e-4")}).reset_index()
check.insert(2, "r_1", np.minimum(check.head_dim + 1, n_tok))
check.insert(3, "r_2", [min(math.comb(h + 2, 2), n_tok) for h in check.head_dim])
display(check.assign(tau=check.tau.map(fmt_tau)).round(3))
violations = int(((bert0["rank_rtol_1e-2"] > bert0["bound_rtol_1e-2"]) | (bert0["rank_rtol_1e-4"] > bert0["bound_rtol_1e-4"])).sum())
b1 = bert0[np.isclose(bert0.tau, 1.0)]
r1 = np.minimum(b1.head_dim + 1, n_tok)
_ = book.glue("headdim_p1_matrices", int(len(bert0)))
_ = book.glue("headdim_p1_violations", violations)
_ = book.glue("headdim_p1_bound_is_r1", float((b1["bound_rtol_1e-2"] == r1).mean()))
_ = book.glue("headdim_p1_r1_at_rtol2", float((b1["rank_rtol_1e-2"] == r1).mean()))
_ = book.glue("headdim_p1_r1_at_rtol4", float((b1["rank_rtol_1e-4"] == r1).mean()))
_ = book.glue("headdim_p1_rank1_at_rtol2", float((b1["rank_rtol_1e-2"] == 1).mean()))

# %% [markdown]
# The bound holds for all but {glue:text}`headdim_p1_violations` of
# {glue:text}`headdim_p1_matrices` BERT matrices. At $\tau = 1$ the bound at relative
# tolerance $10^{-2}$ computed from each matrix's half-range $M$ is exactly
# $r_1 = d_\mathrm{head}+1$ (capped at $n$) for a fraction
# {glue:text}`headdim_p1_bound_is_r1:.2f` of the matrices. The measured rank equals $r_1$ for
# a fraction {glue:text}`headdim_p1_r1_at_rtol2:.2f` of them at tolerance $10^{-2}$ (and is 1,
# the uniform direction alone, for {glue:text}`headdim_p1_rank1_at_rtol2:.2f`), and for
# {glue:text}`headdim_p1_r1_at_rtol4:.2f` of them at tolerance $10^{-4}$. Where the rank equals
# $r_1$, the first Taylor step is resolved in full and nothing beyond it: there the head
# dimension sets the initial rank through the number of directions of the first step, not
# through anything learned. Where the rank is 1, even the first step lies below the
# tolerance, and the head dimension cannot show at all.
#
# ## Temperature against head dimension, over the ranges a user can set
#
# The rule (stated at the top) compares how far each lever moves the mean initial rank over
# its whole grid: the temperature grid at head dimension {glue:text}`headdim_head_dim0`, and
# the head-dimension grid at fixed width and $\tau = 1$. The range is a magnitude: a lever
# that lowers the rank counts as much as one that raises it by the same amount. Beside it
# we give the signed change from the smallest to the largest head dimension (Welch-t
# interval), so the direction is visible, and the same ranges for the final validation loss
# (completed runs), which are reported, not judged.

# %%
tau_grid_runs = t_runs  # the whole temperature grid at the standard head dimension
hd1 = hd_runs[np.isclose(hd_runs.tau, 1.0)]
hdmin = hd_runs[np.isclose(hd_runs.tau, TAU_MIN)]
EFFECT = 1.0  # pre-registered: a difference of one unit of effective rank between the two ranges
lever_v = {m: rules.lever_comparison(tau_grid_runs, hd1, f"initial_{m}", effect=EFFECT, archs=("bert", "gpt2"))
           for m in RANK_MEASURES}
lv = lever_v[PRIMARY]
ok_t, ok_h = tau_grid_runs[tau_grid_runs.status == "complete"], hd1[hd1.status == "complete"]
loss_lv = rules.lever_comparison(ok_t, ok_h, "final_val_loss", archs=("bert", "gpt2"))
lv_min = rules.lever_comparison(tau_grid_runs, hdmin, f"initial_{PRIMARY}", effect=EFFECT, archs=("bert", "gpt2"))

LEVERS = {"tau_range": "τ over its grid", "head_dim_range": "d_head over its grid (τ = 1)", "diff": "difference (τ − d_head)"}
rows = []
for panel, v in ((f"initial {rank.MEASURES[PRIMARY].label}", lv), ("final validation loss", loss_lv)):
    for a in ("bert", "gpt2"):
        for key, lab in LEVERS.items():
            e = v[a].verdict.estimate if key == "diff" else v[a].parts[key]
            rows.append({"panel": panel, "arch": a, "lever": lab, "estimate": e.value, "low": e.low, "high": e.high, "n": e.n})
eff = pd.DataFrame(rows)
fig = sweeps.effect_forest(eff, xlabels={f"initial {rank.MEASURES[PRIMARY].label}": "range of the mean over the grid",
                                         "final validation loss": "range of the mean over the grid (nats/token)"})
book.show(fig, eff, "headdim_effect_sizes",
          f"How far each lever moves the mean over its whole grid (range of the seed means, a magnitude): the initial "
          f"primary rank (left) and the final validation loss (right); tau over its grid of {len(grid['taus'])} values "
          f"at head dimension {head_dim0}, d_head over {', '.join(map(fmt_tau, grid['head_dims']))} at hidden size "
          f"{hidden} and tau = 1, and their difference; 95% stratified-bootstrap intervals over runs ({profile} profile, "
          f"{len(pd.concat([tau_grid_runs, hd1]).drop_duplicates('key'))} runs, {n_seeds} seeds per setting).")
table = []
for m, v in lever_v.items():
    for a in ("bert", "gpt2"):
        r = v[a]
        table.append({"measure": m, "arch": a, "τ range": r.parts["tau_range"].text(2, n=False),
                      "d_head range": r.parts["head_dim_range"].text(2, n=False),
                      "d_head: largest − smallest": r.parts["head_dim_change"].text(2, n=False),
                      "difference of ranges": r.verdict.estimate.text(2, n=False), "runs": r.verdict.estimate.n,
                      "status": r.verdict.status})
display(Markdown("The rule with every rank measure (ranges with 95% stratified-bootstrap intervals; the signed head-dimension "
                 "change with a Welch-t interval):"))
display(pd.DataFrame(table).set_index(["measure", "arch"]))

for a in ("bert", "gpt2"):
    r = lv[a]
    book.glue(f"headdim_tau_range_{a}", r.parts["tau_range"].text(2))
    book.glue(f"headdim_hd_range_{a}", r.parts["head_dim_range"].text(2))
    book.glue(f"headdim_hd_range_min_{a}", lv_min[a].parts["head_dim_range"].text(2))
    book.glue(f"headdim_diff_{a}", r.verdict.estimate.text(2))
    book.glue(f"headdim_loss_tau_range_{a}", loss_lv[a].parts["tau_range"].text(3))
    book.glue(f"headdim_loss_hd_range_{a}", loss_lv[a].parts["head_dim_range"].text(3))
    ch = r.parts["head_dim_change"]
    means = hd1[hd1.arch == a].groupby("head_dim")[f"initial_{PRIMARY}"].mean()
    lo_hd, hi_hd = int(means.index.min()), int(means.index.max())
    word = ("falls" if ch.high < 0 else "rises" if ch.low > 0 else "changes (direction not resolved)")
    book.glue(f"headdim_direction_{a}", f"{word} from {means.loc[lo_hd]:.2f} at d_head = {lo_hd} to {means.loc[hi_hd]:.2f} "
                                        f"at d_head = {hi_hd} (change {ch.text(2)})")
    book.glue(f"headdim_spread_{a}", float(r.spread))
falls = [a for a in ("bert", "gpt2") if lv[a].parts["head_dim_change"].high < 0]
rises = [a for a in ("bert", "gpt2") if lv[a].parts["head_dim_change"].low > 0]
book.glue("headdim_direction_note",
          "at this width the measured rank does not follow the staircase bound upward" if not rises else
          "the measured rank rises with the head dimension for " + " and ".join(sweeps.ARCH_LABELS[a] for a in rises)
          + ("" if not falls else ", and falls for " + " and ".join(sweeps.ARCH_LABELS[a] for a in falls)))
book.glue("headdim_n_resamples", f"{stats.N_RESAMPLES:,}")
_ = book.glue("headdim_head_dim0", int(head_dim0))

# %% [markdown]
# At $\tau = 1$ and fixed width, the mean initial effective rank of BERT
# {glue:text}`headdim_direction_bert`, and that of GPT-2 {glue:text}`headdim_direction_gpt2`
# as the head dimension grows: {glue:text}`headdim_direction_note`. Over the whole grids, the temperature moves the mean initial rank by
# {glue:text}`headdim_tau_range_bert` runs (range, BERT) against
# {glue:text}`headdim_hd_range_bert` runs for the head dimension (difference
# {glue:text}`headdim_diff_bert`); for GPT-2 by {glue:text}`headdim_tau_range_gpt2` against
# {glue:text}`headdim_hd_range_gpt2` (difference {glue:text}`headdim_diff_gpt2`). At
# $\tau =$ {glue:text}`headdim_tau_min` the head-dimension range is
# {glue:text}`headdim_hd_range_min_bert` (BERT) and {glue:text}`headdim_hd_range_min_gpt2`
# (GPT-2). The range of noisy means is biased upward by the seed noise (seed spread
# {glue:text}`headdim_spread_bert:.3f` for BERT, {glue:text}`headdim_spread_gpt2:.3f` for
# GPT-2), and with {glue:text}`headdim_n_seeds` seeds per setting a bootstrap within each setting understates the
# spread of a mean, so the intervals are optimistic; the verdict is robust to that only where
# the difference is many times the seed spread.
#
# For the final loss, over the same grids: temperature {glue:text}`headdim_loss_tau_range_bert`
# nats against head dimension {glue:text}`headdim_loss_hd_range_bert` for BERT, and
# {glue:text}`headdim_loss_tau_range_gpt2` against {glue:text}`headdim_loss_hd_range_gpt2`
# for GPT-2.
#
# ## Verdict


# %% tags=["remove-output"]
def arch_text(a: str) -> str:
    r = lv[a]
    s = (f"the temperature moves the mean initial {rank.MEASURES[PRIMARY].label} by {r.parts['tau_range'].text(2)} runs "
         f"over its grid and the head dimension by {r.parts['head_dim_range'].text(2)} runs (difference "
         f"{r.verdict.estimate.text(2, n=False)}")
    if r.verdict.status != "supported" and r.verdict.needed is not None:
        s += f"; about {r.verdict.needed} {r.verdict.needed_unit} would resolve a difference of {EFFECT:g}"
    return s + ")"


summary = (f"Over the ranges a user can set (range of the seed means, 95% stratified-bootstrap intervals), for BERT "
           f"{arch_text('bert')}, and for GPT-2 {arch_text('gpt2')}. {profile} profile, {n_seeds} seeds per setting, "
           f"head dimensions {', '.join(map(fmt_tau, grid['head_dims']))} at hidden size {hidden}.")
book.verdict("headdim", lv.status, summary, by_measure={m: lever_v[m].status for m in RANK_MEASURES})
_ = book.glue("headdim_seconds", float(time.perf_counter() - t_chapter))
_ = book.glue("headdim_theory_seconds", float(theory_seconds))

# %% [markdown]
# **Temperature is the stronger lever on the initial rank: {glue:text}`headdim_status`.**
# {glue:text}`headdim_summary`
#
# Head dimension and temperature act on the initial rank through the same expansion. The
# head dimension sets how many directions each Taylor step of the softmax can open (the
# staircase bound, toward the i.i.d.-logit limit), and the temperature sets the size of the
# logits, hence how many steps clear the tolerance. A larger head can only raise the rank by
# the steps that the logit scale already lets through, and at fixed width it also means fewer
# heads and a different logit scale per head, so the measured effect of the head dimension
# at this width can be small or even negative. The comparison depends on the
# logit scale at initialisation, which grows with the model width: the effect sizes above are
# for this profile's width and sequence length. With trained weights neither lever is a
# capacity limit of the kind the initial rank suggests ({ref}`P3 <target-p3>`), so what
# matters for the study's conclusion is whether the initial rank predicts the loss: that is
# the chapter on loss.
