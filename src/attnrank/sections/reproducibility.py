"""Re-running the book, the reproducibility chapter: what built this book and how to build it again.

:func:`section` returns the chapter's :class:`~attnrank.sections.section.Section`: the environment of the
build (Python, the platform, each package of :data:`attnrank.runs.provenance.ENVIRONMENT_PACKAGES` beside the
version the lock file pins), the runs of the shared sweep with their keys, the scale each verdict was
computed at, the settings of every profile and preset, and the size of the ``paper`` profile. The
build's times are rendered by the book's Sphinx extension when the page is read (the chapters'
execution times and the build log), so no other page prints a timing.
"""

from __future__ import annotations

import platform
import sys
from importlib.metadata import version

import pandas as pd

from ..analysis.frozen import changed_since
from ..core.errors import ConfigError
from ..core.profiles import MLM_ARCH, OFFLINE_DEFAULT, PROFILES, profile_defaults, resolve_config, resolve_profile
from ..core.train import device_name
from ..runs import experiments, presets, tables
from ..runs.provenance import ENVIRONMENT_PACKAGES, RECORD_FOLDERS, lock_state
from ..runs.store import code_hash
from ..words.glossary import (
    ARCH_LABELS,
    ARCH_NAMES,
    ARCHS,
    CHAPTER_LABELS,
    SETTING_LABELS,
    SIZE_LABELS,
    VERDICT_LABELS,
    corpus_name,
    fmt,
    fmt_setting,
    per_arch,
)
from .section import Section, Table

__all__ = [
    "section",
    "environment",
    "profile_tables",
    "preset_tables",
    "runs_shown",
    "multiplicity",
    "check_record",
    "record_relation",
    "CHECK_FOLDERS",
]

#: Where the recorded checks' verdicts are: the scale check (the ``scale`` profile), the second corpus (the
#: default profile on ``dataset="stdlib"``) and the confirmation (the default profile on fresh seeds,
#: ``ATTNRANK_SEEDS``), each built in a clone of its own and recorded there with
#: ``attnrank verdicts data/<name>/verdicts.csv --from-build _build`` beside its ``build.json`` (commit, date,
#: runs, build minutes on two cores).
CHECK_FOLDERS = {folder.name: folder for folder in RECORD_FOLDERS}


def environment() -> tuple[pd.DataFrame, str]:
    """The environment of this build: one row per package (Python, the platform and each of
    :data:`attnrank.runs.provenance.ENVIRONMENT_PACKAGES`) with its installed and its locked version, and the lock
    file in words (its hash, and whether every listed package is at its locked version)."""
    lock_hash, locked = lock_state(ENVIRONMENT_PACKAGES)
    env = pd.DataFrame(
        [("Python", sys.version.split()[0], "-"), ("platform", f"{platform.system()} {platform.machine()}", "-")]
        + [(p, version(p), locked[p] or "-") for p in ENVIRONMENT_PACKAGES],
        columns=["package", "installed", "locked"],
    )
    differ = [p for p in ENVIRONMENT_PACKAGES if locked[p] is not None and locked[p] != version(p)]
    if lock_hash is None:
        text = "no lock file in this copy of the library"
    elif differ:
        text = f"requirements.lock (SHA-256 {lock_hash[:12]}); not installed from it: {', '.join(differ)} differ"
    else:
        text = f"requirements.lock (SHA-256 {lock_hash[:12]}); every package listed is at its locked version"
    return env, text


def _written(v) -> str:
    """A setting's value as written in its profile (a float in :func:`attnrank.words.glossary.fmt_setting`'s form)."""
    return fmt_setting(v) if isinstance(v, float) else str(v)


