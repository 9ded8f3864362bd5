"""The causal rule and claim (ii)'s rule (which reads two of its cells) on constructed 2 x 2 tables, at and around their
thresholds."""

import numpy as np
import pandas as pd
import pytest

from attnrank.analysis import rules
from attnrank.core.errors import ConfigError
from attnrank.sections import causal

SEED = np.array([-0.05, -0.02, 0.0, 0.02, 0.05])  # a seed's effect, shared by its five runs
#: each run's own noise: per cell, five values of mean 0 and sd 0.0016
JITTER = {
    c: np.roll([-0.002, -0.001, 0.0, 0.001, 0.002], k) for k, c in enumerate(("stock", "init", "lr", "twin", "tau"))
}


def table(means: dict, archs=("modernbert", "gpt2")) -> pd.DataFrame:
    """Five seeds per cell: ``mean + SEED[seed] + JITTER[cell][seed]`` (paired by seed)."""
    return pd.DataFrame(
        [
            {"arch": a, "cell": c, "seed": i, "final_val_loss": m + SEED[i] + JITTER[c][i]}
            for a in archs
            for c, m in means.items()
            for i in range(5)
        ]
    )


BASE = {"stock": 5.0, "twin": 5.1, "tau": 5.1}


def test_loss_follows_the_step_size_is_not_supported():
    """Colder trains worse (+0.1), the step-size-only cell reproduces it and the initial-scale-only
    cell does not: not supported, for each architecture."""
    v = rules.causal_rule(table({**BASE, "init": 5.0, "lr": 5.1}))
    assert v.status == "not supported"
    e = v["modernbert"].verdict.estimate
    assert e.value == pytest.approx(-0.1) and e.high < 0
    assert v["modernbert"].parts["temperature"].value == pytest.approx(0.1)
    assert v["modernbert"].parts["twin_gap"].value == pytest.approx(0.0, abs=1e-12)
    assert v["modernbert"].parts["temperature"].n == 5  # paired by seed: five differences


def test_loss_follows_the_initial_scale_is_supported():
    """The initial-scale-only cell reproduces the temperature's loss effect: supported. The
    orientation follows the temperature's sign: the mirror case (colder trains better) too."""
    assert rules.causal_rule(table({**BASE, "init": 5.1, "lr": 5.0})).status == "supported"
    mirror = {"stock": 5.0, "twin": 4.9, "tau": 4.9, "init": 4.9, "lr": 5.0}
    v = rules.causal_rule(table(mirror))
    assert v.status == "supported" and v["gpt2"].verdict.estimate.value == pytest.approx(0.1)


def test_no_temperature_effect_is_inconclusive():
    """With no resolved loss effect of temperature (its interval contains 0) nothing can be
    attributed: inconclusive at this scale, even when the two single-factor cells differ."""
    v = rules.causal_rule(table({"stock": 5.0, "twin": 5.0, "tau": 5.001, "init": 5.1, "lr": 5.0}))
    assert v.status == "inconclusive at this scale"
    assert v["modernbert"].parts["temperature"].low < 0 < v["modernbert"].parts["temperature"].high


def test_the_effect_cell_shows_the_number_that_decides_each_deciding_case():
    """The intro's effect cell: with no resolved temperature effect the rule stops there, so that effect is the
    number shown (the oriented difference beside it decided nothing); where the temperature's effect is resolved,
    the oriented difference the rule judges. A supported case beside an inconclusive one does not decide the
    combined status and is left out."""
    no_effect = table({"stock": 5.0, "twin": 5.0, "tau": 5.001, "init": 5.1, "lr": 5.0}, archs=("modernbert",))
    follows = table({**BASE, "init": 5.1, "lr": 5.0}, archs=("gpt2",))
    v = rules.causal_rule(pd.concat([no_effect, follows], ignore_index=True))
    assert v["modernbert"].verdict.status == "inconclusive at this scale" and v["gpt2"].verdict.status == "supported"
    text = causal.effect_text(v)
    assert text.startswith("ModernBERT τ effect 0.001 [") and "GPT-2" not in text
    both = rules.causal_rule(table({**BASE, "init": 5.1, "lr": 5.0}))
    assert causal.effect_text(both) == "; ".join(
        f"{name} scale − step 0.100 [{both[a].verdict.estimate.low:.3f}, {both[a].verdict.estimate.high:.3f}] nats"
        for name, a in (("GPT-2", "gpt2"), ("ModernBERT", "modernbert"))
    )


