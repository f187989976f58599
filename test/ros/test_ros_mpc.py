"""MPC through the nodes (planner ``mode: mpc``, planning.mpc) against a simulator whose robot is not the planner's
model, on a running clock (the simulator in real time, the controller's timer at 100–200 Hz, both state estimates
from the simulator's velocities): the same run once with the planner's ``mode: plan`` (one plan, TV-LQR tracking)
and once with ``mode: mpc``.

- The pendulum swing-up under |u| ≤ 7 N·m on a 7 N·m pendulum (``SWINGUP_7NM``: the REFERENCE §2 swing-up, Δt = 0.1 s,
  N = 100, the step reference at 5 s) with the simulator's pendulum 20 % heavier and its actuator 10 % weaker (the
  simulator's ``mass_scale`` 1.2, ``actuator_gain`` 0.9): m·g·l = 11.8 N·m against 6.3 N·m delivered, so the swing
  needs more pumping than the plan has. The bundled 5 N·m pendulum's 10 s task is infeasible under this mismatch
  (no plan on the true plant converges: docs/concepts/planner.md), the 7 N·m one is not: TV-LQR tracking of the one plan
  falls back (3.1 rad off in process), MPC re-plans every 0.3 s (shrinking toward the task's end) and holds it up.
- The panda reach with every link 20 % heavier: over the last second of a run 2 s past the task's end, MPC keeps
  the arm nearer the goal than one plan's tracking (measured 0.056–0.065 rad against 0.075).

- A goal sent on ~/goal while the pendulum's MPC task runs: the cycles continue the goal's plan and hold its goal.
- The panda's MPC planner killed mid-reach: the controller runs the last cycle's plan to its end and holds the arm
  there; a planner started again takes it to the goal.
- The panda's controller killed mid-reach: the simulator's brakes hold the arm; a new controller drops the latched
  plans that ended, enters the cycles that run, and the arm reaches the goal.

The first two check the hand-over at every switch between consecutive MPC plans (test_planning_mpc's criterion
through the nodes): each new plan starts on the executing plan's grid and is entered there, and both laws command the
same at the switch's time and state — the command does not jump."""

import signal
import threading
import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from handover import entries, published_kinds, retimed_starts, retimed_steps  # noqa: E402
from std_msgs.msg import UInt8MultiArray  # noqa: E402
from test_ros_dds import DISCOVERY  # noqa: E402

from vi_control.control.tracking import tracking_law  # noqa: E402
from vi_control.integrators.midpoint import MidpointVI  # noqa: E402
from vi_control.ros.common import PLAN_QOS, STREAM_QOS  # noqa: E402
from vi_control.ros.main_job import task_overrides  # noqa: E402
from vi_control.ros.messages import plan_from_message  # noqa: E402

pytestmark = pytest.mark.ros
PANDA_GOAL = np.array([0.5, -0.3, 0.3, -1.8, 0.2, 1.9, 0.5])
PENDULUM_7NM = "{gravity: [0.0, 0.0, -9.8], actuated: [{joint: theta, effort_limit: 7.0}]}"
SWINGUP_7NM = """name: pendulum_swingup_7nm_mpc
model: pendulum
dt: 0.1
horizon: 100
start: {q: [0.0], qdot: [0.0]}
goal: {q: [pi]}
reference: {type: step, step_index: 50}
weights: {Q: [100.0, 1.0], R: 1.0, Qf: [100.0, 1.0]}
input_limits: [7.0]
optimizer: {method: ddp, max_iterations: 300, tolerance: 1.0e-6}
lqr: {Q: [100.0, 1.0], R: 1.0, Qf: [100.0, 1.0]}
hold: {Q: [100.0, 1.0], R: 1.0}
mpc: {period: 0.3, shrinking: true, min_horizon: 10, max_iterations: 10}
"""


