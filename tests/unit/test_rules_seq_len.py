"""The sequence-length verdict rule (attnrank.analysis.rules.seq_len_rule) on constructed run tables,
at and around its threshold, the study's bound (1 - 1/e) n + 1, and the table behind it."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from attnrank.analysis import rules
from attnrank.core.errors import ConfigError
from attnrank.sections import seqlen

BOUND = {n: (1 - math.exp(-1)) * n + 1 for n in (32, 64)}  # 21.227..., 41.455...


def _runs(values: dict, measure: str = "effective_rank") -> pd.DataFrame:
    """One row per run: ``values[(arch, n)]`` lists the trained ranks of its seeds."""
    rows = []
    for (arch, n), finals in values.items():
        for seed, v in enumerate(finals):
            rows.append(
                {
                    "arch": arch,
                    "max_len": n,
                    "seed": seed,
                    "status": "complete",
                    f"initial_{measure}": v,
                    f"final_{measure}": v,
                }
            )
    return pd.DataFrame(rows)


def _around(n: int, offsets) -> list[float]:
    return [BOUND[n] + o for o in offsets]


def test_supported_when_every_interval_lies_below_the_bound():
    # mean bound - 1, sd 0.1, n = 3: the t interval is about +-0.25, wholly below
    r = rules.seq_len_rule(
        _runs({("modernbert", 32): _around(32, (-1.1, -1.0, -0.9)), ("gpt2", 64): _around(64, (-1.1, -1.0, -0.9))}),
        "effective_rank",
    )
    assert r.status == "supported" and r.n_runs == 6
    v = r.cases[("gpt2", 64)]
    assert v.threshold == pytest.approx(BOUND[64]) and v.estimate.value == pytest.approx(BOUND[64] - 1.0)
    assert v.estimate.high < BOUND[64]


def test_an_interval_touching_the_bound_is_inconclusive():
    # mean bound - 0.2 with the same spread: the interval (+-0.25) reaches over the bound
    r = rules.seq_len_rule(
        _runs({("modernbert", 32): _around(32, (-1.1, -1.0, -0.9)), ("gpt2", 32): _around(32, (-0.3, -0.2, -0.1))}),
        "effective_rank",
    )
    assert r.cases[("gpt2", 32)].status == "inconclusive at this scale"
    assert r.cases[("modernbert", 32)].status == "supported"
    assert r.status == "inconclusive at this scale"
    assert r.worst() == ("gpt2", 32)


def test_one_case_wholly_above_the_bound_is_not_supported():
    r = rules.seq_len_rule(
        _runs({("modernbert", 64): _around(64, (-5.1, -5.0, -4.9)), ("gpt2", 32): _around(32, (0.9, 1.0, 1.1))}),
        "effective_rank",
    )
    assert r.cases[("gpt2", 32)].status == "not supported"
    assert r.status == "not supported"


def test_a_constant_rank_just_below_the_bound_is_supported_and_one_seed_is_inconclusive():
    # equal values: a zero-width interval (a numerical rank can be the same for every seed)
    r = rules.seq_len_rule(_runs({("gpt2", 32): [21.0, 21.0, 21.0]}), "effective_rank")
    assert r.status == "supported"
    r = rules.seq_len_rule(_runs({("gpt2", 32): [21.0]}), "effective_rank")
    assert r.status == "inconclusive at this scale"


def test_failed_runs_are_left_out_and_bad_input_is_named():
    runs = _runs({("gpt2", 32): [20.0, 20.1, 19.9, 99.0]})
    runs.loc[3, "status"] = "failed"
    r = rules.seq_len_rule(runs, "effective_rank")
    assert r.n_runs == 3 and r.cases[("gpt2", 32)].estimate.value == pytest.approx(20.0)
    with pytest.raises(ConfigError) as e:
        rules.seq_len_rule(runs.drop(columns="max_len"), "effective_rank")
    assert e.value.param == "runs"
    with pytest.raises(ConfigError) as e:
        rules.seq_len_rule(runs, "rank")
    assert e.value.param == "measures"


def test_uniform_baselines():
    # uniform bidirectional attention has rank one; the uniform causal matrix is invertible and its
    # effective rank grows with n (13.6 at n = 32, 32.0 at n = 128, as the dynamics chapter shows)
    full, causal = seqlen.uniform_ranks(32, causal=False), seqlen.uniform_ranks(32, causal=True)
    assert full["rank_rtol_1e-2"] == 1 and full["effective_rank"] == pytest.approx(1.0)
    assert causal["rank_atol_1e-8"] == 32 and causal["rank_rtol_1e-2"] == 32
    assert causal["effective_rank"] == pytest.approx(13.6, abs=0.05)
    assert seqlen.uniform_ranks(128, causal=True)["effective_rank"] == pytest.approx(32.0, abs=0.05)


def test_table_has_both_references_per_model_and_length():
    runs = _runs({("modernbert", 32): [1.2, 1.3], ("gpt2", 64): [21.0, 21.2]})
    for m in ("rank_atol_1e-8", "rank_rtol_1e-2", "rank_rtol_1e-4", "stable_rank", "attention_entropy"):
        runs[f"initial_{m}"] = runs[f"final_{m}"] = 1.0
    t = seqlen.seq_len_table(runs)
    row = t[(t.arch == "gpt2") & (t.measure == "effective_rank") & (t.when == "trained")].iloc[0]
    assert row.n == 64 and row["mean"] == pytest.approx(21.1) and row.runs == 2
    assert row.bound == pytest.approx(BOUND[64]) and row.uniform == pytest.approx(21.06, abs=0.01)
    bert = t[(t.arch == "modernbert") & (t.measure == "rank_rtol_1e-2")].iloc[0]
    assert bert.uniform == 1.0 and bert.bound == pytest.approx(BOUND[32])
    assert len(t) == 2 * 6 * 2  # (arch, n) x measures x {initial, trained}
