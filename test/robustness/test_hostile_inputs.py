"""Bug hunt (hostile inputs and unfamiliar robots): each test here failed on the code before its fix.

Each case is a thing a user would do — step a robot of example-robot-data from its neutral pose, pass the wrong
state to a Legendre transform — that ended as a wrong number or an error that was not true. Every expectation is
independent of the code under test: Newton's own residual at the returned root, the sizes the interface states.
"""

import math

import numpy as np
import pytest
from linear_time_oracle import linear_time

import vi_control as vc

# Two point masses in a horizontal plane: the lower link's mass sits on the shoulder axis at elbow = 0, so M(q) is
# singular there (the shoulder moves no inertia) and nearly so beside it, while the damping (c/2 on the diagonal
# of M_{k+1}) keeps the step's Newton matrix regular: the one-step map exists everywhere.
FOLDED = """<?xml version="1.0"?>
<robot name="folded">
<link name="base"/>
<link name="upper"><inertial><mass value="0.1"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/>
</inertial></link>
<joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/><axis xyz="0 0 1"/>
<limit effort="5" velocity="10" lower="-3" upper="3"/><dynamics damping="1"/></joint>
<link name="lower"><inertial><origin xyz="-0.5 0 0"/><mass value="1.0"/>
<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
<joint name="elbow" type="revolute"><parent link="upper"/><child link="lower"/><origin xyz="0.5 0 0"/>
<axis xyz="0 0 1"/><limit effort="5" velocity="10" lower="-3" upper="3"/><dynamics damping="1"/></joint>
</robot>"""


@pytest.mark.parametrize("compile", [False, None])
def test_step_beside_a_mass_matrix_singularity_is_not_refused_for_its_guess(compile):
    """Beside the fold (elbow = 1e-7) M(q_k)⁻¹p_k is 4e11 rad/s: the predictor q_k + Δt·M⁻¹p_k guessed a shoulder
    turn of 4e9 rad, where M_{k+1} (velocity terms ~ v²) looks singular, and the step raised "SingularityError ...
    the one-step map is not defined here" — untrue: from q_k Newton converges in two updates. A predicted turn
    beyond max_rotation cannot lead to a root the step would accept, so the stationary guess is used instead.
    Checked against the DEL residual at the returned root (independent of the guess)."""
    robot = vc.load_robot(FOLDED)
    vi = vc.MidpointVI(robot, 0.01, compile=compile)
    x, u = np.array([0.0, 1e-7, 1e-3, 0.0]), np.array([0.1, 0.0])
    assert abs(0.01 * vi.velocity(x)[0]) > 1e6  # the predictor's guess is wild here
    r = vi.solve(x, u)
    R, _ = vi.functions["residual"](r.y, np.concatenate([x, u]))
    assert np.abs(np.asarray(R)).max() <= 1e-10
    assert np.abs(r.x[:2] - x[:2]).max() < 0.01  # a damped creep, not a whirl
    X, _ = vi.simulate(x, np.tile(u, (20, 1)))  # and on from there
    assert np.all(np.isfinite(X)) and abs(X[-1, 0]) < 0.1


def test_the_predictor_is_used_up_to_max_rotation_inclusive():
    """initial_guess's boundary: a predicted turn Δt·M⁻¹p of exactly ``max_rotation`` is still the guess
    (q_k + Δt·M⁻¹p), one double less of max_rotation makes it the stationary guess q_k."""
    robot = vc.load_robot("pendulum")
    x = np.array([0.2, 3.0])
    dq = 0.05 * vc.MidpointVI(robot, 0.05, compile=False).velocity(x)[0]
    assert 0.0 < dq < math.pi
    at = vc.MidpointVI(robot, 0.05, compile=False, max_rotation=dq)
    assert at.settings.max_rotation == dq and at.initial_guess(x)[0] == x[0] + dq
    below = vc.MidpointVI(robot, 0.05, compile=False, max_rotation=math.nextafter(dq, 0.0))
    assert below.initial_guess(x)[0] == x[0]


