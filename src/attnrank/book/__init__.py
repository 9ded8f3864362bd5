"""What a chapter's notebook calls: its parameters checked, its section published for the prose.

A chapter's notebook has a ``parameters`` cell and one code cell, its input folded on the page, that checks them
(:func:`check_parameters`) and makes one call, ``book.publish(<chapter module>.section(**params))``:
:func:`publish` glues every part of the :class:`attnrank.sections.section.Section` under its name (numbers and
sentences for ``{glue:text}`` / ``{glue:md}``, figures for a numbered ``{glue:figure}`` whose caption and alt text
the chapter writes, with the caption's result-dependent words and the figure's data, tables for ``{glue}``, each
verdict with its badge and its line for the intro's table), so that no number in the text is typed by hand.
"""

from __future__ import annotations

import ast
import html
import inspect
import math
import re
import types

import pandas as pd

from ..analysis.verdicts import VERDICTS
from ..core.errors import ConfigError
from ..core.measures import MEASURES
from ..core.profiles import PROFILES, TAU_RANGE, check_dataset, default_threads
from ..plots.style import COLUMN_WIDTH
from ..runs.parameters import SWEEP_PARAMETERS, Param
from ..sections.section import Figure, Section, Table, Verdict
from ..words.glossary import fmt_column
from ..words.typeset import typeset

__all__ = [
    "PARAMETERS",
    "Param",
    "Text",
    "check_parameters",
    "glue",
    "glue_all",
    "show",
    "table",
    "verdict",
    "publish",
    "published_names",
    "published_verdicts",
    "glued_text",
    "pasted_names",
    "publish_verdict",
    "table_html",
    "badge",
    "figure_png",
    "data_url",
    "VERDICTS",
]


_IPY_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open"}


#: Every chapter parameter, with one meaning and one check across all chapters.
PARAMETERS: dict[str, Param] = {
    "profile": Param(str, choices=("auto",) + PROFILES, help="the compute profile"),
    **SWEEP_PARAMETERS,  # seeds, taus, head_dims: the shared sweep's, declared once (sweep_plan applies the same)
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
        help="the training corpus, 'shakespeare', 'stdlib' (Python source) or 'hf:NAME[:CONFIG]' (a hub dataset or a local folder); "
        "None is ATTNRANK_DATASET or 'shakespeare'",
    ),
    "eval_taus": Param(float, *TAU_RANGE, many=True, help="evaluation temperature ratios of the trained models"),
}


def _check_dataset(name: str, value: str) -> str:
    try:
        return check_dataset(value)
    except ConfigError as exc:
        raise ConfigError(name, str(exc).split(": ", 1)[-1]) from None


def check_parameters(namespace: dict, chapter) -> dict:
    """Check a chapter's parameters (after papermill injection) against :data:`PARAMETERS`.

    ``chapter`` is the function the chapter passes them to (its module's ``section``): its parameters that
    :data:`PARAMETERS` defines are the chapter's, so the function's signature is their one declaration (a
    keyword the schema does not define, such as the explorer's ``budget``, is the library's, not the page's).
    A sequence of names also works. Each value is checked and normalised (see :class:`Param`) and written back
    into ``namespace``, so the chapter goes on with clean values; the normalised values are also returned.

    Every chapter calls it first, so it also sets the torch threads of the chapter's analyses to
    :func:`attnrank.core.profiles.default_threads` (``ATTNRANK_THREADS``, default 1, as a run's): a chapter computes
    the same numbers on any machine and however it is executed (up front, two at a time on two cores, or
    alone while read, or by papermill), and two chapters executing at once do not oversubscribe the cores
    (which made the measure chapter's analysis 1.7 times slower). ``ATTNRANK_THREADS`` is part of the
    execution cache's context and the thread count part of every cached table's key.

    Raises:
        ConfigError: naming the parameter, for a name the chapter does not declare (a
            papermill ``-p`` typo; the message lists the chapter's parameters), a declared
            name missing from ``namespace``, or a value outside :meth:`Param.describe`;
            naming ``ATTNRANK_THREADS`` for an invalid value.
        KeyError: for a listed name that :data:`PARAMETERS` does not define (a chapter bug).
    """
    from ..runs.grid import quiet_transformers  # here, not at the top: importing the book loads no torch

    quiet_transformers()  # the chapter's own loads print no notice on its page, whatever TRANSFORMERS_VERBOSITY says
    import torch  # here, not at the top: the book's words load without torch

    torch.set_num_threads(default_threads())
    if callable(chapter):
        names = tuple(name for name in inspect.signature(chapter).parameters if name in PARAMETERS)
    else:
        names = tuple(chapter)
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
    if type(value) in (str, Text):  # a plain string; Markdown and HTML strings keep their own display
        value = Text(typeset(value))  # what the page shows: ASCII maths typeset (tau = 1 as τ = 1)
    elif type(value) is _Markdown:
        value = _Markdown(typeset(value))
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


