"""The glue checks of the book build: a page that pastes a value glued in another page is read again when that page
changes, and a pasted value that no cell provides (or that cannot be shown) fails the build, with a visible marker; so
does a learned gate quoted with two answers over run sets of one name (:func:`gate_conflicts`).
"""

from __future__ import annotations

import logging

from docutils import nodes

from ..book import glued_text
from .pages import glue_data


class BuildFailed(Exception):
    """The book cannot be trusted: a pasted value is missing, or one quantity has two answers."""


class _GlueWarnings(logging.Handler):
    """Collects myst-nb's warnings about glue keys that no cell provides."""

    def __init__(self, app):
        super().__init__(level=logging.WARNING)
        self.app = app

    def emit(self, record):
        if getattr(record, "type", None) == "mystnb" and getattr(record, "subtype", None) == "glue":
            env = getattr(self.app, "env", None)
            docname = getattr(record, "docname", None) or (env.temp_data.get("docname") if env is not None else None)
            if env is not None and docname:
                _init_env(self.app, env)
                env.attnrank_missing_glue.setdefault(docname, []).append(record.getMessage())


def _init_env(app, env, docnames=None) -> None:
    if not hasattr(env, "attnrank_missing_glue"):
        env.attnrank_missing_glue = {}
    if not hasattr(env, "attnrank_glue_refs"):
        env.attnrank_glue_refs = {}


def _purge(app, env, docname) -> None:
    _init_env(app, env)
    env.attnrank_missing_glue.pop(docname, None)
    env.attnrank_glue_refs.pop(docname, None)


def _merge(app, env, docnames, other) -> None:
    _init_env(app, env)
    for d in docnames:
        if d in getattr(other, "attnrank_missing_glue", {}):
            env.attnrank_missing_glue[d] = other.attnrank_missing_glue[d]
        if d in getattr(other, "attnrank_glue_refs", {}):
            env.attnrank_glue_refs[d] = other.attnrank_glue_refs[d]


def _note_glue_refs(app, doctree) -> None:
    """A page pasting another page's glue depends on that page (and is checked after reading)."""
    try:
        from myst_nb.ext.glue.utils import PendingGlueReference
    except ImportError:  # pragma: no cover - myst-nb not installed
        return
    env = app.env
    _init_env(app, env)
    refs = []
    for node in doctree.findall(PendingGlueReference):
        refs.append((node.refdoc, node.key, node.line, node.gtype, node.get("fmt_spec")))
        if node.refdoc != env.docname:
            env.note_dependency(env.doc2path(node.refdoc))
    if refs:
        env.attnrank_glue_refs[env.docname] = refs


_NOT_GLUED = "is not provided by any cell"


def _paste_problem(data: dict | None, key: str, gtype: str | None, fmt_spec: str | None) -> str | None:
    """Why pasting ``key`` from glue ``data`` shows nothing (no such key, no text, a format that
    fails on the value), or None when it shows a value."""
    if data is None or key not in data:
        return _NOT_GLUED
    if gtype != "text":
        return None
    text = data[key].get("data", {}).get("text/plain")
    if text is None:
        return "has no text to paste"
    from myst_nb.core.variables import format_plain_text

    try:
        format_plain_text(text, fmt_spec or "s")
    except Exception as exc:  # noqa: BLE001 (myst-nb would drop it with a warning)
        return f"cannot be formatted with {fmt_spec!r} ({' '.join(str(exc).split())}; value {text})"
    return None


def _missing_glue(app) -> list[str]:
    env = app.env
    _init_env(app, env)
    problems = [f"{doc}: {msg}" for doc, msgs in sorted(env.attnrank_missing_glue.items()) for msg in msgs]
    for doc, refs in sorted(env.attnrank_glue_refs.items()):
        for refdoc, key, line, *kind in refs:
            gtype, fmt_spec = (kind + [None, None])[:2]
            why = _paste_problem(glue_data(app, refdoc), key, gtype, fmt_spec)
            if why == _NOT_GLUED:
                problems.append(f"{doc}:{line}: glued value {key!r} {why} of {refdoc!r}")
            elif why is not None:
                problems.append(f"{doc}:{line}: glued value {key!r} of {refdoc!r} {why}")
    return problems


def _make_marker_transform():
    from sphinx.transforms.post_transforms import SphinxPostTransform

    class MarkMissingGlue(SphinxPostTransform):
        default_priority = 4  # myst-nb resolves (or silently drops) the references at 5

        def run(self, **kwargs):
            from myst_nb.ext.glue.utils import PendingGlueReference

            app = self.app
            for node in list(self.document.findall(PendingGlueReference)):
                why = _paste_problem(glue_data(app, node.refdoc), node.key, node.gtype, node.get("fmt_spec"))
                if why is not None:
                    text = _marker(node.refdoc, node.key)
                    node.replace_self(nodes.strong(text, text, classes=["attnrank-missing"]))

    return MarkMissingGlue


