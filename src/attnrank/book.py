"""Helpers for the chapters: parameters, glue, figures with downloadable data, verdicts.

A chapter calls :func:`setup` in the cell after its ``parameters`` cell, then shows each
figure with :func:`show` (the figure, a numbered caption and a CSV download of its data)
and ends with :func:`verdict`, whose words and numbers are glued into the prose with
``myst_nb.glue``: no number in the text is typed by hand.
"""

from __future__ import annotations

import base64
import html
import math
import types

import pandas as pd

from .errors import ConfigError
from .profiles import resolve_profile

__all__ = ["Text", "setup", "check_parameters", "glue", "show", "verdict", "fmt", "VERDICTS"]

#: The verdicts a chapter may reach.
VERDICTS = ("supported", "not supported", "inconclusive at this scale")

_IPY_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open"}
_figure_counter = {"n": 0}


def check_parameters(namespace: dict, schema: dict[str, type | tuple[type, ...]]) -> None:
    """Check a notebook's parameters (after papermill injection) against ``schema``.

    ``schema`` maps each parameter name to its type(s). Raises :class:`ConfigError` naming
    the parameter for an unknown name (a papermill ``-p`` typo) or a value of the wrong type.
    """
    for name, value in list(namespace.items()):
        if name.startswith("_") or name in _IPY_NAMES or name in schema:
            continue
        if isinstance(value, (types.ModuleType, types.FunctionType, type)) or callable(value):
            continue
        raise ConfigError(name, f"unknown parameter; this chapter accepts: {', '.join(schema)}")
    for name, types_ in schema.items():
        if name not in namespace:
            raise ConfigError(name, "missing from the parameters cell")
        value = namespace[name]
        allowed = types_ if isinstance(types_, tuple) else (types_,)
        if float in allowed and isinstance(value, int) and not isinstance(value, bool):
            continue
        if isinstance(value, bool) and bool not in allowed:
            raise ConfigError(name, f"got {value!r}; expected {' or '.join(t.__name__ for t in allowed)}")
        if not isinstance(value, allowed):
            raise ConfigError(name, f"got {value!r} of type {type(value).__name__}; expected {' or '.join(t.__name__ for t in allowed)}")


def setup(profile: str = "auto") -> str:
    """Resolve ``profile``, apply the seaborn theme and reset figure numbering; returns the profile."""
    from . import plots

    profile = resolve_profile(profile)
    plots.set_theme()
    _figure_counter["n"] = 0
    return profile


def fmt(x, digits: int = 2) -> str:
    """Format a number for prose: ``digits`` significant decimals, NaN as 'n/a'."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if isinstance(x, int):
        return str(x)
    if abs(x) != 0 and (abs(x) < 10 ** -digits or abs(x) >= 1e5):
        return f"{x:.{digits}g}"
    return f"{x:.{digits}f}"


class Text(str):
    """A string that displays without quotes, as plain text and as Markdown.

    Glued strings use it, so ``{glue:text}`name``` and ``{glue:md}`name``` both paste the
    words themselves (a plain ``str`` would be pasted with its quotes).
    """

    def __repr__(self) -> str:
        return str(self)

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
        from myst_nb import glue as _glue
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - book extras not installed
        return value
    if get_ipython() is not None:
        _glue(name, value, display=display)
    return value


def _csv_link(data: pd.DataFrame, name: str) -> str:
    payload = base64.b64encode(data.to_csv(index=False).encode()).decode()
    return (f'<a download="{html.escape(name)}.csv" href="data:text/csv;base64,{payload}">'
            f"Download the data of this figure ({html.escape(name)}.csv, {len(data)} rows)</a>")


def show(fig, data: pd.DataFrame, name: str, caption: str) -> None:
    """Display ``fig`` with a numbered caption and a CSV download link of ``data``.

    The caption should state the profile, the number of runs and seeds.
    """
    import matplotlib.pyplot as plt
    from IPython.display import HTML, display

    _figure_counter["n"] += 1
    display(fig)
    plt.close(fig)
    display(HTML(f"<p><b>Figure {_figure_counter['n']}.</b> {html.escape(caption)}<br/>{_csv_link(data, name)}</p>"))


def verdict(name: str, status: str, summary: str) -> str:
    """Glue a chapter's verdict: ``{name}_status`` (one of :data:`VERDICTS`) and ``{name}_summary``.

    Returns a one-line Markdown rendering, also displayed in the notebook.
    """
    if status not in VERDICTS:
        raise ConfigError("status", f"got {status!r}; allowed values: {', '.join(VERDICTS)}")
    glue(f"{name}_status", status)
    glue(f"{name}_summary", summary)
    try:
        from IPython.display import Markdown, display

        display(Markdown(f"**Verdict: {status}.** {summary}"))
    except ImportError:  # pragma: no cover
        pass
    return f"**Verdict: {status}.** {summary}"
