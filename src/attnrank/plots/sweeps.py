"""Figures of the sweep chapters (temperature and head dimension).

Every function takes tidy (long) pandas data, one row per observation, and returns a
matplotlib ``Figure``. Seeds are summarised as mean +- standard deviation (error bars or
bands); single seeds are drawn as faint dots; failed (diverged) runs are drawn with a
red cross, never dropped. A *highlighted* setting (the chapter's detailed ``tau``) is drawn
bold, the *baseline* (``tau = 1``, the stock transformer) bold and dashed.

* :func:`by_setting`: a value against a swept setting (``tau`` or ``head_dim``), one panel
  per measure, hue = architecture, optional line style (initial / final), optional
  reference curves (theory);
* curves over training steps are drawn by :func:`attnrank.plots.training.trajectories`;
* :func:`per_layer`: a value per layer, hue = ``tau``, style = initial / final;
* :func:`effect_forest`: effect sizes with confidence intervals on one common scale.
"""

from __future__ import annotations

import math

import matplotlib as mpl
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D

from ..words.glossary import ARCH_LABELS, fmt_setting
from . import PALETTE, figure, figure_legend, new_figure
from .style import (
    BASELINE_COLOR,
    FAILED_COLOR,
    FAILED_MARKER,
    FONT_SIZE,
    HIGHLIGHT_COLOR,
    LABELS,
    SYMBOLS,
    decade_labels,
    measure_label,
)

__all__ = [
    "arch_color",
    "setting_label",
    "by_setting",
    "per_layer",
    "effect_forest",
    "reference_lines",
    "limit_lines",
    "HIGHLIGHT_COLOR",
    "BASELINE_COLOR",
    "FAILED_COLOR",
]

_STYLES = ["-", "--", ":", "-."]
_MARKERS = ["o", "s", "^", "D"]
_REF_STYLES = [(0, (1, 1.5)), "-.", (0, (5, 2, 1, 2, 1, 2)), (0, (3, 1))]

_SETTING_LABELS = LABELS


def arch_color(arch: str):
    """The colour of an architecture (``bert`` first, ``gpt2`` second colour of the palette)."""
    pal = sns.color_palette(PALETTE)
    return pal[list(ARCH_LABELS).index(arch)] if arch in ARCH_LABELS else pal[2 + abs(hash(arch)) % 6]


def setting_label(x: str) -> str:
    """Axis label of a swept setting."""
    return _SETTING_LABELS.get(x, x)


_SYMBOLS = SYMBOLS


def _is_close(a, b) -> bool:
    return b is not None and math.isclose(float(a), float(b), rel_tol=1e-6)


def _set_xscale(ax, x: str, values) -> None:
    values = np.asarray(sorted(set(float(v) for v in values if np.isfinite(v))))
    if x == "head_dim":
        ax.set_xscale("log", base=2)
        ax.set_xticks(values)
        ax.xaxis.set_major_formatter(mpl.ticker.FuncFormatter(lambda v, _: fmt_setting(v)))
        ax.xaxis.set_minor_locator(mpl.ticker.NullLocator())
    elif x == "tau":
        ax.set_xscale("log")
        decade_labels(ax)
    if len(values) > 1:
        lo, hi = values.min(), values.max()
        pad = (hi / lo) ** 0.06 if lo > 0 else 1.0
        ax.set_xlim(lo / pad, hi * pad)


def _summarise(d: pd.DataFrame, keys: list[str], y: str) -> pd.DataFrame:
    g = d.groupby(keys, dropna=False)[y]
    out = g.agg(["mean", "count"]).reset_index()
    out["sd"] = g.std(ddof=1).reset_index(drop=True).fillna(0.0).to_numpy()
    return out


