"""Guarantee (docs/architecture.md): "The modules form nine floors, each importing only from the floors below it (no import circle;
every library import at the top of its module)". The floors are computed here from the modules' own imports and
compared with the table of docs/architecture.md, row by row."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "attnrank"


def _modules() -> dict[str, Path]:
    out = {}
    for p in PACKAGE.rglob("*.py"):
        parts = list(p.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _imports(name: str, tree_body) -> set[str]:
    """The package's modules that ``name`` imports in ``tree_body`` (relative or ``attnrank.``)."""
    is_package = MODULES[name].name == "__init__.py"
    here = name.split(".") if name else []
    package = here if is_package else here[:-1]
    out = set()
    for node in tree_body:
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 0:
            if not (node.module or "").startswith("attnrank"):
                continue
            target = node.module.split(".")[1:]
        else:
            target = package[: len(package) - (node.level - 1)] + (node.module.split(".") if node.module else [])
        for alias in node.names:
            sub = ".".join([*target, alias.name])
            out.add(sub if sub in MODULES else ".".join(target))
    out.discard(name)
    return {m for m in out if m in MODULES}


@cache
def _tree(name: str) -> ast.Module:
    return ast.parse(MODULES[name].read_text())


def _top_imports(name: str) -> set[str]:
    return _imports(name, _tree(name).body)


def floors() -> dict[str, int]:
    """Each module's floor: 1 + the highest floor it imports from (1 for a module that imports none)."""
    out: dict[str, int] = {}

    def floor(m: str, stack: tuple = ()) -> int:
        assert m not in stack, f"import circle: {' -> '.join((*stack, m))}"
        if m not in out:
            out[m] = 1 + max((floor(x, (*stack, m)) for x in _top_imports(m)), default=0)
        return out[m]

    for m in MODULES:
        floor(m)
    return out


def readme_floors() -> dict[str, int]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    table = text[text.index("| floor | modules |") :]
    out = {}
    for line in table.splitlines()[2:]:
        m = re.match(r"\| (\d+) \| ([^|]+) \|", line)
        if not m:
            break
        for module in re.findall(r"`([a-z_.]+)`", m.group(2)):
            out[module] = int(m.group(1))
    return out


def test_the_architecture_table_gives_every_module_its_computed_floor():
    computed, stated = floors(), readme_floors()
    wrong = {m: (f, computed.get(m)) for m, f in stated.items() if computed.get(m) != f}
    assert wrong == {}, "docs/architecture.md floor (stated, computed): " + repr(wrong)
    top = {m for m in MODULES if m and "." not in m and m != "__main__"}
    assert top - set(stated) == set(), "modules the floor table of docs/architecture.md does not place"
    assert max(computed[m] for m in top) == len(set(stated.values())) == 10  # "ten floors"


def test_a_module_imports_the_package_at_its_top_only():
    """No import of the package's own modules inside a function (it would hide a module's real floor)."""
    inner = {}
    for m in MODULES:
        body = set(map(id, _tree(m).body))
        nested = [n for n in ast.walk(_tree(m)) if isinstance(n, ast.ImportFrom) and id(n) not in body]
        hidden = _imports(m, nested) - _top_imports(m)
        if hidden:
            inner[m] = sorted(hidden)
    assert inner == {}, inner
