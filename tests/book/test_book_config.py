"""The book's configuration: launch buttons that work, numbers from code, no forced re-execution."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())


def _requirement_names(lines) -> set[str]:
    return {
        re.split(r"[<>=!~\[ ;]", line.strip(), maxsplit=1)[0].lower().replace("_", "-")
        for line in lines
        if line.strip() and not line.strip().startswith("-")
    }


def test_launch_buttons_only_where_the_project_is_installed():
    """No Colab button (a Colab kernel lacks attnrank); Binder builds environment.yml, which
    installs the lock file's versions of every dependency pyproject.toml declares, then this project."""
    buttons = CONFIG.get("launch_buttons", {})
    assert not buttons.get("colab_url")
    if buttons.get("binderhub_url"):
        env = yaml.safe_load((ROOT / "environment.yml").read_text())
        pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
        assert "-e ." in pip and "-r requirements.lock" in pip  # the locked versions, then the project
        project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        needed = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
        assert _requirement_names(needed) <= _requirement_names((ROOT / "requirements.lock").read_text().splitlines())


def test_repository_url_is_set_in_one_place():
    """The repository's address is written only in _config.yml (repository.url)."""
    url = CONFIG["repository"]["url"]
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    holders = [
        f for f in files if (ROOT / f).is_file() and url.split("://")[1] in (ROOT / f).read_text(errors="ignore")
    ]
    assert holders == ["_config.yml"]


def test_no_chapter_is_forced_to_re_execute_on_every_build():
    """Every chapter is served from the execution cache when nothing it depends on changed."""
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        meta = json.loads(path.read_text())["metadata"]
        assert meta.get("mystnb", {}).get("execution_mode") in (None, "cache"), path.name
    assert CONFIG["execute"]["execute_notebooks"] == "cache"
    assert "attnrank_always_reread" not in json.dumps(CONFIG)


def test_intro_has_no_hand_typed_profile_settings():
    """The profile table (on the conventions page, read first) is rendered from attnrank.core.profiles; neither
    it nor the intro types a size by hand."""
    intro = (ROOT / "chapters" / "intro.md").read_text()
    conventions = (ROOT / "chapters" / "conventions.md").read_text()
    assert "{attnrank-profiles}" in conventions
    section = conventions.split("## Profiles", 1)[1].split("\n## ", 1)[0]
    assert not re.search(r"\|[^|\n]*\d[^|\n]*\|", section), "a table with numbers typed by hand"
    for page in (intro, conventions):
        assert not re.search(r"\b\d+ (steps|layers|tokens)\b", page)


# Numbers once typed by hand in the chapters' prose; each is now glued from the code that uses it.
HAND_TYPED = [
    r"lies above 0\.5",
    r"at most 0\.1\b",
    r"exceeds 0\.1\b",
    r"\b300 steps",
    r"KL below 0\.05",
    r"\brank[- ]4\b",
    r"standard deviation 0\.02",
    r"factor of about 4",
    r"\bnine values",
    r"within 0\.05",
    r"within 5%",
    r"\b90% of the limit",
    r"five logit sizes",
    r"head dimensions 1, 2, 4",
    r"deviation 0\.1,",
    r"at least 80%",
    r"width 512, 4 layers",
    r"5000 steps",
    r"\b200 steps",
    r"tau = 100\b",
]


def _prose(path: Path) -> str:
    if path.suffix == ".md":
        return path.read_text()
    cells = json.loads(path.read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def test_chapter_prose_has_no_hand_typed_numbers_the_code_sets():
    """Thresholds, sizes and settings quoted in the prose are glued from the code that uses them."""
    found = []
    for path in sorted((ROOT / "chapters").glob("*.ipynb")) + [ROOT / "chapters" / "intro.md"]:
        prose = _prose(path)
        found += [f"{path.name}: {p}" for p in HAND_TYPED if re.search(p, prose)]
    assert not found


def test_the_confidence_level_the_prose_quotes_is_the_code_default():
    """The prose quotes 95% intervals everywhere; that is the default of every interval function."""
    import inspect

    from attnrank.analysis import stats

    assert inspect.signature(stats.resample_ci).parameters["confidence"].default == 0.95
    assert inspect.signature(stats.mean_ci).parameters["confidence"].default == 0.95
    levels = set()
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        levels |= set(re.findall(r"\b(\d+) ?% (?:bootstrap |Student-t )?(?:CI|interval|confidence)", _prose(path)))
    assert levels == {"95"}


def test_every_library_module_a_chapter_loads_is_in_the_execution_context():
    """The execution context hashes the import closure of the result modules and of the chapters'
    imports (attnrank.runs.provenance); every attnrank module a chapter loads when run is in it, and
    the tools no chapter loads (cli, the Sphinx extension and its executor) are not."""
    import sys

    from attnrank.runs import provenance
    from attnrank.sphinxext.context import chapter_roots

    modules = chapter_roots(ROOT)
    code = (
        "import importlib, sys\n"
        f"for m in {list(modules)!r}:\n"
        "    importlib.import_module(m)\n"
        "print(' '.join(sorted(n for n in sys.modules if n.startswith('attnrank'))))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    hashed = set(provenance.closure(provenance.RESULT_ROOTS + modules))
    assert "attnrank.book" in loaded
    assert {provenance.module_file(m) for m in loaded} <= hashed
    assert str(ROOT / "src" / "attnrank" / "plots" / "theory.py") in {str(p) for p in hashed}
    tools = {
        ROOT / "src" / "attnrank" / name
        for name in ("cli/__init__.py", "cli/build.py", "cli/upfront.py", "__main__.py", "sphinxext/__init__.py")
    }
    assert not tools & hashed