def show(fig, data: pd.DataFrame, name: str, source: str = "") -> None:
    """Publish one figure (:class:`attnrank.sections.section.Figure`: ``fig``, its ``data`` and the caption's
    ``source`` words) under ``name`` for a ``{glue:figure}`` of the prose; nothing is displayed by the cell."""
    publish(Section(name, figures=[Figure(name, fig, data, source)]))


def table(frame: pd.DataFrame, *, digits: int = 2, formats: dict | None = None):
    """Display ``frame`` as a table for reading (:func:`table_html`: its columns as named, no index, one
    number format); for a cell whose input the page hides."""
    from IPython.display import HTML, display

    display(HTML(table_html(Table("table", frame, digits=digits, formats=formats or {}))))


def verdict(
    name: str,
    status: str,
    summary: str,
    *,
    regime: str,
    finding: str,
    effect: str,
    n: str,
    by_measure: dict[str, str] | None = None,
):
    """Build a chapter's verdict record (:class:`attnrank.sections.section.Verdict`, checked) and publish it
    (:func:`publish_verdict`: ``{name}_status``, ``{name}_badge``, ``{name}_summary``, ``{name}_regime``, ...).

    Args:
        name: the verdict's glue prefix (for example ``"dynamics"``).
        status: the verdict on the primary rank measure, one of :data:`VERDICTS`.
        summary: the sentences the chapter shows, with the effect size, its interval and n.
        regime: one short computed clause saying where the verdict was computed.
        finding, effect, n: the verdict's one line for the intro's table, its effect with the interval,
            and the independent units it rests on.
        by_measure: for a verdict computed from a rank measure, the same pre-registered rule applied
            with every measure of :data:`attnrank.core.rank.MEASURES` (``{measure: status}``).

    Returns the record.

    Raises:
        ConfigError: naming ``status``, ``regime``, ``finding`` or ``by_measure`` for a status outside
        :data:`VERDICTS`, an empty regime, a finding of more than :data:`attnrank.sections.section.WORD_LIMIT`
        words or an unknown measure.
    """
    if by_measure is not None:
        bad = sorted(v for v in by_measure.values() if v not in VERDICTS)
        if bad:
            raise ConfigError("by_measure", f"got statuses {bad}; allowed statuses: {', '.join(VERDICTS)}")
    record = Verdict(name, status, finding, effect, n, regime, summary, dict(by_measure or {}))
    publish_verdict(record)
    return record


# --------------------------------------------------------------------------- publishing a section
#: Where a figure's data lies in the built site, relative to the site's root (one file per figure).
DATA_FOLDER = "data"
#: The MIME type a figure's data is glued under; the book's Sphinx extension writes it to
#: ``<site>/data/<figure name>.csv`` (:func:`attnrank.sphinxext.pages.write_figure_data`).
CSV_MIME = "text/csv"
#: The width of the book's text column in CSS pixels at a 1280 px wide window: a figure
#: :data:`attnrank.plots.style.COLUMN_WIDTH` inches wide is shown at this width.
COLUMN_PX = 688


#: Columns a figure's data file never carries: a run's folder on the machine that built the book (the
#: run's ``key`` names it on every machine).
MACHINE_COLUMNS = ("path",)


class _Data:
    """A figure's data as a glued CSV (its own MIME type, never rendered on the page), without
    :data:`MACHINE_COLUMNS`."""

    def __init__(self, frame: pd.DataFrame):
        self.csv = frame.drop(columns=[c for c in MACHINE_COLUMNS if c in frame]).to_csv(index=False)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {CSV_MIME: self.csv, "text/plain": f"<{self.csv.count(chr(10)) - 1} rows of CSV>"}


class _Markdown(str):
    """Markdown pasted with ``{glue:md}`` (a caption's last words with a link)."""

    def _repr_markdown_(self) -> str:
        return str(self)

    def __repr__(self) -> str:
        return str(self)