@pytest.mark.parametrize("kind", ["midpoint", "linear_time", "gni"])
def test_state_functions_refuse_a_state_of_the_wrong_size(kind):
    """energy, velocity and warm_start slice their argument by nq: the acrobot's energy of a 5-vector was returned
    (-19.62 J, the energy of the first four entries), velocity and warm_start of any longer vector too; solve's
    guesses y0/lam0 of the wrong size ended in numpy's broadcast error (or were silently dropped), a NaN guess as
    "Newton did not converge after 0 iterations"; simulate(steps=-1) as numpy's "negative dimensions". Each is now
    a ValueError naming the argument and the size the interface states."""
    robot = vc.load_robot("sleigh" if kind == "gni" else "acrobot")
    vi = vc.make_integrator(kind, robot, 0.01)
    long, q = np.zeros(vi.nx + 1), np.zeros(vi.nq)
    for call, what in [
        (lambda: vi.energy(long), "state x"),
        (lambda: vi.energy(long[:-2]), "state x"),
        (lambda: vi.velocity(long), "state x"),
        (lambda: vi.warm_start(long), "state x_next"),
        (lambda: vi.state_from_velocity(np.zeros(vi.nq + 1), q), "q"),
        (lambda: vi.state_from_configurations(q, np.zeros(vi.nq + 1)), "q"),
        (lambda: vi.potential_gradient(np.zeros(vi.nq + 1)), "q"),
        (lambda: vi.wrap(long), "wrap"),
        (lambda: vi.solve(np.zeros(vi.nx), np.zeros(vi.nu), y0=np.zeros(50)), "y0"),
        (lambda: vi.solve(np.zeros(vi.nx), np.zeros(vi.nu), y0=np.full(vi.nd + vi.nc, np.nan)), "y0"),
        (lambda: vi.solve(np.zeros(vi.nx), np.zeros(vi.nu), lam0=np.zeros(vi.nc + 3)), "lam0"),
        (lambda: vi.simulate(np.zeros(vi.nx), np.zeros((2, vi.nu)), steps=-1), "steps"),
    ]:
        with pytest.raises(ValueError, match=what):
            call()
    x = vi.state_from_velocity(q, q)  # the right sizes still work, stacks of states in wrap too
    assert np.isfinite(vi.energy(x)) and vi.wrap(np.stack([x, x])).shape == (2, vi.nx)


def test_a_directory_or_device_as_the_model_is_named_as_such(tmp_path):
    """A directory (or /dev/null) given as the model was answered "is not a bundled model (acrobot, …), erd:<name>,
    URDF XML, or an existing URDF file" — it exists; what is wrong is that it is not a regular file."""
    for path in (str(tmp_path), "/dev/null"):
        with pytest.raises(vc.URDFError, match="is not a regular file"):
            vc.load_robot(path)
    with pytest.raises(vc.URDFError, match="not a bundled model"):  # a missing file still lists the choices
        vc.load_robot(str(tmp_path / "missing.urdf"))


def test_an_initial_guess_that_cannot_be_simulated_says_why():
    """A start the integrator refuses (the pendulum at 1000 rad/s with Δt = 0.1: 100 rad per step) was reported as
    "step 0 of 100 failed (no convergence, a singular step or a state beyond 1e8)" — three guesses, none naming
    the joint. The step's own refusal is now in the PlanningError."""
    task = vc.load_task("task_pendulum_swingup")
    task.q0, task.qdot0 = np.array([0.0]), np.array([1000.0])
    vi = vc.MidpointVI(vc.load_robot("pendulum"), task.dt)
    with pytest.raises(vc.PlanningError, match=r"step 0 of 100 failed .*joint 'theta' would turn"):
        vc.plan_task(vi, task)


