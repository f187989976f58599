"""Hostile inputs, round three: each test here failed on the code before its fix.

DMOC's sizes and magnitudes, a task's Δt, a rigid body's numbers, the vehicle planning section's types, a NaN
DMOC guess and a sweep's results file nested too deeply. Every bound is tried on both sides: the value at the
bound is accepted (and, where it is cheap, solved), the next one refused with an error naming the key.
"""

import json
import math

import numpy as np
import pytest

import vi_control as vc
from vi_control.model.limits import MAX_DMOC_HORIZON, PLAN_DT_RANGE
from vi_control.model.rigid_body import RigidBodyConfigError, load_rigid_body
from vi_control.planning.dmoc import DMOCProblem, geodesic_guess, solve_dmoc
from vi_control.planning.task import TaskError, load_task
from vi_control.planning.vehicle import maneuver_settings, maneuvers, pose_from_spec
from vi_control.sweep import SweepError
from vi_control.sweep.engine import ResultStore

SPACECRAFT = load_rigid_body("spacecraft")
UUV = load_rigid_body("vehicle_uuv")
UP = math.nextafter(1.0, 2.0)  # one ulp above 1


def _goal(position=(2.0, 1.0, 0.0)) -> np.ndarray:
    g = np.eye(4)
    g[:3, :3] = pose_from_spec({"rpy_deg": [0.0, 0.0, 90.0]}, "SO3")
    g[:3, 3] = position
    return g


# ---- DMOC sizes --------------------------------------------------------------------------------------------------
def test_dmoc_horizon_is_bounded_where_its_dense_check_still_fits():
    """horizon 20 000 (inside the task schema's 100 000) ran until killed: the second-order check is dense in the
    N·m inputs. Up to MAX_DMOC_HORIZON a problem is built; one more is a ValueError naming horizon."""
    DMOCProblem(SPACECRAFT, np.eye(3), np.eye(3), MAX_DMOC_HORIZON, 0.1 * MAX_DMOC_HORIZON)
    for n in (MAX_DMOC_HORIZON + 1, 20_000):
        with pytest.raises(ValueError, match=rf"^horizon: must be an integer in \[2, {MAX_DMOC_HORIZON}\]"):
            DMOCProblem(SPACECRAFT, np.eye(3), np.eye(3), n, 0.1 * n)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(max_iterations=-1), r"^max_iterations: must be an integer in \[1, 1000\], got -1"),
        (dict(max_iterations=0), r"^max_iterations: must be an integer in \[1, 1000\], got 0"),
        (dict(max_iterations=10**9), r"^max_iterations: .*got 1000000000"),
        (dict(max_iterations=1001), r"^max_iterations: .*got 1001"),
        (dict(tolerance=0.0), r"^tolerance: must be a number in \[1e-14, 1e-06\], got 0.0"),
        (dict(tolerance=1e-14 / UP), r"^tolerance: "),
        (dict(tolerance=1e-6 * UP), r"^tolerance: "),
        (dict(tolerance=float("nan")), r"^tolerance: "),
    ],
)
def test_solve_dmoc_refuses_iterations_and_tolerances_outside_their_range(kwargs, match):
    """max_iterations = −1 reported "converged" (the loop never ran, the unchecked guess was returned), 10⁹ with
    tolerance = 0 ran until killed. Both ends of both ranges, refused before anything is built."""
    prob = DMOCProblem(SPACECRAFT, np.eye(3), pose_from_spec({"rpy_deg": [0, 0, 90]}, "SO3"), 8, 1.5)
    with pytest.raises(ValueError, match=match):
        solve_dmoc(prob, **kwargs)


def test_solve_dmoc_at_the_ends_of_its_ranges_runs_and_reports_honestly():
    """max_iterations = 1 (the lower end) runs one Newton step from the geodesic: not converged (the residual says
    so); at tolerance = 1e-6 and 1000 iterations (the upper ends) the spacecraft's yaw converges to a verified minimum
    whose residual is below that tol."""
    prob = DMOCProblem(SPACECRAFT, np.eye(3), pose_from_spec({"rpy_deg": [0, 0, 90]}, "SO3"), 8, 1.5)
    one = solve_dmoc(prob, max_iterations=1, continuation=False, fallback=None)
    assert one.iterations == 1 and (one.converged == (one.residual <= 1e-11))
    loose = solve_dmoc(prob, tolerance=1e-6, max_iterations=1000)
    assert loose.converged and loose.residual <= 1e-6
    tight = solve_dmoc(prob, tolerance=1e-14, max_iterations=1000, fallback=None)
    assert tight.residual <= 1e-14 or not tight.converged


