"""Figures of the ``theory`` and ``target`` chapters (seaborn, the book's theme).

Every function takes tidy pandas data (one row per observation), returns a matplotlib
``Figure`` and never changes the theme (:func:`attnrank.plots.set_theme` is applied once
by :func:`attnrank.plots.new_figure`). Column names are listed in each docstring.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.colors import LogNorm

from ..core.errors import ConfigError
from ..words.glossary import fmt_setting
from . import cell_labels_fit, figure, figure_legend, new_figure
from .style import MIN_FONT_SIZE, PALETTE, SYMBOLS, axis_label, check_columns, decade_labels, measure_label

__all__ = [
    "exact_spectrum",
    "staircase",
    "taylor_bound",
    "saturation",
    "hardmax_convergence",
    "hardmax_monte_carlo",
    "toy_heatmaps",
    "toy_kl_vs_tau",
    "toy_curves",
    "rank_vs_kl",
    "section_figure",
]


def _need(df: pd.DataFrame, cols, name: str = "data") -> None:
    check_columns(df, cols, name)


def _dim_palette(dims) -> dict:
    """One colour per head dimension (categorical, ordered along viridis)."""
    dims = sorted(pd.unique(dims))
    return dict(zip(dims, sns.color_palette("viridis", len(dims))))


# ----------------------------------------------------------------------------- theory
@figure
def exact_spectrum(df: pd.DataFrame, tolerances: dict[str, float] | None = None):
    """P0: ``log10`` singular values against their index, exact (mpmath) and float64.

    Columns: ``k`` (1-based index), ``log10_sigma``, ``method``, ``instance``.
    ``tolerances``: optional ``{label: log10 threshold}`` drawn as horizontal lines.
    """
    _need(df, ["k", "log10_sigma", "method", "instance"])
    fig, ax = new_figure(width=6.0, height=3.6)
    sns.lineplot(
        data=df,
        x="k",
        y="log10_sigma",
        hue="method",
        style="method",
        units="instance",
        estimator=None,
        markers=True,
        dashes=False,
        markersize=3,
        linewidth=0.9,
        ax=ax,
        palette=PALETTE,
    )
    for i, (label, y) in enumerate((tolerances or {}).items()):
        ax.axhline(y, color="0.35", lw=0.8, ls=(0, (4, 2 + 2 * i)))
        ax.text(df["k"].min(), y, f" {label}", va="bottom", ha="left", fontsize=MIN_FONT_SIZE, color="0.25")
    ax.set_xlabel("index k of the singular value")
    ax.set_ylabel(r"$\log_{10}\sigma_k(A)$")
    ax.legend(title=None, fontsize=MIN_FONT_SIZE)
    return fig


@figure
def staircase(sv: pd.DataFrame, slopes: pd.DataFrame):
    """P1: singular values of ``softmax(beta S0)`` against ``beta`` and their fitted exponents.

    ``sv`` columns: ``beta``, ``k``, ``sigma``, ``block`` (predicted exponent m).
    ``slopes`` columns: ``k``, ``slope`` (measured), ``predicted`` (m(k)), ``clean`` (bool:
    away from the float64 floor).
    """
    _need(sv, ["beta", "k", "sigma", "block"], "sv")
    _need(slopes, ["k", "slope", "predicted", "clean"], "slopes")
    fig, (a, b) = new_figure(2, width=4.4, height=3.5)
    blocks = sorted(sv["block"].unique())
    pal = dict(zip(blocks, sns.color_palette("viridis", len(blocks))))
    sns.lineplot(
        data=sv,
        x="beta",
        y="sigma",
        hue="block",
        units="k",
        estimator=None,
        palette=pal,
        linewidth=0.8,
        ax=a,
        legend="full",
    )
    a.set(
        xscale="log",
        yscale="log",
        xlabel=r"logit scale $\beta$ (dimensionless)",
        ylabel=r"$\sigma_k(\mathrm{softmax}(\beta S_0))$",
    )
    blocks_legend = a.get_legend_handles_labels()[0]
    a.get_legend().remove()
    for h in blocks_legend:
        h.set_label(f"block $m = {h.get_label()}$")
    cl = slopes[slopes["clean"]]
    b.step(slopes["k"], slopes["predicted"], where="mid", color="0.3", lw=1.2, label="predicted m(k)")
    b.scatter(cl["k"], cl["slope"], s=10, color=sns.color_palette(PALETTE)[1], label="measured slope", zorder=3)
    nc = slopes[~slopes["clean"]]
    if len(nc):
        b.scatter(nc["k"], nc["slope"], s=10, facecolors="none", edgecolors="0.6", label="at float64 floor")
    b.set(xlabel="index k", ylabel=r"exponent of $\beta$ in $\sigma_k$")
    # one legend below both panels: inside them, it hid singular values and slopes
    figure_legend(fig, blocks_legend + b.get_legend_handles_labels()[0], max_cols=5)
    return fig


@figure
def taylor_bound(df: pd.DataFrame):
    """P1: measured ``rank_eps`` against the Taylor bound, one point per instance.

    Columns: ``bound``, ``measured``, ``head_dim``, ``eps`` (label), ``n``.
    """
    _need(df, ["bound", "measured", "head_dim", "eps", "n"])
    epss = list(dict.fromkeys(df["eps"]))
    fig, axes = new_figure(len(epss), width=3.8, height=3.5, squeeze=False)
    for ax, e in zip(axes[0], epss):
        d = df[df["eps"] == e]
        sns.scatterplot(
            data=d,
            x="bound",
            y="measured",
            hue="head_dim",
            palette=_dim_palette(df["head_dim"]),
            s=22,
            ax=ax,
            legend=ax is axes[0][-1],
            alpha=0.8,
        )
        hi = max(d["bound"].max(), d["measured"].max()) * 1.1
        ax.plot([0.8, hi], [0.8, hi], color="0.3", lw=0.8, ls="--")
        ax.set(
            xscale="log",
            yscale="log",
            title=f"tolerance {e}",
            xlabel="Taylor bound (P1), count",
            ylabel="measured numerical rank, count",
        )
        decade_labels(ax, y=True)  # both axes alike, for the equality line
    if axes[0][-1].get_legend():  # below the panels: inside, it hid a point and ran past the axes
        handles = axes[0][-1].get_legend_handles_labels()[0]
        axes[0][-1].get_legend().remove()
        for h in handles:
            h.set_label(f"{SYMBOLS['head_dim']} = {h.get_label()}")
        figure_legend(fig, handles, max_cols=4)
    return fig


@figure
def saturation(df: pd.DataFrame, limit: pd.DataFrame):
    """P1': mean rank measure against head dimension, with the i.i.d. Gaussian limit.

    ``df`` columns: ``head_dim``, ``measure``, ``mean``, ``ci_low``, ``ci_high``.
    ``limit`` columns: ``measure``, ``mean``, ``ci_low``, ``ci_high``.
    """
    _need(df, ["head_dim", "measure", "mean", "ci_low", "ci_high"])
    _need(limit, ["measure", "mean", "ci_low", "ci_high"], "limit")
    fig, ax = new_figure(width=5.6, height=3.6)
    colors = dict(zip(dict.fromkeys(df["measure"]), sns.color_palette(PALETTE)))
    for m, d in df.groupby("measure", sort=False):
        d = d.sort_values("head_dim")
        ax.errorbar(
            d["head_dim"],
            d["mean"],
            yerr=[d["mean"] - d["ci_low"], d["ci_high"] - d["mean"]],
            marker="o",
            ms=4,
            capsize=2,
            color=colors[m],
            label=measure_label(m),
        )
        lim = limit[limit["measure"] == m]
        if len(lim):
            ax.axhspan(float(lim["ci_low"].iloc[0]), float(lim["ci_high"].iloc[0]), color=colors[m], alpha=0.2, lw=0)
            ax.axhline(float(lim["mean"].iloc[0]), color=colors[m], ls="--", lw=0.9)
    ax.set_xscale("log", base=2)
    ax.set(xlabel=axis_label("head_dim"), ylabel="rank measure (mean, 95% CI), count")
    handles = ax.get_legend_handles_labels()[0]  # below the panel: inside, it hid a dashed limit
    figure_legend(fig, handles, max_cols=3, title="dashed: i.i.d. Gaussian limit", title_fontsize=MIN_FONT_SIZE)
    return fig


@figure
def hardmax_convergence(curves: pd.DataFrame, thresholds: pd.DataFrame, eps: float = 1e-2):
    """P2: rank against temperature converging to ``r_H``; thresholds against logit gaps.

    ``curves`` columns: ``tau``, ``instance``, ``rank_ratio`` (measured rank / ``r_H``).
    ``thresholds`` columns: ``gap`` (smallest top-1 minus top-2 logit gap), ``gap_new``
    (smallest gap to an unused column), ``tau_pred`` (certified), ``tau_meas`` (grid).
    """
    _need(curves, ["tau", "instance", "rank_ratio"], "curves")
    _need(thresholds, ["gap", "gap_new", "tau_pred", "tau_meas"], "thresholds")
    fig, (a, b) = new_figure(2, width=4.6, height=3.6)
    sns.lineplot(
        data=curves,
        x="tau",
        y="rank_ratio",
        units="instance",
        estimator=None,
        lw=0.6,
        alpha=0.5,
        color=sns.color_palette(PALETTE)[0],
        ax=a,
    )
    a.axhline(1.0, color="0.2", lw=0.9, ls="--")
    a.set(xscale="log", xlabel=axis_label("tau"), ylabel=r"rank$_\varepsilon(A)$ / hardmax rank $r_H$")
    t = thresholds[thresholds["tau_meas"] > 0]
    pts = pd.concat(
        [
            pd.DataFrame({"gap": t["gap"], "tau": t["tau_pred"], "series": r"certified $\tau^*$ vs top-2 gap"}),
            pd.DataFrame({"gap": t["gap"], "tau": t["tau_meas"], "series": r"measured $\tau^*$ vs top-2 gap"}),
            pd.DataFrame(
                {"gap": t["gap_new"], "tau": t["tau_meas"], "series": r"measured $\tau^*$ vs unused-column gap"}
            ),
        ],
        ignore_index=True,
    )
    sns.scatterplot(data=pts, x="gap", y="tau", hue="series", style="series", s=20, ax=b, palette=PALETTE, alpha=0.8)
    lo, hi = pts["gap"].min(), pts["gap"].max()
    g = np.geomspace(lo, hi, 10)
    b.plot(g, g / np.log(1 / eps), color="0.4", lw=0.8, ls=":", label=r"$g/\log(1/\varepsilon)$")
    b.set(xscale="log", yscale="log", xlabel="logit gap g (logit units)", ylabel=r"threshold $\tau^*$")
    b.legend(fontsize=MIN_FONT_SIZE)
    return fig


@figure
def hardmax_monte_carlo(df: pd.DataFrame, refs: pd.DataFrame):
    """The study's theorem: ``E[r_H] / n`` against head dimension, per ``n``.

    ``df`` columns: ``n``, ``head_dim``, ``mean``, ``ci_low``, ``ci_high`` (of ``r_H``).
    ``refs`` columns: ``n``, ``expected_distinct``, ``study_bound``, optional ``iid_mean``.
    """
    _need(df, ["n", "head_dim", "mean", "ci_low", "ci_high"])
    _need(refs, ["n", "expected_distinct", "study_bound"], "refs")
    fig, ax = new_figure(width=5.8, height=3.7)
    colors = dict(zip(sorted(df["n"].unique()), sns.color_palette(PALETTE)))
    for n, d in df.groupby("n"):
        d = d.sort_values("head_dim")
        ax.errorbar(
            d["head_dim"],
            d["mean"] / n,
            yerr=[(d["mean"] - d["ci_low"]) / n, (d["ci_high"] - d["mean"]) / n],
            marker="o",
            ms=4,
            capsize=2,
            color=colors[n],
            label=f"$n = {n}$: Monte Carlo",
        )
        r = refs[refs["n"] == n].iloc[0]
        ax.axhline(r["expected_distinct"] / n, color=colors[n], ls="--", lw=0.9, label=f"$n = {n}$: $1 - (1 - 1/n)^n$")
        ax.axhline(r["study_bound"] / n, color=colors[n], ls=":", lw=1.1, label=f"$n = {n}$: $1 - 1/e + 1/n$")
    ax.set_xscale("log", base=2)
    ax.set(xlabel=axis_label("head_dim"), ylabel=r"hardmax rank $r_H / n$ (mean, 95% CI)")
    figure_legend(fig, ax.get_legend_handles_labels()[0], max_cols=3)  # below: inside, it hid the estimates
    return fig


# ----------------------------------------------------------------------------- target
@figure
def toy_heatmaps(
    df: pd.DataFrame,
    value: str,
    *,
    log: bool = False,
    fmt: str = ".2f",
    label: str | None = None,
    row: str = "variant",
    col: str = "target",
    mark_tau: float | None = 1.0,
):
    """Heat maps of the seed-mean of ``value`` over (``tau``, ``head_dim``), one panel per (row, col).

    Columns: ``tau``, ``head_dim``, ``value``, ``row``, ``col``. ``log``: log colour scale.
    ``mark_tau``: outline that column (the standard ``tau = 1``).
    """
    _need(df, ["tau", "head_dim", value, row, col])
    rows, cols = list(dict.fromkeys(df[row])), list(dict.fromkeys(df[col]))
    fig, axes = new_figure(len(cols), len(rows), width=3.9, height=3.0, squeeze=False)
    mean = df.groupby([row, col, "head_dim", "tau"], as_index=False)[value].mean()
    vmin, vmax = mean[value].min(), mean[value].max()
    norm = LogNorm(vmin=max(vmin, 1e-4), vmax=max(vmax, 1e-3)) if log else None
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            ax = axes[i][j]
            piv = mean[(mean[row] == r) & (mean[col] == c)].pivot(index="head_dim", columns="tau", values=value)
            piv = piv.sort_index(ascending=False)
            data = piv.clip(lower=1e-4) if log else piv
            text = np.vectorize(lambda x: "<1e-4" if log and x < 1e-4 else format(x, fmt))(piv.to_numpy())
            sns.heatmap(
                data,
                ax=ax,
                cmap="mako_r" if log else "viridis",
                norm=norm,
                vmin=None if log else vmin,
                vmax=None if log else vmax,
                annot=text if cell_labels_fit(ax, piv.shape[1], text) else False,
                fmt="",
                annot_kws={"fontsize": MIN_FONT_SIZE},
                cbar=j == len(cols) - 1,
                cbar_kws={"label": label or value},
            )
            # upright: three panels a row leave a cell narrower than "0.03" (the labels ran together)
            ax.set_xticklabels(
                [fmt_setting(float(t.get_text())) for t in ax.get_xticklabels()], rotation=90, fontsize=MIN_FONT_SIZE
            )
            ax.set_title(f"{r}, {c}", fontsize=9)
            ax.set_xlabel(axis_label("tau") if i == len(rows) - 1 else "")
            ax.set_ylabel(axis_label("head_dim") if j == 0 else "")
            if mark_tau is not None and mark_tau in list(piv.columns):
                x = list(piv.columns).index(mark_tau)
                ax.add_patch(plt.Rectangle((x, 0), 1, len(piv), fill=False, lw=1.6, ec="crimson"))
    return fig


@figure
def toy_kl_vs_tau(df: pd.DataFrame, *, floor: pd.DataFrame | None = None, kl_min: float = 1e-6):
    """Final KL against ``tau`` per head dimension, one panel per variant (mean and +-2 SE over seeds).

    ``df`` columns: ``tau``, ``kl``, ``head_dim``, ``variant``. ``floor`` (optional) columns:
    ``tau``, ``kl``, ``curve`` (e.g. the P5 floor and the simplex value), drawn in the
    ``normalised`` panel. Values below ``kl_min`` nats are drawn at ``kl_min``.
    """
    _need(df, ["tau", "kl", "head_dim", "variant"])
    variants = list(dict.fromkeys(df["variant"]))
    fig, axes = new_figure(len(variants), width=4.4, height=3.5, squeeze=False, sharey=True)
    df = df.assign(kl=df["kl"].clip(lower=kl_min))
    for ax, v in zip(axes[0], variants):
        d = df[df["variant"] == v]
        sns.lineplot(
            data=d,
            x="tau",
            y="kl",
            hue="head_dim",
            palette=_dim_palette(df["head_dim"]),
            marker="o",
            ms=4,
            errorbar=("se", 2),
            ax=ax,
            legend=ax is axes[0][-1],
        )
        if floor is not None and v == "normalised":
            for k, (name, f) in enumerate(floor.groupby("curve", sort=False)):
                ax.plot(
                    f["tau"], f["kl"].clip(lower=kl_min), color="crimson", lw=1.0, ls=["--", ":"][k % 2], label=name
                )
        ax.axvline(1.0, color="0.5", lw=0.8, ls="--")
        ax.set(
            xscale="log",
            yscale="log",
            title=f"{v} attention",
            xlabel=axis_label("tau"),
            ylabel="final KL to target (nats)",
        )
        decade_labels(ax)
    axes[0][0].set_ylim(kl_min / 2, float(df.groupby(["variant", "head_dim", "tau"])["kl"].mean().max()) * 2)
    handles = axes[0][-1].get_legend_handles_labels()[0]
    axes[0][-1].get_legend().remove()  # below the panels: inside, it sat on the curves where they meet the floor
    for h in handles:
        if h.get_label() in {str(d) for d in df["head_dim"].unique()}:
            h.set_label(f"{SYMBOLS['head_dim']} = {h.get_label()}")
    figure_legend(fig, handles, max_cols=4)
    return fig


@figure
def toy_curves(curves: pd.DataFrame, cells: list[tuple[str, int]]):
    """Training curves (KL against step, seed mean and +-2 SE) for chosen (variant, head_dim) cells, hue = tau.

    Columns: ``variant``, ``head_dim``, ``tau``, ``seed``, ``step``, ``kl``.
    """
    _need(curves, ["variant", "head_dim", "tau", "seed", "step", "kl"], "curves")
    if not cells:
        raise ConfigError("cells", "expected at least one (variant, head_dim) cell")
    fig, axes = new_figure(len(cells), width=3.6, height=3.2, squeeze=False, sharey=True)
    taus = sorted(curves["tau"].unique())
    pal = dict(zip(taus, sns.color_palette("rocket", len(taus))))
    for ax, (v, d) in zip(axes[0], cells):
        c = curves[(curves["variant"] == v) & (curves["head_dim"] == d)]
        sns.lineplot(
            data=c,
            x="step",
            y="kl",
            hue="tau",
            palette=pal,
            errorbar=("se", 2),
            lw=1.0,
            ax=ax,
            legend=ax is axes[0][-1],
        )
        ax.set(
            yscale="log", title=f"{v}, {SYMBOLS['head_dim']} = {d}", xlabel="Adam step", ylabel="KL to target (nats)"
        )
    last = axes[0][-1]
    if last.get_legend():
        handles = last.get_legend_handles_labels()[0]
        last.get_legend().remove()
        # below the panels: inside the last one it covered the coldest curve where it falls (target chapter)
        figure_legend(fig, handles, max_cols=len(handles), title=r"$\tau$", title_fontsize=MIN_FONT_SIZE)
    return fig


@figure
def rank_vs_kl(df: pd.DataFrame, *, n: int | None = None):
    """Achieved rank against final KL, one point per run (hue = variant, style = target).

    Columns: ``rank``, ``kl``, ``variant``, ``target``.
    """
    _need(df, ["rank", "kl", "variant", "target"])
    fig, ax = new_figure(width=5.4, height=3.7)
    sns.scatterplot(data=df, x="kl", y="rank", hue="variant", style="target", s=18, alpha=0.7, ax=ax, palette=PALETTE)
    if n is not None:
        ax.axhline(n, color="0.4", lw=0.8, ls="--")
    ax.set(xscale="log", xlabel="final KL to target (nats)", ylabel="achieved rank (rtol 1e-2), count")
    ax.legend(fontsize=MIN_FONT_SIZE)
    return fig


def _p0_figure(sec, z):
    p0 = sec.tables["spectrum"]
    fig = exact_spectrum(p0, {r"float64 resolution, $\log_{10}(n\varepsilon)$": math.log10(z["p0_n"] * 2.0**-52)})
    return fig, p0, "theory_p0_spectrum"


def _staircase_figure(sec, z):
    sv, slopes = sec.tables["sv"], sec.tables["slopes"]
    data = pd.concat([sv.assign(kind="sigma"), slopes.assign(kind="slope")], ignore_index=True)
    return staircase(sv, slopes), data, "theory_p1_staircase"


def _taylor_figure(sec, z):
    bound = sec.tables["bound"]
    return taylor_bound(bound), bound, "theory_p1_bound"


def _saturation_figure(sec, z):
    sat, limit = sec.tables["sat"], sec.tables["limit"]
    data = pd.concat([sat, limit.assign(head_dim=float("inf"))], ignore_index=True)
    return saturation(sat, limit), data, "theory_p1p_saturation"


def _hardmax_figure(sec, z):
    curves, thr = sec.tables["curves"], sec.tables["thresholds"]
    fig = hardmax_convergence(curves, thr, eps=1e-2)
    return fig, curves.merge(thr, on=["instance", "r_H"]), "theory_p2_hardmax"


def _theorem_figure(sec, z):
    mc, refs = sec.tables["mc"], sec.tables["refs"]
    return hardmax_monte_carlo(mc, refs), mc.merge(refs, on="n"), "theory_thm_montecarlo"


_SECTION_FIGURES = {
    "p0": _p0_figure,
    "p1_staircase": _staircase_figure,
    "p1_taylor": _taylor_figure,
    "p1p": _saturation_figure,
    "p2": _hardmax_figure,
    "thm": _theorem_figure,
}


@figure
def section_figure(name: str, section, sizes: dict):
    """The theory chapter's figure of one check: ``(figure, data, glue name, source)`` for :func:`attnrank.book.show`.

    Args:
        name: the check, one of ``p0``, ``p1_staircase``, ``p1_taylor``, ``p1p``, ``p2``, ``thm``.
        section: the :class:`attnrank.sections.theory.Check` that check returned (its
            ``tables`` are drawn: ``spectrum``; ``sv`` and ``slopes``; ``bound``; ``sat`` and
            ``limit``; ``curves`` and ``thresholds``; ``mc`` and ``refs``).
        sizes: the chapter's sizes (``attnrank.runs.presets.preset("theory", profile)``).

    The data is the table the figure draws (two tables concatenated or merged where it draws two). The caption
    is the chapter's (its sizes pasted from the checks' glue); no word of it depends on the result, so
    ``source`` is ``""``.

    Raises:
        ConfigError: naming ``name`` for an unknown check.
    """
    if name not in _SECTION_FIGURES:
        raise ConfigError("name", f"got {name!r}; allowed values: {', '.join(_SECTION_FIGURES)}")
    return (*_SECTION_FIGURES[name](section, sizes), "")
