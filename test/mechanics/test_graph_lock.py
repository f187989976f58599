"""CasADi graph builds hold one process-wide lock (mechanics.graph_lock): two threads never build at once.

CasADi's symbolics are not thread-safe (casadi/casadi#1355) and its Python bindings release the GIL: a joint stop's
held system generated in the background while the stepping thread built the next one crashed a CI run (a segfault in
``CodeGenerator.add`` beside ``gradient``). The first test runs that scenario in a child process, where a crash is an
exit status instead of the death of this test worker (9 of 15 such children died of SIGSEGV without the lock, 0 of 15
with it); then tests that hold the lock and see each builder wait for it — a builder that does not take it would
finish, or never be seen at a lock — and see every CasADi call that takes or gives an expression, by a builder or a
whole workflow, made holding it; last, what is dropped is released under the lock.
"""

from __future__ import annotations

import linecache
import subprocess
import sys
import textwrap
import threading
import time
import weakref
from pathlib import Path

import casadi as ca
import numpy as np
import pinocchio as pin
import pytest

import vi_control as vc
from vi_control.integrators.rdp import sleigh_system
from vi_control.mechanics import graph_lock
from vi_control.mechanics.euler_poincare import step_functions
from vi_control.mechanics.graph_lock import GRAPH_LOCK, OwnsGraphs, builds_graph, release_dropped_graphs
from vi_control.mechanics.symbolic import ContinuousDynamics
from vi_control.model.generate import planar_chain_urdf
from vi_control.planning.collocation import SecondOrderDynamics, Transcription
from vi_control.planning.collocation.problems import pendulum_min_time
from vi_control.planning.dmoc_nlp import transcription

REPO = Path(__file__).resolve().parents[2]
_LOCKED = builds_graph(lambda: None).__code__  # the decorator's wrapper (one code object for every decorated builder)


def _robot(limit: float = 3.0) -> vc.RobotModel:
    return vc.load_robot(
        planar_chain_urdf(2, joint_type="revolute").replace(
            'lower="-3.14159" upper="3.14159"', f'lower="{-limit}" upper="{limit}"'
        )
    )


def test_a_held_system_compiled_in_the_background_beside_builds_in_the_stepping_thread_does_not_crash():
    """The CI crash, many times over: a chain driven into its stops (each new active set's held system built in the
    stepping thread, then generated and compiled in a background thread) while a third thread builds other systems,
    compiled and not; the stepped states are the same as in a quiet process."""
    child = textwrap.dedent(
        """
        import threading
        import numpy as np
        import vi_control as vc
        from vi_control.model.generate import planar_chain_urdf

        def robot(n, limit):
            urdf = planar_chain_urdf(n, joint_type="revolute")
            return vc.load_robot(urdf.replace('lower="-3.14159" upper="3.14159"', f'lower="{-limit}" upper="{limit}"'))

        def drive():
            vi = vc.MidpointVI(robot(2, 0.3), 0.01)
            stops = vc.JointStops(vi)
            x = vi.state_from_configurations(np.array([0.2, 0.2]), np.array([0.25, 0.25]))
            for k in range(30):
                x = stops.step(x, np.array([20.0, 20.0]), step_index=k)
            return x

        quiet = drive()
        done = threading.Event()

        def build():
            others = [robot(2, 3.0), robot(3, 3.0)]
            i = 0
            while not done.is_set():
                vc.MidpointVI(others[i % 2], 0.01, compile=i % 3 == 0)
                i += 1

        builder = threading.Thread(target=build)
        builder.start()
        try:
            for _ in range(60):
                assert np.array_equal(drive(), quiet)
        finally:
            done.set()
            builder.join()
        print("same states")
        """
    )
    res = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert res.returncode == 0 and "same states" in res.stdout, (res.returncode, res.stderr[-3000:])


def _at_the_lock(thread: threading.Thread) -> bool:
    """Whether ``thread`` is waiting to enter GRAPH_LOCK: its innermost frame is the decorator's wrapper or a
    ``with GRAPH_LOCK:`` line."""
    frame = sys._current_frames().get(thread.ident)
    if frame is None:
        return False
    return frame.f_code is _LOCKED or "GRAPH_LOCK" in linecache.getline(frame.f_code.co_filename, frame.f_lineno)


def _prepared() -> dict:
    """What a builder starts from, made before the lock is taken (its own builds are not the ones under test)."""
    robot = _robot()
    return {
        "robot": robot,
        "compiled_vi": vc.MidpointVI(robot, 0.01, compile=True),
        "continuous": ContinuousDynamics(robot),
        "linear_time": vc.make_integrator("linear_time", robot, 0.01),
        "pendulum_dynamics": SecondOrderDynamics(vc.load_robot("pendulum")),
    }


