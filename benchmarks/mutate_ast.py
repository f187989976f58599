"""An operator-based AST mutation tool of our own: generated mutants, not a curated list.

Every mutation point of the numerical and node packages (vi_control/{model, mechanics, integrators, linearization,
control, planning, ros}) is enumerated from the AST, by operator:

- ``cmp``: a comparison flipped at its boundary (< ↔ <=, > ↔ >=, == ↔ !=, in ↔ not in, is ↔ is not);
- ``arith``: an arithmetic operator swapped (+ ↔ −, * ↔ /, ** → *, // → /);
- ``const``: a numeric constant tweaked (a float × 1.1, an int + 1; 0 → 1);
- ``drop``: a statement of a function body (an assignment, an augmented assignment or a call) replaced by ``pass``;
- ``negate``: the condition of an ``if``/``while``/``assert``/conditional expression negated;
- ``bool``: ``and`` ↔ ``or``.

A random sample (``--sample``, ``--seed``) is drawn, each mutant is applied to a temporary copy of the repository
(the source segment of the node replaced by the mutated node, so the rest of the file is byte for byte the same)
and the fast tests of its module are run there (``select_tests``: the test files, not the DDS ones, that import
the module by name; ``benchmarks/mutation.py``'s copy, environment and pytest runner). A failing run (or an import
error, or a timeout) kills the mutant; a passing one lets it survive. The report gives the score per subpackage
and the survivors with their diffs (to judge which are equivalent). The curated list (benchmarks/mutations.py)
stays the fast regression set.

    python benchmarks/mutate_ast.py --sample 40 --seed 1             # a pilot
    python benchmarks/mutate_ast.py --sample 250 --seed 1 --out benchmarks/results/mutate_ast.md   # the full run
    python benchmarks/mutate_ast.py --list | head                    # the mutation points
"""

from __future__ import annotations

import argparse
import ast
import atexit
import functools
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from mutation import COPIED, environment, run_tests  # noqa: E402
from mutation import copy_repository as _copy_tree  # noqa: E402

PACKAGES = ("model", "mechanics", "integrators", "linearization", "control", "planning", "ros", "sweep", "view")
OPERATORS = ("cmp", "arith", "const", "drop", "negate", "bool")
_CMP = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_ARITH = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.Pow: ast.Mult,
    ast.FloorDiv: ast.Div,
}


@dataclass(frozen=True)
class Mutant:
    file: str  # relative to the repository root
    line: int
    operator: str
    original: str  # the source segment
    replacement: str
    col: int = -1  # its first character on ``line`` (-1: the first occurrence from the line's start)

    @property
    def subpackage(self) -> str:
        part = self.file.split("/")[1]
        return "nodes" if part == "ros" else part

    @property
    def name(self) -> str:
        return f"{self.file}:{self.line}:{self.operator}"


# what a test run may read besides the package (docs tables, benchmark scripts, the README's numbers)
COPY = COPIED + tuple(n for n in ("docs", "benchmarks", "scripts", "README.md", "requirements.txt") if n not in COPIED)


def copy_repository(dst: Path) -> Path:
    """The repository's copy a mutant's tests run in (``mutation.copy_repository`` with ``COPY``)."""
    return _copy_tree(dst, names=COPY)


