"""What the build writes beside the pages: the build log (:func:`attnrank.cli.build.log_build`), the figures' data as files, the images of figures another
page pastes, meta descriptions (TeX written as plain characters), and the site's scripts deduplicated.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import time
from pathlib import Path

from docutils import nodes

from ..book import COLUMN_PX, CSV_MIME, DATA_FOLDER
from ..cli import build
from ..words.glossary import fmt
from .directives import THIS_BUILD


def _start_clock(app, config) -> None:
    app.attnrank_start = time.time()


def _log_build(app, exception) -> None:
    """One row of the build log per build (:func:`attnrank.cli.build.log_build`); a failing build emits
    build-finished twice."""
    start, app.attnrank_start = getattr(app, "attnrank_start", None), None
    if start is not None:
        build.log_build(
            start,
            sweep_seconds=getattr(app, "attnrank_sweep_seconds", 0.0),
            execution_seconds=getattr(app, "attnrank_execution_seconds", 0.0),
            failed=bool(exception or getattr(app, "attnrank_glue_problems", [])),
        )


def this_build_text(row: dict) -> str:
    """This build's time in words, from its row of the build log (:func:`attnrank.cli.build.log_build`)."""
    minutes = lambda key: fmt(float(row.get(key) or 0) / 60, 1)  # noqa: E731
    n = int(float(row.get("runs_trained") or 0))
    trained = (
        f"{minutes('sweep_seconds')} minutes training {n} run{'s' if n != 1 else ''} up front"
        if n
        else "no run to train (all stored)"
    )
    return (
        f"This build took {minutes('seconds')} minutes: {trained} and {minutes('execution_seconds')} minutes "
        f"executing the chapters (the {row.get('profile', '')} profile); the log above shows it from the next build on."
    )


def fill_this_build(app, exception) -> None:
    """Write this build's time (its row just logged, :func:`_log_build`) into the span every page with the build log
    keeps for it (:data:`attnrank.sphinxext.directives.THIS_BUILD`), so a fresh build's page shows its own time."""
    import csv

    path = build.build_log_path()
    if exception is not None or app.builder.format != "html" or not path.exists():
        return
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return
    span = re.compile(rf'(<span class="{THIS_BUILD}">)(.*?)(</span>)', re.S)
    text = html.escape(this_build_text(rows[-1]))
    for page in Path(app.outdir).rglob("*.html"):
        content = page.read_text()
        if THIS_BUILD in content:
            page.write_text(span.sub(lambda m: m.group(1) + text + m.group(3), content))


def glue_data(app, docname: str) -> dict:
    """The glued outputs of page ``docname`` (myst-nb's ``<docname>.glue.json``), or ``{}``."""
    folder = Path(app.env.mystnb_config.output_folder)
    path = folder.joinpath(*docname.split("/")[:-1], docname.split("/")[-1] + ".glue.json")
    if not path.exists():
        return {}
    return json.loads(path.read_text())


def write_figure_data(app, exception) -> None:
    """Write every glued figure's data (MIME :data:`attnrank.book.CSV_MIME`, glued by
    :func:`attnrank.book.publish` as ``<figure>__data``) to ``<site>/data/<figure>.csv``: one
    stable address per figure, linked from its caption. Pages served from the execution cache
    keep their glue, so every build writes every figure's data."""
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir) / DATA_FOLDER
    for docname in sorted(app.env.found_docs):
        for key, output in glue_data(app, docname).items():
            data = output.get("data", {}) if isinstance(output, dict) else {}
            if key.endswith("__data") and CSV_MIME in data:
                out.mkdir(parents=True, exist_ok=True)
                text = data[CSV_MIME]
                (out / f"{key[: -len('__data')]}.csv").write_text("".join(text) if isinstance(text, list) else text)


def _write_pasted_image(app, refdoc: str, key: str) -> None:
    """Write the PNG glued as ``key`` on page ``refdoc`` where myst-nb's cross-page paste links it
    (``<site>/_images/<sha256 of the bytes>.png``): the paste makes the link but not the file."""
    import base64

    if app.builder.format != "html":
        return
    png = glue_data(app, refdoc).get(key, {}).get("data", {}).get("image/png")
    if not png:
        return
    data = base64.b64decode("".join(png) if isinstance(png, list) else png)
    folder = Path(app.builder.outdir) / app.builder.imagedir
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{hashlib.sha256(data).hexdigest()}.png").write_bytes(data)


