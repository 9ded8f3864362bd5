"""Command line: ``attnrank train`` trains (or loads) one run; ``attnrank sweep`` trains the book's grid;
``attnrank runs`` lists the store; ``attnrank recipe`` runs the recipe study; ``attnrank gpu-check`` the device
check; ``attnrank verdicts`` writes every chapter's verdict. What a book build trains and executes before its pages
are read is :mod:`.build`, called by the Sphinx extension.

Bad input (a wrong option, a value of the wrong type, an invalid setting, an unusable
``ATTNRANK_RUNS``) gives a one-line message on stderr, starting with the parameter's name,
and exit status 2, no usage block and no traceback; also when a grid worker finds it. A
sweep whose runs raised names them on one line, with exit status 1.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import re
import sys

import pandas as pd

from ..book import built_profile, published_verdicts
from ..core.architectures import architecture
from ..core.data import absolute_path_settings
from ..core.errors import ConfigError, SweepFailed, check_choice, check_positive_int
from ..core.profiles import ALL_ARCHS, check_dataset, resolve_profile
from ..runs.experiments import VERDICT_RUNS, book_runs, design_digest, verdict_chapters
from ..runs.grid import EXECUTORS, default_workers, plan, preflight, sweep
from ..runs.store import load_runs, run, runs_dir
from ..sections import learned, recipe
from .build import terminate_as_interrupt

__all__ = ["main"]


def _train(args) -> int:
    overrides = {
        k: getattr(args, k)
        for k in (
            "tau",
            "num_heads",
            "head_dim",
            "seed",
            "max_steps",
            "dataset",
            "hidden_size",
            "num_layers",
            "qk_init_scale",
            "qk_lr_scale",
            "qk_decay_scale",
            "adam_epsilon",
            "max_grad_norm",
        )
    }
    r = run(arch=args.arch, profile=args.profile, force=args.force, progress=not args.quiet, **overrides)
    s, c = r.summary, r.config
    print(f"\nrun {r.path}")
    if r.fresh:
        print(f"  trained now, in {s['wall_seconds']:.1f} s")
    else:
        when = str(s.get("finished_at") or "an earlier session").replace("T", " ")
        print(
            f"  read from the store, nothing recomputed: trained {when} in {s['wall_seconds']:.1f} s "
            "(--force trains it again)"
        )
    print(
        f"  {c['arch']} ({architecture(c['arch']).objective}), profile {c['profile']}, tau {c['tau']:g}, "
        f"head_dim {c['head_dim']} ({c['num_heads']} heads x {c['num_layers']} layers), seed {c['seed']}, {s['device']}"
    )
    scales = {k: c.get(k, 1.0) for k in ("qk_init_scale", "qk_lr_scale")}
    if any(v != 1.0 for v in scales.values()):
        print(f"  query/key initial scale {scales['qk_init_scale']:g}, learning-rate scale {scales['qk_lr_scale']:g}")
    print(
        f"  status {s['status']}"
        + (f" at step {s['failure']['step']}: {s['failure']['reason']}" if s["failure"] else "")
    )
    print(f"  {'measure':<20}{'initial':>10}{'final':>10}")
    print(f"  {'validation loss':<20}{_number(s['initial_val_loss'], 4)}{_number(s['final_val_loss'], 4)}")
    for m, v in s["initial_rank"].items():
        print(f"  {m:<20}{_number(v, 3)}{_number(s['final_rank'][m], 3)}")
    print(
        f"  wall time {s['wall_seconds']:.1f} s ({s['steps']} steps; rank probes {s['probe_seconds']:.1f} s, "
        f"validation {s.get('validation_seconds', 0.0):.1f} s)"
    )
    return 0


def _number(value, digits: int) -> str:
    """``value`` right-aligned in 10 columns, or ``missing`` (a failed run's final values)."""
    if value is None or value != value:
        return f"{'missing':>10}"
    return f"{value:>10.{digits}f}"


def _runs(args) -> int:
    df = load_runs(current_code=not args.all)
    if df.empty:
        print(f"no runs in {runs_dir()}")
        return 0
    cols = [
        "key",
        "arch",
        "profile",
        "tau",
        "head_dim",
        "seed",
        "status",
        "initial_val_loss",
        "final_val_loss",
        "initial_rank_rtol_1e-2",
        "final_rank_rtol_1e-2",
        "wall_seconds",
    ]
    print(df[[c for c in cols if c in df]].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    return 0


class _InputError(Exception):
    """A command-line error found by argparse."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, no usage block; main() prints it and returns 2
        raise _InputError(message)


def _typed(kind: type):
    """An argparse ``type`` that names what it expected."""

    def convert(text: str):
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"got {text!r}; expected {'an integer' if kind is int else 'a number'}"
            ) from None

    convert.__name__ = kind.__name__
    return convert


def _one_line(message: str) -> str:
    """``argument --head-dim: ...`` -> ``head_dim: ...``, all on one line."""
    message = re.sub(
        r"^argument (?:-\w+/)?(?:--)?([\w-]+)(?:/\S+)?: ", lambda m: m.group(1).replace("-", "_") + ": ", message
    )
    return " ".join(message.split())


def _attach_negative_numbers(argv: list[str], numeric: set[str]) -> list[str]:
    """``--tau -inf`` -> ``--tau=-inf``: argparse takes a value starting with ``-`` for an option."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] in numeric and i + 1 < len(argv) and argv[i + 1].startswith("-"):
            try:
                float(argv[i + 1])
            except ValueError:
                pass
            else:
                out.append(f"{argv[i]}={argv[i + 1]}")
                i += 2
                continue
        out.append(argv[i])
        i += 1
    return out


def _sweep(args) -> int:
    check_choice("executor", args.executor, EXECUTORS)  # before a dry run too: it prints the executor's plan
    if args.threads_per_worker is not None:
        # the chapters resolve their runs with the same variable, or they would not find these runs
        os.environ["ATTNRANK_THREADS"] = str(check_positive_int("threads_per_worker", args.threads_per_worker))
    if args.workers is not None:
        check_positive_int("workers", args.workers)
    if args.dataset is not None:
        # the chapters resolve their runs with the same variable, or they would not find these runs
        os.environ["ATTNRANK_DATASET"] = check_dataset(args.dataset)
    profile = resolve_profile(args.profile)
    chapters = [c.strip() for c in args.chapters.split(",") if c.strip()] if args.chapters is not None else None
    if chapters == []:  # "--chapters ''" is no chapter, not every chapter
        raise ConfigError(
            "chapters", f"got {args.chapters!r}; expected comma-separated chapter names (or leave it out: all)"
        )
    configs = book_runs(profile, chapters, dataset=args.dataset)
    if args.dry_run:
        table = plan(configs)
        todo = table[~table.stored]
        preflight([c for c, stored in zip(configs, table.stored, strict=True) if not stored])  # as the sweep would
        print(f"{len(table)} runs of the {profile} profile, {int(table.stored.sum())} stored, {len(todo)} to train")
        if len(todo):
            print(todo.drop(columns=["stored"]).to_string(index=False))
        if args.executor == "process":
            print(
                f"process pool: {args.workers or default_workers(int(table.threads.max()) if len(table) else 1)} workers"
            )
        return 0
    if args.threads_per_worker is not None:
        print(
            f"runs use {args.threads_per_worker} thread(s); build the book with ATTNRANK_THREADS="
            f"{args.threads_per_worker} so that the chapters find them"
        )
    if args.dataset is not None:
        print(
            f"runs train on {os.environ['ATTNRANK_DATASET']}; build the book with ATTNRANK_DATASET="
            f"{os.environ['ATTNRANK_DATASET']} so that the chapters find them"
        )
    sweep(configs, executor=args.executor, workers=args.workers, address=args.address, desc=f"{profile} runs")
    return 0


def _recipe(args) -> int:
    check_choice("executor", args.executor, EXECUTORS)
    profile = resolve_profile(args.profile)
    archs = ALL_ARCHS if args.arch is None else (args.arch,)
    for a in archs:
        recipe.variants(a, profile)  # checks arch and profile before anything is trained
    return recipe.run(profile, archs, executor=args.executor, workers=args.workers, out=args.out, dry_run=args.dry_run)


def _gpu_check(args) -> int:
    check_choice("executor", args.executor, EXECUTORS)
    paths = learned.gpu_check(
        args.out, args.profile, seeds=args.seeds, max_steps=args.max_steps, executor=args.executor
    )
    print(paths["verdicts"].read_text(), end="")
    print(f"wrote {', '.join(str(p) for p in paths.values())}")
    return 0


def verdict_rows(profile: str = "auto", dataset: str | None = None, chapters=None, toy_seed: int | None = None):
    """Every chapter's verdicts at ``profile`` (training what the store lacks), one row per verdict: ``verdict``,
    ``status``, ``effect``, ``n``, ``regime`` (the intro's brief clause) and ``finding``; and a row ``regime``
    whose ``finding`` is the regime the models reached (:mod:`attnrank.sections.learned`). What ``attnrank verdicts``
    writes; a background build's verdicts are recorded with it (``data/scale/``).

    The chapters and their verdicts are those of :data:`attnrank.runs.experiments.VERDICT_RUNS`, in its order;
    ``chapters`` (names of its chapters) keeps those alone, without the regime row; ``toy_seed`` is the first seed of
    the chapters computed on the toy task (their ``seed`` parameter; ``None``: the chapter's default).

    Raises:
        ConfigError: naming ``profile``, ``dataset``, or ``chapters`` for a chapter without verdicts.
        RuntimeError: when a chapter publishes other verdicts than the registry declares.
    """
    profile = resolve_profile(profile)
    dataset = None if dataset is None else check_dataset(dataset)
    registry = verdict_chapters()
    unknown = sorted(set(chapters or ()) - set(registry))
    if unknown:
        raise ConfigError("chapters", f"got {unknown}; allowed values: {', '.join(registry)}")
    rows = []
    for chapter, names in registry.items():
        if chapters and chapter not in chapters:
            continue
        module = importlib.import_module(f"{__package__.rpartition('.')[0]}.sections.{chapter}")
        takes = inspect.signature(module.section).parameters
        given = {"dataset": dataset, "seed": toy_seed}
        sec = module.section(profile, **{k: x for k, x in given.items() if k in takes and x is not None})
        if [v.name for v in sec.verdicts] != list(names):
            raise RuntimeError(
                f"chapter {chapter!r} published the verdicts {[v.name for v in sec.verdicts]}, and "
                f"attnrank.runs.experiments.VERDICT_RUNS declares {list(names)}; make them agree"
            )
        for v in sec.verdicts:
            rows.append(
                dict(
                    verdict=v.name,
                    status=v.status,
                    effect=v.effect,
                    n=v.n,
                    regime=v.brief or v.regime,
                    finding=v.finding,
                )
            )
    if not chapters:
        regime = learned.section(profile, dataset=dataset).glue["learned_regime"]
        rows.append(dict(verdict="regime", status="", effect="", n="", regime="", finding=str(regime)))
    return pd.DataFrame(rows)


def _check_output_file(path: str, name: str = "out") -> None:
    """Refuse, before any compute, an output file whose folder is missing or not writable, or that is a folder."""
    import tempfile

    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ConfigError(name, f"got {path!r}, a folder; expected a file to write (for example verdicts.csv)")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise ConfigError(
            name, f"cannot write into {folder!r} ({exc.strerror or exc}); expected a file in a writable folder"
        ) from None


def _verdicts(args) -> int:
    _check_output_file(args.out)
    from ..analysis.frozen import frozen_rules

    if args.from_build and args.chapters:
        raise ConfigError("chapters", f"got {args.chapters!r} with --from-build; a build's verdicts are read whole")
    if args.from_build:
        table = published_verdicts(os.path.join(args.from_build, "jupyter_execute"))
    else:
        chapters = [c.strip() for c in args.chapters.split(",") if c.strip()] if args.chapters else None
        table = verdict_rows(args.profile, args.dataset, chapters, args.toy_seed)
    rules = frozen_rules()
    table["rule"] = table.verdict.map(dict(zip(rules.verdict, rules.version))).astype("Int64")
    built = built_profile(os.path.join(args.from_build, "jupyter_execute")) if args.from_build else args.profile
    table["design"] = table.verdict.map(lambda v: design_digest(v, built) if v in VERDICT_RUNS else "")
    if args.chapters and os.path.isfile(args.out):  # replace these chapters' rows of a recorded table, keep the rest
        kept = pd.read_csv(args.out, keep_default_na=False, dtype=str)
        table = pd.concat([kept[~kept.verdict.isin(table.verdict)], table.astype(str).replace("<NA>", "")])
        order = {v: i for i, v in enumerate([*VERDICT_RUNS, "regime"])}
        table = table.sort_values("verdict", key=lambda c: c.map(order), kind="stable")
    table.to_csv(args.out, index=False)
    for r in table.itertuples():
        print(f"{r.verdict}: {r.status or r.finding}")
    print(f"wrote {args.out}")
    return 0


def _close_progress_bars() -> None:
    """Close every open tqdm progress bar (the Trainer's, a sweep's), as they would be closed on a normal exit."""
    from tqdm import tqdm

    for bar in list(getattr(tqdm, "_instances", ())):
        bar.close()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``attnrank`` command; returns the exit status (2 for bad input)."""
    parser = _Parser(prog="attnrank", description=__doc__.splitlines()[0].replace("``", ""))  # plain text, not reST
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train (or load) one run and print its summary")
    numeric: set[str] = set()

    def number(flag: str, kind: type, **kw):
        numeric.add(flag)
        t.add_argument(flag, type=_typed(kind), default=None, **kw)

    t.add_argument("--arch", required=True, help=f"{', '.join(ALL_ARCHS)}")
    t.add_argument("--profile", default="auto", help="ci, quick, paper, scale or auto (default)")
    number("--tau", float, help="temperature ratio: logits / (tau * sqrt(head_dim))")
    number("--num-heads", int)
    number("--head-dim", int)
    number("--hidden-size", int)
    number("--num-layers", int)
    number("--seed", int)
    number("--max-steps", int)
    number("--qk-init-scale", float, help="factor on the initial query/key weights and biases (default 1)")
    number("--qk-lr-scale", float, help="factor on the learning rate of the query/key parameters (default 1)")
    number("--qk-decay-scale", float, help="factor on the weight decay of the query/key weights (default 1; 0: none)")
    number("--adam-epsilon", float, help="Adam's epsilon (default 1e-8)")
    number("--max-grad-norm", float, help="gradient clipping norm (default 1; 0: no clipping)")
    t.add_argument(
        "--dataset",
        default=None,
        help="shakespeare (offline default) or hf:NAME[:CONFIG] (a hub dataset or a local folder)",
    )
    t.add_argument("--force", action="store_true", help="train again even if stored")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(func=_train)
    s = sub.add_parser("sweep", help="train (or find) every run the book's chapters need, before building it")
    s.add_argument("--profile", default="auto", help="ci, quick, paper, scale or auto (default)")
    s.add_argument(
        "--dataset",
        default=None,
        help="shakespeare, stdlib or hf:NAME[:CONFIG] (a hub dataset or a local folder); default $ATTNRANK_DATASET or shakespeare",
    )
    s.add_argument("--chapters", default=None, help="comma-separated chapter names (default: all)")
    s.add_argument("--executor", default="process", help="serial, process (default, a local pool) or ray")
    s.add_argument(
        "--workers",
        type=_typed(int),
        default=None,
        help="concurrent runs (process: default one per GPU, else CPU cores / threads)",
    )
    s.add_argument(
        "--threads-per-worker",
        type=_typed(int),
        default=None,
        help="torch threads per run (default 1, or $ATTNRANK_THREADS); part of each run's key",
    )
    s.add_argument("--address", default=None, help="Ray address: local (default), auto, or ray://host:10001")
    s.add_argument(
        "--dry-run",
        action="store_true",
        help="list the runs to train and how many are stored, after the checks the sweep makes first (the "
        "store writable, the data readable and long enough)",
    )
    s.set_defaults(func=_sweep)
    rc = sub.add_parser("recipe", help="the recipe study: train its runs, write data/recipe/<profile>.csv, print it")
    rc.add_argument("--profile", default="quick", help="the profile whose recipe is studied (default quick)")
    rc.add_argument("--arch", default=None, help=f"{', '.join(ALL_ARCHS)} (default: all three)")
    rc.add_argument("--executor", default="process", help="serial, process (default, a local pool) or ray")
    rc.add_argument("--workers", type=_typed(int), default=None, help="concurrent runs (default: CPU cores)")
    rc.add_argument("--out", default=None, help="the table to write (default data/recipe/<profile>.csv)")
    rc.add_argument("--dry-run", action="store_true", help="list the study's runs and how many are stored")
    rc.set_defaults(func=_recipe)
    g = sub.add_parser(
        "gpu-check",
        help="train the runs the learned gate and the temperature's loss effect need (both models, tau 1 and 1e-3) "
        "and write their summaries and verdicts to a folder",
    )
    g.add_argument("out", help="the folder to write runs.csv, targets.csv and verdicts.md to")
    g.add_argument("--profile", default="paper", help="the profile of the runs (default paper)")
    g.add_argument("--seeds", type=_typed(int), default=3, help="seeds per setting (default 3)")
    g.add_argument("--max-steps", type=_typed(int), default=None, help="train fewer steps than the profile's")
    g.add_argument("--executor", default="process", help="serial or process (default: one run per GPU at a time)")
    g.set_defaults(func=_gpu_check)
    v = sub.add_parser("verdicts", help="compute every chapter's verdict (training what is missing) and write a CSV")
    v.add_argument("out", help="the CSV file to write")
    v.add_argument("--profile", default="auto", help="ci, quick, paper, scale or auto (default)")
    v.add_argument(
        "--dataset", default=None, help="shakespeare, stdlib or hf:NAME[:CONFIG] (default: ATTNRANK_DATASET)"
    )
    v.add_argument(
        "--from-build", default=None, help="read the verdicts a built book published (its _build folder) instead"
    )
    v.add_argument(
        "--chapters",
        default=None,
        help="comma-separated chapters: only their verdicts, which replace their rows in an existing CSV",
    )
    v.add_argument(
        "--toy-seed", type=_typed(int), default=None, help="first seed of the toy task (the target chapter's seed)"
    )
    v.set_defaults(func=_verdicts)
    r = sub.add_parser("runs", help="list the stored runs")
    r.add_argument("--all", action="store_true", help="include runs made by older code")
    r.set_defaults(func=_runs)
    argv = _attach_negative_numbers(list(sys.argv[1:] if argv is None else argv), numeric)
    absolute_path_settings()  # relative ATTNRANK_DATA/RUNS/DATASET: against the directory we started in
    try:
        args = parser.parse_args(argv)
        terminate_as_interrupt()  # SIGTERM as Ctrl-C: a sweep's pool ends its workers (they were left training)
        return args.func(args)
    except (_InputError, ConfigError) as exc:
        print(f"attnrank: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except SweepFailed as exc:  # the runs that did not finish, named; every other run is stored
        print(f"attnrank: error: {_one_line(str(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C: one line, not a traceback through torch (a run is stored only complete)
        _close_progress_bars()  # each ends its line, so the message stands on its own and no bar redraws after it
        print("attnrank: interrupted: every finished run is stored; the unfinished one was not", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader stopped reading (``attnrank runs | head``): no traceback
        # https://docs.python.org/3/library/signal.html#note-on-sigpipe
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
