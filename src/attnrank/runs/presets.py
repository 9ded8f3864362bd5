"""Chapter presets: the sizes of the work each chapter does beyond the profile's shared sweep.

A profile (:mod:`attnrank.core.profiles`) sizes the trained models of the shared sweep; a preset sizes
what a chapter adds for a build of that profile:

* :data:`PRESETS` - the chapters that compute without trained models (the theory chapter's
  random instances, the target chapter's toy task), read with :func:`preset`;
* :data:`RUN_PRESETS` - the runs a chapter trains at other sizes than the build's profile (the
  theory chapter's sequence lengths, the causal chapter's 2 x 2 and twins).

A preset is not an input of any stored run: a run built from a preset holds every value it takes
in its :class:`~attnrank.core.profiles.RunConfig`, which the run key hashes. This module is outside the
training path's import closure (:data:`attnrank.runs.provenance.RUN_ROOTS`), so editing a chapter's
size here re-keys no stored run.
"""

from __future__ import annotations

import pandas as pd

from ..core.errors import check_choice
from ..core.profiles import PROFILES, base_profile

__all__ = ["PRESETS", "RUN_PRESETS", "preset", "preset_table", "run_preset_table"]


#: Sizes of the chapters that compute without trained models, per profile (beside the run
#: profiles above, which size the trained models). ``theory``: random instances of the
#: propositions (P0: ``p0_n`` x ``p0_n`` matrices, ``p0_inst`` instances, ``p0_digits`` digits of
#: mpmath; P1: staircase size ``stair_n``, Taylor size ``taylor_n`` with ``taylor_inst`` instances
#: per setting; P1': size ``sat_n``, ``sat_samples`` matrices per point and head dimensions
#: ``sat_head_dims``; P2: size ``p2_n``, head dimension ``p2_d``, ``p2_inst`` instances and a grid of
#: ``p2_grid`` temperatures; theorem: ``mc_samples`` draws per point, head dimensions
#: ``mc_head_dims`` and sequence lengths ``n_values``). ``target``: the toy model trained on a
#: target of size ``n`` for ``steps`` steps, over ``taus`` x ``head_dims`` x ``n_seeds`` seeds,
#: logging every ``log_every`` steps. Read with :func:`preset`; printed by :func:`preset_table`.
PRESETS = {
    "theory": {
        "ci": dict(
            p0_n=16,
            p0_inst=2,
            p0_digits=60,
            stair_n=40,
            taylor_n=32,
            taylor_inst=3,
            sat_n=48,
            sat_samples=8,
            p2_n=32,
            p2_d=8,
            p2_inst=6,
            p2_grid=29,
            mc_head_dims=[1, 2, 4, 8, 16, 64, 256],
            mc_samples=40,
            n_values=[64, 256],
            sat_head_dims=[1, 2, 4, 8, 16, 64, 128, 512],
        ),
        "quick": dict(
            p0_n=32,
            p0_inst=3,
            p0_digits=120,
            stair_n=80,
            taylor_n=64,
            taylor_inst=8,
            sat_n=128,
            sat_samples=32,
            p2_n=64,
            p2_d=8,
            p2_inst=32,
            p2_grid=57,
            mc_head_dims=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
            mc_samples=400,
            n_values=[64, 256],
            sat_head_dims=[1, 2, 4, 8, 16, 64, 128, 512],
        ),
        "paper": dict(
            p0_n=32,
            p0_inst=8,
            p0_digits=150,
            stair_n=128,
            taylor_n=128,
            taylor_inst=32,
            sat_n=128,
            sat_samples=256,
            p2_n=128,
            p2_d=8,
            p2_inst=128,
            p2_grid=113,
            mc_head_dims=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048],
            mc_samples=4000,
            n_values=[64, 256],
            sat_head_dims=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
        ),
    },
    "target": {
        "ci": dict(n=32, steps=200, taus=[0.01, 0.1, 1.0, 10.0], head_dims=[1, 2, 16, 32], n_seeds=4, log_every=10),
        "quick": dict(
            n=64,
            steps=600,
            taus=[0.01, 0.03, 0.1, 0.3, 1.0, 10.0],
            head_dims=[1, 2, 16, 32, 64],
            n_seeds=6,
            log_every=20,
        ),
        "paper": dict(
            n=128,
            steps=2000,
            taus=[0.01, 0.0178, 0.0316, 0.0562, 0.1, 0.178, 0.316, 0.562, 1.0, 1.78, 3.16, 5.62, 10.0],
            head_dims=[1, 2, 4, 16, 32, 64, 128],
            n_seeds=6,
            log_every=20,
        ),
    },
}


