"""The book's vocabulary and its one number formatter.

Every module that writes for a reader (the chapter modules, the figures, the book helpers)
takes its names from here:

* the settings a run is made of, as the run config defines them: :data:`ARCHS` and
  :data:`TAU_RANGE` (from :mod:`attnrank.core.profiles`), the rank measures :data:`MEASURES` and
  :data:`RANK_MEASURES` (from :mod:`attnrank.core.measures`; the primary one is a decision,
  :data:`attnrank.analysis.rules.PRIMARY_MEASURE`);
* their words: :data:`ARCH_LABELS` (``"BERT (MLM)"``), :data:`ARCH_NAMES` (``"BERT"``),
  :data:`MEASURE_LABELS` (``"effective rank"``);
* numbers as a reader sees them: :func:`fmt` (one value), :func:`fmt_setting` (a grid value
  such as ``tau``), :func:`fmt_estimate` (a value with its interval and ``n``).

This module defines words, not results: nothing on the training path or in the verdict
rules imports it (:data:`attnrank.runs.provenance.RUN_ROOTS`, :data:`~attnrank.runs.provenance.RESULT_ROOTS`),
so renaming a label or changing how a number is written re-keys no stored run and no cached
table. It imports only the config and the measure registry, so that every module that writes
for a reader can sit above it.
"""

from __future__ import annotations

import math

from ..core.architectures import ARCHITECTURES
from ..core.measures import MEASURES, RANK_MEASURES
from ..core.profiles import ARCHS, TAU_RANGE

__all__ = [
    "fmt_and",
    "PLAIN_LABELS",
    "ARCHS",
    "profile_sizes",
    "largest_first",
    "fmt_count",
    "TAU_RANGE",
    "MEASURES",
    "RANK_MEASURES",
    "ARCH_LABELS",
    "ARCH_NAMES",
    "MEASURE_LABELS",
    "SETTING_LABELS",
    "VERDICT_LABELS",
    "CHAPTER_LABELS",
    "SIZE_LABELS",
    "TARGET_LABELS",
    "MINUS",
    "CORPUS_NAMES",
    "corpus_name",
    "fmt",
    "fmt_column",
    "fmt_sci",
    "fmt_setting",
    "fmt_tau",
    "fmt_estimate",
    "per_arch",
]

#: Each offline corpus as a reader knows it (a local or hub dataset, ``hf:NAME``, is named by its name).
CORPUS_NAMES = {"shakespeare": "Shakespeare's plays", "stdlib": "the Python standard library's source"}


def corpus_name(dataset: str) -> str:
    """A dataset setting in words: ``"shakespeare"`` as ``"Shakespeare's plays"``, ``"hf:wikitext"`` as
    ``"wikitext"``."""
    return CORPUS_NAMES.get(dataset, dataset.removeprefix("hf:"))


