"""The bibliography's labels in the form the text cites: author and year ("Min and Li, 2023", "Warner et al., 2024").

``sphinxcontrib-bibtex`` cites author-year in the text (``bibtex_reference_style: author_year``) but labels the list
with pybtex's ``alpha`` style ("[ML23]", and "[WCClavie+24]" for a name with a LaTeX accent). :class:`AuthorYearStyle`
is pybtex's ``unsrt`` formatting (sorted by author, year and title) with :class:`AuthorYearLabels`; importing this
module registers it as the pybtex style ``attnrank`` (``bibtex_default_style`` in ``_config.yml``).
"""

from __future__ import annotations

from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting.author_year_title import SortingStyle

__all__ = ["AuthorYearLabels", "AuthorYearStyle", "label"]


def label(entry) -> str:
    """The author-year label of a pybtex ``entry``, as ``sphinxcontrib-bibtex``'s ``author_year`` style cites it in the
    text: one author's last name, two joined by "and", or the first and "et al."; then a comma and the year (the
    editors' names, or the entry's key, when it has no author)."""
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [" ".join(part.render_as("text") for part in p.rich_last_names) for p in persons]
    who = (
        names[0]
        if len(names) == 1
        else f"{names[0]} and {names[1]}"
        if len(names) == 2
        else f"{names[0]} et al."
        if names
        else entry.key
    )
    year = entry.fields.get("year", "")
    return f"{who}, {year}" if year else who


class AuthorYearLabels(BaseLabelStyle):
    """Author-year labels (:func:`label`); two entries with one label get "a", "b" after the year."""

    def format_labels(self, sorted_entries):
        labels = [label(e) for e in sorted_entries]
        seen: dict[str, int] = {}
        for text in labels:
            if labels.count(text) > 1:
                seen[text] = seen.get(text, 0) + 1
                yield text + "abcdefghijklmnopqrstuvwxyz"[seen[text] - 1]
            else:
                yield text


class AuthorYearStyle(Style):
    """pybtex's ``unsrt`` entries, sorted by author, year and title, labelled by :class:`AuthorYearLabels`."""

    default_label_style = AuthorYearLabels
    default_sorting_style = SortingStyle


register_plugin("pybtex.style.formatting", "attnrank", AuthorYearStyle, force=True)
