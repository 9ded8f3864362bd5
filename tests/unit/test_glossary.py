"""The book's vocabulary and number formatter (attnrank.words.glossary): one rule for every printed number."""

import numpy as np
import pytest

from attnrank.analysis import rules
from attnrank.analysis.stats import Estimate
from attnrank.core import rank
from attnrank.runs import provenance
from attnrank.words import glossary
from attnrank.words.glossary import fmt, fmt_column, fmt_estimate, fmt_setting, per_arch


def test_fmt_writes_one_number_by_one_rule():
    assert fmt(0.4321) == "0.43" and fmt(0.4321, 3) == "0.432"
    assert fmt(-0.5) == "\u22120.50"  # a true minus sign
    assert (
        fmt(3.2e-5) == "3.2×10⁻⁵" and fmt(123456.0) == "1.2×10⁵" and fmt(-7.1e-5) == "\u22127.1×10⁻⁵"
    )  # significant digits at the ends
    assert fmt(-1e-16) == "0.00"  # rounding noise is zero, never "-0.00"
    assert fmt(7) == "7" and fmt(np.int64(-3)) == "\u22123"  # integers as they are
    assert fmt(float("nan")) == fmt(None) == fmt(float("inf")) == "n/a"
    assert fmt(0.125, 0, percent=True) == "12%" and fmt(-0.0125, 1, percent=True) == "\u22121.2%"


def test_fmt_column_writes_a_column_in_one_format():
    m = "\u2212"
    # ordinary values: fmt's decimals
    assert fmt_column([0.4321, 1.5, float("nan")]) == ["0.43", "1.50", "n/a"]
    # one small value: every value gets the decimals it needs, when few enough
    assert fmt_column([0.0033, 0.2, 1.25]) == ["0.003", "0.200", "1.250"]
    # smaller still (the learned chapter's attention worth): powers of ten for every value (as the prose writes
    # them), zero as 0
    assert fmt_column([-0.00033, 2.4e-05, 0.0, 2e-05, 0.0002]) == [
        f"{m}3.3×10⁻⁴",
        "2.4×10⁻⁵",
        "0",
        "2.0×10⁻⁵",
        "2.0×10⁻⁴",
    ]
    assert fmt_column([0.09, 1e-16, 8.31e-07], 3) == ["9.00×10⁻²", "0", "8.31×10⁻⁷"]  # rounding noise is zero
    assert fmt_column([3.7e11, 1.4e11]) == ["3.7×10¹¹", "1.4×10¹¹"]
    assert fmt_column([0.197, 0.224], 1, percent=True) == ["19.7%", "22.4%"]  # the one way of writing a percentage
    assert fmt_column([]) == []


def test_per_arch_names_a_setting_the_architectures_differ_in():
    assert per_arch({"modernbert": 500, "gpt2": 1000}) == "GPT-2 1000, ModernBERT 500"  # largest first
    assert per_arch({"modernbert": 40, "gpt2": 40}) == "40"
    assert (
        per_arch({"modernbert": 500, "gpt2": 1000}, lambda n: f"{n} steps") == "GPT-2 1000 steps, ModernBERT 500 steps"
    )


def test_every_table_vocabulary_covers_its_names_in_words():
    import dataclasses

    from attnrank.analysis import synthetic
    from attnrank.core import profiles
    from attnrank.runs import experiments, presets

    fields = {f.name for f in dataclasses.fields(profiles.RunConfig)} - {"arch", "profile"}
    assert set(glossary.SETTING_LABELS) == fields
    assert set(glossary.VERDICT_LABELS) == set(experiments.VERDICT_RUNS)
    assert set(glossary.CHAPTER_LABELS) == set(presets.PRESETS) | set(presets.RUN_PRESETS)
    assert set(glossary.SIZE_LABELS) == {k for c in presets.PRESETS.values() for p in c.values() for k in p}
    assert set(glossary.TARGET_LABELS) == set(synthetic.TARGETS)
    labels = [
        *glossary.SETTING_LABELS.values(),
        *glossary.VERDICT_LABELS.values(),
        *glossary.CHAPTER_LABELS.values(),
        *glossary.SIZE_LABELS.values(),
        *glossary.TARGET_LABELS.values(),
    ]
    assert not [x for x in labels if "_" in x]
    assert glossary.TARGET_LABELS["lowrank"] == "low-rank"


def test_fmt_setting_writes_grid_values_compactly():
    assert [fmt_setting(v) for v in (9.7e7, 32.0, 0.001, 1e-4, 2e-5, 0.25, 1)] == [
        "9.7e7",
        "32",
        "0.001",
        "0.0001",
        "2e-5",
        "0.25",
        "1",
    ]
    assert fmt_setting(float("nan")) == "n/a"


