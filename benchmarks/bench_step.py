"""µs per midpoint VI step (Johnson2015) against Pinocchio ABA + semi-implicit Euler and MuJoCo ``mj_step``.

Everything is measured in this process, interleaved round by round. The machine is shared with other
people's tests, so step costs are process CPU time (``time.process_time``: time spent descheduled does not
count). Each figure is given as the median (and min) over ``--rounds`` batches; a ratio is computed per round
(the VI's batch against the baseline's batch of the same round) and given as its median (and min). The load
average (1 min) is recorded before and after each model:

- ``VI exact`` / ``VI chord`` / ``VI quasi``: ``MidpointVI.step`` with ``newton='exact'`` (M_{k+1} evaluated and
  factored in every iteration), ``newton='chord'`` (residual-only iterations on Δt⁻¹M(q_k), M_{k+1} once near
  the root for the condition check and the last updates; the default with the C driver) and ``newton='chord'``
  with ``chord_root_check=False`` (M_{k+1} skipped when the quasi-Newton iteration converges alone), whole Newton
  step in generated C when the model compiles; timed through ``step`` (what a simulation loop calls), the
  iteration counts from an untimed ``solve`` pass over the same steps;
- ``numpy Newton``: the same compiled residual/Jacobian with the Newton loop, LU and dgecon in numpy/LAPACK
  (the path before the C driver; now the tests' oracle, test/support/midpoint_newton_oracle.py);
- ``ABA+Euler``: q̇ += Δt·aba(q, q̇, τ); q += Δt·q̇ with Pinocchio on the same model;
- ``mj_step``: MuJoCo on the same URDF (visual/collision stripped), Euler integrator, same Δt and gravity.

Build times (wall clock): ``cold`` = MidpointVI construction with an empty VI_CONTROL_CACHE (symbolic build
+ C generation + gcc), ``warm`` = the same construction again (symbolic build + C generation, library
reused); ``gcc CPU`` = CPU seconds of the compiler processes during the cold build (load-independent).

Usage: .venv/bin/python benchmarks/bench_step.py [--models panda,chain10] [--dts 0.01,0.001] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pinocchio as pin

from vi_control.integrators.midpoint import NEWTON_METHODS, MidpointVI, StepError
from vi_control.model import load_robot
from vi_control.model.bundled import bundled_config, bundled_urdf, example_robot_urdf
from vi_control.model.generate import planar_chain_urdf
from vi_control.ros.mujoco_model import strip_geometry

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "support"))
from midpoint_newton_oracle import oracle_solve  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# timed variants: (MidpointVI.newton, MidpointVI.chord_root_check)
VARIANTS = {"exact": ("exact", True), "chord": ("chord", True), "quasi": ("chord", False)}
BATCH_SECONDS = 0.01  # CPU length of one timed batch


def ensure_mujoco():
    try:
        import mujoco
    except ImportError:
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "-r", str(ROOT / "benchmarks" / "requirements-bench.txt")],
            check=True,
        )
        import mujoco
    return mujoco


def model_sources(names: list[str]) -> dict[str, tuple[str, str | None]]:
    """URDF XML text and system YAML per model name; arm7 is skipped until urdf/arm7.urdf exists."""
    out = {}
    for name in names:
        if name == "arm7":
            path = ROOT / "urdf" / "arm7.urdf"
            if not path.exists():
                print("arm7: urdf/arm7.urdf not there yet, skipped", file=sys.stderr)
                continue
            out[name] = (Path(bundled_urdf("arm7")).read_text(), bundled_config("arm7"))
        elif name == "panda":
            out[name] = (example_robot_urdf("panda"), None)
        elif name.startswith("chain"):
            out[name] = (planar_chain_urdf(int(name[5:])), None)
        else:
            raise ValueError(f"unknown model {name!r}")
    return out


def per_step(run, n: int, rounds: list[float]) -> None:
    t = time.process_time()
    run(n)
    rounds.append((time.process_time() - t) / n)


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed_build(robot, dt: float) -> tuple[MidpointVI, float, float]:
    """(vi, wall seconds, CPU seconds of compiler subprocesses)."""
    t, c = time.perf_counter(), children_cpu()
    vi = MidpointVI(robot, dt)
    return vi, time.perf_counter() - t, children_cpu() - c


def bench_model(name: str, urdf: str, yaml: str | None, dt: float, rounds: int, mujoco) -> dict:
    robot = load_robot(urdf, yaml)
    with tempfile.TemporaryDirectory() as cache:
        old = os.environ.get("VI_CONTROL_CACHE")
        os.environ["VI_CONTROL_CACHE"] = cache
        try:
            _, cold, gcc = timed_build(robot, dt)
            vi, warm, _ = timed_build(robot, dt)
        finally:
            if old is None:
                os.environ.pop("VI_CONTROL_CACHE")
            else:
                os.environ["VI_CONTROL_CACHE"] = old
    nq = robot.nq
    rng = np.random.default_rng(0)
    lo, hi = robot.pin_model.lowerPositionLimit, robot.pin_model.upperPositionLimit
    mid = np.where(np.isfinite(lo) & np.isfinite(hi), (lo + hi) / 2, 0.0)
    q0 = mid + rng.uniform(-0.3, 0.3, nq)
    v0 = rng.uniform(-0.5, 0.5, nq)
    x0 = vi.state_from_velocity(q0, v0)
    u = np.zeros(vi.nu)
    tau = np.zeros(nq)
    iters: dict[str, list[int]] = {m: [] for m in VARIANTS}

    def run_vi(n: int, variant: str) -> None:
        vi.newton, vi.chord_root_check = VARIANTS[variant]
        x = x0
        for _ in range(n):
            x = vi.step(x, u)

    def count_iterations(n: int, variant: str) -> None:
        vi.newton, vi.chord_root_check = VARIANTS[variant]
        x = x0
        for _ in range(n):
            r = vi.solve(x, u)
            x = r.x
            iters[variant].append(r.iterations)

    def run_numpy_newton(n: int) -> None:
        x = x0  # the numpy Newton loop (exact) over the same compiled residual
        for _ in range(n):
            x = oracle_solve(vi, x, u, newton="exact").x

    pm = robot.pin_model
    pd = pm.createData()

    def run_aba(n: int) -> None:
        q, v = q0.copy(), v0.copy()
        for _ in range(n):
            v = v + dt * pin.aba(pm, pd, q, v, tau)
            q = q + dt * v

    runs = {m: (lambda n, m=m: run_vi(n, m)) for m in VARIANTS}
    runs["aba"] = run_aba
    if vi.compiled_driver:
        runs["numpy"] = run_numpy_newton
    if mujoco is not None:
        mm = mujoco.MjModel.from_xml_string(strip_geometry(urdf))
        mm.opt.timestep = dt
        mm.opt.gravity[:] = robot.gravity
        mm.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
        md = mujoco.MjData(mm)

        def run_mj(n: int) -> None:
            mujoco.mj_resetData(mm, md)
            md.qpos[:], md.qvel[:] = q0, v0
            for _ in range(n):
                mujoco.mj_step(mm, md)

        runs["mj_step"] = run_mj
    # Batch sizes from one probe step each, so a batch lasts ~BATCH_SECONDS.
    sizes = {}
    for key, run in runs.items():
        t = time.process_time()
        run(2)
        sizes[key] = int(np.clip(BATCH_SECONDS / max((time.process_time() - t) / 2, 1e-7), 2, 5000))
    times: dict[str, list[float]] = {k: [] for k in runs}
    for variant in VARIANTS:
        count_iterations(sizes[variant], variant)
    load = [os.getloadavg()[0]]
    for _ in range(rounds):
        for key, run in runs.items():
            per_step(run, sizes[key], times[key])
    load.append(os.getloadavg()[0])
    best = {k: min(v) * 1e6 for k, v in times.items()}
    med = {f"{k}_med": float(np.median(v)) * 1e6 for k, v in times.items()}
    # per-round ratios of the VI to each baseline (same round: the same machine state)
    ratios = {
        f"{m}/{b}": np.array(times[m]) / np.array(times[b]) for m in VARIANTS for b in ("aba", "mj_step") if b in times
    }
    ratios["exact/chord"] = np.array(times["exact"]) / np.array(times["chord"])
    return dict(
        model=name,
        nq=nq,
        dt=dt,
        backend="C Newton" if vi.compiled_driver else "C Newton over the CasADi VM",
        **{f"it_{m}": float(np.mean(v)) for m, v in iters.items()},
        cold=cold,
        warm=warm,
        gcc=gcc,
        **best,
        **med,
        ratios={k: (float(np.median(v)), float(v.min())) for k, v in ratios.items()},
        load=load,
        rounds=rounds,
    )


def breakdown(
    name: str, urdf: str, yaml: str | None, dt: float, rounds: int, newton: str, root_check: bool = True
) -> str:
    """Where one compiled step's time goes: Python wrapper, the C driver with 0, 1, … Newton iterations."""
    robot = load_robot(urdf, yaml)
    vi = MidpointVI(robot, dt, newton=newton, chord_root_check=root_check)
    chord = (vi.newton == "chord", vi.chord_rate_max, root_check)
    nw = vi._newton
    if not vi.compiled_driver:
        return f"{name}: the driver calls the CasADi VM back (not compiled)"
    rng = np.random.default_rng(0)
    x = vi.state_from_velocity(rng.uniform(-0.3, 0.3, vi.nq), rng.uniform(-0.5, 0.5, vi.nq))
    u = np.zeros(vi.nu)
    its = vi.solve(x, u).iterations
    cases = {"MidpointVI.step": lambda: vi.step(x, u)}
    for k in range(its + 1):  # max_iterations = k: stops after k updates (not-converged code, no raise)
        cases[f"C driver, {k} Newton updates" + (" (= full)" if k == its else "")] = lambda k=k: nw(
            k, vi.settings.tol, vi.settings.rcond_min, True, *chord
        )
    times: dict[str, list[float]] = {c: [] for c in cases}
    for _ in range(rounds):
        for c, fn in cases.items():
            per_step(lambda n, fn=fn: [fn() for _ in range(n)], 2000, times[c])
    lines = [
        f"Breakdown, {name}, Δt = {dt * 1e3:g} ms, {newton} Newton, root check {root_check} ({its} iterations; "
        f"µs CPU, best of {rounds}):",
        "",
        "| call | µs |",
        "|---|---|",
    ]
    lines += [f"| {c} | {min(t) * 1e6:.2f} |" for c, t in times.items()]
    return "\n".join(lines)


