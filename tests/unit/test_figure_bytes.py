"""Every public figure function of ``attnrank.plots`` draws the same pixels (RGBA bytes at the figure's own size and
resolution) on two calls with the same data (no hidden global randomness: strip-plot jitter, sampling, dates), and leaves the
caller's NumPy random stream as it was. A new figure function fails here until it has a sample."""

from __future__ import annotations

import functools
import importlib
import inspect
import math
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from attnrank.analysis.stats import Estimate
from attnrank.core.rank import MEASURES
from attnrank.plots import measure as pms
from attnrank.runs.presets import preset
from attnrank.sections import measure as ms
from attnrank.sections import protocol, seqlen
from attnrank.sections import theory as tx

MODULES = ("causal", "measure", "protocol", "seqlen", "sweeps", "theory", "training")
#: Public functions of the plot modules that draw no figure of their own.
HELPERS = {
    "set_theme",
    "new_figure",
    "figure",
    "measure_label",
    "axis_label",
    "fmt_value",
    "tau_label",
    "check_columns",
    "arch_color",
    "setting_label",
    "reference_lines",
    "limit_lines",
    "hue_scale",
    "threshold_lines",  # tables for a figure's reference lines, not figures
    "baselines",
}
ARCHS = ("modernbert", "gpt2")
TAUS = (0.25, 1.0, 4.0)


def _figure_functions() -> dict[str, object]:
    out = {}
    for name in MODULES:
        module = importlib.import_module(f"attnrank.plots.{name}")
        for attr in module.__all__:
            obj = getattr(module, attr)
            if inspect.isfunction(obj) and attr not in HELPERS and obj.__module__ == module.__name__:
                out[f"{name}.{attr}"] = obj
    return out


FUNCTIONS = _figure_functions()


# --- samples: small data for each function ------------------------------------------------------


def _curves(y="mean", failed=True):
    rows = []
    for arch in ARCHS:
        for measure in ("rank_rtol_1e-2", "effective_rank"):
            for tau in TAUS:
                for seed in (0, 1, 2):
                    status = "failed" if failed and (arch, tau, seed) == ("gpt2", 4.0, 1) else "complete"
                    for step in (0, 10, 20, 30):
                        rows.append(
                            dict(
                                arch=arch,
                                measure=measure,
                                tau=tau,
                                seed=seed,
                                step=step,
                                status=status,
                                **{y: 10 - np.log10(tau) + 0.1 * step + 0.2 * seed},
                            )
                        )
    return pd.DataFrame(rows)


def _runs():
    rows = []
    for arch in ARCHS:
        for tau in TAUS:
            for seed in range(4):
                rows.append(
                    dict(
                        arch=arch,
                        tau=tau,
                        seed=seed,
                        head_dim=16,
                        status="failed" if seed == 3 and tau == 4.0 else "complete",
                        initial=5 + seed + tau,
                        final=4 + seed * 0.5 + tau,
                        loss=6 - 0.1 * seed,
                    )
                )
    return pd.DataFrame(rows)


def _setting_data(x="tau", values=TAUS):
    rows = [
        dict(
            arch=a, **{x: v}, seed=s, measure=m, when=w, value=10 - np.log10(v) + s + (w == "final"), status="complete"
        )
        for a in ARCHS
        for v in values
        for s in (0, 1, 2)
        for m in MEASURES
        for w in ("initial", "final")
    ]
    return pd.DataFrame(rows)


def _distribution():
    return pd.DataFrame(
        [
            dict(arch=a, measure=m, change=0.01 * i * (1 + j), seed=i)
            for j, a in enumerate(ARCHS)
            for m in MEASURES
            for i in range(12)
        ]
    )


def _heat():
    return pd.DataFrame(
        [
            dict(arch=a, when=w, layer=layer, head=h, value=layer + h + (w == "final"))
            for a in ARCHS
            for w in ("initial", "final")
            for layer in range(2)
            for h in range(3)
        ]
    )


def _forest():
    return pd.DataFrame(
        [
            dict(panel=p, arch=a, lever=lv, estimate=e, low=e - 1, high=e + 1)
            for p in ("rank", "loss")
            for a in ARCHS
            for lv, e in (("tau halved", 3.0), ("head dimension doubled", 1.0))
        ]
    )


