"""Generality: a dataset for every sweep and chapter (ATTNRANK_DATASET, ``attnrank sweep
--dataset``, the chapters' ``dataset`` parameter), the opt-in ``long`` profile and the table of
the scale each verdict is computed at."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

from attnrank import book
from attnrank.cli import main
from attnrank.core.errors import ConfigError
from attnrank.core.profiles import PROFILES, base_profile, profile_defaults, resolve_config, resolve_profile
from attnrank.runs import experiments

CHAPTERS = Path(__file__).resolve().parents[2] / "chapters"


@pytest.fixture
def clean_env(monkeypatch):
    """No dataset or profile from the environment; restored after the test (the CLI sets the variable)."""
    monkeypatch.setenv("ATTNRANK_DATASET", "")
    monkeypatch.delenv("ATTNRANK_PROFILE", raising=False)
    return monkeypatch


# ----------------------------------------------------------------------------- dataset
def test_every_sweep_takes_a_dataset(corpus, clean_env):
    name = f"hf:{corpus}"
    assert experiments.sweep_plan("ci", dataset=name).dataset == name
    assert experiments.sweep_plan("ci").dataset == "shakespeare"
    one = experiments.sweep_plan("ci", taus=[1.0], head_dims=[8], seeds=1, dataset=name)
    sweeps = {
        "tau": experiments.tau_sweep(one),
        "head_dim": experiments.head_dim_sweep(one),
        "main": experiments.main_sweep(experiments.sweep_plan("ci", dataset=name)),
        "seq_len": experiments.seq_len_sweep("ci", dataset=name),
        "book": experiments.book_runs("ci", dataset=name),
    }
    for kind, configs in sweeps.items():
        assert configs and {c.dataset for c in configs} == {name}, kind
    assert len(sweeps["main"]) == len(experiments.main_sweep(experiments.sweep_plan("ci"))) == 130
    assert len(sweeps["book"]) == len(experiments.book_runs("ci"))
    with pytest.raises(ConfigError) as e:
        experiments.sweep_plan("ci", dataset="wikitext")
    assert e.value.param == "dataset"
    with pytest.raises(ConfigError) as e:
        experiments.book_runs("ci", dataset=f"hf:{corpus / 'missing'}")
    assert e.value.param == "dataset"


def test_attnrank_dataset_switches_every_run_and_its_key(corpus, clean_env):
    from attnrank.runs.store import run_key

    stock = resolve_config("gpt2", "ci")
    clean_env.setenv("ATTNRANK_DATASET", f"hf:{corpus}")
    assert profile_defaults("ci")["dataset"] == f"hf:{corpus}"
    other = resolve_config("gpt2", "ci")
    assert other.dataset == f"hf:{corpus}" and stock.dataset == "shakespeare"
    assert run_key(other) != run_key(stock)
    assert {c.dataset for c in experiments.book_runs("ci")} == {f"hf:{corpus}"}
    assert resolve_config("gpt2", "ci", dataset="shakespeare") == stock  # an explicit dataset wins
    for bad in ("wikitext", f"hf:{corpus / 'missing'}"):
        clean_env.setenv("ATTNRANK_DATASET", bad)
        with pytest.raises(ConfigError) as e:
            resolve_config("gpt2", "ci")
        assert e.value.param == "ATTNRANK_DATASET"


def test_attnrank_dataset_is_in_the_books_execution_context(corpus, clean_env):
    from attnrank.sphinxext.context import execution_context

    before, _ = execution_context()
    clean_env.setenv("ATTNRANK_DATASET", f"hf:{corpus}")
    after, items = execution_context()
    assert items["env:ATTNRANK_DATASET"] == f"hf:{corpus}" and after != before


def test_a_log_level_that_puts_lines_on_a_page_is_in_the_execution_context(clean_env):
    """TRANSFORMERS_VERBOSITY=info printed transformers' log lines into a chapter; a rebuild without it served them."""
    from attnrank.sphinxext.context import execution_context

    before, _ = execution_context()
    clean_env.setenv("TRANSFORMERS_VERBOSITY", "info")
    after, items = execution_context()
    assert items["env:TRANSFORMERS_VERBOSITY"] == "info" and after != before
    clean_env.delenv("TRANSFORMERS_VERBOSITY")
    assert execution_context()[0] == before


def test_chapter_parameter_dataset(corpus):
    """Guarantee (docs/guarantees.md): "Bad input fails first." (the chapters' ``dataset`` parameter)"""
    check = book.PARAMETERS["dataset"].check
    assert check("dataset", None) is None
    assert check("dataset", "shakespeare") == "shakespeare"
    assert check("dataset", f"hf:{corpus}/") == f"hf:{corpus}"  # normalised as the run config stores it
    for bad, words in (
        ("wikitext", "'hf:NAME[:CONFIG]'"),
        (f"hf:{corpus / 'missing'}", "does not exist"),
        (3, "string"),
    ):
        with pytest.raises(ConfigError) as e:
            book.check_parameters({"dataset": bad}, ("dataset",))
        assert e.value.param == "dataset" and words in str(e.value)


