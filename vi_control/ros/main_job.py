"""Main job: pendulum swing-up in closed loop through the three ROS 2 nodes, each its own process.

Starts ``vi_control.ros.{simulator,planner,controller}_node`` with config/ros_*.yaml on a ROS_DOMAIN_ID of
its own (localhost discovery), records joint states and commands, prints a summary (RMS tracking error,
final state vs goal, max torque, wall time), writes out/main_job.png, stops the nodes and exits non-zero
if the goal was not reached. ``--task`` runs any task YAML of a robot with joints the same way (its model, Δt
and start go to the simulator and controller: ``task_overrides``). ``run_closed_loop`` is the same run as a
function (the end-to-end tests).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..control.plan import Plan, state_error

NODES = {"simulator": "simulator_node", "planner": "planner_node", "controller": "controller_node"}


@dataclass
class ClosedLoopRun:
    """What a closed-loop run produced: the plan, measured samples on the plan's grid, node logs."""

    plan: Plan | None  # the latest plan
    trajectory: object | None  # the latest trajectory_msgs/JointTrajectory from the planner
    first_plan: Plan | None  # the plan that was executing when the run started (the same unless replanned)
    stamps: np.ndarray  # (T,) simulation time of each joint state
    q: np.ndarray  # (T, nq) measured positions
    effort: np.ndarray  # (T, nq) applied torques reported by the simulator
    wall_time: float
    logs: dict[str, str] = field(default_factory=dict)
    error: str = ""
    odometry: list = field(default_factory=list)  # (stamp, child frame, (x, y, z, qx, qy, qz, qw)) from `odom`
    recording: str | None = None  # the MCAP file of the run (``record``), finished
    view: object | None = None  # the live browser view (``view``): a vi_control.view.RobotView, still serving

    def tracking_error(self, continuous_mask: np.ndarray, plan: Plan | None = None) -> np.ndarray:
        """Per plan step, measured q − planned q (modulo 2π on continuous joints): (N+1, nq)."""
        plan = plan or self.first_plan
        nq = self.q.shape[1]
        out = np.full((plan.horizon + 1, nq), np.nan)
        for k, t in enumerate(plan.times):
            i = np.flatnonzero(np.abs(self.stamps - t) < 0.25 * plan.dt)
            if i.size:
                out[k] = -state_error(plan.X[k, :nq], self.q[i[-1]], continuous_mask)
        return out

    def final_error(self, goal_q: np.ndarray, continuous_mask: np.ndarray) -> np.ndarray:
        return -state_error(goal_q, self.q[-1], continuous_mask)


# How long the main job waits, at its end, for the latest plan's trajectory message (module comment above its use).
TRAJECTORY_WAIT = 10.0


def _is_trajectory_of(trajectory, plan) -> bool:
    """Whether a planner's JointTrajectory is that of ``plan``: a point per state, the last one at X_N's positions."""
    if trajectory is None or len(trajectory.points) != plan.horizon + 1:
        return False
    nq = len(trajectory.joint_names)
    return bool(np.array_equal(np.asarray(trajectory.points[-1].positions, float), plan.X[-1, :nq]))


