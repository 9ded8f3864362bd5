"""The one record every chapter module returns: a chapter's numbers, figures, tables and verdicts.

A chapter module (:mod:`attnrank.sections.dynamics`, :mod:`attnrank.sections.temp`, ...) selects its runs, computes
its facts and returns a :class:`Section`; the chapter's notebook hands it to
:func:`attnrank.book.publish`, which glues every part under its name, so the chapter's prose pastes
them (``{glue:text}`` for a number, ``{glue:figure}`` for a numbered figure whose caption and alt text the
chapter writes, ``{glue}`` for a table); one code cell checks the parameters and makes that call.

* :class:`Figure` - a matplotlib figure, the data it draws (published as a CSV file with a stable
  address, ``data/<name>.csv`` in the site) and the caption's words that depend on the result;
* :class:`Table` - a table for reading: labelled columns, one number format, no index;
* :class:`Verdict` - a verdict record: its status, the one-line finding the intro's table shows
  (effect with its interval, ``n``, the regime) and the full summary the chapter shows.

Nothing here computes: the records hold what the chapter modules computed and wrote.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from ..analysis.verdicts import INCONCLUSIVE, VERDICTS, Judgement
from ..core.errors import ConfigError
from ..core.profiles import ARCH_ORDER
from ..runs.experiments import P3_CONDITIONS
from ..words.glossary import ARCH_LABELS, ARCH_NAMES, MEASURE_LABELS, fmt_sci, fmt_setting, fmt_tau, largest_first

__all__ = [
    "Figure",
    "Table",
    "Verdict",
    "Section",
    "WORD_LIMIT",
    "by_measure_table",
    "have_units",
    "needed_text",
    "INITIAL_REGIME",
    "INITIAL_BRIEF",
    "gap_text",
    "worth",
    "regime_text",
    "regime_brief",
    "gate_text",
    "gate_quote",
    "run_set_text",
    "RUN_SET_FIELDS",
    "runs_caption",
    "diverged_marks",
    "seeds_per_setting",
    "sweep_facts",
    "steps_text",
    "divergence",
]

#: The most words of a verdict's one-line finding (the intro's table reads in one screen).
WORD_LIMIT = 30


def _check_name(name: str, what: str) -> str:
    if not isinstance(name, str) or not name or not all(c.isalnum() or c == "_" for c in name):
        raise ConfigError(what, f"got {name!r}; expected a non-empty name of letters, digits and underscores")
    return name


@dataclass
class Figure:
    """One figure of a chapter.

    Its caption and alt text are the chapter's Markdown (``{glue:figure} name`` with ``:alt:``), with the
    numbers pasted in; only the words that depend on the result travel here.

    Attributes:
        name: its glue key and file name (letters, digits, underscores).
        fig: the matplotlib figure (drawn at the column's width, see :mod:`attnrank.plots.style`).
        data: the numbers the figure draws, one row per drawn point, line or cell.
        source: the caption's last words, worded from the result: which runs the numbers come from
            (:func:`runs_caption`), or ``""``; published with the link to ``data`` as ``<name>__source``.
    """

    name: str
    fig: object
    data: pd.DataFrame
    source: str = ""

    def __post_init__(self):
        _check_name(self.name, "name")


@dataclass
class Table:
    """One table of a chapter, ready for a reader.

    Attributes:
        name: its glue key.
        frame: the rows, with the column names a reader sees (units in brackets); shown without
            its index.
        digits: decimals of every float column not in ``formats`` (one number format per table).
        formats: per column, a function writing one value (e.g. :func:`attnrank.words.glossary.fmt_setting`).
    """

    name: str
    frame: pd.DataFrame
    digits: int = 2
    formats: dict = field(default_factory=dict)

    def __post_init__(self):
        _check_name(self.name, "name")


@dataclass
class Verdict:
    """A chapter's verdict on one claim.

    Attributes:
        name: its glue prefix (``{name}_status``, ``{name}_summary``, ...).
        status: one of :data:`attnrank.analysis.verdicts.VERDICTS`, on the primary measure.
        finding: the one-line finding the intro's verdict table shows (at most :data:`WORD_LIMIT`
            words, numbers included).
        effect: the effect with its 95% interval, for the intro's table.
        n: the independent units the verdict rests on, in words (``"28 runs"``).
        regime: one short computed clause saying where the verdict was computed (the models'
            loss against count models; the setting of a verdict without trained models).
        summary: the full sentences the chapter shows under its verdict.
        by_measure: the same rule with every rank measure, ``{measure: status}`` (empty when the
            rule does not read a rank).
        brief: the regime as the intro's table shows it (:func:`regime_brief` for trained models: whether
            each model has learned, no more; :data:`INITIAL_BRIEF`); empty when ``regime`` is short enough itself.
        gate: for a verdict on trained models, its learned gate as the build's check reads it (:func:`gate_quote`);
            empty otherwise.
    """

    name: str
    status: str
    finding: str
    effect: str
    n: str
    regime: str
    summary: str
    by_measure: dict = field(default_factory=dict)
    brief: str = ""
    gate: str = ""

    def __post_init__(self):
        _check_name(self.name, "name")
        if self.status not in VERDICTS:
            raise ConfigError("status", f"got {self.status!r}; allowed values: {', '.join(VERDICTS)}")
        if not isinstance(self.regime, str) or not self.regime.strip():
            raise ConfigError("regime", f"got {self.regime!r}; expected one computed clause")
        words = len(self.finding.split())
        if not words or words > WORD_LIMIT:
            raise ConfigError("finding", f"got {words} words; expected 1 to {WORD_LIMIT}: {self.finding!r}")

    def parts(self) -> dict:
        """What :func:`attnrank.book.publish_verdict` glues, by suffix: ``status``, ``finding``, ``effect``,
        ``units`` (the ``n`` it rests on), ``regime``, ``regime_brief`` (``brief``, else ``regime``),
        ``summary`` and, for a verdict on trained models, ``gate``."""
        return {
            "status": self.status,
            "finding": self.finding,
            "effect": self.effect,
            "units": self.n,
            "regime": self.regime,
            "regime_brief": self.brief or self.regime,
            "summary": self.summary,
        } | ({"gate": self.gate} if self.gate else {})


@dataclass
class Section:
    """What one chapter shows: ``glue`` (name -> value for ``{glue:text}``), its figures, tables and
    verdicts, each published under its own name by :func:`attnrank.book.publish`.

    Raises:
        ConfigError: naming ``glue`` when two parts share a name.
    """

    chapter: str
    glue: dict = field(default_factory=dict)
    figures: list = field(default_factory=list)
    tables: list = field(default_factory=list)
    verdicts: list = field(default_factory=list)

    def __post_init__(self):
        names = list(self.glue) + [f.name for f in self.figures] + [t.name for t in self.tables]
        names += [f"{v.name}_{p}" for v in self.verdicts for p in [*v.parts(), "badge"]]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ConfigError("glue", f"names used twice in chapter {self.chapter!r}: {dup}")

    def figure(self, name: str) -> Figure:
        """The figure named ``name``.

        Raises:
            ConfigError: naming ``name``, with the figures there are.
        """
        for f in self.figures:
            if f.name == name:
                return f
        raise ConfigError("name", f"got {name!r}; figures: {', '.join(f.name for f in self.figures)}")

    def verdict(self, name: str) -> Verdict:
        """The verdict named ``name`` (raises :class:`ConfigError` naming ``name``)."""
        for v in self.verdicts:
            if v.name == name:
                return v
        raise ConfigError("name", f"got {name!r}; verdicts: {', '.join(v.name for v in self.verdicts)}")

    def merge(self, other: Section) -> Section:
        """This section with the parts of ``other`` added (a chapter made of several computations)."""
        return Section(
            self.chapter,
            {**self.glue, **other.glue},
            self.figures + other.figures,
            self.tables + other.tables,
            self.verdicts + other.verdicts,
        )


def have_units(v: Judgement) -> int:
    """The units a verdict already rests on, in its ``needed_unit``: seeds per arm for a two-arm
    comparison (half the runs), otherwise the estimate's ``n`` (runs, or paired seeds)."""
    return v.estimate.n // 2 if v.needed_unit == "seeds per arm" else v.estimate.n


