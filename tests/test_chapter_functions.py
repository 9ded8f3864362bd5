"""Library functions that build the theory, protocol and causal chapters' figures, tables, glued
numbers and verdict sentences, on small constructed cases."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from attnrank import seqlen  # noqa: E402
from attnrank.errors import ConfigError  # noqa: E402
from attnrank.plots import theory as tplots  # noqa: E402
from attnrank.rank import MEASURES  # noqa: E402
from attnrank.theory import experiments as tx  # noqa: E402


@pytest.fixture(autouse=True)
def _data(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNRANK_DATA", str(tmp_path))
    yield
    plt.close("all")


# --- theory -------------------------------------------------------------------------------------


def test_theory_sizes_overrides_head_dims_and_samples():
    base = tx.sizes("ci")
    assert base["mc_head_dims"] == [1, 2, 4, 8, 16, 64, 256] and base["mc_samples"] == 40
    z = tx.sizes("ci", head_dims=[8, 2, 8, 4], mc_samples=7)
    assert z["mc_head_dims"] == z["sat_head_dims"] == [2, 4, 8] and z["mc_samples"] == 7
    assert {k: v for k, v in z.items() if k not in ("mc_head_dims", "sat_head_dims", "mc_samples")} == \
        {k: v for k, v in base.items() if k not in ("mc_head_dims", "sat_head_dims", "mc_samples")}
    with pytest.raises(ConfigError, match="profile"):
        tx.sizes("nope")


def test_theory_totals_count_only_checks():
    sections = {"a": tx.Section(check="a", tested=10, violations=1), "part": tx.Section(tested=99, violations=9),
                "b": tx.Section(check="b", tested=5, violations=0)}
    assert tx.totals(sections) == {"theory_total_tested": 15, "theory_total_violations": 1}


def test_theory_section_figure_names_data_and_caption():
    z = {"taylor_n": 8, "taylor_inst": 1, "p0_n": 6, "p0_inst": 2, "p0_digits": 30}
    ty = tx.p1_taylor(**z)
    fig, data, name, caption = tplots.section_figure("p1_taylor", ty, z, "ci")
    assert name == "theory_p1_bound" and data is ty.tables["bound"] and len(data) == 40
    assert caption.startswith("P1 bound: measured numerical rank against the Taylor bound, n = 8,")
    assert "(ci profile, 1 instances per setting, 40 points); dashed: equality." in caption
    assert (data.bound >= data.measured).all()
    p0 = tx.p0(**z)
    fig, data, name, caption = tplots.section_figure("p0", p0, z, "paper")
    assert name == "theory_p0_spectrum" and len(data) == 2 * 6 * 2  # instances x n x {float64, exact}
    assert caption.endswith("n = 6, tau = 1, in float64 and in 30-digit arithmetic (paper profile, 2 random instances).")
    with pytest.raises(ConfigError, match="name"):
        tplots.section_figure("p9", p0, z, "ci")


def _seq_runs(values: dict) -> pd.DataFrame:
    rows = []
    for (arch, n), finals in values.items():
        for seed, v in enumerate(finals):
            row = {"arch": arch, "max_len": n, "seed": seed, "status": "complete"}
            row.update({f"{w}_{m}": v for m in MEASURES for w in ("initial", "final")})
            rows.append(row)
    return pd.DataFrame(rows)


def test_seq_len_report_glue_figure_and_verdict():
    bound = {n: (1 - math.exp(-1)) * n + 1 for n in (32, 64)}  # 21.23, 41.46
    runs = _seq_runs({("bert", 32): [1.1, 1.2, 1.3], ("bert", 64): [1.5, 1.6, 1.7],
                      ("gpt2", 32): [10.0, 10.1, 10.2], ("gpt2", 64): [bound[64] + 5, bound[64] + 5.1, bound[64] + 5.2]})
    r = seqlen.report(runs, "ci sizes, 40 steps", "ci", (32, 64))
    assert r.glue == {"seq_len_ns": "32, 64", "seq_len_setting": "ci sizes, 40 steps", "seq_len_n_runs": 12}
    fig, data, name, caption = r.figure
    assert name == "seq_len" and set(data.measure) == {"effective_rank", "rank_rtol_1e-2"} and len(data) == 16
    assert caption.startswith("Mean rank against sequence length, ci sizes, 40 steps, 3 seeds per setting (ci build).")
    assert r.status == "not supported"  # GPT-2 at n = 64 lies wholly above the bound
    assert set(r.by_measure) == set(MEASURES) and set(r.by_measure.values()) == {"not supported"}
    assert "GPT-2 (CLM) at n = 64, 46.6 [46.3, 46.8], n = 3 against 41.5" in r.summary and "(12 runs, ci sizes, 40 steps)." in r.summary
    below = seqlen.report(runs[~((runs.arch == "gpt2") & (runs.max_len == 64))], "s", "ci", (32, 64))
    assert below.status == "supported" and below.glue["seq_len_n_runs"] == 9