def run_closed_loop(
    domain_id: int,
    log_dir: str,
    params_files: dict[str, list[str]] | None = None,
    overrides: dict[str, dict] | None = None,
    hold_time: float = 1.0,
    timeout: float = 180.0,
    joint_names: list[str] | None = None,
    on_start=None,
    namespace: str | None = None,
    remaps: dict[str, dict[str, str]] | None = None,
    record: str | None = None,
    view: bool = False,
) -> ClosedLoopRun:
    """Start the three nodes, wait for a plan and its execution plus ``hold_time`` s, stop everything.

    ``on_start(procs, recorder)`` (optional) runs once the plan is being executed (fault injection in tests).
    Every node runs in ``namespace`` (default: one of this run's own), the recorder too; ``remaps``: per node,
    its topic remappings. ``record``: an MCAP file to record the run's topics into (``bag.BagRecorder``);
    ``view``: follow the run live in a browser view (``view_node.ViewNode``; its URL is printed when the
    simulator's robot_description arrives), returned in the result, still serving.
    """
    import rclpy

    from .launcher import NodeProcess, run_namespace, set_domain
    from .messages import FLAG_START_ON_RECEIPT
    from .recorder import Recorder

    params_files = params_files or {n: [f"ros_{n}.yaml"] for n in NODES}
    overrides = overrides or {}
    set_domain(domain_id)
    t0 = time.monotonic()
    rclpy.init(domain_id=domain_id)
    ns = namespace or run_namespace(f"{domain_id}:{log_dir}")
    rec = Recorder(joint_names or ["theta"], namespace=ns)
    extras = []  # the recording and the live view: spun on a thread of their own, beside the recorder's
    if record:
        from .bag import BagRecorder

        extras.append(BagRecorder(record, namespace=ns))
    if view:
        from .view_node import ViewNode

        extras.append(ViewNode(namespace=ns, on_ready=lambda v: print(f"[main_job] view: open {v.url}", flush=True)))
    spinner = BackgroundSpinner(extras) if extras else None
    procs = {}

    def start_nodes(*names: str) -> None:
        for n in names:
            procs[n] = NodeProcess(
                NODES[n],
                domain_id,
                params_files.get(n, []),
                overrides.get(n),
                log_dir,
                name=n,
                namespace=ns,
                remaps=(remaps or {}).get(n),
            )

    error, plan, first, first_flags, flags = "", None, None, 0, 0
    try:
        # In lockstep the loop runs as soon as a plan exists: the recorder must hear the simulator and the
        # controller (discovery can take seconds) before the planner starts, or the start is lost.
        start_nodes("simulator", "controller")
        topic = f"{rec.cmd_pub.topic_name}"
        if not rec.wait_for(
            lambda: (rec.states and rec.count_publishers(topic) > 1) or not all(p.alive for p in procs.values()),
            timeout,
        ):
            raise TimeoutError(f"simulator/controller not heard within {timeout} s")
        start_nodes("planner")
        if not _wait_reporting(
            rec,
            lambda: rec.plan() is not None or not all(p.alive for p in procs.values()),
            timeout,
            "the planner's plan",
        ):
            raise TimeoutError(f"no plan within {timeout} s")
        dead = [n for n, p in procs.items() if not p.alive]
        if dead:
            raise RuntimeError(f"node(s) {dead} exited early")
        seq, plan, first_flags = rec.plan()
        flags = first_flags
        first = plan
        print(f"[main_job] plan {seq}: N={plan.horizon}, dt={plan.dt:g} (after {time.monotonic() - t0:.1f} s)")
        if on_start is not None:
            on_start(procs, rec)
        # Wait on simulation time until the latest plan has run out plus hold_time. A plan marked "start on
        # receipt" starts at the first joint state answered; a time-stamped one at its t_0.
        duration = plan.times[-1] - plan.times[0] + hold_time
        first_answered: list[float] = []  # simulation time of the first joint state after the first command

        def done() -> bool:
            with rec.lock:
                stamps = [s[1] for s in rec.states]
            if not first_answered and rec.commands and stamps:
                first_answered.append(stamps[-1])
            if not first_answered:
                return False
            return stamps[-1] >= closed_loop_end(first_answered[0], duration, rec.plan(), hold_time)

        if not _wait_reporting(
            rec,
            done,
            timeout,
            "the closed loop",
            lambda: f"simulated t = {rec.states[-1][1]:.2f} s" if rec.states else "",
        ):
            raise TimeoutError(f"the closed loop did not reach t = {duration:g} s of simulation within {timeout} s")
        _, plan, flags = rec.plan()  # the latest plan (it may have been replaced during the run)
        # ... and its trajectory: a restarted planner's two writers are discovered one by one (seconds under load), so
        # its plan can arrive while the trajectory held is still the old planner's
        if rec.trajectory is not None:  # (a vehicle's planner publishes none)
            rec.wait_for(lambda: _is_trajectory_of(rec.trajectory, plan), TRAJECTORY_WAIT)
    except (TimeoutError, RuntimeError) as e:
        error = str(e)
    finally:
        wall = time.monotonic() - t0
        states, trajectory, odometry = list(rec.states), rec.trajectory, list(rec.odometry)
        for p in procs.values():  # the node processes first: they must never outlive the job
            try:
                p.stop()
            except Exception as e:  # keep stopping the others
                print(f"[main_job] stopping {p} failed: {e}", file=sys.stderr)
        if spinner is not None:
            spinner.close()  # after the nodes: the recording holds everything they said
        live_view = next((n.view for n in extras if hasattr(n, "view")), None)
        for n in extras:
            n.destroy_node()  # (the bag recorder's finishes the file)
        rec.close()
        rclpy.try_shutdown()
    if plan is not None and states:
        if flags & FLAG_START_ON_RECEIPT:
            plan = _started_on_receipt(plan, states)
        if first_flags & FLAG_START_ON_RECEIPT:
            first = _started_on_receipt(first, states)
    nq = len(joint_names or ["theta"])

    def column(i: int) -> np.ndarray:
        return np.array([s[i] for s in states]).reshape(len(states), -1) if states else np.zeros((0, nq))

    return ClosedLoopRun(
        plan=plan,
        first_plan=first,
        trajectory=trajectory,
        stamps=np.array([s[1] for s in states]),
        q=column(2),
        effort=column(3),
        wall_time=wall,
        logs={n: p.log() for n, p in procs.items()},
        error=error,
        odometry=odometry,
        recording=record or None,
        view=live_view,
    )


