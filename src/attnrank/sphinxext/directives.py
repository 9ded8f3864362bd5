"""The book's directives and roles: the build log, the findings box, the profile table, a setting's value, the
citation, and glued figures and tables numbered with the caption the chapter writes.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive, directives

from ..analysis.verdicts import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED
from ..book import published_verdicts
from ..cli.build import build_log_path
from ..core.errors import ConfigError
from ..core.profiles import ARCHS, MLM_ARCH, PROFILES, SCALE_FACTOR, resolve_config, resolve_profile
from ..runs.experiments import SWEEP_DEFAULTS, VERDICT_RUNS
from ..words.glossary import VERDICT_LABELS, per_arch

#: The class of the span that receives this build's time when the build ends.
THIS_BUILD = "attnrank-this-build"


class BuildLog(Directive):
    """``{attnrank-build-log}``: the last builds logged in :func:`build_log_path`, as a table.

    The page is read again whenever the log changes; its notebook is not executed again.
    Option ``:rows:`` (default 10).
    """

    option_spec = {"rows": directives.positive_int, "name": directives.unchanged}
    has_content = True

    def run(self):
        import csv

        env = self.state.document.settings.env
        path = build_log_path()
        env.note_dependency(str(path.resolve()))
        rows = []
        if path.exists():
            with path.open(newline="") as f:
                rows = list(csv.reader(f))
        # this build's own time is known only when it ends: the extension writes it into this span then
        # (attnrank.sphinxext.pages.fill_this_build)
        this = nodes.paragraph()
        this += nodes.inline(classes=[THIS_BUILD], text="This build's time is written here when it ends.")
        if len(rows) < 2:
            return [this]
        header = [BUILD_LOG_LABELS.get(c, c.replace("_", " ")) for c in rows[0]]
        return [_numbered(self, [_table(header, rows[1:][-self.options.get("rows", 10) :])], "build-log"), this]


class _findings(nodes.General, nodes.Element):
    """Where ``{attnrank-findings}`` stands until every page's glue is known (filled at ``doctree-resolved``)."""


#: The verdicts that are checks, not claims of the study (counted apart on the first screen).
CHECKS = tuple(v for v, source in VERDICT_RUNS.items() if not source.claim)


class Findings(Directive):
    """``{attnrank-findings}``: the book's findings in a box, computed from the verdicts every page published: how
    many claims are supported, not supported and inconclusive, which remain open, and the regime the models reached.
    The page is read again whenever a page's glue changes."""

    def run(self):
        env = self.state.document.settings.env
        folder = Path(env.mystnb_config.output_folder)
        for doc in sorted(env.found_docs):
            env.note_dependency(str(folder.joinpath(*doc.split("/")[:-1], doc.split("/")[-1] + ".glue.json")))
        return [_findings()]


#: The verdict whose finding the box states as the one that matters most: claim (iii), which turns on how rank is
#: counted.
HEADLINE_VERDICT = "temp"


#: Each recorded check (:data:`attnrank.sections.reproducibility.CHECK_FOLDERS`) as the findings box names it.
CHECK_NAMES = {
    "confirm": "On fresh seeds, with the frozen rules",
    "scale": f"At {SCALE_FACTOR} times the steps (the scale check)",
    "stdlib": "On a second corpus (the Python standard library)",
}


