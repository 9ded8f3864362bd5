"""The recipe study: validation loss against training compute, one lever at a time, for ModernBERT, GPT-2 and
the study's BERT (for the record).

The default CPU profile (``quick``) was chosen with this study: every variant is the profile's run
at ``tau = 1`` with one lever moved (learning rate, schedule, Adam's beta2, steps, vocabulary, width
and depth, batch size at equal tokens, the masked LMs' masking rate), plus the previous default recipe. Each
run is trained through the run store (keyed like every run), so ``attnrank recipe`` trains only what
the store lacks, and :func:`results` reads one row per variant: its final validation loss against
the count baselines (:mod:`attnrank.analysis.baselines`), its training FLOP and its process CPU seconds.

``attnrank recipe`` writes the table to ``data/recipe/<profile>.csv`` (committed: the book's
"Have the models learned?" chapter draws its figure from it, with the commit, code hash and machine
it was measured with) and prints it as Markdown for docs/recipe.md. Final validation losses are
deterministic on a CPU (they do not depend on the machine's load); seconds are not.
"""

from __future__ import annotations

import dataclasses
import math
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..analysis import ablation
from ..analysis.baselines import BASELINES, flops_per_token, gaps
from ..core.architectures import architecture
from ..core.errors import ConfigError
from ..core.profiles import ALL_ARCHS, STUDY_ARCH, RunConfig, profile_defaults, resolve_config, resolve_profile
from ..runs import store
from ..runs.grid import plan as grid_plan
from ..runs.grid import sweep
from ..words.glossary import ARCH_NAMES

__all__ = [
    "Variant",
    "LEVERS",
    "variants",
    "configs",
    "results",
    "table_path",
    "markdown",
    "run",
]

#: The levers the study moves, in the order a table lists them.
LEVERS = (
    "default",
    "steps",
    "learning rate",
    "schedule",
    "Adam beta2",
    "vocabulary",
    "width and depth",
    "batch",
    "masking rate",
    "previous default",
)


@dataclass(frozen=True)
class Variant:
    """One run of the study: a ``name``, the ``lever`` it moves and its ``overrides`` of the profile."""

    name: str
    lever: str
    overrides: dict


def _steps(d: dict, factor: float) -> dict:
    """Steps, warm-up and probe interval scaled together by ``factor``."""
    return {k: max(1, round(d[k] * factor)) for k in ("max_steps", "warmup_steps", "rank_every")}


