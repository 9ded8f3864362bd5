"""The explorer page: the book's runs in the browser, with no kernel and no network.

:func:`export` reads the runs of the main grid (:func:`attnrank.runs.experiments.main_sweep`) of a
profile and dataset from the run store (training those it lacks) and turns them into one
JSON-serialisable payload: per run its settings and key, its mean rank (every measure) and
validation loss through training, its initial and final ranks, and, at each probe step at
which the run kept attention probabilities (:meth:`attnrank.runs.store.Run.attention`), every layer
and head of its first probe sequence: the matrix, quantised (:func:`quantise`; how many
levels and steps is the first :class:`Plan` of :data:`PLANS` that fits the page's
budget), its singular values and the value of every rank measure, computed from the stored
float32 matrix by :mod:`attnrank.core.rank` (the values of the rank probe, not of the quantised copy).

:func:`page` draws that payload with Bokeh (its JavaScript inline in the page, so the page
works from ``file://`` and from a static host): the attention matrix with the tokens on hover,
its singular-value spectrum with the study's absolute threshold and the relative ones, the
rank through training with the validation loss, and the run among the other temperatures;
the controls are plain HTML selects wired to the Bokeh data sources by the small script
``chapters/_static/explorer.js`` (its style: ``explorer.css``; both linted there and inlined into the page). The chapter ``chapters/explore`` calls :func:`export` once, inside its execution,
so the page is in the book's execution cache like every other page, keyed by the library code,
the settings and the environment (a changed run or setting exports again).
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
import zlib
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from bokeh.embed import components
from bokeh.models import (
    ColorBar,
    ColumnDataSource,
    CustomJSTickFormatter,
    FixedTicker,
    HoverTool,
    LinearColorMapper,
    LogColorMapper,
    Range1d,
    Span,
)
from bokeh.palettes import Viridis256
from bokeh.plotting import figure
from bokeh.resources import Resources
from IPython.display import HTML

from ..analysis.rules import PRIMARY_MEASURE
from ..core.architectures import architecture
from ..core.errors import ConfigError
from ..core.profiles import resolve_profile
from ..core.rank import MEASURES, rank_measures, singular_values
from ..core.train import ATTENTION_SEQUENCES
from ..runs import store
from ..runs.experiments import main_sweep, sweep_plan
from ..words.glossary import ARCH_LABELS, MEASURE_LABELS, corpus_name, fmt, fmt_setting
from .section import Section, Table

__all__ = [
    "PLANS",
    "Plan",
    "BUDGET_BYTES",
    "Export",
    "quantise",
    "dequantise",
    "section",
    "export",
    "page",
    "view",
    "glue_values",
    "run_table",
    "STATIC",
]

#: The book's static folder, which holds the page's script (``explorer.js``: it fills the controls, decodes the
#: selected run and sets the Bokeh data sources, reading its settings from its own ``data-config`` attribute and
#: the payload from the ``<uid>-data`` element) and its style (``explorer.css``).
STATIC = Path(__file__).resolve().parents[3] / "chapters" / "_static"

#: The most bytes the explorer page (its HTML with the data and the plotting library inline) may take.
BUDGET_BYTES = 8_000_000
#: Bytes of the page around the data and BokehJS (controls, styles, scripts, the book's theme HTML),
#: counted when a plan is checked against :data:`BUDGET_BYTES`.
PAGE_OVERHEAD_BYTES = 250_000


@dataclass(frozen=True)
class Plan:
    """How much of each run the page shows (of its first probe sequence): quantisation levels and probe steps.

    ``steps`` is the number of kept probe steps shown (``None``: all; else the first, the last and
    evenly spaced ones between).
    """

    levels: int
    steps: int | None = None

    def describe(self) -> str:
        bits = math.ceil(math.log2(self.levels + 1))
        steps = "every kept probe step" if self.steps is None else f"{self.steps} of the kept probe steps"
        return f"one probe sequence, {steps}, {self.levels + 1} colour levels ({bits} bits) per entry"


#: The plans tried in order; the first whose page fits :data:`BUDGET_BYTES` is used. The page shows one probe
#: sequence a run (two did not fit the page at the default profile, and a control with one option is a dead one).
PLANS = (
    Plan(levels=63),
    Plan(levels=15),
    Plan(levels=15, steps=3),
    Plan(levels=15, steps=2),
)


def quantise(probabilities: torch.Tensor, causal: bool, levels: int = 255) -> tuple[bytes, np.ndarray]:
    """Entries of attention matrices ``[..., n, n]`` as bytes, one each, scaled per matrix.

    Entry ``q = round(levels * p / max(p))`` (``levels`` at most 255) of each matrix, row by row;
    for a causal matrix only the lower triangle (with the diagonal, ``n (n + 1) / 2`` entries; the
    rest is zero). The error of an entry is at most ``max(p) / (2 levels)``.

    Returns:
        ``(data, scale)``: the bytes of every matrix in order, and ``scale`` float32
        ``[...]``, the largest entry of each matrix.
    """
    p = probabilities.to(torch.float64)
    scale = p.amax(dim=(-2, -1))
    if not 1 <= levels <= 255:
        raise ConfigError("levels", f"got {levels!r}; expected an integer in [1, 255]")
    q = torch.round(levels * p / scale.clamp_min(torch.finfo(torch.float64).tiny)[..., None, None])
    q = q.clamp(0, levels).to(torch.uint8)
    if causal:
        n = q.shape[-1]
        rows, cols = torch.tril_indices(n, n)
        q = q[..., rows, cols]
    return q.contiguous().numpy().tobytes(), scale.to(torch.float32).numpy()


def dequantise(data: bytes, scale: np.ndarray, n: int, causal: bool, levels: int = 255) -> np.ndarray:
    """The matrices ``[..., n, n]`` (float32) of :func:`quantise`'s ``(data, scale)``; the page decodes alike."""
    q = np.frombuffer(data, dtype=np.uint8).astype(np.float32)
    cells = n * (n + 1) // 2 if causal else n * n
    q = q.reshape(*scale.shape, cells)
    if causal:
        full = np.zeros((*scale.shape, n, n), np.float32)
        rows, cols = np.tril_indices(n)
        full[..., rows, cols] = q
    else:
        full = q.reshape(*scale.shape, n, n)
    return full * (scale[..., None, None] / levels)


