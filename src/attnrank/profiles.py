"""Named compute profiles and the fully resolved run configuration.

A profile is a set of defaults; a run is a profile plus plain overrides (nanoGPT style):
``resolve_config("gpt2", profile="quick", tau=0.3)``.

* ``ci``: a whole run in seconds, for tests and the CI build of the book;
* ``quick``: the CPU default, a run in well under a minute on two cores;
* ``paper``: for a GPU, sizes close to BERT-small / GPT-2-small.

``profile="auto"`` picks ``paper`` on CUDA and ``quick`` otherwise; the environment
variable ``ATTNRANK_PROFILE`` overrides ``auto``.

Every run trains on a fixed number of torch threads, ``threads`` (1 and 2 threads give
different bits, so the thread count is part of the run's key). Its default is 1 in every
profile: on a busy 2-core machine a ``ci`` run took 1-3 s on one thread and 10-50 s on
two, and a pool of single-thread runs fills the cores (``attnrank sweep``). The
environment variable ``ATTNRANK_THREADS`` changes the default for every run.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from .errors import ConfigError, check_choice, check_positive_float, check_positive_int

__all__ = ["PROFILES", "RunConfig", "resolve_profile", "resolve_config", "profile_defaults"]

#: Profile names accepted everywhere (``auto`` resolves to one of the others).
PROFILES = ("ci", "quick", "paper")


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines a training run (its hash keys the run store)."""

    arch: str
    profile: str
    tau: float = 1.0
    hidden_size: int = 128
    num_layers: int = 2
    num_heads: int = 4
    max_len: int = 64
    vocab_size: int = 2048
    dropout: float = 0.1
    seed: int = 0
    dataset: str = "shakespeare"
    batch_size: int = 16
    max_steps: int = 200
    learning_rate: float = 1e-3
    warmup_steps: int = 20
    weight_decay: float = 0.01
    rank_every: int = 50
    probe_size: int = 64
    val_blocks: int = 64
    log_every: int = 10
    mlm_probability: float = 0.15
    #: torch threads (intra-op) of the run; set by training and restored after it
    threads: int = 1

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def objective(self) -> str:
        return "MLM" if self.arch == "bert" else "CLM"

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


_PROFILE_DEFAULTS: dict[str, dict] = {
    "ci": dict(hidden_size=32, num_layers=2, num_heads=2, max_len=32, vocab_size=512, batch_size=8,
               max_steps=40, learning_rate=2e-3, warmup_steps=4, rank_every=10, probe_size=16,
               val_blocks=16, log_every=5, dropout=0.0),
    # quick: less than one pass over the corpus, so no dropout (as in nanoGPT's pre-training
    # default); dropout's Bernoulli masks would also cost a fifth of a CPU step at this width
    "quick": dict(hidden_size=128, num_layers=2, num_heads=4, max_len=64, vocab_size=2048, batch_size=16,
                  max_steps=400, learning_rate=1e-3, warmup_steps=40, rank_every=100, probe_size=64,
                  val_blocks=64, log_every=10, dropout=0.0),
    "paper": dict(hidden_size=512, num_layers=4, num_heads=8, max_len=128, vocab_size=16384, batch_size=64,
                  max_steps=5000, learning_rate=5e-4, warmup_steps=250, rank_every=250, probe_size=128,
                  val_blocks=256, log_every=50, dropout=0.1),
}


def resolve_profile(profile: str = "auto") -> str:
    """Return a concrete profile name for ``profile`` (``auto``, ``ci``, ``quick`` or ``paper``).

    ``auto`` reads ``ATTNRANK_PROFILE`` if set, else picks ``paper`` on CUDA and ``quick``
    otherwise. Raises :class:`ConfigError` naming ``profile`` for anything else.
    """
    check_choice("profile", profile, ("auto",) + PROFILES)
    if profile != "auto":
        return profile
    env = os.environ.get("ATTNRANK_PROFILE")
    if env:
        check_choice("ATTNRANK_PROFILE", env, PROFILES)
        return env
    import torch

    return "paper" if torch.cuda.is_available() else "quick"


def profile_defaults(profile: str = "auto") -> dict:
    """The defaults a profile sets (a copy)."""
    return dict(_PROFILE_DEFAULTS[resolve_profile(profile)])


def _default_threads() -> int:
    """``ATTNRANK_THREADS`` if set (validated), else 1."""
    env = os.environ.get("ATTNRANK_THREADS")
    if not env:
        return 1
    if not env.isdigit() or int(env) < 1:
        raise ConfigError("ATTNRANK_THREADS", f"got {env!r}; expected an integer >= 1")
    return int(env)


def resolve_config(arch: str, profile: str = "auto", *, head_dim: int | None = None, **overrides) -> RunConfig:
    """Resolve ``profile`` defaults plus ``overrides`` into a validated :class:`RunConfig`.

    ``head_dim`` may be given instead of ``num_heads`` (it must divide ``hidden_size``).

    Raises:
        ConfigError: naming the parameter, for an unknown arch, profile or field, or an
        invalid value (``tau`` outside [1e-3, 1e3], heads not dividing ``hidden_size``, ...).
    """
    from .data import check_dataset
    from .models import ARCHS, check_tau, resolve_heads

    check_choice("arch", arch, ARCHS)
    profile = resolve_profile(profile)
    fields = {f.name for f in dataclasses.fields(RunConfig)} - {"arch", "profile"}
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise ConfigError(unknown[0], f"unknown parameter; allowed parameters: {', '.join(sorted(fields | {'head_dim'}))}")
    values = {**_PROFILE_DEFAULTS[profile], **{k: v for k, v in overrides.items() if v is not None}}
    values["tau"] = check_tau(values.get("tau", 1.0))
    values["num_heads"], _ = resolve_heads(
        values["hidden_size"], overrides.get("num_heads") if head_dim else values.get("num_heads"), head_dim
    )
    for name in ("hidden_size", "num_layers", "vocab_size", "batch_size", "max_steps", "rank_every",
                 "probe_size", "val_blocks", "log_every"):
        values[name] = check_positive_int(name, values[name])
    values["max_len"] = check_positive_int("max_len", values["max_len"], low=8)
    values["seed"] = check_positive_int("seed", values.get("seed", 0), low=0)
    values["warmup_steps"] = check_positive_int("warmup_steps", values["warmup_steps"], low=0)
    values["threads"] = check_positive_int("threads", values["threads"] if "threads" in values else _default_threads())
    values["learning_rate"] = check_positive_float("learning_rate", values["learning_rate"])
    if not 0.0 <= float(values.get("dropout", 0.1)) < 1.0:
        raise ConfigError("dropout", f"got {values['dropout']!r}; allowed range is [0, 1)")
    if not 0.0 < float(values.get("mlm_probability", 0.15)) < 1.0:
        raise ConfigError("mlm_probability", f"got {values['mlm_probability']!r}; allowed range is (0, 1)")
    values["dataset"] = check_dataset(values.get("dataset", "shakespeare"))
    return RunConfig(arch=arch, profile=profile, **values)
