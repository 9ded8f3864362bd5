"""Training BERT (MLM) or GPT-2 (CLM) from scratch with ``transformers.Trainer``.

:func:`train` runs one :class:`~attnrank.core.profiles.RunConfig`: it builds the tokenizer,
the token blocks and the model, then trains with the stock ``Trainer`` (AdamW, linear
warm-up and the decay of ``lr_schedule``, gradient clipping at ``max_grad_norm``; the query and key parameters in
an optimizer group of their own, see :func:`optimizer_groups`) while :class:`RankCallback` probes attention
ranks and validation loss on the schedule of :func:`probe_steps`: step 0 (initialisation),
the powers of two below ``rank_every`` (2, 4, 8, ...: the first steps on a log scale; step 1 too
without warm-up), then every ``rank_every`` steps and the last step. Each probe also
measures :data:`TRAIN_PROBE_SIZE` fixed training blocks, recorded per sequence beside the
held-out probe sequences (:attr:`TrainResult.sequences`).
On CUDA it trains under bf16 autocast (the attention softmax stays in float32) with
TF32 matmuls on one GPU (never ``DataParallel``); otherwise on the CPU in float32. The
rank probes and the validation loss always run in float32 without autocast or TF32
(:func:`attnrank.core.probe.evaluation_mode`), as on the CPU. A run uses ``cfg.threads``
torch threads; the thread count and the TF32 switches are restored afterwards.

:func:`run_environment` is the part of a run's key that comes from the machine (device
type, precision, world size). Launching a run as several processes (``torchrun``) stops
at once with a :class:`~attnrank.ConfigError`: one run trains on one device; a grid uses
one run per GPU (``attnrank sweep --executor ray``).
"""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import psutil
import torch
from transformers import (
    DataCollatorForLanguageModeling,
    Trainer,
    TrainerCallback,
    TrainingArguments,
    default_data_collator,
)
from transformers.trainer_callback import PrinterCallback, ProgressCallback
from transformers.utils import logging as hf_logging

from .data import token_blocks
from .errors import ConfigError, check_int
from .models import model_from_config, qk_parameter_names, split_qk, tokenizer_pad_id
from .probe import RankProbe
from .profiles import RunConfig

__all__ = [
    "TrainResult",
    "RankCallback",
    "TRAIN_PROBE_SIZE",
    "ATTENTION_SEQUENCES",
    "ATTENTION_STEPS",
    "probe_steps",
    "attention_steps",
    "token_strings",
    "training_probe_ids",
    "data_blocks",
    "prepare_data",
    "probe_indices",
    "training_arguments",
    "optimizer_groups",
    "make_trainer",
    "train",
    "run_numerics",
    "device_name",
    "precision",
    "run_environment",
    "check_environment",
    "ran_as",
    "KEYED_VARIABLES",
    "PINNED_VARIABLES",
]

#: Training blocks measured at every probe beside the held-out probe sequences (per-sequence
#: records only: the study averaged its ranks over 4 training and 4 test examples).
TRAIN_PROBE_SIZE = 16
#: Held-out probe sequences (the first ones) whose attention probabilities a run keeps, at
#: :data:`ATTENTION_STEPS` of its probe steps (:func:`attention_steps`), for the explorer page.
ATTENTION_SEQUENCES = 2
#: How many probe steps keep attention probabilities: the first, the last and the steps between
#: at even spacing on a log scale.
ATTENTION_STEPS = 5


def device_name() -> str:
    """``"cuda:<name>"`` when a GPU is present, else ``"cpu"``."""
    return f"cuda:{torch.cuda.get_device_name()}" if torch.cuda.is_available() else "cpu"


def precision() -> str:
    """Training precision here: ``"bf16"`` (autocast) on a CUDA GPU that supports it, else ``"fp32"``."""
    return "bf16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "fp32"