#: Each architecture's name alone, for sentences.
ARCH_NAMES = {"modernbert": "ModernBERT", "gpt2": "GPT-2", "bert": "BERT"}
#: Each architecture with its objective, for legends and tables.
ARCH_LABELS = {a: f"{name} ({ARCHITECTURES[a].objective})" for a, name in ARCH_NAMES.items()}
#: The label of every measure of :data:`MEASURES`.
MEASURE_LABELS = {
    "rank_atol_1e-8": "rank, atol 1e-8 (study)",
    "rank_rtol_1e-2": "rank, rtol 1e-2",
    "rank_rtol_1e-4": "rank, rtol 1e-4",
    "effective_rank": "effective rank",
    "stable_rank": "stable rank",
    "attention_entropy": "attention entropy (nats)",
}
#: The rank measures in words a reader knows (long, for a sentence of a chapter; short, for the intro's one line).
PLAIN_LABELS = {
    "rank_atol_1e-8": ("the study's 10⁻⁸ count", "10⁻⁸ count"),
    "rank_rtol_1e-2": ("the 10⁻² count", "10⁻² count"),
    "rank_rtol_1e-4": ("the 10⁻⁴ count", "10⁻⁴ count"),
    "effective_rank": ("the effective rank", "effective rank"),
    "stable_rank": ("the stable rank", "stable rank"),
}
#: The label of every field of a run config (:class:`attnrank.core.profiles.RunConfig`), for tables of settings.
SETTING_LABELS = {
    "tau": "τ",
    "seed": "seed",
    "dataset": "corpus",
    "weight_decay": "weight decay",
    "mlm_probability": "masking rate (BERT)",
    "threads": "torch threads",
    "qk_init_scale": "query/key initial scale",
    "qk_lr_scale": "query/key learning-rate factor",
    "qk_decay_scale": "query/key weight-decay factor",
    "adam_epsilon": "Adam ε",
    "adam_beta2": "Adam β₂",
    "lr_schedule": "learning-rate schedule",
    "max_grad_norm": "largest gradient norm",
    "hidden_size": "width",
    "num_layers": "layers",
    "num_heads": "heads",
    "max_len": "sequence length (tokens)",
    "vocab_size": "vocabulary size",
    "batch_size": "batch size (sequences)",
    "max_steps": "training steps",
    "learning_rate": "learning rate",
    "warmup_steps": "warm-up steps",
    "rank_every": "steps between rank probes",
    "probe_size": "probe sequences",
    "val_blocks": "validation sequences",
    "log_every": "steps between logs",
    "dropout": "dropout",
}
#: Each verdict of :data:`attnrank.runs.experiments.VERDICT_RUNS` by the claim it decides, worded as the claim, for
#: tables and the findings box.
VERDICT_LABELS = {
    "measure": "the study's absolute 10⁻⁸ rule misses near-rank-one attention (τ = 1000)",
    "dynamics": "(i) the rank is stable",
    "set_early": "(i) the rank is set early",
    "protocol": "the study's 4 + 4 protocol gives a stable sign on neighbouring temperatures, and ours",
    "loss": "(ii) higher rank, lower loss",
    "temp": "(iii) a higher temperature raises the rank",
    "temp_loss": "(ii + iii) a higher temperature trains lower",
    "headdim": "(iii) temperature moves the rank more than head dimension",
    "seq_len": "the trained rank stays below the study's bound at every sequence length",
    "theory": "(iv) the theory's bounds hold on random attention matrices",
    "target": "(v) some head in use falls short on a high-rank target",
    "causal": "temperature acts through the initial rank",
}
#: The chapters sized by :mod:`attnrank.runs.presets`, by name.
CHAPTER_LABELS = {"theory": "theory", "target": "target", "seq_len": "sequence length", "causal": "causal"}
#: The label of every size of :data:`attnrank.runs.presets.PRESETS`.
SIZE_LABELS = {
    "p0_n": "P0: matrix size",
    "p0_inst": "P0: instances",
    "p0_digits": "P0: digits (mpmath)",
    "stair_n": "P1: staircase size",
    "taylor_n": "P1: Taylor size",
    "taylor_inst": "P1: Taylor instances",
    "sat_n": "P1′: matrix size",
    "sat_samples": "P1′: matrices per point",
    "sat_head_dims": "P1′: head dimensions",
    "p2_n": "P2: matrix size",
    "p2_d": "P2: head dimension",
    "p2_inst": "P2: instances",
    "p2_grid": "P2: temperatures",
    "mc_samples": "theorem: draws per point",
    "mc_head_dims": "theorem: head dimensions",
    "n_values": "theorem: sequence lengths",
    "n": "target size",
    "steps": "training steps",
    "taus": "τ",
    "head_dims": "head dimensions",
    "n_seeds": "seeds",
    "log_every": "steps between logs",
}
#: The label of every synthetic target of :data:`attnrank.analysis.synthetic.TARGETS`.
TARGET_LABELS = {"permutation": "permutation", "sharp": "sharp", "lowrank": "low-rank"}
#: The minus sign of printed numbers (U+2212, not the hyphen).
MINUS = "\u2212"
#: Digits and sign of a power of ten as superscripts (the ``⁻⁵`` of ``3.2×10⁻⁵``).
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


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
    ``1e5``, as a power of ten (``3.2×10⁻⁵``, ``1.2×10⁶``); integers (``int`` or NumPy integers) as they are; a value
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
        return fmt_sci(x, digits)
    else:
        s = f"{x:.{digits}f}"
    return s.replace("-", MINUS)


