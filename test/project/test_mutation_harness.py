"""benchmarks/mutation.py: the curated list cannot rot, and the harness tells a killed mutation
from a surviving one on a temporary copy while the working tree stays untouched."""

import dataclasses
import hashlib
from pathlib import Path

import pytest
from benchmark_scripts import load_benchmark

ROOT = Path(__file__).resolve().parents[2]


harness = load_benchmark("mutation", "mutation_harness")


def test_every_curated_snippet_exists_once_and_its_tests_exist():
    names = [m.name for m in harness.MUTATIONS]
    assert len(names) == len(set(names))
    for m in harness.MUTATIONS:
        text = (ROOT / m.file).read_text()
        assert text.count(m.original) == 1, (m.name, m.file)
        assert m.replacement != m.original and m.tests, m.name
        for t in m.tests:
            path, _, node = t.partition("::")
            assert (ROOT / path).is_file(), (m.name, t)
            assert not node or f"def {node.split('[')[0]}(" in (ROOT / path).read_text(), (m.name, t)
    areas = {m.subpackage for m in harness.MUTATIONS}
    assert {"model", "integrators", "linearization", "control", "planning", "nodes"} <= areas
    assert sum(m.issue for m in harness.MUTATIONS) >= 16  # the ones the second audit named


def test_apply_refuses_a_missing_or_ambiguous_snippet(tmp_path):
    root = harness.copy_repository(tmp_path / "repo")
    m = harness.MUTATIONS[0]
    with pytest.raises(harness.MutationError, match="occurs 0 times"):
        harness.apply(root, dataclasses.replace(m, original="no such text anywhere"))
    with pytest.raises(harness.MutationError, match=r"occurs (?!1 )\d+ times"):
        harness.apply(root, dataclasses.replace(m, original="import"))


def test_harness_detects_killed_and_surviving_mutations_on_a_copy(tmp_path):
    m = next(m for m in harness.MUTATIONS if m.name == "tracking_index_truncates")
    src = ROOT / m.file
    before = hashlib.sha256(src.read_bytes()).hexdigest()
    killer = (
        "test/control/test_wiring_references.py::test_tracking_index_is_the_nearest_sample_at_off_grid_and_noisy_stamps"
    )
    bystander = "test/ros/test_ros_tracking.py::test_state_difference_compares_continuous_angles_modulo_2pi"
    killed = harness.run_mutation(dataclasses.replace(m, tests=(killer,)), timeout=300, work=tmp_path)
    survived = harness.run_mutation(dataclasses.replace(m, tests=(bystander,)), timeout=300, work=tmp_path)
    assert killed.status == "killed", killed.output
    assert "int((t - self.plan.times[0]) / self.plan.dt)" in killed.output or "assert" in killed.output
    assert survived.status == "survived", survived.output
    assert hashlib.sha256(src.read_bytes()).hexdigest() == before  # the working tree is never mutated
    table = harness.score_table([killed, survived], markdown=True)
    assert "| control | 1 / 2 | tracking_index_truncates |" in table


def test_a_test_process_the_mutation_crashes_counts_as_killed(tmp_path):
    """A mutation that makes the tests' process die by a signal (a segfault in a solver, an abort) fails CI as surely
    as a failing assertion: the harness counts it killed ("crashed", with the signal); a collection error stays an
    error (the tests never ran)."""
    (tmp_path / "test_crash.py").write_text("import os\n\n\ndef test_crash():\n    os.abort()\n")
    (tmp_path / "test_broken.py").write_text("def test_broken(:\n    pass\n")
    status, _, tail = harness.run_tests(tmp_path, ["test_crash.py"], timeout=120)
    assert status == "crashed" and tail.endswith("crashed: killed by signal 6"), tail[-500:]
    m = harness.MUTATIONS[0]
    crashed = harness.Outcome(m, status, 1.0, tail)
    assert crashed.killed and crashed.reason == "crashed: killed by signal 6"
    status, _, tail = harness.run_tests(tmp_path, ["test_broken.py"], timeout=120)
    assert status == "error" and not harness.Outcome(m, status, 1.0, tail).killed