def check_sentence(name: str, claims, check, relation: dict, date: str = "") -> str:
    """What a recorded check found, in one sentence: of this build's ``claims`` (``verdict``, ``status``) that the
    check replicates (``relation``: :func:`attnrank.sections.reproducibility.record_relation`; only an independent
    verdict replicates: one that is the same computation or shares runs with this build's does not, one recorded under
    an earlier version of its rule is not compared), how many it gives the same status, each one it does not, named with both
    statuses, and how many are the same computation; for the confirmation, first its own count of the claims' statuses.
    ``check`` is its verdict table, ``None`` when not recorded; ``date`` the day it was recorded."""
    if check is None:
        return f"{CHECK_NAMES[name]}: not recorded."
    there = dict(zip(check.verdict, check.status, strict=True))
    here = dict(zip(claims.verdict, claims.status, strict=True))
    replicated = [v for v in here if relation.get(v, "independent") == "independent"]
    differ = [
        f"{VERDICT_LABELS.get(v, v)} ({here[v]} here, {there.get(v, 'not recorded')} there)"
        for v in replicated
        if there.get(v) != here[v]
    ]
    when = f", recorded {date}" if date else ""
    text = f"{CHECK_NAMES[name]}{when}: "
    if name == "confirm":  # the confirmation's own verdicts, counted as this build's are
        n = {st: sum(there.get(v) == st for v in here) for st in (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE)}
        text += (
            f"of the {len(here)} claims {n[SUPPORTED]} supported, {n[NOT_SUPPORTED]} not supported, "
            f"{n[INCONCLUSIVE]} inconclusive at this scale; "
        )
    text += f"{len(replicated) - len(differ)} of {len(replicated)} replicated verdicts agree"
    text += f"; they differ on {'; '.join(differ)}" if differ else ""
    stale = {v: relation[v] for v in here if str(relation.get(v, "")).startswith("earlier")}
    earlier = [VERDICT_LABELS.get(v, v) for v, r in stale.items() if r == "earlier rule"]
    redesigned = [VERDICT_LABELS.get(v, v) for v, r in stale.items() if r == "earlier design"]
    both = [VERDICT_LABELS.get(v, v) for v, r in stale.items() if r == "earlier rule and design"]
    partly = sum(relation.get(v) == "partly" for v in here)
    same = len(here) - len(replicated) - len(stale) - partly
    more = [f"{same} more {'repeats' if same == 1 else 'repeat'} this build's own computation"] if same else []
    more += [f"{partly} more {'shares' if partly == 1 else 'share'} runs with it"] if partly else []
    if more:
        text += f" ({' and '.join(more)}, so {'it does' if same + partly == 1 else 'they do'} not count)"
    if earlier:
        text += f"; not compared, recorded under an earlier version of its rule: {'; '.join(earlier)}"
    if redesigned:
        text += f"; not compared, recorded on an earlier design of its runs: {'; '.join(redesigned)}"
    if both:
        text += f"; not compared, recorded under an earlier version of its rule on an earlier design of its runs: {'; '.join(both)}"
    return text + "."


def findings_text(table, frozen=None, checks=None) -> tuple[str, str]:
    """The counts sentence, how many of the claims' rules were changed after looking (a frozen version above 1 in
    ``frozen``, :func:`attnrank.analysis.frozen.frozen_rules`), what each recorded check found (``checks``:
    ``{name: (verdict table or None, relation[, date recorded])}`` in the order of :data:`CHECK_NAMES`, :func:`check_sentence`), each
    status's claims by name and the headline verdict's finding (:data:`HEADLINE_VERDICT`), and the regime, of
    :func:`attnrank.book.published_verdicts`'s ``table``."""
    claims = table[(table.verdict != "regime") & ~table.verdict.isin(CHECKS)]
    count = {s: int((claims.status == s).sum()) for s in (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE)}
    named = {s: [VERDICT_LABELS.get(v, v) for v in claims.verdict[claims.status == s]] for s in count}
    text = (
        f"Of the {len(claims)} claims tested: {count[SUPPORTED]} supported, {count[NOT_SUPPORTED]} not supported, "
        f"{count[INCONCLUSIVE]} inconclusive at this scale."
    )
    if frozen is not None:
        changed = int(frozen[frozen.verdict.isin(claims.verdict) & (frozen.version > 1)].verdict.nunique())
        text += f" {changed} of these {len(claims)} rules were changed after their evidence had been seen (†)."
    for name, (check, relation, *date) in (checks or {}).items():
        text += " " + check_sentence(name, claims, check, relation, *date)
    for status, head in ((SUPPORTED, "Supported"), (NOT_SUPPORTED, "Not supported"), (INCONCLUSIVE, "Open")):
        if named[status]:
            text += f" {head}: {'; '.join(named[status])}."
    headline = claims[claims.verdict == HEADLINE_VERDICT].finding
    if len(headline) and headline.iloc[0]:
        text += f" The finding that matters most is on {VERDICT_LABELS.get(HEADLINE_VERDICT)}: {headline.iloc[0]}"
    regime = table[table.verdict == "regime"].finding
    return text, (regime.iloc[0] if len(regime) else "")