def _paste_other_figures(app, doctree, docname) -> None:
    """Show each figure another page glued (``{attnrank-figure}``): write its PNG where the paste links it and
    give the image the directive's ``:alt:`` text and the column's width (:data:`attnrank.book.COLUMN_PX`)."""
    for fig in doctree.findall(nodes.figure):
        if fig.get("attnrank_ref"):
            refdoc, key = fig["attnrank_ref"]
            _write_pasted_image(app, refdoc, key)
            for image in fig.findall(nodes.image):
                image["alt"] = image.get("alt") or fig["attnrank_alt"]
                image["width"] = f"{COLUMN_PX}px"


#: TeX commands a meta description writes as the character they stand for (:func:`plain_maths`).
_TEX_SYMBOLS = {
    "alpha": "α",
    "beta": "β",
    "gamma": "γ",
    "delta": "δ",
    "epsilon": "ε",
    "eta": "η",
    "theta": "θ",
    "lambda": "λ",
    "mu": "μ",
    "pi": "π",
    "rho": "ρ",
    "sigma": "σ",
    "tau": "τ",
    "phi": "φ",
    "Sigma": "Σ",
    "times": "×",
    "cdot": "·",
    "le": "≤",
    "leq": "≤",
    "ge": "≥",
    "geq": "≥",
    "to": "→",
    "approx": "≈",
    "infty": "∞",
    "ne": "≠",
    "pm": "±",
    "top": "ᵀ",
    "lVert": "‖",
    "rVert": "‖",
    "Vert": "‖",
    "dots": "…",
    "ldots": "…",
}