def _run(
    ros,
    mode: str,
    over: dict,
    robot,
    sim: dict,
    ctrl: dict,
    after_end: float,
    controller_late: bool = False,
    kill_planner: dict | None = None,
    kill_controller: dict | None = None,
):
    """One run in ``mode``: the controller first (it holds the robot from the first joint state on), the simulator (its
    brakes on until the first command: over DDS that can take seconds, in which a real-time panda under zero torque
    falls against its joint limits, and the task's plan from there is refused as 5–9× too fast), then the planner.
    ``controller_late``: the controller only once the task's first plan is 0.5 s past its start (the robot braked at
    rest meanwhile): it re-times that plan. ``kill_planner``: {"after": n} kills the planner (SIGKILL: no goodbye on
    DDS) once n plans have arrived and the controller runs one of them; the dict gets "at", the newest state's time
    then. With "restart": true a new planner starts once the run's end has passed (the dict gets "seqs", the plans the
    recorder received before it, "restart_us", the wall time [µs] it was started at — the planner numbers its plans by
    the wall time they were published at, so a later number is the new planner's —, "held_since", the end of the last
    plan the controller entered (the restart waits for 2 s past it), "restart_at", the newest state's time then,
    "new_entry", the controller's first entry of a new planner's plan, and "log_before_restart", the controller's log
    then), and the run goes on to its task's end plus ``after_end``. Returns the recorder's states (stamp, q) from the
    task's start on — the first plan's start as the controller ran it, re-timed if the plan came late —, the planner's
    last diagnostics, every plan received {seq: Plan}, the controller's log and the (last) planner's.
    ``kill_controller``: {"into": s1, "down": s2} kills the controller (SIGKILL) s1 of wall time after it entered the
    first plan (with "real_time_factor": the simulator's from then on) and starts a new one once the recorded states are
    s2 past those recorded then; the dict gets "restart_at" (the newest state's time then), "log_before" (the first
    controller's log) and "entered_at" (the state time of the new controller's first entry, after which the run goes on
    ``after_end``); the log returned is the new controller's."""
    name = f"_{mode}" + ("_late" if controller_late else "")

    def controller(suffix: str = ""):
        c = ros.start(
            "controller_node",
            name="controller" + name + suffix,
            **over["controller"],
            use_sim_time=True,
            safe_mode="hold",
            state_timeout=0.5,
            state_estimate="velocities",
            **ctrl,
        )
        assert c.wait_for_log(f"{robot.name}: joints=", 120.0), c.report()
        return c

    c = None if controller_late else controller()
    s = ros.start(
        "simulator_node",
        name="simulator" + name,
        **(over["simulator"] | sim),
        mode="realtime",
        brake_until_command=True,
    )  # (not fallen while the controller discovers it)
    if c is not None:
        assert c.wait_for_log("holding q = ", DISCOVERY), c.report() + s.report()
    rec = ros.recorder(list(robot.joint_names), name="rec" + name)
    diags, plans, lock = [], {}, threading.Lock()
    rec.create_subscription(
        DiagnosticArray,
        "diagnostics",
        lambda m: diags.extend(
            {kv.key: kv.value for kv in st.values} for st in m.status if st.name.endswith("vi_planner")
        ),
        STREAM_QOS,
    )

    def on_plan(m):
        seq, plan, _ = plan_from_message(m, "", "", list(robot.joint_names), [])
        with lock:
            plans[seq] = plan

    rec.create_subscription(UInt8MultiArray, "vi_planner/plan", on_plan, PLAN_QOS)  # (every plan, as the controller)

    def planner(suffix: str = ""):
        return ros.start(
            "planner_node",
            name="planner" + name + suffix,
            **over["planner"],
            mode=mode,
            use_sim_time=True,
            startup_wait=10.0,
            diagnostics_period=0.2,
            state_estimate="velocities",
        )

    p = planner()
    assert rec.wait_for(lambda: rec.plan() is not None, 120.0), p.report()
    with lock:
        _, plan = min(plans.items(), key=lambda kv: kv[1].times[0]) if plans else rec.plan()[:2]
    start = float(plan.times[0])  # (the controller_late wait's; the run's start is read from the controller below)
    if c is None:
        assert rec.wait_for(lambda: rec.states and rec.states[-1][1] > start + 0.5, 30.0), s.report() + p.report()
        c = controller()
    # The run from where the robot started the task: the first plan the controller entered. One that reached it late
    # (the planner's publisher not yet matched: 1.5 s in one loaded run) is re-timed by it while the arm is still at
    # its X_0, and the task runs from there — judged from the stated start instead, a swing-up was still settling in
    # the window meant for the hold (0.053 rad); one that reached it after its end (1.7 s late in CI s58e, the held
    # heavier panda sagged from its X_0 meanwhile) is dropped, and the planner plans the task again.
    # (its start from the controller's log, not the recorder's plans: in CI s58i the recorder matched the planner's
    # plan writer after more MPC cycles than the latched depth had gone by, and never received that plan)
    assert c.wait_for_log("entered plan ", DISCOVERY), c.report() + p.report()
    first, _, _, stated = entries(c.log())[0]
    start = retimed_starts(c.log()).get(first, stated)  # (re-timed: t₀ + m·Δt)
    if kill_planner is not None:
        assert rec.wait_for(lambda: len(plans) >= kill_planner["after"], 30.0), p.report()
        p.signal(signal.SIGKILL)
        assert rec.wait_for(lambda: not p.alive, 10.0)
        kill_planner["at"] = rec.states[-1][1]
    if kill_controller is not None:
        # s1 of wall time after the test read the controller's own log saying it entered the first plan — not a count
        # of plans (a loaded CI run's third plan came once the reach was over), nor the recorder's newest state (in
        # another it ran ~1 s behind the simulator)
        time.sleep(kill_controller["into"])
        c.signal(signal.SIGKILL)
        assert rec.wait_for(lambda: not c.alive, 10.0)
        if "real_time_factor" in kill_controller:  # (the simulator's pace from the kill on)
            _set_simulator_parameter(rec, "real_time_factor", kill_controller["real_time_factor"])
        kill_controller["log_before"], at = c.log(), rec.states[-1][1]  # (the recorder's newest: at or before the kill)
        assert rec.wait_for(lambda: rec.states[-1][1] > at + kill_controller["down"], 30.0)
        kill_controller["restart_at"] = rec.states[-1][1]
        c = controller("_2")
        assert rec.wait_for(lambda: entries(c.log()), 120.0), c.report() + p.report()
        kill_controller["entered_at"] = entries(c.log())[0][2]  # (its first entry's state time)
    end = start + (over["horizon"] * over["dt"]) + after_end
    if kill_controller is not None:  # (the run goes on after_end past the new controller's first entry)
        end = max(end, kill_controller["entered_at"] + after_end)
    dead = None
    if kill_planner is not None and kill_planner.get("restart"):  # a new planner once the arm has been held
        assert rec.wait_for(lambda: rec.states and rec.states[-1][1] > end, 90.0), s.report() + c.report()
        # and held for 2 s after the last plan's end as the controller ran it: plans that came late were re-timed,
        # and the last ended 1 s after the task's end in CI s58c, 0.02 s before the second judged as held
        held_since = kill_planner["held_since"] = _last_entered_end(c.log(), plans, lock, over)
        assert rec.wait_for(lambda: rec.states[-1][1] > held_since + 2.0, 90.0), s.report() + c.report()
        with lock:
            kill_planner["seqs"] = set(plans)
        kill_planner["restart_at"], kill_planner["log_before_restart"] = rec.states[-1][1], c.log()
        # (not "a plan the recorder did not receive before": the dead planner's last plan may have reached the
        # controller and never the recorder — killed mid-delivery)
        restart_us = kill_planner["restart_us"] = time.time_ns() // 1000
        dead, p = p, planner("_2")

        def new_entry():
            return next((e for e in entries(c.log()) if e[0] > restart_us), None)

        assert rec.wait_for(lambda: new_entry() is not None, 120.0), p.report() + c.report()
        seq, _, _, stated = kill_planner["new_entry"] = new_entry()
        # (its start as the controller ran it, from the controller's log: the recorder may not have that plan — a CI
        # run's recorder matched the new planner after more than the 10 latched plans had gone by)
        new_start = retimed_starts(c.log()).get(seq, stated)
        end = new_start + (over["horizon"] * over["dt"]) + after_end
    assert rec.wait_for(lambda: rec.states and rec.states[-1][1] > end, 90.0), s.report() + p.report()
    with rec.lock:  # (the run as it was while every node ran)
        states = [(st[1], st[2]) for st in rec.states if start <= st[1] <= end]
    log, planner_log = c.log(), p.log()
    for proc in (p, s, c) + ((dead,) if dead else ()):
        proc.stop()
    with lock:
        plans = dict(plans)
    return states, (diags[-1] if diags else {}), plans, log, planner_log


