"""Named compute profiles and the fully resolved, validated run configuration.

A profile is a set of values for every field of a run; a run is a profile plus plain
overrides (nanoGPT style): ``resolve_config("gpt2", profile="quick", tau=0.3)``.

* ``ci``: a whole run in seconds, for tests and the CI build of the book;
* ``quick``: the CPU default, a run of about a minute on one core, whose GPT-2 ends below a bigram
  count model (the recipe study, :mod:`attnrank.sections.recipe`);
* ``paper``: for a GPU, sizes close to BERT-small / GPT-2-small;
* ``scale``: the scale check of ``quick``: its sizes and grid trained :data:`SCALE_FACTOR` times as many
  steps, and the causal chapter's runs at ``quick`` sizes, where the models learn (a background build of
  about an hour and a half on two cores; opt-in with ``ATTNRANK_PROFILE=scale``, never the default).

``profile="auto"`` picks ``paper`` on CUDA and ``quick`` otherwise; the environment
variable ``ATTNRANK_PROFILE`` overrides ``auto``. Every profile trains on the offline
default corpus unless ``ATTNRANK_DATASET`` names another (``shakespeare`` or
``hf:NAME[:CONFIG]``, a hub dataset or a local folder); the dataset is a config field, so
it is in every run's key.

Every field of a :class:`RunConfig` is checked in one place, :data:`FIELD_CHECKS`, when
the config is built (by :func:`resolve_config` or directly), before any work: its type
(NumPy numbers become plain Python numbers, so they give the same run key), its range
(upper bounds included) and the constraints between fields (heads dividing the width,
the memory a run needs), the dataset's name included (:func:`check_dataset`). This
module imports nothing from the library but :mod:`attnrank.core.errors` and the architectures' records, so that the data and
model modules can use its checks.

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
from pathlib import Path

from .architectures import ARCHITECTURES
from .errors import ConfigError, check_choice, check_int, check_real

__all__ = [
    "SCALE_FACTOR",
    "OFFLINE_CORPORA",
    "OFFLINE_DEFAULT",
    "check_dataset",
    "dataset_spec",
    "PROFILES",
    "ARCHS",
    "ALL_ARCHS",
    "ARCH_ORDER",
    "MLM_ARCH",
    "CLM_ARCH",
    "STUDY_ARCH",
    "TAU_RANGE",
    "QK_SCALE_RANGE",
    "SEED_RANGE",
    "INT_MAX",
    "LR_SCHEDULES",
    "FIELD_CHECKS",
    "RunConfig",
    "check_tau",
    "resolve_heads",
    "memory_estimate",
    "resolve_profile",
    "resolve_config",
    "profile_defaults",
    "ARCH_DEFAULTS",
    "default_threads",
    "default_dataset",
    "base_profile",
]

#: Profile names accepted everywhere (``auto`` resolves to one of the others).
PROFILES = ("ci", "quick", "paper", "scale")
#: Profiles with the model sizes of another one (``scale`` is ``quick`` trained longer).
SIZES_OF = {"scale": "quick"}
#: How many times ``quick``'s steps the ``scale`` profile trains (with its warm-up, probe and logging intervals).
SCALE_FACTOR = 3
#: The book's two models: ModernBERT trained as a masked LM (rotary positions, pre-LayerNorm; the
#: study's BERT does not leave its context-free plateau at CPU scale, so it is not the book's masked LM
#: since 2026-12-04) and GPT-2 as a causal LM.
ARCHS = ("modernbert", "gpt2")
#: The book's masked LM and its causal LM (of :data:`ARCHS`): what a page says of one of them names it so.
MLM_ARCH, CLM_ARCH = ARCHS
#: The study's BERT, which the chapter "Have the models learned?" trains beside the book's masked LM.
STUDY_ARCH = "bert"
#: Every architecture a run can have (:data:`attnrank.core.architectures.ARCHITECTURES`): the book's two and the
#: study's BERT (post-LN, learned absolute positions), which the chapter "Have the models learned?" trains beside
#: ModernBERT.
ALL_ARCHS = tuple(ARCHITECTURES)
#: The order in which every table, figure and sentence names the architectures: GPT-2, ModernBERT, the study's BERT.
ARCH_ORDER = ("gpt2", "modernbert", "bert")
#: Allowed range of the temperature ratio ``tau`` (inclusive).
TAU_RANGE = (1e-3, 1e3)
#: Allowed range of ``seed`` (inclusive): NumPy's and the Trainer's seeds are unsigned 32-bit.
SEED_RANGE = (0, 2**32 - 1)
#: Allowed range (inclusive) of the query/key scales ``qk_init_scale`` and ``qk_lr_scale``: the
#: twin of a run at ``tau`` uses ``1 / sqrt(tau)``, within it for every ``tau`` in :data:`TAU_RANGE`.
QK_SCALE_RANGE = (1e-3, 1e3)
#: Learning-rate schedules after the linear warm-up (the ``transformers`` scheduler names):
#: ``linear`` decays to zero at the last step, ``cosine`` follows half a cosine to zero.
LR_SCHEDULES = ("linear", "cosine")
#: Upper bound of every count (sizes, steps): a signed 32-bit integer, as token ids and
#: step counters are stored.
INT_MAX = 2**31 - 1


def check_tau(tau) -> float:
    """Validate ``tau``: a finite number in :data:`TAU_RANGE`, returned as a plain float.

    Raises:
        ConfigError: naming ``tau``.
    """
    return check_real("tau", tau, low=TAU_RANGE[0], high=TAU_RANGE[1])


def resolve_heads(hidden_size: int, num_heads: int | None = None, head_dim: int | None = None) -> tuple[int, int]:
    """Return ``(num_heads, head_dim)`` with ``num_heads * head_dim == hidden_size``.

    Exactly one of ``num_heads`` and ``head_dim`` is needed; if both are given they must agree.

    Raises:
        ConfigError: naming ``num_heads`` or ``head_dim`` when it does not divide ``hidden_size``.
    """
    hidden_size = check_int("hidden_size", hidden_size, low=1, high=INT_MAX)
    if num_heads is None and head_dim is None:
        raise ConfigError("num_heads", "give num_heads or head_dim (head_dim = hidden_size / num_heads)")

    def divisors() -> list[int]:
        return [d for d in range(1, hidden_size + 1) if hidden_size % d == 0]

    if head_dim is not None:
        head_dim = check_int("head_dim", head_dim, low=1, high=INT_MAX)
        if hidden_size % head_dim:
            raise ConfigError(
                "head_dim",
                f"got {head_dim}, which does not divide hidden_size={hidden_size}; allowed values: {divisors()}",
            )
        if num_heads is not None and num_heads * head_dim != hidden_size:
            raise ConfigError(
                "head_dim", f"head_dim={head_dim} and num_heads={num_heads} disagree with hidden_size={hidden_size}"
            )
        return hidden_size // head_dim, head_dim
    num_heads = check_int("num_heads", num_heads, low=1, high=INT_MAX)
    if hidden_size % num_heads:
        raise ConfigError(
            "num_heads",
            f"got {num_heads}, which does not divide hidden_size={hidden_size}; allowed values: {divisors()}",
        )
    return num_heads, hidden_size // num_heads


def _choice(allowed):
    def check(name, value):
        check_choice(name, value, allowed)
        return value

    return check


def _int(low: int, high: int = INT_MAX):
    return lambda name, value: check_int(name, value, low=low, high=high)


def _real(low=None, high=None, **open_ends):
    return lambda name, value: check_real(name, value, low=low, high=high, **open_ends)


#: Name of the corpus that needs no network.
OFFLINE_DEFAULT = "shakespeare"
#: The offline corpora: the default (verse) and a second of a different kind, the Python
#: standard library's source code of the interpreter in use (``data.stdlib_modules``).
OFFLINE_CORPORA = (OFFLINE_DEFAULT, "stdlib")


def dataset_spec(dataset: str) -> tuple[str, str | None, bool]:
    """``(name, config, is_local_folder)`` of an ``hf:`` dataset; local names are resolved absolute paths."""
    spec = dataset[3:]
    if os.path.isdir(os.path.expanduser(spec)):
        return str(Path(spec).expanduser().resolve()), None, True
    name, _, config = spec.partition(":")
    if os.path.isdir(os.path.expanduser(name)):
        return str(Path(name).expanduser().resolve()), config or None, True
    if os.path.isabs(name) or name.startswith(("./", "../", "~")) or name in (".", ".."):
        raise ConfigError("dataset", f"got {dataset!r}: the folder {name!r} does not exist")
    return name, config or None, False


def check_dataset(dataset) -> str:
    """Validate a dataset name: one of :data:`OFFLINE_CORPORA` or ``"hf:NAME[:CONFIG]"``; return it normalised.

    A local folder (``hf:PATH``) is returned as ``hf:`` and its resolved absolute path, so
    that one folder reached through different relative paths or working directories is
    one dataset, and one relative path meaning different folders is not.

    Raises:
        ConfigError: naming ``dataset``, for any other value or a path to no folder.
    """
    if not isinstance(dataset, str) or not (
        dataset in OFFLINE_CORPORA or (dataset.startswith("hf:") and len(dataset) > 3)
    ):
        allowed = ", ".join(map(repr, OFFLINE_CORPORA))
        raise ConfigError("dataset", f"got {dataset!r}; allowed values: {allowed} or 'hf:NAME[:CONFIG]'")
    if dataset in OFFLINE_CORPORA:
        return dataset
    name, config, local = dataset_spec(dataset)
    if local:
        return f"hf:{name}" + (f":{config}" if config else "")
    return dataset


def _dataset(name, value):
    return check_dataset(value)


#: The check of every :class:`RunConfig` field: ``name -> check(name, value) -> value``.
#: A check returns the value in its canonical type or raises :class:`ConfigError` naming
#: the field and the allowed values.
FIELD_CHECKS = {
    "arch": _choice(ALL_ARCHS),
    "profile": _choice(PROFILES),
    "tau": lambda name, value: check_tau(value),
    "hidden_size": _int(1),
    "num_layers": _int(1),
    "num_heads": _int(1),
    "max_len": _int(8),  # and the memory bound of memory_estimate
    "vocab_size": _int(2),
    "dropout": _real(0.0, 1.0, high_open=True),
    "seed": _int(*SEED_RANGE),
    "dataset": _dataset,
    "batch_size": _int(1),
    "max_steps": _int(1),
    "learning_rate": _real(0.0, low_open=True),
    "warmup_steps": _int(0),
    "weight_decay": _real(0.0),
    "rank_every": _int(1),
    "probe_size": _int(1),
    "val_blocks": _int(1),
    "log_every": _int(1),
    "mlm_probability": _real(0.0, 1.0, low_open=True, high_open=True),
    "threads": _int(1, 1024),
    "qk_init_scale": _real(*QK_SCALE_RANGE),
    "qk_lr_scale": _real(*QK_SCALE_RANGE),
    "qk_decay_scale": _real(0.0, QK_SCALE_RANGE[1]),
    "adam_epsilon": _real(0.0, 1e-2, low_open=True),
    "adam_beta2": _real(0.0, 1.0, low_open=True, high_open=True),
    "lr_schedule": _choice(LR_SCHEDULES),
    "max_grad_norm": _real(0.0, 1e6),
}


def memory_estimate(
    hidden_size: int, num_layers: int, num_heads: int, max_len: int, vocab_size: int, batch_size: int, probe_size: int
) -> dict[str, int]:
    """Bytes a run holds at its peak, by part, from its sizes (an estimate for input checks).

    * ``attention``: the terms in ``max_len**2``, the only ones that grow with its
      square. The rank probe keeps the attention matrices of ``probe_size`` sequences,
      ``num_layers x num_heads`` of them per sequence, in float32 and again in float64 for
      the SVD (12 bytes per entry; measured 10); a training step holds a ``max_len x
      max_len`` mask per sequence (4 bytes per entry counted; measured 2, since training
      attention runs in PyTorch's fused kernel, linear in ``max_len``).
    * ``parameters``: ``12 * num_layers * hidden_size**2 + (vocab_size + max_len) *
      hidden_size`` weights, each with a gradient and two AdamW moments (16 bytes).
    * ``activations``: about 16 float32 values per token, layer and width unit for the
      backward pass, plus the output logits (``batch_size x max_len x vocab_size``, twice).
    """
    params = 12 * num_layers * hidden_size**2 + (vocab_size + max_len) * hidden_size
    tokens = batch_size * max_len
    return {
        "attention": max_len**2 * (12 * num_layers * num_heads * probe_size + 4 * batch_size),
        "parameters": 16 * params,
        "activations": 4 * tokens * (16 * num_layers * hidden_size + 2 * vocab_size),
    }


def _memory_limit() -> int:
    """Bytes of physical memory of this machine (the bound for :func:`memory_estimate`)."""
    import psutil

    return psutil.virtual_memory().total


def _gb(n: float) -> str:
    return f"{n / 1e9:.3g} GB"


#: The sizes a memory refusal may name (``num_heads`` must divide the width, so it is never named).
_MEMORY_SIZES = ("max_len", "num_layers", "hidden_size", "batch_size", "vocab_size", "probe_size")


def _check_memory(values: dict) -> None:
    """Refuse sizes whose :func:`memory_estimate` exceeds this machine's memory. The refusal names the size raised
    furthest above its profile's default (the one a user changed; with none raised, the size behind the largest
    part) and the largest value of it that fits with the others as given (by bisection: the estimate grows with
    each size; a width is then lowered to one the heads divide, with an even head dimension where positions are
    rotary), and any other size above its default."""
    sizes = {
        k: values[k]
        for k in ("hidden_size", "num_layers", "num_heads", "max_len", "vocab_size", "batch_size", "probe_size")
    }
    parts = memory_estimate(**sizes)
    total, limit = sum(parts.values()), _memory_limit()
    if total <= limit:
        return
    profile = values["profile"]
    defaults = {**_PROFILE_DEFAULTS[profile], **ARCH_DEFAULTS[profile].get(values["arch"], {})}
    raised = {k: sizes[k] / defaults[k] for k in _MEMORY_SIZES if sizes[k] > defaults[k]}
    biggest = max(parts, key=parts.get)
    behind = {"attention": "max_len", "parameters": "hidden_size", "activations": "batch_size"}[biggest]
    param = max(raised, key=raised.get) if raised else behind
    lo, hi = 0, sizes[param]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if sum(memory_estimate(**{**sizes, param: mid}).values()) <= limit else (lo, mid - 1)
    rotary = ARCHITECTURES[values["arch"]].rotary
    while param == "hidden_size" and lo and (lo % sizes["num_heads"] or rotary and lo // sizes["num_heads"] % 2):
        lo -= 1
    others = [k for k in raised if k != param]
    allowed = (
        f"allowed here: {param} <= {lo} at these sizes" if lo else f"no value of {param} alone brings it within memory"
    )
    if others:
        allowed += f" ({' and '.join(others)} also above the {profile} profile's default)"
    raise ConfigError(
        param,
        f"got {values[param]}: a run of these sizes needs about {_gb(total)} ({biggest} {_gb(parts[biggest])}; "
        f"see memory_estimate), more than this machine's {_gb(limit)} of memory; {allowed}",
    )


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Everything that determines a training run (its hash keys the run store).

    Every field is required: build one with :func:`resolve_config` (a profile plus
    overrides), or directly with all fields, e.g. ``RunConfig(**{**profile_defaults("ci"),
    "arch": "gpt2", "profile": "ci"})``. Either way every field is checked by
    :data:`FIELD_CHECKS` and :func:`memory_estimate` when the config is built, and stored
    in its canonical type (plain ``int``/``float``).

    Raises:
        ConfigError: naming the first invalid field and its allowed values.
    """

    arch: str
    profile: str
    tau: float
    hidden_size: int
    num_layers: int
    num_heads: int
    max_len: int
    vocab_size: int
    dropout: float
    seed: int
    dataset: str
    batch_size: int
    max_steps: int
    learning_rate: float
    warmup_steps: int
    weight_decay: float
    rank_every: int
    probe_size: int
    val_blocks: int
    log_every: int
    mlm_probability: float
    #: torch threads (intra-op) of the run; set by training and restored after it
    threads: int
    #: factor on the initial query and key weights and biases (BERT ``query``/``key``, GPT-2's
    #: query/key slices of ``c_attn``); ``1 / sqrt(tau)`` at ``tau = 1`` gives the logits of ``tau``
    qk_init_scale: float
    #: factor on the learning rate of the query and key parameters (their own optimizer group)
    qk_lr_scale: float
    #: factor on the weight decay of the query and key weights (0: none on them)
    qk_decay_scale: float
    #: Adam's epsilon (the denominator's floor)
    adam_epsilon: float
    #: Adam's second-moment decay (0.999 is PyTorch's default; 0.99 suits small batches)
    adam_beta2: float
    #: the learning-rate schedule after warm-up, one of :data:`LR_SCHEDULES`
    lr_schedule: str
    #: gradient clipping: the largest global gradient norm (0: no clipping)
    max_grad_norm: float

    def __post_init__(self):
        values = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            check = FIELD_CHECKS.get(f.name)
            values[f.name] = check(f.name, value) if check is not None else value
            object.__setattr__(self, f.name, values[f.name])
        _, head_dim = resolve_heads(values["hidden_size"], values["num_heads"])
        if ARCHITECTURES[values["arch"]].rotary and head_dim % 2:
            raise ConfigError(
                "head_dim",
                f"got {head_dim} (hidden_size={values['hidden_size']} / num_heads={values['num_heads']}) for "
                f"{values['arch']}, whose rotary positions rotate pairs of dimensions; expected an even head_dim",
            )
        _check_memory(values)

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def objective(self) -> str:
        return ARCHITECTURES[self.arch].objective

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