def test_a_goal_off_the_holonomic_constraints_is_refused_by_name():
    """The four-bar's goal (0.8, 0.8, 0.8) does not close the loop: it was planned, "converged", and the plan ended
    where the loop allows — not at the goal (baxter's mimic fingers given independent goals alike, 0.01 rad off).
    A start off the constraints was already refused; the goal now is too, naming the constraint. A goal on the
    loop (the closed-form configuration of bundled.fourbar_initial_configuration) is planned."""
    from vi_control.model.bundled import fourbar_initial_configuration
    from vi_control.planning.pipeline import reference_trajectory

    vi = vc.MidpointVI(vc.load_robot("fourbar"), 0.05, compile=False)
    text = (
        "name: reach\nmodel: fourbar\ndt: 0.05\nhorizon: 5\ngoal: {{q: {}}}\nreference: {{type: goal}}\n"
        "weights: {{Q: 1, R: 0.1, Qf: 10}}\n"
    )
    x0 = vi.state_from_configurations(*[fourbar_initial_configuration(0.0)] * 2)
    with pytest.raises(vc.TaskError, match=r"goal.q violates holonomic constraint 0, coincident rocker/world"):
        reference_trajectory(vc.load_task(text.format([0.8, 0.8, 0.8])), vi, x0)
    X, _ = reference_trajectory(vc.load_task(text.format(fourbar_initial_configuration(0.8).tolist())), vi, x0)
    assert np.allclose(X[-1, :3], fourbar_initial_configuration(0.8))


def test_locked_joints_beyond_their_limits_or_listed_twice_are_refused():
    """``locked: {slider: 5.0}`` welded the cart-pole's cart 3 m past its end stop (URDF limits [-2, 2]) without a
    word, where a start or goal there is refused; ``locked: [elbow, elbow]`` was accepted where ``prescribed`` with
    a repeated joint is not. Both are now SystemConfigErrors naming the key; a weld inside the limits (and at a
    limit, inclusive) still loads."""
    with pytest.raises(vc.SystemConfigError, match=r"locked.slider: 5 is outside joint 'slider''s limits \[-2, 2\]"):
        vc.load_robot("cartpole", {"locked": {"slider": 5.0}})
    with pytest.raises(vc.SystemConfigError, match="locked: a joint is listed twice"):
        vc.load_robot("double_pendulum", {"locked": ["elbow", "elbow"]})
    assert vc.load_robot("cartpole", {"locked": {"slider": 2.0}}).joint_names == ["hinge"]
    assert vc.load_robot("cartpole", {"locked": {"hinge": 10.0}}).joint_names == ["slider"]  # continuous: no limits


@pytest.mark.parametrize("compile", [False, None])
def test_a_complex_state_or_input_is_refused(compile):
    """A complex x (an eigenvector of A, say) was stepped after numpy dropped its imaginary part with a
    ComplexWarning: the step of a different state, returned as if of this one. Now a ValueError; real arrays of
    other dtypes (integers, float32, Fortran order, strided views) still step as their float64 values do."""
    vi = vc.MidpointVI(vc.load_robot("pendulum"), 0.1, compile=compile)
    x, u = np.array([0.2, 0.5]), np.array([0.8])
    with pytest.raises(ValueError, match="state is complex"):
        vi.step(x + 0.1j, u)
    with pytest.raises(ValueError, match="input is complex"):
        vi.step(x, u.astype(complex))
    with pytest.raises(ValueError, match="state x is complex"):
        vi.energy(x + 0.1j)
    ref = vi.step(x, u)
    for xs, us in [
        (np.array([0, 1]), np.array([1])),
        (x.astype(np.float32), u.astype(np.float32)),
        (np.array([0.2, 9.0, 0.5, 9.0])[::2], u),
        (x.reshape(2, 1, order="F"), list(u)),
    ]:
        assert np.array_equal(vi.step(xs, us), vi.step(np.asarray(xs, float).ravel(), np.asarray(us, float)))
    assert np.array_equal(vi.step(np.array([0.2, 9.0, 0.5, 9.0])[::2], u), ref)


