"""Command line errors and chapter parameter checks."""

from __future__ import annotations

import pytest
import torch

from attnrank import book
from attnrank.cli import main
from attnrank.core.errors import ConfigError


@pytest.mark.parametrize(
    "argv, param",
    [
        (["train", "--arch", "gpt2", "--tau", "-1"], "tau"),
        (["train", "--arch", "gpt2", "--tau", "nan"], "tau"),
        (["train", "--arch", "gpt2", "--tau", "inf"], "tau"),
        (["train", "--arch", "gpt2", "--tau", "0"], "tau"),
        (["train", "--arch", "t5"], "arch"),
        (["train", "--arch", "modernbert", "--profile", "huge"], "profile"),
        (["train", "--arch", "modernbert", "--profile", "ci", "--num-heads", "3"], "num_heads"),
        (["train", "--arch", "modernbert", "--profile", "ci", "--head-dim", "5"], "head_dim"),
        (["train", "--arch", "modernbert", "--profile", "ci", "--dataset", "wiki"], "dataset"),
    ],
)
def test_cli_errors_are_one_line_with_exit_status_2(argv, param, capsys, monkeypatch):
    monkeypatch.setattr("attnrank.core.train.train", lambda *a, **k: pytest.fail("trained"))
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"attnrank: error: {param}:") and "\n" not in err and "Traceback" not in err


def test_check_parameters_accepts_the_schema():
    ns = {"profile": "ci", "tau": 1, "seeds": None, "np": pytest}
    book.check_parameters(ns, ("profile", "tau", "seeds"))


def test_check_parameters_sets_the_chapters_torch_threads(monkeypatch):
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        monkeypatch.delenv("ATTNRANK_THREADS", raising=False)
        book.check_parameters({"profile": "ci"}, ("profile",))
        assert torch.get_num_threads() == 1  # the default of a run, whatever the machine's cores
        monkeypatch.setenv("ATTNRANK_THREADS", "2")
        book.check_parameters({"profile": "ci"}, ("profile",))
        assert torch.get_num_threads() == 2
        monkeypatch.setenv("ATTNRANK_THREADS", "two")
        with pytest.raises(ConfigError) as e:
            book.check_parameters({"profile": "ci"}, ("profile",))
        assert e.value.param == "ATTNRANK_THREADS"
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize(
    "ns, param",
    [
        ({"profile": "ci", "tau": "abc", "seeds": None}, "tau"),
        ({"profile": 3, "tau": 1.0, "seeds": None}, "profile"),
        ({"profile": "ci", "tau": True, "seeds": None}, "tau"),
        ({"profile": "ci", "tau": 1.0, "seeds": None, "taux": 1}, "taux"),
        ({"profile": "ci", "seeds": None}, "tau"),
    ],
)
def test_check_parameters_names_the_bad_parameter(ns, param):
    with pytest.raises(ConfigError) as e:
        book.check_parameters(ns, ("profile", "tau", "seeds"))
    assert e.value.param == param


VERDICT = dict(regime="a clause", finding="It holds here.", effect="1.0 [0.5, 1.5]", n="4 runs")


def test_verdict_must_be_one_of_three_and_is_a_record():
    v = book.verdict("x", "supported", "fine", **VERDICT)
    assert (v.name, v.status, v.summary, v.regime, v.n) == ("x", "supported", "fine", "a clause", "4 runs")
    with pytest.raises(ConfigError):
        book.verdict("x", "probably", "no", **VERDICT)
    with pytest.raises(ConfigError, match="regime"):
        book.verdict("x", "supported", "fine", **{**VERDICT, "regime": ""})