def _marker(docname: str, key: str) -> str:
    """What a page shows where a pasted value is missing or cannot be shown."""
    return f"[missing value: {docname}::{key}]"


#: The formats a ``{glue:md}`key:FORMAT``` paste may name; without one it is ``myst`` (myst-nb's own default,
#: ``commonmark``, leaves ``$...$`` unrendered in a caption).
MARKDOWN_FORMATS = (":commonmark", ":gfm", ":myst")


def _marked_paste_roles() -> dict:
    """myst-nb's paste roles of the ``glue`` domain, showing :func:`_marker` where they would paste
    nothing (a key of the page's own notebook that no cell glued, a format that fails); their
    warning is kept, so the build still fails (:func:`_fail_on_missing_glue`). Pasted Markdown without
    a format is parsed as MyST (:data:`MARKDOWN_FORMATS`), like the pages themselves."""
    from myst_nb.ext.glue.roles import PasteMarkdownRole, PasteRoleAny, PasteTextRole

    def marked(base):
        class Marked(base):
            def run(self):
                if base is PasteMarkdownRole and not self.text.endswith(MARKDOWN_FORMATS):
                    self.text += ":myst"  # parsed as the pages are, so its $...$ maths is rendered
                result, messages = super().run()
                if not result:
                    key = self.text.rsplit(":", 1)[0] if base in (PasteTextRole, PasteMarkdownRole) else self.text
                    doc, _, own = key.rpartition("::")
                    text = _marker(
                        doc.removesuffix(".ipynb").removesuffix(".md") or self.document.settings.env.docname, own
                    )
                    result = [nodes.strong(text, text, classes=["attnrank-missing"])]
                return result, messages

        Marked.__name__ = f"Marked{base.__name__}"
        return Marked()

    return {
        "": marked(PasteRoleAny),
        "any": marked(PasteRoleAny),
        "text": marked(PasteTextRole),
        "md": marked(PasteMarkdownRole),
    }


#: The suffix of the glue that states a verdict's learned gate (:func:`attnrank.sections.section.gate_quote`).
GATE_SUFFIX = "_gate"


def gate_conflicts(quotes: dict) -> list[str]:
    """Where two verdicts state the learned gate over run sets of one name with different numbers: a quantity quoted
    over different sets without saying so.

    Args:
        quotes: ``{(page, verdict): {"set": words, "numbers": words}}`` (the JSON of each verdict's gate glue).

    Returns one line per set with more than one distinct ``numbers``, naming the pages, verdicts and numbers; ``[]``
    when every set is quoted with one answer.
    """
    by_set: dict = {}
    for (page, verdict), q in sorted(quotes.items()):
        by_set.setdefault(q["set"], {}).setdefault(q["numbers"], []).append(f"{page} ({verdict})")
    return [
        f"the learned gate over one run set ({name}) is quoted with different numbers: "
        + "; ".join(f"{' and '.join(where)}: {numbers}" for numbers, where in answers.items())
        + ": name what differs between these runs in the set's words (attnrank.sections.section.RUN_SET_FIELDS)"
        for name, answers in by_set.items()
        if len(answers) > 1
    ]


def _gate_quotes(app) -> dict:
    import json

    quotes = {}
    for docname in sorted(app.env.found_docs):
        for key, output in glue_data(app, docname).items():
            text = glued_text(output) if key.endswith(GATE_SUFFIX) else None
            if text:
                quotes[(docname, key.removesuffix(GATE_SUFFIX))] = json.loads(text)
    return quotes


def _check_glue(app, env):
    problems = _missing_glue(app) + gate_conflicts(_gate_quotes(app))
    app.attnrank_glue_problems = problems
    for p in problems:
        logging.getLogger("sphinx.attnrank").warning("glue: %s", p)
    return []


def _fail_on_missing_glue(app, exception) -> None:
    problems = getattr(app, "attnrank_glue_problems", [])
    if exception is None and problems:
        raise BuildFailed(
            f"{len(problems)} pasted value(s) are provided by no cell, cannot be shown or disagree:\n  "
            + "\n  ".join(problems)
        )


def setup(app) -> None:
    """Connect the glue checks: dependencies between pages, the marker of a missing paste, the failure."""
    app.connect("env-before-read-docs", _init_env)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("doctree-read", _note_glue_refs)
    app.connect("env-updated", _check_glue)
    app.connect("build-finished", _fail_on_missing_glue, priority=900)
    app.add_post_transform(_make_marker_transform())
    app.setup_extension("myst_nb")  # its glue domain, whose paste roles show a marker here
    for name, role in _marked_paste_roles().items():
        app.add_role_to_domain("glue", name, role, override=True)
    sphinx_logger = logging.getLogger("sphinx")
    for old in [h for h in sphinx_logger.handlers if isinstance(h, _GlueWarnings)]:
        sphinx_logger.removeHandler(old)  # a previous application in the same process
    sphinx_logger.addHandler(_GlueWarnings(app))
