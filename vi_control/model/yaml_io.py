"""The one YAML reader of vi_control: YAML 1.2 core-schema scalars, no YAML 1.1 surprises, errors as ValueError.

PyYAML resolves plain scalars by YAML 1.1 rules, which turn ordinary-looking values into something else:
``dt: 1:30`` is 90 (base 60), ``mode: no`` is False, ``seed: 0777`` is 511, ``limit: 1_000`` is 1000,
``date: 2024-01-01`` is a datetime, while ``tolerance: 1e-6`` stays a *string* (1.1 floats need a dot).
Every YAML file vi_control parses itself (system YAML, task YAML, the ROS parameter files the main job reads)
goes through ``load_yaml``, which resolves plain scalars by the YAML 1.2 core schema only:

- null: ``~``, ``null`` (any case form YAML lists), empty; bool: ``true``/``false`` (True, TRUE, ...);
- int: ``[-+]?[0-9]+``, ``0o[0-7]+``, ``0x[0-9a-fA-F]+``;
- float: ``[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?``, ``.inf``, ``-.inf``, ``.nan``;
- everything else is a string (``1:30``, ``yes``, ``1_000``, ``2024-01-01`` stay text, and the validators
  that expect a number say so, naming the key).

Duplicate keys in a mapping are an error (PyYAML keeps the last one silently), tags other than the core
ones (``!!python/...``, ``!!timestamp``, ``!!binary``, ``!!set``, ...) are refused, and nesting deeper than
``MAX_DEPTH`` is refused before Python's recursion limit is reached. Every failure is ``YAMLFormatError``
(a ``ValueError``) with the line and column; callers re-raise it as their own error type naming the file.
"""

from __future__ import annotations

import os
import re
import stat
from typing import Any, BinaryIO

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, SequenceNode

from .limits import MAX_TEXT_BYTES

__all__ = ["YAMLFormatError", "load_yaml", "read_text_file", "MAX_DEPTH", "MAX_NODES"]

MAX_DEPTH = 100  # far beyond any configuration file; well below Python's recursion limit
# Scalars, sequences and mappings a document may hold once its aliases are unfolded: an alias bomb (each level a
# list of ten aliases to the one before) is 2.6 KB of text and 10⁹ values once a reader walks it (1.7 GB, 60 s).
MAX_NODES = 1_000_000

_CORE = "tag:yaml.org,2002:"


class YAMLFormatError(ValueError):
    """YAML text that is not valid YAML, or uses something the strict loader refuses; names line and column."""


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml: ~10x faster, same rules
    """SafeLoader with the YAML 1.2 core schema's implicit resolvers and only the core tags."""

    yaml_implicit_resolvers: dict = {}
    yaml_constructors: dict = {}


def _add_resolver(tag: str, pattern: str, first: str) -> None:
    _StrictLoader.add_implicit_resolver(_CORE + tag, re.compile(pattern, re.X), list(first))