def _draw_series(ax, ok, x, y, hue, style, hues, styles, colors, offsets, highlight, handles) -> None:
    """One panel's means over seeds (+-1 sd) and the seeds' points, one series per ``hue`` and ``style``, dodged on a
    log axis; the ``highlight`` setting's means ringed. Adds each series' legend entry to ``handles``."""
    for h in hues:
        for s in styles:
            part = ok[(ok[hue] == h) & ((ok[style] == s) if style else True)]
            if part.empty:
                continue
            summ = _summarise(part, [x], y).sort_values(x)
            si = styles.index(s)
            ls, mk = _STYLES[si % len(_STYLES)], _MARKERS[si % len(_MARKERS)]
            face = colors[h] if si == 0 else "white"
            # a small multiplicative dodge so the error bars of the styles do not hide each other
            xs = summ[x].to_numpy(float) * (2 ** offsets[s] if x in ("tau", "head_dim") else 1)
            label = ARCH_LABELS.get(h, str(h)) + (f", {s}" if style else "")
            ax.errorbar(
                xs,
                summ["mean"],
                yerr=summ["sd"],
                color=colors[h],
                ls=ls,
                marker=mk,
                mfc=face,
                ms=5,
                lw=1.6,
                capsize=2.5,
                elinewidth=1.0,
                label=label,
            )
            handles.setdefault(label, Line2D([], [], color=colors[h], ls=ls, marker=mk, mfc=face, lw=1.6, label=label))
            jitter = part[x].to_numpy(float) * (2 ** offsets[s] if x in ("tau", "head_dim") else 1)
            ax.scatter(jitter, part[y], s=9, color=colors[h], alpha=0.35, lw=0, zorder=1)
            if highlight is not None:
                hl = summ[np.isclose(summ[x].astype(float), float(highlight), rtol=1e-6)]
                if len(hl):
                    ax.plot(
                        hl[x].astype(float) * (2 ** offsets[s] if x in ("tau", "head_dim") else 1),
                        hl["mean"],
                        ls="none",
                        marker=mk,
                        ms=10,
                        mfc=face,
                        mec=HIGHLIGHT_COLOR,
                        mew=2.2,
                        zorder=5,
                        gid="highlight",
                    )


def _draw_failed(ax, sub, x, y, handles) -> None:
    """One panel's failed (diverged) runs as red crosses, at the top edge where a run has no finite value."""
    failed = sub[sub.status == "failed"]
    if len(failed):
        yv = pd.to_numeric(failed[y], errors="coerce").to_numpy(float)
        fin = np.isfinite(yv)
        cross = dict(marker=FAILED_MARKER, s=40, color=FAILED_COLOR, lw=1.8, zorder=6, gid="failed")
        if fin.any():
            ax.scatter(failed[x].astype(float)[fin], yv[fin], **cross)
        if (~fin).any():  # a diverged run has no finite value: mark it at the top edge of the panel
            top = mpl.transforms.blended_transform_factory(ax.transData, ax.transAxes)
            ax.scatter(
                failed[x].astype(float)[~fin], np.full((~fin).sum(), 0.97), **cross, transform=top, clip_on=False
            )
        handles.setdefault(
            "failed run",
            Line2D([], [], color=FAILED_COLOR, marker=FAILED_MARKER, ls="none", mew=1.8, label="failed (diverged) run"),
        )


def _draw_refs(ax, r_sub, ref_labels, colors, handles) -> None:
    """One panel's reference curves (``x`` given) and lines (no ``x``), one line style per label, coloured by
    ``hue`` (grey without one)."""
    for lab in ref_labels:
        rl = r_sub[r_sub["label"] == lab]
        if rl.empty:
            continue
        rs = _REF_STYLES[ref_labels.index(lab) % len(_REF_STYLES)]
        for hv in dict.fromkeys(rl["hue"].astype(object).where(rl["hue"].notna(), None)):
            grp = rl[rl["hue"].isna()] if hv is None else rl[rl["hue"] == hv]
            c = "0.45" if hv is None else colors.get(hv, arch_color(hv) if hv in ARCH_LABELS else "0.45")
            if grp["x"].notna().any():
                g = grp.sort_values("x")
                ax.plot(g["x"].astype(float), g["value"], color=c, ls=rs, lw=1.3, alpha=0.9, zorder=0.5, gid="ref")
            else:
                for v in grp["value"]:
                    ax.axhline(float(v), color=c, ls=rs, lw=1.3, alpha=0.9, zorder=0.5, gid="ref")
        handles.setdefault("ref:" + lab, Line2D([], [], color="0.35", ls=rs, lw=1.3, label=lab))