def test_tracking_command_refuses_a_negative_step_or_a_bad_state():
    """TrackingController.command(-1, x) returned the command about the plan's *last* stage (numpy's negative
    index), command(k, NaN state) NaN torques, a state of the wrong size numpy's broadcast error. Each is now a
    ValueError (which the controller's runner turns into its safe command); a valid call still gives
    U_k + K_k(X_k − x), the law of Johnson2015, eq. 36 checked by hand here."""
    rng = np.random.default_rng(3)
    N, nx, nu = 4, 2, 1
    plan = vc.Plan(
        times=0.1 * np.arange(N + 1),
        X=rng.normal(size=(N + 1, nx)),
        U=rng.normal(size=(N, nu)),
        K=rng.normal(size=(N, nu, nx)),
        dt=0.1,
        model_name="pendulum",
        model_hash="0",
        joint_names=["theta"],
        input_names=["theta"],
    )
    ctl = vc.TrackingController(plan, vc.MidpointVI(vc.load_robot("pendulum"), 0.1).state)
    x = np.array([0.3, -0.2])
    u, _ = ctl.command(2, x)
    assert np.allclose(u, plan.U[2] + plan.K[2] @ (plan.X[2] - x))
    for k, xs, what in [
        (-1, x, "non-negative integer"),
        (1.0, x, "non-negative integer"),
        (1, np.array([np.nan, 0.0]), "finite"),
        (1, np.zeros(3), "shape"),
        (1, x + 0j, "complex"),
    ]:
        with pytest.raises(ValueError, match=what):
            ctl.command(k, xs)


def test_pathlib_paths_and_typed_model_keywords(tmp_path):
    """``vc.load_robot(Path("robot.urdf"))`` and ``vc.load_task(Path(...))`` were refused ("expected a name, a URDF
    path or a mapping, got PosixPath") although a Path is the path they ask for; ``floating_base="no"`` was taken
    as true (a truthy string) and ended in a singular-mass-matrix error about a virtual joint; ``name=5`` made a
    model named 5. Paths are now accepted (a task path with a colon in it too); wrong types are named."""
    from pathlib import Path

    from vi_control.model.bundled import bundled_urdf

    robot = vc.load_robot(Path(bundled_urdf("pendulum")), Path("config/pendulum.yaml"))
    assert robot.joint_names == ["theta"] and robot.actuated == ("theta",)
    task_file = tmp_path / "a:b.yaml"  # a colon: the text rule would have read the name as YAML
    task_file.write_text(Path(vc.planning.task.config_file("task_pendulum_swingup")).read_text())
    assert vc.load_task(task_file).horizon == 100
    for kwargs, what in [({"floating_base": "no"}, "floating_base"), ({"name": 5}, "name"), ({"name": ""}, "name")]:
        with pytest.raises(ValueError, match=what):
            vc.load_robot("pendulum", **kwargs)
        with pytest.raises(ValueError, match=what):
            from vi_control.model import load_robot

            load_robot(bundled_urdf("pendulum"), **kwargs)