def _last_entered_end(log: str, plans: dict, lock, over: dict) -> float:
    """The end of the last plan a controller's log says it entered, as it ran it (re-timed if it came late): its
    start plus its horizon, the task's where the recorder did not receive that plan (no cycle's is longer)."""
    seq, _, _, stated = entries(log)[-1]
    with lock:
        plan = plans.get(seq)
    start = retimed_starts(log).get(seq, stated)
    return start + (plan.horizon * plan.dt if plan is not None else over["horizon"] * over["dt"])


def _set_simulator_parameter(rec, name: str, value) -> None:
    """Set a live parameter of the simulator (vi_simulator in the recorder's namespace); AssertionError if refused."""
    from rcl_interfaces.srv import SetParameters
    from rclpy.parameter import Parameter

    req = SetParameters.Request(parameters=[Parameter(name, value=value).to_parameter_msg()])
    res = rec.call(SetParameters, "vi_simulator/set_parameters", req)
    assert res.results[0].successful, res.results[0].reason


def _switches(vi, plans: dict, limits: np.ndarray, log: str, planner_log: str) -> tuple[list[float], int, int]:
    """At every switch from one plan into an MPC cycle's (the controller's "entered plan" lines; the cycles named by
    the planner's log — a restart's plan is a new task plan, whose step 0 is its own: at a CI run's restart, past
    the end of the task's plan, its command differed from the hold's by 0.017 N·m): the largest difference
    between the two laws' commands (clamped to the effort limits, as the controller sends them) at the switch's time,
    for the state the new plan starts from (the planner's prediction), the executing plan's reference state there
    and a state 0.05 from the prediction in every coordinate; how many switches were entered late (k > 0: the new
    plan's step 0 never ran) and at how many the executing law saturated at the predicted state (the new plan's
    U_0 is its command clamped to the limits it plans under; then the two agree at the prediction and wherever
    both saturate, not elsewhere: only the prediction is compared)."""
    out, late, saturated, prev = [], 0, 0, None
    rng = np.random.default_rng(0)
    plans = dict(plans)
    for seq, m in retimed_steps(log).items():  # (as the controller runs it: from t₀ + m·Δt)
        if seq in plans:
            plans[seq] = plans[seq].shifted(plans[seq].times[0] + m * plans[seq].dt)
    cycles = {seq for seq, kind in published_kinds(planner_log).items() if kind == "mpc"}
    for seq, k, t, _ in entries(log):
        if prev is not None and seq in plans and prev in plans and seq in cycles:
            old, new = tracking_law(plans[prev], vi), tracking_law(plans[seq], vi)
            if k > 0:
                late += 1
            else:
                x_start = plans[seq].X[0]
                states = [x_start]
                if np.all(np.abs(old.feedback(old.index(t), x_start)[0]) <= limits):
                    states += [old.reference(old.index(t))[0], x_start + 0.05 * rng.choice([-1.0, 1.0], vi.nx)]
                else:
                    saturated += 1
                out.append(
                    max(
                        float(np.abs(new.command(new.index(t), x)[0] - old.command(old.index(t), x)[0]).max())
                        for x in states
                    )
                )
        prev = seq
    return out, late, saturated