#: Environment variables that change the bits a run computes, read by torch's CPU and GPU
#: kernels (instruction sets, oneDNN's float32 math mode, MKL's reproducibility mode, TF32
#: overrides, cuBLAS workspaces): when set, each is part of the run's key
#: (:func:`run_environment`). ``ATEN_CPU_CAPABILITY`` is keyed through its effect, the
#: instruction set torch's kernels use (``cpu_capability``).
KEYED_VARIABLES = (
    "ONEDNN_MAX_CPU_ISA",
    "DNNL_MAX_CPU_ISA",
    "ONEDNN_DEFAULT_FPMATH_MODE",
    "DNNL_DEFAULT_FPMATH_MODE",
    "MKL_CBWR",
    "MKL_ENABLE_INSTRUCTIONS",
    "MKL_DEBUG_CPU_TYPE",
    "NVIDIA_TF32_OVERRIDE",
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
    "CUBLAS_WORKSPACE_CONFIG",
)
#: Variables that training pins, so they change nothing: the thread counts (``torch.set_num_threads``
#: to the run's ``threads`` sets OpenMP's and MKL's), and accelerate's precision (training sets
#: ``TrainingArguments.mixed_precision`` itself; a value other than the run's is refused below).
PINNED_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "ACCELERATE_MIXED_PRECISION")
#: accelerate's variables that change nothing a run computes (logging, CPU affinity).
HARMLESS_ACCELERATE = (
    "ACCELERATE_DEBUG_MODE",
    "ACCELERATE_LOG_LEVEL",
    "ACCELERATE_DISABLE_RICH",
    "ACCELERATE_CPU_AFFINITY",
)
_FALSE = ("", "0", "false", "no", "off")


def _accelerate_allowed(name: str, device_type: str, run_precision: str) -> tuple[str, ...] | None:
    """The values of accelerate variable ``name`` that agree with how a run trains (None: any)."""
    if name in HARMLESS_ACCELERATE:
        return None
    agree = {
        "ACCELERATE_MIXED_PRECISION": ("no",) if run_precision == "fp32" else (run_precision,),
        "ACCELERATE_USE_CPU": _FALSE + (("1", "true", "yes") if device_type == "cpu" else ()),
        "ACCELERATE_TORCH_DEVICE": (device_type,),
        "ACCELERATE_DYNAMO_BACKEND": ("no", "NO"),
        "ACCELERATE_GRADIENT_ACCUMULATION_STEPS": ("1",),
    }
    return agree.get(name, _FALSE if name.startswith("ACCELERATE_USE_") else ())


def check_environment(device_type: str | None = None, run_precision: str | None = None) -> None:
    """Refuse environment variables that would make the Trainer train otherwise than the run key says.

    Every ``ACCELERATE_*`` variable (accelerate's launcher settings, read by the ``Trainer``:
    precision, compilation, DeepSpeed/FSDP, device, gradient accumulation) must be unset, one of
    :data:`HARMLESS_ACCELERATE`, or agree with the run (``ACCELERATE_MIXED_PRECISION=no`` on the
    CPU, ``bf16`` on a bf16 GPU; ``ACCELERATE_USE_*`` false; ...). The variables of
    :data:`KEYED_VARIABLES` are keyed instead, those of :data:`PINNED_VARIABLES` pinned.

    Raises:
        ConfigError: naming the first variable that disagrees, its value and what a run uses.
    """
    device_type = device_type or ("cuda" if torch.cuda.is_available() else "cpu")
    run_precision = run_precision or precision()
    for name in sorted(os.environ):
        if not name.startswith("ACCELERATE_"):
            continue
        value = os.environ[name]
        allowed = _accelerate_allowed(name, device_type, run_precision)
        if allowed is not None and value.strip().lower() not in {a.lower() for a in allowed}:
            uses = f"runs here train in {run_precision} on the {device_type}, in one process, without compilation"
            raise ConfigError(
                name,
                f"got {value!r}; accelerate's variables change how the Trainer trains, which the run key does not "
                f"record ({uses}): unset it" + (f" or set it to {allowed[0]!r}" if allowed else ""),
            )