def test_verdict_glues_its_parts_and_every_measure_and_checks_names(monkeypatch):
    """A verdict glues its badge, line, effect, units, regime and summary, and its status under every rank
    measure as ``{name}_status__{measure}``."""
    from attnrank.core.rank import MEASURES

    glued = {}
    monkeypatch.setattr(book, "glue", lambda name, value, display=False: glued.__setitem__(name, value))
    book.verdict("x", "supported", "fine", by_measure={"effective_rank": "not supported"}, **VERDICT)
    assert glued["x_status__effective_rank"] == "not supported"
    assert {k for k in glued if "__" in k} == {f"x_status__{m}" for m in MEASURES}
    assert glued["x_status__rank_rtol_1e-2"] == "n/a"
    assert glued["x_units"] == "4 runs" and glued["x_regime"] == "a clause" and glued["x_finding"] == "It holds here."
    assert 'class="verdict-badge verdict-supported"' in glued["x_badge"]
    # another page (the intro's table) pastes the badge with {glue}, which takes its HTML
    assert glued["x_badge"]._repr_html_() == glued["x_badge"]._repr_markdown_() == str(glued["x_badge"])
    with pytest.raises(ConfigError) as e:
        book.verdict("x", "supported", "fine", by_measure={"rank_bogus": "supported"}, **VERDICT)
    assert e.value.param == "by_measure"
    with pytest.raises(ConfigError):
        book.verdict("x", "supported", "fine", by_measure={"effective_rank": "maybe"}, **VERDICT)


@pytest.mark.parametrize(
    "kw, text", [({"high": 1.0}, "(0, 1]"), ({"low": 2.0}, "[2, inf)"), ({"low": 2.0, "high": 3.0}, "[2, 3]")]
)
def test_range_errors_name_the_range(kw, text):
    from attnrank.core.errors import check_positive_float

    with pytest.raises(ConfigError) as e:
        check_positive_float("x", 1.5 if "low" in kw else 4.0, **kw)
    assert e.value.param == "x" and text in str(e.value)


def test_a_zero_seed_count_says_why_it_is_refused():
    """``-p seeds 0`` is a count of seeds, not seed 0: the message says a count must be at least 1, and does not
    offer the range of one seed as if 0 were allowed."""
    with pytest.raises(ConfigError) as e:
        book.check_parameters({"profile": "ci", "tau": 1.0, "seeds": 0}, ("profile", "tau", "seeds"))
    assert e.value.param == "seeds"
    assert "got 0; a single integer n means the seeds 0..n-1, so n must be at least 1" in str(e.value)
    assert "or give a non-empty list of values, each an integer in [0, 4294967295]" in str(e.value)
    ns = {"profile": "ci", "tau": 1.0, "seeds": 2}
    book.check_parameters(ns, ("profile", "tau", "seeds"))
    assert ns["seeds"] == [0, 1]


@pytest.mark.parametrize("value", [1e12, 1001, list(range(1001)), "[" + ", ".join(["1.0"] * 1001) + "]"])
def test_a_list_parameter_is_bounded_before_the_list_is_built(value):
    """``-p seeds 1e12`` once ended in a MemoryError: a count or a list past MAX_VALUES is refused in one line."""
    from attnrank.runs.parameters import MAX_VALUES

    name = "taus" if isinstance(value, str) else "seeds"
    with pytest.raises(ConfigError) as e:
        book.check_parameters({"profile": "ci", name: value}, ("profile", name))
    assert e.value.param == name and f"at most {MAX_VALUES}" in str(e.value) and MAX_VALUES == 1000