def _frozen():
    from ..analysis.frozen import FROZEN_FILE, frozen_rules

    return frozen_rules() if FROZEN_FILE.is_file() else None


def _checks() -> dict:
    """Every recorded check's verdicts (without its regime row) and its relation to this build."""
    from ..sections.reproducibility import CHECK_FOLDERS, check_record, record_relation

    out = {}
    for name in CHECK_NAMES:
        table, meta = check_record(CHECK_FOLDERS[name])
        relation = record_relation(resolve_profile("auto"), table, meta)
        when = meta.get("date", "") + (f", in part again {meta['updated']}" if meta.get("updated") else "")
        out[name] = (None if table is None else table[table.verdict != "regime"], relation, when)
    return out


def _fill_findings(app, doctree, docname) -> None:
    for node in list(doctree.findall(_findings)):
        try:
            text, regime = findings_text(
                published_verdicts(Path(app.env.mystnb_config.output_folder)), _frozen(), _checks()
            )
        except ConfigError:
            text, regime = "The chapters have not been executed yet.", ""
        box = nodes.admonition(classes=["tip", "attnrank-findings"])
        box += nodes.title(text="What we found")
        box += nodes.paragraph(text=text)
        if regime:
            box += nodes.paragraph(text=f"Where the models stand: {regime}.")
        node.replace_self(box)


_PROFILE_USE = {
    "ci": "tests and the CI build",
    "quick": "the default on a CPU",
    "paper": "a GPU",
    "scale": "the scale check: quick trained longer on a CPU (opt-in, a background build)",
}


def profile_rows() -> tuple[list[str], list[list[str]]]:
    """The header and rows of ``{attnrank-profiles}``: per profile its use, model and training sizes and seeds,
    from each architecture's resolved config (:func:`attnrank.core.profiles.resolve_config`); a size the
    architectures differ in is named per architecture, largest first (``GPT-2 1000 steps, ModernBERT 500 steps of 16
    sequences``)."""
    header = ["profile", "meant for", "model", "training", "seeds"]
    rows = []
    for p in PROFILES:
        configs = {a: resolve_config(a, p) for a in ARCHS}
        model = per_arch(
            {
                a: f"width {c.hidden_size}, {c.num_layers} layers, {c.num_heads} heads, {c.max_len} tokens"
                for a, c in configs.items()
            }
        )
        model += f", vocabulary {per_arch({a: c.vocab_size for a, c in configs.items()})}"
        steps = per_arch({a: c.max_steps for a, c in configs.items()}, lambda n: f"{n} steps")
        batch = per_arch({a: c.batch_size for a, c in configs.items()})
        rows.append(
            [p, _PROFILE_USE.get(p, ""), model, f"{steps} of {batch} sequences", str(len(SWEEP_DEFAULTS[p]["seeds"]))]
        )
    return header, rows


class ProfileTable(Directive):
    """``{attnrank-profiles}``: the profiles' model and training sizes (:func:`profile_rows`); the content is
    the caption."""

    has_content = True
    option_spec = {"name": directives.unchanged}

    def run(self):
        return [_numbered(self, [_table(*profile_rows())], "profiles")]