@figure
def by_setting(
    data: pd.DataFrame,
    x: str = "tau",
    y: str = "value",
    *,
    facet: str | None = "measure",
    hue: str = "arch",
    style: str | None = None,
    seed: str = "seed",
    highlight=None,
    baseline=None,
    refs: pd.DataFrame | None = None,
    ncols: int = 3,
    width: float = 3.5,
    height: float = 2.8,
    ylabel: str | None = None,
    sharey: bool = False,
    legend: bool = True,
    title: str | None = None,
):
    """A value against a swept setting: mean over seeds with +-1 sd error bars.

    Args:
        data: tidy rows with columns ``x``, ``y``, ``hue``, ``seed``, optional ``facet``,
            ``style`` and ``status`` (``"failed"`` rows are drawn as red crosses and left
            out of the means).
        x: the setting (``"tau"`` or ``"head_dim"`` get log axes).
        facet: one panel per value of this column (for example ``measure``), or None.
        hue: colour (``arch`` uses the book's architecture colours).
        style: optional column whose values get solid / dashed lines and filled / open
            markers (for example ``when`` = initial / final).
        highlight: a value of ``x`` drawn as a bold red vertical line with large markers.
        baseline: a value of ``x`` drawn as a dashed black vertical line (``tau = 1``).
        refs: reference curves, columns ``label``, ``value``, optional ``facet`` column
            (same name as ``facet``), ``x`` (NaN or missing: a horizontal line) and ``hue``
            (NaN: grey); one line style per label.
        ncols, width, height: panel grid and size (inches per panel).
        title: optional title of the whole figure (``suptitle``, medium font).

    Returns:
        The figure; each panel has an x label, a y label, and the legend is attached to the
        figure (``fig.legends``).
    """
    d = data.copy()
    if "status" not in d:
        d["status"] = "complete"
    facets = list(dict.fromkeys(d[facet])) if facet else [None]
    n = len(facets)
    ncols = max(1, min(ncols, n))
    nrows = math.ceil(n / ncols)
    fig, axes = new_figure(ncols, nrows, width=width, height=height, squeeze=False, sharey=sharey)
    axes_flat = axes.ravel()
    for ax in axes_flat[n:]:
        ax.remove()
    hues = list(dict.fromkeys(d[hue]))
    styles = list(dict.fromkeys(d[style])) if style else [None]
    colors = {h: (arch_color(h) if hue == "arch" else sns.color_palette(PALETTE)[i % 10]) for i, h in enumerate(hues)}
    ref_labels = []
    if refs is not None and len(refs):
        refs = refs.copy()
        for c in ("x", "hue"):
            if c not in refs:
                refs[c] = np.nan
        ref_labels = list(dict.fromkeys(refs["label"]))
    handles: dict[str, Line2D] = {}
    n_styles = max(1, len(styles))
    offsets = {s: (i - (n_styles - 1) / 2) * 0.035 for i, s in enumerate(styles)}
    for ax, f in zip(axes_flat, facets):
        sub = d if f is None else d[d[facet] == f]
        ok = sub[sub.status != "failed"]
        _draw_series(ax, ok, x, y, hue, style, hues, styles, colors, offsets, highlight, handles)
        _draw_failed(ax, sub, x, y, handles)
        if refs is not None and len(refs):
            _draw_refs(
                ax, refs if (f is None or facet not in refs) else refs[refs[facet] == f], ref_labels, colors, handles
            )
        if baseline is not None:
            ax.axvline(float(baseline), color=BASELINE_COLOR, ls="--", lw=1.5, alpha=0.9, zorder=1.5, gid="baseline")
        if highlight is not None:
            ax.axvline(float(highlight), color=HIGHLIGHT_COLOR, ls="-", lw=2.6, alpha=0.45, zorder=0.3, gid="highlight")
        _set_xscale(ax, x, d[x])
        ax.set_xlabel(setting_label(x))
        ax.set_ylabel(ylabel or measure_label(f if f is not None else y))
        if f is not None and facet == "arch":
            ax.set_title(ARCH_LABELS.get(f, str(f)), fontsize=FONT_SIZE)
        elif f is not None and facet != "measure":
            ax.set_title(f"{facet} = {fmt_setting(f)}", fontsize=FONT_SIZE)
    if baseline is not None:
        handles["baseline"] = Line2D(
            [],
            [],
            color=BASELINE_COLOR,
            ls="--",
            lw=1.4,
            label=f"baseline {_SYMBOLS.get(x, x)} = {fmt_setting(baseline)}",
        )
    if highlight is not None:
        handles["highlight"] = Line2D(  # the line and the ring its means get: a reader sees what the rings are
            [],
            [],
            color=HIGHLIGHT_COLOR,
            lw=2.6,
            alpha=0.6,
            marker="o",
            ms=8,
            mfc="none",
            mec=HIGHLIGHT_COLOR,
            mew=2.2,
            label=f"detailed {_SYMBOLS.get(x, x)} = {fmt_setting(highlight)} (its means ringed)",
        )
    if legend and handles:
        figure_legend(fig, handles.values())
    if title is not None:
        fig.suptitle(title, fontsize=FONT_SIZE)
    return fig