def run_environment() -> dict:
    """The machine's part of a run's key: ``{"device_type", "precision", "world_size", "cpu_capability",
    "variables"}``.

    ``cpu_capability`` is the instruction set torch's CPU kernels use
    (``torch.backends.cpu.get_cpu_capability()``, lowered by ``ATEN_CPU_CAPABILITY``);
    ``variables`` the :data:`KEYED_VARIABLES` that are set. The GPU model is recorded in a
    run's summary, not keyed.

    Raises:
        ConfigError: naming ``WORLD_SIZE`` when this process is one of several launched
        together (``torchrun --nproc_per_node=2``): raised before the run store takes its
        lock, so no rank waits on another; naming an ``ACCELERATE_*`` variable that would
        change how the run trains (:func:`check_environment`).
    """
    raw = os.environ.get("WORLD_SIZE", "1") or "1"
    world = int(raw) if raw.isdigit() else 1
    if world > 1:
        raise ConfigError(
            "WORLD_SIZE",
            f"got {world}: a run trains in one process on one device; do not launch it with "
            "torchrun, train one run per GPU with `attnrank sweep --executor ray` (or `--executor process`)",
        )
    device_type = "cuda" if torch.cuda.is_available() else "cpu"
    check_environment(device_type, precision())
    return {
        "device_type": device_type,
        "precision": precision(),
        "world_size": world,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "variables": {k: os.environ[k] for k in KEYED_VARIABLES if k in os.environ},
    }


def _one_device(args: TrainingArguments) -> TrainingArguments:
    """Train on one GPU: the Trainer would wrap the model in ``DataParallel`` on several visible GPUs."""
    if args.n_gpu > 1:
        args._n_gpu = 1
    return args


def training_arguments(cfg: RunConfig, output_dir: str, *, progress: bool = False, **overrides) -> TrainingArguments:
    """The ``TrainingArguments`` of a run of ``cfg`` (AdamW with ``cfg.adam_epsilon`` and ``cfg.adam_beta2``,
    linear warm-up from zero, then the ``cfg.lr_schedule`` decay to zero, clipping at ``cfg.max_grad_norm``,
    0: none), on one device.

    bf16 autocast on a CUDA GPU that supports it, else float32 on the CPU; no checkpoints,
    no evaluation by the Trainer (the rank probe measures), no reporting. ``overrides``
    replace single arguments (the benchmark times the same Trainer with its own step count).
    """
    cuda = torch.cuda.is_available()
    kw = dict(
        output_dir=output_dir,
        max_steps=cfg.max_steps,
        per_device_train_batch_size=cfg.batch_size,
        learning_rate=cfg.learning_rate,
        weight_decay=cfg.weight_decay,
        warmup_steps=cfg.warmup_steps,
        adam_epsilon=cfg.adam_epsilon,
        adam_beta2=cfg.adam_beta2,
        lr_scheduler_type=cfg.lr_schedule,
        max_grad_norm=cfg.max_grad_norm,
        logging_steps=cfg.log_every,
        logging_first_step=True,
        logging_nan_inf_filter=False,
        save_strategy="no",
        eval_strategy="no",
        report_to="none",
        seed=cfg.seed,
        data_seed=cfg.seed,
        dataloader_num_workers=0,
        use_cpu=not cuda,
        bf16=precision() == "bf16",
        disable_tqdm=not progress,
        remove_unused_columns=False,
    )
    args = _one_device(TrainingArguments(**{**kw, **overrides}))
    # accelerate's ACCELERATE_MIXED_PRECISION would otherwise turn on autocast in a float32 run
    args.mixed_precision = "bf16" if args.bf16 else "fp16" if args.fp16 else "no"
    return args


def ran_as(trainer: Trainer) -> dict:
    """How ``trainer``'s accelerator is set up: ``{"device_type", "precision", "world_size"}``
    (``precision``: ``"fp32"`` for accelerate's ``"no"``), read after the ``Trainer`` is built."""
    acc = trainer.accelerator
    mixed = str(acc.mixed_precision)
    return {
        "device_type": acc.device.type,
        "precision": "fp32" if mixed == "no" else mixed,
        "world_size": int(acc.num_processes),
    }


