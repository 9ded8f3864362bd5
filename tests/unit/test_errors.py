"""Every exception class of the library crosses a process boundary as itself (pickle round trip),
found by walking the package, so that a new class is covered without a list to edit."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil

import pytest

import attnrank
from attnrank.core.errors import ConfigError, WorkerError, portable


def _exception_classes() -> list[type]:
    found = {}
    for info in pkgutil.walk_packages(attnrank.__path__, "attnrank."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__.startswith("attnrank"):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return [found[k] for k in sorted(found)]


CLASSES = _exception_classes()


def _instance(cls: type) -> BaseException:
    """An instance with a distinct text for every required positional parameter."""
    params = [
        p
        for p in inspect.signature(cls.__init__).parameters.values()
        if p.name != "self" and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    return cls(*[f"{p.name} value {i}" for i, p in enumerate(params)] or ["a message"])


def test_the_walk_finds_the_library_errors():
    names = {c.__qualname__ for c in CLASSES}
    assert {"ConfigError", "DatasetUnavailable", "RunFailed", "CodeMismatch", "WorkerError", "SweepFailed"} <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_every_exception_class_round_trips_through_pickle(cls):
    exc = _instance(cls)
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is cls
    assert str(back) == str(exc) and back.args == exc.args
    assert vars(back) == vars(exc)
    assert portable(exc) is exc


def test_config_error_keeps_its_parameter_and_message():
    back = pickle.loads(pickle.dumps(ConfigError("dataset", "'hf:/x' could not be loaded")))
    assert (back.param, back.message, str(back)) == (
        "dataset",
        "'hf:/x' could not be loaded",
        "dataset: 'hf:/x' could not be loaded",
    )


class _TwoArguments(Exception):
    def __init__(self, a, b):
        super().__init__(f"{a} and {b}")


def test_an_exception_that_cannot_be_unpickled_becomes_a_named_worker_error():
    with pytest.raises(TypeError):
        pickle.loads(pickle.dumps(_TwoArguments(1, 2)))
    try:
        raise _TwoArguments(1, 2)
    except _TwoArguments as exc:
        out = portable(exc)
    assert isinstance(out, WorkerError)
    assert str(out).endswith("._TwoArguments: 1 and 2") and out.kind.endswith("._TwoArguments")
    assert "Traceback" in out.traceback and "_TwoArguments" in out.traceback
    back = pickle.loads(pickle.dumps(out))
    assert (type(back), str(back), back.traceback) == (WorkerError, str(out), out.traceback)


def test_import_attnrank_loads_no_torch():
    """`import attnrank` (the errors a caller catches) loads neither torch nor transformers; importing
    `attnrank.core.attention` loads torch and registers the tempered attention."""
    import subprocess
    import sys

    code = (
        "import sys, attnrank; assert 'torch' not in sys.modules and 'transformers' not in sys.modules; "
        "import attnrank.core.attention as a, transformers; assert a.ATTN_IMPLEMENTATION in "
        "transformers.AttentionInterface._global_mapping; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_the_wording_modules_load_no_torch():
    """The book's words, records and figure style (glossary, section, verdicts, typeset, book, plots.style) and the
    rank measures by name (measures) import in a fresh interpreter without torch or transformers: a page that only
    words a result never pays for them."""
    import subprocess
    import sys

    modules = [
        "words.glossary",
        "sections.section",
        "analysis.verdicts",
        "words.typeset",
        "book",
        "plots.style",
        "core.measures",
    ]
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module('attnrank.' + m)\n"
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr[-2000:]
