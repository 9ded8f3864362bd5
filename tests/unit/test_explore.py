"""The explorer's export and page, on constructed runs: the encoding round trip, the values, the page's parts."""

from __future__ import annotations

import base64
import json
import re
import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
import torch

from attnrank.core.errors import ConfigError
from attnrank.core.profiles import resolve_config
from attnrank.core.rank import MEASURES, rank_measures, singular_values
from attnrank.runs.store import Attention
from attnrank.sections import explore


def _attention(arch: str, T=3, L=2, S=2, H=2, n=8, seed=0) -> Attention:
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(T, L, S, H, n, n, generator=g) * 3
    if arch == "gpt2":
        logits = logits.masked_fill(torch.ones(n, n).triu(1).bool(), float("-inf"))
    probs = torch.softmax(logits, -1)
    ids = torch.arange(S * n).reshape(S, n)
    return Attention(torch.tensor([0, 4, 10])[:T], probs, ids, [[f"t{i}<&>" for i in row] for row in ids.tolist()])


@dataclass
class FakeRun:
    """What the export reads of a run (:class:`attnrank.runs.store.Run`'s interface)."""

    run_config: object
    key: str
    att: Attention

    @property
    def summary(self):
        return {
            "status": "complete",
            "failure": None,
            "initial_val_loss": 7.0,
            "final_val_loss": 5.25,
            "initial_rank": {m: 3.0 for m in MEASURES},
            "final_rank": {m: 2.0 for m in MEASURES},
        }

    def attention(self):
        return self.att

    def table(self, name):
        steps = [0, 4, 10]
        if name == "rank_summary":
            return pd.DataFrame(
                [{"step": s, "measure": m, "mean": 1.0 + s + i} for s in steps for i, m in enumerate(MEASURES)]
            )
        return pd.DataFrame({"step": steps, "val_loss": [7.0, 6.0, 5.25]})


PLAN = explore.Plan(levels=63)


def _record(arch, plan=PLAN):
    cfg = resolve_config(arch, "ci", num_heads=2, max_len=8)
    run = FakeRun(cfg, "0123456789abcdef", _attention(arch))
    return run, explore._run_record(explore._Arrays.of(run), plan)


def _b64(text, dtype, compressed=False):
    raw = base64.b64decode(text)
    return np.frombuffer(zlib.decompress(raw) if compressed else raw, dtype=dtype)