def needed_text(v: Judgement, what: str = "the pre-registered effect") -> str:
    """The runs an unresolved verdict needs, for prose: ``"about 12 seeds per arm would resolve <what>"``;
    when that is no more than it already has, ``"the 5 seeds per arm here would resolve <what>, so the
    effect is smaller than that"``; ``""`` for a resolved verdict (supported or not supported)."""
    if v.status != INCONCLUSIVE or v.needed is None:
        return ""
    have = have_units(v)
    if v.needed <= have:
        return f"the {have} {v.needed_unit} here would already resolve {what}, so the effect is smaller than that"
    return f"about {v.needed} {v.needed_unit} would resolve {what}"


def by_measure_table(name: str, verdict: Verdict, primary: str, results: dict | None = None) -> Table:
    """The verdict of one pre-registered rule under every rank measure, for reading: one row per measure of
    ``verdict.by_measure`` (the primary one marked) with the status the chapter's headline and the conventions
    page state (after the learned gate, for a verdict on trained models).

    Args:
        name: the table's glue key.
        verdict: the chapter's :class:`Verdict`; its ``by_measure`` holds each measure's status.
        primary: the measure the headline verdict reads.
        results: ``{measure: result with a status}``, the rule's outcome before the learned gate; where the gate
            changed it for some measure, a column ``"rule outcome before the learned gate"`` shows it.

    Raises:
        ConfigError: naming ``by_measure`` when the primary measure's status is not the headline's
            ``verdict.status`` (the table and the headline would disagree) or ``results`` lacks a measure.
    """
    gated = dict(verdict.by_measure)
    if gated.get(primary) != verdict.status:
        raise ConfigError(
            "by_measure",
            f"got {gated.get(primary)!r} for the primary measure {primary!r}; the headline verdict is {verdict.status!r}",
        )
    frame = {
        "measure": [MEASURE_LABELS[m] + (" (primary)" if m == primary else "") for m in gated],
        "verdict under this measure": list(gated.values()),
    }
    if results is not None:
        missing = sorted(set(gated) - set(results))
        if missing:
            raise ConfigError("by_measure", f"got no rule outcome for {missing}")
        before = [results[m].status for m in gated]
        if before != frame["verdict under this measure"]:
            frame["rule outcome before the learned gate"] = before
    return Table(name, pd.DataFrame(frame))