def _b64(data: bytes, compress: bool = False) -> str:
    return base64.b64encode(zlib.compress(data, 9) if compress else data).decode("ascii")


def _floats(values) -> list:
    """Finite floats rounded to 7 significant digits (float32 precision); NaN and inf as None."""
    return [float(f"{v:.7g}") if math.isfinite(v) else None for v in np.asarray(values, dtype=float).ravel()]


@dataclass(frozen=True)
class Export:
    """What the explorer page shows: the runs (a table) and the payload the page embeds.

    Attributes:
        profile, dataset: the resolved profile and dataset of the runs.
        runs: one row per run: ``key``, ``arch``, ``tau``, ``head_dim``, ``num_heads``, ``seed``,
            ``status``, ``initial_val_loss``, ``final_val_loss`` and ``initial_<m>``/``final_<m>``
            of the primary measure.
        payload: JSON-serialisable dict (see :func:`export`).
        plan: the :class:`Plan` the payload was encoded with.
    """

    profile: str
    dataset: str
    runs: pd.DataFrame
    payload: dict
    plan: Plan | None = None


@dataclass
class _Arrays:
    """What the page needs of one run's kept attention, computed once: probabilities, spectra, measures."""

    run: object
    probabilities: torch.Tensor  # float32 [T, L, H, n, n], of the first probe sequence
    singular_values: torch.Tensor  # float32 [T, L, H, n], of the float64 SVD
    measures: np.ndarray  # float32 [T, L, H, M]

    @classmethod
    def of(cls, run) -> _Arrays:
        att = run.attention()
        probs = att.probabilities[:, :, 0]
        values = rank_measures(probs)  # float64 SVDs of the stored float32 matrices, as the probe
        measures = np.stack([values[m].to(torch.float32).numpy() for m in MEASURES], axis=-1)
        return cls(run, probs, singular_values(probs).to(torch.float32), measures)