def _frame_is_pinocchio_s(dynamics: ContinuousDynamics, frame: str) -> bool:
    model = dynamics.robot.pin_model
    q, data = np.array([0.3, -0.4]), model.createData()
    pin.framesForwardKinematics(model, data, q)
    R, t = dynamics.frame_placement(frame, q)
    return np.allclose(R, data.oMf[model.getFrameId(frame)].rotation, atol=1e-12) and np.allclose(
        t, data.oMf[model.getFrameId(frame)].translation, atol=1e-12
    )


BUILDERS = {
    "the midpoint VI's symbolic build": lambda p: vc.MidpointVI(p["robot"], 0.01, compile=False).nx == 4,
    "a derivative's generated C, on first use": lambda p: p["compiled_vi"].functions.compiled("hessian"),
    "the linear-time VI's derivatives, on first use": lambda p: len(p["linear_time"].curved_outputs()) > 0,
    "a frame's placement, on first use": lambda p: _frame_is_pinocchio_s(p["continuous"], "link2"),
    "the continuous dynamics": lambda p: ContinuousDynamics(p["robot"]).mass_matrix(np.zeros(2)).shape == (2, 2),
    "collocation's dynamics": lambda p: SecondOrderDynamics(p["robot"]).nq == 2,
    "a collocation NLP": lambda p: Transcription(pendulum_min_time(p["pendulum_dynamics"], "lg", 6)).nq == 1,
    "the Lie group VI's step": lambda p: "residual" in step_functions.__wrapped__("SE3", "cayley", 6, False).raw,
    "a DMOC NLP": lambda p: transcription.__wrapped__("SO3", "cayley", 3, 3, "hold").N == 3,
    "the RDP's step": lambda p: vc.ReducedDAlembertPontryagin(sleigh_system(1.0, 1.0, 0.1), 0.1).n_basis == 2,
}


@pytest.mark.parametrize("name", BUILDERS)
def test_a_build_waits_while_another_thread_holds_the_graph_lock(name):
    """While this thread holds GRAPH_LOCK, a builder started in another thread stops at the lock and stays there;
    once released, it finishes with a right result."""
    prepared = _prepared()
    out: list = []
    thread = threading.Thread(target=lambda: out.append(BUILDERS[name](prepared)), daemon=True)
    with GRAPH_LOCK:
        thread.start()
        deadline = time.monotonic() + 60.0
        while not _at_the_lock(thread) and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.005)
        assert _at_the_lock(thread), f"{name} never waited for the graph lock (finished: {not thread.is_alive()})"
        time.sleep(0.2)
        assert thread.is_alive() and _at_the_lock(thread), f"{name} went on while another thread held the lock"
    thread.join(timeout=300.0)
    assert not thread.is_alive() and out == [True]


def test_the_graph_lock_is_reentrant_and_a_builder_s_errors_release_it():
    """Builders call builders (the VI's build calls the tree's): the lock re-enters in one thread; a builder that
    raises leaves it free for the next thread."""

    @builds_graph
    def inner():
        return GRAPH_LOCK._is_owned()

    @builds_graph
    def failing():
        raise ValueError("bad model")

    assert builds_graph(inner)() is True
    with pytest.raises(ValueError, match="bad model"):
        failing()
    free = []

    def take_and_give_back():
        free.append(GRAPH_LOCK.acquire(timeout=5.0))
        GRAPH_LOCK.release()

    other = threading.Thread(target=take_and_give_back)
    other.start()
    other.join()
    assert free == [True]


def _symbolic(value) -> bool:
    return isinstance(value, (ca.SX, ca.MX, ca.CodeGenerator)) or (
        isinstance(value, (list, tuple)) and any(isinstance(v, (ca.SX, ca.MX)) for v in value)
    )


def _unlocked_graph_calls(run) -> tuple[object, set[str]]:
    """``run()``'s result and the CasADi calls it made (in this thread and any it started) that took or returned an
    expression (SX, MX; a code generator) without holding GRAPH_LOCK, each named with the vi_control line below it."""
    casadi_py, seen = ca.casadi.__file__, set()

    def profile(frame, event, arg):
        if frame.f_code.co_filename != casadi_py or GRAPH_LOCK._is_owned():
            return
        if (event == "call" and any(_symbolic(v) for v in frame.f_locals.values())) or (
            event == "return" and _symbolic(arg)
        ):
            caller = frame.f_back
            while caller is not None and "vi_control" not in caller.f_code.co_filename:
                caller = caller.f_back
            where = "?" if caller is None else f"{Path(caller.f_code.co_filename).name}:{caller.f_lineno}"
            seen.add(f"{frame.f_code.co_name} from {where}")

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        return run(), seen
    finally:
        sys.setprofile(None)
        threading.setprofile(None)


def _stops_at_their_limits() -> bool:
    """A chain driven into its stops: each active set's held system built here and compiled in the background."""
    vi = vc.MidpointVI(_robot(0.3), 0.01)
    stops = vc.JointStops(vi)
    x = vi.state_from_configurations(np.array([0.2, 0.2]), np.array([0.25, 0.25]))
    for k in range(30):
        x = stops.step(x, np.array([20.0, 20.0]), step_index=k)
    for thread in threading.enumerate():  # (the background builds, to their end)
        if thread is not threading.current_thread() and thread.daemon and "_compile" in repr(thread._target):
            thread.join(timeout=300.0)
    return stops.active == ((0, 0.3), (1, 0.3))


