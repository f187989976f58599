"""benchmarks/mutate_ast.py: the AST mutation tool enumerates every operator's points, applies
each to a copy so that only its segment changes, and tells a killed mutant from a surviving one."""

import json
import random
from pathlib import Path

from benchmark_scripts import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
tool = load_benchmark("mutate_ast")


def test_every_operator_has_points_and_mutants_apply_to_a_copy_only(tmp_path):
    points = tool.all_mutants()
    assert {m.operator for m in points} == set(tool.OPERATORS)
    assert {m.subpackage for m in points} >= {
        "model",
        "mechanics",
        "integrators",
        "linearization",
        "control",
        "planning",
        "nodes",
    }
    root = tool.copy_repository(tmp_path / "repo")
    for m in random.Random(0).sample(points, 150):
        path = root / m.file
        before = path.read_text()
        tool.apply(root, m)
        after = path.read_text()
        assert after != before and m.replacement in after, m
        # only the segment changed: the text before its line is the same, the lines after it too
        n_before = len(before.splitlines())
        assert before.splitlines()[: m.line - 1] == after.splitlines()[: m.line - 1]
        tail = m.original.count("\n")
        assert before.splitlines()[m.line + tail :] == after.splitlines()[m.line + m.replacement.count("\n") :]
        assert len(after.splitlines()) <= n_before
        path.write_text(before)
    assert (ROOT / "vi_control/model/scalars.py").read_text() == (root / "vi_control/model/scalars.py").read_text()


def test_a_killed_and_a_surviving_mutant(tmp_path):
    """``is_real`` with ``and`` turned into ``or`` accepts True as a number: test_model_scalars kills it. Reordering
    the tuple of real types is equivalent: it survives."""
    bool_op = next(
        m
        for m in tool.mutants_of(ROOT / "vi_control/model/scalars.py")
        if m.operator == "bool" and "not isinstance(v, bool)" in m.original
    )
    tests = tool.select_tests(bool_op)
    assert any(t.endswith("test_model_scalars.py") for t in tests) and not any("test_ros_" in t for t in tests)
    killed = tool.run_mutant(bool_op, timeout=300, work=tmp_path)
    assert killed.status == "killed", killed
    same = tool.Mutant(
        bool_op.file, 15, "const", "(int, float, np.integer, np.floating)", "(int, float, np.floating, np.integer)"
    )
    survived = tool.run_mutant(same, timeout=300, work=tmp_path)
    assert survived.status == "survived", survived
    text = tool.report([killed, survived])
    assert "| model | 1 / 2 | 50 % | 0 |" in text and "Survivors (1)" in text


def test_a_mutant_that_crashes_the_test_process_is_killed(tmp_path):
    """A mutant whose tests die by a signal (a segfault or abort in compiled code) is killed, as CI would fail on it —
    the run goes on (the crash was once a KeyError in the verdict that ended the whole run)."""
    crash = tool.Mutant("vi_control/model/scalars.py", 21, "const", "_REAL", '(__import__("os").abort() or _REAL)')
    r = tool.run_mutant(crash, timeout=300, tests=["test/model/test_model_scalars.py"], work=tmp_path)
    assert r.status == "killed" and r.detail.startswith("crashed: killed by signal"), r


def test_a_coverage_map_names_in_process_tests_by_id_and_child_processes_by_file(tmp_path):
    """One file's tests under coverage: the CRBA runs in the test process (each parametrised case its own id) and,
    in ``test_long_chain_loads_without_pinocchio_data``, in a child Python (counted for the whole file). A mutant of
    the CRBA then gets those tests, is killed, and its kill is confirmed on the unmutated copy."""
    crba_test = "test/model/test_model_crba.py"
    cmap = tool.map_coverage(tmp_path / "map.json", workers=0, work=tmp_path, tests=[crba_test])
    lines = cmap["lines"]["vi_control/model/crba.py"]
    named = {cmap["tests"][i] for ids in lines.values() for i in ids}
    assert f"{crba_test}::test_mass_matrix_equals_pinocchio_crba[panda]" in named
    assert crba_test in named  # the child process's lines, by its starter's file
    assert all(t.startswith(crba_test) for t in named)
    # a statement of the CRBA's loop: every test that runs it, the file once for the child's share
    m = next(
        m for m in tool.mutants_of(ROOT / "vi_control/model/crba.py") if m.operator == "arith" and str(m.line) in lines
    )
    tests = tool.covering_tests(m, cmap)
    assert tests and set(tests) <= named
    assert crba_test not in tests or not any(t.startswith(crba_test + "::") for t in tests)
    killed = tool.run_mutant(m, timeout=300, work=tmp_path, cmap=cmap)
    assert killed.status == "killed", killed
    # a module these tests never reach: no test id (run_mutant falls back to the module selection)
    far = next(iter(tool.mutants_of(ROOT / "vi_control/ros/recorder.py")))
    assert tool.covering_tests(far, cmap) is None
    assert json.loads((tmp_path / "map.json").read_text())["tests"] == cmap["tests"]