def test_fmt_estimate_writes_value_interval_and_n():
    e = Estimate(0.391, -0.0512, 0.7149, 14, "test")
    assert fmt_estimate(e) == "0.39 [\u22120.05, 0.71], n = 14"
    assert fmt_estimate(e, 3, n=False) == "0.391 [\u22120.051, 0.715]"
    assert fmt_estimate(e, 1) == "0.4 [\u22120.1, 0.7], n = 14"  # one format for the three numbers
    nan = float("nan")
    assert fmt_estimate(Estimate(nan, nan, nan, 2, "t")) == "not estimable, n = 2"
    assert fmt_estimate(Estimate(nan, nan, nan, 1, "t"), n=False) == "not estimable"
    assert fmt_estimate(Estimate(-1e-16, -0.001, 0.002, 5, "t")) == "0.000 [\u22120.001, 0.002], n = 5"
    # an interval narrower than the last decimal gets the decimals its width needs, all three numbers alike
    assert fmt_estimate(Estimate(0.000992, -0.012, 0.014, 4, "t"), 3, n=False) == "0.001 [\u22120.012, 0.014]"
    assert fmt_estimate(Estimate(0.0021, 0.002, 0.0022, 6, "t"), 2, n=False) == "0.0021 [0.0020, 0.0022]"
    assert fmt_estimate(Estimate(-0.0004, -0.004, 0.003, 5, "t"), 3, n=False) == "0.000 [\u22120.004, 0.003]"
    assert fmt_estimate(Estimate(0.123, 0.08, 0.15, 30, "t"), 0, percent=True) == "12% [8%, 15%], n = 30"
    # an interval of no width is never printed as one: every resample gave the same value (few runs, no spread)
    assert fmt_estimate(Estimate(-1.0, -1.0, -1.0, 4, "t")) == "\u22121.00 in every resample, n = 4"
    assert fmt_estimate(Estimate(0.016, 0.016, 0.016, 2, "t"), 3, n=False) == "0.016 in every resample"
    # at most two decimals more than asked; an interval narrower still is written in powers of ten, not as
    # "0.000000 [0.000000, 0.000001]" (headdim's lever table) nor as a point "0.0000 [0.0000, 0.0000]"
    assert fmt_estimate(Estimate(2.6e-7, 1e-7, 1.1e-6, 5, "t"), 2, n=False) == ("2.6×10⁻⁷ [1×10⁻⁷, 1.1×10⁻⁶]")
    assert fmt_estimate(Estimate(-1.06e-5, -2e-5, 3e-6, 5, "t"), 2, n=False) == ("−1.1×10⁻⁵ [−2×10⁻⁵, 3×10⁻⁶]")


def test_the_vocabulary_is_the_run_configs_and_has_a_label_for_every_measure():
    from attnrank.core import profiles

    assert glossary.ARCHS is profiles.ARCHS and glossary.TAU_RANGE is profiles.TAU_RANGE
    assert glossary.MEASURES is rank.MEASURES and rules.PRIMARY_MEASURE in glossary.RANK_MEASURES
    assert set(glossary.MEASURE_LABELS) == set(rank.MEASURES)
    assert set(glossary.ARCH_LABELS) == set(glossary.ARCH_NAMES) == set(profiles.ALL_ARCHS)
    assert glossary.RANK_MEASURES == tuple(m for m in rank.MEASURES if m != "attention_entropy")


@pytest.mark.parametrize("roots", [provenance.RUN_ROOTS, provenance.RESULT_ROOTS])
def test_words_are_outside_every_result_hash(roots):
    """The glossary and the chapter modules (labels, sentences, tables) are in no run key and in no
    cached table's key: renaming a label or rewording a verdict re-keys nothing."""
    hashed = {p.stem for p in provenance.closure(roots)}
    for words in ("glossary", "dynamics", "loss", "temp", "headdim", "presets", "book", "plots"):
        assert words not in hashed


def test_a_count_of_zero_is_written_in_words():
    from attnrank.words.glossary import fmt_count

    assert [fmt_count(n, "run") for n in (0, 1, 3)] == ["no runs", "1 run", "3 runs"]


def test_fmt_and_lists_items_as_a_sentence_does():
    from attnrank.words.glossary import fmt_and

    assert fmt_and([0, 1, 2]) == "0, 1 and 2" and fmt_and(["64", "256"]) == "64 and 256"
    assert fmt_and(["one"]) == "one" and fmt_and([]) == ""