def closed_loop_end(first_answered: float, duration: float, latest, hold_time: float) -> float:
    """Simulation time at which the main job's closed loop is done: the first plan's ``duration`` (its span plus
    ``hold_time``) after the first answered joint state, or later if the ``latest`` plan ((seq, plan, flags) as the
    recorder has it) is time-stamped and ends later (a re-plan during the run), plus ``hold_time``. A plan started
    on receipt has no stated end: the first plan's span counts."""
    from .messages import FLAG_START_ON_RECEIPT

    t_end = first_answered + duration
    if latest is not None and not latest[2] & FLAG_START_ON_RECEIPT:
        t_end = max(t_end, float(latest[1].times[-1]) + hold_time)
    return t_end


def _wait_reporting(rec, predicate, timeout: float, what: str, status=lambda: "", period: float = 5.0) -> bool:
    """``rec.wait_for(predicate, timeout)`` that says every ``period`` s what it is waiting for: long work is
    never silent for more than 10 s."""
    start = time.monotonic()
    end = start + timeout
    while time.monotonic() < end:
        if rec.wait_for(predicate, min(period, end - time.monotonic())):
            return True
        extra = status()
        print(
            f"[main_job] waiting for {what} ({time.monotonic() - start:.0f} s{', ' + extra if extra else ''})",
            flush=True,
        )
    return bool(predicate())


class BackgroundSpinner:
    """Spins some nodes on an executor thread of their own until ``close``, which first drains what their
    subscriptions have already received: the recording must hold every message the job's own subscriber took, also
    the last ones before the nodes stopped — under load the recording's thread runs seconds behind (a bag once
    missed a run's last joint states), so the drain goes on until, waiting ``QUIET_S``, no message is ready — at most
    ``DRAIN_MAX_S``. The nodes' timers (the live view's drawing) are cancelled first: they need not run any more. A
    wait decides, not the time since the last message taken: a drawing longer than ``QUIET_S``, or the thread
    descheduled as long, ended such a drain with messages still queued."""

    QUIET_S = 0.1
    DRAIN_MAX_S = 10.0

    def __init__(self, nodes: list):
        import threading

        from rclpy.executors import SingleThreadedExecutor

        self._executor = SingleThreadedExecutor()
        self._nodes = list(nodes)
        for n in nodes:
            self._executor.add_node(n)
        self._closing = False
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        import rclpy

        while not self._closing and rclpy.ok():
            try:
                self._executor.spin_once(timeout_sec=0.05)
            except Exception:  # a shutdown race, as the recorder's
                if self._closing or not rclpy.ok():
                    return
                raise
        if rclpy.ok():
            self._drain()

    def _drain(self) -> None:
        """Cancel the nodes' timers, then run what is ready until nothing is for QUIET_S (or DRAIN_MAX_S have
        passed)."""
        from rclpy.executors import ShutdownException, TimeoutException

        for node in self._nodes:
            for timer in list(node.timers):
                timer.cancel()
        start = time.monotonic()
        while time.monotonic() - start < self.DRAIN_MAX_S:
            try:
                handler, _, _ = self._executor.wait_for_ready_callbacks(timeout_sec=self.QUIET_S)
            except (TimeoutException, ShutdownException):
                return
            except Exception:  # (a shutdown race: what was drained is written)
                return
            handler()
            if handler.exception() is not None:
                return

    def close(self) -> None:
        self._closing = True
        self._thread.join(timeout=self.DRAIN_MAX_S + 5.0)
        self._executor.shutdown(timeout_sec=1.0)