def test_linearization_arguments_are_checked_by_name():
    """second_order_contraction with a covector of the wrong size ended in numpy's "matmul: Input operand 1 has a
    mismatch in its core dimension", with a NaN covector it returned NaN Hessians; linearize_trajectory with one
    input too few "cannot reshape array of size 4 into shape (5,1)"; a NaN trajectory was reported as a bad y0
    guess the caller never gave. Each now names the argument; valid calls agree with central differences of A."""
    from vi_control.linearization import linearize, linearize_trajectory, second_order_contraction

    vi = vc.MidpointVI(vc.load_robot("acrobot"), 0.05, compile=False)
    x, u = np.array([0.1, 0.2, 0.3, -0.1]), np.array([0.1])
    with pytest.raises(ValueError, match="covector must be 4 finite numbers"):
        second_order_contraction(vi, x, u, np.ones(3))
    with pytest.raises(ValueError, match="with NaN/inf"):
        second_order_contraction(vi, x, u, np.array([np.nan, 0.0, 0.0, 0.0]))
    X = vi.simulate(x, np.zeros((3, 1)))[0]
    with pytest.raises(ValueError, match=r"U \(N, 1\)"):
        linearize_trajectory(vi, X, np.zeros((2, 1)))
    with pytest.raises(ValueError, match="state or input contains NaN"):
        linearize_trajectory(vi, X * np.nan, np.zeros((3, 1)))
    c, h = np.array([1.0, -2.0, 0.5, 0.3]), 1e-5  # Σ cᵢ ∂²fᵢ/∂x∂x against differences of cᵀA
    Hxx = second_order_contraction(vi, x, u, c)[0]
    fd = np.column_stack(
        [(c @ linearize(vi, x + h * e, u).A - c @ linearize(vi, x - h * e, u).A) / (2 * h) for e in np.eye(4)]
    )
    assert np.allclose(Hxx, fd, rtol=1e-5, atol=1e-6)


def test_a_horizon_the_memory_cannot_hold_is_refused_before_planning():
    """``horizon: 10000`` is inside the task schema's range [1, 100000], which bounds the pendulum's memory, not a
    large robot's: a plan holds about four (ndx + nu)² matrices per stage (9 kB a stage measured on panda), so a
    50-link chain (ndx = 100, nu = 50) needs ~6.7 GiB and tiago_dual's 100 000 steps ~290 GB — the process was
    killed for memory. plan_task now refuses it first, naming the horizon and the largest one that fits."""
    from vi_control.model.generate import planar_chain_urdf
    from vi_control.planning.pipeline import MAX_PLAN_BYTES

    vi = vc.MidpointVI(vc.load_robot(planar_chain_urdf(50)), 0.01, compile=False)
    task = vc.load_task(
        "name: long\nmodel: chain10\ndt: 0.01\nhorizon: 10000\nreference: {type: goal}\n"
        "weights: {Q: 1, R: 0.1, Qf: 10}\n"
    )
    n_max = MAX_PLAN_BYTES // (4 * 8 * 150**2)
    need, limit = 10000 * 4 * 8 * 150**2 / 1024**3, MAX_PLAN_BYTES / 1024**3  # (6.7 GiB)
    with pytest.raises(
        vc.TaskError,
        match=rf"horizon: 10000 steps .* need about {need:.3g} GiB .* \(limit {limit:g} GiB: at most {n_max} steps\)",
    ):
        vc.plan_task(vi, task)


def test_state_estimator_refuses_a_sample_it_would_keep_as_poison():
    """A NaN configuration given to StateEstimator.update was stored in its history (the call returned None) and
    made the next, valid sample's momentum NaN; a 3-vector for the acrobot was stored too and the next call died in
    numpy's broadcast. Such samples are now ValueErrors and the history stays clean: the next valid pair gives the
    discrete Legendre transform of the two configurations (Johnson2015, eq. 1b) exactly. NaN velocities are ignored
    (positions only), as ros2_control's missing velocities are."""
    vi = vc.MidpointVI(vc.load_robot("acrobot"), 0.05, compile=False)
    est = vc.StateEstimator(vi)
    q0, q1 = np.array([0.1, -0.2]), np.array([0.12, -0.19])
    assert est.update(0.0, q0, None) is None
    for t, q, qdot in [
        (0.05, np.array([np.nan, 0.0]), None),
        (0.05, np.zeros(3), None),
        (float("nan"), q1, None),
        (0.05, q1, np.zeros(3)),
    ]:
        with pytest.raises(ValueError, match="StateEstimator.update"):
            est.update(t, q, qdot)
    x = est.update(0.05, q1, np.array([np.nan, np.nan]))
    assert np.array_equal(x, vi.state_from_configurations(q0, q1))
    with pytest.raises(ValueError, match="tolerance"):
        vc.StateEstimator(vi, tolerance=float("nan"))
    # at the boundary of "a finite number >= 0": 0 accepted (samples exactly Δt apart), the next double below refused
    for name in ("tolerance", "max_gap"):
        assert getattr(vc.StateEstimator(vi, **{name: 0.0}), name) == 0.0
        with pytest.raises(ValueError, match=f"StateEstimator {name}: expected a finite number >= 0"):
            vc.StateEstimator(vi, **{name: -5e-324})