#: Values shared by every profile.
_COMMON = dict(
    tau=1.0,
    seed=0,
    dataset=OFFLINE_DEFAULT,
    weight_decay=0.01,
    mlm_probability=0.15,
    threads=1,
    qk_init_scale=1.0,
    qk_lr_scale=1.0,
    qk_decay_scale=1.0,
    adam_epsilon=1e-8,
    adam_beta2=0.999,
    lr_schedule="linear",
    max_grad_norm=1.0,
)

_PROFILE_DEFAULTS: dict[str, dict] = {
    "ci": dict(
        _COMMON,
        hidden_size=32,
        num_layers=2,
        num_heads=2,
        max_len=32,
        vocab_size=512,
        batch_size=8,
        max_steps=40,
        learning_rate=2e-3,
        warmup_steps=4,
        rank_every=10,
        probe_size=16,
        val_blocks=16,
        log_every=5,
        dropout=0.0,
    ),
    # quick: the recipe of the recipe study (attnrank.sections.recipe, `attnrank recipe`; table in docs/recipe.md):
    # 1000 steps at learning rate 3e-3 with Adam's beta2 = 0.99 (small batches) and a linear decay, which
    # take GPT-2 below its bigram count model (250 steps at 1e-3 left it 0.7 nats above); BERT masks 40% of
    # the tokens (Wettig et al. 2023), which trained lower than 15% or 30% at equal steps. Less than one
    # pass over the corpus, so no dropout (as in nanoGPT's pre-training default); dropout's Bernoulli masks
    # would also cost a fifth of a CPU step at this width. Width 64 took 0.64 times the CPU seconds per step
    # and left GPT-2 0.23 nats higher at 1000 steps (4.12 against 3.89), level with its bigram.
    "quick": dict(
        _COMMON,
        hidden_size=128,
        num_layers=2,
        num_heads=4,
        max_len=64,
        vocab_size=1024,
        batch_size=16,
        max_steps=1000,
        learning_rate=3e-3,
        warmup_steps=100,
        rank_every=250,
        # 32 probe sequences (64 until 2026-12-06): the probes took 6.0-6.5% of a run's CPU seconds; the rank of
        # a run is the mean over its sequences, and every interval is over runs
        probe_size=32,
        val_blocks=64,
        log_every=25,
        dropout=0.0,
        adam_beta2=0.99,
        mlm_probability=0.4,
    ),
    "paper": dict(
        _COMMON,
        hidden_size=512,
        num_layers=4,
        num_heads=8,
        max_len=128,
        vocab_size=16384,
        batch_size=64,
        max_steps=5000,
        # the quick recipe scaled to width 512: the learning rate in proportion to 1 / width (3e-3 x 128 / 512),
        # the same beta2 and masking rate
        learning_rate=7.5e-4,
        warmup_steps=250,
        rank_every=250,
        probe_size=128,
        val_blocks=256,
        log_every=50,
        dropout=0.1,
        adam_beta2=0.99,
        mlm_probability=0.4,
    ),
}
# scale: the quick sizes and optimiser, SCALE_FACTOR times the steps, the warm-up, the probe interval and the
# logging interval (the probes at the same fractions of training, plus the early log-spaced ones)
_PROFILE_DEFAULTS["scale"] = dict(
    _PROFILE_DEFAULTS["quick"],
    **{
        k: SCALE_FACTOR * _PROFILE_DEFAULTS["quick"][k]
        for k in ("max_steps", "warmup_steps", "rank_every", "log_every")
    },
)