# ---- enumeration --------------------------------------------------------------------------------------------------
def _docstring_nodes(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                out.add(id(first))
    return out


def _in_function(tree: ast.AST) -> set[int]:
    """ids of the statements directly in a function body (module-level statements define things: not dropped)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.update(id(s) for s in node.body)
            for sub in ast.walk(node):
                for field in ("body", "orelse", "finalbody"):
                    block = getattr(sub, field, None)
                    for s in block if isinstance(block, list) else []:
                        if isinstance(s, ast.stmt):
                            out.add(id(s))
    return out


def _variants(node: ast.AST, docstrings: set[int], droppable: set[int]) -> Iterator[tuple[str, ast.AST]]:
    """(operator, mutated copy of ``node``) for every mutation of this node."""
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _CMP:
                new = _copy(node)
                new.ops[i] = _CMP[type(op)]()
                yield "cmp", new
    elif isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
            return  # (string formatting / concatenation)
        new = _copy(node)
        new.op = _ARITH[type(node.op)]()
        yield "arith", new
    elif isinstance(node, ast.Constant) and type(node.value) in (int, float) and not isinstance(node.value, bool):
        v = node.value
        tweaked = v * 1.1 if isinstance(v, float) and v != 0.0 else (1 if v == 0 else v + 1)
        if tweaked != v:
            yield "const", ast.Constant(tweaked)
    elif isinstance(node, ast.BoolOp):
        new = _copy(node)
        new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield "bool", new
    if isinstance(node, (ast.If, ast.While, ast.Assert, ast.IfExp)):
        new = _copy(node.test)
        yield "negate", ("test", ast.UnaryOp(ast.Not(), new))
    if (
        isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr))
        and id(node) in droppable
        and id(node) not in docstrings
    ):
        yield "drop", ast.Pass()


def _copy(node: ast.AST) -> ast.AST:
    return ast.parse(ast.unparse(node), mode="eval").body if isinstance(node, ast.expr) else node


def _excluded(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """Annotations, default-free type hints, __all__ and version strings are no behaviour: skipped."""
    p = parents.get(id(node))
    while p is not None:
        if isinstance(p, (ast.arg,)) or (isinstance(p, ast.AnnAssign) and node is not p):
            return True
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)) and (node is p.returns):
            return True
        p = parents.get(id(p))
    return False


def mutants_of(path: Path) -> list[Mutant]:
    source = path.read_text()
    data = source.encode()
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    tree = ast.parse(source)
    docstrings, droppable = _docstring_nodes(tree), _in_function(tree)
    parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    rel = str(path.relative_to(ROOT))
    out = []
    for node in ast.walk(tree):
        if not hasattr(node, "lineno") or _excluded(node, parents):
            continue
        for op, new in _variants(node, docstrings, droppable):
            target = node
            if isinstance(new, tuple):  # ("test", replacement): the node's condition only
                target, new = node.test, new[1]
            a = starts[target.lineno - 1] + target.col_offset
            b = starts[target.end_lineno - 1] + target.end_col_offset
            original = data[a:b].decode()
            replacement = "pass" if isinstance(new, ast.Pass) else f"({ast.unparse(new)})"
            col = len(data[starts[target.lineno - 1] : a].decode())
            out.append(Mutant(rel, target.lineno, op, original, replacement, col))
    return out


def all_mutants(packages=PACKAGES) -> list[Mutant]:
    out = []
    for pkg in packages:
        for path in sorted((ROOT / "vi_control" / pkg).rglob("*.py")):
            out += mutants_of(path)
    return out


def apply(root: Path, m: Mutant) -> None:
    """Replace the mutant's segment in ``root``'s copy of its file (at its line and column), then check the file
    still parses."""
    path = root / m.file
    lines = path.read_text().splitlines(keepends=True)
    text_from = "".join(lines[m.line - 1 :])
    i = m.col if m.col >= 0 and text_from.startswith(m.original, m.col) else text_from.find(m.original)
    if i < 0:
        raise ValueError(f"{m.name}: segment not found at its line")
    before = "".join(lines[: m.line - 1])
    new = before + text_from[:i] + m.replacement + text_from[i + len(m.original) :]
    ast.parse(new)
    path.write_text(new)


# ---- which tests ----------------------------------------------------------------------------------------------------
_SLOW = ("test_fuzz_generator.py", "test_benchmarks_smoke.py", "test_mutate_ast.py", "test_mutation_harness.py")


def select_tests(m: Mutant, limit: int = 4, depth: int = 0) -> list[str]:
    """The fast test files of a module: those (not ``test_ros_*``, which start DDS nodes) that import it by its
    dotted name, else those that name the module, else those of the modules that import it (``bordered``
    through ``midpoint``; two levels); the smallest ``limit`` of them (a bounded run per mutant). Files that fail
    unmutated (``baseline``) are left out by ``run_mutant``."""
    dotted = m.file[:-3].replace("/", ".")
    pkg, _, mod = dotted.rpartition(".")
    direct = re.compile(rf"(\b{re.escape(dotted)}\b|from {re.escape(pkg)} import [^\n]*\b{mod}\b)")
    named = re.compile(rf"\b{re.escape(mod)}\b") if mod != "__init__" else direct
    files = [
        t
        for t in sorted((ROOT / "test").rglob("test_*.py"))
        if not t.name.startswith("test_ros_") and t.name not in _SLOW and "pytest.mark.ros" not in t.read_text()
    ]
    texts = {t: t.read_text() for t in files}
    hits = [t for t in files if direct.search(texts[t])] or [t for t in files if named.search(texts[t])]
    if not hits and depth < 2:  # reached only through a module of ours (bordered through midpoint)
        users = [
            u
            for u in sorted((ROOT / "vi_control").rglob("*.py"))
            if u.name != Path(m.file).name
            and re.search(
                rf"from \.+(?:\w+\.)*{re.escape(mod)} import|"
                rf"import [^\n]*\b{re.escape(mod)}\b",
                u.read_text(),
            )
        ]
        seen = []
        for u in users:
            for t in select_tests(Mutant(str(u.relative_to(ROOT)), 1, "", "", ""), limit, depth + 1):
                if t not in seen:
                    seen.append(t)
        hits = [ROOT / t for t in seen]
    hits.sort(key=lambda t: t.stat().st_size)
    return [str(t.relative_to(ROOT)) for t in hits[:limit]]


# ---- which tests: the coverage map ----------------------------------------------------------------------------------
CONTEXTS = ROOT / "benchmarks" / "coverage_contexts"  # the per-test context plugin and the child processes' hook


def map_coverage(out: Path, workers: int = 2, work: Path | None = None, tests: list[str] = ()) -> dict:
    """Run the default suite once under coverage, in a copy of the repository, each test's lines under its own id
    (``coverage_contexts``: in-process tests by node id, processes a test starts — nodes, CLIs — by its file), and
    write ``out`` (JSON): ``tests`` (ids, durations [s]) and ``lines`` (``file → line → indices of the tests that
    execute it``). A test that fails under coverage's slowdown still counts for the lines it reached."""
    import coverage

    with tempfile.TemporaryDirectory(prefix="vi_covmap_", dir=work) as d:
        root = copy_repository(Path(d) / "repo")
        data, durations = Path(d) / "data", Path(d) / "durations"
        data.mkdir()
        rc = Path(d) / "coveragerc"
        rc.write_text(
            f"[run]\nparallel = true\ndata_file = {data}/.coverage\npatch = subprocess\nsigterm = true\n"
            f"source = {root}/vi_control\n"
        )
        env = environment(root)
        env.update(
            PYTHONPATH=os.pathsep.join([str(CONTEXTS), env["PYTHONPATH"]]),
            COVERAGE_RCFILE=str(rc),
            VI_COV_DURATIONS=str(durations),
        )
        run = [sys.executable, "-m", "coverage", "run", "-m", "pytest", "-p", "no:cacheprovider"]
        run += ["-p", "vi_cov_contexts", "-n", str(workers), "--dist", "loadgroup", *tests]
        t0 = time.monotonic()
        rc_suite = subprocess.run(run, cwd=root, env=env).returncode
        print(f"[mutate_ast] suite under coverage: rc {rc_suite}, {time.monotonic() - t0:.0f} s", flush=True)
        subprocess.run([sys.executable, "-m", "coverage", "combine", "-q"], cwd=root, env=env, check=True)
        cd = coverage.CoverageData(str(data / ".coverage"))
        cd.read()
        seconds: dict[str, float] = {}
        for f in durations.glob("*.json"):
            seconds.update(json.loads(f.read_text()))
        index: dict[str, int] = {}
        lines: dict[str, dict[str, list[int]]] = {}
        for path in cd.measured_files():
            rel = os.path.relpath(path, root)
            if rel.startswith(".."):
                continue
            by_line: dict[str, list[int]] = {}
            for line, contexts in (cd.contexts_by_lineno(path) or {}).items():
                ids = sorted({index.setdefault(t, len(index)) for t in map(_test_of_context, contexts) if t})
                if ids:
                    by_line[str(line)] = ids
            lines[rel] = by_line
    tests = sorted(index, key=index.get)
    files = {}
    for t, s in seconds.items():
        files[t.split("::")[0]] = files.get(t.split("::")[0], 0.0) + s
    cmap = {"tests": tests, "seconds": [seconds.get(t, files.get(t, 1.0)) for t in tests], "lines": lines}
    out.write_text(json.dumps(cmap))
    print(f"[mutate_ast] coverage map: {len(tests)} tests, {len(lines)} files -> {out}", flush=True)
    return cmap


def _test_of_context(context: str) -> str:
    """A test id from a coverage context: a node id; a child process's context names its starter's file."""
    if not context:
        return ""
    if context.startswith("child:"):
        return context[len("child:") :].split("::")[0]
    return context


@functools.lru_cache(maxsize=64)
def _tree(file: str) -> ast.Module:
    return ast.parse((ROOT / file).read_text())


def _statement_lines(file: str, line: int) -> list[int]:
    """The lines from the first of the innermost statement holding ``line`` down to ``line`` (a tracer records a
    multi-line statement at one of its lines)."""
    tree = _tree(file)
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is None or node.lineno >= best.lineno:
                best = node
    start = best.lineno if best is not None else line
    return list(range(line, start - 1, -1))


def _in_function_body(file: str, line: int) -> bool:
    """Whether ``line`` of ``file`` is in a function's body (not a signature's default, not module or class level)."""
    return any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.body[0].lineno <= line <= (n.end_lineno or 0)
        for n in ast.walk(_tree(file))
    )