def test_single_factors_alike_is_inconclusive_and_states_seeds_needed():
    """A temperature effect that neither single factor carries more than the other (difference
    within the seed noise): inconclusive at this scale, with the seeds per arm that would resolve
    the pre-registered 0.01 nats."""
    v = rules.causal_rule(table({**BASE, "init": 5.05, "lr": 5.051}))
    assert v.status == "inconclusive at this scale"
    assert v["modernbert"].verdict.needed is not None and v["modernbert"].verdict.needed >= 2
    r = v["modernbert"].verdict
    if r.needed > r.estimate.n:
        assert f"about {r.needed} seeds would resolve 0.01 nats" in causal.causal_text(v, "modernbert")
    else:  # the seeds already there would resolve 0.01 nats: the effect is smaller than that
        assert f"the {r.estimate.n} seeds here would already resolve 0.01 nats" in causal.causal_text(v, "modernbert")


def test_one_architecture_against_makes_the_claim_not_supported():
    """The claim is made for both architectures: one not supported makes it not supported."""
    t = pd.concat(
        [
            table({**BASE, "init": 5.1, "lr": 5.0}, archs=("modernbert",)),
            table({**BASE, "init": 5.0, "lr": 5.1}, archs=("gpt2",)),
        ]
    )
    v = rules.causal_rule(t)
    assert v["modernbert"].verdict.status == "supported" and v["gpt2"].verdict.status == "not supported"
    assert v.status == "not supported"


def test_missing_cell_or_column_names_runs():
    """A table without a cell's runs, or without the outcome column, gives a ConfigError naming runs."""
    t = table({**BASE, "init": 5.1, "lr": 5.0})
    with pytest.raises(ConfigError, match="^runs"):
        rules.causal_rule(t[t.cell != "lr"])
    with pytest.raises(ConfigError, match="^runs"):
        rules.causal_rule(t.drop(columns="cell"))


def test_pairing_by_seed_removes_the_seed_effect():
    """The shared seed effect (sd 0.04) cancels in the paired differences: a 0.01 difference between
    the single-factor cells is resolved, which an unpaired comparison of the same runs is not."""
    t = table({**BASE, "init": 5.05, "lr": 5.06})
    e = rules.paired_difference(t[t.arch == "modernbert"], "final_val_loss", "init", "lr")
    assert e.value == pytest.approx(-0.01) and e.high < 0
    unpaired = rules.two_point(
        t[(t.arch == "modernbert") & (t.cell == "init")].final_val_loss,
        t[(t.arch == "modernbert") & (t.cell == "lr")].final_val_loss,
    )
    assert unpaired.low < 0 < unpaired.high


def ranked(loss: dict, rank: dict, archs=("gpt2",)) -> pd.DataFrame:
    """:func:`table` of the final loss with an initial effective rank per cell (the same shared seed effect)."""
    t = table(loss, archs)
    t["initial_effective_rank"] = t.cell.map(rank) + SEED[t.seed] + t.apply(lambda r: JITTER[r.cell][r.seed], axis=1)
    return t


def test_claim_ii_reads_the_loss_the_higher_rank_cell_saves():
    """Claim (ii)'s rule (version 4): the init cell raises the initial rank by 10 units; where it ends 0.05 nats
    lower the claim is supported (the saving is 0.05 exactly, paired by seed), where it ends 0.05 higher it is not,
    and where the init cell lowers the rank the same loss change reads the other way round."""
    up = {"stock": 5.0, "init": 15.0}
    v = rules.rank_loss_rule(ranked({"stock": 3.0, "init": 2.95}, up), "effective_rank")
    r = v["gpt2"]
    assert v.status == "supported" and r.verdict.estimate.value == pytest.approx(0.05)
    assert r.parts["rank"].value == pytest.approx(10.0) and r.parts["loss"].value == pytest.approx(-0.05)
    assert rules.rank_loss_rule(ranked({"stock": 3.0, "init": 3.05}, up), "effective_rank").status == "not supported"
    down = {"stock": 15.0, "init": 5.0}
    v = rules.rank_loss_rule(ranked({"stock": 3.0, "init": 3.05}, down), "effective_rank")
    assert v.status == "supported" and v["gpt2"].verdict.estimate.value == pytest.approx(0.05)


def test_claim_ii_is_open_where_the_design_moves_no_rank_or_trains_no_model():
    """A rank the design did not move (the same in both cells) leaves the case inconclusive whatever the loss does; a
    model of the claim without runs in the design is inconclusive with no estimate, so it cannot make the claim
    supported, and a not-supported model still decides it."""
    flat = rules.rank_loss_rule(ranked({"stock": 3.0, "init": 2.9}, {"stock": 5.0, "init": 5.0}), "effective_rank")
    assert flat.status == "inconclusive at this scale" and flat["gpt2"].verdict.estimate.value == pytest.approx(0.1)
    saves = ranked({"stock": 3.0, "init": 2.95}, {"stock": 5.0, "init": 15.0})
    v = rules.rank_loss_rule(saves, "effective_rank", archs=["modernbert", "gpt2"])
    assert v.status == "inconclusive at this scale" and v["modernbert"].verdict.estimate.n == 0
    loses = ranked({"stock": 3.0, "init": 3.05}, {"stock": 5.0, "init": 15.0})
    assert rules.rank_loss_rule(loses, "effective_rank", archs=["modernbert", "gpt2"]).status == "not supported"


