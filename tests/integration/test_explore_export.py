"""The explorer's export from a real run store: the runs' own values, the plan that fits the budget."""

from __future__ import annotations

import base64
import zlib

import numpy as np
import pytest

from attnrank.core.rank import MEASURES
from attnrank.runs import experiments, store
from attnrank.sections import explore

GRID = dict(taus=[1.0], head_dims=[16], seeds=1)


@pytest.fixture
def stored(private_store):
    return {r.key: r for r in (store.run(c) for c in experiments.main_sweep(experiments.sweep_plan("ci", **GRID)))}


def _floats(text):
    return np.frombuffer(base64.b64decode(text), "<f4")


def test_export_shows_the_runs_own_records(stored):
    """Per run: its key, its stored curves, and matrix measures whose mean over layers and heads is
    the run's per-sequence probe record at that step."""
    data = explore.export("ci", **GRID)
    assert data.plan == explore.PLANS[0]
    assert sorted(data.runs.key) == sorted(stored) and len(data.payload["runs"]) == 2
    for rec in data.payload["runs"]:
        run = stored[rec["key"]]
        a = rec["attention"]
        cfg = run.run_config
        T, L, H = len(a["steps"]), cfg.num_layers, cfg.num_heads
        measures = _floats(a["measures"]).reshape(T, L, H, len(MEASURES))
        seq = run.table("sequences").query("split == 'val'")
        for t, step in enumerate(a["steps"]):
            rows = seq[(seq.step == step) & (seq.sequence == 0)]  # the page's probe sequence, the first
            for k, m in enumerate(MEASURES):
                np.testing.assert_allclose(measures[t, :, :, k].mean(), rows[m], rtol=1e-5)
        summary = run.table("rank_summary")
        means = summary[summary.measure == "effective_rank"].set_index("step")["mean"]
        np.testing.assert_allclose(rec["rank"]["effective_rank"], means.loc[rec["rank_steps"]], rtol=1e-6)
        assert rec["final"] == pytest.approx(run.summary["final_rank"], rel=1e-6)
        table = explore.run_table(data)
        assert f"{cfg.arch}-{run.key}" in set(table.run)


def test_a_small_budget_takes_a_thinner_plan(stored):
    full = explore.export("ci", **GRID)
    tight = explore.export("ci", **GRID, budget=1)  # nothing fits: the last plan
    assert tight.plan == explore.PLANS[-1]
    a, b = full.payload["runs"][0]["attention"], tight.payload["runs"][0]["attention"]
    assert len(b["steps"]) == 2 and b["steps"] == [a["steps"][0], a["steps"][-1]]
    assert b["levels"] == 15 and len(b["tokens"]) == len(a["tokens"]) == a["n"]
    assert len(zlib.decompress(base64.b64decode(b["matrices"]))) < len(zlib.decompress(base64.b64decode(a["matrices"])))
    assert "2 of the kept probe steps" in tight.payload["plan"]
    values = explore.glue_values(tight, explore.view(tight))
    assert values["explore_error_text"] == "1/30" and values["explore_runs"] == 2
    assert float(values["explore_page_mb"]) > 1  # BokehJS alone is over 1 MB
