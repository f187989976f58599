"""The value parsers of the task YAML (planning.task): numbers and expressions of pi, bounded integers, vectors,
mappings with known keys. Each raises TaskError naming the key."""

from __future__ import annotations

import ast
import operator

import numpy as np

from ..model.errors import unknown_keys
from ..model.limits import MAX_LINKS
from ..model.scalars import is_integer

_MAX_EXPRESSION = 200  # characters of a number expression such as "pi/2"
MAX_VECTOR = MAX_LINKS  # entries of any list of numbers (one per joint at most)


class TaskError(ValueError):
    """A task file is invalid; the message names the key."""


_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def parse_number(v, key: str) -> float:
    """A finite float, or a string of arithmetic on numbers and ``pi`` (no other names are evaluated)."""
    if isinstance(v, bool):
        raise TaskError(f"{key}: expected a number, got {v!r}")
    out = None
    if isinstance(v, (int, float)):
        try:
            out = float(v)
        except OverflowError:  # an integer beyond float range
            out = float("inf")
    elif isinstance(v, str) and len(v) <= _MAX_EXPRESSION:

        def ev(n):
            if isinstance(n, ast.Expression):
                return ev(n.body)
            if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)):
                return float(n.value)
            if isinstance(n, ast.Name) and n.id == "pi":
                return np.pi
            if isinstance(n, ast.BinOp) and type(n.op) in _OPS:
                return _OPS[type(n.op)](ev(n.left), ev(n.right))
            if isinstance(n, ast.UnaryOp) and type(n.op) in _OPS:
                return _OPS[type(n.op)](ev(n.operand))
            raise ValueError

        try:
            out = float(ev(ast.parse(v, mode="eval")))
        except (ValueError, SyntaxError, ZeroDivisionError, OverflowError, RecursionError, MemoryError):
            pass
    if out is None:
        raise TaskError(f"{key}: expected a number or an expression of pi, got {v!r}")
    if not np.isfinite(out):
        raise TaskError(f"{key}: must be finite, got {v!r}")
    return out


def integer_in(v, key: str, lo: int, hi: int) -> int:
    """An int (not bool) in [lo, hi]; TaskError naming the key."""
    if not is_integer(v) or not lo <= v <= hi:
        raise TaskError(f"{key}: must be an integer in [{lo}, {hi}], got {v!r}")
    return v


def parse_vector(v, key: str, n: int | None = None, bound: float | None = None) -> np.ndarray:
    """A list of numbers (or one number) as an array; ``n`` entries if given, each within ±``bound``."""
    if not isinstance(v, (list, tuple)):
        v = [v]
    if len(v) > MAX_VECTOR:
        raise TaskError(f"{key}: {len(v)} entries, more than any model has")
    out = np.array([parse_number(a, f"{key}[{i}]") for i, a in enumerate(v)], dtype=float)
    if n is not None and out.size != n:
        raise TaskError(f"{key}: expected {n} entries, got {out.size}")
    if not np.all(np.isfinite(out)):
        raise TaskError(f"{key}: entries must be finite")
    if bound is not None and out.size and np.abs(out).max() > bound:
        raise TaskError(f"{key}: {out[np.argmax(np.abs(out))]:g} is beyond the supported range ±{bound:g}")
    return out


def positive_number(v, key: str) -> float:
    x = parse_number(v, key)
    if not (np.isfinite(x) and x > 0):
        raise TaskError(f"{key}: must be a positive finite number, got {v!r}")
    return x


def mapping_of(d, key: str, allowed: set[str]) -> dict:
    if d is None:
        return {}
    if not isinstance(d, dict):
        raise TaskError(f"{key}: expected a mapping, got {type(d).__name__}")
    unknown = sorted(set(d) - allowed, key=str)
    if unknown:
        raise TaskError(f"{key}: {unknown_keys(unknown, allowed)}; allowed: {sorted(allowed)}")
    return d