@pytest.mark.parametrize("compile", [False, None])
def test_ddp_refuses_arguments_that_do_not_fit_the_system(compile):
    """vc.ddp with a cost made for a 2-dimensional state on the acrobot (nx = 4), or a warm start X0 two states
    short, returned "converged" on the compiled path — its C loop read the cost's and X0's arrays beyond their
    ends — and failed in numpy's broadcast on the numpy path; a U0 of the wrong shape ended in numpy's reshape
    error, two input limits for one input in its broadcast error. Each is now a ValueError naming the argument."""
    vi = vc.MidpointVI(vc.load_robot("acrobot"), 0.05, compile=compile)
    N, x0, U0 = 3, np.array([0.1, 0.0, 0.0, 0.0]), np.zeros((3, 1))
    cost = vc.QuadraticTrackingCost(np.zeros((N + 1, 4)), np.zeros((N, 1)), np.eye(4), np.eye(1), np.eye(4))
    small = vc.QuadraticTrackingCost(np.zeros((N + 1, 2)), np.zeros((N, 1)), np.eye(2), np.eye(1), np.eye(2))
    for kwargs, what in [
        (dict(cost=small), "cost: made for nx = 2"),
        (dict(X0=np.zeros((2, 4))), "X0 has shape"),
        (dict(U0=np.zeros((3, 2))), "U0 has shape"),
        (dict(x0=np.zeros(3)), "x0 has 3 entries"),
        (dict(input_limits=np.array([1.0, 2.0])), "input limits: expected one bound or 1"),
    ]:
        args = dict(cost=cost, x0=x0, U0=U0) | kwargs
        with pytest.raises(ValueError, match=what):
            vc.ddp(vi, args.pop("cost"), args.pop("x0"), args.pop("U0"), **args)
    assert vc.ddp(vi, cost, x0, U0).converged


def test_simulations_name_a_start_state_of_the_wrong_size():
    """MidpointVI.simulate, step_rollout (GNI, RDP) and simulate_plan stored x0 with ``X[0] = x0``: a start of the
    wrong size ended in numpy's "could not broadcast input array from shape (3,) into shape (2,)"; simulate_plan's
    extra_steps = -5 silently cut the run short. ValueErrors naming x0 / extra_steps now."""
    vi = vc.MidpointVI(vc.load_robot("pendulum"), 0.1)
    with pytest.raises(ValueError, match="x0 has size 3"):
        vi.simulate(np.zeros(3), np.zeros((2, 1)))
    task = vc.load_task("task_pendulum_swingup")
    task.max_iterations, task.horizon = 2, 10
    task.reference = {"type": "goal"}
    plan, _ = vc.plan_task(vi, task)
    with pytest.raises(ValueError, match="x0 has size 3"):
        vc.simulate_plan(vi, plan, np.zeros(3))
    with pytest.raises(ValueError, match="extra_steps"):
        vc.simulate_plan(vi, plan, plan.X[0], extra_steps=-5)
    X, _ = vc.simulate_plan(vi, plan, plan.X[0], extra_steps=2)
    assert X.shape == (13, 2) and np.allclose(X[:11], plan.X, atol=1e-9)  # the plan replays on its own model


