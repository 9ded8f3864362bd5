"""The page's typography: ASCII maths written as symbols where the book pastes a value.

A module of its own (no import): the book (:mod:`attnrank.book`) applies :func:`typeset` to what it pastes, and the
site check (``tests/sitecheck.py``) reports what is left with :data:`ASCII_MATHS`. Words only, never an input
of a result.
"""

from __future__ import annotations

import re

__all__ = ["ASCII_MATHS", "typeset"]

#: ASCII maths a page should not show, with its typeset form (:func:`typeset`): ``tau`` before a relation or
#: after "evaluation"/"trained at", ``sqrt(...)``, ``+-``, ``->``, ``<=``, ``>=``, ``d_h``, the ``x`` of a product,
#: ``sigma_1``, ``U_n``, Spearman's ``rho`` and ``QK^T``.
ASCII_MATHS = (
    (re.compile(r"(?<=\s)->(?=\s)"), "→"),
    (re.compile(r"(?<=\s)<=(?=\s)"), "≤"),
    (re.compile(r"(?<=\s)>=(?=\s)"), "≥"),
    (re.compile(r"1/sqrt\(tau\)"), "1/√τ"),
    (re.compile(r"sqrt\(d_h\)"), "√dₕ"),
    (re.compile(r"\btau(?=\s*(?:=|<|>|≤|≥|→)|\b\s+(?:runs?|run's)\b)"), "τ"),
    (re.compile(r"(?<=evaluation )tau\b|(?<=trained at )tau\b|(?<=each )tau\b|^tau$"), "τ"),
    (re.compile(r"\+-"), "±"),
    (re.compile(r"\bd_h\b"), "dₕ"),
    (re.compile(r"(?<=[\w)]) x (?=s\b|\d)"), " × "),
    (re.compile(r"\bsigma_1\b"), "σ₁"),
    (re.compile(r"\bU_n\b"), "Uₙ"),
    (re.compile(r"(?<=Spearman )rho\b|(?<=Spearman's )rho\b"), "ρ"),
    (re.compile(r"\bQK\^T\b"), "QKᵀ"),
)
#: Spans :func:`typeset` leaves as written: code, TeX maths and HTML tags.
_VERBATIM = re.compile(r"(`[^`]*`|\$[^$]*\$|<[A-Za-z/!][^>]*>)")


def typeset(text: str) -> str:
    """``text`` with the ASCII maths of :data:`ASCII_MATHS` typeset (``tau = 1`` becomes ``τ = 1``, ``+-1 sd``
    becomes ``±1 sd``, ``d_h + 1`` becomes ``dₕ + 1``), outside code spans, ``$...$`` maths and HTML tags.

    Words only: what a page shows, never an input of a result (the book applies it when it pastes a value)."""
    if not isinstance(text, str) or not text:
        return text
    parts = _VERBATIM.split(text)
    for i in range(0, len(parts), 2):  # the even parts lie outside the verbatim spans
        for pattern, repl in ASCII_MATHS:
            parts[i] = pattern.sub(repl, parts[i])
    return "".join(parts)
