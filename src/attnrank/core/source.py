"""The behaviour of a module's source, as the keys of stored results hash it.

A stored run, a cached table or token block, and an executed chapter are keyed on the code that made them
(:func:`attnrank.runs.provenance.code_hash`, :func:`attnrank.core.data` caches). They hash :func:`behaviour`,
not the file's bytes, so a reworded docstring or comment retrains and recomputes nothing, while any change to
a statement or a literal re-keys every result it touches.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

__all__ = ["behaviour", "source_digest"]


def behaviour(source: str) -> str:
    """The behaviour of Python ``source``: its syntax tree without docstrings, written back as code (``ast.unparse``).

    Comments, blank lines, formatting and the docstrings of the module, its classes and functions are gone;
    every other statement and literal stays, so two sources with the same result differ only in words a reader
    reads. A string that the code prints or returns is a literal, not a docstring, and stays.

    Raises:
        SyntaxError: for source that does not parse.
    """
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


@functools.lru_cache(maxsize=1024)
def _behaviour_digest(source: str) -> bytes:
    return hashlib.sha256(behaviour(source).encode()).digest()


def source_digest(path: Path | str) -> bytes:
    """SHA-256 (bytes) of :func:`behaviour` of the Python file at ``path``: a reworded docstring or comment keeps it,
    a changed statement or literal changes it."""
    return _behaviour_digest(Path(path).read_text())
