"""The book's vocabulary and its one number formatter.

Every module that writes for a reader (the chapter modules, the figures, the book helpers)
takes its names from here:

* the settings a run is made of, as the run config defines them: :data:`ARCHS` and
  :data:`TAU_RANGE` (from :mod:`attnrank.profiles`), the rank measures :data:`MEASURES` and
  :data:`RANK_MEASURES` (from :mod:`attnrank.rank`; the primary one is a decision,
  :data:`attnrank.rules.PRIMARY_MEASURE`);
* their words: :data:`ARCH_LABELS` (``"BERT (MLM)"``), :data:`ARCH_NAMES` (``"BERT"``),
  :data:`MEASURE_LABELS` (``"effective rank"``);
* numbers as a reader sees them: :func:`fmt` (one value), :func:`fmt_setting` (a grid value
  such as ``tau``), :func:`fmt_estimate` (a value with its interval and ``n``).

This module defines words, not results: nothing on the training path or in the verdict
rules imports it (:data:`attnrank.provenance.RUN_ROOTS`, :data:`~attnrank.provenance.RESULT_ROOTS`),
so renaming a label or changing how a number is written re-keys no stored run and no cached
table. It imports only the config and the measure registry, so that every module that writes
for a reader can sit above it.
"""

from __future__ import annotations

import math

from .profiles import ARCHS, TAU_RANGE
from .rank import MEASURES, RANK_MEASURES

__all__ = [
    "ARCHS",
    "largest_first",
    "TAU_RANGE",
    "MEASURES",
    "RANK_MEASURES",
    "ARCH_LABELS",
    "ARCH_NAMES",
    "MEASURE_LABELS",
    "MINUS",
    "fmt",
    "fmt_setting",
    "fmt_estimate",
]

#: Each architecture with its objective, for legends and tables.
ARCH_LABELS = {"bert": "BERT (MLM)", "gpt2": "GPT-2 (CLM)"}
#: Each architecture's name alone, for sentences.
ARCH_NAMES = {"bert": "BERT", "gpt2": "GPT-2"}
#: The label of every measure of :data:`MEASURES`.
MEASURE_LABELS = {
    "rank_atol_1e-8": "rank, atol 1e-8 (study)",
    "rank_rtol_1e-2": "rank, rtol 1e-2",
    "rank_rtol_1e-4": "rank, rtol 1e-4",
    "effective_rank": "effective rank",
    "stable_rank": "stable rank",
    "attention_entropy": "attention entropy (nats)",
}
#: The minus sign of printed numbers (U+2212, not the hyphen).
MINUS = "\u2212"


def _missing(x) -> bool:
    if x is None:
        return True
    try:
        return not math.isfinite(float(x))
    except (TypeError, ValueError):
        return True


def fmt(x, digits: int = 2, *, percent: bool = False) -> str:
    """One number as the book prints it.

    ``digits`` decimals (``0.43``); ``digits`` significant digits below ``10**-digits`` and from
    ``1e5`` (``3.2e-05``, ``1.2e+06``); integers (``int`` or NumPy integers) as they are; a value
    within 1e-9 of zero (rounding noise) as zero; a true minus sign; a missing or non-finite
    value as ``"n/a"``. ``percent=True`` writes a fraction as a percentage with ``digits``
    decimals (``fmt(0.125, 0, percent=True)`` is ``"12%"``).
    """
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int) or (type(x).__module__ == "numpy" and "int" in type(x).__name__):
        return str(int(x)).replace("-", MINUS)
    if _missing(x):
        return "n/a"
    x = float(x)
    if abs(x) < 1e-9:
        x = 0.0
    if percent:
        s = f"{x:.{digits}%}"
    elif x != 0 and (abs(x) < 10**-digits or abs(x) >= 1e5):
        s = f"{x:.{digits}g}"
    else:
        s = f"{x:.{digits}f}"
    return s.replace("-", MINUS)


def largest_first(values: dict) -> list:
    """The keys of ``values`` (e.g. ``{arch: steps}``), largest value first, ties by key: the order in which
    the book names per-architecture numbers that differ ("1000 steps for GPT-2 and 500 for BERT")."""
    return sorted(values, key=lambda k: (-values[k], k))


def fmt_setting(v) -> str:
    """A grid value (``tau``, a head dimension, a sequence length): ``1``, ``0.001``, ``32``, ``9.7e7``.

    Integer values print without a decimal point (below 1e4), others in ``%g`` form with the
    exponent written compactly (``1e-4``, ``9.7e7``); ``"n/a"`` for a missing value.
    """
    if _missing(v):
        return "n/a"
    v = float(v)
    if v.is_integer() and abs(v) < 1e4:
        return str(int(v))
    s = f"{v:g}"
    if "e" in s:
        mant, exp = s.split("e")
        s = f"{mant}e{int(exp)}"
    return s


def fmt_estimate(e, digits: int = 2, *, n: bool = True, percent: bool = False) -> str:
    """A :class:`attnrank.stats.Estimate` as ``value [low, high], n = N``, the three numbers in one format.

    Fixed-point with ``digits`` decimals, or more where the interval is narrower than one unit of the last decimal
    (as many as its width needs for one significant digit, at most 8): ``0.001 [−0.012, 0.014]``, never
    ``0.000992 [−0.012, 0.014]``. Values from ``1e5``, a missing bound or a zero-width interval fall back to
    :func:`fmt` for each number. ``n=False`` leaves out the count; ``percent=True`` writes fractions as
    percentages.
    """
    values = [e.value, e.low, e.high]
    finite = not any(_missing(v) for v in values)
    scale = 100.0 if percent else 1.0
    width = (float(e.high) - float(e.low)) * scale if finite else math.nan
    if finite and width > 0 and max(abs(float(v)) * scale for v in values) < 1e5:
        d = max(int(digits), min(8, -math.floor(math.log10(width))))
        s = "{} [{}, {}]".format(*(_fixed(float(v) * scale, d) + ("%" if percent else "") for v in values))
    else:
        s = f"{fmt(e.value, digits, percent=percent)} [{fmt(e.low, digits, percent=percent)}, {fmt(e.high, digits, percent=percent)}]"
    return f"{s}, n = {e.n}" if n else s


def _fixed(x: float, decimals: int) -> str:
    """``x`` with ``decimals`` decimals and a true minus sign; a value that rounds to zero has no sign."""
    s = f"{x:.{decimals}f}"
    if float(s) == 0:
        s = s.lstrip("-")
    return s.replace("-", MINUS)