@pytest.mark.parametrize("x", [1e3 * UP, -1e3 * UP, 1e6, 2.0**63])
def test_dmoc_goal_positions_beyond_what_newton_can_resolve_are_refused(x):
    """Goals at 1e6 m or 2⁶³ m ran every warm start and IPOPT to their ends (Newton's pose rows carry |p|·eps of
    rounding, above its tolerance there). Beyond 1e3 m: ValueError naming the goal's position."""
    with pytest.raises(ValueError, match=r"^gT position: entry 0 = .* must be a number in \[-1000, 1000\]"):
        DMOCProblem(UUV, np.eye(4), _goal(position=(x, 0.0, 0.0)), 32, 10.0)
    with pytest.raises(ValueError, match=r"^goal\.position\[0\]: must be a number in \[-1000, 1000\]"):
        pose_from_spec({"position": [x, 0.0, 0.0]}, "SE3", "goal")


def test_dmoc_goal_at_the_position_bound_is_solved_or_honestly_not():
    """At 1e3 m (the bound) a problem is built and solved to an answer that says what it is: a verified minimum
    reaches the goal, anything else is not marked converged."""
    prob = DMOCProblem(UUV, np.eye(4), _goal(position=(1e3, 0.0, 0.0)), 32, 10.0)
    res = solve_dmoc(prob, continuation=False, fallback=None)
    assert not res.converged or (res.pose_error <= 1e-9 and res.residual <= 1e-11)


def test_a_nan_dmoc_guess_is_named_as_the_guess():
    """A NaN ξ guess was blamed on "a relative rotation by π"; now ValueError naming xi_guess and the step."""
    prob = DMOCProblem(SPACECRAFT, np.eye(3), pose_from_spec({"rpy_deg": [0, 0, 90]}, "SO3"), 8, 1.5)
    xi = geodesic_guess(prob)
    xi[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"^xi_guess: velocity of step 3 is not finite"):
        solve_dmoc(prob, xi_guess=xi)
    with pytest.raises(ValueError, match=r"^xi_guess: expected \(8, 3\) velocities"):
        solve_dmoc(prob, xi_guess=xi[:4])
    with pytest.raises(ValueError, match=r"^xi_guess: entry .* must be a number in \[-1000, 1000\]"):
        solve_dmoc(prob, xi_guess=np.full((8, 3), 1e3 * UP))
    ok = solve_dmoc(prob, xi_guess=geodesic_guess(prob))  # a finite guess as before
    assert ok.converged


# ---- a task's Δt -------------------------------------------------------------------------------------------------
def _swingup(**over) -> dict:
    d = {
        "model": "pendulum",
        "dt": 0.1,
        "horizon": 50,
        "start": {"q": [0.0]},
        "goal": {"q": ["pi"]},
        "weights": {"Q": [100.0, 1.0], "R": 1.0},
    }
    d.update(over)
    return d


def test_task_dt_below_what_any_robot_moves_in_is_refused():
    """dt: 1e-300 planned "converged after 0 iterations" with the pendulum still at 0 (no input moves anything in
    such a horizon). The task's Δt is now the controller's range: at its lower end a task loads and plans, below it
    TaskError naming dt."""
    lo = PLAN_DT_RANGE[0]
    assert load_task(_swingup(dt=lo)).dt == lo
    for dt in (lo / UP, 1e-12, 1e-300):
        with pytest.raises(TaskError, match=r"^dt: must be a number in \[1e-05, 10\]"):
            load_task(_swingup(dt=dt))