@pytest.mark.parametrize("arch", ["modernbert", "gpt2"])
@pytest.mark.parametrize("levels", [255, 63, 15])
def test_quantise_round_trip_is_within_half_a_level(arch, levels):
    att = _attention(arch)
    data, scale = explore.quantise(att.probabilities, causal=arch == "gpt2", levels=levels)
    n = att.probabilities.shape[-1]
    assert len(data) == att.probabilities[..., 0, 0].numel() * (n * (n + 1) // 2 if arch == "gpt2" else n * n)
    assert max(data) == levels  # every matrix's largest entry is the top level
    back = explore.dequantise(data, scale, n, causal=arch == "gpt2", levels=levels)
    P = att.probabilities.numpy()
    err = np.abs(back - P)
    assert np.all(err <= scale[..., None, None] / (2 * levels) + 1e-7)
    assert err.max() > scale.max() / (8 * levels)  # quantised, not exact
    np.testing.assert_allclose(scale, P.max(axis=(-2, -1)), rtol=1e-7)
    if arch == "gpt2":
        assert np.all(np.triu(back, 1) == 0)


@pytest.mark.parametrize("arch", ["modernbert", "gpt2"])
def test_a_run_record_holds_its_exact_spectra_measures_and_curves(arch):
    run, rec = _record(arch)
    a = rec["attention"]
    P = run.att.probabilities[:, :, 0]  # the page shows the first probe sequence
    T, L, H, n, _ = P.shape
    assert run.att.probabilities.shape[2] > 1  # the run kept more
    assert (rec["arch"], rec["key"], rec["num_heads"], rec["num_layers"]) == (arch, run.key, H, L)
    assert a["steps"] == [0, 4, 10] and a["n"] == n and a["causal"] == (arch == "gpt2")
    sv = _b64(a["singular_values"], "<f4").reshape(T, L, H, n)
    np.testing.assert_allclose(sv, singular_values(P).numpy(), rtol=1e-6)
    measures = _b64(a["measures"], "<f4").reshape(T, L, H, len(MEASURES))
    ref = rank_measures(P)
    for k, m in enumerate(MEASURES):
        np.testing.assert_allclose(measures[..., k], ref[m].numpy(), rtol=1e-6)
    matrices = _b64(a["matrices"], np.uint8, compressed=True).tobytes()
    scale = _b64(a["scale"], "<f4").reshape(T, L, H)
    back = explore.dequantise(matrices, scale, n, causal=arch == "gpt2", levels=a["levels"])
    assert a["levels"] == PLAN.levels
    assert np.abs(back - P.numpy()).max() <= P.max().item() / (2 * PLAN.levels) + 1e-7
    assert rec["rank_steps"] == [0, 4, 10]
    assert rec["rank"]["stable_rank"] == [1.0 + s + list(MEASURES).index("stable_rank") for s in (0, 4, 10)]
    assert rec["val_loss"] == [7.0, 6.0, 5.25] and rec["final"]["effective_rank"] == 2.0
    assert a["tokens"] == list(run.att.tokens[0])


def test_the_page_embeds_everything_and_escapes_the_data():
    """No external script or style, BokehJS inline, the payload parses back, a token with < & > cannot
    close the data element, every control is there."""
    runs = [_record("modernbert")[1], {**_record("gpt2")[1], "tau": 0.01}]
    explore._colors(runs)  # by tau, on a log scale: the coldest and the warmest ends of viridis
    assert [r["color"] for r in runs] == ["#FDE724", "#440154"]
    payload = {
        "profile": "ci",
        "dataset": "shakespeare",
        "primary": "effective_rank",
        "measures": [[m, m] for m in MEASURES],
        "thresholds": [{"label": "x", "atol": 1e-8, "rtol": None}],
        "archs": {"modernbert": "ModernBERT", "gpt2": "GPT-2"},
        "plan": PLAN.describe(),
        "probe_size": 16,
        "runs": runs,
    }
    data = explore.Export("ci", "shakespeare", pd.DataFrame(), payload)
    page = explore.page(data, uid="ax1")
    assert not re.search(r"<(script|link)[^>]+(src|href)=", page)  # nothing loaded
    assert "Bokeh" in page and len(page) > 1_000_000  # BokehJS inline
    inner = re.search(r'<script type="application/json" id="ax1-data">(.*?)</script>', page, re.S).group(1)
    assert "<&>" not in inner
    assert json.loads(inner)["runs"][0]["attention"]["tokens"][0] == "t0<&>"
    for name, _ in explore.CONTROLS:
        assert f'id="ax1-{name}"' in page
    assert {r["color"] for r in runs} <= {c for c in re.findall(r"#[0-9A-Fa-f]{6}", inner)}
    with pytest.raises(ConfigError) as e:
        explore.page(data, uid="1 bad")
    assert e.value.param == "uid"
    with pytest.raises(ConfigError) as e:
        explore.page(explore.Export("ci", "s", pd.DataFrame(), {**payload, "runs": []}))
    assert e.value.param == "data"


def test_a_thinner_plan_shows_fewer_steps():
    run, rec = _record("gpt2", explore.Plan(levels=15, steps=2))
    a = rec["attention"]
    assert a["steps"] == [0, 10] and a["levels"] == 15 and a["tokens"] == list(run.att.tokens[0])
    assert len(base64.b64decode(a["scale"])) == 4 * 2 * 2 * 2  # steps x layers x heads
    assert explore._thin(5, 3) == [0, 2, 4] and explore._thin(5, None) == [0, 1, 2, 3, 4]
    assert explore._thin(5, 1) == [4]
    assert "one probe sequence, 2 of the kept probe steps, 16 colour levels (4 bits)" in explore.PLANS[-1].describe()


def test_export_checks_its_arguments_before_reading_the_store():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ConfigError) as e:
            explore.export("ci", budget=bad)
        assert e.value.param == "budget"
    with pytest.raises(ConfigError) as e:
        explore.export("nope")
    assert e.value.param == "profile"
    with pytest.raises(ConfigError) as e:
        explore.export("ci", taus=[0.0])
    assert e.value.param == "taus"