def covering_tests(m: Mutant, cmap: dict, budget: float = float("inf")) -> list[str] | None:
    """The tests that execute the mutant's statement, fastest first (a test file where a child process of one of
    its tests ran it: the whole file, since a module's nodes serve all its tests), as many as fit in ``budget``
    seconds of their measured durations (at least one); ``None`` when no test does, and for code that runs at
    import (module level, class level, a default in a signature: every process that imports the module runs it,
    so coverage does not tell its tests; ``run_mutant`` then takes the module selection)."""
    if not _in_function_body(m.file, m.line):
        return None  # run at import (a constant, a default): the processes that imported it are not its tests
    by_line = cmap["lines"].get(m.file, {})
    ids: list[int] = []
    for ln in _statement_lines(m.file, m.line):
        if str(ln) in by_line:
            ids = by_line[str(ln)]
            break
    if not ids:
        return None
    names = [cmap["tests"][i] for i in ids]
    files = {n for n in names if "::" not in n}
    keep = sorted(
        (i for i, n in zip(ids, names) if "::" not in n or n.split("::")[0] not in files),
        key=lambda i: cmap["seconds"][i],
    )
    out, spent = [], 0.0
    for i in keep:
        if out and spent + cmap["seconds"][i] > budget:
            break
        out.append(cmap["tests"][i])
        spent += cmap["seconds"][i]
    return out


