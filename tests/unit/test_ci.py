"""CI and the published book: `.ci/run` and the GitHub workflow install from the lock file and run the README's
test command; the workflow builds the ci book on pull requests and deploys the default book from main."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"


def readme_test_command() -> str:
    """The first test command of README.md (the unit and integration tiers)."""
    text = (ROOT / "README.md").read_text()
    commands = re.findall(r"```bash\n(HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python -m pytest[^\n]*)\n```", text)
    assert commands, "README.md shows no test command"
    return commands[0]


def _workflow() -> dict:
    wf = yaml.safe_load(WORKFLOW.read_text())
    wf["on"] = wf.pop(True, wf.get("on"))  # YAML 1.1 reads the key `on` as True
    return wf


def _runs(job: dict) -> str:
    return "\n".join(step.get("run", "") for step in job["steps"])


def test_the_readme_test_command_runs_the_unit_and_integration_tiers():
    cmd = readme_test_command()
    assert '-m "unit or integration"' in cmd and "-n auto" in cmd


def test_ci_script_installs_the_lock_lints_and_runs_the_readme_command_and_every_tier():
    script = (ROOT / ".ci" / "run").read_text()
    assert "pip install -q -r requirements.lock" in script and "--no-deps -e ." in script
    assert "ruff check src tests chapters" in script and "ruff format --check src tests chapters" in script
    assert readme_test_command() in script.splitlines()
    assert "python -m pytest -q -n auto -m book" in script
    lint, tests = script.index("ruff check"), script.index(readme_test_command())
    assert lint < tests  # the linter first: a formatting slip fails in seconds


def test_workflow_tests_pull_requests_and_deploys_main_to_pages():
    wf = _workflow()
    assert "pull_request" in wf["on"] and wf["on"]["push"]["branches"] == ["main"]
    test, deploy = wf["jobs"]["test"], wf["jobs"]["deploy"]
    for job in (test, deploy):
        assert "pip install -r requirements.lock" in _runs(job) and "--no-deps -e ." in _runs(job)
        assert job["timeout-minutes"] <= 180
    readme = readme_test_command().removeprefix("HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 ")
    assert readme in _runs(test) and "-m book" in _runs(test)
    assert "ruff check" in _runs(test) and "actionlint" in _runs(test)
    ci_book = next(s for s in test["steps"] if "jupyter-book build" in s.get("run", ""))
    assert ci_book["env"]["ATTNRANK_PROFILE"] == "ci"
    # main only, after the tests, with the Pages permissions and the default profile
    assert deploy["needs"] == "test" and "refs/heads/main" in deploy["if"] and "push" in deploy["if"]
    assert deploy["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    build = next(s for s in deploy["steps"] if "jupyter-book build" in s.get("run", ""))
    assert "ATTNRANK_PROFILE" not in build.get("env", {}) and "ATTNRANK_PROFILE" not in build["run"]
    uses = [s.get("uses", "") for s in deploy["steps"]]
    assert any(u.startswith("actions/upload-pages-artifact@") for u in uses)
    assert any(u.startswith("actions/deploy-pages@") for u in uses)


def test_workflow_keeps_the_run_store_between_runs_keyed_by_code_and_lock():
    deploy = _workflow()["jobs"]["deploy"]
    cache = next(s for s in deploy["steps"] if s.get("uses", "").startswith("actions/cache@"))
    paths = cache["with"]["path"].split()
    assert {"data/runs", "data/tokenizers", "_build/.jupyter_cache"} <= set(paths)
    assert "requirements.lock" in cache["with"]["key"] and "src/attnrank/**" in cache["with"]["key"]
    assert cache["with"]["restore-keys"].strip()  # an older store is restored; its own run keys decide reuse
    build = next(i for i, s in enumerate(deploy["steps"]) if "jupyter-book build" in s.get("run", ""))
    assert deploy["steps"].index(cache) < build


def test_workflow_finds_the_cpu_build_of_torch_the_lock_pins():
    wf = _workflow()
    assert wf["env"]["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
    assert (ROOT / "requirements-torch-cpu.txt").read_text().strip().splitlines()[-1] == "torch==2.13.0+cpu"
