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
#   initialisation this is the regime that applies, and rank grows with $d_\mathrm{head}$
#   step by step.
# * **the saturation (P1').** With independent random $Q, K$, the logits $S$ tend to a
#   matrix of i.i.d. Gaussians as $d_\mathrm{head}\to\infty$ (central limit theorem at fixed
#   logit scale), so every rank measure tends to its value for the softmax of i.i.d.
#   Gaussian logits *with the same logit scale*. We compute that ceiling by Monte Carlo.

# %% tags=["parameters"]
profile = "auto"
seeds = None
taus = None
head_dims = None
mc_samples = 256

# %%
import warnings

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a kernel without ipywidgets
import math
import time

import numpy as np
import pandas as pd
import torch
from IPython.display import Markdown, display

from attnrank import book, experiments, models, probe, rank, stats, store, theory, train
from attnrank.errors import ConfigError
from attnrank.plots import sweeps
from attnrank.profiles import resolve_config

book.check_parameters(globals(), ("profile", "seeds", "taus", "head_dims", "mc_samples"))
mc_samples = 256 if mc_samples is None else mc_samples
profile = book.setup(profile)
t_chapter = time.perf_counter()
PRIMARY = experiments.PRIMARY_MEASURE
MEASURE_NAMES = list(rank.MEASURES)
NUMERICAL = [m for m in MEASURE_NAMES if rank.MEASURES[m].kind == "numerical"]

# %% [markdown]
# ## The runs
#
# The runs are the shared sweep of all trained-model chapters (`experiments.main_sweep`):
# its head-dimension grid at $\tau = 1$ and at the smallest $\tau$, and its temperature grid
# at the standard head dimension (used below to put the two levers on one scale).

# %%
grid = experiments.sweep_defaults(profile, taus=taus, head_dims=head_dims, seeds=seeds)
t0 = time.perf_counter()
runs = store.sweep(experiments.main_sweep(profile, taus=taus, head_dims=head_dims, seeds=seeds), progress=False)
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
book.glue("headdim_tau_min", TAU_MIN)
book.glue("headdim_n_failed", int(len(failed)))
display(Markdown(f"{len(hd_runs)} head-dimension runs ({profile} profile): head dimensions "
                 f"{', '.join(map(str, grid['head_dims']))} at hidden size {hidden} (heads: "
                 f"{', '.join(str(hidden // h) for h in grid['head_dims'])}), tau in {HD_TAUS}, {n_seeds} seeds, both archs."))
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
display(scale.pivot(index=["arch", "tau"], columns="head_dim", values="logit_sd").round(4))
for a in ("bert", "gpt2"):
    for t, name in ((1.0, "base"), (TAU_MIN, "min")):
        book.glue(f"headdim_logit_sd_{name}_{a}", float(scale[(scale.arch == a) & np.isclose(scale.tau, t)].logit_sd.mean()))
_ = book.glue("headdim_n", int(init.n.iloc[0]))

# %% [markdown]
# The logit scale hardly depends on the head dimension (the $1/\sqrt{d_\mathrm{head}}$ in $T$
# is there for that): about {glue:text}`headdim_logit_sd_base_bert:.3g` for BERT and
# {glue:text}`headdim_logit_sd_base_gpt2:.3g` for GPT-2 at $\tau = 1$, and $1/\tau$ times more
# at $\tau =$ {glue:text}`headdim_tau_min:g` ({glue:text}`headdim_logit_sd_min_bert:.3g` for
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
display(limits.pivot(index="measure", columns=["arch", "tau"], values="value").round(2))

# %% [markdown]
# ## Rank against head dimension
#
# One figure per temperature. Each panel is one rank measure; solid lines are the ranks at
# initialisation, dashed lines after training (mean over seeds, $\pm 1$ sd bars). Grey
# curves: the staircase $r_1 = d_\mathrm{head}+1$ and $r_2 = \binom{d_\mathrm{head}+2}{2}$
# (capped at $n$; drawn for the numerical ranks, and strictly a bound for bidirectional
# attention only). It is drawn only where the logits are small enough for the P1 bound
# to be below $n$; at very low temperature the logits are large, the Taylor argument
# bounds nothing, and the figure shows no staircase. Coloured horizontal lines: the
# i.i.d.-logit ceiling of P1' for each architecture at that temperature (a prediction for
# initialisation).