def _check_switches(vi, plans, log, planner_log, diag):
    jumps, late, saturated = _switches(vi, plans, vi.robot.effort_limits, log, planner_log)
    # (late: a solve that overran; beside the suite's other worker half the panda's cycles overran once, leaving 8
    # switches on time of 18 cycles: the count asked is what one loaded run still gives)
    assert len(jumps) >= 5 and len(jumps) >= 3 * late, (len(jumps), late, diag)
    assert max(jumps) < 1e-6, (max(jumps), jumps)
    return len(jumps), late, saturated


def _upright_bound(late: int, diag: dict) -> float:
    """How close to upright MPC must hold the pendulum over the last 2 s: 0.05 rad while the loop kept its cadence
    (every switch on time, no cycle overrun: measured 0.0054 rad), else 0.15 rad. A switch entered late on a loaded
    machine jolts the saturated swing (a fresh-clone CI run: 1 late switch of 37, 0.059 rad); 0.15 still tells
    holding from TV-LQR's falling back (1.17 rad)."""
    return 0.05 if late == 0 and int(diag.get("mpc_overruns", 0)) == 0 else 0.15


def test_mpc_swings_up_and_holds_a_heavier_pendulum_with_a_weaker_actuator_where_tvlqr_falls(ros, tmp_path):
    over, robot = _pendulum_task(tmp_path)
    sim = dict(dt=0.005, mass_scale=1.2, actuator_gain=0.9)
    ctrl = dict(trigger="timer", rate=100.0)
    results = {}
    for mode in ("plan", "mpc"):
        states, diag, plans, log, planner_log = _run(ros, mode, over, robot, sim, ctrl, after_end=3.0)
        t_end = states[0][0] + 10.0
        upright = [abs((q[0] - np.pi + np.pi) % (2 * np.pi) - np.pi) for t, q in states if t >= t_end + 1.0]
        results[mode] = (max(upright), diag, plans, log, planner_log)
    vi = MidpointVI(_pendulum_7nm(), 0.1)
    n, late, saturated = _check_switches(vi, *(results["mpc"][i] for i in (2, 3, 4, 1)))
    print(
        f"upright error over the last 2 s: one plan {results['plan'][0]:.3f} rad, MPC {results['mpc'][0]:.4f} rad; "
        f"{n} switches on time ({saturated} saturated), {late} late; planner diagnostics {results['mpc'][1]}"
    )
    assert results["plan"][0] > 0.5, results["plan"][0]  # TV-LQR of the one plan: the pendulum falls back
    assert results["mpc"][0] < _upright_bound(late, results["mpc"][1]), (results["mpc"][0], late, results["mpc"][1])
    assert int(results["mpc"][1].get("mpc_cycles", 0)) >= 20, results["mpc"][1]


