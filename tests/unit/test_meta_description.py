"""The meta description of a page: its first paragraph with the maths written in Unicode, never raw TeX."""

from types import SimpleNamespace

from docutils import nodes

from attnrank.sphinxext.pages import _page_meta, plain_maths


def test_plain_maths_writes_tex_as_unicode():
    assert plain_maths(r"T = \sqrt{d_h} (\tau = 1) with \tau = 10^{-3}") == "T = √dₕ (τ = 1) with τ = 10⁻³"
    assert plain_maths(r"\operatorname{softmax}(QK^\top / \sqrt{d_h})") == "softmax(QKᵀ / √dₕ)"
    assert plain_maths(r"1/\sqrt{\tau}, \sigma_1 \le \beta") == "1/√τ, σ₁ ≤ β"
    assert plain_maths("no maths here") == "no maths here"


def _doctree(*children):
    doc = nodes.document(None, None)
    doc += nodes.paragraph("", "", *children)
    return doc


def test_page_meta_converts_maths_but_not_prose():
    app = SimpleNamespace(config=SimpleNamespace(attnrank_description="fallback"))
    doc = _doctree(
        nodes.Text("What the temperature ratio "),
        nodes.math(r"\tau", r"\tau"),
        nodes.Text(" is, and what rank_atol_1e-8 counts with "),
        nodes.math(r"T = \sqrt{d_h}", r"T = \sqrt{d_h}"),
        nodes.Text("."),
    )
    context = {}
    _page_meta(app, "chapters/conventions", "page.html", context, doc)
    meta = context["metatags"]
    assert 'content="What the temperature ratio τ is, and what rank_atol_1e-8 counts with T = √dₕ."' in meta
    assert "\\" not in meta


def test_page_meta_falls_back_to_the_book_description():
    app = SimpleNamespace(config=SimpleNamespace(attnrank_description="The book's own description, long enough."))
    context = {}
    _page_meta(app, "index", "page.html", context, _doctree(nodes.Text("short")))
    assert "The book&#x27;s own description, long enough." in context["metatags"]


def test_page_meta_writes_open_graph_tags_for_link_previews():
    app = SimpleNamespace(config=SimpleNamespace(attnrank_description="fallback"))
    context = {"title": "The <em>temperature</em> &amp; rank"}
    _page_meta(
        app,
        "chapters/temp",
        "page.html",
        context,
        _doctree(nodes.Text("A paragraph long enough to be the description.")),
    )
    meta = context["metatags"]
    assert '<meta property="og:title" content="The temperature &amp; rank" />' in meta
    assert '<meta property="og:description" content="A paragraph long enough to be the description." />' in meta
    assert '<meta property="og:type" content="website" />' in meta
