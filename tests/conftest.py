"""Shared fixtures, and the tier of every test: the folder it lives in (``unit``, ``integration``, ``book``)."""

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch

TIERS = ("unit", "integration", "book")


def pytest_collection_modifyitems(config, items):
    """Mark each test with its tier, the name of its folder under ``tests/``."""
    for item in items:
        tier = item.path.parent.name
        if tier not in TIERS:
            raise pytest.UsageError(f"{item.nodeid}: a test lives in one of tests/{{{','.join(TIERS)}}}/")
        item.add_marker(getattr(pytest.mark, tier))


@pytest.fixture(autouse=True)
def _environment_restored():
    """Every test leaves the process environment as it found it: the command line sets ATTNRANK_DATASET
    for the chapters it runs (and the path settings, made absolute), which must not reach the next test."""
    import os

    saved = dict(os.environ)
    yield
    if dict(os.environ) != saved:
        os.environ.clear()
        os.environ.update(saved)


#: Tests that start or look for a Ray instance (their names say "ray").
_RAY_TEST = re.compile(r"(^|[_\[-])ray([_\]-]|$)")


@pytest.fixture(autouse=True)
def _one_ray_test_at_a_time(request, monkeypatch):
    """Ray tests (their names say "ray") run one at a time across pytest-xdist workers, under a file lock:
    address "auto" finds any Ray instance running on the machine (it looks for its processes), so a test
    that expects no cluster would find another worker's. Each also gets a temporary folder of its own
    (``RAY_TMPDIR``, inherited by child processes; short, since Ray's socket paths live in it)."""
    if not _RAY_TEST.search(request.node.name):
        yield
        return
    import shutil
    import tempfile

    from filelock import FileLock

    with FileLock(str(Path(tempfile.gettempdir()) / "attnrank-ray-tests.lock")):
        folder = tempfile.mkdtemp(prefix="ray-")
        monkeypatch.setenv("RAY_TMPDIR", folder)
        try:
            yield
        finally:
            import sys

            ray = sys.modules.get("ray")
            if ray is not None and ray.is_initialized():  # a test's local instance ends with it
                ray.shutdown()
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def one_thread():
    """Run a test on one torch thread: small tensors gain nothing from more, and spin-wait."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture
def corpus(tmp_path) -> Path:
    """A local dataset folder: three plays to train on, a fourth to validate on."""
    from attnrank.core.data import shakespeare_plays

    plays = shakespeare_plays()
    names = sorted(plays)
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "train.txt").write_text("\n".join(plays[n] for n in names[:3]))
    (folder / "validation.txt").write_text(plays[names[3]])
    return folder


@pytest.fixture
def private_store(tmp_path, monkeypatch) -> Path:
    """A private, empty run store (``ATTNRANK_RUNS``); tokenizers and token caches stay where they are."""
    monkeypatch.setenv("ATTNRANK_RUNS", str(tmp_path / "runs"))
    return tmp_path / "runs"


def fake_train(final_val_loss: float = 3.0, sequences: pd.DataFrame | None = None):
    """A stand-in for :func:`attnrank.core.train.train` whose result is recognisable by its final loss.

    ``sequences`` is the per-sequence probe table of the result (empty when None). Patch it in with
    ``monkeypatch.setattr("attnrank.core.train.train", fake_train(2.0))``; a child process imports it from
    this file (``sys.path`` holding ``tests/``).
    """
    from attnrank.core.train import TrainResult

    def train(cfg, progress=False):
        log = pd.DataFrame({"step": [0, cfg.max_steps], "loss": [7.0, final_val_loss]})
        summary = {
            "status": "complete",
            "failure": None,
            "steps": cfg.max_steps,
            "initial_val_loss": 7.0,
            "final_val_loss": final_val_loss,
            "initial_rank": {"rank_rtol_1e-2": 9.0, "effective_rank": 9.0},
            "final_rank": {"rank_rtol_1e-2": 4.0, "effective_rank": 4.0},
            "wall_seconds": 0.5,
            "probe_seconds": 0.1,
            "validation_seconds": 0.1,
            "device": "cpu",
        }
        return TrainResult(
            train_log=log,
            eval_log=log,
            ranks=log,
            rank_summary=log,
            summary=summary,
            model=None,
            sequences=pd.DataFrame() if sequences is None else sequences,
        )

    return train


@pytest.fixture
def staged_notebooks(tmp_path):
    """Write one-cell notebooks (name -> code) in ``tmp_path`` and stage them in a jupyter-cache at
    ``tmp_path/cache``, as the book build does before executing them up front; returns their paths."""
    import nbformat
    from jupyter_cache import get_cache

    def stage(**codes: str) -> list[str]:
        cache = get_cache(str(tmp_path / "cache"))
        paths = []
        for name, code in codes.items():
            nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
            nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
            nbformat.write(nb, tmp_path / f"{name}.ipynb")
            cache.add_nb_to_project(str(tmp_path / f"{name}.ipynb"))
            paths.append(str(tmp_path / f"{name}.ipynb"))
        return paths

    return stage


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    """Headless Chromium driven by Selenium, with its console and network logs (the book tier's browser tests:
    Debian's ``chromium`` and ``chromium-driver``)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
        "--window-size=1280,1000",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()