#: Per chapter and profile, the runs a chapter trains at sizes other than the build's own
#: profile: ``sizes`` (the profile whose defaults they take; their config's ``profile`` names
#: it), ``overrides`` of those defaults, ``seeds`` and, where not both of the book's models, ``archs``. Each costs
#: what a short chapter may add to a cold build: the theory chapter's sequence lengths (``max_len`` varied over
#: ``attnrank.runs.experiments.SEQ_LENS``) at ``ci`` sizes, and the causal chapter's 2 x 2 and twins: at ``ci``
#: sizes for ``ci``, at ``quick`` sizes (where the models learn) for the others. At ``quick`` (since 2026-12-07)
#: GPT-2's alone, three seeds: the masked LM does not learn under the conditions P3 needs at these sizes (the scale
#: check, which trains both, records it), and GPT-2's 15 runs cost about 5 minutes of two cores (41 CPU seconds
#: each, measured on the cold build of 2026-12-07, 16 minutes without them), where both models' 30 would
#: cost about 10.
RUN_PRESETS = {  # ``scale`` keeps ``quick``'s sequence-length runs (set below)
    "seq_len": {
        "ci": dict(sizes="ci", overrides={}, seeds=(0, 1, 2)),
        "quick": dict(sizes="ci", overrides={}, seeds=(0, 1, 2)),
        "paper": dict(sizes="quick", overrides={}, seeds=(0, 1, 2)),
    },
    "causal": {
        "ci": dict(sizes="ci", overrides={}, seeds=(0, 1, 2, 3, 4)),
        "quick": dict(sizes="quick", overrides={}, seeds=(0, 1, 2), archs=("gpt2",)),
        "paper": dict(sizes="quick", overrides={}, seeds=(0, 1, 2, 3, 4)),
        "scale": dict(sizes="quick", overrides={}, seeds=(0, 1, 2)),
    },
}


RUN_PRESETS["seq_len"]["scale"] = RUN_PRESETS["seq_len"]["quick"]


def run_preset_table():
    """:data:`RUN_PRESETS` as a table: one row per chapter and profile of the build, with the sizes'
    profile, the overrides and the seeds (text)."""
    return pd.DataFrame(
        [
            {
                "chapter": c,
                "build profile": p,
                "sizes of": v["sizes"],
                "overrides": ", ".join(f"{k}={x}" for k, x in v["overrides"].items()) or "none",
                "seeds": ", ".join(map(str, v["seeds"])),
                "models": ", ".join(v.get("archs", ("both",))),
            }
            for c in RUN_PRESETS
            for p, v in RUN_PRESETS[c].items()
        ]
    )


def preset(chapter: str, profile: str = "auto") -> dict:
    """A copy of the sizes of ``chapter`` (``theory`` or ``target``) for ``profile`` (``scale``: the ``quick`` sizes).

    Raises:
        ConfigError: naming ``chapter`` or ``profile`` for an unknown value.
    """
    check_choice("chapter", chapter, tuple(PRESETS))
    return {k: list(v) if isinstance(v, list) else v for k, v in PRESETS[chapter][base_profile(profile)].items()}


def preset_table():
    """:data:`PRESETS` as a table: one row per chapter and size, one column per profile (text)."""
    rows = [
        {
            "chapter": c,
            "size": k,
            **{
                p: ", ".join(map(str, v)) if isinstance(v, list) else str(v)
                for p, v in ((p, PRESETS[c][base_profile(p)][k]) for p in PROFILES)
            },
        }
        for c in PRESETS
        for k in PRESETS[c]["ci"]
    ]
    return pd.DataFrame(rows)