_add_resolver("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""])
_add_resolver("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF")
_add_resolver("int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789")
_add_resolver(
    "float",
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
    "-+0123456789.",
)


def _scalar(loader: _StrictLoader, node) -> str:
    return loader.construct_scalar(node)


def _int(loader: _StrictLoader, node) -> int:
    text = _scalar(loader, node)
    try:
        if text.startswith("0o"):
            return int(text[2:], 8)
        if text.startswith("0x"):
            return int(text[2:], 16)
        return int(text, 10)
    except ValueError:
        raise ConstructorError(None, None, f"not an integer: {text!r}", node.start_mark) from None


def _float(loader: _StrictLoader, node) -> float:
    text = _scalar(loader, node)
    low = text.lower()
    if low in (".inf", "+.inf"):
        return float("inf")
    if low == "-.inf":
        return float("-inf")
    if low == ".nan":
        return float("nan")
    try:
        return float(text)
    except ValueError:
        raise ConstructorError(None, None, f"not a number: {text!r}", node.start_mark) from None


def _bool(loader: _StrictLoader, node) -> bool:
    return _scalar(loader, node).lower() == "true"


def _null(loader: _StrictLoader, node) -> None:
    _scalar(loader, node)
    return None


def _str(loader: _StrictLoader, node) -> str:
    return _scalar(loader, node)


def _seq(loader: _StrictLoader, node):
    out: list = []
    yield out
    out.extend(loader.construct_object(child, deep=True) for child in node.value)


def _map(loader: _StrictLoader, node):
    out: dict = {}
    yield out
    if not isinstance(node, MappingNode):
        raise ConstructorError(None, None, "expected a mapping", node.start_mark)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise ConstructorError(
                "while constructing a mapping", node.start_mark, "found an unhashable key", key_node.start_mark
            ) from None
        if key in out:
            raise ConstructorError(
                "while constructing a mapping", node.start_mark, f"duplicate key {key!r}", key_node.start_mark
            )
        out[key] = loader.construct_object(value_node, deep=True)


def _refuse(loader: _StrictLoader, node):
    raise ConstructorError(
        None,
        None,
        f"tag {node.tag!r} is not allowed (only null, bool, int, float, str, sequences and mappings)",
        node.start_mark,
    )


for _tag, _fn in (
    ("null", _null),
    ("bool", _bool),
    ("int", _int),
    ("float", _float),
    ("str", _str),
    ("seq", _seq),
    ("map", _map),
):
    _StrictLoader.add_constructor(_CORE + _tag, _fn)
_StrictLoader.add_constructor(None, _refuse)


def _depth(node, limit: int) -> None:
    """Refuse nesting deeper than ``limit`` (iteratively: a deep document must not exhaust the stack)."""
    stack, seen = [(node, 1)], set()
    while stack:
        n, d = stack.pop()
        if d > limit:
            raise YAMLFormatError(f"line {n.start_mark.line + 1}: nesting deeper than {limit} levels")
        if id(n) in seen:  # an alias to a node already visited
            continue
        seen.add(id(n))
        if isinstance(n, SequenceNode):
            stack.extend((c, d + 1) for c in n.value)
        elif isinstance(n, MappingNode):
            stack.extend((c, d + 1) for kv in n.value for c in kv)


def _children(n) -> list:
    return (
        [c for kv in n.value for c in kv]
        if isinstance(n, MappingNode)
        else list(n.value)
        if isinstance(n, SequenceNode)
        else []
    )


def _expanded_size(node, limit: int) -> None:
    """Refuse a document whose node graph, aliases unfolded, holds more than ``limit`` nodes — counted on the graph
    (each distinct node once, its unfolded size from its children's, in a depth-first post-order whose pushes are
    bounded by the graph's edges), before anything is constructed or walked."""
    size: dict[int, int] = {}
    expanded: set[int] = set()
    stack = [node]
    while stack:
        n = stack[-1]
        if id(n) in size:
            stack.pop()
            continue
        if id(n) not in expanded:  # first visit: its children first (each edge pushes once)
            expanded.add(id(n))
            stack.extend(c for c in _children(n) if id(c) not in size and id(c) not in expanded)
            continue
        stack.pop()
        sizes = [size.get(id(c)) for c in _children(n)]
        if None in sizes:  # (a child still being expanded is an ancestor: an alias to itself)
            raise YAMLFormatError(f"line {n.start_mark.line + 1}: a recursive alias")
        total = 1 + sum(sizes)
        if total > limit:
            raise YAMLFormatError(
                f"line {n.start_mark.line + 1}: more than {limit} values once its aliases are unfolded (an alias bomb?)"
            )
        size[id(n)] = total


def _nesting_before_parsing(text: str, limit: int) -> None:
    """Refuse flow nesting ([ {) deeper than ``limit``, or block indentation beyond 4·limit columns, by one linear
    scan: PyYAML's parser is recursive and superlinear there (1000 nested brackets took 3 s to refuse)."""
    depth, quote, line, start_of_token = 0, "", 1, True
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            j = i + 1
            while j < n and text[j] == " ":
                j += 1
            indent = j - i - 1
            if indent > 4 * limit:
                raise YAMLFormatError(f"line {line}: indented {indent} columns, deeper than {limit} levels")
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "\"'" and start_of_token:
            quote = c
        elif c == "#" and start_of_token:
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif c in "[{":
            depth += 1
            if depth > limit:
                raise YAMLFormatError(f"line {line}: nesting deeper than {limit} levels")
        elif c in "]}":
            depth = max(depth - 1, 0)
        start_of_token = c in " \t\n[{,:-?"
        i += 1


def _where(e: yaml.YAMLError) -> str:
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    return f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""


def load_yaml(text: str) -> Any:
    """Parse one YAML document by the rules in the module docstring; YAMLFormatError on anything else."""
    if not isinstance(text, str):
        raise YAMLFormatError(f"expected YAML text, got {type(text).__name__}")
    _nesting_before_parsing(text, MAX_DEPTH)
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _depth(node, MAX_DEPTH)
        _expanded_size(node, MAX_NODES)
        return loader.construct_document(node)
    except yaml.YAMLError as e:
        problem = getattr(e, "problem", None) or str(e)
        raise YAMLFormatError(f"{_where(e)}{problem}") from None
    except RecursionError:  # e.g. a chain of aliases the depth walk does not unfold
        raise YAMLFormatError(f"nesting deeper than Python can construct (limit {MAX_DEPTH})") from None
    finally:
        loader.dispose()


def open_regular_file(path: str | os.PathLike, what: str, error: type[ValueError]) -> BinaryIO:
    """``path`` opened for binary reading; ``error`` naming the file unless it exists and is a regular file —
    /dev/zero, /dev/urandom or a FIFO would be read until memory runs out, or wait for a writer forever."""
    path = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # (a FIFO's open would block)
    except FileNotFoundError:
        raise error(f"{what} file not found: {path!r}") from None
    except OSError as e:
        raise error(f"{what} file {path!r} cannot be read: {e.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise error(f"{what} file {path!r} is not a regular file")
    return os.fdopen(fd, "rb")


def read_text_file(path: str | os.PathLike, what: str, error: type[ValueError]) -> str:
    """The UTF-8 text of a file; ``error`` naming the file (and the byte) when it is missing, not a regular file,
    larger than model.limits.MAX_TEXT_BYTES or not UTF-8."""
    path = os.fspath(path)
    with open_regular_file(path, what, error) as f:
        raw = f.read(MAX_TEXT_BYTES + 1)
    if len(raw) > MAX_TEXT_BYTES:
        raise error(f"{what} file {path!r} is larger than the supported {MAX_TEXT_BYTES // 2**20} MiB")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{path}: {what} is not UTF-8 text (byte {e.start}: {raw[e.start : e.start + 1]!r})") from None
