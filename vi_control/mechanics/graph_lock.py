"""One process-wide lock for CasADi expression graphs: built, walked and released one thread at a time.

CasADi evaluates a built Function from any thread, but does not promise thread-safe symbolics (casadi/casadi#1355):
an SX node's reference count is a plain integer, the constant nodes (0, 1, …) are shared by every expression, and
the graph algorithms (differentiation, sorting a new Function's algorithm, code generation) mark the nodes they walk;
its Python bindings release the GIL meanwhile. Two threads that create, walk or *release* expressions at once
corrupt each other's counts and marks. A joint stop's held system generated in the background
(``integrators.stops``) beside the stepping thread's next build died in ``CodeGenerator.add`` beside ``gradient``
(SIGSEGV), and — once the builds were serialized — at the end of a build, as its temporaries were released outside
the lock (SIGABRT; building and dropping systems beside a builder crashed 1 of 4 such processes).

So in vi_control:

- every build holds ``GRAPH_LOCK`` (``builds_graph``: a function whose temporaries are released before the lock is;
  re-entrant, builders call builders);
- every object that keeps expressions or CasADi functions (``OwnsGraphs``) is released under it too: when one is
  dropped — in whatever thread, whenever the last reference goes — its attributes go to a graveyard, emptied under
  the lock at the next build (or ``release_dropped_graphs()``).

Evaluating a built function with numbers and running the C compiler need no lock: a thread that compiles never holds
up one that builds.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TypeVar

GRAPH_LOCK = threading.RLock()
_graveyard: list[dict] = []  # the attributes of dropped ``OwnsGraphs``, released under GRAPH_LOCK

F = TypeVar("F", bound=Callable)


def _release_dropped() -> None:
    """(The caller holds GRAPH_LOCK.) What was dropped is released here — one at a time: a released owner may drop
    others, which join the graveyard meanwhile."""
    while _graveyard:
        _graveyard.pop()


def release_dropped_graphs() -> None:
    """Release, under GRAPH_LOCK, the expressions of every ``OwnsGraphs`` dropped since the last build."""
    with GRAPH_LOCK:
        _release_dropped()


def builds_graph(fn: F) -> F:
    """``fn`` runs holding ``GRAPH_LOCK`` (a function or method that builds or walks CasADi expression graphs); its
    local expressions are released before the lock is, and so is what other threads dropped meanwhile."""

    @functools.wraps(fn)
    def locked(*args, **kwargs):
        with GRAPH_LOCK:
            _release_dropped()
            return fn(*args, **kwargs)

    return locked  # type: ignore[return-value]


class OwnsGraphs:
    """An object that keeps CasADi expressions or functions: dropped, its attributes wait in the graveyard until a
    build (or ``release_dropped_graphs``) releases them under ``GRAPH_LOCK``, whatever thread dropped it."""

    def __del__(self) -> None:
        attributes = getattr(self, "__dict__", None)
        if attributes and _graveyard is not None:  # (None: the interpreter is shutting down)
            _graveyard.append(dict(attributes))