def profile_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The settings of every profile, one column per profile: the defaults of each architecture's resolved
    config (:func:`attnrank.core.profiles.resolve_config`; a value the architectures differ in is named per
    architecture, ``GPT-2 1000, BERT 500``), one row per setting by its label
    (:data:`attnrank.words.glossary.SETTING_LABELS`), and the sweep grids of the chapters
    (:data:`attnrank.runs.experiments.SWEEP_DEFAULTS`)."""
    fields = list(profile_defaults("ci"))
    columns = {}
    for p in PROFILES:
        configs = {a: resolve_config(a, p) for a in ARCHS}
        columns[p] = {f: per_arch({a: getattr(c, f) for a, c in configs.items()}, _written) for f in fields}
    defaults = pd.DataFrame(columns).rename(index=SETTING_LABELS)
    plans = {p: experiments.sweep_plan(p, dataset=OFFLINE_DEFAULT) for p in PROFILES}
    fields = {
        "taus": "τ",
        "head_dims": "head dimensions",
        "seeds": "seeds",
        "head_dim_seeds": "seeds off the stock head dimension",
    }
    grids = pd.DataFrame(
        {
            p: {label: ", ".join(map(_written, getattr(plan, k))) for k, label in fields.items()}
            for p, plan in plans.items()
        }
    )
    return defaults.rename_axis("setting").reset_index(), grids.rename_axis("grid").reset_index()


def preset_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The chapters' sizes (:func:`attnrank.runs.presets.preset_table`) and run presets
    (:func:`attnrank.runs.presets.run_preset_table`) with the words a reader sees: each chapter and size by its label
    (:data:`attnrank.words.glossary.CHAPTER_LABELS`, :data:`~attnrank.words.glossary.SIZE_LABELS`), each override by its
    setting's label (:data:`~attnrank.words.glossary.SETTING_LABELS`)."""
    sizes = presets.preset_table()
    sizes = sizes.assign(chapter=sizes.chapter.map(CHAPTER_LABELS), size=sizes["size"].map(SIZE_LABELS))
    chapter_runs = presets.run_preset_table()
    overrides = [
        ", ".join(f"{SETTING_LABELS[k]} {_written(x)}" for k, x in presets.RUN_PRESETS[c][p]["overrides"].items())
        or "none"
        for c in presets.RUN_PRESETS
        for p in presets.RUN_PRESETS[c]
    ]
    models = chapter_runs.models.map(lambda m: ", ".join(ARCH_NAMES.get(a, a) for a in m.split(", ")))
    return sizes, chapter_runs.assign(
        chapter=chapter_runs.chapter.map(CHAPTER_LABELS), overrides=overrides, models=models
    )


def runs_shown(sweep: pd.DataFrame) -> pd.DataFrame:
    """The runs of the sweep (:func:`attnrank.runs.tables.table`) as the chapter lists them, narrow enough for the
    page's column: key, model, τ, head dimension by heads, seed, status, steps, final validation loss and
    the device with its torch threads."""
    return pd.DataFrame(
        {
            "key": sweep.key,
            "model": sweep.arch.map(ARCH_LABELS),
            "τ": sweep.tau,
            "dₕ × heads": [f"{d} × {h}" for d, h in zip(sweep.head_dim, sweep.num_heads)],
            "seed": sweep.seed,
            "status": sweep.status,
            "steps": sweep.steps,
            "final loss (nats)": sweep.final_val_loss,
            "device": [f"{d}, {t} thread{'' if t == 1 else 's'}" for d, t in zip(sweep.device, sweep.threads)],
        }
    )


def multiplicity(n_verdicts: int, level: float = 0.95) -> dict:
    """The book's multiplicity in numbers, for the conventions page: the verdicts tested
    (``repro_n_verdicts``), the number a reader should expect decided by chance alone if no claim held
    and every test were independent (``repro_chance_decided``, ``n (1 - level)``), and the per-verdict
    level that would hold the family-wise error at ``1 - level`` (``repro_bonferroni``, Bonferroni).

    Raises:
        ConfigError: naming ``n_verdicts`` when it is below 1, ``level`` outside (0, 1).
    """
    if isinstance(n_verdicts, bool) or not isinstance(n_verdicts, int) or n_verdicts < 1:
        raise ConfigError("n_verdicts", f"got {n_verdicts!r}; expected a count of at least 1")
    if not 0 < level < 1:
        raise ConfigError("level", f"got {level!r}; expected a confidence level in (0, 1)")
    alpha = 1 - level
    return {
        "repro_n_verdicts": n_verdicts,
        "repro_chance_decided": fmt(n_verdicts * alpha, 1),
        "repro_bonferroni": fmt(alpha / n_verdicts, 2),
        "repro_level": fmt(level, 0, percent=True),
    }


