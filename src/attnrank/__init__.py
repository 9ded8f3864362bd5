"""attnrank: the rank of attention matrices in BERT and GPT-2 trained from scratch."""

from . import attention  # registers the tempered attention with transformers
from .errors import ConfigError, DatasetUnavailable, RunFailed

__version__ = "0.1.0"
__all__ = ["ConfigError", "DatasetUnavailable", "RunFailed", "attention"]
