"""The two scalar predicates every validator uses: a real number, an integer — never a bool.

``bool`` is a subclass of ``int`` in Python, so ``isinstance(True, int)`` holds and ``True == 1``: YAML's ``true``
(``dt: true`` in a task file; JSON's ``true`` alike) would otherwise pass as the number 1, a slip turned into a
plausible value. Every check of a number refuses bool through these. numpy scalars count
(``np.float64`` is a float already; ``np.float32``, ``np.int64`` come out of arrays); ``np.bool_`` is neither.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_REAL = (int, float, np.integer, np.floating)
_INTEGER = (int, np.integer)


def is_real(v: Any) -> bool:
    """A real number that is not a bool: int, float, numpy integer or floating scalar (finiteness not checked)."""
    return isinstance(v, _REAL) and not isinstance(v, bool)


def is_integer(v: Any) -> bool:
    """An integer that is not a bool: int or numpy integer scalar (a float with an integral value is not one)."""
    return isinstance(v, _INTEGER) and not isinstance(v, bool)


def as_real_array(v: Any, what: str) -> np.ndarray:
    """``v`` as a float array; ValueError naming ``what`` for strings, mappings, ragged lists, complex numbers or
    integers beyond float range (numpy's "could not convert string to float" or OverflowError named no argument)."""
    if np.iscomplexobj(v):
        raise ValueError(f"{what} is complex (a state and an input are real; pass .real if the imaginary part is zero)")
    try:
        a = np.asarray(v, float)
    except (ValueError, TypeError, OverflowError):
        raise ValueError(f"{what}: expected real numbers, got {type(v).__name__} {str(v)[:60]}") from None
    return a