WORKFLOWS = {
    "a pendulum swing-up planned": lambda: (
        vc.plan_task(vc.MidpointVI(vc.load_robot("pendulum"), 0.1), vc.load_task("task_pendulum_swingup"))[0].U.shape[1]
        == 1
    ),
    "joint stops reached": _stops_at_their_limits,
}


@pytest.mark.parametrize("name", [*BUILDERS, *WORKFLOWS])
def test_every_casadi_call_on_an_expression_holds_the_graph_lock(name):
    """No builder — and no workflow end to end — makes a CasADi call that takes or returns an expression outside
    GRAPH_LOCK (evaluating a built function with numbers needs no lock)."""
    if name in WORKFLOWS:
        run = WORKFLOWS[name]
    else:
        prepared = _prepared()
        run = lambda: BUILDERS[name](prepared)  # noqa: E731
    result, unlocked = _unlocked_graph_calls(run)
    assert result is True and not unlocked, sorted(unlocked)


def test_the_check_sees_a_call_outside_the_lock():
    """The check above is not blind: an expression built here, without the lock, is reported."""
    _, unlocked = _unlocked_graph_calls(lambda: ca.gradient(ca.SX.sym("x") ** 2, ca.SX.sym("x")))
    assert {"sym from ?", "gradient from ?"} <= unlocked


def test_a_system_dropped_in_one_thread_is_released_under_the_lock_at_the_next_build():
    """Dropping an object that keeps expressions releases them too (SX reference counts are plain integers, shared
    constants in every graph): one dropped in another thread while this one builds waits in the graveyard, and is
    released holding the lock — at the next build, in whichever thread."""
    owner = ContinuousDynamics(_robot())
    released: list[bool] = []
    kept = type("Kept", (), {})()  # (a plain object kept beside its expressions: when it goes, they go)
    owner.kept = kept
    weakref.finalize(kept, lambda: released.append(GRAPH_LOCK._is_owned()))
    del kept
    with GRAPH_LOCK:
        box = [owner]
        del owner
        dropper = threading.Thread(target=box.clear)  # the last reference, dropped in another thread
        dropper.start()
        dropper.join()
        assert released == [] and any("kept" in attributes for attributes in graph_lock._graveyard)
    assert released == []  # (nothing built since)
    fresh = ContinuousDynamics(_robot())  # a build: what was dropped is released first, holding the lock
    assert released == [True] and not graph_lock._graveyard and fresh.robot.nq == 2


def test_every_class_that_keeps_expressions_is_released_under_the_lock():
    """The objects of vi_control that keep CasADi expressions or functions are OwnsGraphs (the ones a test can name:
    an owner added without it would release its graphs wherever it is dropped)."""
    from vi_control.integrators.rdp import ReducedDAlembertPontryagin
    from vi_control.mechanics.codegen import FunctionSet, _CFunction, _VMFunction
    from vi_control.mechanics.discrete import DiscreteSystemStructure
    from vi_control.mechanics.symbolic import SymbolicTree
    from vi_control.planning.collocation.gait import BipedGait
    from vi_control.planning.dmoc_nlp import Transcription as DMOCTranscription

    owners = (
        SymbolicTree,
        DiscreteSystemStructure,
        FunctionSet,
        _VMFunction,
        _CFunction,
        ContinuousDynamics,
        SecondOrderDynamics,
        Transcription,
        BipedGait,
        DMOCTranscription,
        ReducedDAlembertPontryagin,
    )
    assert all(issubclass(c, OwnsGraphs) for c in owners)
    vi = vc.MidpointVI(_robot(), 0.01)
    kept = [v for v in vars(vi).values() if isinstance(v, (ca.Function, ca.SX, ca.MX))]
    assert kept == [] and isinstance(vi.structure, OwnsGraphs) and isinstance(vi.functions, OwnsGraphs)
    release_dropped_graphs()
    assert not graph_lock._graveyard


def test_two_threads_asking_for_a_function_compiled_on_first_use_both_get_the_compiled_one():
    """A derivative compiled on first use (the Hessian), asked for by two threads at once (a planner's worker and its
    executor): the second waits for the first one's build and gets the generated C — not the CasADi VM's function
    (before: 25 of 30 such pairs), whose plan takes the numpy path, ~10 × slower."""
    robot = _robot()
    for i in range(8):
        vi = vc.MidpointVI(robot, 0.01 + 1e-4 * i)
        start, got = threading.Barrier(2), []

        def ask(vi=vi, start=start, got=got):
            start.wait()
            got.append(vi.functions["hessian"].compiled)

        askers = [threading.Thread(target=ask) for _ in range(2)]
        for t in askers:
            t.start()
        for t in askers:
            t.join()
        assert got == [True, True], (i, got)