def _per_layer():
    return pd.DataFrame(
        [
            dict(arch=a, tau=t, seed=s, layer=layer, head=h, when=w, value=layer + t + h + 0.1 * s)
            for a in ARCHS
            for t in (0.25, 1.0)
            for s in (0, 1)
            for layer in range(3)
            for h in range(2)
            for w in ("initial", "final")
        ]
    )


def _causal_table():
    rows = []
    for a in ARCHS:
        for c, shift in (("stock", 0.0), ("init", 0.1), ("lr", 0.0), ("twin", 0.1), ("tau", 0.1)):
            for seed in range(3):
                rows.append(
                    dict(
                        arch=a,
                        cell=c,
                        seed=seed,
                        status="complete",
                        initial=2.0 + 10 * shift,
                        during=3.0 + shift,
                        final_val_loss=5.0 + shift + seed * 0.02,
                    )
                )
    return pd.DataFrame(rows)


def _intervention():
    return pd.DataFrame(
        [
            dict(arch=a, train_tau=t, seed=s, eval_tau=e, effective_rank=1.0 + e + s, val_loss=5.0 + 0.1 * e)
            for a in ARCHS
            for t in (1.0, 0.01)
            for s in (0, 1)
            for e in (0.01, 0.1, 1.0)
        ]
    )


def _spectra():
    return pd.DataFrame(
        [
            dict(arch=a, state=st, k=k, median=10.0**-k, low=10.0**-k / 2, high=10.0**-k * 2)
            for a in ARCHS
            for st in ("initialisation", "trained")
            for k in range(1, 9)
        ]
    )


def _spectra_table():
    return pd.DataFrame(
        [
            dict(arch=a, state=st, tau=t, pipeline=p, k=k, median=10.0**-k * t, low=10.0**-k / 2, high=10.0**-k * 2)
            for a in ARCHS
            for st in ("initialisation", "trained")
            for t in (0.1, 1.0)
            for p in (ms.REFERENCE, "float32 probs")
            for k in range(1, 9)
        ]
    )


def _matrices():
    return pd.DataFrame(
        [
            dict(arch=a, state=st, tau=t, sigma_1=1.0 + 0.1 * i)
            for a in ARCHS
            for st in ("initialisation", "trained")
            for t in (0.1, 1.0)
            for i in range(4)
        ]
    )


def _attention_examples():
    n = 10  # the book's (attnrank.analysis.spectra.attention_examples), so the token labels are as crowded as there
    rng = np.random.default_rng(0)
    rows, spectra = [], []
    for a in ARCHS:
        for st in ("initialisation", "trained"):
            for t in (0.001, 1.0, 1000.0):
                p = rng.dirichlet(np.ones(n), size=n)
                rows += [dict(arch=a, state=st, tau=t, i=i, j=j, value=p[i, j]) for i in range(n) for j in range(n)]
                sv = np.linalg.svd(p, compute_uv=False)
                spectra += [dict(arch=a, state=st, tau=t, k=k + 1, sigma=v) for k, v in enumerate(sv)]
    words = ["[CLS]", "First", "citizen", ":", "Before", "we", "proceed", "any", "further", ","]
    labels = {a: words[:n] for a in ARCHS}
    return pd.DataFrame(rows), pd.DataFrame(spectra), labels


def _by_tau():
    return pd.DataFrame(
        [
            dict(arch=a, tau=t, pipeline=p, measure=m, mean=5.0 + t, low=4.0, high=6.0 + t, n=2)
            for a in ARCHS
            for t in (0.1, 1.0, 10.0)
            for p in (ms.REFERENCE, "float32 probs, float64 SVD")
            for m in ms.RANK_MEASURES
        ]
    )


def _at1():
    return pd.DataFrame(
        [
            dict(arch=a, state=s, measure=m, mean=5.0 + i, low=4.0 + i, high=6.0 + i)
            for a in ARCHS
            for s in ("initialisation", "trained")
            for i, m in enumerate(ms.RANK_MEASURES)
        ]
    )


def _setting():
    used = pd.DataFrame({"arch": ["modernbert", "modernbert", "gpt2", "gpt2"], "seed": [0, 1, 0, 1], "max_len": 16})
    return ms.Setting.of(used, "ci", 8, [10.0, 0.1, 1.0])


