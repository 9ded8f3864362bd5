"""Importing the library inside a Jupyter kernel puts no tqdm "IProgress not found" warning on a page."""

import importlib.util
import subprocess
import sys

import pytest

CODE = """
import warnings
import ipykernel.zmqshell            # what tqdm.autonotebook takes as "running in a kernel"
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import attnrank
    from attnrank.runs import store       # the run store's progress bar
    import tqdm.auto                 # and transformers' Trainer, which imports the same module
print([str(w.message)[:40] for w in caught if "IProgress" in str(w.message)])
"""


@pytest.mark.skipif(importlib.util.find_spec("ipywidgets") is not None, reason="with ipywidgets tqdm does not warn")
def test_no_iprogress_warning_in_a_kernel():
    """In a (simulated) kernel without ipywidgets, importing attnrank and then tqdm.auto raises no TqdmWarning."""
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