def check_record(folder) -> tuple[pd.DataFrame | None, dict]:
    """A recorded check's build (a folder of :data:`CHECK_FOLDERS`): its verdict table (``verdict, status, effect,
    n, regime, finding``; the row ``regime`` holds the regime its models reached) and its ``build.json``;
    ``(None, {})`` when none is recorded."""
    import json
    from pathlib import Path

    folder = Path(folder)
    table, meta = folder / "verdicts.csv", folder / "build.json"
    if not table.is_file():
        return None, {}
    return pd.read_csv(table, keep_default_na=False), (json.loads(meta.read_text()) if meta.is_file() else {})


#: How a check's cell reads where its verdict is not an independent replication (:func:`record_relation`).
RELATION_NOTES = {
    "same": " (same computation)",
    "partly": " (partly the same runs)",
    "independent": "",
    "earlier rule": " (under an earlier version of its rule)",
    "earlier design": " (on an earlier design of its runs)",
    "earlier rule and design": " (under an earlier version of its rule, on an earlier design of its runs)",
}


def record_relation(profile: str, table: pd.DataFrame | None, meta: dict, dataset=None) -> dict:
    """How each verdict of a recorded check relates to this build's: :func:`attnrank.runs.experiments.check_relation`,
    and ``"earlier rule"`` for a verdict whose rule has a newer frozen version than the one the check applied
    (:func:`attnrank.analysis.frozen.changed_since`), ``"earlier design"`` for a row stamped with a design of its
    runs (``design``, :func:`attnrank.runs.experiments.design_digest`) other than the one its check's profile trains
    now, and ``"earlier rule and design"`` for both: none is compared with this build's. Empty without a
    ``build.json``.

    Raises:
        ConfigError: from :func:`~attnrank.runs.experiments.check_relation` for a ``build.json`` it cannot read.
    """
    relation = experiments.check_relation(profile, meta, dataset) if meta else {}
    if table is not None and meta.get("date"):
        relation.update(dict.fromkeys(changed_since(table[table.verdict != "regime"], meta["date"]), "earlier rule"))
    if table is not None and meta and "design" in table:  # the stamp of the runs each row was computed on
        there = meta.get("profile", profile)
        relation.update(
            {
                r.verdict: "earlier rule and design" if relation.get(r.verdict) == "earlier rule" else "earlier design"
                for r in table.itertuples()
                if r.verdict in experiments.VERDICT_RUNS
                and str(r.design or "")
                and str(r.design) != experiments.design_digest(r.verdict, there)
            }
        )
    return relation


def _check_glue(name: str, table: pd.DataFrame | None, meta: dict, relation: dict) -> dict:
    """``repro_<name>_<verdict>`` (each verdict's status, marked where it is the same computation as this build's,
    ``relation``: :func:`attnrank.runs.experiments.check_relation`), ``repro_<name>_same`` (those verdicts, named),
    ``repro_<name>_regime`` and ``repro_<name>_meta``."""
    if table is None:
        return {f"repro_{name}_{v}": "not recorded" for v in VERDICT_LABELS} | {
            f"repro_{name}_regime": "No such build is recorded in this checkout.",
            f"repro_{name}_meta": "none recorded",
            f"repro_{name}_same": "none",
        }
    rows = {r.verdict: r for r in table.itertuples()}
    glue = {
        f"repro_{name}_{v}": rows[v].status + RELATION_NOTES[relation[v]] if v in rows else "not recorded"
        for v in VERDICT_LABELS
    }
    same = [VERDICT_LABELS[v] for v in VERDICT_LABELS if relation.get(v) == "same"]
    glue[f"repro_{name}_same"] = "; ".join(same) if same else "none"
    glue[f"repro_{name}_regime"] = rows["regime"].finding if "regime" in rows else "not recorded"
    keys = ("profile", "dataset", "seeds", "toy_seeds", "commit", "date", "updated", "runs", "build_minutes")
    shown = {k: ", ".join(map(str, v)) if isinstance(v, list) else v for k, v in meta.items()}
    glue[f"repro_{name}_meta"] = ", ".join(f"{k.replace('_', ' ')} {shown[k]}" for k in keys if k in shown) + (
        f" ({meta['note']})" if meta.get("note") else ""
    )
    return glue