def _records():
    pair = pd.DataFrame(
        [
            dict(key=f"{a}{t}{s}", arch=a, tau=t, seed=s, head_dim=16, status="complete", final_effective_rank=3.0 + s)
            for a in ARCHS
            for t in protocol.STUDY_TAUS
            for s in (0, 1)
        ]
    )
    seq = pd.DataFrame(
        [
            dict(
                key=r.key,
                arch=r.arch,
                tau=r.tau,
                seed=r.seed,
                status="complete",
                split=sp,
                sequence=i,
                step=st,
                **{m: 3.0 + i * 0.1 + st * 0.01 + r.seed for m in MEASURES},
            )
            for r in pair.itertuples()
            for sp, k in (("val", 6), ("train", 5))
            for i in range(k)
            for st in (0, 5, 20)
        ]
    )
    summary = pd.DataFrame(
        [
            dict(
                key=r.key,
                arch=r.arch,
                tau=r.tau,
                seed=r.seed,
                status="complete",
                measure=m,
                step=st,
                mean=3.0 + st * 0.1 + r.seed,
                sem=0.1,
            )
            for r in pair.itertuples()
            for m in MEASURES
            for st in (0, 5, 20)
        ]
    )
    return protocol.Records(pair, pair, 16, seq, summary, {"modernbert": 20, "gpt2": 20})


def _eval_log():
    return pd.DataFrame(
        [
            dict(arch=a, tau=t, seed=0, status="complete", step=st, val_loss=6.0 - 0.05 * st)
            for a in ARCHS
            for t in protocol.STUDY_TAUS
            for st in (0, 5, 20)
        ]
    )


def _draws():
    rng = np.random.default_rng(1)
    return pd.DataFrame(
        [dict(arch=a, step=st, draw=d, stat=float(rng.normal())) for a in ARCHS for st in (0, 20) for d in range(20)]
    )


def _by_step():
    return pd.DataFrame(
        [
            dict(
                arch=a,
                step=st,
                final_step=20,
                n=8,
                rho=r,
                low=r - 0.1,
                high=min(1.0, r + 0.1),
                estimate=Estimate(r, r - 0.1, min(1.0, r + 0.1), 8, ""),
            )
            for a in ARCHS
            for st, r in ((0, 0.5), (5, 0.8))
        ]
    )


def _seq_len_table():
    bound = {n: (1 - math.exp(-1)) * n + 1 for n in (32, 64)}
    rows = []
    for (arch, n), finals in {
        ("modernbert", 32): [1.1, 1.2, 1.3],
        ("modernbert", 64): [1.5, 1.6, 1.7],
        ("gpt2", 32): [10.0, 10.1, 10.2],
        ("gpt2", 64): [bound[64], bound[64] + 1, bound[64] + 2],
    }.items():
        for seed, v in enumerate(finals):
            row = {"arch": arch, "max_len": n, "seed": seed, "status": "complete"}
            row.update({f"{w}_{m}": v for m in MEASURES for w in ("initial", "final")})
            rows.append(row)
    return seqlen.report_from_runs(pd.DataFrame(rows), "ci sizes", "ci", (32, 64)).figure[1]


@functools.cache
def _theory_sections():
    z = dict(
        tx.sizes("ci"),
        p0_n=5,
        p0_inst=2,
        p0_digits=30,
        stair_n=6,
        taylor_n=6,
        taylor_inst=1,
        sat_n=8,
        sat_head_dims=[1, 4],
        sat_samples=3,
        p2_n=6,
        p2_d=2,
        p2_inst=2,
        p2_grid=8,
        n_values=[4, 8],
        mc_head_dims=[1, 4],
        mc_samples=3,
    )
    return z, {
        "p0": tx.p0(**z),
        "p1_staircase": tx.p1_staircase(**z),
        "p1_taylor": tx.p1_taylor(**z),
        "p1p": tx.p1p_saturation(**z),
        "p2": tx.p2_hardmax(**z),
        "thm": tx.theorem(**z),
    }