def test_mpc_continues_the_first_plan_where_the_controller_re_timed_it(ros, tmp_path):
    """The task's first plan reaches the controller 0.5 s after its start (the controller started late; the robot
    braked at rest): the controller re-times it by whole steps and says so on ~/plan_entered; the planner moves the
    plan there before its first cycle, so every switch is seamless on the timeline the robot is on (before, the
    cycles continued the stated start: a 6 N·m jump at the first switch), and the swing-up holds."""
    over, robot = _pendulum_task(tmp_path)
    sim = dict(dt=0.005, mass_scale=1.2, actuator_gain=0.9)
    states, diag, plans, log, planner_log = _run(
        ros, "mpc", over, robot, sim, dict(trigger="timer", rate=100.0), after_end=2.0, controller_late=True
    )
    first = entries(log)[0][0]
    m = retimed_steps(log)[first]
    assert m >= 5 and f"plan {first} was re-timed by vi_controller" in planner_log, planner_log[-3000:]
    vi = MidpointVI(_pendulum_7nm(), 0.1)
    n, late, saturated = _check_switches(vi, plans, log, planner_log, diag)
    t_end = states[0][0] + 10.0
    upright = max(abs((q[0] - np.pi + np.pi) % (2 * np.pi) - np.pi) for t, q in states if t >= t_end + 1.0)
    print(
        f"first plan re-timed by {m} steps; {n} switches on time ({saturated} saturated), {late} late; "
        f"upright error {upright:.4f} rad"
    )
    assert upright < _upright_bound(late, diag), (upright, late, diag)


def test_mpc_takes_the_pendulum_to_a_goal_sent_on_the_way_and_holds_it_there(ros, tmp_path):
    """Mode mpc on the pendulum task to 0.5 rad (a cycle every 0.1 s); 1 s into it a goal of −0.5 rad on ~/goal: its
    plan is published and the cycles continue it (``RecedingHorizon.follow``) — the pendulum ends at −0.5 rad and
    stays there. The cycles that planned the task's window again turned it back toward 0.5 rad within a period."""
    from sensor_msgs.msg import JointState

    task = tmp_path / "pendulum_mpc_goal.yaml"
    task.write_text(
        "name: pendulum_mpc_goal\nmodel: pendulum\ndt: 0.1\nhorizon: 20\nstart: {q: [0.0], qdot: [0.0]}\n"
        "goal: {q: [0.5]}\nreference: {type: goal}\nweights: {Q: [10.0, 1.0], R: 1.0, Qf: [100.0, 1.0]}\n"
        "mpc: {period: 0.1, max_iterations: 5}\n"
    )
    over, robot = task_overrides(str(task))
    c = ros.start(
        "controller_node",
        **over["controller"],
        use_sim_time=True,
        safe_mode="hold",
        state_timeout=0.5,
        state_estimate="velocities",
        trigger="timer",
        rate=100.0,
    )
    assert c.wait_for_log(f"{robot.name}: joints=", 120.0), c.report()
    s = ros.start("simulator_node", **(over["simulator"] | dict(dt=0.005)), mode="realtime", brake_until_command=True)
    assert c.wait_for_log("holding q = ", DISCOVERY), c.report() + s.report()
    rec = ros.recorder(["theta"])
    p = ros.start(
        "planner_node", **over["planner"], mode="mpc", use_sim_time=True, startup_wait=10.0, state_estimate="velocities"
    )
    assert rec.wait_for(lambda: rec.plan() is not None, 120.0), p.report()
    seq, plan, _ = rec.plan()
    # (from where the controller ran it: a first plan that reached it late is re-timed — in a loaded CI run the
    # pendulum was still hanging at 0 a second after the stated start)
    assert c.wait_for_log(f"entered plan {seq} at k=", DISCOVERY), c.report() + p.report()
    start = float(plan.times[0]) + retimed_steps(c.log()).get(seq, 0) * plan.dt
    assert rec.wait_for(lambda: rec.states and rec.states[-1][1] > start + 1.0, 60.0), s.report() + p.report()
    with rec.lock:
        on_the_way = float(rec.states[-1][2][0])
    goal_pub = rec.create_publisher(JointState, "vi_planner/goal", STREAM_QOS)
    assert rec.wait_for(lambda: goal_pub.get_subscription_count() > 0, DISCOVERY), p.report()
    goal_pub.publish(JointState(name=["theta"], position=[-0.5]))
    assert p.wait_for_log("goal [-0.5]: re-planning", DISCOVERY), p.report()

    def held(seconds: float) -> bool:  # (the last ``seconds`` of states within 0.05 rad of the goal)
        with rec.lock:
            t_end = rec.states[-1][1]
            last = [st[2][0] for st in rec.states if st[1] >= t_end - seconds]
        return t_end - rec.states[0][1] > seconds and max(abs(q + 0.5) for q in last) < 0.05

    assert rec.wait_for(lambda: held(1.0), 60.0), p.report() + c.report()
    with rec.lock:
        t_held = rec.states[-1][1]
    assert rec.wait_for(lambda: rec.states[-1][1] > t_held + 1.0, 30.0)
    assert held(2.0), p.report()  # (still there a second later: no cycle turned it back)
    assert 0.05 < on_the_way, on_the_way  # (the goal came while the task's plan was moving it the other way)
    for proc in (p, s, c):
        proc.stop()


