"""The rank measures by name, without torch: what a measure is (its kind and thresholds) and which are ranks.
:mod:`attnrank.core.rank` computes them and checks a list of names; the book's words (:mod:`attnrank.words.glossary`) and
every module that only names them read this one (it imports nothing)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["STUDY_ATOL", "Measure", "MEASURES", "RANK_MEASURES", "DEFAULT_MEASURES"]

#: The study's absolute singular-value threshold.
STUDY_ATOL = 1e-8


@dataclass(frozen=True)
class Measure:
    """A named rank measure: ``kind`` in {numerical, effective, stable, entropy} (its label for a
    reader: :data:`attnrank.words.glossary.MEASURE_LABELS`)."""

    name: str
    kind: str
    atol: float | None = None
    rtol: float | None = None


#: Every measure available by name (names are the ``measure`` column of rank tables).
MEASURES: dict[str, Measure] = {
    m.name: m
    for m in [
        Measure("rank_atol_1e-8", "numerical", atol=STUDY_ATOL),
        Measure("rank_rtol_1e-2", "numerical", rtol=1e-2),
        Measure("rank_rtol_1e-4", "numerical", rtol=1e-4),
        Measure("effective_rank", "effective"),
        Measure("stable_rank", "stable"),
        Measure("attention_entropy", "entropy"),
    ]
}
#: The measures that are ranks, in order: every measure but the attention entropy.
RANK_MEASURES: tuple[str, ...] = tuple(m for m, spec in MEASURES.items() if spec.kind != "entropy")
#: Measures recorded during training.
DEFAULT_MEASURES: tuple[str, ...] = tuple(MEASURES)
