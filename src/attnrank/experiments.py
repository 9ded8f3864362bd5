"""The sweeps behind the chapters: one temperature grid and one head-dimension grid per profile.

The chapters on dynamics, loss, temperature and head dimension share these runs through
the run store, so a cold build trains each configuration once. Grids are defaults: each
chapter's ``parameters`` cell can override them (``None`` means "the profile's default").
"""

from __future__ import annotations

from .errors import ConfigError, check_positive_int
from .models import ARCHS, check_tau
from .profiles import RunConfig, resolve_config, resolve_profile

__all__ = ["PRIMARY_MEASURE", "TAU_GRID", "SWEEP_DEFAULTS", "sweep_defaults", "tau_sweep", "head_dim_sweep", "main_sweep",
           "CHAPTERS", "book_runs"]

#: The rank measure verdicts are computed on (all others are reported beside it).
PRIMARY_MEASURE = "effective_rank"

#: Temperature ratios of the main sweep: 7 values, a factor of about 4 apart, from 1e-3 to 4.
TAU_GRID = (0.001, 0.004, 0.016, 0.063, 0.25, 1.0, 4.0)

#: Per profile: temperature grid, head-dimension grid (at fixed hidden size) and seeds. ``ci``
#: runs take about a second, so it has five seeds; ``quick`` keeps two, as many as a cold CPU
#: build of the book allows (each verdict states how many seeds would resolve it).
SWEEP_DEFAULTS = {
    "ci": dict(taus=TAU_GRID, head_dims=(4, 8, 16, 32), seeds=(0, 1, 2, 3, 4)),
    "quick": dict(taus=TAU_GRID, head_dims=(8, 16, 32, 64), seeds=(0, 1)),
    "paper": dict(taus=TAU_GRID, head_dims=(16, 32, 64, 128), seeds=(0, 1, 2)),
}


def sweep_defaults(profile: str = "auto", *, taus=None, head_dims=None, seeds=None) -> dict:
    """The profile's grids with any of ``taus``, ``head_dims``, ``seeds`` overridden (validated).

    ``seeds`` may be an int (that many seeds, 0..n-1) or a list of seeds.
    """
    d = dict(SWEEP_DEFAULTS[resolve_profile(profile)])
    if taus is not None:
        d["taus"] = tuple(check_tau(t) for t in (taus if isinstance(taus, (list, tuple)) else [taus]))
    if head_dims is not None:
        d["head_dims"] = tuple(check_positive_int("head_dims", h) for h in (head_dims if isinstance(head_dims, (list, tuple)) else [head_dims]))
    if seeds is not None:
        if isinstance(seeds, int) and not isinstance(seeds, bool):
            seeds = list(range(check_positive_int("seeds", seeds)))
        if not isinstance(seeds, (list, tuple)) or not seeds:
            raise ConfigError("seeds", f"got {seeds!r}; expected a positive int or a non-empty list of ints")
        d["seeds"] = tuple(check_positive_int("seeds", s, low=0) for s in seeds)
    return d


def _archs(archs) -> tuple[str, ...]:
    archs = (archs,) if isinstance(archs, str) else tuple(archs)
    for a in archs:
        if a not in ARCHS:
            raise ConfigError("archs", f"got {a!r}; allowed values: {', '.join(ARCHS)}")
    return archs


def tau_sweep(profile: str = "auto", archs=ARCHS, taus=None, seeds=None, **overrides) -> list[RunConfig]:
    """Configs over the temperature grid at the profile's head dimension."""
    d = sweep_defaults(profile, taus=taus, seeds=seeds)
    return [resolve_config(a, profile, tau=t, seed=s, **overrides) for a in _archs(archs) for t in d["taus"] for s in d["seeds"]]


def head_dim_sweep(profile: str = "auto", archs=ARCHS, head_dims=None, seeds=None, tau: float = 1.0, **overrides) -> list[RunConfig]:
    """Configs over the head-dimension grid at fixed ``hidden_size`` (``num_heads = hidden_size / head_dim``)."""
    d = sweep_defaults(profile, head_dims=head_dims, seeds=seeds)
    return [resolve_config(a, profile, tau=tau, head_dim=h, seed=s, **overrides)
            for a in _archs(archs) for h in d["head_dims"] for s in d["seeds"]]


def main_sweep(profile: str = "auto", archs=ARCHS, taus=None, head_dims=None, seeds=None) -> list[RunConfig]:
    """Temperature sweep plus head-dimension sweep (at tau = 1 and at the smallest tau), without duplicates."""
    d = sweep_defaults(profile, taus=taus, head_dims=head_dims, seeds=seeds)
    configs = tau_sweep(profile, archs, d["taus"], d["seeds"])
    for t in sorted({1.0, min(d["taus"])}):
        configs += head_dim_sweep(profile, archs, d["head_dims"], d["seeds"], tau=t)
    unique = {}
    for c in configs:
        unique.setdefault(c, c)
    return list(unique)


def _temp_runs(profile: str) -> list[RunConfig]:
    # the temperature chapter adds its detailed tau (default 0.25) and the baseline tau = 1
    # when they are off the grid (with the defaults both are on it)
    return main_sweep(profile) + tau_sweep(profile, taus=[0.25, 1.0])


def _causal_runs(profile: str) -> list[RunConfig]:
    from .causal import causal_runs  # the causal chapter's 2 x 2 and twins, at its preset sizes

    return causal_runs(profile)


#: Chapters of the book (``chapters/<name>``) and the trained runs each asks the run store
#: for at its default parameters (``None``: none; a chapter's papermill parameters can
#: change its grid, and it then trains the difference itself).
CHAPTERS = {
    "intro": None, "measure": main_sweep, "theory": None, "dynamics": main_sweep, "loss": main_sweep,
    "temp": _temp_runs, "headdim": main_sweep, "causal": _causal_runs, "target": None, "reproducibility": main_sweep, "bibliography": None,
}


def book_runs(profile: str = "auto", chapters=None) -> list[RunConfig]:
    """Every run the given chapters (default: all) train or read, without duplicates, in order.

    ``chapters`` are names of :data:`CHAPTERS` (``"temp"`` or ``"chapters/temp"``).

    Raises:
        ConfigError: naming ``chapters`` for an unknown chapter.
    """
    names = list(CHAPTERS) if chapters is None else [chapters] if isinstance(chapters, str) else list(chapters)
    unique: dict[RunConfig, RunConfig] = {}
    for name in names:
        short = str(name).removeprefix("chapters/").removesuffix(".ipynb")
        if short not in CHAPTERS:
            raise ConfigError("chapters", f"got {name!r}; allowed values: {', '.join(CHAPTERS)}")
        for c in (CHAPTERS[short] or (lambda p: []))(profile):
            unique.setdefault(c, c)
    return list(unique)