def _pendulum_task(tmp_path):
    """The nodes' overrides for SWINGUP_7NM on the 7 N·m pendulum, and its robot."""
    task = tmp_path / "swingup_7nm_mpc.yaml"
    task.write_text(SWINGUP_7NM)
    over, robot = task_overrides(str(task))
    for node in ("simulator", "controller"):
        over[node]["system_yaml"] = PENDULUM_7NM
    over["planner"] |= {"model": "pendulum", "system_yaml": PENDULUM_7NM}
    return over | {"horizon": 100, "dt": 0.1}, robot


def _pendulum_7nm():
    from vi_control.model.spec import ModelSpec

    return ModelSpec(source="pendulum", system=PENDULUM_7NM).load()


def _window(states, t0: float, t1: float) -> np.ndarray:
    """The recorded configurations stamped in [t0, t1]."""
    return np.array([q for t, q in states if t0 <= t <= t1])


def _last_second_at_the_goal(states) -> tuple[float, float]:
    """Over the run's last second: the largest |q − the panda's goal| and the motion from its first to last state."""
    tail = _window(states, states[-1][0] - 1.0, states[-1][0])
    return float(np.abs(tail - PANDA_GOAL).max()), float(np.abs(tail[-1] - tail[0]).max())


def test_mpc_ends_nearer_the_goal_on_a_panda_heavier_on_every_link(ros):
    over, robot = task_overrides("task_panda_reach_mpc")
    over |= {"horizon": 20, "dt": 0.05}
    sim = dict(dt=0.005, mass_scale=1.2)
    ctrl = dict(trigger="timer", rate=200.0)
    err = {}
    for mode in ("plan", "mpc"):
        states, diag, plans, log, planner_log = _run(ros, mode, over, robot, sim, ctrl, after_end=2.0)
        err[mode] = max(float(np.abs(q - PANDA_GOAL).max()) for t, q in states if t >= states[-1][0] - 1.0)
    # (what a failure needs to be understood: a fresh-clone CI run once accepted 6 of 36 cycles and ended 3.4 rad
    # off the goal, and its logs were not kept; not reproduced in 3 runs beside two busy loops)
    logs = f"--- planner\n{planner_log[-4000:]}\n--- controller\n{log[-4000:]}"
    vi = MidpointVI(robot, 0.05)
    # Every switch entered on time is judged; no count is asserted: one loaded fresh-clone run judged none of its
    # 30 cycles (all entered late or unmatched to the recorded plans — its log was not kept); the pendulum tests
    # assert the count.
    jumps, late, saturated = _switches(vi, plans, vi.robot.effort_limits, log, planner_log)
    n = len(jumps)
    assert not jumps or max(jumps) < 1e-6, (max(jumps), jumps, late, len(entries(log)), len(plans))
    print(
        f"|q − q_goal|∞ over the last second: one plan {err['plan']:.4f} rad, MPC {err['mpc']:.4f} rad; {n} "
        f"switches on time ({saturated} saturated), {late} late; planner diagnostics {diag}"
    )
    assert int(diag.get("mpc_cycles", 0)) >= 10 and int(diag["mpc_accepted"]) >= 10, (diag, logs)
    # (the switches judged are those into the cycles' plans the planner's log names: as many as it published)
    assert list(published_kinds(planner_log).values()).count("mpc") >= 10, logs
    # Judged against the single plan while the loop kept its cadence: a cycle every period of the run's 3 s (28 of 30
    # in unloaded runs, every switch on time). A CI run on a loaded machine had 14 cycles and 2 late switches — the
    # planner's sim-time timer, starved, fired once for several periods — and ended 0.20 rad off (the plan 0.075):
    # then the arm must still be at the goal, not judged against the plan.
    period = float(diag["mpc_period_s"])
    nominal = int(diag["mpc_cycles"]) >= 0.75 * (over["horizon"] * over["dt"] + 2.0) / period and late == 0
    assert err["mpc"] < (err["plan"] if nominal else 0.3), (err, nominal, logs)