_SUPERSCRIPTS = str.maketrans("0123456789-+()niT", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺⁽⁾ⁿⁱᵀ")


_SUBSCRIPTS = str.maketrans("0123456789hnik", "₀₁₂₃₄₅₆₇₈₉ₕₙᵢₖ")


_SCRIPT = re.compile(r"([_^])(?:\{([^{}]*)\}|([0-9A-Za-z]))")


_SQRT = re.compile(r"\\sqrt\s*(?:\{([^{}]*)\}|(\\?[A-Za-z0-9]+))")


_COMMAND = re.compile(r"\\([A-Za-z]+)")


_WRAPPER = re.compile(r"\\(?:operatorname|mathrm|mathbf|mathit|mathcal|text|textrm)\s*\{([^{}]*)\}")


_SCRIPT_CHARS = "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺⁽⁾ⁿⁱᵀ₀₁₂₃₄₅₆₇₈₉ₕₙᵢₖ"


def _script(match) -> str:
    body = match.group(2) if match.group(2) is not None else match.group(3)
    table = _SUPERSCRIPTS if match.group(1) == "^" else _SUBSCRIPTS
    out = body.translate(table)
    if all(c in _SCRIPT_CHARS for c in out):
        return out
    return ("^" if match.group(1) == "^" else "_") + (body if len(body) == 1 else f"({body})")


def plain_maths(text: str) -> str:
    """``text`` with its TeX maths written in Unicode, for a place where no maths is rendered (a page's meta
    description): ``\\tau = 10^{-3}`` as ``τ = 10⁻³``, ``T = \\sqrt{d_h}`` as ``T = √dₕ``,
    ``\\operatorname{softmax}(QK^\\top)`` as ``softmax(QKᵀ)``; spacing commands dropped, other commands as
    their name, braces removed."""
    if "\\" not in text and "^" not in text and "_" not in text:
        return text
    text = re.sub(r"\\[,;:! ]", " ", text).replace("\\|", "‖").replace("^\\top", "ᵀ")
    text = _WRAPPER.sub(r"\1", text)
    text = _SQRT.sub(lambda m: "√" + _sqrt_body(m.group(1) if m.group(1) is not None else m.group(2)), text)
    text = _COMMAND.sub(lambda m: _TEX_SYMBOLS.get(m.group(1), m.group(1)), text)
    for _ in range(2):  # nested braces, innermost first
        text = _SCRIPT.sub(_script, text)
    text = text.replace("{", "").replace("}", "")
    return " ".join(text.split())


def _sqrt_body(body: str) -> str:
    body = _COMMAND.sub(lambda m: _TEX_SYMBOLS.get(m.group(1), m.group(1)), body)
    body = _SCRIPT.sub(_script, body)
    return body if len(body.rstrip(_SCRIPT_CHARS)) <= 1 else f"({body})"


def _paragraph_text(para) -> str:
    """A paragraph's text with its maths (``nodes.math``) in Unicode (:func:`plain_maths`), its prose as written."""
    parts = []
    for node in para.findall(lambda n: isinstance(n, (nodes.math, nodes.Text))):
        if isinstance(node, nodes.math):
            parts.append(plain_maths(node.astext()))
        elif not isinstance(node.parent, nodes.math):
            parts.append(str(node))
    return "".join(parts)


def _page_meta(app, pagename, templatename, context, doctree) -> None:
    """A meta description on every page: the page's first paragraph (at most 160 characters), or
    the book's description (``attnrank_description``) where the page has none; the same text and the page's
    title as Open Graph tags (``og:title``, ``og:description``, ``og:type``), which link previews read."""
    text = ""
    if doctree is not None:
        for para in doctree.findall(nodes.paragraph):
            text = " ".join(_paragraph_text(para).split())
            if len(text) > 40:
                break
    text = text if len(text) > 40 else app.config.attnrank_description
    if len(text) > 160:
        text = text[:157].rsplit(" ", 1)[0] + "..."
    if text:
        tags = [f'<meta name="description" content="{html.escape(text)}" />']
        title = " ".join(re.sub(r"<[^>]+>", "", str(context.get("title", ""))).split())
        if title:
            tags.append(f'<meta property="og:title" content="{html.escape(html.unescape(title))}" />')
        tags += [
            f'<meta property="og:description" content="{html.escape(text)}" />',
            '<meta property="og:type" content="website" />',
        ]
        context["metatags"] = context.get("metatags", "") + "".join(f"\n    {t}" for t in tags)


def _dedupe_scripts(app, pagename, templatename, context, doctree) -> None:
    """Each script once per page: an extension that registers its inline configuration at every read
    (sphinx-thebe's ``const THEBE_JS_URL = ...``) would declare the same constant twice, a syntax error
    in the browser."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for js in scripts:
        key = (str(js), repr(getattr(js, "attributes", {})))
        if key not in seen:
            seen.add(key)
            kept.append(js)
    context["script_files"] = kept


def _dedupe_inline_scripts(app, exception) -> None:
    """Each inline script once per written page. Extensions that register their inline configuration
    at every read of the sources (sphinx-thebe's ``const THEBE_JS_URL = ...``, sphinx-togglebutton's
    selector) reach a page twice when the sources are read twice in one build, a "has already been
    declared" error in the browser; the page-context hook (:func:`_dedupe_scripts`) does not see the
    copies the theme's templates add, so the written pages are fixed here."""
    if exception is not None or app.builder.format != "html":
        return
    for path in Path(app.outdir).rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        seen, out, changed = set(), [], False
        for line in text.splitlines(keepends=True):
            key = line.strip()
            if key.startswith("<script>") and key.endswith("</script>"):
                if key in seen:
                    changed = True
                    continue
                seen.add(key)
            out.append(line)
        if changed:
            path.write_text("".join(out), encoding="utf-8")


def _prune_mathjax(app, exception) -> None:
    """Keep only the MathJax files a page loads (``sphinx-mathjax-offline`` copies the whole
    distribution): the combined component the pages load, the fonts it uses and the TeX extensions
    it loads on demand (a macro outside the component autoloads its extension); drop the theme's
    JavaScript source maps (``*.map``, about 3 MB no reader loads)."""
    if exception is not None or app.builder.format != "html":
        return
    for path in (Path(app.outdir) / "_static").rglob("*.map"):  # the theme's source maps: for its developers only
        path.unlink()
    root = Path(app.outdir) / "_static" / "mathjax"
    if not root.is_dir():
        return
    keep = {"tex-chtml.js"}
    for path in sorted(root.rglob("*"), reverse=True):
        rel = path.relative_to(root).as_posix()
        needed = path.name in keep or "/fonts/" in f"/{rel}" or rel.startswith("input/tex/extensions/")
        if path.is_file() and not needed:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def setup(app) -> None:
    """Connect what the build writes beside the pages (the build log after the build, figure data, figures pasted from
    another page, meta descriptions, the scripts deduplicated, MathJax pruned)."""
    app.add_config_value("attnrank_description", "", "html")
    app.connect("config-inited", _start_clock, priority=101)
    app.connect("build-finished", _log_build, priority=400)
    app.connect("build-finished", fill_this_build, priority=405)
    app.connect("build-finished", write_figure_data, priority=450)
    app.connect("build-finished", _dedupe_inline_scripts, priority=470)
    app.connect("build-finished", _prune_mathjax, priority=850)  # after sphinx-mathjax-offline copies the distribution
    app.connect("doctree-resolved", _paste_other_figures)
    app.connect("html-page-context", _page_meta)
    app.connect("html-page-context", _dedupe_scripts)