def _started_on_receipt(plan: Plan, states: list) -> Plan:
    """A plan marked "start on receipt" as it ran: from the first joint state that was answered."""
    stamps = np.array([s[1] for s in states])
    moved = np.flatnonzero(stamps > stamps[0])  # lockstep: time stands still until the first command
    return plan.shifted(stamps[moved[0]] - plan.dt if moved.size else stamps[0])


def plot_run(
    run: ClosedLoopRun,
    joint_names: list[str],
    input_joints: list[int],
    path: str,
    effort_limits: np.ndarray | None = None,
    continuous_mask: np.ndarray | None = None,
) -> None:
    """The run's PNG: planned vs measured q; planned vs applied torque with the torque limits (``effort_limits``,
    per actuated joint, dotted at ±limit); the tracking error q − q_planned on the plan's grid (``continuous_mask``:
    angles of continuous joints taken modulo 2π)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nq = run.q.shape[1]
    fig, axes = plt.subplots(3, 1, figsize=(8, 8.5), sharex=True)
    for j in range(nq):
        axes[0].plot(run.plan.times, run.plan.X[:, j], "--", label=f"{joint_names[j]} planned")
        axes[0].plot(run.stamps, run.q[:, j], label=f"{joint_names[j]} measured")
    axes[0].set_ylabel("q [rad or m]")
    axes[0].legend(loc="best")
    for i, j in enumerate(input_joints):
        axes[1].step(run.plan.times[:-1], run.plan.U[:, i], "--", where="post", label=f"{joint_names[j]} planned U_k")
        # the effort reported with state k+1 is the torque applied over [t_k, t_k+1]
        line = axes[1].step(
            run.stamps - run.plan.dt, run.effort[:, j], where="post", label=f"{joint_names[j]} applied"
        )[0]
        if effort_limits is not None and np.isfinite(effort_limits[i]) and effort_limits[i] > 0:
            for sign in (1, -1):
                axes[1].axhline(
                    sign * effort_limits[i],
                    color=line.get_color(),
                    ls=":",
                    lw=1,
                    label=f"{joint_names[j]} limit ±{effort_limits[i]:g}" if sign > 0 else None,
                )
    axes[1].set_ylabel("torque [N·m or N]")
    axes[1].legend(loc="best", fontsize="small")
    mask = np.zeros(nq, bool) if continuous_mask is None else np.asarray(continuous_mask, bool)
    err = run.tracking_error(mask)
    plan = run.first_plan or run.plan
    for j in range(nq):
        axes[2].plot(plan.times, err[:, j], ".-", label=f"{joint_names[j]}")
    axes[2].axhline(0.0, color="0.6", lw=0.8)
    axes[2].set_ylabel("tracking error q − q_plan\n[rad or m]")
    axes[2].set_xlabel("simulation time [s]")
    axes[2].legend(loc="best", fontsize="small")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def model_parameters(spec) -> dict:
    """The nodes' MODEL_PARAMETERS values that load the model of a ``ModelSpec`` (a task's ``model``)."""
    import yaml

    from ..model.errors import ModelError

    if spec.mass_scale != 1.0 or spec.floating_base is not None or spec.inertia_policy is not None:
        raise ModelError(
            "model: mass_scale, floating_base and inertia_policy have no node parameter; put the "
            "model in a system YAML (system_yaml) to run it through the nodes"
        )
    system = spec.system_source() if spec.system is not None else ""
    if isinstance(system, dict):
        system = yaml.safe_dump(system)
    kind = spec.kind
    source = {"xml": {"robot_description": spec.source}, "path": {"urdf_path": spec.urdf()}}.get(kind, {})
    return {"model": (spec.default_name() or "") if source else spec.source, "system_yaml": system or ""} | source


def task_overrides(task_source: str) -> tuple[dict[str, dict], object]:
    """Per node, the parameters that run a task YAML (a name in config/ or a path) through the nodes in lockstep:
    the task's model, Δt and start for the simulator and controller, the task (as an absolute path) for the
    planner, and the GNI (Kobilarov2010) on all three for a model with nonholonomic constraints; and the simulated
    robot. Vehicles (a free-floating body, vehicle mode) are not covered."""
    import os

    from ..planning.task import load_task
    from .common import resolve_config

    path = os.path.abspath(resolve_config(task_source))
    task = load_task(path)
    spec = task.model_spec
    robot = spec.load()
    integrator = {"integrator": "gni"} if robot.n_nonholonomic else {}  # Kobilarov2010, in all three nodes
    model = model_parameters(spec) | integrator
    q0 = np.zeros(robot.nq) if task.q0 is None else task.q0
    qdot0 = np.zeros(robot.nq) if task.qdot0 is None else task.qdot0
    sim = model | {"dt": task.dt, "initial_positions": q0.tolist(), "initial_velocities": qdot0.tolist()}
    return {"simulator": sim, "controller": model | {"dt": task.dt}, "planner": {"task": path} | integrator}, robot


def main(argv: list[str] | None = None) -> int:
    from ..model.bundled import share_dir
    from ..model.yaml_io import load_yaml
    from .common import MODEL_PARAMETERS, parameter_defaults, robot_from_parameters
    from .launcher import domain_id_for

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="out/main_job.png", help="plot path")
    ap.add_argument("--tolerance", type=float, default=0.05, help="goal tolerance on |q − q_goal| [rad]")
    ap.add_argument("--hold-time", type=float, default=2.0, help="simulated time to hold the goal after the plan")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument(
        "--mass-scale",
        type=float,
        default=1.05,
        help="simulated masses / the planner's model (default: a 5 %% heavier real pendulum)",
    )
    ap.add_argument("--noise", type=float, default=0.001, help="joint position noise std of the simulator [rad]")
    ap.add_argument(
        "--task",
        default="",
        help="a task YAML (name in config/, e.g. task_cartpole_swingup, or a path) to run instead of the "
        "pendulum swing-up: its model, Δt and start configure the simulator and controller",
    )
    ap.add_argument(
        "--record",
        default=None,
        metavar="MCAP",
        help="record the run's topics to this MCAP file (default: next to the plot, .mcap; '' for none)",
    )
    ap.add_argument(
        "--view",
        action="store_true",
        help="follow the run in a browser view (prints its URL), then replay it there until Enter",
    )
    ap.add_argument(
        "--html",
        action="store_true",
        help="also write a self-contained HTML replay next to the plot (.html; opens offline)",
    )
    args = ap.parse_args(argv)
    record = str(Path(args.out).with_suffix(".mcap")) if args.record is None else args.record
    # SIGTERM (e.g. a CI timeout) must unwind through run_closed_loop's finally, which stops the node
    # processes: they run in sessions of their own and would not get the signal.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.environ.setdefault("AMENT_PREFIX_PATH", sys.prefix)
    overrides: dict[str, dict] = {"simulator": {}, "controller": {}, "planner": {}}
    if args.task:
        from ..model.errors import ModelError
        from ..planning.task import TaskError

        try:
            overrides, robot = task_overrides(args.task)
        except (TaskError, ModelError, ValueError, OSError) as e:
            print(f"[main_job] --task {args.task}: {e}")
            return 2
        print(f"[main_job] task {overrides['planner']['task']}")
    else:
        sim_params = load_yaml((share_dir() / "config" / "ros_simulator.yaml").read_text(encoding="utf-8"))
        params = parameter_defaults(MODEL_PARAMETERS) | sim_params["/**/vi_simulator"]["ros__parameters"]
        robot, _ = robot_from_parameters(params)  # the simulated robot, as the simulator node loads it
    domain = domain_id_for("main_job")
    log_dir = str(Path(args.out).parent / "main_job_logs")
    print(f"[main_job] ROS_DOMAIN_ID={domain}, node logs in {log_dir}")
    # A model mismatch and measurement noise, so the TV-LQR feedback has something to correct.
    overrides["simulator"] |= {"mass_scale": args.mass_scale, "position_noise_std": args.noise}
    print(f"[main_job] simulator: mass_scale={args.mass_scale}, position noise std={args.noise} rad")
    run = run_closed_loop(
        domain,
        log_dir,
        hold_time=args.hold_time,
        timeout=args.timeout,
        joint_names=robot.joint_names,
        overrides=overrides,
        record=record or None,
        view=args.view,
    )
    try:
        return _report(args, run, robot)
    finally:
        if run.view is not None:
            run.view.close()


def _report(args, run: ClosedLoopRun, robot) -> int:
    """The summary, the plot, the recording, the replays (HTML, the live view) of a finished run."""
    if run.error or run.plan is None or len(run.q) == 0:
        print(f"[main_job] FAILED: {run.error or 'no data'}")
        for name, text in run.logs.items():
            print(f"--- {name} log (tail) ---\n" + "\n".join(text.splitlines()[-15:]))
        return 1
    mask = robot.continuous_mask
    err = run.tracking_error(mask)
    goal = run.plan.X[-1, : robot.nq]
    final = run.final_error(goal, mask)
    rms = float(np.sqrt(np.nanmean(err**2)))
    tau_max = float(np.abs(run.effort).max())
    ok = bool(np.all(np.abs(final) <= args.tolerance))
    print("| quantity | value |\n|---|---|")
    print(f"| plan | N = {run.plan.horizon}, dt = {run.plan.dt:g} s |")
    print(f"| RMS tracking error (q, over the plan) | {rms:.4g} rad |")
    print(f"| final q − goal (after {args.hold_time:g} s hold) | {np.round(final, 5).tolist()} rad |")
    print(f"| max applied torque | {tau_max:.4g} N·m (limit {robot.effort_limits.tolist()}) |")
    print(f"| wall time (start-up, plan, closed loop, shutdown) | {run.wall_time:.1f} s |")
    plot_run(
        run,
        robot.joint_names,
        [robot.joint_index(n) for n in robot.actuated],
        args.out,
        effort_limits=robot.effort_limits,
        continuous_mask=mask,
    )
    print(f"[main_job] plot written to {args.out}")
    if run.recording:
        print(f"[main_job] recording written to {run.recording} (vi_view {run.recording} replays it)")
    if args.html or run.view is not None:
        from ..view import Replay, view_replay, write_html

        plan = run.first_plan or run.plan
        replay = Replay(robot, run.stamps, run.q, plan.times, plan.X[:, : robot.nq])
        if args.html:
            page = write_html(replay, Path(args.out).with_suffix(".html"))
            print(f"[main_job] HTML replay written to {page}")
        if run.view is not None:
            view_replay(replay, run.view)
            print(f"[main_job] replay: open {run.view.url} (Controls > Animations)")
            if sys.stdin.isatty():
                input("[main_job] press Enter to stop the view ")
            else:
                print("[main_job] (no terminal to wait on: the view stops with the job; vi_view replays the recording)")
    print(f"[main_job] goal {'REACHED' if ok else 'NOT reached'} (tolerance {args.tolerance} rad)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