def test_when_the_mpc_planner_dies_mid_reach_the_panda_is_held_and_a_new_planner_takes_it_to_the_goal(ros):
    """A planner crash (SIGKILL) after the first cycle of the heavier panda's reach: no new plan comes, so the
    controller runs the last cycle's plan (its shrinking horizon ends at the task's end, at the goal) to its end and
    then holds its final configuration under gravity with the plan's hold gain — the arm neither stops dead
    mid-motion nor falls: it comes to rest there (the 20 % of every link's mass the model lacks leaves an offset). A
    planner started again then runs the task from where the arm is held: its plans, new sequence numbers, are
    entered (its first cycle waited for its own first plan's entry, not the dead planner's latched one), and the arm
    ends at the goal, at rest."""
    over, robot = task_overrides("task_panda_reach_mpc")
    over |= {"horizon": 20, "dt": 0.05}
    kill = {"after": 2, "restart": True}  # (the first plan and one cycle's)
    states, diag, plans, log, planner_log = _run(
        ros,
        "mpc",
        over,
        robot,
        dict(dt=0.005, mass_scale=1.2),
        dict(trigger="timer", rate=200.0),
        2.0,
        kill_planner=kill,
    )
    logs = f"--- planner (the new one)\n{planner_log[-3000:]}\n--- controller\n{log[-4000:]}"
    entered = entries(log)
    old = [e[0] for e in entered if e[0] < kill["restart_us"]]  # (the dead planner's, as the controller entered them)
    # (its last, as the recorder received it: the last entered may not have reached the recorder before the kill —
    # every cycle's plan ends at the goal at the task's end, so an earlier one's end is the same up to the cycle)
    last = old[-1] if old[-1] in plans else max(kill["seqs"])
    plan = plans[last]
    end = plan.times[-1] + retimed_steps(log).get(last, 0) * plan.dt
    assert kill["at"] < end, (kill, end, logs)  # (killed before its last plan ran out: measured 0.7 s before)
    before = kill["log_before_restart"]  # (no fault of its own while the plan ran out and the arm was held)
    assert "aborted" not in before and "safe command" not in before, before[-4000:]

    held = _window(states, kill["restart_at"] - 1.0, kill["restart_at"])  # (the last second before the new planner)
    q_end = plan.X[-1, : robot.nq]
    assert len(held) > 50 and float(np.abs(q_end - PANDA_GOAL).max()) < 0.05, (
        len(held),
        q_end,
        {k: v for k, v in kill.items() if k != "log_before_restart"},
        (states[0][0], states[-1][0], len(states)) if states else None,
        logs,
    )
    off, drift = float(np.abs(held - q_end).max()), float(np.abs(held[-1] - held[0]).max())
    new = [e for e in entered if e[0] > kill["restart_us"]]
    err, rest = _last_second_at_the_goal(states)
    print(
        f"killed at {kill['at']:.2f} s, plan {last} ends at {end:.2f} s; the second before the restart: {off:.4f} rad "
        f"off its end, {drift:.4f} moved; the new planner: {len(new)} plans entered, the last second {err:.4f} rad "
        f"off the goal, {rest:.4f} moved; its diagnostics {diag}"
    )
    assert off < 0.1 and drift < 0.01, (off, drift, logs)
    assert len(new) >= 3 and int(diag.get("mpc_accepted", 0)) >= 2, (new, diag, logs)  # (its plan and cycles)
    # (measured 0.064 and 0.006 rad: the cycles go on; a loaded CI run, 5 of 24 cycles overrun: 0.079 and 0.030)
    assert err < 0.1 and rest < 0.05, (err, rest, logs)


