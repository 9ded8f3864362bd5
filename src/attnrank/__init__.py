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

from .core.errors import ConfigError, DatasetUnavailable, RunFailed

__version__ = "0.1.0"
__all__ = ["ConfigError", "DatasetUnavailable", "RunFailed"]