def fmt_sci(x, digits: int = 2) -> str:
    """A number with ``digits`` significant digits, as a power of ten where Python's ``g`` format would write
    ``e`` notation (``3.2×10⁻⁵``, ``5.2×10⁻¹⁵``, ``0.25``), with a true minus sign; unlike :func:`fmt`, a tiny
    value is not rounding noise (a float's floor, a difference at machine precision). Missing or non-finite:
    ``"n/a"``."""
    if _missing(x):
        return "n/a"
    s = f"{float(x):.{digits}g}"
    if "e" in s:  # Python's 3.2e-05 as 3.2×10⁻⁵
        mant, exp = s.split("e")
        s = f"{mant}×10{str(int(exp)).translate(_SUPERSCRIPT)}"
    return s.replace("-", MINUS)


def fmt_column(values, digits: int = 2, *, percent: bool = False) -> list[str]:
    """A table column of numbers, all in one format (the book's tables write every float column with it).

    :func:`fmt`'s fixed point with ``digits`` decimals where every nonzero value lies in ``[10**-digits, 1e5)``;
    else fixed point with as many decimals as the smallest nonzero value needs for one significant digit, at most
    ``digits + 2``; else (a value from ``1e5``, or one smaller still) scientific notation with ``digits``
    significant digits for every value, as a power of ten like the prose's (:func:`fmt_sci`), zero written ``0``:
    ``[-0.00033, 2.4e-05, 0]`` becomes ``−3.3×10⁻⁴, 2.4×10⁻⁵, 0``, never ``−0.00033, 2.4e−05, 0.00``. Integers, rounding noise, the minus sign and
    missing values as in :func:`fmt`; ``percent=True`` writes fractions as percentages (``12%``).
    """
    values = list(values)
    scale = 100.0 if percent else 1.0
    sizes = [
        abs(float(v)) * scale
        for v in values
        if not isinstance(v, bool) and not _missing(v) and abs(float(v)) >= 1e-9 and not _is_int(v)
    ]
    small = min(sizes, default=1.0)
    if not sizes or (small >= 10**-digits and max(sizes) < 1e5):
        return [fmt(v, digits, percent=percent) for v in values]
    needed = -math.floor(math.log10(small))
    suffix = "%" if percent else ""
    out = []
    for v in values:
        if isinstance(v, bool) or _is_int(v) or _missing(v):
            out.append(fmt(v, digits, percent=percent))
            continue
        x = float(v) * scale
        if max(sizes) < 1e5 and needed <= digits + 2:
            out.append(_fixed(0.0 if abs(x) < 1e-9 * scale else x, needed) + suffix)
        elif abs(x) < 1e-9 * scale:
            out.append("0" + suffix)
        else:
            mantissa, exponent = f"{x:.{max(digits - 1, 0)}e}".split("e")
            out.append(f"{mantissa}×10{str(int(exponent)).translate(_SUPERSCRIPT)}".replace("-", MINUS) + suffix)
    return out


def _is_int(x) -> bool:
    return isinstance(x, int) or (type(x).__module__ == "numpy" and "int" in type(x).__name__)


def largest_first(values: dict) -> list:
    """The keys of ``values`` (e.g. ``{arch: steps}``), largest value first, ties by key: the order in which
    the book names per-architecture numbers that differ ("1000 steps for GPT-2 and 500 for BERT")."""
    return sorted(values, key=lambda k: (-values[k], k))


def per_arch(values: dict, write=str) -> str:
    """A setting that may differ between architectures (``{arch: value}``), in words: the one value where all
    agree (``"1000"``), else each architecture's name and value, largest first (``"GPT-2 1000, BERT 500"``).
    ``write`` writes one value."""
    if len(set(values.values())) == 1:
        return write(next(iter(values.values())))
    return ", ".join(f"{ARCH_NAMES.get(a, a)} {write(values[a])}" for a in largest_first(values))