def test_attnrank_verdicts_writes_one_row_per_verdict_and_the_regime(tmp_path, monkeypatch, capsys):
    """`attnrank verdicts OUT --profile P` asks every chapter module for its section at P (dataset passed where the
    section takes one) and writes each verdict's status, effect, n and regime, then the regime the models reached."""
    import importlib

    import pandas as pd

    from attnrank.cli import main
    from attnrank.runs.experiments import VERDICT_RUNS, verdict_chapters
    from attnrank.sections import learned
    from attnrank.sections.section import Section, Verdict

    asked = []
    for chapter, names in verdict_chapters().items():
        module = importlib.import_module(f"attnrank.sections.{chapter}")

        def section(profile, dataset="absent", _chapter=chapter, _names=names):
            asked.append((_chapter, profile, dataset))
            return Section(
                _chapter,
                {},
                [],
                [],
                [Verdict(n, "supported", f"{n} finding", "0.5", "6 runs", "at initialisation", "s") for n in _names],
            )

        monkeypatch.setattr(module, "section", section)
    monkeypatch.setattr(learned, "section", lambda profile, dataset=None: Section("learned", {"learned_regime": "R"}))
    out = tmp_path / "v.csv"
    assert main(["verdicts", str(out), "--profile", "ci"]) == 0
    t = pd.read_csv(out, keep_default_na=False)
    assert list(t.verdict) == [*VERDICT_RUNS, "regime"]
    assert len(t) == 13 and t.verdict.iloc[2] == "seq_len"  # theory publishes two verdicts, in the registry's order
    assert set(t.status[:-1]) == {"supported"} and t.finding.iloc[-1] == "R"
    assert {p for _, p, _ in asked} == {"ci"} and "wrote" in capsys.readouterr().out
    # --chapters recomputes those chapters alone and replaces their rows, keeping the rest and the order
    monkeypatch.setattr(
        importlib.import_module("attnrank.sections.target"),
        "section",
        lambda profile, seed=0: Section(
            "target", {}, [], [], [Verdict("target", "not supported", f"seed {seed}", "0", "6 seeds", "toy", "s")]
        ),
    )
    asked.clear()
    assert main(["verdicts", str(out), "--profile", "ci", "--chapters", "target", "--toy-seed", "6"]) == 0
    again = pd.read_csv(out, keep_default_na=False)
    assert list(again.verdict) == list(t.verdict) and asked == []
    row = again.set_index("verdict").loc["target"]
    assert (row.status, row.finding) == ("not supported", "seed 6")
    assert (
        (again.drop(columns="rule")[again.verdict != "target"] == t.drop(columns="rule")[t.verdict != "target"])
        .all()
        .all()
    )
    assert main(["verdicts", str(out), "--chapters", "nope"]) == 2
    assert "chapters: got ['nope']; allowed values: measure" in capsys.readouterr().err


def test_attnrank_verdicts_from_a_build_reads_what_its_pages_published(tmp_path, capsys):
    """`attnrank verdicts OUT --from-build _build` reads the glue files myst-nb wrote: each verdict's parts, and the
    regime; a folder without glue files is named in one line."""
    import json

    import pandas as pd

    from attnrank.analysis.frozen import frozen_rules
    from attnrank.cli import main
    from attnrank.runs.experiments import design_digest

    def out(value):
        return {"data": {"text/plain": repr(value)}, "metadata": {}, "output_type": "display_data"}

    pages = tmp_path / "_build" / "jupyter_execute" / "chapters"
    pages.mkdir(parents=True)
    glued = {"loss_status": "not supported", "loss_units": "9 learned runs of 36", "loss_effect": "ρ −0.42"}
    glued |= {"loss_regime_brief": "GPT-2 learned", "loss_finding": "f", "loss_n_runs": 36}
    (pages / "loss.glue.json").write_text(json.dumps({k: out(v) for k, v in glued.items()}))
    (pages / "learned.glue.json").write_text(json.dumps({"learned_regime": out("both learned")}))
    target = tmp_path / "v.csv"
    # without the build's profile (the reproducibility chapter glues it) the runs' design cannot be stamped
    assert main(["verdicts", str(target), "--from-build", str(tmp_path / "_build")]) == 2
    assert "holds the build's profile" in capsys.readouterr().err
    (pages / "reproducibility.glue.json").write_text(json.dumps({"repro_profile": out("scale")}))
    assert main(["verdicts", str(target), "--from-build", str(tmp_path / "_build")]) == 0
    t = pd.read_csv(target, keep_default_na=False)
    assert t.to_dict("records") == [
        dict(
            verdict="loss",
            status="not supported",
            effect="ρ −0.42",
            n="9 learned runs of 36",
            regime="GPT-2 learned",
            finding="f",
            rule=str(frozen_rules().set_index("verdict").version["loss"]),  # the rule version it applied
            design=design_digest("loss", "scale"),  # the runs it read, at the build's profile
        ),
        dict(verdict="regime", status="", effect="", n="", regime="", finding="both learned", rule="", design=""),
    ]
    capsys.readouterr()
    assert main(["verdicts", str(target), "--from-build", str(tmp_path / "nothing")]) == 2
    assert "folder: no glue files under" in capsys.readouterr().err