def test_lie_group_integrator_checks_like_the_others():
    """The Lie-group VI (Jimenez2013) has its own input check: a complex state was cast with numpy's warning, y0 of
    the wrong size reached CasADi ("argument 0 has size 2, expected 6"), energy/velocity of a 19-vector were
    evaluated on its first 18 entries. The shared checks of integrators.base now apply; a rest state still steps
    to rest under trimmed buoyancy with no input (docs/concepts/lie_groups.md), to round-off."""
    vi = vc.make_integrator("lie_group", vc.load_rigid_body("vehicle_uuv"), 0.1)
    x = vi.state_from_pose(np.eye(4))
    for call, what in [
        (lambda: vi.step(x + 0j), "state is complex"),
        (lambda: vi.solve(x, y0=np.zeros(2)), "y0"),
        (lambda: vi.energy(np.zeros(vi.nx + 1)), "state x has size 19"),
        (lambda: vi.velocity(np.zeros(3)), "state x has size 3"),
    ]:
        with pytest.raises(ValueError, match=what):
            call()
    assert np.allclose(vi.step(x), x, atol=1e-12)


@pytest.mark.parametrize(
    "system, what", [({"actuated": []}, "no inputs"), ({"prescribed": ["shoulder", "elbow"]}, "no dynamic coordinates")]
)
def test_planning_a_model_with_nothing_to_plan_says_so(system, what):
    """A passive double pendulum (actuated: []) — or a robot without joints, erd:iris_simple — was answered
    "TaskError: zero-size array to reduction operation minimum which has no identity"; with every joint prescribed
    LAPACK printed "On entry to DGETRF parameter number 4 had an illegal value" and numpy raised the same
    zero-size error. plan_task now says what the model lacks."""
    robot = vc.load_robot("double_pendulum", system)
    vi = vc.MidpointVI(robot, 0.05, compile=False)
    task = vc.load_task(
        "name: x\nmodel: double_pendulum\ndt: 0.05\nhorizon: 5\nreference: {type: goal}\n"
        "weights: {Q: 1, R: 0.1, Qf: 10}\n"
    )
    with pytest.raises(vc.TaskError, match=what):
        vc.plan_task(vi, task)


def test_plan_save_writes_exactly_the_path_it_is_given(tmp_path):
    """Plan.save went through np.savez, which appends ".npz" to any other name: save(p) then Plan.load(p) failed
    with "plan file not found", save("/tmp") wrote /tmp.npz beside the directory, save("/dev/null") created
    /dev/null.npz. The file is now written to exactly the path (through a temporary file renamed into place, so an
    existing plan is replaced whole), a directory or device is refused, and the round trip is exact."""
    import os

    vi = vc.MidpointVI(vc.load_robot("pendulum"), 0.1)
    task = vc.load_task("task_pendulum_swingup")
    task.max_iterations, task.horizon, task.reference = 2, 5, {"type": "goal"}
    plan, _ = vc.plan_task(vi, task)
    path = tmp_path / "plan_without_suffix"
    plan.save(path)
    assert sorted(os.listdir(tmp_path)) == ["plan_without_suffix"]  # no .npz added, no temporary left
    back = vc.Plan.load(str(path))
    assert np.array_equal(back.X, plan.X) and np.array_equal(back.K, plan.K) and back.model_hash == plan.model_hash
    for bad in (tmp_path, "/dev/null"):
        with pytest.raises(vc.PlanFileError, match="is not a regular file"):
            plan.save(bad)
    with pytest.raises(vc.PlanFileError, match="does not exist"):
        plan.save(tmp_path / "missing" / "p.npz")
    assert not os.path.exists(str(tmp_path) + ".npz") and not os.path.exists("/dev/null.npz")