def probe_indices(n_val: int, count: int) -> np.ndarray:
    """Indices of ``count`` blocks spread evenly over ``n_val`` validation blocks (the probe and validation sets)."""
    return np.linspace(0, n_val - 1, min(count, n_val)).round().astype(int)


def optimizer_groups(model: torch.nn.Module, cfg: RunConfig, decay_names) -> list[dict]:
    """The optimizer's parameter groups for ``cfg``: the stock Trainer's two, the query/key apart.

    ``decay_names`` are the parameter names that get weight decay (the Trainer's rule: not the
    biases, not the LayerNorms). Groups (empty ones left out), each with its ``lr`` and
    ``weight_decay``: the other parameters with and without decay at ``cfg.learning_rate`` and
    ``cfg.weight_decay`` (the stock groups), then the query/key parameters
    (:func:`attnrank.core.models.qk_parameter_names`; for GPT-2 call this inside
    :func:`attnrank.core.models.split_qk`) at ``cfg.learning_rate * cfg.qk_lr_scale``, with
    ``cfg.weight_decay * cfg.qk_decay_scale`` on their weights. The learning-rate schedule
    multiplies every group's rate by the same factor, so the ratio holds throughout.
    """
    qk, decay = set(qk_parameter_names(model)), set(decay_names)
    lr, wd = cfg.learning_rate, cfg.weight_decay
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [
        {"params": [p for n, p in named if n not in qk and n in decay], "lr": lr, "weight_decay": wd},
        {"params": [p for n, p in named if n not in qk and n not in decay], "lr": lr, "weight_decay": 0.0},
        {
            "params": [p for n, p in named if n in qk and n in decay],
            "lr": lr * cfg.qk_lr_scale,
            "weight_decay": wd * cfg.qk_decay_scale,
        },
        {
            "params": [p for n, p in named if n in qk and n not in decay],
            "lr": lr * cfg.qk_lr_scale,
            "weight_decay": 0.0,
        },
    ]
    return [g for g in groups if g["params"]]


class _Trainer(Trainer):
    """The stock ``Trainer`` whose optimizer gives the query/key parameters a group of their own."""

    def __init__(self, *args, run_config: RunConfig, **kwargs):
        self.run_config = run_config
        super().__init__(*args, **kwargs)

    def create_optimizer(self, model=None):
        if self.optimizer is None:
            model = self.model if model is None else model
            cls, kwargs = self.get_optimizer_cls_and_kwargs(self.args, model)
            self.optimizer = cls(
                optimizer_groups(model, self.run_config, self.get_decay_parameter_names(model)), **kwargs
            )
        return self.optimizer


def make_trainer(
    cfg: RunConfig, model: torch.nn.Module, dataset, collator, *, output_dir: str, progress: bool = False, callbacks=()
) -> Trainer:
    """The ``transformers.Trainer`` of a run: the arguments of :func:`training_arguments` and the
    query/key optimizer groups of :func:`optimizer_groups`.

    For GPT-2 with ``cfg.qk_lr_scale != 1`` or ``cfg.qk_decay_scale != 1`` build and train it
    inside :func:`attnrank.core.models.split_qk`, so that its query/key part has a parameter of its own.
    """
    trainer = _Trainer(
        model=model,
        args=training_arguments(cfg, output_dir, progress=progress),
        train_dataset=dataset,
        data_collator=collator,
        callbacks=list(callbacks),
        run_config=cfg,
    )
    if not progress:
        trainer.remove_callback(PrinterCallback)
        trainer.remove_callback(ProgressCallback)
    return trainer


class _Blocks(torch.utils.data.Dataset):
    """Token blocks as examples; with ``labels``, each block is also its own target sequence
    (causal LM: the model shifts the labels, so every next token is a target)."""

    def __init__(self, blocks: np.ndarray, labels: bool = False):
        self.blocks, self.labels = torch.from_numpy(blocks), labels

    def __len__(self) -> int:
        return len(self.blocks)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.blocks[i], "labels": self.blocks[i]} if self.labels else {"input_ids": self.blocks[i]}


