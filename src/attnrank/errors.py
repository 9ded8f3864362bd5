"""Exceptions raised by :mod:`attnrank`.

Every error about user input is a :class:`ConfigError` (a ``ValueError``) whose message
names the offending parameter and the values it accepts, so that a wrong setting fails
before any compute is spent.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """A parameter has a value outside its allowed set.

    Attributes:
        param: name of the offending parameter.
    """

    def __init__(self, param: str, message: str):
        self.param = param
        super().__init__(f"{param}: {message}")


class DatasetUnavailable(ConfigError):
    """A dataset cannot be loaded (for example a hub dataset while offline)."""


class RunFailed(RuntimeError):
    """A training run diverged (NaN or infinite loss); it is stored as failed."""


def check_choice(param: str, value, allowed) -> None:
    """Raise :class:`ConfigError` unless ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise ConfigError(param, f"got {value!r}; allowed values: {', '.join(map(repr, allowed))}")


def check_positive_float(param: str, value, *, low: float | None = None, high: float | None = None) -> float:
    """Return ``value`` as a float, or raise :class:`ConfigError` if it is not finite and positive.

    ``low`` and ``high`` (inclusive) narrow the accepted range further.
    """
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(param, f"got {value!r} of type {type(value).__name__}; expected a positive finite number")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(param, f"got {value!r}; expected a positive finite number")
    if (low is not None and value < low) or (high is not None and value > high):
        lo = f"[{low:g}" if low is not None else "(0"
        hi = f"{high:g}]" if high is not None else "inf)"
        raise ConfigError(param, f"got {value!r}; allowed range is {lo}, {hi}")
    return value


def check_positive_int(param: str, value, *, low: int = 1) -> int:
    """Return ``value`` as an int, or raise :class:`ConfigError` unless it is an integer >= ``low``."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ConfigError(param, f"got {value!r} of type {type(value).__name__}; expected an integer >= {low}")
    if value < low:
        raise ConfigError(param, f"got {value!r}; expected an integer >= {low}")
    return value