# --------------------------------------------------------------------------- the regime of a verdict, in words
#: The regime of a verdict that reads the initial rank of a sweep's runs, never a trained model.
INITIAL_REGIME = "at initialisation: the rank before any training"
#: :data:`INITIAL_REGIME` as the intro's table shows it (its note says what it means).
INITIAL_BRIEF = "at initialisation"


def gap_text(gap: float) -> str:
    """A loss minus a count model's loss (nats per token) in words before the model's name: ``"0.31 nats
    below"``, ``"0.45 nats above"``, ``"level with"`` (within 0.005) or ``"n/a"`` (missing)."""
    if gap is None or not math.isfinite(float(gap)):
        return "n/a"
    d = round(-float(gap), 2)
    if d == 0:
        return "level with"
    return f"{abs(d):.2f} nats {'below' if d > 0 else 'above'}"


def worth(gain: float, *, least: bool = False) -> str:
    """An attention ablation gain (nats per token, :func:`attnrank.analysis.ablation.attention_gain`) in words, as every
    regime clause states it: ``"attention worth 0.45 nats"`` (with ``least``, the worst run's: ``"attention worth
    at least 0.45 nats"``), ``"attention worth under 0.01 nats"`` (below 0.005), ``"content-free attention 0.02
    nats better"`` (a negative gain), ``"attention's worth n/a"``."""
    if gain is None or not math.isfinite(float(gain)):
        return "attention's worth n/a"
    gain = float(gain)
    if abs(gain) < 0.005:
        return "attention worth under 0.01 nats"
    if gain < 0:
        return f"content-free attention {-gain:.2f} nats better"
    return f"attention worth {'at least ' if least else ''}{gain:.2f} nats"


def regime_text(regime) -> str:
    """The regime of a verdict on trained models (an :class:`attnrank.analysis.baselines.Regime`), in one short
    clause for the chapter: the set of runs the learned gate read (:func:`run_set_text`), then per architecture (in
    the gate's order) its worst run's gap to the bigram count model and, when it has learned, what attention is worth
    in its worst run (:func:`worth`; the gate's numbers, as :func:`gate_text` states them); an architecture that has
    not learned is marked so. For example ``"τ = 1, head dimension 32, width 128, 4 layers, sequences of 128 tokens,
    1000 steps, seeds 0–3 (4 runs a model): GPT-2 at worst 0.31 nats below bigram, attention worth at least 0.45
    nats; ModernBERT at worst 0.45 nats above bigram, not learned"``.
    """
    numbers = _gate_numbers(regime)
    return f"{_reference_set(regime)}: {numbers}" if numbers else "no complete run"