# %%
def tidy(d: pd.DataFrame) -> pd.DataFrame:
    parts = []
    for when in ("initial", "final"):
        p = d[["key", "arch", "tau", "head_dim", "num_heads", "seed", "status"] + [f"{when}_{m}" for m in MEASURE_NAMES]]
        p = p.melt(id_vars=["key", "arch", "tau", "head_dim", "num_heads", "seed", "status"], var_name="measure", value_name="value")
        parts.append(p.assign(measure=p.measure.str.removeprefix(f"{when}_"), when=when))
    return pd.concat(parts, ignore_index=True)


hd_long = tidy(hd_runs)
staircase = pd.DataFrame([{"measure": m, "label": lab, "x": h, "value": min(math.comb(h + k, k), n_tok), "hue": np.nan}
                          for m in NUMERICAL
                          for k, lab in ((1, r"staircase $r_1 = d_\mathrm{head}+1$"), (2, r"staircase $r_2 = \binom{d_\mathrm{head}+2}{2}$"))
                          for h in grid["head_dims"]])
# the staircase is the P1 bound only in the small-logit regime: draw it where the bound computed from the measured
# half-range M is below n for the median BERT matrix (at tau = 1 at initialisation; not at very low tau)
small_logits = {t: bool(init[(init.arch == "bert") & np.isclose(init.tau, t)].groupby("head_dim")["bound_rtol_1e-2"].median().lt(n_tok).any())
                for t in HD_TAUS}