def _toy():
    # at the default build's size (its temperatures and head dimensions), where tick labels and legends are most crowded
    sizes = preset("target", "quick")
    return pd.DataFrame(
        [
            dict(
                variant=v,
                target=t,
                tau=tau,
                head_dim=d,
                seed=s,
                value=tau * d + s,
                kl=0.1 * tau / d + 0.01 * s,
                rank=d + s,
            )
            for v in ("standard", "normalised")
            for t in ("low", "high", "permutation")  # three targets, as the chapter: three panels a row
            for tau in sizes["taus"]
            for d in sizes["head_dims"]
            for s in (0, 1)
        ]
    )


def _floor():
    from types import SimpleNamespace

    from attnrank.sections.target import floor_table

    return floor_table(SimpleNamespace(**preset("target", "quick")))


def _toy_curves():
    return pd.DataFrame(
        [
            dict(variant=v, head_dim=d, tau=tau, seed=s, step=st, kl=1.0 / (1 + st) + 0.01 * s)
            for v in ("standard",)
            for d in (2, 4)
            for tau in (0.5, 1.0)
            for s in (0, 1)
            for st in (0, 10, 20)
        ]
    )


def _samples() -> dict:
    def z():
        return _theory_sections()[0]

    def sec(name):
        return _theory_sections()[1][name]

    uniform = {a: {m: 2.0 for m in ("rank_rtol_1e-2", "effective_rank")} for a in ARCHS}
    heads = _curves().assign(head_dim=lambda d: np.where(d.seed == 0, 8, 16))
    scatter = _runs().assign(head_dim=lambda d: np.where(d.seed % 2, 8, 16))
    est = Estimate(0.5, 0.2, 0.8, 10, "")
    loss_curves = pd.concat(
        [
            _curves("value")[lambda d: d.measure == "effective_rank"].drop(columns="measure").assign(curve=c)
            for c in ("val", "train")
        ]
    )
    return {
        "causal.cells": lambda: cells_args(),
        "causal.intervention": lambda: ((_intervention(), "effective_rank", "effective rank"), {}),
        "causal.cells_figure": lambda: (
            (_causal_table(),),
            dict(tau=0.01, measure="effective_rank", profile="ci", n_runs=30),
        ),
        "causal.intervention_figure": lambda: (
            (_intervention(),),
            dict(measure="effective_rank", profile="ci"),
        ),
        "measure.spectra": lambda: ((_spectra(),), {}),
        "measure.attention_patterns": lambda: (_attention_examples(), {}),
        "measure.rank_vs_tau": lambda: (
            (_by_tau()[lambda d: d.pipeline == ms.REFERENCE],),
            {"highlight": "effective_rank"},
        ),
        "measure.precision_by_tau": lambda: ((_by_tau(),), {"reference": ms.REFERENCE}),
        "measure.measure_points": lambda: ((_at1(), pms.baselines(ms.uniform_causal(8), 8)), {}),
        "measure.spectra_tau1_figure": lambda: ((_spectra_table(), _matrices(), _setting()), {}),
        "measure.ranks_tau1_figure": lambda: ((_at1(), ms.uniform_causal(8), _setting()), {}),
        "measure.ranks_vs_tau_figure": lambda: (
            (_by_tau()[lambda d: d.pipeline == ms.REFERENCE], ms.uniform_causal(8), _setting(), "effective_rank"),
            {},
        ),
        "measure.spectra_extremes_figure": lambda: ((_spectra_table(), _matrices(), _setting()), {}),
        "measure.precision_figure": lambda: ((_by_tau(), _setting()), {}),
        "protocol.study_view": lambda: ((_records(), _eval_log(), "ci"), {}),
        "protocol.draws_figure": lambda: ((_draws(), _records(), "ci"), {}),
        "protocol.our_view": lambda: ((_records(), "ci"), {}),
        "protocol.set_early_figure": lambda: ((_by_step(), "ci", 0.9), {}),
        "seqlen.rank_vs_seq_len": lambda: ((_seq_len_table(), ["effective_rank", "rank_rtol_1e-2"]), {}),
        "sweeps.by_setting": lambda: ((_setting_data(),), {"facet": "measure", "style": "when", "highlight": 1.0}),
        "sweeps.per_layer": lambda: ((_per_layer(),), {"highlight": 0.25, "baseline": 1.0, "ylabel": "rank"}),
        "sweeps.effect_forest": lambda: ((_forest(),), {}),
        "theory.exact_spectrum": lambda: ((sec("p0").tables["spectrum"],), {}),
        "theory.staircase": lambda: ((sec("p1_staircase").tables["sv"], sec("p1_staircase").tables["slopes"]), {}),
        "theory.taylor_bound": lambda: ((sec("p1_taylor").tables["bound"],), {}),
        "theory.saturation": lambda: ((sec("p1p").tables["sat"], sec("p1p").tables["limit"]), {}),
        "theory.hardmax_convergence": lambda: ((sec("p2").tables["curves"], sec("p2").tables["thresholds"]), {}),
        "theory.hardmax_monte_carlo": lambda: ((sec("thm").tables["mc"], sec("thm").tables["refs"]), {}),
        "theory.toy_heatmaps": lambda: ((_toy(), "value"), {}),
        "theory.toy_kl_vs_tau": lambda: ((_toy(),), {"floor": _floor()}),
        "theory.toy_curves": lambda: ((_toy_curves(), [("standard", 2), ("standard", 4)]), {}),
        "theory.rank_vs_kl": lambda: ((_toy(),), {"n": 4}),
        "theory.section_figure": lambda: (("p1_taylor", sec("p1_taylor"), z()), {}),
        "training.trajectories": lambda: (
            (_curves(),),
            {"y": "mean", "row": "arch", "col": "measure", "highlight": 1.0},
        ),
        "training.run_scatter": lambda: (
            (_runs(),),
            {"x": "initial", "y": "final", "identity": True, "connect": "seed"},
        ),
        "training.change_distribution": lambda: ((_distribution(),), {"x": "change", "reference": 0.1}),
        "training.layer_head_heatmaps": lambda: ((_heat(),), {}),
        "training.measure_trajectories": lambda: ((_curves(), uniform), {"label": "uniform attention"}),
        "training.loss_trajectories": lambda: (
            (loss_curves, {"modernbert": 5.0, "gpt2": 5.5}, {a: {"bigram": 5.2} for a in ARCHS}),
            {},
        ),
        "training.head_dim_trajectories": lambda: (
            (heads[heads.measure == "effective_rank"],),
            {"highlight": 16, "ylabel": "effective rank"},
        ),
        "training.head_dim_scatter": lambda: (
            (scatter,),
            dict(
                x="initial",
                y="loss",
                rho={t: {a: est for a in ARCHS} for t in TAUS},
                references={a: {"bigram": 5.5} for a in ARCHS},
                xlabel="initial",
                ylabel="loss",
            ),
        ),
        "training.val_loss_trajectories": lambda: ((_eval_log(),), {}),
    }


