"""The theory chapter's checks of each proposition on random instances, as tables and numbers.

Each function runs the check of one proposition with the chapter's sizes
(:data:`attnrank.runs.presets.PRESETS` ``["theory"]``) and returns a :class:`Check`: the tables
its figure draws, the numbers the chapter pastes (``glue``, under the chapter's names) and
the count of instances tested and violations found. The expensive tables (the mpmath
spectra, the Monte Carlo estimates) are cached with :func:`attnrank.runs.cache.cached`, keyed by
their inputs and the code. Seeds: instance draws use ``1000 * seed + offset``, as before.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from ..analysis.theory._common import softmax_attention
from ..analysis.theory.exact import causal_log10_det
from ..analysis.theory.hardmax import hardmax_rank, hardmax_threshold, measured_threshold, new_column_gap, top_gap
from ..analysis.theory.sampling import expected_distinct, sample_logits, study_bound
from ..analysis.theory.tables import SAT_MEASURES, Check, exact_spectra, generator, hardmax_mc_table, saturation_table
from ..analysis.theory.taylor import (
    logit_halfrange,
    staircase_blocks,
    staircase_slopes,
    taylor_rank_bound,
    taylor_terms,
)
from ..core.profiles import base_profile, resolve_profile
from ..core.rank import numerical_rank, singular_values, study_rank
from ..plots.theory import section_figure
from ..runs.cache import cached
from ..runs.presets import preset
from ..words.glossary import MEASURE_LABELS, fmt, fmt_and, fmt_setting
from .section import Figure, Section, Table, Verdict
from .seqlen import section as seq_len_section

__all__ = [
    "Check",
    "merge",
    "p0",
    "p1_staircase",
    "p1_taylor",
    "p1p_saturation",
    "p2_hardmax",
    "theorem",
    "verdict",
    "exact_spectra",
    "saturation_table",
    "hardmax_mc_table",
    "sizes",
    "totals",
]

#: Rank measures of the P1' saturation check (the first is the one the text quotes).


def merge(check: str, *sections: Check) -> Check:
    """One check made of several sections (P1: the staircase and the Taylor bound)."""
    return Check({}, {}, check, sum(s.tested for s in sections), sum(s.violations for s in sections))


def sizes(profile: str, *, head_dims=None, mc_samples=None) -> dict:
    """The chapter's sizes for ``profile`` (:func:`attnrank.runs.presets.preset` ``("theory", profile)``), overridden.

    Args:
        profile: a resolved profile name.
        head_dims: if given, the head dimensions of both the theorem's Monte Carlo
            (``mc_head_dims``) and the P1' saturation check (``sat_head_dims``), sorted and
            deduplicated.
        mc_samples: if given, the theorem's draws of ``(W_Q, W_K)`` per point (``mc_samples``).

    Raises:
        ConfigError: naming ``profile`` for an unknown profile (from :func:`~attnrank.runs.presets.preset`).
    """
    out = preset("theory", profile)
    if head_dims is not None:
        out["mc_head_dims"] = out["sat_head_dims"] = sorted(set(head_dims))
    if mc_samples is not None:
        out["mc_samples"] = mc_samples
    return out


def totals(sections: dict) -> dict:
    """``theory_total_tested`` and ``theory_total_violations``: the sums over the sections that are checks.

    ``sections``: name -> :class:`Check`; a section without ``check`` (a part of a merged
    check) is not counted, so nothing is counted twice.
    """
    checks = [s for s in sections.values() if s.check]
    return {
        "theory_total_tested": sum(s.tested for s in checks),
        "theory_total_violations": sum(s.violations for s in checks),
    }


# ------------------------------------------------------------------------------- P0
def _rank_range(low: int, high: int) -> str:
    """The ranks a tolerance reports over instances, as a sentence says them: ``"a rank of 13"`` when every
    instance gives the same one, else ``"a rank between 12 and 13"``."""
    return f"a rank of {low}" if low == high else f"a rank between {low} and {high}"


def p0(
    *, p0_n: int, p0_inst: int, p0_digits: int, seed: int = 0, head_dim: int = 1, causal_instances: int = 200, **_
) -> Check:
    """P0: the exact spectrum is full (mpmath) and causal attention has a finite log-determinant
    with ``sigma_min <= min_i A_ii``. Table ``spectrum``; a violation is an exact zero singular
    value, a non-finite causal log-determinant or ``sigma_min > min_i A_ii``."""
    p0 = cached(
        "theory_p0_spectra", exact_spectra, n=p0_n, instances=p0_inst, digits=p0_digits, head_dim=head_dim, seed=seed
    )
    exact = p0[p0.method.str.startswith("mpmath")]
    minlog = exact.groupby("instance")["log10_sigma"].min()
    float_rank = exact.groupby("instance")["float_rank"].first()
    S_c = sample_logits(p0_n, head_dim, causal_instances, generator=generator(seed, 2))
    A_c = softmax_attention(S_c, 1.0, causal=True)
    logdet = causal_log10_det(S_c)
    smin_c = singular_values(A_c)[..., -1]
    viol = int((~np.isfinite(minlog)).sum()) + int((~torch.isfinite(logdet)).sum())
    viol += int((smin_c > A_c.diagonal(dim1=-2, dim2=-1).amin(-1) * (1 + 1e-12)).sum())
    glue = dict(
        theory_p0_n=p0_n,
        theory_p0_d=head_dim,
        theory_p0_digits=p0_digits,
        theory_p0_inst=p0_inst,
        theory_p0_float_rank=_rank_range(int(float_rank.min()), int(float_rank.max())),
        theory_p0_minlog_min=fmt(float(minlog.min()), 1),
        theory_p0_minlog_max=fmt(float(minlog.max()), 1),
        theory_p0_causal_inst=int(len(S_c)),
        theory_p0_causal_logdet_min=fmt(float(logdet.min()), 1),
    )
    return Check({"spectrum": p0.drop(columns="float_rank")}, glue, "p0", p0_inst + len(S_c), viol)


# ------------------------------------------------------------------------------- P1
def p1_staircase(
    *, stair_n: int, seed: int = 0, head_dim: int = 4, clean_share: float = 0.8, tol: float = 0.05, **_
) -> Check:
    """P1 staircase: singular values of ``softmax(beta S0)`` over 9 values of beta in [1e-2, 1e-1]
    and their fitted exponents against the predicted blocks. Tables ``sv``, ``slopes``,
    ``blocks``; a violation is a block (at least ``clean_share`` of it above the float64 floor)
    whose median exponent is more than ``tol`` from its ``m``."""
    n = stair_n
    S0 = sample_logits(n, head_dim, 1, generator=generator(seed, 3))[0]
    betas = torch.logspace(-2, -1, 9, dtype=torch.float64)
    sv, slopes = staircase_slopes(S0, betas)
    blocks = staircase_blocks(head_dim, n)
    clean = sv.amin(-2) > 1e-12  # sigma_k stays above the float64 floor over the whole beta range
    sv_df = pd.DataFrame(
        [
            dict(beta=float(b), k=k + 1, sigma=float(sv[i, k]), block=int(blocks[k]))
            for i, b in enumerate(betas)
            for k in range(n)
            if bool(clean[k])
        ]
    )
    slope_df = pd.DataFrame(
        dict(k=np.arange(1, n + 1), slope=slopes.numpy(), predicted=blocks.numpy(), clean=clean.numpy())
    )
    rows = []
    for m in sorted(set(blocks[clean].tolist())):
        block = blocks == m
        sel = block & clean
        rows.append(
            dict(  # the block's range of k (the one the prose names); ``clean``: how many of it are fitted
                m=m,
                first_k=int(block.nonzero()[0]) + 1,
                last_k=int(block.nonzero()[-1]) + 1,
                size=int(block.sum()),
                clean=int(sel.sum()),
                median_slope=float(slopes[sel].median()),
                max_dev=float((slopes[sel] - m).abs().max()),
            )
        )
    blocks_df = pd.DataFrame(rows)
    complete = blocks_df[blocks_df["clean"] >= clean_share * blocks_df["size"]]
    viol = int((complete["median_slope"].sub(complete["m"]).abs() > tol).sum())
    glue = dict(
        theory_stair_nbetas=len(betas),
        theory_stair_clean_pct=f"{clean_share:.0%}",
        theory_stair_tol=tol,
        theory_stair_d=head_dim,
        theory_stair_n=n,
        theory_stair_blocks=" | ".join(
            f"{r.first_k}–{r.last_k}" if r.size > 1 else f"{r.first_k}" for r in complete.itertuples()
        ),
        theory_stair_slopes=", ".join(f"{s:.3f}" for s in complete["median_slope"]),
        theory_stair_maxdev=float(complete["max_dev"].max()),
        theory_stair_nblocks=int(len(complete)),
    )
    return Check({"sv": sv_df, "slopes": slope_df, "blocks": blocks_df}, glue, None, len(complete), viol)


def p1_taylor(
    *,
    taylor_n: int,
    taylor_inst: int,
    seed: int = 0,
    head_dims=(1, 2, 4, 8),
    scales=(0.03, 0.1, 0.3, 1.0, 3.0),
    eps=(1e-2, 1e-4),
    example=(8, 0.1),
    **_,
) -> Check:
    """P1 Taylor bound: measured ``rank_eps`` against :func:`taylor_rank_bound` for random logits
    times each scale, and ``sigma_{r_m+1} <= e^{2M} M^{m+1}/(m+1)!`` directly. Table ``bound``;
    ``example`` is the (head dim, scale) quoted in the text."""
    n, tested, viol, rows = taylor_n, 0, 0, []
    for d in head_dims:
        for scale in scales:
            S = sample_logits(n, d, taylor_inst, generator=generator(seed, 100 + 10 * d + int(100 * scale))) * scale
            A = torch.softmax(S, -1)
            M = logit_halfrange(S)
            svs = singular_values(A)
            for e in eps:
                bound = taylor_rank_bound(d, M, e, n=n)
                meas = numerical_rank(A, rtol=e)
                viol += int((meas > bound).sum())
                tested += len(S)
                rows += [
                    dict(
                        head_dim=d,
                        scale=scale,
                        eps=fmt_setting(e),
                        n=n,
                        M=float(M[i]),
                        bound=int(bound[i]),
                        measured=int(meas[i]),
                    )
                    for i in range(len(S))
                ]
            for m in range(4):  # the singular-value form of the bound, directly
                r = taylor_terms(d, m)
                if r < n:
                    rhs = torch.exp(2 * M + (m + 1) * torch.log(M) - math.lgamma(m + 2))
                    viol += int((svs[:, r] > rhs * (1 + 1e-9)).sum())
                    tested += len(S)
    ty = pd.DataFrame(rows)
    informative = ty[ty["bound"] < n]
    ex = ty[(ty.head_dim == example[0]) & (ty.scale == example[1])]
    e2, e4 = (ex[ex.eps == fmt_setting(e)] for e in eps)
    glue = dict(
        theory_ty_dims=", ".join(map(str, head_dims)),
        theory_ty_nscales=len(scales),
        theory_ty_scales=", ".join(map(fmt_setting, scales)),
        theory_ty_eps=" and ".join(map(fmt_setting, eps)),
        theory_ty_ex_d=example[0],
        theory_ty_ex_scale=example[1],
        theory_ty_n=n,
        theory_ty_inst=taylor_inst,
        theory_ty_points=int(len(ty)),
        theory_ty_informative=int(len(informative)),
        theory_ty_tight=int((informative["bound"] == informative["measured"]).sum()),
        theory_ty_ex_bound_2=int(e2["bound"].median()),
        theory_ty_ex_meas_2=float(e2["measured"].median()),
        theory_ty_ex_bound_4=int(e4["bound"].median()),
        theory_ty_ex_meas_4=float(e4["measured"].median()),
        theory_ty_ex_M=float(ex["M"].median()),
        theory_ty_r1=taylor_terms(8, 1),
        theory_ty_r2=taylor_terms(8, 2),
    )
    return Check({"bound": ty}, glue, None, tested, viol)


# ------------------------------------------------------------------------------ P1'
def _approach(d: pd.DataFrame, lim_row) -> str:
    """From which side the smallest head's mean lies relative to the limit's interval."""
    first = d.sort_values("head_dim").iloc[0]
    if first["ci_high"] < lim_row["ci_low"]:
        return "from below"
    if first["ci_low"] > lim_row["ci_high"]:
        return "from above"
    return "from within the limit's interval"


def p1p_saturation(*, sat_n: int, sat_head_dims, sat_samples: int, seed: int = 0, tol: float = 0.05, **_) -> Check:
    """P1': rank measures saturate in the head dimension toward the i.i.d. limit. Tables ``sat``
    and ``limit``; a violation is a measure whose largest head lies outside the limit's interval
    and more than ``tol`` (relative) from its mean."""
    table = cached(
        "theory_p1p_saturation",
        saturation_table,
        n=sat_n,
        head_dims=list(sat_head_dims),
        samples=sat_samples,
        seed=seed,
    )
    sat, limit = table[np.isfinite(table.head_dim)].copy(), table[~np.isfinite(table.head_dim)].drop(columns="head_dim")
    sat["head_dim"] = sat["head_dim"].astype(int)
    lim_by = limit.set_index("measure")
    viol, far = 0, (-1.0, "", False)
    for m, d in sat.groupby("measure"):
        big, lm = d.sort_values("head_dim").iloc[-1], lim_by.loc[m]
        disjoint = big["ci_high"] < lm["ci_low"] or big["ci_low"] > lm["ci_high"]
        rel = abs(float(big["mean"]) - float(lm["mean"])) / float(lm["mean"])
        viol += int(disjoint and rel > tol)
        far = max(far, (rel, m, not disjoint))
    main = sat[sat.measure == SAT_MEASURES[0]].sort_values("head_dim")
    lim_main, last = lim_by.loc[SAT_MEASURES[0]], main.iloc[-1]
    over = main[main["mean"] > study_bound(sat_n)]
    glue = dict(
        theory_sat_tol_pct=f"{tol:.0%}",
        theory_sat_farthest=(
            f"the farthest, {MEASURE_LABELS[far[1]]}, lies {far[0]:.1%} from its limit"
            + (", with overlapping intervals" if far[2] else "")
        ),
        theory_sat_n=sat_n,
        theory_sat_samples=sat_samples,
        theory_sat_list=", ".join(f"{v:.0f}" for v in main["mean"]),
        theory_sat_dims=", ".join(str(d) for d in main["head_dim"]),
        theory_sat_last_d=int(last["head_dim"]),
        theory_sat_last=float(last["mean"]),
        theory_sat_limit=float(lim_main["mean"]),
        theory_sat_limit_lo=float(lim_main["ci_low"]),
        theory_sat_limit_hi=float(lim_main["ci_high"]),
        theory_sat_limit_frac=float(lim_main["mean"]) / sat_n,
        theory_sat_bound=study_bound(sat_n),
        theory_sat_direction="; ".join(
            f"{MEASURE_LABELS[m]}: {_approach(sat[sat.measure == m], lim_by.loc[m])} "
            f"(limit {lim_by.loc[m, 'mean']:.2f})"
            for m in SAT_MEASURES
        ),
        theory_sat_first_over=(
            f"first exceeds it at d_h = {int(over['head_dim'].iloc[0])}"
            if len(over)
            else "stays below it at every head dimension of the grid"
        ),
    )
    return Check({"sat": sat, "limit": limit}, glue, "p1p", sat.measure.nunique(), viol)


# ------------------------------------------------------------------------------- P2
def _loglog(x, y):
    lx, ly = np.log(x), np.log(y)
    return float(np.polyfit(lx, ly, 1)[0]), float(np.corrcoef(lx, ly)[0, 1])


def p2_hardmax(*, p2_n: int, p2_d: int, p2_inst: int, p2_grid: int, seed: int = 0, eps: float = 1e-2, **_) -> Check:
    """P2: the numerical rank equals the hardmax rank below the predicted threshold, over a grid of
    ``p2_grid`` temperatures in [1e-6, 10]. Tables ``curves`` and ``thresholds``; a violation is
    a grid point below ``tau*_pred`` whose rank is not ``r_H``, a tied row, or a rank at
    ``tau = 1e-5`` (relative or the study's rule) that is not ``r_H``."""
    n = p2_n
    S2 = sample_logits(n, p2_d, p2_inst, generator=generator(seed, 4))
    hr = hardmax_rank(S2)
    taus = torch.logspace(-6, 1, p2_grid, dtype=torch.float64)
    ranks = torch.stack([numerical_rank(softmax_attention(S2, float(t)), rtol=eps) for t in taus], -1)
    tau_pred, tau_meas = hardmax_threshold(S2, eps=eps), measured_threshold(taus, ranks, hr.rank)
    below = taus.unsqueeze(0) <= tau_pred.unsqueeze(-1)
    viol = int((below & (ranks != hr.rank.unsqueeze(-1))).sum()) + int(hr.ties.sum())
    A_tiny = softmax_attention(S2, 1e-5)
    viol += int((numerical_rank(A_tiny, rtol=eps) != hr.rank).sum()) + int((study_rank(A_tiny) != hr.rank).sum())
    A_cold = softmax_attention(S2, 1e-3)
    cold_study, cold_rel = study_rank(A_cold).double(), numerical_rank(A_cold, rtol=eps).double()
    curves = pd.DataFrame(
        [
            dict(
                instance=i,
                tau=float(t),
                rank=int(ranks[i, j]),
                r_H=int(hr.rank[i]),
                rank_ratio=float(ranks[i, j] / hr.rank[i]),
            )
            for i in range(len(S2))
            for j, t in enumerate(taus)
        ]
    )
    thr = pd.DataFrame(
        dict(
            instance=np.arange(len(S2)),
            gap=top_gap(S2).numpy(),
            gap_new=new_column_gap(S2).numpy(),
            tau_pred=tau_pred.numpy(),
            tau_meas=tau_meas.numpy(),
            r_H=hr.rank.numpy(),
        )
    )
    pos = thr[(thr["tau_meas"] > 0) & np.isfinite(thr["gap_new"])]
    above = [
        int(ranks[i][taus > tau_meas[i]][0] > hr.rank[i]) for i in range(len(S2)) if bool((taus > tau_meas[i]).any())
    ]
    slope_top, corr_top = _loglog(pos["gap"], pos["tau_meas"])
    slope_new, corr_new = _loglog(pos["gap_new"], pos["tau_meas"])
    ratio = (pos["tau_meas"] / pos["tau_pred"]).to_numpy()
    glue = dict(
        theory_p2_n=n,
        theory_p2_d=p2_d,
        theory_p2_inst=int(len(S2)),
        theory_p2_grid=p2_grid,
        theory_p2_rH_mean=float(hr.rank.double().mean()),
        theory_p2_ratio_med=float(np.median(ratio)),
        theory_p2_ratio_max=float(ratio.max()),
        theory_p2_slope_top=slope_top,
        theory_p2_corr_top=corr_top,
        theory_p2_slope_new=slope_new,
        theory_p2_corr_new=corr_new,
        theory_p2_new_ratio_med=float(np.median(pos["tau_meas"] / (pos["gap_new"] / math.log(1 / eps)))),
        theory_p2_leave_up=int(sum(above)),
        theory_p2_leave_n=int(len(above)),
        theory_p2_cold_study_frac=float(cold_study.mean() / n),
        theory_p2_cold_rel_frac=float(cold_rel.mean() / n),
        theory_p2_cold_rH_frac=float(hr.rank.double().mean() / n),
        theory_p2_cold_rel_hits=int((cold_rel == hr.rank).sum()),
        theory_p2_cold_study_hits=int((cold_study == hr.rank).sum()),
    )
    return Check({"curves": curves, "thresholds": thr}, glue, "p2", int(below.sum()) + 2 * len(S2), viol)


# ------------------------------------------------------------------------- theorem
def theorem(*, n_values, mc_head_dims, mc_samples: int, seed: int = 0, reach: float = 0.9, **_) -> Check:
    """The study's theorem: the mean hardmax rank stays below ``n(1-(1-1/n)^n) <= (1-1/e)n + 1``
    and grows with the head dimension. Tables ``mc`` and ``refs``; a violation is a mean whose
    interval lies above ``n(1-(1-1/n)^n)``, a rank above 2 at ``d_h = 1``, an i.i.d. interval
    missing ``n(1-(1-1/n)^n)`` or a decrease between neighbouring head dimensions."""
    table = cached(
        "theory_thm_montecarlo",
        hardmax_mc_table,
        n_values=list(n_values),
        head_dims=list(mc_head_dims),
        samples=mc_samples,
        seed=seed,
    )
    mc, iid = table[np.isfinite(table.head_dim)].copy(), table[~np.isfinite(table.head_dim)]
    mc["head_dim"] = mc["head_dim"].astype(int)
    refs = pd.DataFrame(
        [
            dict(
                n=r.n,
                expected_distinct=expected_distinct(r.n),
                study_bound=study_bound(r.n),
                iid_mean=r.mean,
                iid_ci_low=r.ci_low,
                iid_ci_high=r.ci_high,
            )
            for r in iid.itertuples()
        ]
    )
    viol = sum(
        int(r.ci_low > expected_distinct(r.n)) + (int(r.max > 2) if r.head_dim == 1 else 0) for r in mc.itertuples()
    )
    viol += sum(int(not r.iid_ci_low <= r.expected_distinct <= r.iid_ci_high) for r in refs.itertuples())
    for _, d in mc.groupby("n"):
        d = d.sort_values("head_dim")
        viol += int((d["ci_high"].to_numpy()[1:] < d["ci_low"].to_numpy()[:-1]).sum())
    glue = dict(
        theory_thm_ns=fmt_and(n_values),  # "64 and 256"
        theory_thm_samples=mc_samples,
        theory_thm_dmax=int(max(mc_head_dims)),
        theory_thm_reach_pct=f"{reach:.0%}",
    )
    for r in refs.itertuples():
        d = mc[mc.n == r.n].sort_values("head_dim")
        hit = d[d["mean"] >= reach * r.expected_distinct]
        glue.update(
            {
                f"theory_thm_{r.n}_ed": float(r.expected_distinct),
                f"theory_thm_{r.n}_bound": float(r.study_bound),
                f"theory_thm_{r.n}_iid": float(r.iid_mean),
                f"theory_thm_{r.n}_d1": float(d["mean"].iloc[0]),
                f"theory_thm_{r.n}_dmax_mean": float(d["mean"].iloc[-1]),
                f"theory_thm_{r.n}_dmax_frac": float(d["mean"].iloc[-1] / r.n),
                f"theory_thm_{r.n}_d90": int(hit["head_dim"].iloc[0]) if len(hit) else -1,
                f"theory_thm_{r.n}_logn": float(math.log(r.n)),
            }
        )
    return Check({"mc": mc.drop(columns=["max", "ties"]), "refs": refs}, glue, "thm", len(mc) + len(refs), viol)


def verdict(sections: dict, *, mc_samples: int, profile: str) -> tuple[str, str]:
    """The chapter's verdict from its checks: ``not supported`` if any check is violated;
    ``supported`` if the mean hardmax rank at the largest ``n`` grows with the head dimension
    (by more than 3 standard errors) and reaches 95% of ``n(1-(1-1/n)^n)``; else inconclusive.
    Returns ``(status, summary)``."""
    tested = sum(s.tested for s in sections.values() if s.check)
    viol = sum(s.violations for s in sections.values() if s.check)
    mc = sections["thm"].tables["mc"]
    n_big = int(mc.n.max())
    big = mc[mc.n == n_big].sort_values("head_dim")
    ed_big = expected_distinct(n_big)
    grows = bool(big["mean"].iloc[-1] > big["mean"].iloc[0] + 3 * big["sd"].iloc[-1] / math.sqrt(mc_samples))
    saturates = bool(big["mean"].iloc[-1] >= 0.95 * ed_big)
    status = "not supported" if viol > 0 else "supported" if grows and saturates else "inconclusive at this scale"
    sat = sections["p1p"]
    lim, n_sat = sat.glue["theory_sat_limit"], sat.glue["theory_sat_n"]
    summary = (
        f"{tested - viol} of {tested} checks of P0-P2 and of the theorem hold ({profile} profile). "
        f"In the hardmax limit the expected rank stays below n(1-(1-1/n)^n) <= (1-1/e)n+1 and grows with head dimension "
        f"toward it (n = {n_big}: {fmt(float(big['mean'].iloc[0]))} at d_h = {int(big['head_dim'].iloc[0])}, "
        f"{fmt(float(big['mean'].iloc[-1]), 1)} at d_h = {int(big['head_dim'].iloc[-1])}, limit {fmt(ed_big, 1)}). "
        f"The characterisation is specific to tau -> 0: the exact rank is n at every tau > 0 (P0), and at tau = 1 the "
        f"relative 10⁻² count of random attention tends to {fmt(lim / n_sat)} n as d_h grows (P1'), "
        f"{'above' if lim > study_bound(n_sat) else 'not above'} the bound (1-1/e)n+1."
    )
    return status, summary


# --------------------------------------------------------------------------- the chapter
#: The checks of the chapter in its order, and their figures' names (a name of :func:`section_figure`).
CHECKS = ("p0", "p1_staircase", "p1_taylor", "p1p", "p2", "thm")


def finding(sections: dict) -> str:
    """The ``theory`` verdict in one line for the intro's table."""
    t = totals(sections)
    mc = sections["thm"].tables["mc"]
    big = mc[mc.n == mc.n.max()].sort_values("head_dim")
    return (
        f"{t['theory_total_tested'] - t['theory_total_violations']} of {t['theory_total_tested']} checks hold; the "
        f"hardmax rank at n = {int(mc.n.max())} grows from {fmt(float(big['mean'].iloc[0]))} to "
        f"{fmt(float(big['mean'].iloc[-1]), 1)} with the head dimension."
    )


def section(profile: str = "auto", *, seed: int = 0, head_dims=None, mc_samples=None, dataset=None) -> Section:
    """The theory chapter: every check (P0-P2, the theorem) on random instances of the chapter's sizes
    (:func:`sizes`), their figures, the staircase table, the ``theory`` verdict, and the section on sequence
    length (:func:`attnrank.sections.seqlen.section`, its runs trained where missing) with the ``seq_len`` verdict.

    Raises:
        ConfigError: naming a parameter outside its range.
    """
    profile = resolve_profile(profile)
    sz = sizes(profile, head_dims=head_dims, mc_samples=mc_samples)
    threads = torch.get_num_threads()
    if profile != "paper":
        torch.set_num_threads(1)  # small matrices on a shared CPU: more threads only spin-wait
    try:
        checks = {
            "p0": p0(**sz, seed=seed),
            "p1_staircase": p1_staircase(**sz, seed=seed),
            "p1_taylor": p1_taylor(**sz, seed=seed),
            "p1p": p1p_saturation(**sz, seed=seed),
            "p2": p2_hardmax(**sz, seed=seed),
            "thm": theorem(**sz, seed=seed),
        }
    finally:
        torch.set_num_threads(threads)
    checks["p1"] = merge("p1", checks["p1_staircase"], checks["p1_taylor"])
    glue = {"theory_profile": profile}
    for c in checks.values():
        glue.update(c.glue)
    glue.update(totals(checks))
    figures = []
    for name in CHECKS:
        fig, data, key, source = section_figure(name, checks[name], sz)
        figures.append(Figure(key, fig, data, source))
    status, summary = verdict(checks, mc_samples=sz["mc_samples"], profile=profile)
    t = totals(checks)
    theory = Verdict(
        "theory",
        status,
        finding(checks),
        f"{t['theory_total_violations']} violations",
        f"{t['theory_total_tested']} checks",
        f"random attention matrices, no training ({base_profile_words(profile)})",
        summary,
    )
    blocks = checks["p1_staircase"].tables["blocks"]
    sec = Section(
        "theory", glue, figures, [Table("theory_staircase_blocks", _reader_columns(blocks), digits=4)], [theory]
    )
    return sec.merge(seq_len_section(profile, dataset=dataset))


def base_profile_words(profile: str) -> str:
    """The sizes the chapter's random instances were drawn at, in words: those of ``profile``'s
    :func:`attnrank.core.profiles.base_profile` (the scale profile draws at the quick profile's sizes)."""
    return f"the {base_profile(profile)} profile's sizes"


def _reader_columns(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.rename(columns={c: c.replace("_", " ") for c in frame.columns})