def test_when_the_controller_dies_mid_reach_the_brakes_hold_the_panda_and_a_new_controller_takes_it_on(ros):
    """The heavier panda's MPC reach with the controller killed (SIGKILL) early in the reach: the simulator's brakes
    (``command_timeout`` 0.1 s) hold the arm where it was; a new controller started a second later holds it from
    its first state, receives the planner's latched plans and drops those that ended before it could enter them
    (entered, each would only hold its final state from wherever the arm is), enters the cycles that still run,
    and the arm ends at the goal, at rest — the planner's cycles went on meanwhile, from the braked arm's states."""
    over, robot = task_overrides("task_panda_reach_mpc")
    over |= {"horizon": 20, "dt": 0.05}
    # (as soon as the test reads the entry: 0.5 s into the reach in CI s55g at half speed, 0.9 s in s58b; the simulator
    # at a quarter of real time until the kill, at half speed from then on)
    kill = {"into": 0.0, "down": 1.5, "real_time_factor": 0.5}
    states, diag, plans, log, planner_log = _run(
        ros,
        "mpc",
        over,
        robot,
        # the simulator slower than real time: the kill comes a wall-time latency after the test reads the entry (up to
        # ~1.8 s in loaded CI runs, which at full speed landed at the end of the 1 s reach, 0.059 rad from the goal)
        dict(dt=0.005, mass_scale=1.2, command_timeout=0.1, real_time_factor=0.25),
        dict(trigger="timer", rate=200.0),
        5.0,
        kill_controller=kill,
    )
    logs = f"--- planner\n{planner_log[-3000:]}\n--- new controller\n{log[-4000:]}"

    # the last 0.4 s before the new controller (braked 0.1 s after the kill, the recorder up to ~1 s behind then)
    braked = _window(states, kill["restart_at"] - 0.4, kill["restart_at"])
    drift = float(np.abs(braked - braked[0]).max())
    far = float(np.abs(braked[-1] - PANDA_GOAL).max())
    entered = entries(log)
    dropped = log.count(" not entered: it ended at ")
    err, rest = _last_second_at_the_goal(states)
    print(
        f"braked {far:.3f} rad from the goal ({drift:.4f} moved), the new controller "
        f"at {kill['restart_at']:.2f} s: {dropped} ended plans dropped, {len(entered)} entered; the last second "
        f"{err:.4f} rad off the goal, {rest:.4f} moved; planner diagnostics {diag}"
    )
    # (cycles after the 1 s deadline are min_horizon windows: from 0.43 rad some ask too much of joint 1 and are
    # refused; while none of ours runs any more, the task is planned again from the held arm — mpc_restarts; an
    # earlier version without that held the arm 0.43 rad away for good in 1 of 2 runs, every cycle refused)
    # held mid-reach: 0.6 rad from the goal unloaded, 0.18 with the kill 0.8 s of wall time later (the arm settles
    # 0.06 from the goal)
    assert len(braked) > 20 and drift < 0.01 and far > 0.1, (len(braked), drift, far)
    # (no tolerance abort; an over-speed brake may come: from 0.6 rad after the deadline the short windows drove
    # joint 1 0.3 % past its bound in 1 of 4 loaded runs, braked, and the arm still reached the goal)
    assert "path tolerance violated" not in log and "goal tolerance violated" not in log, logs
    assert dropped >= 1, logs  # (the task's first plan and the cycles before the kill ended at its 1 s deadline)
    # every plan entered still had steps to run (k < N): none only held its end from afar
    assert entered and all(k < plans[seq].horizon for seq, k, _, _ in entered if seq in plans), (entered, logs)
    # at rest: 0.002–0.005 rad of motion in the last second while the loop kept its cadence; beside two busy loops (7
    # overruns) the cycles still moved the heavier arm 0.050 rad there, 0.091 from the goal
    moving = 0.05 if int(diag.get("mpc_overruns", 0)) == 0 else 0.1
    assert err < 0.1 and rest < moving, (err, rest, diag, logs)