def _gate_numbers(regime) -> str:
    gate, gains = regime.gate, regime.gains
    parts = []
    for a in _gate_order(gate):
        text = f"{ARCH_NAMES.get(a, a)} at worst {gap_text(gate.gaps[a])} bigram"
        text += ", not learned" if a in gate.not_learned else f", {worth(gains.get(a, math.nan), least=True)}"
        parts.append(text)
    return "; ".join(parts)


def _reference_set(regime) -> str:
    ref = regime.reference
    return run_set_text(ref) if ref is not None and len(ref) else fmt_tau(regime.reference_tau)


#: What :func:`run_set_text` names of a set of runs, in order: ``(column, words)``, ``words`` a template for the
#: column's values (``"1000"``, ``"16 and 32"``, ``"32 to 256"``).
RUN_SET_FIELDS = (
    ("tau", "τ = {}"),
    ("head_dim", "head dimension {}"),
    ("hidden_size", "width {}"),
    ("num_layers", "{} layers"),
    ("max_len", "sequences of {} tokens"),
    ("max_steps", "{} steps"),
    ("learning_rate", "learning rate {}"),
)


def _values_text(values: list, words: str) -> str:
    values = [fmt_setting(v) for v in values]
    return words.format(" and ".join(values) if len(values) < 3 else f"{values[0]} to {values[-1]}")


def _seeds_text(seeds: list) -> str:
    seeds = sorted(int(s) for s in seeds)
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"seeds {seeds[0]}–{seeds[-1]}"
    return "seeds " + ", ".join(map(str, seeds))


def run_set_text(runs: pd.DataFrame) -> str:
    """A set of runs named so that a reader can tell it from any other set of the book: every setting of
    :data:`RUN_SET_FIELDS` the runs have (a setting on which the architectures differ is written per architecture),
    the training conditions of the theory notes' P3 where the runs were trained under them, the seeds and the count.

    Args:
        runs: a wide run table (one row per run; ``arch``, ``seed`` and the columns of :data:`RUN_SET_FIELDS` that
            it has).

    For example ``"τ = 1, head dimension 32, width 128, 4 layers, sequences of 128 tokens, 1000 steps, learning rate
    0.002, seeds 0–2 (3 runs a model)"``; ``"no runs"`` for an empty table.
    """
    d = runs.drop_duplicates("key") if "key" in runs else runs
    if not len(d):
        return "no runs"
    archs = [a for a in ARCH_ORDER if a in set(d.arch)] + sorted(set(d.arch) - set(ARCH_ORDER))
    words = []
    for column, write in RUN_SET_FIELDS:
        if column not in d:
            continue
        per = {a: sorted(set(d[d.arch == a][column].dropna())) for a in archs}
        texts = {a: _values_text(v, write) for a, v in per.items() if v}
        if len(set(texts.values())) == 1:
            words.append(next(iter(texts.values())))
        elif texts:
            words.append(", ".join(f"{t} ({ARCH_NAMES.get(a, a)})" for a, t in texts.items()))
    if _under_p3(d):
        words.append(_p3_words())
    words.append(_seeds_text(d.seed.unique()))
    counts = d.groupby("arch").size()
    n = _runs(int(counts.iloc[0])) + " a model" if counts.nunique() == 1 else _runs(len(d))
    return ", ".join(words) + f" ({n})"


def _p3_words() -> str:
    eps = fmt_sci(P3_CONDITIONS["adam_epsilon"], 1)
    return (
        f"trained under P3's conditions (Adam's ε {eps}, no gradient clipping, no decay of the query and key weights)"
    )


def _under_p3(runs: pd.DataFrame) -> bool:
    return all(c in runs and bool((runs[c].astype(float) == float(v)).all()) for c, v in P3_CONDITIONS.items())