def section(profile: str = "auto", *, dataset: str | None = None, seeds=None, taus=None, head_dims=None) -> Section:
    """The reproducibility chapter's numbers and tables (the runs of the shared sweep are trained where missing).

    ``seeds``, ``taus`` and ``head_dims`` narrow the shared sweep as in
    :func:`attnrank.runs.experiments.main_sweep` (``None``: the profile's grid, as the chapter uses it).

    Raises:
        ConfigError: naming ``profile``, ``dataset``, ``seeds``, ``taus`` or ``head_dims`` for a
            value the sweep does not allow.
    """
    profile = resolve_profile(profile)
    env, lock = environment()
    sweep = tables.table(
        experiments.main_sweep(
            experiments.sweep_plan(profile, taus=taus, head_dims=head_dims, seeds=seeds, dataset=dataset)
        ),
        long=False,
    )
    paper, here = profile_defaults("paper"), resolve_config(MLM_ARCH, profile, dataset=dataset)
    done = sweep[sweep.cpu_seconds.notna()] if "cpu_seconds" in sweep else sweep.iloc[:0]
    glue = {
        "repro_dataset": corpus_name(here.dataset),
        "repro_size": f"width {here.hidden_size}, {here.num_layers} layers, {here.num_heads} heads, "
        f"{here.max_len} tokens",
        "repro_run_cpu_hours": fmt(float(done.cpu_seconds.sum()) / 3600, 1),
        "repro_probe_pct": fmt(float(done.probe_cpu_seconds.sum() / done.cpu_seconds.sum()), 0, percent=True)
        if len(done)
        else "n/a",
        "repro_lock": lock,
        "repro_profile": profile,
        "repro_device": "a CPU" if device_name() == "cpu" else f"a GPU ({device_name().removeprefix('cuda:')})",
        "repro_threads": resolve_config(MLM_ARCH, profile).threads,
        "repro_code_hash": code_hash(),
        "repro_n_runs": len(sweep),
        "repro_paper_width": paper["hidden_size"],
        "repro_paper_layers": paper["num_layers"],
        "repro_paper_heads": paper["num_heads"],
        "repro_paper_tokens": paper["max_len"],
        "repro_paper_steps": paper["max_steps"],
        "repro_paper_seeds": len(experiments.SWEEP_DEFAULTS["paper"]["seeds"]),
    }
    shown = runs_shown(sweep)
    defaults, grids = profile_tables()
    sizes, chapter_runs = preset_tables()
    scales = experiments.verdict_scales(profile, dataset=dataset)
    glue.update(multiplicity(len(scales)))
    glue["repro_n_claims"] = sum(source.claim for source in experiments.VERDICT_RUNS.values())
    glue["repro_n_checks"] = len(scales) - glue["repro_n_claims"]
    section_tables = [
        Table("repro_environment", env),
        Table("repro_runs", shown, digits=4, formats={"τ": fmt_setting}),
        Table("repro_verdict_scales", scales.assign(verdict=scales.verdict.map(VERDICT_LABELS))),
        Table("repro_profile_defaults", defaults),
        Table("repro_profile_grids", grids),
        Table("repro_presets", sizes),
        Table("repro_run_presets", chapter_runs),
    ]
    for name, folder in CHECK_FOLDERS.items():
        table, meta = check_record(folder)
        relation = record_relation(profile, table, meta, dataset)
        glue.update(_check_glue(name, table, meta, relation))
        shown_check = (
            table[table.verdict != "regime"]
            if table is not None
            else pd.DataFrame([dict(verdict="none recorded", status="", effect="", n="", regime="")])
        )
        verdict = shown_check.verdict.map(lambda v: VERDICT_LABELS.get(v, v))
        stale = {v: RELATION_NOTES[r] for v, r in relation.items() if r.startswith("earlier")}
        note = shown_check.verdict.map(lambda v: stale.get(v, ""))  # noqa: B023 (used at once)
        shown_check = shown_check.assign(status=shown_check.status + note)
        columns = ["verdict", "status", "effect", "n", "regime"]
        section_tables.append(Table(f"repro_{name}_verdicts", shown_check.assign(verdict=verdict)[columns]))
    return Section("reproducibility", glue, [], section_tables, [])