def test_sweep_config_bounds_its_loops():
    """A robustness config with samples: 1000000000 or success.hold_time: 1e12 s was accepted — a sweep that never
    ends — and mass_scale: [1, 1e9] drew plants load_robot refuses (mass_scale ≤ 1e6), so every sample failed one
    by one. Each is now refused when the config is read, naming the key; the bundled config still loads."""
    import yaml

    from vi_control.planning.task import config_file
    from vi_control.sweep.config import SweepConfigError, load_robustness_config

    base = yaml.safe_load(open(config_file("sweep_pendulum")))
    assert load_robustness_config(base).samples == base["samples"]
    for change, key in [
        ({"samples": 10**9}, "samples"),
        ({"success": {"hold_time": 1e12}}, "success.hold_time"),
        ({"perturbations": {"mass_scale": [1.0, 1e9]}}, "perturbations.mass_scale"),
    ]:
        with pytest.raises(SweepConfigError, match=key):
            load_robustness_config(base | change)
    with pytest.raises(SweepConfigError, match="samples"):
        load_robustness_config(base, samples=10**9)  # the command line's --samples too


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_linear_time_step_beside_a_mass_matrix_singularity(backend):
    """The linear-time VI's default guess IG3 (semi-implicit Euler, Lee2016, §3.3) predicted a shoulder turn of
    ~4e9 rad beside the fold (and 2.4e5 rad for icub's neck at q = 0): RIQN, Newton and every substep of the
    fallback chain then failed ("residual norm 1.5e16"). As in the midpoint VI, a guess beyond max_rotation is
    replaced by q_k (IG1). The root agrees with the midpoint VI's on this model to O(Δt²) of the motion."""
    robot = vc.load_robot(FOLDED)
    vi = linear_time(robot, 0.01, backend=backend)  # the package's C step and its numpy oracle
    x, u = np.array([0.0, 1e-7, 1e-3, 0.0]), np.array([0.1, 0.0])
    r = vi.solve(x, u)
    mid = vc.MidpointVI(robot, 0.01, compile=False).step(x, u)
    assert np.abs(r.x[:2] - mid[:2]).max() < 1e-6 and abs(r.x[0] - x[0]) < 0.01


def test_feedback_guess_about_a_reference_the_system_cannot_step_from_is_none():
    """feedback_initial_guess promises None when a step fails (its callers — the collocation polish, the task's
    ``initial_guess: feedback`` — then start open loop), but a reference stage the VI cannot step from (so100's
    LG2 reach resampled onto Δt = 0.05 s: its wrist turning 5.6 rad a step) raised the step's error out of
    plan_task ("Newton did not converge at step None"). The linearization about such a stage is now a failed guess."""
    from vi_control.planning.ddp import feedback_initial_guess

    vi = vc.MidpointVI(vc.load_robot("pendulum"), 0.1)
    X = np.array([[0.0, 0.0], [0.1, 1e3], [0.2, 0.0]])  # 1000 N·m·s: a turn of ~100 rad in one step
    U = np.zeros((2, 1))
    weights = (np.eye(2), np.eye(1), np.eye(2))
    assert feedback_initial_guess(vi, X[0], X, U, weights=weights) is None
    X[1, 1] = 0.1  # a reference it can step from: a guess, finite
    assert np.all(np.isfinite(feedback_initial_guess(vi, X[0], X, U, weights=weights)))


def test_make_integrator_names_a_model_of_the_wrong_kind():
    """make_integrator("midpoint", "pendulum", 0.1) — a model's name where the model goes — ended in
    "AttributeError: 'str' object has no attribute 'nonholonomic'"; a RobotModel given to the Lie-group VI, in
    another AttributeError. A TypeError now says what to pass."""
    with pytest.raises(TypeError, match=r"must be a RobotModel \(vc.load_robot"):
        vc.make_integrator("midpoint", "pendulum", 0.1)
    with pytest.raises(TypeError, match="must be a RigidBodyModel"):
        vc.make_integrator("lie_group", vc.load_robot("pendulum"), 0.1)
    assert vc.make_integrator("gni", vc.load_robot("pendulum"), 0.1).nx == 2