def _thin(count: int, keep: int | None) -> list[int]:
    """Indices of ``keep`` of ``count`` steps: the first, the last and evenly spaced ones between."""
    if keep is None or keep >= count:
        return list(range(count))
    return sorted({round(i * (count - 1) / (keep - 1)) for i in range(keep)}) if keep > 1 else [count - 1]


def _run_record(arrays: _Arrays, plan: Plan) -> dict:
    run = arrays.run
    cfg = run.run_config
    att = run.attention()
    T = _thin(len(att.steps), plan.steps)
    probs = arrays.probabilities[T]  # [T, L, H, n, n]
    sv = arrays.singular_values[T]
    measures = arrays.measures[T]
    causal = architecture(cfg.arch).causal
    data, scale = quantise(probs, causal, plan.levels)
    summary = run.table("rank_summary")
    rank_steps = sorted(summary.step.unique().tolist())
    curves = {
        m: _floats(summary[summary.measure == m].set_index("step")["mean"].reindex(rank_steps).to_numpy())
        for m in MEASURES
        if m in set(summary.measure)
    }
    eval_log = run.table("eval_log")
    s = run.summary
    return {
        "key": run.key,
        "arch": cfg.arch,
        "tokenizer": architecture(cfg.arch).tokenizer,
        "tau": cfg.tau,
        "head_dim": cfg.head_dim,
        "num_heads": cfg.num_heads,
        "num_layers": cfg.num_layers,
        "seed": cfg.seed,
        "status": s["status"],
        "failure": (s.get("failure") or {}).get("reason"),
        "initial_val_loss": _floats([s["initial_val_loss"]])[0],
        "final_val_loss": _floats([s["final_val_loss"]])[0],
        "initial": {m: _floats([v])[0] for m, v in s["initial_rank"].items()},
        "final": {m: _floats([v])[0] for m, v in s["final_rank"].items()},
        "rank_steps": rank_steps,
        "rank": curves,
        "loss_steps": eval_log.step.astype(int).tolist(),
        "val_loss": _floats(eval_log.val_loss),
        "attention": {
            "steps": [int(att.steps[t]) for t in T],
            "n": int(probs.shape[-1]),
            "causal": causal,
            "levels": plan.levels,
            "tokens": list(att.tokens[0]),
            "scale": _b64(scale.astype("<f4").tobytes()),
            "matrices": _b64(data, compress=True),
            "singular_values": _b64(sv.numpy().astype("<f4").tobytes()),
            "measures": _b64(np.ascontiguousarray(measures).astype("<f4").tobytes()),
        },
    }


def _bokeh_bytes() -> int:
    return len(Resources(mode="inline", components=["bokeh"], log_level="error").render_js().encode())