_UNMUTATED: dict[str, bool] = {}
_BASE_ROOT: list[Path] = []
_BASE_LOCK = threading.Lock()


def passes_unmutated(test: str, timeout: float, work: Path | None = None) -> bool:
    """Whether ``test`` (a file or a node id) passes on an unmutated copy of the repository: one copy per run, each
    test run once and remembered (thread-safe: ``--jobs``)."""
    with _BASE_LOCK:
        if test not in _UNMUTATED:
            if not _BASE_ROOT:
                d = tempfile.mkdtemp(prefix="vi_ast_base_", dir=work)
                atexit.register(shutil.rmtree, d, True)
                _BASE_ROOT.append(copy_repository(Path(d) / "repo"))
            _UNMUTATED[test] = run_tests(_BASE_ROOT[0], [test], timeout)[0] == "passed"
        return _UNMUTATED[test]


def baseline(tests: list[str], timeout: float, work: Path | None = None) -> list[str]:
    """``tests`` without the files that fail on the unmutated copy: a kill must be the mutant's."""
    return [t for t in tests if passes_unmutated(t, timeout, work)]


# ---- running --------------------------------------------------------------------------------------------------------
@dataclass
class Result:
    mutant: Mutant
    status: str  # killed | survived | timeout | untested | invalid
    seconds: float
    tests: list[str]
    detail: str = ""

    @property
    def killed(self) -> bool:
        return self.status in ("killed", "timeout")