def gate_quote(regime) -> str:
    """What the learned gate of ``regime`` says, as the book build's check reads it (JSON): ``set``, the words
    naming the runs it read (:func:`run_set_text`), and ``numbers``, each architecture's worst gap and attention
    worth in words. Two pages that quote the gate over sets of one name must quote the same numbers
    (:mod:`attnrank.sphinxext.gluecheck`)."""
    import json

    return json.dumps({"set": _reference_set(regime), "numbers": _gate_numbers(regime)}, ensure_ascii=False)


def regime_brief(regime) -> str:
    """The regime of a verdict on trained models (an :class:`attnrank.analysis.baselines.Regime`) as the intro's
    table shows it: a short marker saying whether each model has learned (the learned gate's verdict), nothing
    else. The chapter's :func:`regime_text` adds each model's gap to its bigram count model, what attention is
    worth and how many runs; the intro states the grid's models against their count models once, in a note under
    its table.

    For example ``"trained, neither learned"``, ``"trained, both learned"``, ``"trained, GPT-2 learned, BERT not"``,
    ``"trained, BERT not learned"`` (one architecture); ``"no complete run"`` when the gate has no architecture.
    """
    gate = regime.gate
    order = _gate_order(gate)
    if not order:
        return "no complete run"
    yes = [ARCH_NAMES.get(a, a) for a in order if a not in gate.not_learned]
    no = [ARCH_NAMES.get(a, a) for a in order if a in gate.not_learned]
    if len(order) == 1:
        return f"trained, {(yes or no)[0]} {'learned' if yes else 'not learned'}"
    if not no:
        return "trained, both learned" if len(order) == 2 else "trained, all learned"
    if not yes:
        return "trained, neither learned" if len(order) == 2 else "trained, none learned"
    return f"trained, {', '.join(yes)} learned, {', '.join(no)} not"


def _gate_order(gate) -> list:
    """The architectures of a learned gate in the order every regime clause names them: GPT-2, BERT, then others."""
    order = ARCH_ORDER
    return [a for a in order if a in gate.gaps] + [a for a in gate.gaps if a not in order]


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def gate_text(regime, runs_said: str | None = None) -> str:
    """The learned gate of a verdict (the ``gate`` of an :class:`attnrank.analysis.baselines.Regime`) in one or two
    sentences for its chapter: the rule, each architecture's gap to its bigram count model and what the gate
    changed. The rule is stated even when every model has learned. ``runs_said``: the runs the gate reads, in words
    (default: the stock runs at the reference temperature and the profile's head dimension)."""
    gate, reference_tau = regime.gate, regime.reference_tau
    said = runs_said or f"stock runs ({fmt_tau(reference_tau)}, at its profile's head dimension)"
    rule = (
        "The verdict counts an architecture only where its models have learned, the pre-registered target: every "
        f"one of its {said} ends "
        + (f"at least {fmt_setting(gate.margin)} nats " if gate.margin else "")
        + "below its bigram count model"
        + (f", with attention worth at least {fmt_setting(gate.worth)} nats" if gate.gains else "")
        + " (a model that does no better has not started to use its context)."
    )
    gaps = ", ".join(
        f"{ARCH_NAMES.get(a, a)}'s worst run {gap_text(g)} it"
        + (f" with {worth(gate.gains[a])}" if gate.gains and math.isfinite(gate.gains[a]) else "")
        for a, g in gate.gaps.items()
    )
    where = f"its runs at {_reference_set(regime)}"
    if not gate.not_learned:
        return f"{rule} Every architecture here has learned. Over {where}: {gaps}."
    names = " and ".join(ARCH_NAMES.get(a, a) for a in gate.not_learned)
    count = "count" if len(gate.not_learned) > 1 else "counts"
    text = f"{rule} Over {where}: {gaps}, so {names} {count} as inconclusive at this scale"
    if gate.changed:
        text += f"; on its statistics alone the verdict would be {gate.ungated}"
    return text + "."


# --------------------------------------------------------------------------- what chapters say about a set of runs
def seeds_per_setting(runs: pd.DataFrame) -> str:
    """How many seeds each setting of ``runs`` has, as text: ``"3"``, or ``"2 to 3"`` when settings differ (the
    default's head-dimension grid trains fewer seeds off the stock head dimension). A setting is the run's ``arch``,
    ``tau``, ``head_dim`` and ``max_len``, where present."""
    d = runs.drop_duplicates("key") if "key" in runs else runs
    keys = [c for c in ("arch", "tau", "head_dim", "max_len") if c in d]
    if not len(d) or not keys:
        return str(int(d.seed.nunique()))
    counts = d.groupby(keys).seed.nunique()
    lo, hi = int(counts.min()), int(counts.max())
    return str(hi) if lo == hi else f"{lo} to {hi}"