def setting_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{attnrank-setting}`PROFILE.FIELD[:FORMAT]```: a field of a profile's resolved run config.

    For example ``{attnrank-setting}`quick.max_steps``` or ``{attnrank-setting}`quick.mlm_probability:.0%```.
    """
    spec, _, fmt = text.partition(":")
    profile, _, field = spec.partition(".")
    try:
        value = getattr(resolve_config(MLM_ARCH, profile.strip()), field.strip())
        shown = format(value, fmt) if fmt else str(value)
    except (ConfigError, AttributeError, ValueError) as exc:
        msg = inliner.reporter.error(f"attnrank-setting {text!r}: {exc}", line=lineno)
        prb = inliner.problematic(rawtext, rawtext, msg)
        return [prb], [msg]
    return [nodes.Text(shown)], []


#: The build log's columns as a reader sees them.
BUILD_LOG_LABELS = {
    "seconds": "build time [s]",
    "runs_trained": "runs trained",
    "training_seconds": "training time [s]",
    "sweep_seconds": "up-front training [s]",
    "execution_seconds": "chapters [s]",
    "probe_seconds": "probes [s]",
    "validation_seconds": "validation [s]",
    "run_cpu_seconds": "run CPU [s]",
    "probe_cpu_seconds": "probe CPU [s]",
}


def _table(header, rows):
    table = nodes.table()
    group = nodes.tgroup(cols=len(header))
    table += group
    for _ in header:
        group += nodes.colspec(colwidth=1)
    head = nodes.thead()
    group += head
    head += _row(header)
    body = nodes.tbody()
    group += body
    for r in rows:
        body += _row(r)
    return table


def _row(cells):
    row = nodes.row()
    for c in cells:
        entry = nodes.entry()
        entry += nodes.paragraph(text=str(c))
        row += entry
    return row


def citation(path: Path | str, repository: str = "") -> str:
    """The book's BibTeX entry, written from its ``CITATION.cff`` (the one source of how to cite it)
    and the address of its ``repository`` (``repository.url`` of ``_config.yml``, the one place it is
    set; empty: no note).

    Raises:
        ConfigError: naming ``CITATION.cff`` when the file lacks a title, authors, version or date.
    """
    import yaml

    cff = yaml.safe_load(Path(path).read_text())
    missing = [k for k in ("title", "authors", "version", "date-released") if not cff.get(k)]
    if missing:
        raise ConfigError("CITATION.cff", f"missing {', '.join(missing)}")

    def person(a: dict) -> str:
        if "name" in a:
            return "{" + a["name"] + "}"
        return f"{a['family-names']}, {a['given-names']}"

    fields = {
        "title": "{" + cff["title"] + "}",
        "author": " and ".join(person(a) for a in cff["authors"]),
        "year": str(cff["date-released"])[:4],
        "version": cff["version"],
        "url": cff.get("url") or repository,
        "note": f"Jupyter Book, source at {repository}" if repository else "",
    }
    key = "attention_rank_" + fields["year"]
    body = ",\n".join(f"  {k:<7} = {{{v}}}" for k, v in fields.items() if v)
    return f"@software{{{key},\n{body}\n}}"


class Cite(Directive):
    """``{attnrank-cite}``: the BibTeX entry of the book, from ``CITATION.cff`` at the book's root."""

    def run(self):
        env = self.state.document.settings.env
        path = Path(env.srcdir) / "CITATION.cff"
        env.note_dependency(str(path))
        theme = getattr(env.config, "html_theme_options", None) or {}
        text = citation(path, theme.get("repository_url", ""))
        block = nodes.literal_block(text, text)
        block["language"] = "bibtex"
        return [block]


class GluedFigure(Directive):
    """``{attnrank-figure} <page>.ipynb::<figure>``: a numbered figure of another page's glued figure.

    myst-nb's ``{glue:figure}`` pastes only the page's own figures; this directive pastes another
    page's (the intro's headline figure) as a figure: the image is a pending glue reference (resolved
    once every page is read), the directive's content is its caption, ``:name:`` its label and
    ``:alt:`` (required) its alt text; the image is shown at :data:`attnrank.book.COLUMN_PX` pixels, the
    column's width (:func:`attnrank.sphinxext.pages._paste_other_figures` sets both once the image is pasted).
    """

    required_arguments = 1
    has_content = True
    option_spec = {"name": directives.unchanged, "alt": directives.unchanged_required}

    def run(self):
        from myst_nb.ext.glue.utils import create_pending_glue_ref

        doc, sep, key = self.arguments[0].partition("::")
        if not sep or not key:
            raise self.error(f"expected <page>.ipynb::<figure>, got {self.arguments[0]!r}")
        if not self.options.get("alt"):
            raise self.error(f"{self.arguments[0]}: the figure needs :alt: text (what it looks like, in words)")
        ref = create_pending_glue_ref(self.state.document, self.state.document["source"], self.lineno, doc, key)
        figure = nodes.figure("", ref)
        figure["attnrank_alt"] = self.options["alt"]
        figure["attnrank_ref"] = (ref["refdoc"], key)
        if self.content:
            holder = nodes.Element()
            self.state.nested_parse(self.content, self.content_offset, holder)
            first = holder[0] if len(holder) else None
            if isinstance(first, nodes.paragraph):
                figure += nodes.caption(first.rawsource, "", *first.children)
                figure += holder.children[1:]
            else:
                figure += holder.children
        if "name" in self.options:
            self.add_name(figure)
        return [figure]