#: Per profile and architecture, the values that differ from the profile's for that architecture.
#: ``quick`` (the recipe study, ``attnrank recipe``; dated in the deviations appendix):
#:
#: * GPT-2 reads a byte-level vocabulary of 320 (the 256 bytes, the end-of-text token and 63 merges):
#:   a token carries little by itself, so context, and attention, must do the work. At 1000 steps it ends
#:   0.58 nats below its bigram count model with attention worth 0.75 nats (at 1,024 tokens: 0.2 below,
#:   worth 0.4).
#: * ModernBERT (rotary positions) trains GPT-2's 1000 steps on a character-level WordPiece vocabulary of 256
#:   (since 2026-12-06; the deviations appendix): at 1,024 tokens it ended 0.21-0.51 nats below its bigram, one
#:   seed in three short of the 0.3 target at tau = 0.5 and one 0.02 past it at tau = 1; at 256 every one of 12 runs at tau = 1, 2, 4 and 8
#:   ended 0.54-0.74 below (attention worth 1.0-1.2 nats), at 0.8 times the CPU seconds of a step.
#: * The study's BERT trains 500: its loss stops moving on the context-free plateau (5.471 nats after 500
#:   steps, 5.445 after 1000, against a context-free count model of 5.40).
#:
#: ``scale`` is ``quick`` at :data:`SCALE_FACTOR` times the steps.
_QUICK_ARCH = {"bert": dict(max_steps=500), "modernbert": dict(vocab_size=256), "gpt2": dict(vocab_size=320)}
ARCH_DEFAULTS: dict[str, dict[str, dict]] = {
    "ci": {},
    "quick": _QUICK_ARCH,
    "paper": {},
    "scale": {
        a: {**v, **({"max_steps": SCALE_FACTOR * v["max_steps"]} if "max_steps" in v else {})}
        for a, v in _QUICK_ARCH.items()
    },
}


