"""The explorer page in a real browser: built by jupyter-book, opened from disk in headless Chromium.

One fixture book (the project's configuration, an intro and the explore chapter on a small ci
grid: two temperatures, two head dimensions, two seeds) is built once per session. The tests
change every control the way a reader does and check that the plotted data are the values of
the right stored run, read from the run store independently of the page's export; that the
console has no error and the page makes no network request; and that it is usable 390 px wide.

``ATTNRANK_EXPLORER_SITE`` may name a built site (``_build/html``) to test instead; its runs are
read from the run store of this environment (``ATTNRANK_RUNS``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from selenium.webdriver.support.ui import Select, WebDriverWait

from attnrank.core.rank import MEASURES, rank_measures, singular_values
from attnrank.runs import experiments, store
from attnrank.sections.explore import BUDGET_BYTES

ROOT = Path(__file__).resolve().parents[2]
JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
UID = "attnrank-explorer"
GRID = {"profile": "ci", "taus": [0.001, 1.0], "head_dims": [8, 16], "seeds": 2}

pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER) and not os.environ.get("CI"),
    reason="needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)",
)


def _book(folder: Path, env: dict) -> Path:
    """Build the fixture book in ``folder`` and return its explore page."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    keep = {k: config[k] for k in ("title", "only_build_toc_files", "execute", "parse", "sphinx") if k in config}
    keep["sphinx"]["config"] = {k: v for k, v in keep["sphinx"].get("config", {}).items() if not k.startswith("bibtex")}
    folder.mkdir(parents=True)
    (folder / "_config.yml").write_text(yaml.safe_dump(keep))
    (folder / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: explore\n")
    (folder / "intro.md").write_text("# Intro\n\nThe explorer: {doc}`explore`.\n")
    nb = json.loads((ROOT / "chapters" / "explore.ipynb").read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    cell["source"] = "\n".join(f"{k} = {v!r}" for k, v in {**GRID, "dataset": None}.items())
    (folder / "explore.ipynb").write_text(json.dumps(nb))
    result = subprocess.run(
        [str(JUPYTER_BOOK), "build", str(folder)], env=env, capture_output=True, text=True, timeout=1800
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return folder / "_build" / "html" / "explore.html"


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """``(page, runs)``: the built explore page and the stored runs it shows (``attnrank.runs.store.Run`` by key)."""
    given = os.environ.get("ATTNRANK_EXPLORER_SITE")
    if given:
        page = Path(given).resolve() / "chapters" / "explore.html"  # a file URI needs an absolute path
        if not page.is_file():
            pytest.fail(f"ATTNRANK_EXPLORER_SITE={given!r} holds no chapters/explore.html (build the book first)")
        configs = experiments.main_sweep(experiments.sweep_plan("auto"))
        return page, {r.key: r for r in (store.run(c) for c in configs)}
    tmp = tmp_path_factory.mktemp("explorer")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTNRANK_")}
    env.update(
        ATTNRANK_RUNS=str(tmp / "runs"),
        ATTNRANK_PROFILE="ci",
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        PYDEVD_DISABLE_FILE_VALIDATION="1",
    )
    if "ATTNRANK_DATA" in os.environ:
        env["ATTNRANK_DATA"] = os.environ["ATTNRANK_DATA"]
    # the runs the chapter shows, trained here (the book's up-front sweep would train the whole ci grid)
    configs = experiments.main_sweep(
        experiments.sweep_plan(GRID["profile"], taus=GRID["taus"], head_dims=GRID["head_dims"], seeds=2)
    )
    old = os.environ.get("ATTNRANK_RUNS")
    os.environ["ATTNRANK_RUNS"] = env["ATTNRANK_RUNS"]
    try:
        stored = {r.key: r for r in (store.run(c) for c in configs)}
        page = _book(tmp / "book", {**env, "ATTNRANK_SWEEP": "off"})
    finally:
        if old is None:
            os.environ.pop("ATTNRANK_RUNS", None)
        else:
            os.environ["ATTNRANK_RUNS"] = old
    return page, stored


def _open(driver, page: Path, width: int = 1280):
    driver.set_window_size(width, 1000)
    driver.get_log("browser"), driver.get_log("performance")  # drop what earlier pages logged
    driver.get(page.as_uri())
    _wait_drawn(driver, 0)


def _wait_drawn(driver, after: int) -> int:
    def drawn(d):
        value = d.execute_script(f"return document.getElementById('{UID}').dataset.drawn || null")
        error = d.execute_script(f"return document.getElementById('{UID}-run').classList.contains('ax-error')")
        assert not error, d.find_element("id", f"{UID}-run").text
        return int(value) if value is not None and int(value) > after else False

    return WebDriverWait(driver, 30, poll_frequency=0.05).until(drawn)


def _source(driver, part: str) -> dict:
    return driver.execute_script(
        "const doc = Bokeh.documents.find((d) => d.get_model_by_name(arguments[0]));"
        "const data = doc.get_model_by_name(arguments[0]).data;"
        "return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Array.from(v)]));",
        f"{UID}-{part}",
    )


def _record(driver, key: str) -> dict:
    """The page's record of run ``key`` (its embedded data, without the encoded arrays)."""
    return driver.execute_script(
        f"const p = JSON.parse(document.getElementById('{UID}-data').textContent);"
        "const r = p.runs.find((r) => r.key === arguments[0]);"
        "return {...r, attention: {...r.attention, matrices: null, singular_values: null}};",
        key,
    )


def _state(driver) -> dict:
    """The selected values of every control, and the run key shown."""
    values = driver.execute_script(
        f"return Object.fromEntries([...document.querySelectorAll('#{UID}-controls select')]"
        ".map((s) => [s.name, s.value]))"
    )
    values["run"] = driver.execute_script(f"return document.getElementById('{UID}').dataset.run")
    return values


def _choose(driver, name: str, value: str) -> None:
    before = int(driver.execute_script(f"return document.getElementById('{UID}').dataset.drawn"))
    Select(driver.find_element("id", f"{UID}-{name}")).select_by_value(value)
    _wait_drawn(driver, before)


def _options(driver, name: str) -> list[str]:
    return driver.execute_script(f"return [...document.getElementById('{UID}-{name}').options].map((o) => o.value)")


def _check_shown(driver, stored: dict) -> None:
    """The plotted matrix, spectrum, measures, curves and sweep are those of the selected run's stored data."""
    s = _state(driver)
    arch, key = s["run"].split("-", 1)
    run = stored[key]
    cfg = run.run_config
    assert (cfg.arch, f"{cfg.tau:g}", str(cfg.head_dim), str(cfg.seed)) == (
        s["arch"],
        f"{float(s['tau']):g}",
        s["head_dim"],
        s["seed"],
    )
    att = run.attention()
    shown_att = _record(driver, key)["attention"]  # what the page shows of the run: steps, levels
    step = shown_att["steps"][int(s["step"])]
    t = att.steps.tolist().index(step)
    layer, head = int(s["layer"]), int(s["head"])
    A = att.probabilities[t, layer, 0, head]  # float32 [n, n], as stored: the first probe sequence
    n = A.shape[-1]
    # the spectrum: the float64 singular values of the stored matrix (float32 on the page)
    sigma = singular_values(A).numpy()
    spectrum = _source(driver, "spectrum-source")
    shown = np.array([np.nan if v is None else v for v in spectrum["sigma"]], dtype=float)
    assert spectrum["i"] == list(range(1, n + 1))
    np.testing.assert_allclose(shown[0], sigma[0], rtol=1e-6)  # the largest singular value
    positive = sigma > n * np.finfo(np.float64).eps * sigma[0]  # below float64 round-off nothing is drawn
    np.testing.assert_allclose(shown[positive], sigma[positive], rtol=1e-6)
    assert np.isnan(shown[~positive]).all()
    # the thresholds: the study's absolute one and the relative ones at sigma_1
    lines = _source(driver, "threshold-source")
    levels = sorted(ys[0] / (1 if "atol" in lab else sigma[0]) for ys, lab in zip(lines["ys"], lines["label"]))
    assert levels == pytest.approx([1e-8, 1e-4, 1e-2], rel=1e-6)
    # the heat map: the stored matrix to within the 8-bit quantisation, with the tokens on hover
    heat = _source(driver, "heat-source")
    P = np.zeros((n, n))
    P[np.array(heat["y"]), np.array(heat["x"])] = heat["p"]
    assert np.abs(P - A.numpy()).max() <= A.max().item() / (2 * shown_att["levels"]) + 1e-7
    tokens = att.tokens[0]
    assert heat["query"][: n * 3 : n] == [json.dumps(tok) for tok in tokens[:3]]
    assert heat["key"][:3] == [json.dumps(tok) for tok in tokens[:3]]
    # every measure of this matrix, as the library computes it from the stored matrix
    values = rank_measures(A)
    for name in MEASURES:
        cell = driver.find_element("css selector", f'#{UID}-measures td[data-measure="{name}"]').text
        assert float(cell) == pytest.approx(float(values[name]), rel=1e-3, abs=1e-9), name
    # the curves: the stored mean of the chosen measure at every probe step, the chosen step marked
    summary = run.table("rank_summary")
    curve = _source(driver, "curve-source")
    means = summary[summary.measure == s["measure"]].set_index("step")["mean"]
    np.testing.assert_allclose(curve["value"], means.loc[curve["step"]].to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(_source(driver, "loss-source")["value"], run.table("eval_log").val_loss, rtol=1e-6)
    marker = driver.execute_script(
        "return Bokeh.documents.find((d) => d.get_model_by_name(arguments[0]))"
        ".get_model_by_name(arguments[0]).location",
        f"{UID}-curve-marker",
    )
    assert marker == step
    # the sweep: this run's initial and final rank among its neighbours
    selected = _source(driver, "sweep-selected")
    axis = cfg.tau if s["sweep"] == "tau" else cfg.head_dim
    assert selected["x"] == [pytest.approx(axis)]
    assert selected["initial"] == [pytest.approx(run.summary["initial_rank"][s["measure"]], rel=1e-6)]
    assert selected["final"] == [pytest.approx(run.summary["final_rank"][s["measure"]], rel=1e-6)]
    # its x axis is ticked at the sweep's settings, no more (two head dimensions are not a decade of log ticks)
    ticks = driver.execute_script(
        "const doc = Bokeh.documents.find((d) => d.get_model_by_name(arguments[0]));"
        "return Array.from(doc.get_model_by_name(arguments[0]).ticks);",
        f"{UID}-sweep-ticker",
    )
    assert ticks == sorted(set(_source(driver, "sweep-source")["x"])) and axis in ticks
    # labelled as the book writes a setting, so that they do not run together
    labels = driver.execute_script(
        "const doc = Bokeh.documents.find((d) => d.get_model_by_name(arguments[0]));"
        "return doc.get_model_by_name(arguments[0]).formatter.doFormat(arguments[1], {});",
        f"{UID}-sweep-xaxis",
        ticks,
    )
    assert labels == [f"{t:g}" for t in ticks]


def _errors(driver) -> set[str]:
    """The console errors logged since the last call, without the page's address."""
    errors = set()
    for e in driver.get_log("browser"):
        if e["level"] == "SEVERE":
            errors.add(re.sub(r"^file://\S+ ", "", e["message"]))
    return errors


def _requests(driver) -> list[str]:
    """The addresses requested since the last call, by the pages opened (not by the browser's own pages)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent" and not message["params"].get("documentURL", "").startswith(
            "chrome://"
        ):
            urls.append(message["params"]["request"]["url"])
    return urls


@pytest.fixture(scope="session")
def site_errors(site, browser) -> set[str]:
    """The console errors of the book's intro page (beside the explorer page) opened first in the
    fresh browser: those of the theme that every page of the site shares."""
    page, _ = site
    browser.get_log("browser")
    browser.get((page.parent / "intro.html").as_uri())
    WebDriverWait(browser, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")
    return _errors(browser)


def _no_errors_no_network(page: Path, errors: set[str], site_errors: set[str], urls: list[str]) -> None:
    """No console error of the explorer's own (beyond the site's shared ones), and every request
    a local file or inline data."""
    own = errors - site_errors
    assert not own, own
    remote = [u for u in urls if not u.startswith(("file://", "data:", "blob:"))]
    assert not remote, remote
    assert any(u.startswith(page.as_uri()) for u in urls)


def test_every_control_shows_the_stored_values_of_the_right_run(site, browser, site_errors):
    """Change each control as a reader does: the page shows the selected run's stored matrix
    (to 8 bits), its exact spectrum and measures, its curves and its place in the sweep; the
    console stays clean and nothing is fetched from the network."""
    page, stored = site
    _open(browser, page)
    _check_shown(browser, stored)
    shown_runs = {browser.execute_script(f"return document.getElementById('{UID}').dataset.run")}
    for name in ("arch", "tau", "head_dim", "seed", "step", "layer", "head", "measure", "sweep"):
        options = _options(browser, name)
        assert len(options) > 1, f"{name} has one option: {options}"
        for value in [v for v in options if v != _state(browser)[name]][:2]:
            _choose(browser, name, value)
            assert _state(browser)[name] == value or name in ("tau", "head_dim"), name
            _check_shown(browser, stored)
            shown_runs.add(_state(browser)["run"])
    assert len(shown_runs) >= 4
    _no_errors_no_network(page, _errors(browser), site_errors, _requests(browser))


def test_the_page_fits_a_phone_and_the_budget(site, browser, site_errors):
    """At 390 px the panels stack and nothing is wider than the screen; the page with its data and
    scripts is within the budget."""
    page, _ = site
    _open(browser, page, width=390)
    overflow = browser.execute_script(
        "const w = document.documentElement.clientWidth;"
        f"return [...document.querySelectorAll('#{UID} canvas, #{UID} select, #{UID} table')]"
        ".map((e) => e.getBoundingClientRect()).filter((r) => r.width > 0 && r.right > w + 1).length"
    )
    assert overflow == 0
    lefts = browser.execute_script(
        f"return [...document.querySelectorAll('#{UID} .ax-panel')].map((e) => e.getBoundingClientRect().left)"
    )
    assert len(set(round(x) for x in lefts)) == 1  # one column
    assert page.stat().st_size <= BUDGET_BYTES
    _no_errors_no_network(page, _errors(browser), site_errors, _requests(browser))


_CLIPPED_SELECTS = """
const probe = document.createElement('span');
probe.style.position = 'absolute'; probe.style.whiteSpace = 'nowrap';
document.body.appendChild(probe);
const clipped = [];
for (const s of document.querySelectorAll('#UID .ax-controls select')) {
  probe.style.font = getComputedStyle(s).font;
  let widest = 0;
  for (const o of s.options) { probe.textContent = o.text; widest = Math.max(widest, probe.offsetWidth); }
  if (s.clientWidth < widest) clipped.push([s.name, s.clientWidth, widest]);
}
probe.remove();
return clipped;
"""


@pytest.mark.parametrize("width", [1280, 390])
def test_no_control_cuts_its_options_off(site, browser, width):
    """Every select is as wide as its widest option's text ("effective rank", "temperature ratio τ" were
    cut off in 120 px controls), on a desktop and on a phone."""
    page, _ = site
    _open(browser, page, width=width)
    assert browser.execute_script(_CLIPPED_SELECTS.replace("UID", UID)) == []


def test_the_page_shows_the_run_keys_and_a_numbered_caption(site):
    page, stored = site
    text = page.read_text()
    for key in stored:
        assert key in text
    assert re.search(r"Fig\. [\d.]+", text)  # numbered, so the prose can cite it
    assert 'class="output stderr"' not in text and "Traceback" not in text