def fmt_and(items) -> str:
    """Items as a sentence lists them: ``["0", "1"]`` as ``"0 and 1"``, ``["0", "1", "2"]`` as ``"0, 1 and 2"``
    (each item written with ``str``; ``""`` for none)."""
    names = [str(x) for x in items]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def fmt_count(n: int, noun: str) -> str:
    """A count with its noun, as the book writes it: ``"no runs"``, ``"1 run"``, ``"3 runs"`` (never ``"0 runs"``)."""
    return f"no {noun}s" if n == 0 else f"{n} {noun}" + ("" if n == 1 else "s")


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


def profile_sizes(profile: str, sizes: str) -> str:
    """A build profile with the model sizes its runs take, in words: ``"the quick profile"`` where they are its
    own, else ``"the paper profile, at the quick profile's sizes"``."""
    return f"the {profile} profile" + ("" if sizes == profile else f", at the {sizes} profile's sizes")


def fmt_tau(t, symbol: str = "τ") -> str:
    """A temperature in the book's notation, ``τ = 0.03`` (:func:`fmt_setting`); figures pass their mathtext
    ``symbol``."""
    return f"{symbol} = {fmt_setting(t)}"


def fmt_estimate(e, digits: int = 2, *, n: bool = True, percent: bool = False) -> str:
    """A :class:`attnrank.analysis.stats.Estimate` as ``value [low, high], n = N``, the three numbers in one format.

    Fixed-point with ``digits`` decimals, or more where the interval is narrower than one unit of the last decimal
    (as many as its width needs for one significant digit, up to ``digits + 2``): ``0.001 [−0.012, 0.014]``, never
    ``0.000992 [−0.012, 0.014]``. An interval narrower still writes each number as a power of ten
    (:func:`fmt_sci`: ``1.1×10⁻⁵ [2.0×10⁻⁷, 1.0×10⁻⁶]``, never ``0.000000 [0.000000, 0.000001]`` nor a point
    ``0.0000 [0.0000, 0.0000]``). An interval of no width (every resample gave the same value: too few runs, or
    none that differ) is written as such, ``−1.00 in every resample``, never as ``[−1.00, −1.00]``; no value at all
    (too few runs, or nothing that varies) as ``not estimable, n = 3``, never as ``n/a [n/a, n/a]``. Values from
    ``1e5`` or a missing bound fall back to :func:`fmt` for each number. ``n=False`` leaves out the count; ``percent=True`` writes fractions as
    percentages.
    """
    values = [e.value, e.low, e.high]
    if _missing(e.value):  # no estimate at all (fewer units than the statistic needs, or nothing varies)
        return f"not estimable, n = {e.n}" if n else "not estimable"
    finite = not any(_missing(v) for v in values)
    scale = 100.0 if percent else 1.0
    width = (float(e.high) - float(e.low)) * scale if finite else math.nan
    if finite and width == 0:  # every resample gave the same value: too few runs (or no spread) for an interval
        s = f"{fmt(e.value, digits, percent=percent)} in every resample"
        return f"{s}, n = {e.n}" if n else s
    need = -math.floor(math.log10(width)) if finite and width > 0 else None
    if need is not None and max(abs(float(v)) * scale for v in values) < 1e5 and need <= int(digits) + 2:
        d = max(int(digits), need)
        s = "{} [{}, {}]".format(*(_fixed(float(v) * scale, d) + ("%" if percent else "") for v in values))
    elif need is not None and max(abs(float(v)) * scale for v in values) < 1e5:
        s = "{} [{}, {}]".format(*(fmt_sci(float(v) * scale, digits) + ("%" if percent else "") for v in values))
    else:
        s = f"{fmt(e.value, digits, percent=percent)} [{fmt(e.low, digits, percent=percent)}, {fmt(e.high, digits, percent=percent)}]"
    return f"{s}, n = {e.n}" if n else s


def _fixed(x: float, decimals: int) -> str:
    """``x`` with ``decimals`` decimals and a true minus sign; a value that rounds to zero has no sign."""
    s = f"{x:.{decimals}f}"
    if float(s) == 0:
        s = s.lstrip("-")
    return s.replace("-", MINUS)