def resolve_profile(profile: str = "auto") -> str:
    """Return a concrete profile name for ``profile`` (``auto`` or one of :data:`PROFILES`).

    ``auto`` reads ``ATTNRANK_PROFILE`` if set (to a profile, or to ``auto`` itself, the same
    as unset), else picks ``paper`` on CUDA and ``quick`` otherwise. Raises
    :class:`ConfigError` naming ``profile`` (or ``ATTNRANK_PROFILE``) for anything else.
    """
    check_choice("profile", profile, ("auto",) + PROFILES)
    if profile != "auto":
        return profile
    env = os.environ.get("ATTNRANK_PROFILE")
    if env and env != "auto":
        check_choice("ATTNRANK_PROFILE", env, ("auto",) + PROFILES)
        return env
    import torch

    return "paper" if torch.cuda.is_available() else "quick"


def profile_defaults(profile: str = "auto", arch: str | None = None) -> dict:
    """The values a profile sets for every field except ``arch`` and ``profile`` (a copy).

    With ``arch``, the values for that architecture (:data:`ARCH_DEFAULTS`: at ``quick`` BERT
    trains 500 steps, GPT-2 1000). ``threads`` is ``ATTNRANK_THREADS`` and ``dataset`` is
    ``ATTNRANK_DATASET`` when set.

    Raises:
        ConfigError: naming ``profile``, ``ATTNRANK_PROFILE``, ``ATTNRANK_THREADS`` or
            ``ATTNRANK_DATASET`` for an invalid value.
    """
    profile = resolve_profile(profile)
    if arch is not None:
        check_choice("arch", arch, ALL_ARCHS)
    per_arch = ARCH_DEFAULTS[profile].get(arch, {}) if arch is not None else {}
    return {
        **_PROFILE_DEFAULTS[profile],
        **per_arch,
        "threads": _default_threads(),
        "dataset": default_dataset(),
    }


