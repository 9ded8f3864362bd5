"""Figures of the ``measure`` chapter: singular-value spectra with the thresholds of each rank
measure, rank measures against the temperature, and the effect of floating-point precision.

Every function takes tidy (long) pandas data and returns a matplotlib ``Figure``. Colour
encodes the rank measure (one fixed colour per measure, :data:`MEASURE_COLORS`), the
state of a model (initialisation / trained) or the numerical pipeline; the book's
primary measure is drawn bold with markers. Labels and colours come from
:mod:`attnrank.plots.style`; missing columns raise :class:`attnrank.ConfigError` naming them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D

from ..analysis.spectra import EPS32, EPS64, REFERENCE
from ..core import rank
from ..core.profiles import CLM_ARCH, MLM_ARCH
from ..words.glossary import ARCH_LABELS, ARCHS, fmt_setting
from . import figure, figure_legend, new_figure, shared_xlabel
from .style import (
    FONT_SIZE,
    MEASURE_COLORS,
    MIN_FONT_SIZE,
    PALETTE,
    axis_label,
    check_columns,
    decade_labels,
    measure_label,
    tau_label,
)

__all__ = [
    "threshold_lines",
    "baselines",
    "attention_patterns",
    "MEASURE_COLORS",
    "measure_label",
    "spectra",
    "rank_vs_tau",
    "precision_by_tau",
    "measure_points",
    "spectra_tau1_figure",
    "ranks_tau1_figure",
    "ranks_vs_tau_figure",
    "spectra_extremes_figure",
    "precision_figure",
]

_TAU_LABEL = axis_label("tau", log=True)


def threshold_lines(sigma_1: pd.Series, n: int) -> pd.DataFrame:
    """Where each measure cuts, per architecture (relative thresholds at the median ``sigma_1``
    of the panel), and the float32 and float64 round-off levels."""
    out = []
    for arch, s1 in sigma_1.items():
        out += [
            dict(arch=arch, label="study: atol 1e-8", value=rank.STUDY_ATOL, style="-"),
            dict(arch=arch, label=r"rtol 1e-2 $\times\,\sigma_1$", value=1e-2 * s1, style="--"),
            dict(arch=arch, label=r"rtol 1e-4 $\times\,\sigma_1$", value=1e-4 * s1, style="-."),
            dict(arch=arch, label=r"float32 round-off $\varepsilon_{32}\sigma_1$", value=EPS32 * s1, style=":"),
            dict(
                arch=arch,
                label=r"float64 round-off $n\,\varepsilon_{64}\sigma_1$",
                value=n * EPS64 * s1,
                style=(0, (1, 3)),
            ),
        ]
    return pd.DataFrame(out)


def baselines(causal: dict, n: int, *, temperature: bool = False) -> pd.DataFrame:
    """Reference values drawn beside the measures: ``arch, measure, value, label``.

    ``causal``: :func:`uniform_causal` (drawn for the causal LM, under each measure); ``n``: the sequence
    length, the largest rank (both architectures). With ``temperature=True`` (the figure against
    the temperature) the causal rows have no label, ``n`` is labelled ``"n = <n>"`` and the masked LM also
    gets the rank-one line of uniform attention (``measure = "rank one"``, value 1).
    """
    if not temperature:
        return pd.DataFrame(
            [dict(arch=CLM_ARCH, measure=m, value=v, label="uniform causal attention $U_n$") for m, v in causal.items()]
            + [dict(arch=a, measure="n", value=float(n), label="n") for a in ARCHS]
        )
    return pd.concat(
        [
            pd.DataFrame([dict(arch=CLM_ARCH, measure=m, value=v) for m, v in causal.items()]),
            pd.DataFrame([dict(arch=a, measure="n", value=float(n), label=f"n = {n}") for a in ARCHS]),
            pd.DataFrame([dict(arch=MLM_ARCH, measure="rank one", value=1.0, label="uniform attention: rank 1")]),
        ],
        ignore_index=True,
    )


def _require(data: pd.DataFrame, columns, name: str = "data") -> None:
    check_columns(data, columns, name)


def _levels(data: pd.DataFrame, column: str | None) -> list:
    return [None] if column is None else list(pd.unique(data[column].dropna()))


def _panel_title(column: str | None, value) -> str:
    if column is None:
        return ""
    if column == "arch":
        return ARCH_LABELS.get(value, str(value))
    if column == "measure":
        return measure_label(value)
    if column == "tau":
        return tau_label(value)
    return f"{column} = {value}"


def _select(data: pd.DataFrame, where: dict) -> pd.DataFrame:
    mask = np.ones(len(data), bool)
    for col, val in where.items():
        if col is not None and val is not None:
            mask &= (data[col] == val).to_numpy()
    return data[mask]


@figure
def spectra(
    data: pd.DataFrame,
    thresholds: pd.DataFrame | None = None,
    *,
    col: str = "arch",
    row: str | None = None,
    hue: str = "state",
    ymin: float | None = None,
    width: float = 4.4,
    height: float = 3.3,
):
    """Singular values ``sigma_k`` against ``k`` on a log axis, one line (median) and band per ``hue``.

    Args:
        data: columns ``col``, ``row`` (optional), ``hue``, ``k`` (1-based index), ``median``
            and optionally ``low``/``high`` (a band, e.g. the 10-90% range over matrices).
        thresholds: optional columns ``col``/``row`` (optional), ``label``, ``value`` and
            ``style`` (a matplotlib line style); each row is a horizontal line of a rank
            measure's threshold, drawn in grey with its label in the legend. Rows with a
            missing ``col``/``row`` value apply to every panel.
        ymin: lower limit of the y axis (values below it, e.g. far below float64
            round-off, run off the bottom edge).

    Column levels title the top row; row levels head the y labels of the first column.
    """
    _require(data, [c for c in (col, row, hue, "k", "median") if c])
    cols, rows = _levels(data, col), _levels(data, row)
    fig, axes = new_figure(len(cols), len(rows), width=width, height=height, sharex=True, sharey=True, squeeze=False)
    hues = _levels(data, hue)
    palette = dict(zip(hues, sns.color_palette(PALETTE, len(hues))))
    grays = ["0.1", "0.35", "0.55", "0.7", "0.8"]
    th_styles: dict[str, tuple] = {}
    for i, rv in enumerate(rows):
        for j, cv in enumerate(cols):
            ax = axes[i, j]
            panel = _select(data, {col: cv, row: rv})
            for h in hues:
                d = panel[panel[hue] == h].sort_values("k")
                if d.empty:
                    continue
                ax.plot(d["k"], d["median"], color=palette[h], lw=2, label=str(h))
                if {"low", "high"} <= set(d.columns):
                    ax.fill_between(d["k"], d["low"], d["high"], color=palette[h], alpha=0.2, lw=0)
            if thresholds is not None and len(thresholds):
                t = thresholds
                for c, v in ((col, cv), (row, rv)):
                    if c is not None and c in t.columns:
                        t = t[t[c].isna() | (t[c] == v)]
                for _, r in t.iterrows():
                    label = str(r["label"])
                    if label not in th_styles:
                        th_styles[label] = (grays[len(th_styles) % len(grays)], r.get("style", "--") or "--")
                    color, ls = th_styles[label]
                    ax.axhline(r["value"], color=color, ls=ls, lw=1.2, zorder=1)
            ax.set_yscale("log")
            if ymin is not None:
                top = np.nanmax(data["high" if "high" in data.columns else "median"].to_numpy(float))
                ax.set_ylim(ymin, top * 10 if np.isfinite(top) and top > ymin else None)
            if i == 0:
                ax.set_title(_panel_title(col, cv))
            if i == len(rows) - 1 and len(cols) == 1:
                ax.set_xlabel(r"index $k$ of singular value")
            if j == 0:
                head = f"{rv}\n" if row is not None else ""
                ax.set_ylabel(head + r"singular value $\sigma_k$ (log scale)")
    handles = [Line2D([], [], color=palette[h], lw=2, label=str(h)) for h in hues]
    handles += [Line2D([], [], color=c, ls=ls, lw=1.2, label=lab) for lab, (c, ls) in th_styles.items()]
    fig.legend(handles=handles, loc="outside right center", frameon=False, fontsize=MIN_FONT_SIZE)
    if len(cols) > 1:  # one label under the columns: side by side, the panels' labels ran into each other
        shared_xlabel(fig, axes, r"index $k$ of singular value")
    return fig


@figure
def rank_vs_tau(
    data: pd.DataFrame,
    baselines: pd.DataFrame | None = None,
    *,
    col: str = "arch",
    hue: str = "measure",
    highlight: str | None = "rank_rtol_1e-2",
    mark_tau: float | None = 1.0,
    logy: bool = True,
    width: float = 4.6,
    height: float = 3.5,
):
    """Rank measures against ``tau`` (log x): one line per ``hue`` level with a band ``low``-``high``.

    Args:
        data: columns ``col``, ``hue``, ``tau``, ``mean`` and optionally ``low``/``high``.
        baselines: optional columns ``col``, ``measure``, ``value`` (and ``label``): a limit
            per measure, drawn as a dashed line in the measure's colour (for example the
            uniform causal matrix); a ``measure`` that is not a hue level (``"n"`` for the
            matrix size, ``"rank one"``) is a grey dotted line annotated with its ``label``.
        highlight: the hue level drawn bold with markers (the book's primary measure).
        mark_tau: a vertical line at the trained temperature.
    """
    _require(data, [col, hue, "tau", "mean"])
    cols = _levels(data, col)
    fig, axes = new_figure(len(cols), 1, width=width, height=height, sharey=True, squeeze=False)
    hues = _levels(data, hue)
    extra = sns.color_palette("dark", len(hues))
    colors = {
        h: MEASURE_COLORS.get(h, extra[i]) if hue == "measure" else sns.color_palette(PALETTE, len(hues))[i]
        for i, h in enumerate(hues)
    }
    for j, cv in enumerate(cols):
        ax = axes[0, j]
        panel = data[data[col] == cv]
        for h in hues:
            d = panel[panel[hue] == h].sort_values("tau")
            if d.empty:
                continue
            bold = h == highlight
            ax.plot(
                d["tau"],
                d["mean"],
                color=colors[h],
                lw=2.8 if bold else 1.5,
                marker="o" if bold else ".",
                ms=6 if bold else 4,
                zorder=3 if bold else 2,
                label=measure_label(h) if hue == "measure" else str(h),
            )
            if {"low", "high"} <= set(d.columns):
                ax.fill_between(d["tau"], d["low"], d["high"], color=colors[h], alpha=0.18, lw=0)
        if baselines is not None and len(baselines):
            b = baselines[baselines[col] == cv] if col in baselines.columns else baselines
            for _, r in b.iterrows():
                if r["measure"] in colors:
                    ax.axhline(r["value"], color=colors[r["measure"]], ls="--", lw=1.2, zorder=1, alpha=0.9)
                else:  # a reference level shared by all measures: grey, dotted, annotated
                    text = (
                        r.get("label")
                        if isinstance(r.get("label"), str)
                        else (f"n = {fmt_setting(r['value'])}" if r["measure"] == "n" else str(r["measure"]))
                    )
                    ax.axhline(r["value"], color="0.4", ls=":", lw=1.2, zorder=1)
                    ax.annotate(
                        text,
                        (0.02, r["value"]),
                        xycoords=("axes fraction", "data"),
                        va="bottom",
                        fontsize=MIN_FONT_SIZE,
                        color="0.3",
                    )
        if mark_tau is not None:
            ax.axvline(mark_tau, color="0.6", lw=1, ls="-.", zorder=0)
        ax.set_xscale("log")
        if logy:
            ax.set_yscale("log")
        decade_labels(ax)
        ax.set_title(_panel_title(col, cv))
        ax.set_xlabel(_TAU_LABEL)
        if j == 0:
            ax.set_ylabel("rank (mean, 95% CI" + ("; log scale)" if logy else ")"))
    handles = [
        Line2D(
            [],
            [],
            color=colors[h],
            lw=2.8 if h == highlight else 1.5,
            marker="o" if h == highlight else ".",
            label=measure_label(h) if hue == "measure" else str(h),
        )
        for h in hues
    ]
    if baselines is not None and baselines["measure"].isin(hues).any():
        handles.append(Line2D([], [], color="0.3", ls="--", lw=1.2, label="limit of each measure (dashed)"))
    # below the panels: beside them it left each panel narrower than its two-line temperature label
    figure_legend(fig, handles, max_cols=3)
    return fig


@figure
def precision_by_tau(
    data: pd.DataFrame,
    *,
    col: str = "measure",
    hue: str = "pipeline",
    style: str | None = "arch",
    reference: str | None = None,
    logy: bool = False,
    width: float = 3.6,
    height: float = 3.0,
    max_cols: int = 3,
):
    """One panel per measure: the measure against ``tau`` for each numerical pipeline (hue) and arch (style).

    Args:
        data: columns ``col``, ``hue``, ``style`` (optional), ``tau``, ``mean``.
        reference: the hue level drawn bold and underneath the others (the float64
            reference pipeline), so a pipeline that agrees with it shows as a thin line on
            top of a thick one.
    """
    _require(data, [c for c in (col, hue, style, "tau", "mean") if c])
    cols = _levels(data, col)
    ncols = min(len(cols), max_cols)
    nrows = int(np.ceil(len(cols) / ncols))
    fig, axes = new_figure(ncols, nrows, width=width, height=height, sharex=True, squeeze=False)
    hues = _levels(data, hue)
    palette = dict(zip(hues, sns.color_palette(PALETTE, len(hues) + 3)[3:]))
    if reference in hues:  # the reference in grey, the others in colour
        others = [h for h in hues if h != reference]
        palette = {reference: "0.5", **dict(zip(others, sns.color_palette(PALETTE, len(others) + 3)[3:]))}
    styles = _levels(data, style)
    dashes = dict(zip(styles, ["-", "--", ":", "-."]))
    for idx, cv in enumerate(cols):
        ax = axes[idx // ncols, idx % ncols]
        panel = data[data[col] == cv]
        for h in hues:
            for s in styles:
                d = _select(panel[panel[hue] == h], {style: s}).sort_values("tau")
                if d.empty:
                    continue
                bold = h == reference
                ax.plot(
                    d["tau"],
                    d["mean"],
                    color=palette[h],
                    ls=dashes[s],
                    lw=4.5 if bold else 1.5,
                    marker="o" if bold else None,
                    ms=5,
                    zorder=2 if bold else 3,
                    alpha=0.55 if bold else 1.0,
                )
        ax.set_xscale("log")
        if logy:
            ax.set_yscale("log")
        decade_labels(ax)
        ax.set_title(_panel_title(col, cv), fontsize=FONT_SIZE)
        if idx % ncols == 0:
            ax.set_ylabel("rank (mean)" + (", log scale" if logy else ""))
    handles = [
        Line2D(
            [],
            [],
            color=palette[h],
            lw=4.5 if h == reference else 1.5,
            marker="o" if h == reference else None,
            ms=5,
            alpha=0.55 if h == reference else 1.0,
            label=str(h),
        )
        for h in hues
    ]
    if style is not None:
        handles += [Line2D([], [], color="0.3", ls=dashes[s], label=ARCH_LABELS.get(s, str(s))) for s in styles]
    empty = [axes[idx // ncols, idx % ncols] for idx in range(len(cols), nrows * ncols)]
    for ax in empty[1:]:
        ax.set_visible(False)
    if empty:  # the legend fills the first empty slot of the grid
        empty[0].axis("off")
        empty[0].legend(handles=handles, loc="center", frameon=False, fontsize=MIN_FONT_SIZE)
    else:
        figure_legend(fig, handles)
    shared_xlabel(fig, axes, _TAU_LABEL)  # once: the two-line label is wider than a panel of the grid
    return fig


@figure
def measure_points(
    data: pd.DataFrame,
    baselines: pd.DataFrame | None = None,
    *,
    col: str = "arch",
    hue: str = "state",
    width: float = 4.8,
    height: float = 4.8,
):
    """Each measure (x, categorical) per ``hue`` level: point at ``mean`` with ``low``-``high`` error bars (log y).

    Args:
        data: columns ``col``, ``measure``, ``hue``, ``mean`` and optionally ``low``/``high``.
        baselines: optional columns ``col``, ``measure``, ``value``, ``label``: short black
            bars at a reference value per measure (e.g. uniform causal attention), and the
            row ``measure == "n"`` (matrix size) as a grey dotted line.
    """
    _require(data, [col, "measure", hue, "mean"])
    cols = _levels(data, col)
    measures = _levels(data, "measure")
    hues = _levels(data, hue)
    palette = dict(zip(hues, sns.color_palette(PALETTE, len(hues))))
    fig, axes = new_figure(len(cols), 1, width=width, height=height, sharey=True, squeeze=False)
    offsets = np.linspace(-0.2, 0.2, len(hues)) if len(hues) > 1 else np.zeros(1)
    base_label = None
    for j, cv in enumerate(cols):
        ax = axes[0, j]
        panel = data[data[col] == cv]
        for h, off in zip(hues, offsets):
            d = panel[panel[hue] == h].set_index("measure").reindex(measures)
            x = np.arange(len(measures)) + off
            yerr = None
            if {"low", "high"} <= set(d.columns):
                yerr = np.vstack([d["mean"] - d["low"], d["high"] - d["mean"]]).clip(min=0)
            ax.errorbar(x, d["mean"], yerr=yerr, fmt="o", color=palette[h], ms=6, capsize=3, lw=1.5, label=str(h))
        if baselines is not None and len(baselines):
            b = baselines[baselines[col] == cv] if col in baselines.columns else baselines
            for _, r in b.iterrows():
                if r["measure"] == "n":
                    ax.axhline(r["value"], color="0.4", ls=":", lw=1.2, zorder=0)
                elif r["measure"] in measures:
                    i = measures.index(r["measure"])
                    ax.hlines(r["value"], i - 0.38, i + 0.38, color="black", lw=2.2, zorder=4)
                    base_label = r.get("label", "baseline")
        ax.set_xticks(  # upright: slanted, the long names of neighbouring measures ran into each other
            np.arange(len(measures)),
            [measure_label(m) for m in measures],
            rotation=90,
            fontsize=MIN_FONT_SIZE,
        )
        ax.set_yscale("log")
        ax.set_title(_panel_title(col, cv))
        if j == 0:
            ax.set_ylabel("value (mean, 95% CI; log scale)")
    handles = [Line2D([], [], color=palette[h], marker="o", ls="", label=str(h)) for h in hues]
    if base_label:
        handles.append(Line2D([], [], color="black", lw=2.2, label=str(base_label)))
    if baselines is not None and (baselines["measure"] == "n").any():
        handles.append(Line2D([], [], color="0.4", ls=":", label="matrix size n"))
    figure_legend(fig, handles)  # below the panels, so each is wide enough for its five measures
    return fig


# ---------------------------------------------------------------- the chapter's figures with data and source
# Each returns ``(figure, data, name, source)``, the arguments of :func:`attnrank.book.show`: ``source`` is the
# caption's last words, the runs behind it (the chapter writes the rest of the caption); ``setting``
# is :class:`attnrank.sections.measure.Setting`.


def _source(setting) -> str:
    """The caption's last words: ``"(ci profile, 4 runs, 2 seeds per architecture)."``."""
    return f"({setting.runs_text})."


@figure
def spectra_tau1_figure(spectra_table: pd.DataFrame, matrices: pd.DataFrame, setting):
    """Spectra at ``tau = 1``, float64 throughout, by architecture and state, with where each measure
    cuts (:func:`threshold_lines` at the median ``sigma_1`` of the panel)."""
    spec = spectra_table[(spectra_table.tau == 1.0) & (spectra_table.pipeline == REFERENCE)].reset_index(drop=True)
    sigma1 = matrices[matrices.tau == 1.0].groupby("arch").sigma_1.median()
    fig = spectra(spec, threshold_lines(sigma1, setting.n), col="arch", hue="state")
    return (
        fig,
        spec,
        "measure_spectra_tau1",
        _source(setting),
    )


@figure
def ranks_tau1_figure(at1: pd.DataFrame, causal: dict, setting):
    """Every rank measure at ``tau = 1``, initial and trained (``at1``: :func:`attnrank.sections.measure.summarise`),
    beside the uniform causal matrix and ``n`` (:func:`baselines`)."""
    fig = measure_points(at1, baselines(causal, setting.n), col="arch", hue="state")
    return (
        fig,
        at1,
        "measure_ranks_tau1",
        _source(setting),
    )


@figure
def ranks_vs_tau_figure(ref: pd.DataFrame, causal: dict, setting, highlight: str):
    """The rank measures of trained models against the temperature (``ref``: the reference pipeline's
    :func:`attnrank.sections.measure.summarise` by ``arch, tau, pipeline, measure``), ``highlight`` bold."""
    fig = rank_vs_tau(
        ref, baselines(causal, setting.n, temperature=True), col="arch", hue="measure", highlight=highlight
    )
    return (
        fig,
        ref,
        "measure_ranks_vs_tau",
        _source(setting),
    )


@figure
def spectra_extremes_figure(spectra_table: pd.DataFrame, matrices: pd.DataFrame, setting):
    """Spectra of trained attention at every probed temperature, one row of panels per precision pipeline."""
    spec = spectra_table[spectra_table.state == "trained"]
    spec = spec.assign(temperature=spec.tau.map(tau_label))
    sigma1 = matrices[matrices.state == "trained"].groupby("arch").sigma_1.median()
    fig = spectra(
        spec, threshold_lines(sigma1, setting.n), col="arch", row="pipeline", hue="temperature", ymin=1e-20, height=3.0
    )
    return (
        fig,
        spec,
        "measure_spectra_extremes",
        _source(setting),
    )


@figure
def precision_figure(by_tau: pd.DataFrame, setting):
    """Each rank measure against the temperature for the three precision pipelines (the float64
    reference bold; ``by_tau``: :func:`attnrank.sections.measure.summarise` by ``arch, tau, pipeline, measure``)."""
    fig = precision_by_tau(by_tau, col="measure", hue="pipeline", style="arch", reference=REFERENCE)
    return (
        fig,
        by_tau,
        "measure_precision",
        _source(setting),
    )


@figure
def attention_patterns(matrices: pd.DataFrame, spectra_table: pd.DataFrame, labels: dict, *, eps: float = 1e-8):
    """Real attention matrices and their spectra: for each architecture one row per state (the model a run
    started from and the trained one) of heat maps, one column per temperature ratio, tokens of the probe
    sequence on both axes (query down, key across), and a last column with the singular values of the
    row's matrices on a log axis (the study's absolute threshold ``eps`` dotted).

    Args:
        matrices: :func:`attnrank.analysis.spectra.attention_examples` matrices with an ``arch`` column.
        spectra_table: its spectra, with ``arch``.
        labels: ``{arch: token strings}``.

    Returns:
        the Figure, at the column's width.
    """
    check_columns(matrices, ["arch", "state", "tau", "i", "j", "value"], "matrices")
    check_columns(spectra_table, ["arch", "state", "tau", "k", "sigma"], "spectra_table")
    archs = [a for a in ARCH_LABELS if a in set(matrices.arch)]
    states = list(pd.unique(matrices.state))
    taus = sorted(matrices.tau.unique())
    rows = [(a, s) for a in archs for s in states]
    # the heat maps wider than the spectra: ten token labels at the smallest font need 13 px each of a panel
    # (four equal columns gave 12, and the labels ran together)
    fig, axes = new_figure(
        len(taus) + 1,
        len(rows),
        width=1.7,
        height=1.75,
        squeeze=False,
        gridspec_kw={"width_ratios": [1.0] * len(taus) + [0.7]},
    )
    colors = dict(zip(taus, sns.color_palette(PALETTE, len(taus))))
    for r, (a, s) in enumerate(rows):
        tok = labels[a]
        for c, t in enumerate(taus):
            ax = axes[r, c]
            d = matrices[(matrices.arch == a) & (matrices.state == s) & (matrices.tau == t)]
            grid = d.pivot(index="i", columns="j", values="value").to_numpy()
            ax.imshow(grid, cmap="rocket_r", vmin=0.0, vmax=1.0, interpolation="nearest", aspect="equal")
            ax.set_xticks(range(len(tok)))
            ax.set_yticks(range(len(tok)))
            last_of_arch = r == len(rows) - 1 or rows[r + 1][0] != a  # each model's keys under its last row
            ax.set_xticklabels(tok if last_of_arch else [], rotation=90, fontsize=MIN_FONT_SIZE)
            ax.set_yticklabels(tok if c == 0 else [], fontsize=MIN_FONT_SIZE)
            ax.tick_params(length=0, pad=1)
            ax.grid(False)
            if r == 0:
                ax.set_title(tau_label(t), fontsize=FONT_SIZE)
            if c == 0:
                ax.set_ylabel(f"{ARCH_LABELS[a]}\n{s}", fontsize=MIN_FONT_SIZE)
        ax = axes[r, -1]
        for t in taus:
            sv = spectra_table[(spectra_table.arch == a) & (spectra_table.state == s) & (spectra_table.tau == t)]
            ax.semilogy(
                sv.k, sv.sigma.clip(lower=1e-300), marker="o", ms=2.5, lw=1.0, color=colors[t], label=tau_label(t)
            )
        ax.axhline(eps, ls=":", color="0.3", lw=1.0)
        ax.set_ylim(1e-17, 10)
        ax.set_yticks([1e-16, 1e-8, 1])
        ax.tick_params(labelsize=MIN_FONT_SIZE)
        if r == 0:
            ax.set_title("singular values", fontsize=FONT_SIZE)
        if r == len(rows) - 1:
            ax.set_xlabel("index k", fontsize=MIN_FONT_SIZE)
    # the spectra's legend below the panels (inside the last panel it covered the lines)
    figure_legend(fig, axes[-1, -1].get_legend_handles_labels()[0], max_cols=len(taus))
    return fig