@dataclass
class TrainResult:
    """What a run produced: logs as DataFrames and a summary dict.

    ``sequences`` is :attr:`attnrank.core.probe.RankProbe.sequences` (one row per probe step, split
    and sequence); empty when not recorded.
    """

    train_log: pd.DataFrame
    eval_log: pd.DataFrame
    ranks: pd.DataFrame
    rank_summary: pd.DataFrame
    summary: dict
    model: torch.nn.Module | None = field(default=None, repr=False)
    sequences: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    #: the kept attention probabilities (:attr:`attnrank.core.probe.RankProbe.attention`) with the
    #: probe sequences' ``input_ids`` ``[S, n]`` and ``tokens`` (``S`` lists of ``n`` strings);
    #: None when none were kept
    attention: dict | None = field(default=None, repr=False)


def probe_steps(max_steps: int, rank_every: int, warmup_steps: int = 0) -> list[int]:
    """The training steps at which a run is probed, in increasing order.

    Step 0 (the initialisation), every power of two below ``rank_every`` (1, 2, 4, 8, ...),
    every multiple of ``rank_every`` up to ``max_steps``, and ``max_steps`` itself. With a
    warm-up (``warmup_steps >= 1``) step 1 is left out: the linear warm-up starts at a learning
    rate of zero, so the weights after the first step are those of step 0 and its probe would
    repeat step 0's. For the ``ci`` profile (``max_steps=40, rank_every=10, warmup_steps=4``):
    ``[0, 2, 4, 8, 10, 20, 30, 40]``.

    Raises:
        ConfigError: naming ``max_steps``, ``rank_every`` or ``warmup_steps`` when it is not a
        positive (``warmup_steps``: non-negative) integer.
    """
    max_steps = check_int("max_steps", max_steps, low=1)
    rank_every = check_int("rank_every", rank_every, low=1)
    warmup_steps = check_int("warmup_steps", warmup_steps, low=0)
    early = {2**k for k in range(rank_every.bit_length()) if 2**k < rank_every}
    if warmup_steps:
        early.discard(1)
    regular = set(range(0, max_steps + 1, rank_every))
    return sorted(s for s in {0, max_steps} | early | regular if s <= max_steps)


def attention_steps(max_steps: int, rank_every: int, count: int = ATTENTION_STEPS, warmup_steps: int = 0) -> list[int]:
    """The probe steps at which a run keeps attention probabilities, in increasing order.

    Step 0, ``max_steps`` and, for ``k = 1 .. count - 2``, the step of :func:`probe_steps`
    nearest to ``max_steps ** (k / (count - 1))`` on a log scale (the first steps change the
    attention most); fewer when two targets share a probe step. ``warmup_steps`` as for
    :func:`probe_steps` (whose steps these are). For the ``ci`` profile
    (``max_steps=40, rank_every=10``): ``[0, 2, 8, 20, 40]``.

    Raises:
        ConfigError: naming ``max_steps``, ``rank_every`` or ``count`` (an integer >= 2).
    """
    count = check_int("count", count, low=2)
    steps = probe_steps(max_steps, rank_every, warmup_steps)
    chosen = {0, max_steps}
    positive = [s for s in steps if s > 0]
    for k in range(1, count - 1):
        target = math.log(max_steps) * k / (count - 1)
        chosen.add(min(positive, key=lambda s: (abs(math.log(s) - target), s)))  # noqa: B023
    return sorted(chosen)


def token_strings(tokenizer, ids: torch.Tensor) -> list[list[str]]:
    """The text of every token of ``ids [S, n]`` (``S`` lists of ``n`` strings), for labels and hover text.

    Each token is decoded alone: WordPiece tokens keep their ``##`` continuation mark, byte-level
    BPE tokens become their text (a leading space stays, a newline is ``"\\n"``).
    """
    return [[tokenizer.decode([i]) for i in row] for row in ids.tolist()]