def cells_args():
    from attnrank.sections.causal import CELL_LABELS, CELLS

    outcomes = {"initial": "initial", "during": "during", "final_val_loss": "loss"}
    return (_causal_table(), outcomes, CELLS, dict(CELL_LABELS)), {}


SAMPLES = _samples()


def _drawn(result):
    """The figure of ``result`` (a figure, or a tuple whose first item is one), drawn once on an Agg canvas at
    its own size and resolution (the book's PNG), with the renderer that drew it and its pixels (RGBA bytes)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = result[0] if isinstance(result, tuple) else result
    canvas = FigureCanvasAgg(fig)  # the figure may be closed (pyplot then leaves it a bare canvas)
    canvas.draw()
    return fig, canvas.get_renderer(), bytes(canvas.buffer_rgba())


def test_every_public_figure_function_has_a_sample():
    assert sorted(FUNCTIONS) == sorted(SAMPLES), "give each new figure function a sample in SAMPLES"


def test_every_public_figure_function_draws_with_a_fixed_random_state():
    undecorated = [name for name, fn in FUNCTIONS.items() if not getattr(fn, "__attnrank_figure__", False)]
    assert undecorated == [], "decorate these with attnrank.plots.figure"


def _off_canvas(fig, renderer) -> list[str]:
    """The texts (titles, axis and colour-bar labels, notes) and legends of ``fig`` that reach beyond its
    canvas: the book's PNG keeps the figure's size, so the page would show them cut off. Tick labels are
    left out (Matplotlib keeps hidden ones outside the view)."""
    from matplotlib.axis import Tick
    from matplotlib.legend import Legend
    from matplotlib.text import Text

    width, height = fig.bbox.width, fig.bbox.height
    skip = {id(t) for tick in fig.findobj(Tick) for t in (tick.label1, tick.label2)}
    skip |= {id(t) for legend in fig.findobj(Legend) for t in legend.get_texts()}
    out = []
    for artist in fig.findobj(lambda a: isinstance(a, (Text, Legend)) and a.get_visible()):
        if id(artist) in skip or (isinstance(artist, Text) and not artist.get_text().strip()):
            continue
        box = artist.get_window_extent(renderer)
        if box.x0 < -1 or box.y0 < -1 or box.x1 > width + 1 or box.y1 > height + 1:
            what = artist.get_text() if isinstance(artist, Text) else "a legend"
            out.append(
                f"{what!r} at x {box.x0:.0f}..{box.x1:.0f}, y {box.y0:.0f}..{box.y1:.0f} of {width:.0f} x {height:.0f} px"
            )
    return out


def _small_text(fig) -> list[str]:
    """Visible texts of ``fig`` set below :data:`attnrank.plots.style.MIN_FONT_SIZE` points. A figure is shown at
    the column's pixels per inch whatever its width (attnrank.book.figure_png), so a point size is a size on the
    page: the smallest print of the book's text."""
    from matplotlib.text import Text

    from attnrank.plots.style import MIN_FONT_SIZE

    return [
        f"{t.get_text()!r} at {t.get_fontsize():.1f} pt"
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and t.get_fontsize() < MIN_FONT_SIZE - 1e-9
    ]