def test_every_chapter_that_trains_passes_its_dataset_to_its_sweep():
    for name, runs in experiments.CHAPTERS.items():
        if runs is None:
            continue
        source = (CHAPTERS / f"{name}.py").read_text()
        assert re.search(r"\ndataset(: str)? = None", source), name
        if "dataset=dataset" in source:
            continue
        # the one chapter pattern: the checked parameters go to the chapter module's section in one call
        call = re.search(r"params = book\.check_parameters\(globals\(\), (\w+)\.section\)", source)
        assert call and f"{call.group(1)}.section(**params)" in source, name
        imported = {  # the names the chapter imports from the library, and their modules
            name.strip(): f"{package}.{name.strip()}"
            for package, names in re.findall(r"^from (attnrank[\w.]*) import (.+)$", source, re.M)
            for name in names.split(",")
        }
        module = importlib.import_module(imported[call.group(1)])
        assert "dataset" in inspect.signature(module.section).parameters, name


def test_cli_sweep_dataset(corpus, clean_env, capsys):
    assert main(["sweep", "--profile", "ci", "--chapters", "theory", "--dataset", f"hf:{corpus}", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("24 runs of the ci profile, 0 stored, 24 to train")
    import os

    assert os.environ["ATTNRANK_DATASET"] == f"hf:{corpus}"  # so the chapters resolve the same runs
    assert main(["sweep", "--profile", "ci", "--dataset", "wikitext", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnrank: error: dataset: got 'wikitext'")


# ----------------------------------------------------------------------------- scale profile
def test_scale_profile_is_quick_trained_three_times_longer(clean_env):
    quick, scale = resolve_config("modernbert", "quick"), resolve_config("modernbert", "scale")
    sizes = ("hidden_size", "num_layers", "num_heads", "max_len", "vocab_size", "batch_size", "probe_size")
    assert [getattr(scale, f) for f in sizes] == [getattr(quick, f) for f in sizes]
    assert scale.max_steps == 3 * quick.max_steps == 3_000 and scale.profile == "scale"
    assert resolve_config("bert", "scale").max_steps == 3 * resolve_config("bert", "quick").max_steps == 1_500
    assert resolve_config("gpt2", "scale").max_steps == 3 * resolve_config("gpt2", "quick").max_steps == 3_000
    assert resolve_config("gpt2", "scale").vocab_size == resolve_config("gpt2", "quick").vocab_size == 320
    assert scale.warmup_steps == 3 * quick.warmup_steps and scale.learning_rate == quick.learning_rate
    assert "scale" in PROFILES and base_profile("scale") == "quick" and base_profile("ci") == "ci"
    assert experiments.SWEEP_DEFAULTS["scale"] == experiments.SWEEP_DEFAULTS["quick"]
    assert resolve_profile("auto") in ("quick", "paper")  # never the default
    clean_env.setenv("ATTNRANK_PROFILE", "scale")
    assert resolve_profile("auto") == "scale"
    assert book.check_parameters({"profile": "scale"}, ("profile",)) == {"profile": "scale"}
    assert {(c.arch, c.max_steps) for c in experiments.main_sweep(experiments.sweep_plan("auto"))} == {
        ("modernbert", 3_000),
        ("gpt2", 3_000),
    }
    # the causal chapter's 2 x 2 at the quick sizes and steps (where both models learn), three seeds
    causal = experiments.causal_runs("scale")
    assert {(c.profile, c.max_steps, c.hidden_size) for c in causal} == {("quick", 1000, 128)}
    assert len(causal) == len(experiments.CELLS) * 3 * 2


def test_chapters_size_per_profile_tables_by_the_base_profile():
    """A chapter with its own per-profile sizes (Monte Carlo samples, the toy task) looks them up
    by :func:`base_profile`, so ``-p profile scale`` runs it at the quick sizes instead of failing."""
    for path in sorted(CHAPTERS.glob("*.py")):
        source = path.read_text()
        assert "}[profile]" not in source and "DEFAULTS[profile]" not in source, path.name


def test_scale_profile_on_the_command_line(clean_env, capsys):
    assert main(["sweep", "--profile", "scale", "--chapters", "dynamics", "--dry-run"]) == 0
    # 4 temperatures x 3 seeds x 2 models, and head dimension 8 at tau = 1 and 1e-3 (3 seeds, 2 models)
    assert capsys.readouterr().out.startswith("38 runs of the scale profile")  # 30 on the temperature grid, 8 at d_h 16


def test_verdict_scales_name_the_profile_of_each_verdicts_runs(clean_env):
    quick = experiments.verdict_scales("quick").set_index("verdict")
    assert set(quick.index) == set(experiments.VERDICT_RUNS)
    bert, gpt2 = (resolve_config(a, "quick").max_steps for a in ("modernbert", "gpt2"))
    assert (bert, gpt2) == (1000, 1000)
    assert quick.loc["dynamics", "scale"] == "quick" and quick.loc["dynamics", "steps"] == "1000"
    assert quick.loc["dynamics", "runs"] == 38
    assert quick.loc["seq_len", "scale"] == "ci" and quick.loc["seq_len", "steps"] == "40"  # the ci runs
    assert quick.loc["seq_len", "model"] == "width 32 x 2 layers, n = 32/64/128/256"
    assert quick.loc["theory", "runs"] == 0 and "no trained models" in quick.loc["theory", "scale"]
    scale = experiments.verdict_scales("scale").set_index("verdict")
    assert scale.loc["temp", "scale"] == "scale" and scale.loc["temp", "steps"] == f"{3 * gpt2}"
    assert scale.loc["seq_len", "scale"] == "ci" and scale.loc["causal", "scale"] == "quick"