def export(
    profile: str = "auto",
    dataset: str | None = None,
    *,
    taus=None,
    head_dims=None,
    seeds=None,
    budget: int = BUDGET_BYTES,
) -> Export:
    """The explorer's data for the main grid of ``profile`` on ``dataset``, from the run store.

    Runs missing from the store are trained first (a book build has trained them up front). The
    page shows as much of each run as fits ``budget``: the first plan of :data:`PLANS` whose
    payload, with BokehJS and :data:`PAGE_OVERHEAD_BYTES`, is at most ``budget`` bytes (the last
    plan when none fits).

    Args:
        profile: a profile name or ``"auto"``.
        dataset: the corpus (``None``: ``ATTNRANK_DATASET`` or ``shakespeare``).
        taus, head_dims, seeds: the grid (:func:`attnrank.runs.experiments.main_sweep`; ``None``: the
            profile's; an int ``n`` of seeds: seeds ``0 .. n-1``).
        budget: the most bytes of the page (default :data:`BUDGET_BYTES`).

    Returns:
        An :class:`Export`. Its ``payload`` has ``profile``, ``corpus`` (the dataset's name for a reader), ``primary`` (the
        primary measure), ``measures`` (``[name, label]`` in the order of
        :data:`attnrank.core.rank.MEASURES`), ``thresholds`` (the study's absolute one and the
        relative ones), ``plan`` (the :class:`Plan` used, in words), ``probe_size`` and ``runs``:
        one record per run with its settings, ``tokenizer`` (its family: how its tokens join into text), ``key``, ``status``, ``color`` (of its ``tau``), curves (``rank_steps``,
        ``rank``: ``{measure: [mean]}``, ``loss_steps``, ``val_loss``), ``initial``/``final``
        ranks and ``attention``: the shown ``steps``, ``n``, ``causal``, ``levels``,
        the ``tokens`` of the probe sequence, and base64 little-endian arrays over ``[step, layer,
        head]``: ``scale`` (float32, the largest entry of each matrix), ``matrices``
        (zlib-compressed bytes of :func:`quantise`), ``singular_values`` (float32 ``[..., n]``,
        decreasing) and ``measures`` (float32 ``[..., measure]``).

    Raises:
        ConfigError: naming ``profile``, ``dataset``, ``tau`` / ``taus``, ``head_dims``, ``seeds``
        or ``budget`` (a positive integer), before anything is trained.
    """
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ConfigError("budget", f"got {budget!r}; expected a positive number of bytes")
    profile = resolve_profile(profile)
    configs = main_sweep(sweep_plan(profile, taus=taus, head_dims=head_dims, seeds=seeds, dataset=dataset))
    stored = [store.run(c) for c in configs]
    arrays = [_Arrays.of(r) for r in stored]
    dataset_name = configs[0].dataset if configs else (dataset or "")
    head = {
        "profile": profile,
        "corpus": corpus_name(dataset_name),
        "primary": PRIMARY_MEASURE,
        "measures": [[m, MEASURE_LABELS.get(m, m)] for m in MEASURES],
        "thresholds": [
            {"label": MEASURE_LABELS.get(m, m), "atol": MEASURES[m].atol, "rtol": MEASURES[m].rtol}
            for m in MEASURES
            if MEASURES[m].kind == "numerical"
        ],
        "archs": {a: ARCH_LABELS[a] for a in ARCH_LABELS},
        "probe_size": configs[0].probe_size if configs else 0,
    }
    fixed = _bokeh_bytes() + PAGE_OVERHEAD_BYTES
    for plan in PLANS:
        payload = {**head, "plan": plan.describe(), "runs": [_run_record(a, plan) for a in arrays]}
        _colors(payload["runs"])
        if len(_json_for_html(payload).encode()) + fixed <= budget:
            break
    records = payload["runs"]
    table = pd.DataFrame(
        [
            {
                "key": r["key"],
                "arch": r["arch"],
                "tau": r["tau"],
                "head_dim": r["head_dim"],
                "num_heads": r["num_heads"],
                "seed": r["seed"],
                "status": r["status"],
                "initial_val_loss": r["initial_val_loss"],
                "final_val_loss": r["final_val_loss"],
                f"initial_{PRIMARY_MEASURE}": r["initial"].get(PRIMARY_MEASURE),
                f"final_{PRIMARY_MEASURE}": r["final"].get(PRIMARY_MEASURE),
            }
            for r in records
        ],
        columns=[
            "key",
            "arch",
            "tau",
            "head_dim",
            "num_heads",
            "seed",
            "status",
            "initial_val_loss",
            "final_val_loss",
            f"initial_{PRIMARY_MEASURE}",
            f"final_{PRIMARY_MEASURE}",
        ],
    )
    return Export(profile, dataset_name, table, payload, plan)