for t in HD_TAUS:
    d = hd_long[np.isclose(hd_long.tau, t)]
    lim = limits[np.isclose(limits.tau, t)].assign(label="P1' i.i.d.-logit limit (initialisation)", x=np.nan, hue=lambda x: x.arch)
    refs = pd.concat(([staircase] if small_logits[t] else []) + [lim[["measure", "label", "x", "value", "hue"]]], ignore_index=True)
    fig = sweeps.by_setting(d, "head_dim", facet="measure", style="when", refs=refs, baseline=None)
    fig.suptitle(rf"$\tau$ = {t:g}", fontsize="medium")
    book.show(fig, pd.concat([d.assign(kind="run"), refs.assign(kind="reference", tau=t)], ignore_index=True),
              f"headdim_rank_vs_head_dim_tau{t:g}",
              f"Attention rank against head dimension at fixed hidden size {hidden} and tau = {t:g}, one panel per "
              f"measure: initialisation (solid) and after training (dashed), mean over seeds with +-1 sd bars; "
              + ("grey: P1 staircase r_1, r_2 (capped at n); " if small_logits[t] else
                 "no staircase: at this temperature the P1 bound computed from the logits is n; ")
              + f"coloured horizontal: P1' limit for i.i.d. Gaussian logits of the same scale "
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
display(check.round(3))
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
# ## Temperature against head dimension on one scale
#
# The study says temperature is the stronger lever. To compare the two on one scale we ask
# how much the initial primary rank changes *per factor of two* in each lever, in the
# direction the study says raises the rank:
#
# * temperature: the least-squares slope of the initial rank against $\log_2(1/\tau)$ over
#   the grid temperatures from the smallest up to $\tau = 1$ (the study's range: from the
#   stock model down to its cold setting), at the standard head dimension, i.e. the change
#   per **halving of $\tau$**;
# * head dimension: the slope against $\log_2 d_\mathrm{head}$ over the head-dimension grid,
#   i.e. the change per **doubling of $d_\mathrm{head}$**, at $\tau = 1$ (the standard) and
#   at the smallest $\tau$.
#
# Each slope has a 95% bootstrap interval over runs (`stats.slope_per_doubling`); the
# difference "temperature minus head dimension" (at $\tau = 1$) has a bootstrap interval
# that resamples the two sets of runs independently. The same slopes of the final
# validation loss (completed runs only) show which lever matters for training; a negative
# value there means lower loss.

# %%
LEVER_TAU = "τ halved (τ ≤ 1)"
DIFF = "difference: τ halved − d_head doubled at τ = 1"


def lever_hd(t: float) -> str:
    return f"d_head doubled (τ = {t:g})"


def slope_diff(da: pd.DataFrame, xa: str, db: pd.DataFrame, xb: str, y: str) -> dict:
    """Slope per doubling of xa in da minus slope per doubling of xb in db, with an independent-resampling bootstrap CI."""
    da, db = da[[xa, y]].dropna(), db[[xb, y]].dropna()
    la, ya, lb, yb = np.log2(da[xa].to_numpy(float)), da[y].to_numpy(float), np.log2(db[xb].to_numpy(float)), db[y].to_numpy(float)

    def slope(lx, yy):
        return np.polyfit(lx, yy, 1)[0] if np.ptp(lx) > 0 else np.nan

    def stat(ia, ib):
        ia, ib = ia.astype(int), ib.astype(int)
        v = slope(la[ia], ya[ia]) - slope(lb[ib], yb[ib])
        return 0.0 if not np.isfinite(v) else v

    est = slope(la, ya) - slope(lb, yb)
    low, high = stats.bootstrap_ci(stat, np.arange(len(da)), np.arange(len(db)), paired=False)
    return {"slope": float(est), "low": low, "high": high, "n": int(len(da) + len(db))}


def effects(y: str, complete_only: bool) -> pd.DataFrame:
    rows = []
    for a in ("bert", "gpt2"):
        tr = t_runs[(t_runs.arch == a) & (t_runs.tau <= 1.0)].assign(inv_tau=lambda d: 1.0 / d.tau)
        hr = hd_runs[hd_runs.arch == a]
        if complete_only:
            tr, hr = tr[tr.status == "complete"], hr[hr.status == "complete"]
        h1 = hr[np.isclose(hr.tau, 1.0)]
        rows.append({"arch": a, "lever": LEVER_TAU, **stats.slope_per_doubling(tr, "inv_tau", y)})
        for t in HD_TAUS:
            rows.append({"arch": a, "lever": lever_hd(t),
                         **stats.slope_per_doubling(hr[np.isclose(hr.tau, t)], "head_dim", y)})
        rows.append({"arch": a, "lever": DIFF, **slope_diff(tr, "inv_tau", h1, "head_dim", y)})
    return pd.DataFrame(rows).rename(columns={"slope": "estimate"})


eff_rank = effects(f"initial_{PRIMARY}", complete_only=False).assign(panel=f"initial {rank.MEASURES[PRIMARY].label}")
eff_loss = effects("final_val_loss", complete_only=True).assign(panel="final validation loss")
eff = pd.concat([eff_rank, eff_loss], ignore_index=True)
fig = sweeps.effect_forest(eff, xlabels={f"initial {rank.MEASURES[PRIMARY].label}": "change in rank per factor 2",
                                         "final validation loss": "change in loss per factor 2 (nats/token)"})
book.show(fig, eff, "headdim_effect_sizes",
          f"Effect of a factor 2 in each lever on the initial primary rank (left) and the final validation loss "
          f"(right): tau halved (over the grid tau <= 1, at head dimension {head_dim0}), head dimension doubled (at fixed "
          f"hidden size, tau = 1 and tau = {TAU_MIN:g}), and the difference; 95% bootstrap intervals "
          f"({profile} profile, {len(pd.concat([t_runs[t_runs.tau <= 1], hd_runs]).drop_duplicates('key'))} runs, "
          f"{n_seeds} seeds per setting).")
display(eff[["panel", "arch", "lever", "estimate", "low", "high", "n"]].round(3))

# the total change over each grid, for context (means over seeds)
def mean_of(d, col):
    return float(d[col].mean())


for a in ("bert", "gpt2"):
    for kind, e in (("rank", eff_rank), ("loss", eff_loss)):
        ea = e[e.arch == a].set_index("lever")
        for lever, key in ((LEVER_TAU, "tau"), (lever_hd(1.0), "hd"), (lever_hd(TAU_MIN), "hdmin"), (DIFF, "diff")):
            for k in ("estimate", "low", "high"):
                book.glue(f"headdim_{kind}_{key}_{a}_{k}", float(ea.loc[lever, k]))
    tr = t_runs[t_runs.arch == a]
    hr = hd_runs[(hd_runs.arch == a) & np.isclose(hd_runs.tau, 1.0)]
    book.glue(f"headdim_total_tau_{a}", mean_of(tr[np.isclose(tr.tau, TAU_MIN)], f"initial_{PRIMARY}") - mean_of(tr[np.isclose(tr.tau, 1.0)], f"initial_{PRIMARY}"))
    book.glue(f"headdim_total_hd_{a}", mean_of(hr[hr.head_dim == max(grid["head_dims"])], f"initial_{PRIMARY}") - mean_of(hr[hr.head_dim == min(grid["head_dims"])], f"initial_{PRIMARY}"))
book.glue("headdim_n_halvings", float(math.log2(1.0 / TAU_MIN)))
_ = book.glue("headdim_n_doublings", float(math.log2(max(grid["head_dims"]) / min(grid["head_dims"]))))

# %% [markdown]
# Per halving of $\tau$ the initial primary rank changes by
# {glue:text}`headdim_rank_tau_bert_estimate:.2f` for BERT (95% CI
# {glue:text}`headdim_rank_tau_bert_low:.2f` to {glue:text}`headdim_rank_tau_bert_high:.2f`)
# and {glue:text}`headdim_rank_tau_gpt2_estimate:.2f` for GPT-2
# ({glue:text}`headdim_rank_tau_gpt2_low:.2f` to {glue:text}`headdim_rank_tau_gpt2_high:.2f`);
# per doubling of $d_\mathrm{head}$ at $\tau = 1$ by {glue:text}`headdim_rank_hd_bert_estimate:.2f`
# ({glue:text}`headdim_rank_hd_bert_low:.2f` to {glue:text}`headdim_rank_hd_bert_high:.2f`) and
# {glue:text}`headdim_rank_hd_gpt2_estimate:.2f` ({glue:text}`headdim_rank_hd_gpt2_low:.2f` to
# {glue:text}`headdim_rank_hd_gpt2_high:.2f`), and at $\tau =$ {glue:text}`headdim_tau_min:g` by
# {glue:text}`headdim_rank_hdmin_bert_estimate:.2f` (BERT) and
# {glue:text}`headdim_rank_hdmin_gpt2_estimate:.2f` (GPT-2). The difference is
# {glue:text}`headdim_rank_diff_bert_estimate:.2f` ({glue:text}`headdim_rank_diff_bert_low:.2f`
# to {glue:text}`headdim_rank_diff_bert_high:.2f`) for BERT and
# {glue:text}`headdim_rank_diff_gpt2_estimate:.2f` ({glue:text}`headdim_rank_diff_gpt2_low:.2f`
# to {glue:text}`headdim_rank_diff_gpt2_high:.2f`) for GPT-2.
#
# The grids are not equally long: the temperature grid spans
# {glue:text}`headdim_n_halvings:.1f` halvings and the head-dimension grid
# {glue:text}`headdim_n_doublings:.0f` doublings (at a fixed width one cannot go further
# without single-head or tiny heads). Over the whole grids the mean initial rank changes by
# {glue:text}`headdim_total_tau_bert:.2f` (temperature, from $\tau=1$ to the smallest) against
# {glue:text}`headdim_total_hd_bert:.2f` (head dimension, smallest to largest) for BERT, and
# {glue:text}`headdim_total_tau_gpt2:.2f` against {glue:text}`headdim_total_hd_gpt2:.2f` for
# GPT-2. A slope over a response that bends (the rank rises, then falls toward the hardmax
# rank at very low $\tau$; it saturates in $d_\mathrm{head}$) is an average effect over the grid.
#
# For the final loss, per halving of $\tau$: {glue:text}`headdim_loss_tau_bert_estimate:.3f`
# nats (BERT, {glue:text}`headdim_loss_tau_bert_low:.3f` to {glue:text}`headdim_loss_tau_bert_high:.3f`)
# and {glue:text}`headdim_loss_tau_gpt2_estimate:.3f` (GPT-2,
# {glue:text}`headdim_loss_tau_gpt2_low:.3f` to {glue:text}`headdim_loss_tau_gpt2_high:.3f`);
# per doubling of $d_\mathrm{head}$ at $\tau = 1$: {glue:text}`headdim_loss_hd_bert_estimate:.3f`
# (BERT, {glue:text}`headdim_loss_hd_bert_low:.3f` to {glue:text}`headdim_loss_hd_bert_high:.3f`)
# and {glue:text}`headdim_loss_hd_gpt2_estimate:.3f` (GPT-2,
# {glue:text}`headdim_loss_hd_gpt2_low:.3f` to {glue:text}`headdim_loss_hd_gpt2_high:.3f`).
#
# ## Verdict
#
# **Rule (stated before looking).** "Temperature is the stronger lever on the initial rank"
# is *supported* if the 95% interval of the difference (rank change per halving of $\tau$
# minus rank change per doubling of $d_\mathrm{head}$ at $\tau = 1$, primary measure) lies
# above zero for both BERT and GPT-2; *not supported* if it lies below zero for either;
# otherwise *inconclusive at this scale*. The loss comparison is reported beside it, not
# folded into the verdict (the claim is about the rank).

# %%
def judge(rows: pd.DataFrame) -> str:
    if not np.isfinite(rows[["low", "high"]].to_numpy()).all():
        return "inconclusive at this scale"
    if (rows.low > 0).all():
        return "supported"
    if (rows.high < 0).any():
        return "not supported"
    return "inconclusive at this scale"


def ci(e: pd.DataFrame, a: str, lever: str, digits: int = 2) -> str:
    """Estimate [95% CI], rounded so that floating-point noise (1e-16) reads as zero."""
    r = e[(e.arch == a) & (e.lever == lever)].iloc[0]
    f = lambda v: book.fmt(round(float(v), 9), digits)  # noqa: E731
    return f"{f(r.estimate)} [{f(r.low)}, {f(r.high)}]"


status = judge(eff_rank[eff_rank.lever == DIFF])
summary = (f"Per factor 2, the initial {rank.MEASURES[PRIMARY].label} changes by {ci(eff_rank, 'bert', LEVER_TAU)} "
           f"per halving of tau against {ci(eff_rank, 'bert', lever_hd(1.0))} per doubling of d_head for BERT "
           f"(difference {ci(eff_rank, 'bert', DIFF)}), and {ci(eff_rank, 'gpt2', LEVER_TAU)} against "
           f"{ci(eff_rank, 'gpt2', lever_hd(1.0))} for GPT-2 (difference {ci(eff_rank, 'gpt2', DIFF)}), with "
           f"95% bootstrap intervals ({profile} profile). On the final loss the difference is {ci(eff_loss, 'bert', DIFF, 3)} "
           f"nats for BERT and {ci(eff_loss, 'gpt2', DIFF, 3)} for GPT-2 (negative: temperature lowers the loss more).")
book.verdict("headdim", status, summary)
_ = book.glue("headdim_seconds", float(time.perf_counter() - t_chapter))
_ = book.glue("headdim_theory_seconds", float(theory_seconds))

# %% [markdown]
# **Verdict: {glue:text}`headdim_status`.** {glue:text}`headdim_summary`
#
# Head dimension and temperature act on the initial rank through the same expansion. The
# head dimension sets how many directions each Taylor step of the softmax can open (the
# staircase, up to the i.i.d.-logit ceiling), and the temperature sets the size of the
# logits, hence how many steps clear the tolerance. A larger head can only raise the rank
# by the steps that the logit scale already lets through, so the comparison depends on the
# logit scale at initialisation, which grows with the model width: the effect sizes above
# are for this profile's width and sequence length. For causal attention (GPT-2) the
# near-uniform matrix at $\tau = 1$ is already well conditioned, and lowering the temperature
# can move its rank down. With trained weights neither lever is a capacity limit of the
# kind the initial rank suggests ({ref}`P3 <target-p3>`), so what matters for the study's
# conclusion is whether the initial rank predicts the loss: that is the chapter on loss.
