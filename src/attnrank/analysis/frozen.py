"""Frozen verdict rules: each rule's decisions hashed, so that a rule changed after it was frozen is noticed.

A rule is frozen on a date (the deviations appendix, :doc:`changes`) with a version and the digest of what it decides
(:func:`rule_digest`). ``data/rules/frozen.csv`` records, per verdict, its version, the date, the digest and the
functions that decide it (dotted names). A test recomputes every digest: a rule whose decisions changed without a new
dated row fails it, and a new row re-opens confirmation (its verdict must be confirmed again on runs it has not seen).
"""

from __future__ import annotations

import ast
import hashlib
import importlib
from pathlib import Path

import pandas as pd

from ..core.source import behaviour

__all__ = ["FROZEN_FILE", "rule_digest", "frozen_rules", "resolve", "check_frozen", "changed_since"]

#: The record of frozen rules (one row per verdict and version).
FROZEN_FILE = Path(__file__).resolve().parents[3] / "data" / "rules" / "frozen.csv"


class _Words(ast.NodeTransformer):
    """Replaces every f-string (the words that report a decision) by an empty string."""

    def visit_JoinedStr(self, node):
        return ast.copy_location(ast.Constant(""), node)


def _globals_read(fn) -> dict:
    """The module-level numbers, strings and tuples of them that function ``fn`` reads by name."""
    names = {n.id for n in ast.walk(ast.parse(_dedent(fn))) if isinstance(n, ast.Name)}
    plain = (int, float, str, bool, tuple, frozenset)
    return {k: fn.__globals__[k] for k in sorted(names) if isinstance(fn.__globals__.get(k), plain)}


def _dedent(fn) -> str:
    import inspect
    import textwrap

    return textwrap.dedent(inspect.getsource(fn))


def rule_digest(functions) -> str:
    """SHA-256 (16 hex digits) of what a verdict rule decides: for each function of ``functions`` (in order), its
    syntax tree without docstrings, comments or f-strings, and the value of every module-level constant it reads
    by name (a threshold such as ``RHO_MIN``). Rewording the sentence a rule reports changes nothing; a changed
    statement, comparison, threshold or default changes the digest.

    Raises:
        TypeError: for an object that is not a Python function.
    """
    h = hashlib.sha256()
    for fn in functions:
        if not callable(fn) or not hasattr(fn, "__code__"):
            raise TypeError(f"rule_digest takes functions; got {fn!r}")
        tree = _Words().visit(ast.parse(behaviour(_dedent(fn))))
        h.update(f"{fn.__qualname__}\0{ast.unparse(tree)}\0{_globals_read(fn)!r}\n".encode())
    return h.hexdigest()[:16]


def resolve(dotted: str):
    """The function named ``module.function`` (``attnrank.analysis.rules.dynamics_rule``).

    Raises:
        ValueError: naming the name when it is not a function of an importable module.
    """
    module, _, name = dotted.rpartition(".")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError):
        raise ValueError(f"frozen rule function {dotted!r} does not exist") from None
    return fn


def frozen_rules(path: Path | str | None = None) -> pd.DataFrame:
    """The newest frozen version of each verdict's rule: ``verdict``, ``version``, ``frozen`` (date), ``digest``,
    ``functions`` (space-separated dotted names), from :data:`FROZEN_FILE`."""
    table = _every(path)
    return table.sort_values(["verdict", "version"]).groupby("verdict", sort=False).tail(1).reset_index(drop=True)


def _every(path: Path | str | None) -> pd.DataFrame:
    """Every row of the record, each version an integer."""
    table = pd.read_csv(FROZEN_FILE if path is None else path, dtype=str)
    return table.assign(version=table.version.astype(int))


def check_frozen(path: Path | str | None = None) -> list[str]:
    """Every verdict whose rule now decides otherwise than when it was frozen, one line each (empty: all hold)."""
    out = []
    for row in frozen_rules(path).itertuples():
        now = rule_digest([resolve(f) for f in row.functions.split()])
        if now != row.digest:
            out.append(
                f"{row.verdict}: the rule frozen on {row.frozen} (version {row.version}, digest {row.digest}) now has "
                f"digest {now}; add a dated row (version {row.version + 1}) to {FROZEN_FILE.name} and an entry to "
                "the deviations appendix, and confirm the verdict again on runs it has not seen"
            )
    return out


def changed_since(table: pd.DataFrame, date: str, path: Path | str | None = None) -> list[str]:
    """The verdicts of a recorded check whose rule has a newer frozen version than the one the check applied, one that
    decides otherwise (a version that restores an earlier one, with its digest, does not count).

    Args:
        table: the check's verdicts (``verdict``, and ``rule``, the version each applied, where recorded: what
            ``attnrank verdicts`` writes); a row without a ``rule`` applied the newest version frozen on or before
            ``date``.
        date: the day the check was recorded (``YYYY-MM-DD``, its ``build.json``).
    """
    every = _every(path)
    newest = every.loc[every.groupby("verdict").version.idxmax()].set_index("verdict")
    digest = dict(zip(zip(every.verdict, every.version), every.digest))
    out = []
    for row in table.itertuples():
        recorded = str(getattr(row, "rule", "") or "").strip()
        if recorded:
            applied = int(float(recorded))
        else:
            then = every[(every.verdict == row.verdict) & (every.frozen <= str(date))]
            applied = int(then.version.max()) if len(then) else 0
        if row.verdict in newest.index and newest.version[row.verdict] > applied:
            if digest.get((row.verdict, applied)) != newest.digest[row.verdict]:  # a version restored decides alike
                out.append(row.verdict)
    return out