class _glued_table(nodes.General, nodes.Element):
    """A glued table with a numbered caption (numbered as Sphinx numbers tables: ``Table 3.1``)."""


def _glued_table_title(node) -> str:
    return next((c.astext() for c in node.children if isinstance(c, nodes.caption)), "")


def _visit_glued_table(self, node) -> None:
    self.body.append(self.starttag(node, "div", CLASS="numbered-table"))


def _depart_glued_table(self, node) -> None:
    self.body.append("</div>\n")


class GluedTable(Directive):
    """``{attnrank-table} <name>``: the table a chapter glued under ``name``, numbered, with the directive's
    content as its caption (above the table) and ``:name:`` as its label (default ``tab-<name>``).

    The table is pasted as myst-nb's ``{glue}`` pastes it; a name no cell glued gives myst-nb's warning,
    which the book turns into a failed build (:func:`_fail_on_missing_glue`).
    """

    required_arguments = 1
    has_content = True
    option_spec = {"name": directives.unchanged}

    def run(self):
        from myst_nb.core.variables import RetrievalError, render_variable_outputs
        from myst_nb.ext.glue.utils import glue_warning, retrieve_glue_data

        document, key = self.state.document, self.arguments[0]
        try:
            data = retrieve_glue_data(document, key)
        except RetrievalError as exc:
            return [glue_warning(str(exc), document, self.lineno)]
        return [_numbered(self, render_variable_outputs([data], document, self.lineno, document["source"]), key)]


def _numbered(directive: Directive, content: list, key: str) -> _glued_table:
    """``content`` in a numbered table whose caption is ``directive``'s content (one paragraph) and whose label
    is its ``:name:`` (default ``tab-<key>``)."""
    holder = nodes.Element()
    directive.state.nested_parse(directive.content, directive.content_offset, holder)
    first = holder[0] if len(holder) else None
    if not isinstance(first, nodes.paragraph):
        raise directive.error(f"the table {key!r} needs a caption: one paragraph of content")
    table = _glued_table()
    table += nodes.caption(first.rawsource, "", *first.children, classes=["caption"])
    table += content
    directive.options.setdefault("name", f"tab-{key}")
    directive.add_name(table)
    return table


def _exec_table_directive():
    """``{attnrank-exec-table}``: myst-nb's ``{nb-exec-table}`` (each chapter's last execution), numbered, with the
    directive's content as its caption."""
    from myst_nb.ext.execution_tables import ExecutionStatsTable

    class ExecTable(ExecutionStatsTable):
        option_spec = {"name": directives.unchanged}

        def run(self):
            return [_numbered(self, super().run(), "executions")]

    return ExecTable


def setup(app) -> None:
    """Register the book's directives, nodes and roles."""
    app.add_directive("attnrank-build-log", BuildLog)
    app.add_directive("attnrank-findings", Findings)
    app.add_node(_findings)
    app.connect("doctree-resolved", _fill_findings)
    app.add_directive("attnrank-profiles", ProfileTable)
    app.add_directive("attnrank-cite", Cite)
    app.add_directive("attnrank-figure", GluedFigure)
    app.add_enumerable_node(_glued_table, "table", _glued_table_title, html=(_visit_glued_table, _depart_glued_table))
    app.add_directive("attnrank-table", GluedTable)
    app.add_directive("attnrank-exec-table", _exec_table_directive())
    app.add_role("attnrank-setting", setting_role)