def table(rows: list[dict]) -> str:
    """Two markdown tables: step cost (µs CPU per step and per-round ratios, median (min)) and first-use build time."""

    def f(row, key):
        return "–" if row.get(key) is None else f"{row[key + '_med']:.1f} ({row[key]:.1f})"

    def x(row, key):
        r = row["ratios"].get(key)
        return "–" if r is None else f"{r[0]:.1f}× ({r[1]:.1f}×)"

    steps = [
        "| model | nq | Δt | backend | load (1 min) | rounds | exact µs | it | chord µs | it | quasi µs | it "
        "| numpy Newton µs | ABA+Euler µs | mj_step µs | chord / ABA | quasi / ABA | exact / ABA | chord / mj "
        "| exact / mj | exact / chord |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    builds = ["| model | Δt | cold build s (wall) | gcc CPU s | warm build s (wall) |", "|---|---|---|---|---|"]
    for r in rows:
        head = f"| {r['model']} | {r['nq']} | {r['dt'] * 1e3:g} ms"
        steps.append(
            f"{head} | {r['backend']} | {r['load'][0]:.1f}–{r['load'][1]:.1f} | {r['rounds']} "
            f"| {f(r, 'exact')} | {r['it_exact']:.2f} | {f(r, 'chord')} | {r['it_chord']:.2f} "
            f"| {f(r, 'quasi')} | {r['it_quasi']:.2f} "
            f"| {f(r, 'numpy')} | {f(r, 'aba')} | {f(r, 'mj_step')} | {x(r, 'chord/aba')} "
            f"| {x(r, 'quasi/aba')} | {x(r, 'exact/aba')} "
            f"| {x(r, 'chord/mj_step')} | {x(r, 'exact/mj_step')} | {x(r, 'exact/chord')} |"
        )
        builds.append(f"| {r['model']} | {r['dt'] * 1e3:g} ms | {r['cold']:.1f} | {r['gcc']:.1f} | {r['warm']:.1f} |")
    return (
        "Step cost: median (min) over interleaved rounds; ratios per round, median (min).\n\n"
        + "\n".join(steps)
        + "\n\n"
        + "\n".join(builds)
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="arm7,panda,chain10,chain32,chain100")
    ap.add_argument("--dts", default="0.01,0.001")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--no-mujoco", action="store_true")
    ap.add_argument("--breakdown", action="store_true", help="time split of one compiled step, first model/Δt")
    ap.add_argument("--newton", default="chord", choices=NEWTON_METHODS, help="method for --breakdown")
    ap.add_argument("--no-root-check", action="store_true", help="chord_root_check=False for --breakdown")
    args = ap.parse_args()
    if args.breakdown:
        name, (urdf, yaml) = next(iter(model_sources(args.models.split(",")).items()))
        print(
            breakdown(name, urdf, yaml, float(args.dts.split(",")[0]), args.rounds, args.newton, not args.no_root_check)
        )
        return
    mujoco = None if args.no_mujoco else ensure_mujoco()
    rows = []
    for name, (urdf, yaml) in model_sources(args.models.split(",")).items():
        for dt in (float(s) for s in args.dts.split(",")):
            # The VM path at 100 links costs ~0.1 s per step: fewer rounds are enough there.
            rounds = args.rounds if not name.startswith("chain") or int(name[5:]) < 64 else 3
            print(f"{name} dt={dt} ...", file=sys.stderr, flush=True)
            try:
                rows.append(bench_model(name, urdf, yaml, dt, rounds, mujoco))
            except StepError as e:
                print(f"{name} dt={dt}: {e}", file=sys.stderr)
                continue
            lines = table(rows[-1:]).splitlines()
            print(lines[4] + "\n" + lines[-1], file=sys.stderr, flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