def training_probe_ids(blocks: np.ndarray, size: int = TRAIN_PROBE_SIZE) -> torch.Tensor:
    """``[min(size, len(blocks)), n]`` training blocks spread evenly over ``blocks [N, n]`` (fixed, no RNG)."""
    idx = np.linspace(0, len(blocks) - 1, min(size, len(blocks))).round().astype(int)
    return torch.from_numpy(np.asarray(blocks)[idx])


class RankCallback(TrainerCallback):
    """Probes ranks and validation loss at the steps of :func:`probe_steps`; stops on NaN.

    Adds the mean rtol-1e-2 rank to the logged values so the progress output shows it.
    """

    def __init__(self, probe: RankProbe, rank_every: int, max_steps: int, warmup_steps: int = 0):
        self.probe, self.rank_every, self.max_steps = probe, rank_every, max_steps
        self.steps = frozenset(probe_steps(max_steps, rank_every, warmup_steps))
        self.train_rows: list[dict] = []
        self.failure: dict | None = None
        self.last: dict = {}
        self.first_step_at: float | None = None

    def _probe(self, model, step: int) -> None:
        self.last = self.probe(model, step)
        if not math.isfinite(self.last["val_loss"]):
            self.failure = {"step": step, "reason": f"validation loss is {self.last['val_loss']}"}

    def on_step_begin(self, args, state, control, **kw):
        if self.first_step_at is None:
            self.first_step_at = time.time()

    def on_train_begin(self, args, state, control, model=None, **kw):
        self._probe(model, 0)
        if self.failure:
            control.should_training_stop = True

    def on_step_end(self, args, state, control, model=None, **kw):
        step = state.global_step
        if step in self.steps:
            self._probe(model, step)
        if self.failure:
            control.should_training_stop = True

    def on_log(self, args, state, control, logs=None, **kw):
        if logs is None or "loss" not in logs:
            return
        loss = float(logs["loss"])
        self.train_rows.append({"step": state.global_step, "loss": loss, "learning_rate": logs.get("learning_rate")})
        if not math.isfinite(loss):
            self.failure = {"step": state.global_step, "reason": f"training loss is {loss}"}
            control.should_training_stop = True
        if "rank_rtol_1e-2" in self.last:
            logs["rank"] = round(self.last["rank_rtol_1e-2"], 2)
            logs["val_loss"] = round(self.last["val_loss"], 4)


def data_blocks(cfg: RunConfig):
    """``(train [N, max_len], val [M, max_len], tokenizer)`` of ``cfg``: :func:`attnrank.core.data.token_blocks`
    with at least one batch of training blocks and two validation blocks.

    Raises:
        ConfigError: naming ``dataset`` (unreadable), ``max_len`` (too few blocks) or
        ``ATTNRANK_DATA`` (the caches cannot be written); the grid runs it on the driver first.
    """
    return token_blocks(cfg.arch, cfg.dataset, cfg.vocab_size, cfg.max_len, min_train=cfg.batch_size, min_val=2)


def prepare_data(cfg: RunConfig):
    """Token blocks, tokenizer, collator, fixed probe ids and fixed validation batches for ``cfg``.

    Returns ``(dataset, tokenizer, collator, probe_ids [probe_size, max_len], val_batches)``.
    BERT batches come from the masked-LM collator (``labels`` is -100 except at the
    masked positions). GPT-2 blocks are never padded, so every next token is a target:
    each example carries ``labels`` equal to its ``input_ids`` and is batched by the stock
    ``default_data_collator`` (no label is -100; end-of-text tokens between documents are
    targets like any other token).
    """
    train, val, tokenizer = data_blocks(cfg)
    mlm = cfg.objective == "MLM"
    collator = (
        DataCollatorForLanguageModeling(tokenizer, mlm=True, mlm_probability=cfg.mlm_probability)
        if mlm
        else default_data_collator
    )
    # probe and validation blocks are spread evenly over the validation plays
    probe_idx = probe_indices(len(val), cfg.probe_size)
    val_idx = probe_indices(len(val), cfg.val_blocks)
    probe_ids = torch.from_numpy(val[probe_idx])
    val_examples = _Blocks(val[val_idx], labels=not mlm)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(10_000)  # the same masked validation tokens at every probe and in every run
        val_batches = [
            collator([val_examples[j] for j in range(i, min(i + 64, len(val_examples)))])
            for i in range(0, len(val_examples), 64)
        ]
    val_batches = [{k: v for k, v in b.items() if k in ("input_ids", "labels", "attention_mask")} for b in val_batches]
    return _Blocks(train, labels=not mlm), tokenizer, collator, probe_ids, val_batches