def base_profile(profile: str = "auto") -> str:
    """The profile whose model sizes ``profile`` has: ``quick`` for ``scale``, else ``profile`` resolved.

    For per-profile settings that depend on sizes, not on training length (a chapter's
    Monte Carlo sizes, a preset of small runs).
    """
    p = resolve_profile(profile)
    return SIZES_OF.get(p, p)


def default_dataset() -> str:
    """``ATTNRANK_DATASET`` if set (validated and normalised), else the offline default ``shakespeare``.

    Raises:
        ConfigError: naming ``ATTNRANK_DATASET`` (with the allowed values) for an invalid name
        or a path to no folder.
    """
    env = os.environ.get("ATTNRANK_DATASET")
    if not env:
        return _COMMON["dataset"]
    try:
        return check_dataset(env)
    except ConfigError as exc:
        raise ConfigError("ATTNRANK_DATASET", str(exc).split(": ", 1)[-1]) from None


def default_threads() -> int:
    """The torch threads of a run and of a chapter's analyses: ``ATTNRANK_THREADS`` if set (validated),
    else the profiles' common value (1).

    Raises:
        ConfigError: naming ``ATTNRANK_THREADS`` for anything but an integer >= 1.
    """
    return _default_threads()


def _default_threads() -> int:
    """``ATTNRANK_THREADS`` if set (validated), else the profiles' common value (1)."""
    env = os.environ.get("ATTNRANK_THREADS")
    if not env:
        return _COMMON["threads"]
    if not env.isdigit() or int(env) < 1:
        raise ConfigError("ATTNRANK_THREADS", f"got {env!r}; expected an integer >= 1")
    return int(env)