def test_claim_ii_effect_cell_shows_the_saving_that_decides():
    """The intro's effect cell for claim (ii) is the rule's statistic of the deciding models: GPT-2's saving where it is
    not supported (ModernBERT, not in the design, decides nothing then), and the model without runs named where the
    open cases decide."""
    from attnrank.sections import loss

    loses = ranked({"stock": 3.0, "init": 3.05}, {"stock": 5.0, "init": 15.0})
    v = rules.rank_loss_rule(loses, "effective_rank", archs=["modernbert", "gpt2"])
    cell = loss.effect_text(v)
    assert cell.startswith("GPT-2 loss saved by the higher-rank cell −0.050 [") and "ModernBERT" not in cell
    assert "(initial effective rank init × s − stock 10.000 [9.997, 10.003])" in cell
    saves = ranked({"stock": 3.0, "init": 2.95}, {"stock": 5.0, "init": 15.0})
    cell = loss.effect_text(rules.rank_loss_rule(saves, "effective_rank", archs=["modernbert", "gpt2"]))
    assert cell == "ModernBERT not in the design (so the claim cannot come out supported)"


def test_claim_iis_design_is_the_shared_sweeps_stock_run_and_a_smaller_initial_scale():
    """Rule version 6 reads, per model and seed, the shared sweep's run at tau = 1 and the profile's head dimension
    (stock training conditions, so the runs the sweep trains anyway) and the same run with query and key weights
    starting at s = 0.5 times theirs (the initial logits of tau = 4); the cells label as the causal chapter's stock and
    init."""
    from attnrank.runs import experiments

    plan = experiments.sweep_plan("quick", seeds=[0, 1])
    runs = experiments.loss_runs(plan)
    stock, init = runs[:4], runs[4:]
    assert set(stock) <= set(experiments.main_sweep(plan)) and not set(init) & set(experiments.main_sweep(plan))
    assert {(c.arch, c.seed, c.tau, c.head_dim) for c in stock} == {
        (a, s, 1.0, 32) for a in ("gpt2", "modernbert") for s in (0, 1)
    }
    for a, b in zip(stock, init):
        assert b.qk_init_scale == pytest.approx(0.5) and b == type(a)(
            **{**a.__dict__, "qk_init_scale": b.qk_init_scale}
        )
        assert (a.adam_epsilon, a.qk_decay_scale, a.max_grad_norm) != tuple(experiments.P3_CONDITIONS.values())
    labels = causal.label_cells(pd.DataFrame([c.__dict__ for c in runs]), experiments.LOSS_TAU)
    assert list(labels) == ["stock"] * 4 + ["init"] * 4


def test_claim_iis_gate_reads_both_cells(monkeypatch):
    """A model whose init × s runs end above the learned gate's margin is inconclusive, however its stock runs did:
    the gate reads every run the rule reads. With both cells learned the rule's own status stands."""
    from attnrank.analysis import baselines
    from attnrank.core.measures import RANK_MEASURES
    from attnrank.sections import loss

    t = ranked({"stock": 3.0, "init": 3.05}, {"stock": 15.0, "init": 5.0}, archs=("gpt2", "modernbert"))
    for m in RANK_MEASURES:
        t[f"initial_{m}"] = t["initial_effective_rank"]
    t["status"], t["gap"] = "complete", -0.6

    def worst(runs):
        return {a: float(g.gap.max()) for a, g in runs.groupby("arch")}

    monkeypatch.setattr(baselines, "bigram_gaps", worst)
    monkeypatch.setattr(baselines, "reference_gains", lambda runs, worst=False: {a: 1.0 for a in set(runs.arch)})
    d = loss.decide(t, ["modernbert", "gpt2"])
    assert d.status["effective_rank"] == "supported" and len(d.gated) == len(t)
    t.loc[(t.arch == "modernbert") & (t.cell == "init"), "gap"] = 0.4
    d = loss.decide(t, ["modernbert", "gpt2"])
    assert d.gates["effective_rank"].not_learned == ("modernbert",)
    assert d.status["effective_rank"] == "inconclusive at this scale"
    assert "A cell above its bigram count model has not learned" in loss.intervention_text(t)
