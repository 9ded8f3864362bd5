"""The recipe study's design (attnrank.sections.recipe) and the budget arithmetic of attnrank.sections.learned, without training."""

import math

import pandas as pd
import pytest

from attnrank.core.errors import ConfigError
from attnrank.core.profiles import profile_defaults, resolve_config
from attnrank.sections import learned, recipe


def test_every_variant_moves_one_lever_from_the_default():
    for arch in ("modernbert", "gpt2"):
        d = profile_defaults("quick", arch)
        vs = recipe.variants(arch, "quick")
        assert vs[0].lever == "default" and vs[0].overrides == {}
        assert len({v.name for v in vs}) == len(vs)
        assert {v.lever for v in vs} <= set(recipe.LEVERS)
        steps = {v.name: v.overrides for v in vs if v.lever == "steps"}
        # the steps ladder scales warm-up and probe interval with the steps (probes at the same fractions)
        half = steps["0.5 x steps"]
        assert half["max_steps"] * 2 == d["max_steps"] and half["rank_every"] * 2 == d["rank_every"]
        for v in vs:
            if v.lever == "batch":  # equal training tokens
                o = v.overrides
                assert o["batch_size"] * o["max_steps"] == d["batch_size"] * d["max_steps"]
    bert_masks = [v.overrides["mlm_probability"] for v in recipe.variants("modernbert") if v.lever == "masking rate"]
    assert bert_masks and d["mlm_probability"] not in bert_masks
    assert not [v for v in recipe.variants("gpt2") if v.lever == "masking rate"]
    # every model tries the vocabularies from 256 to 1,024 other than its own; the study's BERT only steps and vocabulary
    for arch in ("modernbert", "gpt2", "bert"):
        own = profile_defaults("quick", arch)["vocab_size"]
        tried = {v.overrides["vocab_size"] for v in recipe.variants(arch) if v.lever == "vocabulary"}
        assert tried == set(recipe.VOCABULARIES) - {own} and min(tried | {own}) == 256
    assert {v.lever for v in recipe.variants("bert")} == {"default", "steps", "vocabulary"}
    with pytest.raises(ConfigError):
        recipe.variants("t5")


def test_configs_are_valid_runs_at_tau_1_and_seed_0():
    plan = recipe.configs("quick")
    assert {c.tau for _, _, c in plan} == {1.0} and {c.seed for _, _, c in plan} == {0}
    assert len({c for _, _, c in plan}) == len(plan)  # no two variants train the same run
    default = {a: c for a, v, c in plan if v.lever == "default"}
    assert default["gpt2"] == resolve_config("gpt2", "quick")
    prev = [c for a, v, c in plan if v.lever == "previous default" and a == "modernbert"][0]
    assert prev.max_steps == 250 and prev.learning_rate == 1e-3 and prev.mlm_probability == 0.15


@pytest.mark.parametrize("archs", [[], ["llama"], ("gpt2", "bert ")])
def test_configs_name_archs_for_no_or_an_unknown_architecture(archs):
    with pytest.raises(ConfigError) as e:
        recipe.configs("ci", archs=archs)
    assert e.value.param == "archs" and "'gpt2'" in str(e.value)


def test_configs_take_an_architecture_once():
    assert recipe.configs("ci", archs=["gpt2", "gpt2"]) == recipe.configs("ci", archs=["gpt2"])


def test_markdown_has_one_row_per_variant_and_signed_gaps():
    t = pd.DataFrame(
        [
            dict(
                arch="gpt2",
                variant="default",
                max_steps=10,
                tokens=1e6,
                flop=1e12,
                cpu_seconds=60.0,
                final_val_loss=3.9,
                gap_bigram=-0.23,
                attention_gain=0.75,
                gap_two_sided=math.nan,
            ),
            dict(
                arch="modernbert",
                variant="default",
                max_steps=10,
                tokens=1e6,
                flop=1e12,
                cpu_seconds=61.0,
                final_val_loss=5.4,
                gap_bigram=0.45,
                attention_gain=0.01,
                gap_two_sided=0.9,
            ),
        ]
    )
    lines = recipe.markdown(t).splitlines()
    assert len(lines) == 4
    assert "| GPT-2 | default | 10 | 1.00 M | 1.00e+12 | 60 | 3.90 | -0.23 | 0.75 |  |" == lines[2]
    assert lines[3].startswith("| ModernBERT |") and lines[3].endswith("| +0.45 | 0.01 | +0.90 |")


def test_budget_costs_each_part_from_flop_at_the_measured_rate():
    c = resolve_config("gpt2", "ci")
    rate = {"gpt2": 1e9, "modernbert": 1e9}
    per_run = c.max_steps * c.batch_size * c.max_len * learned.flops_per_token(c)
    t = learned.budget({"a": [c, c], "b": [c]}, rate).set_index("part")
    assert t.loc["a", "runs"] == 2 and t.loc["a", "flop"] == pytest.approx(2 * per_run)
    assert t.loc["total", "cpu_seconds"] == pytest.approx(3 * per_run / 1e9)
    assert t.loc["total", "two_core_minutes"] == pytest.approx(3 * per_run / 1e9 / 120)


@pytest.mark.parametrize("profile", ["ci", "quick"])
def test_the_builds_parts_are_the_runs_a_cold_build_trains(profile):
    """The budget's parts of a cold build hold every run :func:`book_runs` trains, each once, and nothing else."""
    from attnrank.runs import experiments

    parts = [c for runs in learned.plan_parts(profile)["build"].values() for c in runs]
    assert len(parts) == len(set(parts)) and set(parts) == set(experiments.book_runs(profile))
