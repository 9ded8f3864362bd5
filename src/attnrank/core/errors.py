"""Exceptions raised by :mod:`attnrank`.

Every error about user input is a :class:`ConfigError` (a ``ValueError``) whose message
names the offending parameter and the values it accepts, so that a wrong setting fails
before any compute is spent.

Every exception class of the library survives a process boundary: it pickles and unpickles
to the same class, message and attributes (a grid worker's error reaches the driver as the
same error). :func:`portable` turns any other exception into a :class:`WorkerError` that does.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """A parameter has a value outside its allowed set.

    Attributes:
        param: name of the offending parameter.
    """

    def __init__(self, param: str, message: str):
        self.param = param
        self.message = message
        super().__init__(f"{param}: {message}")

    def __reduce__(self):  # unpickling calls __init__ with these, not with the joined text
        return type(self), (self.param, self.message), self.__dict__


class DatasetUnavailable(ConfigError):
    """A dataset cannot be loaded (for example a hub dataset while offline)."""


class RunFailed(RuntimeError):
    """A training run diverged (NaN or infinite loss); it is stored as failed."""


class RunDamaged(RuntimeError):
    """A stored run's files do not match what its config builds (for example weights with
    renamed or missing tensors): it cannot be read as a result."""


class SweepFailed(RuntimeError):
    """Runs of a sweep raised or lost their worker too often; raised after every other run finished."""


class WorkerError(RuntimeError):
    """An exception raised in a worker process that could not cross the process boundary as
    itself; it keeps the original class name, message and traceback text.

    Attributes:
        kind: the original exception's class name (``module.Name``).
        traceback: the worker's formatted traceback.
    """

    def __init__(self, kind: str, message: str, traceback: str = ""):
        self.kind, self.message, self.traceback = kind, message, traceback
        super().__init__(f"{kind}: {message}")

    def __reduce__(self):
        return type(self), (self.kind, self.message, self.traceback)


def portable(exc: BaseException) -> BaseException:
    """``exc`` if it is rebuilt as the same class and message from what it pickles to, else a
    :class:`WorkerError`.

    A worker raises ``portable(exc)``, so the driver receives a named error instead of a
    broken pool (``concurrent.futures``) or an ``UnserializableException`` (Ray). The rebuild
    is ``copy.deepcopy``, which calls the same ``__reduce_ex__`` recipe unpickling calls (so
    nothing is ever unpickled here).
    """
    import copy
    import traceback

    try:
        back = copy.deepcopy(exc)
        if type(back) is type(exc) and str(back) == str(exc):
            return exc
    except Exception:  # noqa: BLE001 (any failure to round-trip)
        pass
    kind = f"{type(exc).__module__}.{type(exc).__qualname__}".removeprefix("builtins.")
    text = "".join(traceback.format_exception(exc))
    return WorkerError(kind, " ".join(str(exc).split()), text)


def check_choice(param: str, value, allowed) -> None:
    """Raise :class:`ConfigError` unless ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise ConfigError(param, f"got {value!r}; allowed values: {', '.join(map(repr, allowed))}")


def _range_text(low, high, low_open: bool, high_open: bool) -> str:
    lo = "(-inf" if low is None else f"{'(' if low_open else '['}{low:g}"
    hi = "inf)" if high is None else f"{high:g}{')' if high_open else ']'}"
    return f"{lo}, {hi}"


def check_real(
    param: str,
    value,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a plain ``float``, or raise :class:`ConfigError`.

    Accepts Python and NumPy numbers (not ``bool``, not strings) that are finite and lie in
    the range from ``low`` to ``high`` (inclusive unless ``low_open``/``high_open``; None is
    unbounded). ``np.float64(0.3)`` becomes the plain float ``0.3``.
    """
    import math
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(
            param,
            f"got {value!r} of type {type(value).__name__}; expected a number in "
            f"{_range_text(low, high, low_open, high_open)}",
        )
    value = float(value)
    if (
        not math.isfinite(value)
        or (low is not None and (value <= low if low_open else value < low))
        or (high is not None and (value >= high if high_open else value > high))
    ):
        raise ConfigError(param, f"got {value!r}; allowed range is {_range_text(low, high, low_open, high_open)}")
    return value


def check_int(param: str, value, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as a plain ``int``, or raise :class:`ConfigError`.

    Accepts Python and NumPy integers and integer-valued finite floats (``3.0``), not
    ``bool`` or strings, in ``[low, high]`` (None is unbounded).
    """
    import math
    import numbers

    expected = f"an integer in [{'-inf' if low is None else low}, {'inf' if high is None else high}]"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(param, f"got {value!r} of type {type(value).__name__}; expected {expected}")
    if not isinstance(value, numbers.Integral):
        if not (math.isfinite(value) and float(value).is_integer()):
            raise ConfigError(param, f"got {value!r}; expected {expected}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ConfigError(param, f"got {value!r}; expected {expected}")
    return value


def check_positive_float(param: str, value, *, low: float | None = None, high: float | None = None) -> float:
    """Return ``value`` as a float, or raise :class:`ConfigError` if it is not finite and positive.

    ``low`` and ``high`` (inclusive) narrow the accepted range further.
    """
    positive_only = low is None or low <= 0  # always > 0; a positive ``low`` is inclusive
    return check_real(param, value, low=0.0 if positive_only else low, high=high, low_open=positive_only)


def check_positive_int(param: str, value, *, low: int = 1) -> int:
    """Return ``value`` as an int, or raise :class:`ConfigError` unless it is an integer >= ``low``."""
    return check_int(param, value, low=low)