@figure
def per_layer(
    data: pd.DataFrame,
    y: str = "value",
    *,
    hue: str = "tau",
    style: str = "when",
    col: str = "arch",
    highlight=None,
    baseline=None,
    width: float = 4.0,
    height: float = 3.0,
    ylabel: str | None = None,
):
    """A value per layer (x), one panel per ``col``; mean with +-1 sd error bars over the rows of each point.

    Give ``data`` one row per (layer, head, seed) so that the bars show the spread over
    heads and seeds. ``hue`` values equal to ``highlight`` / ``baseline`` get the red /
    black colours; ``style`` values get filled / open markers and solid / dashed lines.
    """
    d = data.copy()
    cols = list(dict.fromkeys(d[col]))
    fig, axes = new_figure(len(cols), 1, width=width, height=height, squeeze=False)
    hues = sorted(set(d[hue].astype(float)))
    styles = list(dict.fromkeys(d[style])) if style else [None]
    pal = sns.color_palette(PALETTE)
    groups = [(h, s) for h in hues for s in styles]
    handles = {}
    for ax, cv in zip(axes[0], cols):
        sub = d[d[col] == cv]
        for gi, (h, s) in enumerate(groups):
            part = sub[np.isclose(sub[hue].astype(float), h, rtol=1e-6) & ((sub[style] == s) if style else True)]
            if part.empty:
                continue
            c = (
                HIGHLIGHT_COLOR
                if _is_close(h, highlight)
                else BASELINE_COLOR
                if _is_close(h, baseline)
                else pal[(hues.index(h) + 2) % 10]
            )
            si = styles.index(s)
            summ = _summarise(part, ["layer"], y).sort_values("layer")
            xs = summ["layer"].to_numpy(float) + (gi - (len(groups) - 1) / 2) * 0.08
            face = c if si == 0 else "white"
            label = f"{_SYMBOLS.get(hue, hue)} = {fmt_setting(h)}" + (f", {s}" if style else "")
            ax.errorbar(
                xs,
                summ["mean"],
                yerr=summ["sd"],
                color=c,
                ls=_STYLES[si % 4],
                marker=_MARKERS[si % 4],
                mfc=face,
                ms=6,
                lw=2.2 if (_is_close(h, highlight) or _is_close(h, baseline)) else 1.3,
                capsize=3,
                label=label,
                gid="highlight" if _is_close(h, highlight) else None,
            )
            handles.setdefault(
                label, Line2D([], [], color=c, ls=_STYLES[si % 4], marker=_MARKERS[si % 4], mfc=face, label=label)
            )
        layers = sorted(set(sub["layer"].astype(int)))
        ax.set_xticks(layers)
        ax.set_xticklabels([str(layer + 1) for layer in layers])
        ax.set_xlabel("layer")
        ax.set_ylabel(ylabel or measure_label(y))
        ax.set_title(ARCH_LABELS.get(cv, cv), fontsize=FONT_SIZE)
    figure_legend(fig, handles.values())
    return fig