# --------------------------------------------------------------------------- the page

#: Controls of the page, in order: ``(name, label)``; the script fills in their options.
CONTROLS = (
    ("arch", "architecture"),
    ("tau", "temperature ratio τ"),
    ("head_dim", "head dimension dₕ"),
    ("seed", "seed"),
    ("step", "probe step"),
    ("layer", "layer"),
    ("head", "head"),
    ("measure", "rank measure (curves)"),
    ("sweep", "sweep panel: against"),
)

_PALETTE_SIZE = 256


def _curve_panel(name, kind: str, *, height: int, y_label: str, title: str, common: dict):
    """One panel of curves against the training step: the sweep's curves faint behind the selected
    run's, and a dotted marker at the selected step. ``kind`` is ``"curve"`` (the figure is named
    ``curves``) or ``"loss"``; returns ``(figure, context_source, source, marker)``."""
    context = ColumnDataSource({"xs": [], "ys": [], "color": []}, name=name(f"{kind}-context"))
    source = ColumnDataSource({"step": [], "value": []}, name=name(f"{kind}-source"))
    marker = Span(location=0, dimension="height", line_color="#d62728", line_dash="dotted", name=name(f"{kind}-marker"))
    panel = figure(
        name=name("curves" if kind == "curve" else kind),
        height=height,
        x_axis_label="training step",
        y_axis_label=y_label,
        title=title,
        **common,
    )
    panel.multi_line("xs", "ys", source=context, line_color="color", line_alpha=0.35, line_width=1)
    panel.line("step", "value", source=source, line_color="#d62728", line_width=2.5)
    panel.scatter("step", "value", source=source, color="#d62728", size=5)
    panel.add_layout(marker)
    return panel, context, source, marker


def _figures(uid: str, n: int) -> dict:
    """The Bokeh figures of the page (empty data sources; the script fills them in), by panel name."""

    def name(part: str) -> str:
        return f"{uid}-{part}"

    # no drag or scroll tool is active, so a finger on a phone scrolls the page, not the plot
    common = dict(
        sizing_mode="stretch_width",
        toolbar_location="above",
        tools="box_zoom,reset,save",
        active_drag=None,
        active_scroll=None,
    )

    heat = _heat_panel(name, n, common)
    spectrum = _spectrum_panel(name, common)
    tau_mapper = LogColorMapper(palette=Viridis256, low=1e-3, high=4.0, name=name("tau-mapper"))
    curves, context_source, curve_source, curve_marker = _curve_panel(
        name,
        "curve",
        height=260,
        y_label="mean rank",
        title="mean through training",
        common=common,
    )
    curves.add_layout(ColorBar(color_mapper=tau_mapper, width=8, title="τ"), "right")
    curves.add_tools(HoverTool(tooltips=[("step", "@step"), ("mean rank", "@value{0.000}")], mode="vline"))
    curves.yaxis.name = name("curves-yaxis")
    loss, loss_context, loss_source, loss_marker = _curve_panel(
        name,
        "loss",
        height=220,
        y_label="nats per token",  # the title says what: on a phone the panel is shorter than a long label
        title="validation loss",
        common={**common, "x_range": curves.x_range},
    )
    loss.add_tools(HoverTool(tooltips=[("step", "@step"), ("loss", "@value{0.000}")], mode="vline"))

    sweep = _sweep_panel(name, common)
    for fig in (heat, spectrum, curves, loss, sweep):
        fig.toolbar.autohide = True
        fig.title.text_font_size = "10pt"
    return {"heat": heat, "spectrum": spectrum, "curves": curves, "loss": loss, "sweep": sweep}


