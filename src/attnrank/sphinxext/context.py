"""The book's execution context: the hash of everything a chapter's outputs depend on besides its cells
(the library code it imports, the ``ATTNRANK_*`` settings, the resolved profile, the device, the thread count, the
packages, the lock and the recorded measurements), and one jupyter-cache folder per context.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import shutil
import sys
from pathlib import Path

from ..cli.build import one_line_errors, toc_chapters
from ..core.profiles import resolve_profile
from ..runs.provenance import ENVIRONMENT_PACKAGES, RESULT_ROOTS, code_hash, imported_modules, lock_state, records_hash

#: Environment variables whose name starts with one of these prefixes are part of the context.
CONTEXT_ENV_PREFIXES = ("ATTNRANK_",)


#: Further environment variables that change what a chapter computes (hub access) or what its cells print (the
#: libraries' log levels and warnings: a page built under one must not be served after it is unset).
CONTEXT_ENV_VARIABLES = (
    "HF_HUB_OFFLINE",
    "HF_DATASETS_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "TRANSFORMERS_VERBOSITY",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS",
    "DATASETS_VERBOSITY",
    "HF_HUB_VERBOSITY",
    "PYTHONWARNINGS",
)


#: Variables that choose how runs are trained and where chapters execute, not what they
#: compute: every executor gives bit-identical runs (the run key holds the thread count,
#: precision, device and world size), and a chapter executed up front or while read is the
#: same notebook run in the same environment.
CONTEXT_ENV_EXCLUDED = ("ATTNRANK_SWEEP", "ATTNRANK_EXECUTE_UP_FRONT")


#: The checkout holding this package: the book's source folder unless a caller names another.
CHECKOUT = Path(__file__).resolve().parents[3]


#: jupyter-cache folders kept (one per context, the most recently used).
KEEP_CONTEXTS = 8


def chapter_roots(srcdir: Path | str | None = None) -> tuple[str, ...]:
    """The ``attnrank`` modules that the book's chapters import (sorted).

    Read from the code cells of every notebook the book's ``_toc.yml`` lists, and of every
    notebook in ``<srcdir>/chapters`` (``srcdir`` defaults to the checkout holding this
    package); empty when there are none.
    """
    srcdir = Path(srcdir) if srcdir is not None else CHECKOUT
    toc = [srcdir / f"{name}.ipynb" for name in toc_chapters(srcdir)] if (srcdir / "_toc.yml").is_file() else []
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
    every module a chapter's results or figures import, and nothing else (``cli``, this extension).
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
    items["records"] = records_hash()  # the recorded scale check and second corpus that chapters read
    # the book's static folder: the explorer page inlines its script and style
    items["static"] = records_hash((Path(srcdir if srcdir is not None else CHECKOUT) / "chapters" / "_static",))
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
    * ``static``: the same hash of the book's static folder ``<srcdir>/chapters/_static`` (the explorer page
      inlines its script and style);
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
    """SHA-256 of the extension's modules (this folder's): editing how pages are rendered reads every page again."""
    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


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


def setup(app) -> None:
    """Set the execution context and the cache folder when the configuration is read (priority 100)."""
    app.add_config_value("attnrank_execution_context", "", "env")
    app.add_config_value("attnrank_extension", "", "env")
    app.add_config_value("attnrank_cache_base", "", "")
    app.connect("config-inited", one_line_errors(_set_context), priority=100)
