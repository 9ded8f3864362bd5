"""The parameters a caller passes to the book's sweeps and chapters, each declared once with its one check.

:class:`Param` checks one parameter (type, range, list-ness, allowed values) and words what it accepts;
:data:`SWEEP_PARAMETERS` are the shared sweep's (:func:`attnrank.runs.experiments.sweep_plan` applies them), and
:data:`attnrank.book.PARAMETERS` adds every chapter's other parameters. Numbers are read by
:func:`attnrank.core.errors.check_int` and :func:`~attnrank.core.errors.check_real`, as a run's config fields are.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from ..core.errors import ConfigError, check_int, check_real
from ..core.profiles import SEED_RANGE, TAU_RANGE

__all__ = ["MAX_VALUES", "Param", "SWEEP_PARAMETERS"]

#: The most values a list parameter takes (or a count ``n`` of ``0..n-1`` means): each value trains runs, so a
#: larger list is a typing error, refused before a list of that size is built.
MAX_VALUES = 1000


@dataclass(frozen=True)
class Param:
    """One chapter parameter: its type, range, list-ness and allowed values.

    Attributes:
        kind: ``int``, ``float`` or ``str``. An ``int`` parameter accepts integer-valued
            floats (``1e3``); a ``float`` parameter accepts integers; ``bool`` is neither.
        low, high: inclusive bounds (``open_low``: the lower bound is excluded).
        many: a non-empty list of at most :data:`MAX_VALUES` values; a single value is accepted as a one-element list.
        count: with ``many``, a single integer ``n`` (1 to :data:`MAX_VALUES`) means the list ``0, ..., n - 1``.
        optional: ``None`` is accepted (it means the profile's default).
        choices: the allowed values, if they are a fixed set.
        help: what the parameter means (shown in error messages).
        validate: for values no fixed set or range describes (a dataset name), a check
            ``validate(name, value) -> value`` applied last; it raises :class:`ConfigError`
            naming ``name``.
    """

    kind: type
    low: float | None = None
    high: float | None = None
    many: bool = False
    count: bool = False
    optional: bool = False
    choices: tuple | None = None
    open_low: bool = False
    help: str = ""
    validate: object = None

    def _one(self) -> str:
        """One allowed value, in words (``"an integer in [0, 10]"``)."""
        if self.choices:
            return "one of " + ", ".join(map(repr, self.choices))
        one = {int: "an integer", float: "a number", str: "a string"}[self.kind]
        if self.low is not None or self.high is not None:
            lo = "(" if self.open_low else "["
            one += f" in {lo}{_bound(self.low, '-inf')}, {_bound(self.high, 'inf')}]"
        return one

    def describe(self) -> str:
        """The allowed values, in words."""
        one = self._one()
        text = f"{one}, or a non-empty list of them" if self.many else one
        if self.count:
            text += f" (a single integer n means the {self.help or 'values'} 0..n-1)"
        elif self.help:
            text += f" ({self.help})"
        if self.optional:
            text += ", or None for the profile's default"
        return text

    def check(self, name: str, value):
        """Return ``value`` normalised (a list for ``many``), or raise :class:`ConfigError` naming ``name``."""
        if value is None:
            if self.optional:
                return None
            raise ConfigError(name, f"got None; expected {self.describe()}")
        if self.many and self.kind is not str and isinstance(value, str):
            value = _literal(value)  # papermill's -p hands a list over as its text, "[0.25, 1]"
        if self.many:
            if isinstance(value, (list, tuple)):
                if not value:
                    raise ConfigError(name, f"got an empty list; expected {self.describe()}")
                if len(value) > MAX_VALUES:
                    raise ConfigError(name, f"got a list of {len(value)} values; expected at most {MAX_VALUES}")
                return [self._scalar(name, v) for v in value]
            if self.count:
                n = self._number(name, value, int)
                if n < 1:  # a count, not a value: the range of one value does not apply
                    raise ConfigError(
                        name,
                        f"got {value!r}; a single integer n means the {self.help or 'values'} 0..n-1, so n must be"
                        f" at least 1; or give a non-empty list of values, each {self._one()}",
                    )
                if n > MAX_VALUES:
                    raise ConfigError(
                        name,
                        f"got {value!r}; a single integer n means the {self.help or 'values'} 0..n-1, so n must be"
                        f" at most {MAX_VALUES}; or give a list of at most {MAX_VALUES} values, each {self._one()}",
                    )
                return list(range(n))
            return [self._scalar(name, value)]
        return self._scalar(name, value)

    def _number(self, name: str, value, kind: type):
        """``value`` as ``kind`` by :func:`check_int` or :func:`check_real` (unbounded: :meth:`_scalar` checks the
        range), the error worded with what this parameter accepts."""
        try:
            return check_int(name, value) if kind is int else check_real(name, value)
        except ConfigError:
            real = isinstance(value, numbers.Real) and not isinstance(value, bool)
            typed = "" if real and kind is float else f" of type {type(value).__name__}"
            raise ConfigError(name, f"got {value!r}{typed}; expected {self.describe()}") from None

    def _scalar(self, name: str, value):
        if self.kind is str:
            if not isinstance(value, str):
                raise ConfigError(name, f"got {value!r} of type {type(value).__name__}; expected {self.describe()}")
        else:
            value = self._number(name, value, self.kind)
        if self.choices is not None and value not in self.choices:
            raise ConfigError(name, f"got {value!r}; expected {self.describe()}")
        too_low = self.low is not None and (value <= self.low if self.open_low else value < self.low)
        if too_low or (self.high is not None and value > self.high):
            raise ConfigError(name, f"got {value!r}; expected {self.describe()}")
        return self.validate(name, value) if self.validate is not None else value


def _literal(text: str):
    """The Python literal ``text`` writes (``"[8, 16]"`` is ``[8, 16]``), or ``text`` itself when it writes none."""
    import ast

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def _bound(x, infinite: str) -> str:
    if x is None:
        return infinite
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


#: The sweep's parameters, each with its one check: a chapter's ``seeds``, ``taus`` and ``head_dims`` are these
#: (:data:`attnrank.book.PARAMETERS`), and :func:`attnrank.runs.experiments.sweep_plan` applies them to what an API caller passes.
SWEEP_PARAMETERS = {
    "seeds": Param(int, *SEED_RANGE, many=True, count=True, optional=True, help="seeds"),
    "taus": Param(float, *TAU_RANGE, many=True, optional=True, help="temperature ratios"),
    "head_dims": Param(int, 1, 4096, many=True, optional=True, help="head dimensions"),
}