def _heat_panel(name, n: int, common: dict):
    """The attention matrix of one head (its data source filled in by the script), with its colour bar."""
    heat_source = ColumnDataSource({"x": [], "y": [], "p": [], "query": [], "key": []}, name=name("heat-source"))
    heat_mapper = LinearColorMapper(palette=Viridis256, low=0.0, high=1.0, name=name("heat-mapper"))
    heat = figure(
        name=name("heat"),
        width=380,
        height=380,
        x_range=Range1d(-0.5, n - 0.5, name=name("heat-x")),
        y_range=Range1d(n - 0.5, -0.5, name=name("heat-y")),
        x_axis_label="key position",
        y_axis_label="query position",
        title="attention matrix",
        **{**common, "sizing_mode": "scale_width"},
    )
    heat.rect(
        "x",
        "y",
        width=1,
        height=1,
        dilate=True,
        source=heat_source,
        line_color=None,
        fill_color={"field": "p", "transform": heat_mapper},
    )
    heat.add_tools(HoverTool(tooltips=[("query", "@y: @query"), ("key", "@x: @key"), ("attention", "@p{0.0000}")]))
    heat.add_layout(ColorBar(color_mapper=heat_mapper, width=8, title="attention"), "right")
    heat.grid.visible = False
    return heat


def _spectrum_panel(name, common: dict):
    """The singular values of the shown matrix on a log axis, with the rank thresholds as dashed lines."""
    spectrum_source = ColumnDataSource({"i": [], "sigma": []}, name=name("spectrum-source"))
    threshold_source = ColumnDataSource({"xs": [], "ys": [], "label": [], "color": []}, name=name("threshold-source"))
    spectrum = figure(
        name=name("spectrum"),
        height=380,
        y_axis_type="log",
        x_axis_label="index i",
        y_axis_label="σᵢ (log scale)",
        title="singular values σᵢ",
        **common,
    )
    spectrum.multi_line(
        "xs",
        "ys",
        source=threshold_source,
        line_color="color",
        line_dash="dashed",
        line_width=1.5,
        legend_field="label",
    )
    spectrum.line("i", "sigma", source=spectrum_source, line_color="#444444")
    spectrum.scatter("i", "sigma", source=spectrum_source, size=4, color="#444444")
    spectrum.add_tools(HoverTool(tooltips=[("i", "@i"), ("σᵢ", "@sigma{0.000e0}")], mode="vline"))
    spectrum.add_layout(spectrum.legend[0], "below")
    spectrum.legend.label_text_font_size = "8pt"
    spectrum.legend.title = "thresholds"
    return spectrum


def _sweep_panel(name, common: dict):
    """The run's initial and final mean rank among the other runs of its sweep, the run itself ringed; the x axis is
    ticked at the sweep's settings."""
    sweep_source = ColumnDataSource(
        {"x": [], "initial": [], "final": [], "seed": [], "key": []}, name=name("sweep-source")
    )
    sweep_selected = ColumnDataSource({"x": [], "initial": [], "final": []}, name=name("sweep-selected"))
    sweep = figure(
        name=name("sweep"),
        height=330,
        x_axis_type="log",
        x_axis_label="temperature ratio τ (log scale)",
        y_axis_label="mean rank",
        title="the run in its sweep",
        **common,
    )
    sweep.scatter(
        "x",
        "initial",
        source=sweep_source,
        marker="circle",
        size=8,
        fill_color=None,
        line_color="#1f77b4",
        line_width=1.5,
        legend_label="initial (step 0)",
    )
    sweep.scatter("x", "final", source=sweep_source, marker="circle", size=8, color="#ff7f0e", legend_label="final")
    sweep.scatter(
        "x",
        "initial",
        source=sweep_selected,
        marker="circle",
        size=16,
        fill_color=None,
        line_color="#d62728",
        line_width=2,
        legend_label="this run",
    )
    sweep.scatter(
        "x",
        "final",
        source=sweep_selected,
        marker="circle",
        size=16,
        fill_color=None,
        line_color="#d62728",
        line_width=2,
    )
    sweep.add_tools(
        HoverTool(
            tooltips=[
                ("x", "@x"),
                ("seed", "@seed"),
                ("initial", "@initial{0.000}"),
                ("final", "@final{0.000}"),
                ("run", "@key"),
            ]
        )
    )
    sweep.xaxis.name = name("sweep-xaxis")
    # ticks at the settings the sweep has (the script sets them): two head dimensions are not a decade of ticks
    sweep.xaxis.ticker = FixedTicker(ticks=[], name=name("sweep-ticker"))
    # each labelled as the book writes a setting (0.016, 4), not in a log axis's 1.600e-2
    sweep.xaxis.formatter = CustomJSTickFormatter(code="return String(Number(tick.toPrecision(3)));")
    sweep.yaxis.name = name("sweep-yaxis")
    sweep.x_range.range_padding = 0.25
    sweep.add_layout(sweep.legend[0], "below")
    sweep.legend.orientation = "horizontal"
    sweep.legend.label_text_font_size = "8pt"
    return sweep


