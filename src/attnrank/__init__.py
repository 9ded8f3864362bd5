"""attnrank: the rank of attention matrices in BERT and GPT-2 trained from scratch."""

import warnings as _warnings

# ``tqdm.auto`` (imported by the run store and by transformers' Trainer) warns "IProgress not
# found" once per kernel when ipywidgets is missing, even with every progress bar disabled, and
# the warning lands on the rendered page. The book shows no progress bars (chapters pass
# ``progress=False``; the command line uses a terminal), so widgets are not needed: import it
# once here with that one warning silenced; later imports reuse the module and do not warn.
with _warnings.catch_warnings():
    _warnings.filterwarnings("ignore", message="IProgress not found")
    import tqdm.auto as _tqdm_auto  # noqa: F401

from .errors import ConfigError, DatasetUnavailable, RunFailed

__version__ = "0.1.0"
__all__ = ["ConfigError", "DatasetUnavailable", "RunFailed", "attention"]


def __getattr__(name: str):
    """``attnrank.attention`` (which imports torch and registers the tempered attention with transformers) is
    loaded when first asked for, so ``import attnrank`` and the modules that only word results load no torch;
    every module that builds a model imports it itself (:mod:`attnrank.models`)."""
    if name == "attention":
        import importlib

        return importlib.import_module(f"{__name__}.attention")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
