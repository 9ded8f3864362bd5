# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# (explore)=
# # Explore the runs
#
# Every figure in the chapters before this one is a summary: a mean rank over layers, heads,
# probe sequences and seeds. This page opens those means up. Choose a run of the book's main
# grid (architecture, temperature ratio $\tau$, head dimension $d_h$ and seed), then a layer, a
# head, a probe sequence and a probe step, and see side by side the attention matrix the rank
# probe measured, its singular values with the thresholds that turn them into a rank, the run's
# mean rank and validation loss through training, and where the run sits among the other
# temperatures ({numref}`fig-explorer`). The page runs in the browser alone: no kernel, no
# server, no network.

# %% tags=["parameters", "remove-cell"]
profile: str = "auto"  # compute profile: auto (paper on a GPU, quick on a CPU), ci, quick, paper or scale
taus: list = None  # temperature ratios τ of the grid; None: the profile's
head_dims: list = None  # head dimensions of the grid; None: the profile's
seeds: list = None  # seeds: a list, or n for seeds 0..n-1; None: the profile's
dataset: str = None  # training corpus: shakespeare, stdlib or hf:NAME[:CONFIG]; None: ATTNRANK_DATASET or shakespeare

# %% tags=["remove-cell"]
from attnrank import book
from attnrank.sections import explore

params = book.check_parameters(globals(), explore.section)
book.publish(explore.section(**params))

# %% [markdown]
# ```{glue:figure} explorer
# :name: fig-explorer
#
# The runs of the main grid ({glue:text}`explore_runs` runs at the {glue:text}`explore_profile`
# profile, trained on {glue:text}`explore_dataset`). Top left: the attention matrix of one layer
# and head for one held-out probe sequence at one probe step (row $i$: how query token $i$ spreads
# its attention over the key tokens; hover a cell for the two tokens and the value). Top right:
# its singular values on a log scale with the study's absolute threshold $10^{-8}$ and the
# relative thresholds $10^{-2}\sigma_1$ and $10^{-4}\sigma_1$, and every rank measure of this
# matrix beside the run's mean at that step. Bottom left: the chosen measure's mean through
# training and the validation loss, the chosen step dotted, the run's neighbours at other
# temperatures in thin lines coloured by $\tau$. Bottom right: the initial and final rank of every
# seed against $\tau$ (or $d_h$), this run ringed.
# ```
#
# ## How to read it
#
# **The matrix.** A row is a softmax, so it sums to one; ModernBERT's rows spread over the whole
# sequence, GPT-2's over the tokens before and at the query (the upper triangle is zero). The
# colour runs from zero to the largest entry of the matrix shown. At a low temperature a row puts
# almost all its weight on one key: the matrix is close to a selection matrix, and its rank is the
# number of distinct keys selected. At $\tau = 1$ before training the rows are nearly uniform, and
# the matrix is close to rank one plus small noise.
#
# **The spectrum.** Every softmax attention matrix has full rank in exact arithmetic
# ({doc}`the theory chapter <theory>`), so each rank the book reports is a count of singular
# values above a tolerance. The dashed lines are those tolerances: the study's $10^{-8}$ (an
# absolute level, far below float32's resolution relative to $\sigma_1 \ge 1$) and our relative
# ones. Moving the step shows how training moves the spectrum across them.
#
# **Through training.** The curves are the run's mean of the chosen measure over its
# {glue:text}`explore_probe_size` held-out probe sequences, layers and heads at every probe step,
# the numbers the chapters' verdicts are computed from; the thin lines are the same architecture
# and head dimension at the other temperatures and seeds.
#
# ## Where the numbers come from
#
# The page is exported from the run store when the book is built, inside this chapter's
# execution, so it is cached and recomputed like every other page: a changed run, setting or
# library version exports it again. At {glue:text}`explore_steps_text` each run kept the float32
# attention probabilities of its first {glue:text}`explore_kept` held-out probe sequences, every
# layer and head: exactly the matrices its rank probe measured. The singular values and every rank
# measure on this page are computed from those matrices in float64 by the library's rank code
# (they reproduce the runs' per-sequence probe records). Only the colours of the heat map are
# quantised, to an error of at most {glue:text}`explore_error_text` of the matrix's largest
# entry, and compressed, so that the page with its data and its plotting library (Bokeh
# {glue:text}`explore_bokeh`, inline) fits in 8 MB: at this profile it shows
# {glue:text}`explore_plan`, and takes {glue:text}`explore_page_mb` MB. The runs, with the key of
# each in the run store (the line above the panels shows the selected one's), are listed below.
#
# ````{dropdown} The runs on this page
# ```{attnrank-table} explore_run_table
# The runs on this page: model, settings, status, validation loss and primary rank from the first to the last step,
# and the key each is stored under.
# ```
# ````