def _collisions(fig, r, tolerance: float = 1.0) -> list[str]:
    """Texts of ``fig`` that run into each other or into a neighbouring panel: a title, axis label or tick label
    of one panel overlapping a text or the plotting area of another panel (colour bars count as panels), a
    figure-level text or legend overlapping a panel's texts, or two tick labels of one axis overlapping.
    Overlaps under ``tolerance`` pixels each way are ignored.

    A tick counts where Matplotlib draws it: inside the axis's view, compared on the axis's scale (as
    ``Axis._update_ticks`` does). Compared in data units with an absolute margin, a log axis whose view starts at
    1e-20 also took the undrawn tick label 10^-21 below it (for 1e-20 - 1e-9 < 1e-21), which is not on the PNG."""
    from matplotlib.legend import Legend

    def shown(t):
        return t.get_visible() and t.get_text().strip() and t.get_alpha() != 0

    def ticklabels(axis):
        scale = axis.get_transform()
        lo, hi = sorted(scale.transform(np.asarray(axis.get_view_interval(), float)))
        margin = 1e-9 * max(1.0, hi - lo)
        out = []
        for tick in axis.get_major_ticks() + axis.get_minor_ticks():
            loc = tick.get_loc()
            if loc is None:
                continue
            with np.errstate(divide="ignore", invalid="ignore"):
                at = float(scale.transform(np.asarray([loc], float))[0])
            if not (np.isfinite(at) and lo - margin <= at <= hi + margin):
                continue
            out += [t for t in (tick.label1, tick.label2) if shown(t)]
        return out

    def texts(ax):
        own = [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        return [t for t in own if shown(t)] + ticklabels(ax.xaxis) + ticklabels(ax.yaxis)

    def overlap(a, b):
        return min(a.x1, b.x1) - max(a.x0, b.x0) > tolerance and min(a.y1, b.y1) - max(a.y0, b.y0) > tolerance

    axes = [ax for ax in fig.get_axes() if ax.get_visible() and ax.axison]
    boxes = {id(ax): [(t.get_text(), t.get_window_extent(r)) for t in texts(ax)] for ax in axes}
    out = []
    for i, a in enumerate(axes):
        for b in axes[i + 1 :]:
            for ta, ba in boxes[id(a)]:
                for tb, bb in boxes[id(b)]:
                    if overlap(ba, bb):
                        out.append(f"{ta!r} runs into {tb!r} of another panel")
            for (ta, ba), other in [*((x, b) for x in boxes[id(a)]), *((x, a) for x in boxes[id(b)])]:
                if overlap(ba, other.get_window_extent(r)):
                    out.append(f"{ta!r} runs into the plotting area of another panel")
    for axis_ax in axes:
        for axis in (axis_ax.xaxis, axis_ax.yaxis):
            labels = [t.get_window_extent(r) for t in ticklabels(axis)]
            names = [t.get_text() for t in ticklabels(axis)]
            for j in range(len(labels)):
                for k in range(j + 1, len(labels)):
                    if overlap(labels[j], labels[k]):
                        out.append(f"tick labels {names[j]!r} and {names[k]!r} overlap")
    top = [t for t in fig.texts if shown(t)] + [lg for lg in fig.legends if lg.get_visible()]
    if getattr(fig, "_suptitle", None) is not None and shown(fig._suptitle):
        top.append(fig._suptitle)
    for t in top:
        bt = t.get_window_extent(r)
        what = "a figure legend" if isinstance(t, Legend) else repr(t.get_text())
        for ax in axes:
            for tb, bb in boxes[id(ax)]:
                if overlap(bt, bb):
                    out.append(f"{what} runs into {tb!r}")
            if overlap(bt, ax.get_window_extent(r)):
                out.append(f"{what} runs into a plotting area")
    return sorted(set(out))


def _identifiers(fig) -> list[str]:
    """Visible texts of ``fig`` (legends, labels, titles, ticks) that show a code identifier, such as a measure's
    registry name (``rank_rtol_1e-2``) or a column name, outside mathematics: a reader sees the measure's own name."""
    import re

    from matplotlib.text import Text

    out = []
    for t in fig.findobj(Text):
        text = re.sub(r"\$[^$]*\$", "", t.get_text()) if t.get_visible() else ""
        if re.search(r"\b[A-Za-z]+_[A-Za-z0-9_.\-]+", text) or any(m in text for m in MEASURES):
            out.append(repr(t.get_text()))
    return sorted(set(out))


def _legend_over_data(fig, r) -> list[str]:
    """Legends drawn inside a panel that cover its data: a marker or a point of a line (``ax.lines``: its vertices
    and the segments between them, where a curve crosses the box between two vertices) or a scatter point (a
    collection's offsets) inside the legend's box. Bands and bars are left out (they fill the panel)."""
    from matplotlib.collections import PathCollection

    def along(xy):  # each segment sampled every few pixels of the display
        if len(xy) < 2:
            return xy
        t = np.linspace(0, 1, 16)[:-1, None]
        return np.concatenate([*(a + t * (b - a) for a, b in zip(xy[:-1], xy[1:], strict=True)), xy[-1:]])

    out = []
    for ax in fig.get_axes():
        legend = ax.get_legend()
        if legend is None or not legend.get_visible():
            continue
        box = legend.get_window_extent(r)
        points = [
            along(line.get_transform().transform(np.column_stack(line.get_data()).astype(float))) for line in ax.lines
        ]
        points += [
            c.get_offset_transform().transform(c.get_offsets()) for c in ax.collections if isinstance(c, PathCollection)
        ]
        xy = np.concatenate([p for p in points if len(p)]) if any(len(p) for p in points) else np.empty((0, 2))
        xy = xy[np.isfinite(xy).all(axis=1)]
        inside = (xy[:, 0] > box.x0) & (xy[:, 0] < box.x1) & (xy[:, 1] > box.y0) & (xy[:, 1] < box.y1)
        if inside.any():
            out.append(f"the legend of {ax.get_title()!r} covers {int(inside.sum())} data points")
    return out


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_a_figure_is_the_same_bytes_on_every_call_and_fits_its_canvas(name):
    args, kwargs = SAMPLES[name]()
    np.random.seed(12345)
    before = np.random.get_state()[1].copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a figure function prints no warning (it would reach the page)
        first = _drawn(FUNCTIONS[name](*args, **kwargs))
    plt.close(first[0])
    assert (np.random.get_state()[1] == before).all(), "the caller's random stream was changed"
    np.random.rand(7)  # another global state: the figure must not depend on it
    fig, renderer, second = _drawn(FUNCTIONS[name](*args, **kwargs))
    try:
        assert first[2] == second  # the same pixels
        assert _off_canvas(fig, renderer) == []  # nothing cut off on the page
        assert _collisions(fig, renderer) == []  # no label runs into another or into a neighbouring panel
        assert _small_text(fig) == []  # every text legible at the column's width
        assert _legend_over_data(fig, renderer) == []  # no legend hides a point or a line
        assert _identifiers(fig) == []  # no code identifier where a reader reads words
    finally:
        plt.close(fig)
