"""One process-wide lock for building CasADi graphs.

CasADi evaluates a built Function from any thread, but does not promise thread-safe symbolics (casadi/casadi#1355):
its graph algorithms — differentiation, sorting a new Function's algorithm, code generation — walk expression graphs
that share nodes between expressions, and its Python bindings release the GIL while they run. Two threads building at
once crash the process: a joint stop's held system generated in the background (``integrators.stops``) while the
stepping thread built the next one died in ``CodeGenerator.add`` beside ``gradient`` (a segfault in CI). So every
symbolic build and code generation in vi_control holds ``GRAPH_LOCK`` (re-entrant: builders call builders), whatever
thread it runs in; evaluating a built function and running the C compiler do not, so a thread that compiles never
holds up one that builds.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TypeVar

GRAPH_LOCK = threading.RLock()

F = TypeVar("F", bound=Callable)


def builds_graph(fn: F) -> F:
    """``fn`` runs holding ``GRAPH_LOCK`` (a function or method that builds or walks CasADi expression graphs)."""

    @functools.wraps(fn)
    def locked(*args, **kwargs):
        with GRAPH_LOCK:
            return fn(*args, **kwargs)

    return locked  # type: ignore[return-value]
