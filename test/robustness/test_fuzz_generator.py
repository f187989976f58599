"""The fuzz suite as a generator: a fixed seed of test/fuzz_gen.py's cases over every input
surface — URDF, system, task, rigid-body, sweep and library YAML, plan files, the Python API's numeric arguments and
the ROS messages the nodes decode (a serialized JointState, a plan message) — each in a forked child with a
watchdog. Every case must end valid (its invariants hold) or with the package's own error; a generic exception,
nonsense, a hang or a crash fails with the seed and case index (``python scripts/fuzz.py --seed S --only I``
reproduces it). Long runs with random seeds: ``python scripts/fuzz.py --seed random --cases 5000``."""

import os
import signal
import sys
import time
from pathlib import Path

import fuzz_gen  # noqa: E402  (test/support, on the path by conftest)
import pytest

SEED = 20261129
CASES = 270  # 30 per surface (~20 s here)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    fuzz_gen.prepare()
    tmp = str(tmp_path_factory.mktemp("fuzz"))
    return [(c, fuzz_gen.run_case(c, timeout=30.0)) for c in fuzz_gen.generate(SEED, CASES, tmp)]


def test_every_case_is_valid_or_refused_by_name(outcomes):
    bad = [
        f"case {c.index} ({c.surface}: {c.description}) -> {o.kind}: {o.detail}"
        for c, o in outcomes
        if o.kind not in ("valid", "specific")
    ]
    assert not bad, f"seed {SEED}:\n" + "\n".join(bad)


def test_every_surface_gets_valid_and_refused_cases(outcomes):
    """(A generator whose every case is refused, or accepted, tests one side of the contract only.)"""
    tally = fuzz_gen.tally(outcomes)
    surfaces = {"ros_joint_state", "ros_plan"} | set(fuzz_gen.SURFACES) - {"ros_messages"}
    assert set(tally) == surfaces
    for surface, kinds in tally.items():
        assert kinds.get("specific", 0) >= 1, (surface, kinds)
        assert kinds.get("valid", 0) >= 1 or surface == "api", (surface, kinds)


def test_the_watchdog_reports_hangs_crashes_and_generic_errors():
    """The contract's own failure modes, planted: a case that sleeps past its budget, one that dies by SIGSEGV,
    one that raises a TypeError, one that returns nonsense, one numpy ValueError that names nothing of ours."""

    def segv():
        import faulthandler

        faulthandler.disable()  # (pytest's handler would print the child's stack: noise, not a failure)
        os.kill(os.getpid(), signal.SIGSEGV)

    def numpy_error():
        import numpy as np

        return np.asarray(["a"], float)

    cases = {
        "hang": fuzz_gen.Case("t", 0, "", lambda: time.sleep(30)),
        "crash": fuzz_gen.Case("t", 1, "", segv),
        "generic": fuzz_gen.Case("t", 2, "", lambda: {}["missing"]),
        "nonsense": fuzz_gen.Case("t", 3, "", lambda: float("nan"), lambda r: "NaN" if r != r else None),
        "specific": fuzz_gen.Case("t", 4, "", lambda: (_ for _ in ()).throw(ValueError("dt: must be > 0"))),
    }
    for kind, case in cases.items():
        assert fuzz_gen.run_case(case, timeout=1.0).kind == kind
    assert fuzz_gen.run_case(fuzz_gen.Case("t", 5, "", numpy_error), timeout=5.0).kind == "generic"


def test_the_long_run_script(capsys):
    """scripts/fuzz.py: a seed, a few cases per surface, the tally printed, exit 0 when the contract holds."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    import fuzz  # noqa: E402

    assert fuzz.main(["--seed", "7", "--cases", "18", "--timeout", "30"]) == 0
    out = capsys.readouterr().out
    assert "[fuzz] seed 7, 18 cases" in out and "0 failed the contract" in out