def resolve_config(arch: str, profile: str = "auto", *, head_dim: int | None = None, **overrides) -> RunConfig:
    """Resolve ``profile`` values plus ``overrides`` into a validated :class:`RunConfig`.

    Every field is an override, e.g. the P3 twin of a run at ``tau = 0.01``:
    ``resolve_config("bert", "ci", qk_init_scale=10.0, qk_lr_scale=10.0)``.

    ``head_dim`` may be given instead of ``num_heads`` (it must divide ``hidden_size``).
    An override of None keeps the profile's value.

    Raises:
        ConfigError: naming the parameter, for an unknown arch, profile or field, or an
        invalid value (see :data:`FIELD_CHECKS`; ``tau`` outside [1e-3, 1e3], heads not
        dividing ``hidden_size``, ``seed`` outside [0, 2**32 - 1], ``qk_init_scale`` or
        ``qk_lr_scale`` outside [1e-3, 1e3], ``qk_decay_scale`` outside [0, 1e3],
        ``adam_epsilon`` outside (0, 1e-2], ``max_grad_norm`` outside [0, 1e6], a run too
        large for this machine's memory, ...).
    """
    check_choice("arch", arch, ALL_ARCHS)
    profile = resolve_profile(profile)
    fields = {f.name for f in dataclasses.fields(RunConfig)} - {"arch", "profile"}
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise ConfigError(
            unknown[0], f"unknown parameter; allowed parameters: {', '.join(sorted(fields | {'head_dim'}))}"
        )
    values = {**profile_defaults(profile, arch), **{k: v for k, v in overrides.items() if v is not None}}
    if head_dim is not None:
        values["num_heads"], _ = resolve_heads(values["hidden_size"], overrides.get("num_heads"), head_dim)
    return RunConfig(arch=arch, profile=profile, **values)