def test_a_pendulum_at_the_smallest_mass_scale_plans_without_overflow():
    """mass_scale 1e-300 overflowed in the DDP's regularization (refused since, MASS_SCALE_RANGE); at the lower
    end, 1e-12, the swing-up plans with finite numbers and ends where the same task ends at scale 1 (the
    swing-up reaches the top as at scale 1 — with torques 1e-12 as large, the weight R costs nothing there)."""
    from vi_control.planning.pipeline import plan_task

    task = load_task(_swingup(horizon=30, optimizer={"max_iterations": 30}))
    ends = []
    for scale in (1.0, 1e-12):
        robot = vc.load_robot("pendulum", mass_scale=scale)
        plan, _ = plan_task(vc.MidpointVI(robot, task.dt), task)
        assert np.all(np.isfinite(plan.X)) and np.all(np.isfinite(plan.U)) and np.all(np.isfinite(plan.K))
        ends.append(plan.X[-1, 0])
    assert all(abs(e - np.pi) < 0.2 for e in ends), ends


# ---- rigid-body YAML ---------------------------------------------------------------------------------------------
def _uuv(**over) -> dict:
    d = {
        "name": "b",
        "group": "SE3",
        "mass": 3.0,
        "inertia": {"cylinder": {"radius": 0.1, "length": 0.5}},
        "actuators": [{"name": "fx", "type": "force", "direction": [1, 0, 0], "position": [0.0, 0.0, 0.1]}],
        "gravity": [0.0, 0.0, -9.81],
        "buoyancy": {"force": 29.43},
    }
    d.update(over)
    return d


@pytest.mark.parametrize(
    "over, match",
    [
        (dict(gravity=[0.0, 0.0, -1e10]), r"^gravity\[2\]: must be a number in \[-10000, 10000\]"),
        (dict(gravity=[0.0, 1e4 * UP, 0.0]), r"^gravity\[1\]: "),
        (
            dict(actuators=[{"name": "fx", "type": "force", "direction": [1, 0, 0], "position": [1e300, 0, 0]}]),
            r"^actuators\[0\]\.position\[0\]: must be a number in \[-1e\+06, 1e\+06\]",
        ),
        (
            dict(inertia={"cylinder": {"radius": 1e300, "length": 0.5}}),
            r"^inertia\.cylinder\.radius: must be a number in \[1e-06, 1e\+06\]",
        ),
        (dict(inertia={"cylinder": {"radius": 1e6, "length": 1e6}}), r"^inertia\.cylinder: principal moments"),
        (dict(mass=1e9 * UP), r"^mass: must be a number in \[1e-12, 1e\+09\]"),
        (dict(buoyancy={"force": 1e300}), r"^buoyancy\.force: must be a number in \[0, 1e\+13\]"),
    ],
)
def test_rigid_body_numbers_beyond_what_the_arithmetic_carries_are_refused(over, match):
    """Gravity 1e10, an actuator at 1e300 m were accepted; a cylinder radius of 1e300 raised OverflowError (r²).
    Each is now a RigidBodyConfigError naming the key; the same key at its bound loads."""
    with pytest.raises(RigidBodyConfigError, match=match):
        load_rigid_body(_uuv(**over))


def test_rigid_body_numbers_at_their_bounds_load():
    body = load_rigid_body(
        _uuv(
            gravity=[0.0, 0.0, -1e4],
            buoyancy={"force": 3e4},
            actuators=[{"name": "fx", "type": "force", "direction": [1, 0, 0], "position": [0.0, 0.0, 1e6]}],
        )
    )
    assert body.gravity[2] == -1e4 and body.input_matrix[1, 0] == 1e6  # (r × d)_y = z·1
    assert load_rigid_body(_uuv(inertia={"cylinder": {"radius": 1e6, "length": 0.5}}, mass=1e-3)).inertia[
        0, 0
    ] == pytest.approx(0.5 * 1e-3 * 1e12)


@pytest.mark.parametrize(
    "scale, ok", [(1e-12, True), (1e-12 / UP, False), (1e-300, False), (1e6, True), (1e6 * UP, False)]
)
def test_rigid_body_scales_are_those_of_robot_models(scale, ok):
    for key in ("mass_scale", "drag_scale", "buoyancy_scale"):
        if ok:
            load_rigid_body("vehicle_uuv", **{key: scale})
        else:
            with pytest.raises(RigidBodyConfigError, match=rf"{key}: must be a number in \[1e-12, 1e\+06\]"):
                load_rigid_body("vehicle_uuv", **{key: scale})