def _json_for_html(payload: dict) -> str:
    """``payload`` as JSON that is safe inside a ``<script type="application/json">`` element."""
    text = json.dumps(payload, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _colors(records: list[dict]) -> None:
    """Give each run record a colour by its temperature ratio on a log scale (viridis)."""
    taus = [r["tau"] for r in records] or [1.0]
    lo, hi = math.log(min(taus)), math.log(max(taus))
    for r in records:
        f = 0.0 if hi == lo else (math.log(r["tau"]) - lo) / (hi - lo)
        r["color"] = Viridis256[min(_PALETTE_SIZE - 1, int(round(f * (_PALETTE_SIZE - 1))))]


def page(data: Export, *, uid: str = "attnrank-explorer") -> str:
    """The explorer as one HTML fragment: controls, four panels, the data and every script inline.

    The fragment loads nothing: BokehJS (the version of the installed ``bokeh`` package) and the
    payload of ``data`` are in it, so it works from ``file://`` and from a static host. Element
    ids start with ``uid``.

    Raises:
        ConfigError: naming ``data`` when it holds no run, or ``uid`` when it is not a plain id.
    """
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", uid):
        raise ConfigError("uid", f"got {uid!r}; expected letters, digits, '-' and '_', starting with a letter")
    records = data.payload["runs"]
    if not records:
        raise ConfigError("data", "the export holds no run; train the main grid first (attnrank sweep)")
    n = max(r["attention"]["n"] for r in records)
    figs = _figures(uid, n)
    taus = [r["tau"] for r in records]
    for model in figs["curves"].select(type=LogColorMapper):
        model.low, model.high = min(taus), max(taus)
    script, divs = components(figs)
    bokeh_js = Resources(mode="inline", components=["bokeh"], log_level="error").render_js()
    config = {"uid": uid, "controls": [c for c, _ in CONTROLS]}
    controls = "".join(
        f'<label>{html.escape(label)}<select id="{uid}-{name}" name="{name}"></select></label>'
        for name, label in CONTROLS
    )
    panels = (
        f'<div class="ax-panel">{divs["heat"]}<p class="ax-text" id="{uid}-text"></p></div>'
        f'<div class="ax-panel">{divs["spectrum"]}<table class="ax-measures" id="{uid}-measures"></table></div>'
        f'<div class="ax-panel">{divs["curves"]}{divs["loss"]}</div>'
        f'<div class="ax-panel">{divs["sweep"]}</div>'
    )
    return (
        f"<style>{(STATIC / 'explorer.css').read_text(encoding='utf-8')}</style>"
        f'<div class="attnrank-explorer" id="{uid}">'
        f'<form class="ax-controls" id="{uid}-controls" onsubmit="return false">{controls}</form>'
        f'<p class="ax-run" id="{uid}-run" aria-live="polite">Loading the runs…</p>'
        f'<div class="ax-grid">{panels}</div></div>'
        f'<script type="application/json" id="{uid}-data">{_json_for_html(data.payload)}</script>'
        f"{bokeh_js}{script}"
        f'<script data-config="{html.escape(json.dumps(config))}">{(STATIC / "explorer.js").read_text(encoding="utf-8")}</script>'
    )


def view(data: Export):
    """:func:`page` as an ``IPython.display.HTML`` object (for ``book.glue`` or ``display``)."""
    return HTML(page(data))


def glue_values(data: Export, view=None) -> dict:
    """The values the chapter's prose pastes, from ``data`` and its page ``view`` (:func:`view`).

    ``explore_runs``, ``explore_profile``, ``explore_dataset``, ``explore_probe_size``,
    ``explore_steps_text`` (the probe steps at which the runs kept
    attention, in words), ``explore_error_text`` (the largest quantisation error, as a fraction of
    a matrix's largest entry), ``explore_bokeh`` (the version of Bokeh) and ``explore_page_mb``
    (the size of the page's HTML with its data and scripts, in MB; ``n/a`` without ``view``).
    """
    records = data.payload["runs"]
    kept = [r["attention"]["steps"] for r in records]
    steps = max(kept, key=len) if kept else []
    last = records[0]["rank_steps"][-1] if records else 0
    words = ", ".join(str(s) for s in steps[:-1]) + (f" and {steps[-1]}" if len(steps) > 1 else "")
    size = len(view.data.encode()) if view is not None else None
    return {
        "explore_runs": len(records),
        "explore_profile": data.profile,
        "explore_dataset": corpus_name(data.dataset),
        "explore_probe_size": data.payload["probe_size"],
        "explore_kept": ATTENTION_SEQUENCES,
        "explore_steps_text": f"training steps {words} (of {last})",
        "explore_error_text": f"1/{2 * data.plan.levels}" if data.plan else "n/a",
        "explore_plan": data.payload.get("plan", ""),
        "explore_bokeh": version("bokeh"),
        "explore_page_mb": fmt(size / 1e6, 1) if size is not None else "n/a",
    }


def run_table(data: Export) -> pd.DataFrame:
    """The runs on the page, for reading: architecture, settings, status, losses, primary rank and run key."""
    t = data.runs
    primary = MEASURE_LABELS.get(PRIMARY_MEASURE, PRIMARY_MEASURE)
    return pd.DataFrame(
        {
            "architecture": t.arch.map(ARCH_LABELS),
            "τ": t.tau.map(fmt_setting),
            "head dimension": t.head_dim,
            "heads": t.num_heads,
            "seed": t.seed,
            "status": t.status,
            "validation loss, initial → final (nats)": [
                f"{a:.3f} → {b:.3f}" for a, b in zip(t.initial_val_loss, t.final_val_loss)
            ],
            f"{primary}, initial → final": [
                f"{a:.2f} → {b:.2f}" for a, b in zip(t[f"initial_{PRIMARY_MEASURE}"], t[f"final_{PRIMARY_MEASURE}"])
            ],
            "run": [f"{a}-{k}" for a, k in zip(t.arch, t.key)],
        }
    )


def section(
    profile: str = "auto",
    *,
    taus=None,
    head_dims=None,
    seeds=None,
    dataset: str | None = None,
    budget: int = BUDGET_BYTES,
) -> Section:
    """The explorer chapter: the page (glued as ``explorer``), the numbers its prose pastes (:func:`glue_values`)
    and the table of its runs (``explore_run_table``), from :func:`export` of the main grid of ``profile`` on
    ``dataset`` at most ``budget`` bytes.

    Raises:
        ConfigError: for a parameter the sweep does not allow, or a grid without runs.
    """
    data = export(resolve_profile(profile), dataset, taus=taus, head_dims=head_dims, seeds=seeds, budget=budget)
    shown = view(data)
    return Section(
        "explore",
        {**glue_values(data, shown), "explorer": shown},
        [],
        [Table("explore_run_table", run_table(data))],
        [],
    )
