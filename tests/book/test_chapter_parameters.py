"""One schema for every chapter parameter (attnrank.book.PARAMETERS), checked before any work."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import math
from pathlib import Path

import numpy as np
import pytest

from attnrank import book
from attnrank.core.errors import ConfigError

CHAPTERS = Path(__file__).resolve().parents[2] / "chapters"
NOTEBOOKS = sorted(CHAPTERS.glob("*.ipynb"))


def _cells(path):
    return json.loads(path.read_text())["cells"]


def _declared(path) -> dict:
    """Names and default values of the notebook's ``parameters`` cell."""
    cell = next(c for c in _cells(path) if "parameters" in c.get("metadata", {}).get("tags", []))
    values = {}
    for node in ast.parse("".join(cell["source"])).body:
        if isinstance(node, ast.Assign):
            values[node.targets[0].id] = ast.literal_eval(node.value)
        elif isinstance(node, ast.AnnAssign):  # ``tau: float = 0.25  # help``, as papermill reads a type and help
            values[node.target.id] = ast.literal_eval(node.value)
    return values


def _checked(path) -> tuple[str, ...]:
    """The names ``book.check_parameters`` checks for the chapter (a literal, or those of its section's signature)."""
    imported = {}  # the chapter's name of a module -> the module's full name
    for cell in _cells(path):
        if cell["cell_type"] != "code":
            continue
        for node in ast.walk(ast.parse("".join(cell["source"]))):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported |= {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names}
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "check_parameters"
            ):
                names = node.args[1]
                if isinstance(names, ast.Attribute):  # <chapter module>.section
                    function = getattr(importlib.import_module(imported[ast.unparse(names.value)]), names.attr)
                    return tuple(n for n in inspect.signature(function).parameters if n in book.PARAMETERS)
                return tuple(ast.literal_eval(names))
    raise AssertionError(f"{path.name} does not call book.check_parameters")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_chapter_checks_all_its_parameters_with_the_shared_schema(path):
    """Each chapter passes every name of its parameters cell to ``check_parameters``, the
    shared schema defines it, and the defaults pass."""
    declared = _declared(path)
    assert set(_checked(path)) == set(declared)
    assert set(declared) <= set(book.PARAMETERS)
    book.check_parameters(dict(declared), tuple(declared))


@pytest.mark.parametrize(
    "name, value, expected",
    [
        ("head_dims", 16, [16]),  # one value where a list is expected
        ("head_dims", 16.0, [16]),
        ("taus", 0.3, [0.3]),
        ("taus", [1, 0.25], [1.0, 0.25]),
        ("taus", np.float32(0.5), [0.5]),  # NumPy numbers are numbers
        ("seeds", 3, [0, 1, 2]),  # a single integer is a count of seeds
        ("seeds", [4, 7], [4, 7]),
        ("mc_samples", 1e3, 1000),  # an integer-valued float for an int
        ("mc_samples", np.int64(300), 300),
        ("mc_samples", None, None),
        ("tau", 1, 1.0),
        ("profile", "ci", "ci"),
        ("tau_grid_extreme", 10, [10.0]),
    ],
)
def test_schema_normalises_accepted_values(name, value, expected):
    """Guarantee (docs/guarantees.md): "Bad input fails first." (what the one schema accepts, and as what)"""
    got = book.PARAMETERS[name].check(name, value)
    assert got == expected and type(got) is type(expected)
    if isinstance(got, list):
        assert [type(v) for v in got] == [type(v) for v in expected]


@pytest.mark.parametrize(
    "name, value, words",
    [
        ("taus", [], "empty list"),
        ("head_dims", [], "empty list"),
        ("tau_grid_extreme", [], "empty list"),
        ("seeds", [], "empty list"),
        ("seeds", 0, "0..n-1"),
        ("mc_samples", 1.5, "integer"),
        ("mc_samples", 1, "[2, 1000000]"),
        ("mc_samples", "1000", "integer"),
        ("taus", [0.5, "x"], "number"),
        ("taus", [0.5, math.nan], "[0.001, 1000]"),
        ("tau", math.inf, "[0.001, 1000]"),
        ("tau", 0.0, "[0.001, 1000]"),
        ("tau", True, "number"),
        ("head_dims", [16, 0], "[1, 4096]"),
        ("profile", "huge", "'ci'"),
        ("profile", None, "one of"),
        ("stable_tolerance", 0.0, "(0, 1]"),
        ("level_quantile", 0.99, "[0.05, 0.95]"),
    ],
)
def test_schema_rejects_with_an_error_naming_the_parameter(name, value, words):
    """Guarantee (docs/guarantees.md): "Bad input fails first." (chapter parameters outside the schema)"""
    with pytest.raises(ConfigError) as e:
        book.check_parameters({name: value}, (name,))
    assert e.value.param == name
    assert words in str(e.value)


def test_check_parameters_writes_back_normalised_values_and_rejects_unknown_names():
    ns = {"profile": "ci", "head_dims": 16, "np": np}
    assert book.check_parameters(ns, ("profile", "head_dims")) == {"profile": "ci", "head_dims": [16]}
    assert ns["head_dims"] == [16]
    with pytest.raises(ConfigError) as e:
        book.check_parameters({"profile": "ci", "head_dim": 16}, ("profile",))
    assert e.value.param == "head_dim" and "profile" in str(e.value)


@pytest.mark.parametrize(
    "chapter, parameters, param",
    [
        ("dynamics", {"taus": []}, "taus"),
        ("temp", {"taus": []}, "taus"),
        ("target", {"head_dims": []}, "head_dims"),
    ],
)
def test_papermill_bad_parameter_is_a_config_error_naming_it(chapter, parameters, param, tmp_path, monkeypatch):
    """``papermill -y`` with an empty list stops in the chapter's first cells with a ConfigError
    naming the parameter (no training: the check runs before any).

    Guarantee (docs/guarantees.md): "Bad input fails first." (chapter parameters, one schema)
    """
    papermill = pytest.importorskip("papermill")
    monkeypatch.setenv("ATTNRANK_DATA", str(tmp_path / "data"))  # nothing may be trained or stored
    with pytest.raises(papermill.PapermillExecutionError) as e:
        papermill.execute_notebook(
            str(CHAPTERS / f"{chapter}.ipynb"),
            str(tmp_path / "out.ipynb"),
            parameters={"profile": "ci", **parameters},
            cwd=str(CHAPTERS),
            kernel_name="python3",
            progress_bar=False,
        )
    assert e.value.ename == "ConfigError"
    assert e.value.evalue.startswith(f"{param}: got an empty list")
    assert not (tmp_path / "data" / "runs").exists()


@pytest.mark.parametrize("text", ["1, 2, 4, 8", "0.01, 0.1, 10", "1e3", "supported", "0.5", "(a, b)", "n/a", "3"])
def test_glued_text_pastes_as_written(text):
    """A glued string is pasted by ``{glue:text}`` exactly as written (myst-nb reads the plain text
    back with ``literal_eval``, which turned "1, 2, 4" into "(1, 2, 4)")."""
    from myst_nb.core.variables import format_plain_text

    plain = repr(book.Text(text))
    assert format_plain_text(plain, "") == text
    assert format_plain_text(plain, "s") == text
