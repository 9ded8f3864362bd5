"""One verdict per claim everywhere (the by-measure tables agree with the headline) and the intro's verdict
table reads in one screen (short regime markers, short effect cells)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from attnrank.analysis import rules
from attnrank.analysis.baselines import Regime
from attnrank.analysis.rules import DynamicsResult, LossResult
from attnrank.analysis.stats import Estimate
from attnrank.analysis.verdicts import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED
from attnrank.core.errors import ConfigError
from attnrank.sections.protocol import set_early_effect
from attnrank.sections.section import INITIAL_BRIEF, INITIAL_REGIME, Verdict, by_measure_table, regime_brief
from attnrank.words.glossary import fmt_estimate

TEXT = dict(finding="A short line.", effect="1 [0, 2]", n="4 runs", regime="r", summary="s")
#: What a row of the intro's table pastes besides the claim: the badge, the effect, its n and the regime.
ROW_LIMIT = 25


def _dynamics_verdict(results: dict, gaps: dict, primary: str) -> Verdict:
    """The verdict as :func:`attnrank.sections.dynamics.section` builds it: the gated status on every measure."""
    gate = rules.learned_gate(results[primary].halves, gaps)
    by = {m: rules.learned_gate(r.halves, gaps).status for m, r in results.items()}
    return Verdict("dynamics", gate.status, by_measure=by, brief=regime_brief(Regime(gate)), **TEXT)


def _halves(status: str) -> dict:
    return {(h, a): status for h in ("first", "second") for a in ("modernbert", "gpt2")}


def test_the_by_measure_table_shows_the_gated_verdict_of_the_headline():
    # the rule rejects the claim on two measures, but neither model has learned: the headline is inconclusive
    results = {
        "rank_atol_1e-8": DynamicsResult(NOT_SUPPORTED, halves=_halves(NOT_SUPPORTED)),
        "effective_rank": DynamicsResult(NOT_SUPPORTED, halves=_halves(NOT_SUPPORTED)),
        "stable_rank": DynamicsResult(SUPPORTED, halves=_halves(SUPPORTED)),
    }
    not_learned = {"gpt2": 0.4, "modernbert": 1.2}
    v = _dynamics_verdict(results, not_learned, "effective_rank")
    assert v.status == INCONCLUSIVE
    t = by_measure_table("dynamics_by_measure", v, "effective_rank", results).frame
    primary = t[t.measure == "effective rank (primary)"]
    assert primary["verdict under this measure"].tolist() == [v.status]
    assert t["verdict under this measure"].tolist() == [INCONCLUSIVE] * 3
    assert t["rule outcome before the learned gate"].tolist() == [NOT_SUPPORTED, NOT_SUPPORTED, SUPPORTED]
    # every model has learned: the gate changes nothing, and no second column repeats the first
    learned = {"gpt2": -0.4, "modernbert": -0.35}
    v = _dynamics_verdict(results, learned, "effective_rank")
    t = by_measure_table("dynamics_by_measure", v, "effective_rank", results).frame
    assert t["verdict under this measure"].tolist() == [NOT_SUPPORTED, NOT_SUPPORTED, SUPPORTED]
    assert list(t.columns) == ["measure", "verdict under this measure"]


def test_the_loss_table_gates_as_its_headline():
    per_arch = {"modernbert": NOT_SUPPORTED, "gpt2": INCONCLUSIVE}
    results = {m: LossResult(NOT_SUPPORTED, per_arch=per_arch) for m in ("rank_atol_1e-8", "effective_rank")}
    gaps = {"modernbert": 0.3, "gpt2": -0.5}  # ModernBERT has not learned: its not-supported part no longer decides
    gate = rules.learned_gate(per_arch, gaps)
    by = {m: rules.learned_gate(r.per_arch, gaps).status for m, r in results.items()}
    v = Verdict("loss", gate.status, by_measure=by, **TEXT)
    t = by_measure_table("loss_by_measure", v, "effective_rank", results).frame
    assert t["verdict under this measure"].tolist() == [INCONCLUSIVE, INCONCLUSIVE]
    assert t["rule outcome before the learned gate"].tolist() == [NOT_SUPPORTED, NOT_SUPPORTED]


def test_a_table_that_would_disagree_with_its_headline_is_refused():
    results = {"effective_rank": DynamicsResult(NOT_SUPPORTED)}
    v = Verdict("x", INCONCLUSIVE, by_measure={"effective_rank": NOT_SUPPORTED}, **TEXT)
    with pytest.raises(ConfigError) as e:
        by_measure_table("x_by_measure", v, "effective_rank", results)
    assert e.value.param == "by_measure" and "headline" in str(e.value)
    v = Verdict("x", NOT_SUPPORTED, by_measure={"effective_rank": NOT_SUPPORTED, "stable_rank": SUPPORTED}, **TEXT)
    with pytest.raises(ConfigError, match="stable_rank"):
        by_measure_table("x_by_measure", v, "effective_rank", results)


def _gate(**gaps):
    return rules.learned_gate({a: SUPPORTED for a in gaps}, gaps)


def test_the_regime_marker_says_only_whether_each_model_learned():
    assert regime_brief(Regime(_gate(gpt2=0.4, modernbert=1.2))) == "trained, neither learned"
    assert regime_brief(Regime(_gate(gpt2=-0.4, modernbert=-0.35))) == "trained, both learned"
    assert regime_brief(Regime(_gate(gpt2=-0.4, modernbert=0.2))) == "trained, GPT-2 learned, ModernBERT not"
    assert regime_brief(Regime(_gate(modernbert=-0.4, gpt2=0.2))) == "trained, ModernBERT learned, GPT-2 not"
    assert regime_brief(Regime(_gate(modernbert=0.4))) == "trained, ModernBERT not learned"
    assert regime_brief(Regime(_gate(modernbert=-0.4))) == "trained, ModernBERT learned"
    # the margin counts: 0.01 nats below the bigram is not learned at a 0.05 margin
    gate = rules.learned_gate({"gpt2": SUPPORTED}, {"gpt2": -0.2}, margin=0.25)
    assert regime_brief(Regime(gate)) == "trained, GPT-2 not learned"
    assert regime_brief(Regime(SimpleNamespace(gaps={}, not_learned=()))) == "no complete run"
    # the marker is the same whichever numbers the gaps hold: rows that differ only there read alike
    assert regime_brief(Regime(_gate(gpt2=0.1, modernbert=3.0))) == regime_brief(
        Regime(_gate(gpt2=2.0, modernbert=0.01))
    )


def _row_words(v: Verdict) -> int:
    p = v.parts()
    return len(" ".join([p["status"], p["effect"], p["units"], p["regime_brief"]]).split())


def _est(value, low, high, n=65):
    return Estimate(value, low, high, n, "bootstrap")


def test_a_typical_row_of_the_intro_table_is_short():
    gate = _gate(gpt2=1.9, modernbert=1.2)
    brief = regime_brief(Regime(gate))
    rho = {"modernbert": _est(0.83, 0.67, 0.92), "gpt2": _est(-0.44, -0.64, -0.17)}
    dynamics = Verdict(
        "dynamics",
        gate.status,
        **{**TEXT, "effect": "; ".join(f"{a} ρ {fmt_estimate(e, n=False)}" for a, e in rho.items()), "n": "130 runs"},
        brief=brief,
    )
    assert _row_words(dynamics) == 4 + 10 + 2 + 3 <= ROW_LIMIT
    early = SimpleNamespace(
        per_arch={"modernbert": INCONCLUSIVE, "gpt2": INCONCLUSIVE},
        shown={"modernbert": (4, _est(0.85, 0.69, 0.93)), "gpt2": (4, _est(-0.33, -0.55, -0.06))},
    )
    effect = set_early_effect(early)
    assert (
        effect
        == "ρ with the final rank, step 4: ModernBERT 0.85 [0.69, 0.93]; GPT-2 \u22120.33 [\u22120.55, \u22120.06]"
    )
    set_early = Verdict("set_early", INCONCLUSIVE, **{**TEXT, "effect": effect, "n": "130 runs"}, brief=brief)
    assert _row_words(set_early) <= ROW_LIMIT
    # steps that differ are stated per model
    early.shown["gpt2"] = (8, early.shown["gpt2"][1])
    assert set_early_effect(early).endswith(
        "ModernBERT 0.85 [0.69, 0.93] (step 4); GPT-2 \u22120.33 [\u22120.55, \u22120.06] (step 8)"
    )
    # no learned run to correlate: said, not an empty cell after a colon
    early.shown = {"modernbert": None, "gpt2": None}
    assert set_early_effect(early) == "ρ with the final rank: not estimable (too few learned runs)"
    # a verdict at initialisation shows the short clause, the chapter the long one
    temp = Verdict(
        "temp",
        NOT_SUPPORTED,
        **{
            **TEXT,
            "effect": "effective rank, τ = 1 minus τ = 0.001: ModernBERT \u221211.35 [\u221211.98, \u221210.73]; "
            "GPT-2 \u22121.73 [\u22122.33, \u22121.12]",
            "n": "70 runs",
            "regime": INITIAL_REGIME,
        },
        brief=INITIAL_BRIEF,
    )
    assert temp.parts()["regime"] == INITIAL_REGIME and temp.parts()["regime_brief"] == "at initialisation"
    assert _row_words(temp) <= ROW_LIMIT


def test_the_findings_box_counts_rules_changed_after_looking_and_names_every_disagreement_with_the_confirmation():
    import pandas as pd

    from attnrank.sphinxext.directives import findings_text

    table = pd.DataFrame(
        {
            "verdict": ["dynamics", "loss", "temp", "seq_len", "regime"],
            "status": [NOT_SUPPORTED, INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED, ""],
            "finding": ["", "", "A hotter softmax's initial rank is lower.", "", "GPT-2 learned"],
        }
    )
    frozen = pd.DataFrame({"verdict": ["dynamics", "loss", "temp", "seq_len"], "version": [3, 1, 4, 2]})
    confirm = pd.DataFrame(
        {"verdict": ["dynamics", "loss", "temp"], "status": [NOT_SUPPORTED, SUPPORTED, NOT_SUPPORTED]}
    )
    scale = pd.DataFrame({"verdict": ["dynamics", "loss", "temp"], "status": [SUPPORTED, SUPPORTED, INCONCLUSIVE]})
    checks = {
        "confirm": (confirm, {"dynamics": "independent", "loss": "independent", "temp": "same"}),
        "scale": (scale, {"dynamics": "independent", "loss": "independent", "temp": "same"}, "2026-12-05"),
        "stdlib": (None, {}),
    }
    text, regime = findings_text(table, frozen, checks)
    assert "Of the 3 claims tested: 0 supported, 2 not supported, 1 inconclusive at this scale." in text
    assert "2 of these 3 rules were changed after their evidence had been seen (†)." in text  # the check is no claim
    assert (
        "On fresh seeds, with the frozen rules: of the 3 claims 1 supported, 2 not supported, 0 inconclusive at this "
        "scale; 1 of 2 replicated verdicts agree; they differ on (ii) higher rank, "
        f"lower loss ({INCONCLUSIVE} here, {SUPPORTED} there) (1 more repeats this build's own computation, so it does not count)."
        in text
    )
    # a same computation is not counted as agreeing, even where its recorded status differs
    assert (
        "At 3 times the steps (the scale check), recorded 2026-12-05: 0 of 2 replicated verdicts agree; they differ on (i) the rank is "
        f"stable ({NOT_SUPPORTED} here, {SUPPORTED} there); (ii) higher rank, lower loss" in text
    )
    assert "On a second corpus (the Python standard library): not recorded." in text
    assert regime == "GPT-2 learned"
    # a row recorded under an earlier version of its rule is named and neither agrees nor differs
    checks["confirm"] = (confirm, {"dynamics": "independent", "loss": "earlier rule", "temp": "same"})
    text = findings_text(table, frozen, checks)[0]
    assert (
        "On fresh seeds, with the frozen rules: of the 3 claims 1 supported, 2 not supported, 0 inconclusive at this "
        "scale; 1 of 1 replicated verdicts agree (1 more repeats this build's own computation, so it does not count); not compared, recorded under an earlier version of its rule: (ii) higher "
        "rank, lower loss." in text
    )
    # a verdict that shares runs with this build's (the scale check's causal GPT-2 half) replicates nothing either
    checks["confirm"] = (confirm, {"dynamics": "independent", "loss": "partly", "temp": "same"})
    assert (
        "scale; 1 of 1 replicated verdicts agree (1 more repeats this build's own "
        "computation and 1 more shares runs with it, so they do not count)." in findings_text(table, frozen, checks)[0]
    )
    assert "fresh seeds" not in findings_text(table, frozen, None)[0]