def train(
    cfg: RunConfig, *, output_dir: str | None = None, progress: bool = True, keep_model: bool = True
) -> TrainResult:
    """Train one run and return its logs and summary (the run store calls this).

    A run whose training or validation loss becomes NaN/inf stops and is returned with
    ``summary["status"] == "failed"`` and the step and reason; its final validation loss and
    final ranks are None, and the rank records of its probes from that step on are NaN (a
    broken model's attention measures nothing). Trains on ``cfg.threads``
    torch threads with float32 matmuls at full precision (``"highest"``; TF32 on CUDA); the
    previous thread count, matmul precision and TF32 switches are restored.

    Raises:
        ConfigError: under a multi-process launch (see :func:`run_environment`).
    """
    env = run_environment()
    with run_numerics(cfg.threads):
        return _train(cfg, env, output_dir=output_dir, progress=progress, keep_model=keep_model)


@contextlib.contextmanager
def run_numerics(threads: int | None):
    """The numerics a training run computes under, and every later evaluation of a stored run with it.

    Args:
        threads: torch threads (``torch.set_num_threads``; also OpenMP's and MKL's, so
            ``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` change nothing); ``None`` keeps the caller's.

    Inside: float32 matmuls at full precision (``"highest"``: a caller's ``"medium"`` would let them run
    in bf16), then TF32 matmuls and convolutions on CUDA (which torch reads as ``"high"``), and on a CPU
    subnormal floats flushed to zero (at low tau the softmax and its gradient underflow into subnormals,
    which x86 CPUs process up to 2.5x slower: a quick BERT run at tau = 0.004 took 43.5 s, 17.8 s with
    flushing, same final loss; flushing changes values below 1.2e-38 only). On exit the caller's thread
    count, TF32 switches, flushing and matmul precision are restored (the precision only when torch can
    report it: a caller that mixed torch's legacy and new precision switches keeps its own).
    """
    old_threads = torch.get_num_threads()
    try:
        matmul = torch.get_float32_matmul_precision()
    except RuntimeError:  # a caller mixed torch's legacy and new precision switches: keep theirs as they are
        matmul = None
    tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    cuda = torch.cuda.is_available()
    if threads is not None:
        torch.set_num_threads(int(threads))
    torch.set_float32_matmul_precision("highest")
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    flush = not cuda and torch.set_flush_denormal(True)
    try:
        yield
    finally:
        if flush:
            torch.set_flush_denormal(False)
        torch.set_num_threads(old_threads)
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
        if matmul is not None:  # after the TF32 switches, which torch reads as its legacy API
            torch.set_float32_matmul_precision(matmul)


