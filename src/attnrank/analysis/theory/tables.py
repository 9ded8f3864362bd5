"""The tables of the theory chapter that are worth caching: slow, deterministic, and free of words.

Each function computes one table from its sizes and a seed and is handed to
:func:`attnrank.runs.cache.cached` by :mod:`attnrank.sections.theory`, which keys the table by this
module's code and the inputs. The chapter's sentences live in :mod:`attnrank.sections.theory`,
so rewording them recomputes none of these tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from ...core.rank import numerical_rank, singular_values
from .exact import exact_singular_values
from .sampling import monte_carlo_hardmax_rank, monte_carlo_rank, sample_logits

__all__ = ["Check", "SAT_MEASURES", "generator", "exact_spectra", "saturation_table", "hardmax_mc_table"]

#: The measures of the P1' saturation check (the first is the one its figure and verdict read).
SAT_MEASURES = ("rank_rtol_1e-2", "rank_rtol_1e-4", "effective_rank")


@dataclass
class Check:
    """One proposition's check: ``tables`` (name -> DataFrame), ``glue`` (chapter name -> value),
    ``tested`` instances and ``violations`` found (both also in ``glue`` as
    ``<prefix>_<check>_tested`` / ``_violations`` when ``check`` is set)."""

    tables: dict = field(default_factory=dict)
    glue: dict = field(default_factory=dict)
    check: str | None = None
    tested: int = 0
    violations: int = 0
    prefix: str = "theory"

    def __post_init__(self):
        if self.check is not None:
            self.glue[f"{self.prefix}_{self.check}_tested"] = int(self.tested)
            self.glue[f"{self.prefix}_{self.check}_violations"] = int(self.violations)


def generator(seed: int, offset: int) -> torch.Generator:
    """The CPU random generator of one draw of a check: seeded ``1000 * seed + offset``, so that each check (its
    ``offset``) draws its own logits for every ``seed``."""
    return torch.Generator().manual_seed(1000 * seed + offset)


def exact_spectra(n: int, instances: int, digits: int, head_dim: int, seed: int) -> pd.DataFrame:
    """``log10`` singular values of ``softmax(S)`` for random logits, in mpmath and in float64.

    Columns ``instance``, ``k`` (1..n), ``log10_sigma``, ``method``, ``float_rank`` (the
    float64 rank with NumPy's default tolerance). Slow (mpmath): cache it.
    """
    S = sample_logits(n, head_dim, instances, generator=generator(seed, 1))
    rows = []
    for i in range(instances):
        exact = exact_singular_values(S[i], digits=digits)
        A = torch.softmax(S[i], -1)
        fl = np.log10(np.clip(singular_values(A).numpy(), 1e-300, None))
        r = int(numerical_rank(A))
        for k in range(n):
            rows.append(
                dict(instance=i, k=k + 1, log10_sigma=float(exact[k]), method=f"mpmath, {digits} digits", float_rank=r)
            )
            rows.append(dict(instance=i, k=k + 1, log10_sigma=float(fl[k]), method="float64 SVD", float_rank=r))
    return pd.DataFrame(rows)


def saturation_table(n: int, head_dims, samples: int, seed: int, measures=SAT_MEASURES) -> pd.DataFrame:
    """Monte Carlo means of rank measures of ``softmax(S)`` at ``tau = 1`` per head dimension and in
    the i.i.d. limit (``head_dim`` = inf). Columns ``head_dim``, ``measure``, ``mean``,
    ``ci_low``, ``ci_high``, ``samples``."""
    rows = []
    for d in list(head_dims) + [None]:
        res = monte_carlo_rank(n, d, samples, measures=tuple(measures), seed=1000 * seed + (7 if d is None else d))
        rows += [
            dict(
                head_dim=math.inf if d is None else d,
                measure=m,
                mean=e.value,
                ci_low=e.low,
                ci_high=e.high,
                samples=e.n,
            )
            for m, (e, _) in res.items()
        ]
    return pd.DataFrame(rows)


def hardmax_mc_table(n_values, head_dims, samples: int, seed: int) -> pd.DataFrame:
    """Monte Carlo mean hardmax rank per ``(n, head_dim)`` and in the i.i.d. limit (``head_dim`` =
    inf). Columns ``n``, ``head_dim``, ``mean``, ``ci_low``, ``ci_high``, ``sd``, ``max``,
    ``ties``, ``samples``."""
    rows = []
    for n in n_values:
        for d in list(head_dims) + [None]:
            e, ranks, ties = monte_carlo_hardmax_rank(
                n, d, samples, seed=1000 * seed + 17 * n + (5 if d is None else d)
            )
            rows.append(
                dict(
                    n=n,
                    head_dim=math.inf if d is None else d,
                    mean=e.value,
                    ci_low=e.low,
                    ci_high=e.high,
                    sd=float(ranks.double().std()),
                    max=int(ranks.max()),
                    ties=ties,
                    samples=e.n,
                )
            )
    return pd.DataFrame(rows)