def figure_png(fig, *, dpi: int = 200) -> tuple[bytes, int]:
    """The PNG of ``fig`` at ``dpi`` (not cropped: the figure keeps the size it was drawn at) and the CSS
    width in pixels to show it at: :data:`COLUMN_PX` for a figure :data:`attnrank.plots.style.COLUMN_WIDTH`
    inches wide, proportionally less for a narrower one, so that its type is as large as the page's small
    print."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue(), round(COLUMN_PX * min(fig.get_figwidth(), COLUMN_WIDTH) / COLUMN_WIDTH)


def data_url(name: str) -> str:
    """The address of figure ``name``'s data from a chapter page (``chapters/<page>.html``)."""
    return f"../{DATA_FOLDER}/{name}.csv"


def table_html(table) -> str:
    """A :class:`attnrank.sections.section.Table` as an HTML table for reading: its columns as named, no
    index, every float column written in one format by :func:`attnrank.words.glossary.fmt_column` with
    ``table.digits`` decimals unless ``table.formats`` gives the column its own writer."""
    frame = table.frame.reset_index(drop=True)
    cells = []
    for i, c in enumerate(frame.columns):
        values = frame.iloc[:, i].tolist()
        if c in table.formats:
            cells.append([table.formats[c](v) for v in values])
        elif pd.api.types.is_float_dtype(frame.iloc[:, i]):
            cells.append(fmt_column(values, table.digits))  # one format for the whole column
        else:
            cells.append(["n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v) for v in values])
    head = "".join(f"<th>{html.escape(typeset(str(c)))}</th>" for c in frame.columns)
    numeric = [pd.api.types.is_numeric_dtype(frame.iloc[:, i]) for i in range(frame.shape[1])]
    rows = "".join(
        "<tr>"
        + "".join(
            f'<td class="{"num" if numeric[i] else "text"}">{html.escape(typeset(cells[i][r]))}</td>'
            for i in range(frame.shape[1])
        )
        + "</tr>"
        for r in range(len(frame))
    )
    return f'<table class="attnrank-table"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


#: Each verdict's badge class (coloured by the book's style sheet, ``_static/attnrank.css``).
BADGES = {"supported": "supported", "not supported": "not-supported", "inconclusive at this scale": "inconclusive"}


class _Html(_Markdown):
    """HTML pasted with ``{glue:md}`` on its own page and with ``{glue}`` from another page (a badge)."""

    def _repr_html_(self) -> str:
        return str(self)


def badge(status: str) -> str:
    """A verdict as a coloured badge (HTML, pasted with ``{glue:md}``)."""
    if status not in BADGES:
        raise ConfigError("status", f"got {status!r}; allowed values: {', '.join(VERDICTS)}")
    return f'<span class="verdict-badge verdict-{BADGES[status]}">{html.escape(status)}</span>'


def publish_verdict(v) -> None:
    """Glue a :class:`attnrank.sections.section.Verdict` under its name: ``{name}_status``, ``{name}_badge``
    (:func:`badge`), ``{name}_finding`` (the intro's one line), ``{name}_effect``, ``{name}_units``
    (the ``n`` it rests on), ``{name}_regime``, ``{name}_summary`` and ``{name}_status__{measure}`` for every measure of
    :data:`attnrank.core.rank.MEASURES` (``"n/a"`` where the rule does not read that measure)."""
    unknown = sorted(set(v.by_measure) - set(MEASURES))
    if unknown:
        raise ConfigError("by_measure", f"got measures {unknown}; allowed measures: {', '.join(MEASURES)}")
    if v.by_measure:
        for m in MEASURES:
            glue(f"{v.name}_status__{m}", v.by_measure.get(m, "n/a"))
    for part, value in v.parts().items():
        glue(f"{v.name}_{part}", value)
    glue(f"{v.name}_badge", _Html(badge(v.status)))


def glued_text(output) -> str:
    """The text a cell glued, read back from a myst-nb glue file's ``output`` (its ``text/plain``, which holds a
    string's ``repr`` where the string has quotes in it); ``""`` when there is none."""
    import ast

    data = output.get("data", {}) if isinstance(output, dict) else {}
    value = data.get("text/plain", "")
    value = "".join(value) if isinstance(value, list) else str(value)
    if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"":
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value
        return parsed if isinstance(parsed, str) else value
    return value


def built_profile(folder) -> str:
    """The profile a built book was built at, read back from its glue files (``repro_profile``, which the
    reproducibility chapter glues) under ``folder`` (the build's ``jupyter_execute``).

    Raises:
        ConfigError: naming ``folder`` when no glue file holds it.
    """
    import json
    from pathlib import Path

    for path in sorted(Path(folder).rglob("*.glue.json")):
        glued = json.loads(path.read_text())
        if "repro_profile" in glued:
            return glued_text(glued["repro_profile"])
    raise ConfigError("folder", f"no glue file under {str(folder)!r} holds the build's profile: build the book first")


def published_verdicts(folder) -> pd.DataFrame:
    """The verdicts a built book published (:func:`publish_verdict`), read back from myst-nb's glue files
    (``<page>.glue.json`` under ``folder``, the build's ``jupyter_execute``): one row per verdict with ``verdict``,
    ``status``, ``effect``, ``n`` (its units), ``regime`` (the brief clause) and ``finding``, in page order; and a
    row ``regime`` whose ``finding`` is the regime the models reached (``learned_regime``), when glued.

    Raises:
        ConfigError: naming ``folder`` when it holds no glue file.
    """
    import json
    from pathlib import Path

    files = sorted(Path(folder).rglob("*.glue.json"))
    if not files:
        raise ConfigError("folder", f"no glue files under {str(folder)!r}: build the book first")

    rows, regime = [], None
    for path in files:
        glued = json.loads(path.read_text())
        regime = glued_text(glued["learned_regime"]) if "learned_regime" in glued else regime
        for key in glued:
            name = key[: -len("_status")]
            if key.endswith("_status") and f"{name}_units" in glued:
                rows.append(
                    dict(
                        verdict=name,
                        status=glued_text(glued[key]),
                        effect=glued_text(glued.get(f"{name}_effect", {})),
                        n=glued_text(glued[f"{name}_units"]),
                        regime=glued_text(glued.get(f"{name}_regime_brief", {})),
                        finding=glued_text(glued.get(f"{name}_finding", {})),
                    )
                )
    if regime is not None:
        rows.append(dict(verdict="regime", status="", effect="", n="", regime="", finding=regime))
    return pd.DataFrame(rows)


def published_names(section) -> set[str]:
    """Every name :func:`publish` glues for ``section`` (what the chapter's prose may paste)."""
    names = set(section.glue) | {t.name for t in section.tables}
    for f in section.figures:
        names |= {f.name, f"{f.name}__source", f"{f.name}__data"}
    for v in section.verdicts:
        names |= {f"{v.name}_{p}" for p in v.parts()} | {f"{v.name}_badge"}
        if v.by_measure:
            names |= {f"{v.name}_status__{m}" for m in MEASURES}
    return names


#: What a chapter's prose pastes: ``{glue:text}`name```, ``{glue:md}`name```, ``{glue} name`` and
#: ``{glue:figure} name`` (a name with ``::`` is another page's).
GLUE_REFERENCE = re.compile(
    r"\{glue(?::[a-z]+)?\}`([A-Za-z0-9_]+)(?::[^`]*)?`|```\{(?:glue(?::[a-z]+)?|attnrank-table)\} ([A-Za-z0-9_]+)"
)


def pasted_names(text: str) -> set[str]:
    """The names of this page's glued values that a chapter's prose ``text`` pastes (:data:`GLUE_REFERENCE`)."""
    return {a or b for a, b in GLUE_REFERENCE.findall(text)}


def publish(section) -> None:
    """Glue every part of a :class:`attnrank.sections.section.Section` for the chapter's prose.

    * each ``glue`` value under its name (``{glue:text}``);
    * each figure under its name as a PNG shown at the column's width (:func:`figure_png`;
      ``{glue:figure}`` numbers it; the chapter writes its caption and ``:alt:``), the caption's words that
      depend on the result with a link to its data under ``{name}__source`` (``{glue:md}`` at the end
      of the caption) and its data as CSV under
      ``{name}__data`` (written by the extension to ``data/{name}.csv`` in the site);
    * each table under its name as HTML (:func:`table_html`; ``{glue}`` pastes it);
    * each verdict (:func:`publish_verdict`).

    Outside a notebook kernel nothing is displayed; figures are closed either way.
    """
    import matplotlib.pyplot as plt
    from IPython.display import HTML, Image

    glue_all(section.glue)
    for f in section.figures:
        png, width = figure_png(f.fig)
        plt.close(f.fig)
        glue(f.name, Image(data=png, format="png", width=width))
        rows = len(f.data)
        link = f'<a class="figure-data" href="{data_url(f.name)}" download>data ({rows} rows, CSV)</a>'
        glue(f"{f.name}__source", _Markdown(f"{f.source} {link}".lstrip()))  # glue typesets it
        glue(f"{f.name}__data", _Data(f.data))
    for t in section.tables:
        glue(t.name, HTML(table_html(t)))
    for v in section.verdicts:
        publish_verdict(v)