@figure
def effect_forest(
    data: pd.DataFrame,
    *,
    panel: str = "panel",
    label: str = "lever",
    hue: str = "arch",
    estimate: str = "estimate",
    low: str = "low",
    high: str = "high",
    width: float = 4.6,
    height: float | None = None,
    xlabels: dict | None = None,
):
    """Effect sizes with confidence intervals on one common scale (a forest plot).

    One panel per ``panel`` value; one row per ``label`` value, dodged by ``hue``; a
    vertical line at zero. ``xlabels`` maps a panel value to its x-axis label (units).
    """
    d = data.copy()
    panels = list(dict.fromkeys(d[panel]))
    labels = list(dict.fromkeys(d[label]))
    hues = list(dict.fromkeys(d[hue]))
    height = height or (0.55 * len(labels) * max(1, len(hues)) * 0.6 + 1.4)
    fig, axes = new_figure(len(panels), 1, width=width, height=height, squeeze=False)
    handles = {}
    for ax, p in zip(axes[0], panels):
        sub = d[d[panel] == p]
        for hi, h in enumerate(hues):
            c = arch_color(h) if hue == "arch" else sns.color_palette(PALETTE)[hi]
            part = sub[sub[hue] == h]
            ys = np.array([labels.index(v) for v in part[label]], float) + (hi - (len(hues) - 1) / 2) * 0.22
            err = np.vstack([(part[estimate] - part[low]).clip(lower=0), (part[high] - part[estimate]).clip(lower=0)])
            ax.errorbar(
                part[estimate], ys, xerr=np.nan_to_num(err), ls="none", marker="o", color=c, ms=6, capsize=3, lw=1.6
            )
            lab = ARCH_LABELS.get(h, str(h))
            handles.setdefault(lab, Line2D([], [], color=c, marker="o", ls="none", label=lab))
        ax.axvline(0, color="0.3", lw=1)
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels if ax is axes[0][0] else [""] * len(labels))
        ax.set_ylim(len(labels) - 0.5, -0.5)
        ax.set_xlabel((xlabels or {}).get(p, str(p)))
        ax.set_title(str(p), fontsize=FONT_SIZE)
    figure_legend(fig, handles.values(), max_cols=len(handles))
    return fig


def reference_lines(values: dict, label: str) -> pd.DataFrame:
    """Horizontal reference lines for :func:`by_setting`: one row per architecture and measure.

    Args:
        values: ``{arch: {measure: value}}`` (for example :func:`attnrank.analysis.baselines.uniform_ranks`).
        label: the legend entry of the lines.

    Returns the ``refs`` frame (``measure, label, x, hue, value``; ``x`` NaN: horizontal; ``hue``
    the architecture, drawn in its colour).
    """
    return pd.DataFrame(
        [
            {"measure": m, "label": label, "x": np.nan, "hue": a, "value": v}
            for a, by_m in values.items()
            for m, v in by_m.items()
        ],
        columns=["measure", "label", "x", "hue", "value"],
    )


def limit_lines(limits: pd.DataFrame, tau: float, label: str) -> pd.DataFrame:
    """:func:`reference_lines` of the rows of ``limits`` at temperature ratio ``tau`` (``numpy.isclose``).

    ``limits``: one row per ``arch, tau, measure`` with ``value`` (for example
    :func:`attnrank.analysis.baselines.iid_limits`); the lines are labelled ``label``.
    """
    at = limits[np.isclose(limits.tau, tau)]
    return reference_lines({a: g.set_index("measure").value.to_dict() for a, g in at.groupby("arch")}, label)