def run_mutant(
    m: Mutant,
    timeout: float,
    work: Path | None = None,
    check_baseline: bool = True,
    tests: list[str] | None = None,
    cmap: dict | None = None,
    budget: float = float("inf"),
) -> Result:
    """The mutant against ``tests``; by default the tests that execute its statement (``covering_tests``, with a
    coverage map ``cmap``), else — or for module-level code — ``select_tests``, the module's fast test files.

    With a coverage map every kill is confirmed: the first failing test must pass on the unmutated copy (else it is
    left out and the mutant run again), and the time limit grows with the tests' measured durations."""
    how = "given"
    if tests is None and cmap is not None:
        tests = covering_tests(m, cmap, budget)
        how = "coverage" if tests is not None else "module selection"
    if tests is None:
        tests = select_tests(m)
        how = "module selection"
    if check_baseline and how == "module selection":
        tests = baseline(tests, timeout, work)
    if not tests:
        why = "no test executes this statement" if how == "coverage" else "no fast test file reaches this module"
        return Result(m, "untested", 0.0, [], why)
    if how == "coverage":
        seconds = dict(zip(cmap["tests"], cmap["seconds"]))
        timeout = max(timeout, 3.0 * sum(seconds.get(t, 1.0) for t in tests) + 60.0)
    with tempfile.TemporaryDirectory(prefix="vi_ast_mut_", dir=work) as d:
        root = copy_repository(Path(d) / "repo")
        try:
            apply(root, m)
        except (ValueError, SyntaxError) as e:
            return Result(m, "invalid", 0.0, tests, str(e))
        elapsed = 0.0
        for _ in range(3):
            status, seconds_run, tail = run_tests(root, tests, timeout)
            elapsed += seconds_run
            failing = _first_failing(tail)
            if how != "coverage" or status not in ("failed", "error") or not failing:
                break
            # a kill counts when the failing test fails again alone on the mutant and passes unmutated: not the
            # load of a parallel run, not a test broken or flaky without the mutant
            if run_tests(root, [failing], timeout)[0] != "passed" and passes_unmutated(failing, 900.0, work):
                break
            tests = [t for t in tests if t != failing and t.split("::")[0] != failing.split("::")[0]]
            if not tests:
                status = "passed"
                break
    first = next(
        (ln.strip() for ln in tail.splitlines() if ln.startswith(("FAILED ", "ERROR ", "E ", "crashed: "))), ""
    )
    # (a test process killed by a signal — a segfault or abort the mutant caused — is a failed run, as for CI)
    kind = {"passed": "survived", "failed": "killed", "error": "killed", "crashed": "killed", "timeout": "timeout"}[
        status
    ]
    return Result(m, kind, elapsed, tests, first[:200])


def _first_failing(tail: str) -> str:
    """The id of the first failing test (or erroring file) in pytest's short summary."""
    for ln in tail.splitlines():
        if ln.startswith(("FAILED ", "ERROR ")):
            return ln.split(" ", 1)[1].split(" - ", 1)[0].strip()
    return ""


def _test_files(tests: list[str]) -> str:
    files = list(dict.fromkeys(Path(t.split("::")[0]).name for t in tests))
    more = f" and {len(files) - 4} more files" if len(files) > 4 else ""
    return f"{len(tests)} tests in " * (len(tests) != len(files)) + ", ".join(files[:4]) + more


def report(results: list[Result]) -> str:
    by: dict[str, list[Result]] = {}
    for r in results:
        by.setdefault(r.mutant.subpackage, []).append(r)
    rows = ["| subpackage | killed / run | score | untested |", "|---|---|---|---|"]
    total_k = total_n = 0
    for sub in sorted(by):
        rs = [r for r in by[sub] if r.status not in ("untested", "invalid")]
        k = sum(r.killed for r in rs)
        total_k, total_n = total_k + k, total_n + len(rs)
        score = f"{100 * k / len(rs):.0f} %" if rs else "—"
        rows.append(f"| {sub} | {k} / {len(rs)} | {score} | {sum(r.status == 'untested' for r in by[sub])} |")
    rows.append(
        f"| **all** | {total_k} / {total_n} | {100 * total_k / max(total_n, 1):.0f} % | "
        f"{sum(r.status == 'untested' for r in results)} |"
    )
    surv = [r for r in results if r.status == "survived"]
    lines = rows + ["", f"Survivors ({len(surv)}):", ""]
    for r in surv:
        lines.append(
            f"- `{r.mutant.name}`: `{r.mutant.original[:70]}` → `{r.mutant.replacement[:70]}` "
            f"(tests: {_test_files(r.tests)})"
        )
    return "\n".join(lines)


def _key(m: Mutant) -> tuple[str, str, str, str, int]:
    return (m.file, m.operator, m.original, m.replacement, m.col)


def earlier_survivors(run: Path, points: list[Mutant]) -> list[Mutant]:
    """The survivors of an earlier run (its JSON) among ``points``: the same file, operator, segment and column, at the
    line nearest to the recorded one (lines move when the file is edited)."""
    by_key: dict[tuple, list[Mutant]] = {}
    for m in points:
        by_key.setdefault(_key(m), []).append(m)
    out = []
    for r in json.loads(run.read_text()):
        same = by_key.get((r["file"], r["operator"], r["original"], r["replacement"], r["col"]))
        if r["status"] in ("survived", "untested") and same:
            out.append(min(same, key=lambda m: abs(m.line - r["line"])))
    return out


