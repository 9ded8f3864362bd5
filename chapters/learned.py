# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Have the models learned?
#
# Every claim this book tests on trained models is a claim about transformers that use their attention. A model that
# predicts no better than a count model of one neighbouring token has not started to do so, and a claim that fails on
# it says nothing about the study. So before any claim: where do the book's models stand?
#
# **Three count models that need no attention**, fitted on the training blocks and scored on exactly the validation
# targets of the runs (`attnrank.baselines`):
#
# * *unigram*: how often each token occurs (Laplace smoothing);
# * *bigram*: the token given the visible token before it (Witten-Bell interpolation with the unigram); for BERT, the
#   left neighbour of the masked position, which may itself be masked;
# * *two-sided* (BERT only): the token given both visible neighbours: the left and the right bigram combined as
#   independent evidence, interpolated with the counts of the triple (left, token, right).
#
# A GPT-2 reaches its bigram without attention (a token's own embedding predicts the next token), so ending below it
# is necessary, not sufficient, for using attention; a neural model also smooths better than counts. A masked BERT
# position sees only `[MASK]` itself: every nat it gains over the unigram comes through attention to its neighbours,
# and beating the two-sided model needs more than the two nearest ones.
#
# **The targets, fixed before the runs were trained.** At $\tau = 1$, in every seed, GPT-2's final validation loss
# is at least {glue:text}`learned_target_gpt2` nats below its bigram and BERT's at least {glue:text}`learned_target_bert`
# nats below its bigram, with the two-sided model reported beside it. Every verdict of the book states the regime of
# the runs it rests on in one clause computed the same way (`attnrank.learned.regime`).

# %% tags=["parameters"]
profile = "auto"
seeds = None
dataset = None  # training corpus: shakespeare or hf:NAME[:CONFIG]; None: ATTNRANK_DATASET or shakespeare

# %% tags=["remove-cell"]
import warnings

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a kernel without ipywidgets
from IPython.display import display

from attnrank import book, evidence, experiments, learned
from attnrank.plots import learned as lplots

book.check_parameters(globals(), ("profile", "seeds", "dataset"))
profile = book.setup(profile)
book.glue_all({f"learned_target_{a}": f"{n:g}" for a, (_, n) in learned.TARGETS.items()})

# %% [markdown]
# ## Validation loss against compute
#
# The shared grid of the trained-model chapters, {glue:text}`learned_n_runs` runs of {glue:text}`learned_steps` steps
# ({glue:text}`learned_profile` profile). The figure follows the runs at $\tau = 1$ and at the coldest temperature of the
# grid through training, against the training FLOP spent on them.

# %% tags=["remove-input"]
runs = evidence.main_runs(profile, seeds=seeds, dataset=dataset)
shown = learned.shown_runs(runs)
curves = learned.curves(shown)
book.glue_all(
    {
        "learned_n_runs": len(runs),
        "learned_steps": int(runs.max_steps.max()),
        "learned_profile": profile,
        "learned_regime": learned.regime(runs),
        "learned_regime_shown": learned.regime(shown),
    }
)
book.show(*lplots.loss_figure(curves, profile=profile, n_runs=len(shown)))

# %% [markdown]
# Over the whole grid: {glue:text}`learned_regime`. Over the runs drawn: {glue:text}`learned_regime_shown`.
#
# **The targets:** {glue:text}`learned_targets_text`

# %% tags=["remove-input"]
targets = learned.targets(runs)
book.glue("learned_targets_text", learned.targets_text(targets))
display(targets)

# %% [markdown]
# ## What each verdict rests on
#
# Models that learn cost more steps per run, so within the cold build's budget the default profile trains fewer
# settings ({glue:text}`learned_n_runs` runs in the shared grid): every verdict states the runs it rests on, its
# intervals widen with fewer runs, and an unresolved verdict states how many runs would resolve it. The runs each
# verdict of this build is computed from:

# %% tags=["remove-input"]
display(experiments.verdict_scales(profile, dataset=dataset))

# %% [markdown]
# ## Where the compute goes
#
# The CPU seconds of the shared grid's runs, as they recorded them (process CPU time: training steps, rank probes,
# validation loss):

# %% tags=["remove-input"]
display(learned.split(runs).round(3))

# %% [markdown]
# A cold build of the book trains the runs below before any chapter executes; the next analyses the book needs
# (more seeds, the causal design where the temperature has a loss effect, a second corpus) would add the second
# table. Both are costed from each run's training FLOP at the rate the shared grid's runs measured on this machine
# ({glue:text}`learned_rate_gpt2` FLOP per CPU second for GPT-2, {glue:text}`learned_rate_bert` for BERT, probes and
# validation included); two cores train two runs at a time.

# %% tags=["remove-input"]
rate = learned.measured_rate(runs)
book.glue_all({f"learned_rate_{a}": f"{r:.3g}" for a, r in rate.items()})
plan = learned.plan_parts(profile)
display(learned.budget(plan["build"], rate).round(1))
display(learned.budget(plan["next"], rate).round(1))
