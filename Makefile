# Convenience targets; each is one plain command you can also type yourself.
PY ?= .venv/bin/python
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1

.PHONY: setup book book-ci sweep test bench bench-quick sync check clean-book

setup:            ## virtual environment with the library, the book tools and the test tools
	python3 -m venv .venv
	.venv/bin/pip install torch==2.13.0 -e ".[book,dev]"

book:             ## build the site into _build/html (profile "auto": quick on CPU, paper on CUDA)
	.venv/bin/jupyter-book build .

book-ci:          ## build the site with the tiny ci profile
	ATTNRANK_PROFILE=ci .venv/bin/jupyter-book build .

sweep:            ## train the book's runs up front on a local process pool (the build does it too)
	.venv/bin/attnrank sweep

test:             ## the test suite (offline)
	$(PY) -m pytest -q

bench:            ## performance benchmark (about 5 minutes on 2 cores)
	$(PY) -m attnrank.bench

bench-quick:
	$(PY) -m attnrank.bench --quick

sync:             ## re-pair every chapter notebook with its py:percent twin
	.venv/bin/jupytext --sync chapters/*.ipynb

clean-book:       ## forget executed chapters (the run store in data/runs is kept)
	rm -rf _build