def _write_json(out: Path, results: list[Result]) -> None:
    out.with_suffix(".json").write_text(
        json.dumps(
            [
                dict(asdict(r.mutant), status=r.status, seconds=r.seconds, tests=r.tests, detail=r.detail)
                for r in results
            ],
            indent=1,
        )
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=40, help="mutants drawn at random from all points")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--packages", default=",".join(PACKAGES))
    ap.add_argument("--operators", default=",".join(OPERATORS))
    ap.add_argument("--timeout", type=float, default=300.0, help="per mutant [s]")
    ap.add_argument(
        "--pick",
        default="",
        help="only these 1-based positions of the drawn sample (comma-separated): a run's survivors again, after new "
        "tests (the same sample as long as vi_control's sources are unchanged)",
    )
    ap.add_argument(
        "--tests",
        default="",
        help="run these test files or folders (comma-separated) instead of each module's selection: a survivor "
        "re-judged by the suite's tests of its layer",
    )
    ap.add_argument(
        "--map-coverage",
        default=None,
        metavar="MAP.json",
        help="run the default suite once under coverage and write which tests execute each line (then exit)",
    )
    ap.add_argument(
        "--coverage",
        default=None,
        metavar="MAP.json",
        help="give each mutant the tests that execute its statement (a map written by --map-coverage on the same "
        "sources), kills confirmed against the unmutated copy",
    )
    ap.add_argument(
        "--rerun",
        default=None,
        metavar="RUN.json",
        help="only the survivors of an earlier run (its JSON), found again by file, operator and segment",
    )
    ap.add_argument(
        "--budget",
        type=float,
        default=float("inf"),
        help="with --coverage: a mutant's tests fastest first up to this many seconds of their measured durations",
    )
    ap.add_argument("--jobs", type=int, default=1, help="mutants run at once (each in its own copy and ROS domain)")
    ap.add_argument("--list", action="store_true", help="print the mutation points and exit")
    ap.add_argument("--out", default=None, help="write the report (markdown) and a JSON of the results here")
    a = ap.parse_args(argv)
    if a.map_coverage:
        map_coverage(Path(a.map_coverage), tests=[t for t in a.tests.split(",") if t])
        return 0
    cmap = json.loads(Path(a.coverage).read_text()) if a.coverage else None
    ops = set(a.operators.split(","))
    points = [m for m in all_mutants(tuple(a.packages.split(","))) if m.operator in ops]
    if a.list:
        for m in points:
            print(f"{m.name}\t{m.original[:60]!r} -> {m.replacement[:60]!r}")
        return 0
    sample = random.Random(a.seed).sample(points, min(a.sample, len(points)))
    print(f"[mutate_ast] {len(points)} mutation points; {len(sample)} drawn (seed {a.seed})", flush=True)
    picked = {int(i) for i in a.pick.split(",") if i.strip()}
    if a.rerun:  # the earlier run's survivors wherever they are now, not this seed's sample
        sample = earlier_survivors(Path(a.rerun), points)
        print(f"[mutate_ast] re-running {len(sample)} survivors of {a.rerun}", flush=True)
    results, t0 = [], time.monotonic()
    todo = [(i, m) for i, m in enumerate(sample, 1) if not picked or i in picked]
    given = [t for t in a.tests.split(",") if t] or None

    def one(item: tuple[int, Mutant]) -> Result:
        i, m = item
        r = run_mutant(m, a.timeout, tests=given, cmap=cmap, budget=a.budget)
        print(
            f"[mutate_ast] {i}/{len(sample)} {r.status:8s} {r.seconds:5.1f} s  {m.name}  "
            f"{m.original[:50]!r} -> {m.replacement[:50]!r}  {r.detail[:80]}",
            flush=True,
        )
        return r

    with ThreadPoolExecutor(max(1, a.jobs)) as pool:
        for r in pool.map(one, todo):
            results.append(r)
            if a.out:  # so far, in the sample's order (a long run interrupted keeps what it measured)
                _write_json(Path(a.out), results)
    text = report(results)
    print(text)
    print(f"[mutate_ast] {time.monotonic() - t0:.0f} s")
    if a.out:
        Path(a.out).write_text(
            f"# AST mutation run (seed {a.seed}, {len(sample)} of {len(points)} points)\n\n" + text + "\n"
        )
        _write_json(Path(a.out), results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
