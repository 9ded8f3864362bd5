"""Figures of the training chapters (``dynamics`` and ``loss``): curves through training,
run-level scatter plots, distributions of change and layer-by-head heat maps.

Every function takes tidy (long) pandas data and returns a matplotlib ``Figure``. Panels
are laid out with rows and columns taken from columns of the data (by default one row or
column per architecture); colour encodes a numeric setting (temperature ratio ``tau`` or
head dimension) on a logarithmic colour scale with a colour bar, and one setting can be
highlighted with a bold line (for example the standard ``tau = 1``). Diverged runs
(``status != "complete"``) are always drawn, with a cross, never dropped.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib import cm
from matplotlib import colors as mcolors
from matplotlib.lines import Line2D

from ..core.profiles import ARCHS
from ..words.glossary import ARCH_LABELS, MEASURE_LABELS, fmt_estimate, fmt_setting, fmt_tau
from . import PALETTE, cell_labels_fit, figure, figure_legend, new_figure
from .style import FAILED_COLOR as _FAILED_COLOR
from .style import FAILED_MARKER, FONT_SIZE, HEAD_DIM_CMAP, LABELS, MIN_FONT_SIZE, SYMBOLS, TAU_CMAP, measure_label

__all__ = [
    "TAU_CMAP",
    "HEAD_DIM_CMAP",
    "SETTING_LABELS",
    "hue_scale",
    "trajectories",
    "run_scatter",
    "change_distribution",
    "layer_head_heatmaps",
    "measure_trajectories",
    "head_dim_trajectories",
    "head_dim_scatter",
    "val_loss_trajectories",
    "loss_trajectories",
]


#: Axis / colour-bar labels of the settings.
SETTING_LABELS = {k: LABELS[k] for k in ("tau", "head_dim", "step", "seed")}
_SYMBOLS = SYMBOLS


def hue_scale(values, *, log: bool = True, cmap=None):
    """A value -> colour function and a ``ScalarMappable`` (for the colour bar) for numeric ``values``.

    With ``log`` the colours are spread over ``log(value)``; ``cmap`` defaults to :data:`TAU_CMAP`.
    """
    v = np.asarray(sorted({float(x) for x in values if pd.notna(x)}), float)
    if len(v) == 0:
        v = np.array([1.0])
    lo, hi = float(v.min()), float(v.max())
    if lo == hi:
        lo, hi = (lo / 2, hi * 2) if log else (lo - 1, hi + 1)
    norm = mcolors.LogNorm(lo, hi) if log else mcolors.Normalize(lo, hi)
    cmap = cmap or TAU_CMAP
    sm = cm.ScalarMappable(norm=norm, cmap=cmap)
    sm.set_array(v)

    def color(x):
        return cmap(norm(float(x)))

    return color, sm, v


def _levels(data: pd.DataFrame, column: str | None) -> list:
    return [None] if column is None else list(pd.unique(data[column].dropna()))


def _grid(data, row, col, *, width, height, sharex=False, sharey=False):
    rows, cols = _levels(data, row), _levels(data, col)
    fig, axes = new_figure(
        len(cols), len(rows), width=width, height=height, squeeze=False, sharex=sharex, sharey=sharey
    )
    return fig, axes, rows, cols


def _subset(data, row, r, col, c):
    m = pd.Series(True, index=data.index)
    if row is not None:
        m &= data[row] == r
    if col is not None:
        m &= data[col] == c
    return data[m]


def _note_above(ax, lines: list[str], color="black") -> None:
    """Write ``lines`` between the panel and its title (the title is pushed up by blank lines), where they
    never hide a point and constrained layout makes room for them; call after the title is set."""
    if not lines:
        return
    block = "\n".join(lines)
    ax.text(
        0.5,
        1.015,
        block,
        transform=ax.transAxes,
        va="bottom",
        ha="center",
        fontsize=MIN_FONT_SIZE,
        linespacing=1.25,
        color=color,
    )
    ax.set_title(ax.get_title() + "\n" * (block.count("\n") + 1), fontsize=FONT_SIZE)


#: The longest panel title (characters) written on one line; a longer one puts each part on a line of its own.
TITLE_ONE_LINE = 24


def _joined(parts) -> str:
    """A panel title of ``parts`` (a label "" leaves its part out): ``"a · b"``, or one part a line when too long."""
    parts = [str(p) for p in parts if p]
    one = " · ".join(parts)
    return one if len(one) <= TITLE_ONE_LINE else "\n".join(parts)


def _title(ax, row, r, col, c, row_labels, col_labels):
    parts = []
    if row is not None:
        parts.append((row_labels or {}).get(r, measure_label(r)))
    if col is not None:
        parts.append((col_labels or {}).get(c, measure_label(c)))
    ax.set_title(_joined(parts), fontsize=FONT_SIZE)


#: At most this many hue values get a colour bar of one block per value.
FEW_HUES = 3


def _hue_key(fig, axes, sm, values, label):
    """The colour bar right of the panels, ticked at each of ``values``; for at most :data:`FEW_HUES` values a bar of
    one block per value (a continuous bar for two values read as a continuum that is not there)."""
    if len(values) <= FEW_HUES:
        colors = [sm.to_rgba(v) for v in values]
        sm = cm.ScalarMappable(
            norm=mcolors.BoundaryNorm(np.arange(len(values) + 1) - 0.5, len(values)),
            cmap=mcolors.ListedColormap(colors),
        )
        ticks = np.arange(len(values))
    else:
        ticks = values
    cb = fig.colorbar(sm, ax=list(np.ravel(axes)), label=label, shrink=0.9, pad=0.02, aspect=30)
    cb.set_ticks(ticks)
    cb.set_ticklabels([fmt_setting(v) for v in values])
    cb.minorticks_off()
    return cb


def _is_complete(df: pd.DataFrame, status: str | None) -> pd.Series:
    if status is None or status not in df.columns:
        return pd.Series(True, index=df.index)
    return df[status].eq("complete")


_REF_STYLES = ((0, (4, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2)))


def _panel_refs(references, r, c):
    if not references:
        return {}
    return references.get((r, c), references.get(r, references.get(c, {}))) or {}


def _draw_references(ax, refs: dict, color="0.25") -> list[str]:
    """Horizontal reference lines ``{label: y}`` inside the data's y-range; returns the others as notes
    (``"unigram 5.75 (below the scale)"``) for the caller to place (:func:`_note_above`).

    The axis keeps the range of the data, so a far-away reference (a baseline loss well above
    every run) does not squash the runs' variation; it is named in a note instead.
    """
    if not refs:
        return []
    lo, hi = ax.get_ylim()
    pad = 0.25 * (hi - lo)
    off = []
    for k, (label, y) in enumerate(refs.items()):
        if y is None or not np.isfinite(y):
            continue
        if lo - pad <= y <= hi + pad:
            ax.axhline(y, color=color, lw=1.1, ls=_REF_STYLES[k % len(_REF_STYLES)], zorder=1)
            ax.annotate(
                f"{label} {y:.2f}",
                (1.0, y),
                xycoords=("axes fraction", "data"),
                xytext=(-2, 2),
                textcoords="offset points",
                ha="right",
                va="bottom",
                fontsize=MIN_FONT_SIZE,
                color=color,
            )
            lo, hi = min(lo, y - 0.05 * (hi - lo)), max(hi, y + 0.05 * (hi - lo))
        else:
            off.append(f"{label} {y:.2f} ({'above' if y > hi else 'below'} the scale)")
    ax.set_ylim(lo, hi)
    return off


@figure
def trajectories(
    data: pd.DataFrame,
    *,
    y: str,
    x: str = "step",
    hue: str = "tau",
    row: str | None = "arch",
    col: str | None = None,
    unit: str = "seed",
    status: str | None = "status",
    log_hue: bool = True,
    cmap=None,
    highlight=None,
    ylabel: str | dict | None = None,
    xlabel: str | None = None,
    hue_label: str | None = None,
    row_labels: dict | None = None,
    col_labels: dict | None = None,
    baseline: dict | None = None,
    baseline_label: str = "reference",
    references: dict | None = None,
    logy: bool = False,
    sharey: bool | str = False,
    width: float = 4.0,
    height: float = 2.9,
):
    """Curves of ``y`` against ``x`` (training step), one per ``hue`` value, mean over ``unit`` with the min-max band.

    Args:
        data: tidy rows with columns ``x``, ``y``, ``hue``, ``unit`` and the panel columns
            ``row`` / ``col`` (and ``status``: units whose status is not ``"complete"`` are
            left out of the mean and drawn on their own as dashed lines ending in a cross).
        highlight: a ``hue`` value drawn with a bold line and markers (e.g. ``tau = 1``).
        ylabel: one label, or ``{row value: label}`` (one per row, e.g. one per measure).
        baseline: optional ``{(row value, col value) or row value or col value: y}`` drawn
            as a grey dotted line labelled ``baseline_label`` (e.g. the rank of uniform
            causal attention, or a loss level).
        references: optional ``{(row value, col value) or row value or col value: {label: y}}``:
            labelled horizontal lines (e.g. unigram and bigram losses). The y-range stays that of
            the data (plus a quarter of it); a reference outside it is written as a note between
            the panel and its title instead of stretching the axis.
        sharey: ``False``, ``True``, or ``"row"``.

    Returns:
        the Figure; the colour bar maps ``hue`` (log scale if ``log_hue``).
    """
    fig, axes, rows, cols = _grid(data, row, col, width=width, height=height, sharex=True, sharey=sharey)
    color, sm, hue_values = hue_scale(data[hue], log=log_hue, cmap=cmap)
    any_failed = False
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            ax = axes[i, j]
            d = _subset(data, row, r, col, c)
            ok = _is_complete(d, status)
            good = d[ok]
            agg = good.groupby([hue, x])[y].agg(["mean", "min", "max"]).reset_index()
            for h, g in agg.groupby(hue, sort=True):
                bold = highlight is not None and np.isclose(float(h), float(highlight))
                g = g.sort_values(x)
                ax.fill_between(g[x], g["min"], g["max"], color=color(h), alpha=0.18, lw=0)
                ax.plot(
                    g[x],
                    g["mean"],
                    color=color(h),
                    lw=2.8 if bold else 1.4,
                    zorder=3 if bold else 2,
                    marker="o" if bold else None,
                    ms=4,
                    label=fmt_setting(h) if bold else None,
                )
            for (h, _u), g in d[~ok].groupby([hue, unit]):
                any_failed = True
                g = g.sort_values(x).dropna(subset=[y])
                if len(g):
                    ax.plot(g[x], g[y], color=color(h), lw=1.0, ls="--", zorder=2)
                    ax.plot(
                        g[x].iloc[-1],
                        g[y].iloc[-1],
                        marker=FAILED_MARKER,
                        color=_FAILED_COLOR,
                        ms=8,
                        zorder=4,
                        ls="none",
                    )
            if baseline is not None:
                b = baseline.get((r, c), baseline.get(r, baseline.get(c)))
                if b is not None and np.isfinite(b):
                    ax.axhline(b, color="0.4", ls=":", lw=1.2, zorder=1)
            if logy:
                ax.set_yscale("log")
            off = _draw_references(ax, _panel_refs(references, r, c))
            _title(ax, row, r, col, c, row_labels if row_labels is not None else ARCH_LABELS, col_labels)
            _note_above(ax, off, color="0.25")  # above the panel: a note in a corner covered the curves
            ax.set_xlabel(xlabel or SETTING_LABELS.get(x, x) if i == len(rows) - 1 else "")
            yl = ylabel.get(r, y) if isinstance(ylabel, dict) else (ylabel or y)
            ax.set_ylabel(yl if j == 0 else "")
    _hue_key(fig, axes, sm, hue_values, hue_label or SETTING_LABELS.get(hue, hue))
    handles = []
    if highlight is not None:
        handles.append(
            Line2D(
                [],
                [],
                color=color(highlight),
                lw=2.8,
                marker="o",
                ms=4,
                label=f"{_SYMBOLS.get(hue, hue)} = {fmt_setting(float(highlight))} (bold)",
            )
        )
    if (data.groupby([hue, x])[unit].nunique() > 1).any():  # one run per curve: no band, nothing to average
        handles.append(Line2D([], [], color="0.5", lw=6, alpha=0.3, label=f"mean, band = min–max over {unit}s"))
    if any_failed:
        handles.append(
            Line2D([], [], color=_FAILED_COLOR, ls="--", marker=FAILED_MARKER, ms=7, label="diverged run (ends at ×)")
        )
    if baseline is not None:
        handles.append(Line2D([], [], color="0.4", ls=":", lw=1.2, label=baseline_label))
    figure_legend(fig, handles)
    return fig


@figure
def run_scatter(
    data: pd.DataFrame,
    *,
    x: str,
    y: str,
    hue: str = "tau",
    row: str | None = None,
    col: str | None = "arch",
    status: str | None = "status",
    censored: str | None = None,
    log_hue: bool = True,
    cmap=None,
    identity: bool = False,
    annotations: dict | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    hue_label: str | None = None,
    row_labels: dict | None = None,
    col_labels: dict | None = None,
    logx: bool = False,
    logy: bool = False,
    connect: str | None = None,
    references: dict | None = None,
    width: float = 4.2,
    height: float = 3.4,
):
    """One point per run: ``y`` against ``x``, coloured by ``hue`` (log colour scale), panels by ``row`` / ``col``.

    Args:
        censored: optional boolean column; censored runs (e.g. a loss level never reached)
            are drawn as hollow upward triangles at their ``y`` value (the censoring value).
        identity: draw the ``y = x`` line (for initial against final rank).
        annotations: ``{panel key: text}`` written in the panel's upper-left corner, where
            the key is the ``col`` value, the ``row`` value or ``(row value, col value)``.
        connect: optional column (e.g. ``"seed"``... or a setting) whose equal values,
            sorted by ``hue``, are joined by thin grey lines.
        references: labelled horizontal lines per panel, as in :func:`trajectories`.

    Runs whose ``status`` is not ``"complete"`` are drawn as black crosses where ``x``
    and ``y`` are finite, and counted in the panel's corner text otherwise.
    """
    fig, axes, rows, cols = _grid(data, row, col, width=width, height=height)
    color, sm, hue_values = hue_scale(data[hue], log=log_hue, cmap=cmap)
    counts = {"failed": 0, "censored": 0}
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            ax = axes[i, j]
            d = _subset(data, row, r, col, c)
            ok = _is_complete(d, status)
            cens = d[censored].fillna(False).astype(bool) if censored else pd.Series(False, index=d.index)
            if connect is not None:
                for _, g in d[ok].sort_values(hue).groupby(connect):
                    ax.plot(g[x], g[y], color="0.75", lw=0.8, zorder=1)
            good = d[ok & ~cens]
            ax.scatter(good[x], good[y], c=[color(h) for h in good[hue]], s=38, edgecolor="white", lw=0.6, zorder=3)
            cd = d[ok & cens]
            if len(cd):
                counts["censored"] += len(cd)
                ax.scatter(
                    cd[x],
                    cd[y],
                    facecolor="none",
                    edgecolor=[color(h) for h in cd[hue]],
                    marker="^",
                    s=50,
                    lw=1.4,
                    zorder=3,
                )
            bad = d[~ok]
            finite = np.isfinite(bad[x].astype(float)) & np.isfinite(bad[y].astype(float))
            counts["failed"] += len(bad)
            if finite.any():
                ax.scatter(bad[x][finite], bad[y][finite], marker=FAILED_MARKER, color=_FAILED_COLOR, s=55, zorder=4)
            text = []
            if annotations:
                key = (r, c) if (row is not None and col is not None) else (c if col is not None else r)
                if key in annotations:
                    text.append(str(annotations[key]))
            if (~finite).sum():
                text.append(f"{int((~finite).sum())} diverged run(s) off the plot")
            if logx:
                ax.set_xscale("log")
            if logy:
                ax.set_yscale("log")
            if identity:
                lo = np.nanmin([d[x].min(), d[y].min()])
                hi = np.nanmax([d[x].max(), d[y].max()])
                if np.isfinite(lo) and np.isfinite(hi):
                    ax.plot([lo, hi], [lo, hi], color="0.4", ls="--", lw=1, zorder=1)
            text += _draw_references(ax, _panel_refs(references, r, c))
            _title(ax, row, r, col, c, row_labels, col_labels if col_labels is not None else ARCH_LABELS)
            _note_above(ax, text)
            ax.set_xlabel(xlabel or x if i == len(rows) - 1 else "")
            ax.set_ylabel(ylabel or y if j == 0 else "")
    _hue_key(fig, axes, sm, hue_values, hue_label or SETTING_LABELS.get(hue, hue))
    handles = []
    if identity:
        handles.append(Line2D([], [], color="0.4", ls="--", lw=1, label="final = initial"))
    if counts["censored"]:
        handles.append(Line2D([], [], marker="^", mfc="none", mec="0.3", ls="none", label="never reached (censored)"))
    if counts["failed"]:
        handles.append(Line2D([], [], marker=FAILED_MARKER, color=_FAILED_COLOR, ls="none", label="diverged run"))
    if handles:
        figure_legend(fig, handles, max_cols=len(handles))
    return fig


@figure
def change_distribution(
    data: pd.DataFrame,
    *,
    x: str,
    y: str = "measure",
    hue: str = "arch",
    xlabel: str | None = None,
    ylabel: str = "",
    y_labels: dict | None = None,
    hue_labels: dict | None = None,
    reference: float | None = None,
    logx: bool = False,
    percent: bool = False,
    width: float = 7.0,
    height: float | None = None,
):
    """Distribution of a per-run quantity ``x`` (e.g. relative change of mean rank) for each ``y`` (e.g. measure).

    A horizontal box plot per ``y`` and ``hue`` (architecture) with every run drawn as a
    dot on top. ``reference`` draws a vertical dotted line (e.g. a tolerance of 10 %); ``percent`` ticks a fraction
    ``x`` as percentages (0.1 as 10%), as the caption and tables write it.
    """
    d = data.copy()
    d[y] = d[y].map(lambda v: (y_labels or {}).get(v, measure_label(v)))  # a measure by its name, never its key
    if hue_labels is None and hue == "arch":
        hue_labels = ARCH_LABELS
    if hue_labels:
        d[hue] = d[hue].map(lambda v: hue_labels.get(v, v))
    n_y = d[y].nunique()
    fig, ax = new_figure(1, 1, width=width, height=height or max(2.4, 0.55 * n_y * max(d[hue].nunique(), 1) + 1.0))
    order = list(pd.unique(d[y]))
    hue_order = list(pd.unique(d[hue]))
    sns.boxplot(
        d,
        x=x,
        y=y,
        hue=hue,
        order=order,
        hue_order=hue_order,
        ax=ax,
        palette=PALETTE,
        fliersize=0,
        boxprops=dict(alpha=0.45),
        width=0.7,
        # matplotlib's own words for horizontal boxes: seaborn 0.13 passes the deprecated vert=False
        vert=None,
        orientation="horizontal",
    )
    sns.stripplot(
        d,
        x=x,
        y=y,
        hue=hue,
        order=order,
        hue_order=hue_order,
        ax=ax,
        palette=PALETTE,
        dodge=True,
        size=3.2,
        alpha=0.85,
        jitter=0.18,
        legend=False,
        edgecolor="white",
        linewidth=0.3,
    )
    if reference is not None:
        ax.axvline(reference, color="0.35", ls=":", lw=1.3)
    if logx:
        ax.set_xscale("log")
    if percent:
        from matplotlib.ticker import PercentFormatter

        ax.xaxis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=0))
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel)
    handles = ax.get_legend_handles_labels()[0]
    ax.get_legend().remove()  # below the panel: inside it, the legend hid the dots at one end
    figure_legend(fig, handles)
    return fig


@figure
def layer_head_heatmaps(
    data: pd.DataFrame,
    *,
    value: str = "value",
    row: str = "arch",
    col: str = "when",
    layer: str = "layer",
    head: str = "head",
    diff: bool = True,
    cbar_label: str = "mean rank",
    row_labels: dict | None = None,
    col_labels: dict | None = None,
    cmap: str = "mako",
    annot: bool | None = None,
    width: float = 3.0,
    height: float = 2.6,
):
    """Heat maps of ``value`` by layer (rows of a map) and head (columns), one per ``row`` x ``col`` panel.

    ``layer`` and ``head`` hold 0-based indices (as the probe records them); the maps label them from 1, as
    every figure and the explorer do. The colour scale is shared along each row (one architecture). With ``diff`` a last
    column shows the difference between the last and the first ``col`` level on a
    diverging scale centred at 0. Values are written in the cells unless there are more
    than 64 cells (``annot=None``).
    """
    rows = list(pd.unique(data[row]))
    cols = list(pd.unique(data[col]))
    ncols = len(cols) + (1 if diff and len(cols) >= 2 else 0)
    fig, axes = new_figure(ncols, len(rows), width=width, height=height, squeeze=False)
    row_labels = row_labels if row_labels is not None else ARCH_LABELS
    for i, r in enumerate(rows):
        dr = data[data[row] == r]
        vmin, vmax = float(dr[value].min()), float(dr[value].max())
        if vmin == vmax:  # a constant map still needs a colour scale
            vmin, vmax = vmin - 0.5, vmax + 0.5
        mats = {}
        for j, c in enumerate(cols):
            m = dr[dr[col] == c].pivot_table(index=layer, columns=head, values=value, aggfunc="mean")
            m.index, m.columns = m.index + 1, m.columns + 1  # layers and heads counted from 1, as in every figure
            mats[c] = m
            show_annot = annot if annot is not None else m.size <= 64
            show_annot = show_annot and cell_labels_fit(
                axes[i, j], m.shape[1], [f"{v:.1f}" for v in m.to_numpy().ravel()]
            )
            sns.heatmap(
                m,
                ax=axes[i, j],
                vmin=vmin,
                vmax=vmax,
                cmap=cmap,
                annot=show_annot,
                fmt=".1f",
                annot_kws={"fontsize": MIN_FONT_SIZE},
                cbar=j == len(cols) - 1,
                cbar_kws={"label": cbar_label} if j == len(cols) - 1 else None,
                square=False,
                linewidths=0.5,
                linecolor="white",
            )
            axes[i, j].set_title(_joined([row_labels.get(r, r), (col_labels or {}).get(c, c)]), fontsize=MIN_FONT_SIZE)
        if ncols > len(cols):
            delta = mats[cols[-1]] - mats[cols[0]]
            lim = float(np.nanmax(np.abs(delta.to_numpy()))) or 1.0
            ax = axes[i, -1]
            show_annot = annot if annot is not None else delta.size <= 64
            show_annot = show_annot and cell_labels_fit(
                ax, delta.shape[1], [f"{v:+.1f}" for v in delta.to_numpy().ravel()]
            )
            sns.heatmap(
                delta,
                ax=ax,
                vmin=-lim,
                vmax=lim,
                cmap="vlag",  # centred at 0 by the symmetric limits (seaborn's center= warns under matplotlib 3.11)
                annot=show_annot,
                fmt="+.1f",
                annot_kws={"fontsize": MIN_FONT_SIZE},
                cbar_kws={"label": "change"},
                linewidths=0.5,
                linecolor="white",
            )
            first, last = ((col_labels or {}).get(c, c) for c in (cols[0], cols[-1]))
            ax.set_title(_joined([row_labels.get(r, r), f"{last} − {first}"]), fontsize=MIN_FONT_SIZE)
        for j in range(ncols):
            axes[i, j].set_xlabel("head" if i == len(rows) - 1 else "")
            axes[i, j].set_ylabel("layer" if j == 0 else "")
            axes[i, j].tick_params(axis="y", rotation=0)
    return fig


@figure
def measure_trajectories(
    data: pd.DataFrame,
    uniform: dict,
    *,
    label: str,
    y: str = "mean",
    highlight=1.0,
    archs=ARCHS,
    height: float = 2.3,
):
    """Mean rank through training, one row of panels per rank measure and one column per architecture, one
    curve per temperature ratio (:func:`trajectories` with ``hue="tau"``).

    Args:
        data: tidy rows with ``measure, arch, tau, seed, status, step`` and ``y`` (the mean rank).
        uniform: ``{arch: {measure: rank of uniform attention}}`` (:func:`attnrank.analysis.baselines.uniform_ranks`),
            drawn as the dotted baseline in the panels of ``archs``, labelled ``label``.
        highlight: the temperature ratio drawn bold.

    Returns:
        the Figure (panels 4.3 wide and ``height`` high).
    """
    labels = dict(MEASURE_LABELS)
    return trajectories(
        data,
        y=y,
        row="measure",
        col="arch",
        hue="tau",
        highlight=highlight,
        ylabel=labels,
        row_labels={m: "" for m in labels},  # the y label names the measure; a title naming it too collided
        col_labels=ARCH_LABELS,
        baseline={(m, a): v for a in archs for m, v in uniform[a].items()},
        baseline_label=label,
        width=4.3,
        height=height,
    )


@figure
def loss_trajectories(curves: pd.DataFrame, levels: dict, references: dict):
    """Validation loss (top row) and training loss (bottom row) through training, one column per architecture,
    one curve per temperature ratio (``tau = 1`` bold).

    Args:
        curves: :func:`attnrank.runs.tables.loss_curves` (``curve, arch, tau, seed, status, step, value``; nats).
        levels: ``{arch: loss level}`` drawn dotted in the training-loss panels (the convergence level).
        references: ``{arch: {label: nats}}`` drawn in the validation-loss panels (unigram and bigram models).

    Returns:
        the Figure.
    """
    return trajectories(
        curves,
        y="value",
        row="curve",
        col="arch",
        hue="tau",
        highlight=1.0,
        ylabel={"validation loss": "validation loss (nats)", "training loss": "training loss (nats)"},
        row_labels={"validation loss": "", "training loss": ""},  # the y label names the curve
        col_labels=ARCH_LABELS,
        baseline={("training loss", a): lv for a, lv in levels.items()},
        baseline_label="level for convergence speed",
        references={("validation loss", a): r for a, r in references.items()},
        width=4.6,
        height=3.0,
    )


@figure
def head_dim_trajectories(data: pd.DataFrame, *, highlight: int, ylabel: str, y: str = "mean"):
    """Mean rank of one measure through training, one row of panels per architecture and one column per
    temperature ratio (titled ``τ = <tau>``), one curve per head dimension (log colour scale).

    Args:
        data: tidy rows with ``arch, tau, head_dim, seed, status, step`` and ``y``.
        highlight: the head dimension drawn bold (the profile's default).
        ylabel: the measure's label.

    Returns:
        the Figure (panels 4.3 x 2.8).
    """
    return trajectories(
        data,
        y=y,
        row="arch",
        col="tau",
        hue="head_dim",
        log_hue=True,
        cmap=HEAD_DIM_CMAP,
        highlight=highlight,
        ylabel=ylabel,
        col_labels={t: fmt_tau(t) for t in sorted(data.tau.unique())},
        width=4.3,
        height=2.8,
    )


@figure
def head_dim_scatter(data: pd.DataFrame, *, x: str, y: str, rho: dict, references: dict, xlabel: str, ylabel: str):
    """One point per run of the head-dimension grid: ``y`` against ``x``, coloured by head dimension (log scale),
    one row of panels per temperature ratio (titled ``τ = <tau>``) and one column per architecture; the runs of
    one seed are joined by thin lines.

    Args:
        data: one row per run with ``arch, tau, head_dim, seed, status``, ``x`` and ``y``.
        rho: ``{tau: {arch: Estimate}}`` (e.g. :func:`attnrank.sections.loss.grid_correlations`), written in each
            panel's corner as ``ρ = value [low, high]`` and the number of runs; its keys are the rows, in order.
        references: ``{arch: {label: y}}``, drawn in every panel of that architecture (e.g. unigram and bigram
            losses).

    Returns:
        the Figure.
    """
    notes = {
        (t, a): f"ρ = {fmt_estimate(e, n=False)}\nn = {e.n} runs" for t, by_a in rho.items() for a, e in by_a.items()
    }
    return run_scatter(
        data,
        x=x,
        y=y,
        hue="head_dim",
        row="tau",
        col="arch",
        cmap=HEAD_DIM_CMAP,
        connect="seed",
        annotations=notes,
        references={(t, a): r for t in rho for a, r in references.items()},
        row_labels={t: fmt_tau(t) for t in rho},
        xlabel=xlabel,
        ylabel=ylabel,
    )


@figure
def val_loss_trajectories(evals: pd.DataFrame, *, highlight=1.0):
    """Validation loss through training, one panel per architecture, one curve per temperature ratio (log
    colour scale; ``highlight`` bold).

    Args:
        evals: the runs' ``eval_log`` rows (``arch, tau, seed, status, step, val_loss``; nats per token).

    Returns:
        the Figure (panels 4.6 x 3.0).
    """
    return trajectories(
        evals,
        y="val_loss",
        row=None,
        col="arch",
        hue="tau",
        highlight=highlight,
        ylabel="validation loss (nats/token)",
        col_labels=ARCH_LABELS,
        width=4.6,
        height=3.0,
    )
