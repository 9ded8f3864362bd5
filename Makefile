# Convenience targets; each is one plain command you can also type yourself.
PY ?= .venv/bin/python
BIN ?= .venv/bin
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1
# where pip and uv find the CPU build of torch: this project's machines keep it in /opt/wheels,
# elsewhere PyTorch's CPU index serves it
TORCH_CPU ?= $(if $(wildcard /opt/wheels/torch-*),--find-links /opt/wheels,--extra-index-url https://download.pytorch.org/whl/cpu)

.PHONY: setup setup-locked lock lint format book book-ci sweep test test-unit test-book test-all bench bench-quick sync clean-book

setup:            ## virtual environment with the library, the book tools and the test tools (newest versions)
	python3 -m venv .venv
	$(BIN)/pip install torch==2.13.0 -e ".[book,dev,cluster]"

setup-locked:     ## the same, at the exact versions of requirements.lock (what CI and the published book use)
	python3 -m venv .venv
	$(BIN)/pip install $(TORCH_CPU) -r requirements.lock
	$(BIN)/pip install --no-deps -e .

lock:             ## re-lock requirements.lock from pyproject.toml (uv; torch pinned to its CPU build)
	$(BIN)/uv pip compile pyproject.toml --extra book --extra dev --extra cluster \
	  --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
	  --override requirements-torch-cpu.txt $(TORCH_CPU) --no-emit-find-links --no-emit-index-url \
	  --custom-compile-command "make lock" -o requirements.lock

lint:             ## ruff: lint and format check; import-linter: the import contracts; ESLint: the book's scripts (CI runs this before the tests)
	$(BIN)/ruff check src tests chapters benchmarks
	$(BIN)/ruff format --check src tests chapters benchmarks
	$(BIN)/lint-imports
	npm ci --no-audit --no-fund --silent && npx eslint chapters/_static

format:           ## ruff: fix what can be fixed and format
	$(BIN)/ruff check --fix src tests chapters benchmarks
	$(BIN)/ruff format src tests chapters benchmarks

book:             ## build the site into _build/html (profile "auto": quick on CPU, paper on CUDA)
	$(BIN)/jupyter-book build .

book-ci:          ## build the site with the tiny ci profile
	ATTNRANK_PROFILE=ci $(BIN)/jupyter-book build .

sweep:            ## train the book's runs up front on a local process pool (the build does it too)
	$(BIN)/attnrank sweep

test:             ## unit and integration tiers (the README's test command)
	$(PY) -m pytest -q -n auto -m "unit or integration"

test-unit:        ## the unit tier alone (under a minute)
	$(PY) -m pytest -q -n auto -m unit

test-book:        ## the book tier (papermill, jupyter-book builds, the browser)
	$(PY) -m pytest -q -n auto -m book

test-all:         ## every tier
	$(PY) -m pytest -q -n auto

bench:            ## performance benchmark (about 5 minutes on 2 cores)
	$(PY) benchmarks/bench.py

bench-quick:
	$(PY) benchmarks/bench.py --quick

sync:             ## re-pair every chapter notebook with its py:percent twin
	$(BIN)/jupytext --sync chapters/*.ipynb

clean-book:       ## forget executed chapters (the run store in data/runs is kept)
	rm -rf _build