# ---- the vehicle's planning section --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "planning, match",
    [
        ({"lqr": {"Q": "ten"}}, r"^planning\.lqr\.Q: expected a number or 6 numbers, got 'ten'"),
        ({"lqr": {"R": [1, "x", 1]}}, r"^planning\.lqr\.R: expected a number or 3 numbers"),
        ({"lqr": {"Qf": [[1, 2]]}}, r"^planning\.lqr\.Qf: "),
        ({"lqr": {"Q": 1e12 * UP}}, r"^planning\.lqr\.Q\[0\]: must be a number in \[0, 1e\+12\]"),
        ({"lqr": {"Q": -1.0}}, r"^planning\.lqr\.Q\[0\]: must be a number in \[0, 1e\+12\]"),
        ({"horizon": MAX_DMOC_HORIZON + 1}, r"^planning\.horizon: must be an integer in \[2, 256\]"),
    ],
)
def test_planning_section_types_and_ranges_are_named(planning, match):
    """Strings in planning.lqr ended in numpy's "could not convert string to float", naming no key."""
    body = load_rigid_body({**_spacecraft_cfg(), "planning": planning})
    with pytest.raises(ValueError, match=match):
        maneuver_settings(body)


def _spacecraft_cfg() -> dict:
    return {
        "name": "sc",
        "group": "SO3",
        "inertia": [1.0, 2.0, 2.5],
        "actuators": [{"name": f"t{i}", "type": "torque", "direction": list(np.eye(3)[i])} for i in range(3)],
    }


@pytest.mark.parametrize(
    "rpy, match",
    [
        (["ninety", 0, 0], r"^planning\.maneuvers\[0\]\.goal\.rpy_deg: expected 3 numbers, got \['ninety', 0, 0\]"),
        ([0, 0, 1e300], r"^planning\.maneuvers\[0\]\.goal\.rpy_deg\[2\]: must be a number in \[-360, 360\]"),
        ([0, 360 * UP, 0], r"rpy_deg\[1\]: must be a number in \[-360, 360\]"),
    ],
)
def test_maneuver_angles_are_numbers_of_at_most_a_turn(rpy, match):
    """Strings in a maneuver's angles ended in numpy's conversion error; 1e300° was accepted (cos/sin of it carry
    no digits of the angle). At ±360° a maneuver loads, and turns the body by a whole turn: the identity."""
    body = load_rigid_body({**_spacecraft_cfg(), "planning": {"maneuvers": [{"goal": {"rpy_deg": rpy}}]}})
    with pytest.raises(ValueError, match=match):
        maneuvers(body)
    R = pose_from_spec({"rpy_deg": [360.0, -360.0, 360.0]}, "SO3")
    np.testing.assert_allclose(R, np.eye(3), atol=1e-14)


# ---- sweep results -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("line", [0, 1])
def test_resuming_a_sweep_from_deeply_nested_json_is_a_sweep_error(tmp_path, line):
    """A results file whose header (or a record) is 10⁵ nested brackets raised RecursionError out of the resume;
    now SweepError naming the file and line. A record without a usable key (a list, a dict as key) likewise."""
    header = {"kind": "t", "n": 1}
    path = tmp_path / "results.jsonl"
    deep = "[" * 100_000 + "]" * 100_000
    path.write_text((deep if line == 0 else json.dumps({"header": header}) + "\n" + deep) + "\n")
    with pytest.raises(SweepError, match=rf"line {line + 1}: JSON nested too deeply"):
        ResultStore(path, header)
    path.write_text(json.dumps({"header": header}) + "\n" + json.dumps({"key": {"a": 1}}) + "\n")
    with pytest.raises(SweepError, match=r"line 2: not a record of vi_sweep \(its 'key' is \{'a': 1\}\)"):
        ResultStore(path, header)
    # the same file with a good record resumes it
    path.write_text(json.dumps({"header": header}) + "\n" + json.dumps({"key": [1, 2], "x": 3}) + "\n")
    store = ResultStore(path, header)
    assert store.done == {(1, 2): {"key": [1, 2], "x": 3}}
    store.close()