def _train(cfg: RunConfig, env: dict, *, output_dir, progress, keep_model) -> TrainResult:
    t_start, c_start = time.perf_counter(), time.process_time()
    dataset, tokenizer, collator, probe_ids, val_batches = prepare_data(cfg)
    model = model_from_config(cfg, vocab_size=len(tokenizer), pad_token_id=tokenizer_pad_id(tokenizer))
    probe = RankProbe(
        probe_ids,
        val_batches,
        train_ids=training_probe_ids(dataset.blocks.numpy()),
        attention_steps=attention_steps(cfg.max_steps, cfg.rank_every, warmup_steps=cfg.warmup_steps),
        attention_sequences=ATTENTION_SEQUENCES,
    )
    callback = RankCallback(probe, cfg.rank_every, cfg.max_steps, cfg.warmup_steps)
    split = split_qk(model) if cfg.qk_lr_scale != 1.0 or cfg.qk_decay_scale != 1.0 else contextlib.nullcontext()
    with tempfile.TemporaryDirectory() as tmp, split:
        trainer = make_trainer(
            cfg, model, dataset, collator, output_dir=output_dir or tmp, progress=progress, callbacks=[callback]
        )
        ran = ran_as(trainer)
        keyed = {k: env[k] for k in ran}
        if ran != keyed:  # the key must name what runs: never train under another set-up
            raise RuntimeError(f"the Trainer was set up as {ran}, the run key says {keyed}; nothing was trained")
        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        try:
            t_train = time.perf_counter()
            trainer.train()
            train_seconds = time.perf_counter() - t_train
        finally:
            hf_logging.set_verbosity(verbosity)
    rank_summary, ranks, sequences = probe.summary, probe.ranks, probe.sequences
    failure = callback.failure
    if failure:  # probes of a model whose loss is NaN or infinite measured nothing: their ranks are missing
        ranks = _unmeasured(ranks, failure["step"], ["value", "sd"])
        rank_summary = _unmeasured(rank_summary, failure["step"], ["mean", "sd", "sem"])
        sequences = _unmeasured(
            sequences, failure["step"], [c for c in sequences if c not in ("step", "split", "sequence")]
        )
    first = rank_summary[rank_summary.step == rank_summary.step.min()].set_index("measure")["mean"]
    last = rank_summary[rank_summary.step == rank_summary.step.max()].set_index("measure")["mean"]
    eval_log = probe.eval_log
    summary = {
        "status": "failed" if failure else "complete",
        "failure": failure,
        "steps": int(trainer.state.global_step),
        "initial_val_loss": float(eval_log.val_loss.iloc[0]),
        # a failed run has no final state: its final loss and ranks are missing (None), not numbers
        "final_val_loss": None if failure else float(eval_log.val_loss.iloc[-1]),
        "initial_rank": {k: float(v) for k, v in first.items()},
        "final_rank": {k: None if failure else float(v) for k, v in last.items()},
        "wall_seconds": time.perf_counter() - t_start,
        # process CPU seconds (all of this process's threads): a machine's load inflates wall seconds more
        "cpu_seconds": time.process_time() - c_start,
        "probe_cpu_seconds": probe.timing["probe_cpu"],
        "validation_cpu_seconds": probe.timing["validation_cpu"],
        "train_seconds": train_seconds,
        "probe_seconds": sum(probe.timing[k] for k in ("forward", "svd", "bookkeeping")),  # rank tracking
        "attention_seconds": probe.timing["attention"],  # copying the kept attention probabilities
        "validation_seconds": probe.timing["validation"],
        "probe_timing": dict(probe.timing),
        "tokens_seen": int(trainer.state.global_step) * cfg.batch_size * cfg.max_len,
        "num_parameters": int(sum(p.numel() for p in model.parameters())),
        "startup_seconds": callback.first_step_at - psutil.Process().create_time() if callback.first_step_at else None,
        "device": device_name(),  # with the GPU model
        "torch_threads": torch.get_num_threads(),
        **env,
    }
    attention = probe.attention
    if attention is not None:
        kept = probe_ids[: attention["probabilities"].shape[2]]
        attention = {**attention, "input_ids": kept.clone(), "tokens": token_strings(tokenizer, kept)}
    return TrainResult(
        train_log=pd.DataFrame(callback.train_rows),
        eval_log=eval_log,
        ranks=ranks,
        rank_summary=rank_summary,
        summary=summary,
        model=model if keep_model else None,
        sequences=sequences,
        attention=attention,
    )


def _unmeasured(table: pd.DataFrame, step: int, columns) -> pd.DataFrame:
    """``table`` with ``columns`` missing (NaN) from probe ``step`` on."""
    if not len(table):
        return table
    table = table.copy()
    table.loc[table.step >= step, list(columns)] = np.nan
    return table