def variants(arch: str, profile: str = "quick") -> list[Variant]:
    """The variants of the study for ``arch`` around ``profile``'s recipe (every run at ``tau = 1``, seed 0).

    ModernBERT and GPT-2 move every lever of :data:`LEVERS`; the study's BERT, recorded to show its plateau, only
    its steps (2 x) and its vocabulary.

    Raises:
        ConfigError: naming ``arch`` or ``profile``.
    """
    architecture(arch)  # the records' one check: names arch and the allowed values
    d = profile_defaults(profile, arch)
    out = [Variant("default", "default", {})]
    if arch == STUDY_ARCH:  # for the record: does more training or another vocabulary move the study's BERT?
        out.append(Variant("2 x steps", "steps", _steps(d, 2.0)))
        out += [
            Variant(f"vocabulary {v}", "vocabulary", {"vocab_size": v}) for v in VOCABULARIES if v != d["vocab_size"]
        ]
        return out
    out += [Variant(f"{f:g} x steps", "steps", _steps(d, f)) for f in (0.25, 0.5, 2.0)]
    out += [
        Variant(f"learning rate {d['learning_rate'] * f:g}", "learning rate", {"learning_rate": d["learning_rate"] * f})
        for f in (1 / 3, 2.0)
    ]
    other_schedule = "cosine" if d["lr_schedule"] == "linear" else "linear"
    out.append(Variant(f"{other_schedule} decay", "schedule", {"lr_schedule": other_schedule}))
    other_beta2 = 0.999 if d["adam_beta2"] != 0.999 else 0.99
    out.append(Variant(f"beta2 {other_beta2:g}", "Adam beta2", {"adam_beta2": other_beta2}))
    out += [Variant(f"vocabulary {v}", "vocabulary", {"vocab_size": v}) for v in VOCABULARIES if v != d["vocab_size"]]
    half = d["hidden_size"] // 2
    out.append(
        Variant(
            f"width {half}",
            "width and depth",
            {"hidden_size": half, "num_heads": max(1, half // (d["hidden_size"] // d["num_heads"]))},
        )
    )
    out.append(Variant(f"{2 * d['num_layers']} layers", "width and depth", {"num_layers": 2 * d["num_layers"]}))
    for f in (0.5, 2.0):
        out.append(
            Variant(
                f"batch {int(d['batch_size'] * f)} (equal tokens)",
                "batch",
                {"batch_size": int(d["batch_size"] * f), **_steps(d, 1 / f)},
            )
        )
    if not architecture(arch).causal:
        out += [
            Variant(f"masking {m:.0%}", "masking rate", {"mlm_probability": m})
            for m in (0.15, 0.3, 0.5)
            if not math.isclose(m, d["mlm_probability"])
        ]
    out.append(Variant("previous default", "previous default", dict(PREVIOUS_DEFAULT)))
    return out


#: The vocabulary sizes the study tries for every model (byte-level BPE for GPT-2: 256 bytes and the
#: end-of-text token, then merges; WordPiece for the masked LMs).
VOCABULARIES = (256, 320, 512, 1024)

#: The ``quick`` recipe before this study (250 steps, learning rate 1e-3, beta2 0.999, 15% masking).
PREVIOUS_DEFAULT = dict(
    max_steps=250,
    warmup_steps=25,
    rank_every=50,
    learning_rate=1e-3,
    adam_beta2=0.999,
    lr_schedule="linear",
    mlm_probability=0.15,
    vocab_size=1024,
    hidden_size=128,
    num_layers=2,
    num_heads=4,
    batch_size=16,
)


def configs(profile: str = "quick", archs=ALL_ARCHS, dataset=None) -> list[tuple[str, Variant, RunConfig]]:
    """``(arch, variant, config)`` of every run of the study, in table order (``tau = 1``, seed 0).

    A variant whose run is the same as an earlier one's (the previous default, while it is the profile's own)
    is left out, so each run appears once.

    Raises:
        ConfigError: naming ``profile``, ``archs`` or ``dataset``.
    """
    profile = resolve_profile(profile)
    archs = (archs,) if isinstance(archs, str) else tuple(dict.fromkeys(archs))
    unknown = [a for a in archs if a not in ALL_ARCHS]
    if not archs or unknown:
        raise ConfigError(
            "archs", f"got {list(archs)!r}; allowed values: one or more of {', '.join(map(repr, ALL_ARCHS))}"
        )
    out, seen = [], set()
    for arch in archs:
        for v in variants(arch, profile):
            overrides = {
                k: x for k, x in v.overrides.items() if not (architecture(arch).causal and k == "mlm_probability")
            }
            cfg = resolve_config(arch, profile, tau=1.0, seed=0, dataset=dataset, **overrides)
            if cfg not in seen:
                seen.add(cfg)
                out.append((arch, v, cfg))
    return out


def _changes(cfg: RunConfig, base: RunConfig) -> str:
    skip = {"mlm_probability"} if architecture(cfg.arch).causal else set()
    diff = [
        f"{f.name}={getattr(cfg, f.name)}"
        for f in dataclasses.fields(cfg)
        if f.name not in skip and getattr(cfg, f.name) != getattr(base, f.name)
    ]
    return ", ".join(diff) or "none"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def results(plan) -> pd.DataFrame:
    """One row per variant of ``plan`` (:func:`configs`), read from the run store (trained where missing).

    Columns: ``arch, variant, lever, changes`` (the fields that differ from the default), the recipe's
    ``max_steps, batch_size, max_len, vocab_size, hidden_size, num_layers, learning_rate, lr_schedule,
    adam_beta2, mlm_probability``, ``tokens`` (training tokens), ``flop`` (training FLOP,
    :func:`attnrank.analysis.baselines.flops_per_token`), ``cpu_seconds`` and ``wall_seconds`` of the run (the
    probes included), ``probe_cpu_share``, ``final_val_loss``, ``attention_gain`` (nats,
    :func:`attnrank.analysis.ablation.attention_gain`), the baselines and gaps of
    :func:`attnrank.analysis.baselines.gaps`, and the run's ``key``, ``code_hash``, ``git_commit``, ``device`` and
    ``cpu_model``.
    """
    base = {a: c for a, v, c in plan if v.lever == "default"}
    rows = []
    for arch, v, cfg in plan:
        r = store.run(cfg)
        s = r.summary
        tokens = s["steps"] * cfg.batch_size * cfg.max_len
        row = {**cfg.to_dict(), "status": s["status"], "final_val_loss": s["final_val_loss"]}
        g = gaps(pd.DataFrame([row])).iloc[0]
        rows.append(
            {
                "arch": arch,
                "variant": v.name,
                "lever": v.lever,
                "changes": _changes(cfg, base.get(arch, cfg)),
                **{
                    k: getattr(cfg, k)
                    for k in (
                        "max_steps",
                        "batch_size",
                        "max_len",
                        "vocab_size",
                        "hidden_size",
                        "num_layers",
                        "learning_rate",
                        "lr_schedule",
                        "adam_beta2",
                        "mlm_probability",
                    )
                },
                "tokens": tokens,
                "flop": tokens * flops_per_token(cfg),
                "cpu_seconds": s.get("cpu_seconds", math.nan),
                "wall_seconds": s["wall_seconds"],
                "probe_cpu_share": s.get("probe_cpu_seconds", math.nan) / s.get("cpu_seconds", math.nan),
                "status": s["status"],
                "final_val_loss": s["final_val_loss"],
                "attention_gain": ablation.attention_gain(r)["attention_gain"]
                if s["status"] == "complete"
                else math.nan,
                **{b: g[b] for b in BASELINES},
                **{f"gap_{b}": g[f"gap_{b}"] for b in BASELINES},
                "key": r.key,
                "code_hash": s["code_hash"],
                "git_commit": s.get("git_commit"),
                "device": s["device"],
                "cpu_model": _cpu_model(),
            }
        )
    return pd.DataFrame(rows)


def table_path(profile: str = "quick") -> Path:
    """Where ``attnrank recipe`` writes the study of ``profile``: ``data/recipe/<profile>.csv`` in the repository."""
    return Path(__file__).resolve().parents[3] / "data" / "recipe" / f"{resolve_profile(profile)}.csv"


def markdown(table: pd.DataFrame) -> str:
    """The study as a Markdown table (one row per variant): the table of docs/recipe.md."""
    lines = [
        "| model | variant | steps | tokens | training FLOP | CPU s | final loss | vs bigram | attention worth "
        "| vs two-sided |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        two = f"{r.gap_two_sided:+.2f}" if math.isfinite(r.gap_two_sided) else ""
        lines.append(
            f"| {ARCH_NAMES[r.arch]} | {r.variant} | {r.max_steps} | {r.tokens / 1e6:.2f} M | "
            f"{r.flop:.2e} | {r.cpu_seconds:.0f} | {r.final_val_loss:.2f} | {r.gap_bigram:+.2f} | "
            f"{r.attention_gain:.2f} | {two} |"
        )
    return "\n".join(lines)


def run(profile: str = "quick", archs=ALL_ARCHS, *, executor="process", workers=None, out=None, dry_run=False) -> int:
    """``attnrank recipe``: train the study's runs (a process pool by default, with a progress bar), write its
    table (:func:`table_path`, or ``out``) and print it as Markdown; ``dry_run`` lists the runs and how many
    are stored. Returns the exit status.

    Raises:
        ConfigError: naming ``profile``, ``archs`` or ``executor`` before anything is trained.
    """
    runs = configs(profile, archs)
    if dry_run:
        stored = grid_plan([c for _, _, c in runs]).stored.to_numpy()
        for (arch, v, cfg), s in zip(runs, stored):
            print(f"{arch:5s} {v.lever:18s} {v.name:28s} {cfg.max_steps:6d} steps  {'stored' if s else 'to train'}")
        print(f"{len(runs)} runs, {int(stored.sum())} stored")
        return 0
    load = os.getloadavg()[0]
    t0 = time.time()
    # the defaults first, then the steps ladder: a study stopped early has already measured the rate a budget
    # is planned with (the default runs' FLOP per CPU second) and the regime of the default recipe
    order = sorted(
        runs, key=lambda t: ("default", "steps").index(t[1].lever) if t[1].lever in ("default", "steps") else 2
    )
    sweep([c for _, _, c in order], executor=executor, workers=workers, desc="recipe runs")
    table = results(runs)
    table["load_1min_start"], table["load_1min_end"] = load, os.getloadavg()[0]
    table["sweep_wall_seconds"] = time.time() - t0
    path = Path(out) if out else table_path(profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)
    print(markdown(table))
    end = os.getloadavg()[0]
    print(f"\nwrote {path} ({len(table)} runs; load average {load:.1f} at the start, {end:.1f} at the end)")
    return 0