def runs_caption(runs: pd.DataFrame, profile: str) -> str:
    """The tail of a figure caption: ``"<profile> profile, N runs, S seeds per setting"`` for the runs
    (one row per run, with ``seed``) behind it (:func:`seeds_per_setting`)."""
    d = runs.drop_duplicates("key") if "key" in runs else runs
    return f"The {profile} profile, {len(d)} runs, {seeds_per_setting(d)} seeds per setting"


def diverged_marks(runs: pd.DataFrame, marks: str) -> str:
    """``" " + marks`` (the caption's words for how a figure draws a diverged run) where some run of ``runs`` did not
    complete, else ``""``: a caption names only the markers its figure shows."""
    return f" {marks}" if len(runs) and (runs.status != "complete").any() else ""


def sweep_facts(prefix: str, runs: pd.DataFrame, plan) -> dict:
    """The sweep's numbers a chapter glues, named ``{prefix}_<fact>``: ``taus`` and ``head_dims`` (the grids of
    ``plan``, a :class:`attnrank.runs.experiments.SweepPlan`, comma-separated), ``n_seeds`` and ``n_runs`` (the
    diverged ones: :func:`divergence`)."""
    return {
        f"{prefix}_taus": ", ".join(fmt_setting(t) for t in plan.taus),
        f"{prefix}_head_dims": ", ".join(str(h) for h in plan.head_dims),
        f"{prefix}_n_seeds": seeds_per_setting(runs),
        f"{prefix}_n_runs": len(runs),
    }


def steps_text(runs: pd.DataFrame, column: str = "max_steps") -> str:
    """The training steps of ``runs`` (columns ``arch`` and ``column``) in words: ``"1000"`` when every run
    trains as long, else per architecture, e.g. ``"1000 (GPT-2 and ModernBERT) and 500 (BERT)"``, longest first.

    Raises:
        ValueError: when ``runs`` is empty.
    """
    if runs.empty:
        raise ValueError("runs: empty; expected at least one run")
    steps = runs.groupby("arch")[column].agg(lambda s: "/".join(str(v) for v in sorted(set(s), reverse=True)))
    if steps.nunique() == 1:
        return str(steps.iloc[0])
    order = largest_first({a: int(v.split("/")[0]) for a, v in steps.items()})
    by_steps: dict[str, list[str]] = {}
    for a in order:  # architectures that train as long named together
        by_steps.setdefault(steps[a], []).append(ARCH_NAMES.get(a, a))
    return " and ".join(f"{v} ({' and '.join(names)})" for v, names in by_steps.items())


def divergence(runs: pd.DataFrame, prefix: str, *, listed: bool = True) -> dict:
    """The diverged runs of ``runs`` (status not ``"complete"``), said once, as glue for a sentence.

    ``{prefix}_n_failed`` is the count and ``{prefix}_diverged`` the words: ``"none diverged"``, or each
    diverged run, e.g. ``"1 diverged: GPT-2 (CLM) at τ = 1, head dimension 16, seed 2, at step 7 (loss is
    nan)"``; with ``listed=False`` only the count (``"1 diverged"``).
    """
    bad = runs[runs.status != "complete"]
    words = (
        []
        if not listed
        else [
            f"{ARCH_LABELS.get(r.arch, r.arch)} at {fmt_tau(r.tau)}"
            + (f", head dimension {r.head_dim}" if "head_dim" in bad else "")
            + f", seed {r.seed}"
            + (f", at step {int(r.failure_step)}" if pd.notna(getattr(r, "failure_step", None)) else "")
            + (f" ({r.failure_reason})" if isinstance(getattr(r, "failure_reason", None), str) else "")
            for r in bad.itertuples()
        ]
    )
    said = f"{len(bad)} diverged" + (": " + "; ".join(words) if listed else "") if len(bad) else "none diverged"
    return {f"{prefix}_n_failed": len(bad), f"{prefix}_diverged": said}
