"""Plan files are validated field by field; a plan only runs on the model and Δt it was made for."""

import json
import zipfile

import numpy as np
import pytest
from test_ros_tracking import _hold_upright_plan

from vi_control.control.plan import Plan, PlanError, PlanFileError
from vi_control.control.tracking import TrackingController
from vi_control.integrators.midpoint import MidpointVI
from vi_control.model import load_robot
from vi_control.model.bundled import bundled_urdf
from vi_control.planning import simulate_plan


@pytest.fixture(scope="module")
def plan(pendulum_vi):
    return _hold_upright_plan(pendulum_vi, 20)


def _fields(plan: Plan) -> dict:
    meta = dict(
        dt=plan.dt,
        model_name=plan.model_name,
        model_hash=plan.model_hash,
        joint_names=plan.joint_names,
        input_names=plan.input_names,
        weights=plan.weights,
        converged=plan.converged,
    )
    return dict(
        times=plan.times,
        X=plan.X,
        U=plan.U,
        K=plan.K,
        K_final=np.zeros((1, 2)),
        U_final=np.zeros(1),
        meta=json.dumps(meta),
    )


def _write(path, fields: dict):
    np.savez(path, **fields)
    return path


def _with_meta(plan, **changes):
    f = _fields(plan)
    meta = json.loads(f["meta"])
    for k, v in changes.items():
        if v is None:
            meta.pop(k)
        else:
            meta[k] = v
    f["meta"] = json.dumps(meta)
    return f


def _with(plan, name, value):
    f = _fields(plan)
    if value is None:
        f.pop(name)
    else:
        f[name] = value
    return f


def _cases(plan):
    X_nan = plan.X.copy()
    X_nan[3, 1] = np.nan
    K_inf = plan.K.copy()
    K_inf[0, 0, 0] = np.inf
    times_back = plan.times.copy()
    times_back[5] = times_back[4] - 0.1
    return {
        "dt a string": (_with_meta(plan, dt="abc"), r"meta\.dt: expected float, got 'abc'"),
        "dt negative": (_with_meta(plan, dt=-0.1), r"dt: must be a positive finite number, got -0\.1"),
        "dt missing": (_with_meta(plan, dt=None), r"meta\.dt: missing"),
        "unknown meta key": (_with_meta(plan, evil=1), r"meta: unknown key\(s\) \['evil'\]"),
        "joint names not strings": (_with_meta(plan, joint_names=[1]), r"joint_names: expected a list"),
        "converged not bool": (_with_meta(plan, converged="yes"), r"meta\.converged: expected bool"),
        "NaN in X": (_with(plan, "X", X_nan), r"X: entry \[3, 1\] is nan"),
        "inf in K": (_with(plan, "K", K_inf), r"K: entry \[0, 0, 0\] is inf"),
        "times go back": (_with(plan, "times", times_back), r"times: t\[5\] − t\[4\] = -0\.1, not dt = 0\.1"),
        "K missing": (_with(plan, "K", None), r"K: missing"),
        "K wrong shape": (_with(plan, "K", np.concatenate([plan.K, plan.K], axis=2)), r"gains K must have shape"),
        "X of integers": (_with(plan, "X", plan.X.astype(int)), r"X: expected float64, got int64"),
        "X of objects (pickle)": (
            _with(plan, "X", np.array([object()] * 3, dtype=object)),
            r"X: .*object.* is not a plan array",
        ),
        "meta not JSON": (_with(plan, "meta", "{not json"), r"meta: not valid JSON"),
        "meta a list": (_with(plan, "meta", "[1, 2]"), r"meta: expected a JSON object, got list"),
        "meta an array of floats": (_with(plan, "meta", np.zeros(3)), r"meta: expected a JSON string"),
    }


@pytest.mark.parametrize(
    "case", sorted(_cases(_hold_upright_plan(MidpointVI(load_robot(bundled_urdf("pendulum")), 0.1), 20)))
)
def test_bad_plan_file_is_one_error_naming_the_field(plan, tmp_path, case):
    fields, message = _cases(plan)[case]
    if case == "X of objects (pickle)":  # np.savez pickles object arrays; np.load must never unpickle them
        path = tmp_path / "p.npz"
        np.savez(path, **fields)
    else:
        path = _write(tmp_path / "p.npz", fields)
    with pytest.raises(PlanFileError, match=rf"{path}: {message}"):
        Plan.load(str(path))


@pytest.mark.parametrize(
    "damage", ["empty", "truncated", "random bytes", "zip without arrays", "missing file", "huge declared shape"]
)
def test_corrupt_plan_file_is_a_plan_file_error(plan, tmp_path, damage):
    """EOFError, BadZipFile, KeyError, MemoryError and friends are all one PlanFileError naming the file."""
    path = tmp_path / "p.npz"
    plan.save(str(path))
    data = path.read_bytes()
    if damage == "empty":
        path.write_bytes(b"")
    elif damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "random bytes":
        path.write_bytes(np.random.default_rng(0).bytes(4000))
    elif damage == "zip without arrays":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("readme.txt", "hello")
    elif damage == "missing file":
        path = tmp_path / "nowhere.npz"
    else:  # a header promising 10^12 doubles must be refused before anything is allocated
        with zipfile.ZipFile(path, "w") as z:
            header = b"{'descr': '<f8', 'fortran_order': False, 'shape': (1000000, 1000000), }"
            header += b" " * (118 - len(header)) + b"\n"
            z.writestr("times.npy", b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header)
    with pytest.raises(PlanFileError, match=str(path)):
        Plan.load(str(path))


def test_saved_plan_round_trips(plan, tmp_path):
    path = tmp_path / "ok.npz"
    plan.save(str(path))
    loaded = Plan.load(str(path))
    assert np.array_equal(loaded.X, plan.X) and loaded.dt == plan.dt and loaded.model_hash == plan.model_hash


def test_plan_runs_only_on_its_model_and_dt(plan, pendulum_vi):
    """The issue's case: a pendulum plan silently ran on a g = 30 pendulum. Now the hash says no, naming both models;
    the explicit override runs it (a robustness study), and a different Δt is refused even then."""
    heavy_g = MidpointVI(load_robot(bundled_urdf("pendulum"), {"gravity": [0, 0, -30.0]}), 0.1)
    x0 = plan.X[0]
    simulate_plan(pendulum_vi, plan, x0)
    with pytest.raises(PlanError, match=r"model_hash: the plan was made for 'pendulum' .* a different model"):
        simulate_plan(heavy_g, plan, x0)
    with pytest.raises(PlanError, match=r"model_hash"):
        TrackingController(plan, heavy_g.state, system=heavy_g)
    X, _ = simulate_plan(heavy_g, plan, x0, allow_mismatch=True)
    assert np.all(np.isfinite(X))
    other_dt = MidpointVI(pendulum_vi.robot, 0.05)
    with pytest.raises(PlanError, match=r"dt: the plan was made with dt = 0\.1 s, the system steps dt = 0\.05 s"):
        simulate_plan(other_dt, plan, x0, allow_mismatch=True)


def _tiny_plan(times, dt):
    n = len(times) - 1
    return Plan(
        times=times,
        X=np.zeros((n + 1, 2)),
        U=np.zeros((n, 1)),
        K=np.zeros((n, 1, 2)),
        dt=dt,
        model_name="m",
        model_hash="h",
        joint_names=["a"],
        input_names=["a"],
    )


def test_plan_times_must_resolve_dt_at_their_magnitude():
    """t₀ + k·dt must be told apart where the times lie: at 2⁴² s doubles are 2⁻¹⁰ s apart (≤ dt/10 for dt = 10 ms:
    accepted), at 2⁴³ 2⁻⁹ s (refused); plans stamped on the wall clock (1.8e9 s) load even at dt = 10 µs; times that
    all equal 1e17 (16 s apart there) are refused, not taken for t₀ + k·dt. A 400-digit integer dt is a PlanError."""
    dt = 0.01
    _tiny_plan(2.0**42 + np.arange(3) * dt, dt)
    with pytest.raises(PlanError, match="cannot resolve dt"):
        _tiny_plan(2.0**43 + np.arange(3) * dt, dt)
    _tiny_plan(1.8e9 + np.arange(300) * 1e-5, 1e-5).shifted(1.79e9 + 0.123)
    # from the wall clock back to 0 (the MPC planner's round trip): times k·dt exactly, not 1.8e9's rounding
    back = _tiny_plan(1.8e9 + np.arange(21) * 0.1, 0.1).shifted(0.0)
    assert np.array_equal(back.times, 0.1 * np.arange(21))
    with pytest.raises(PlanError, match="cannot resolve dt"):
        _tiny_plan(np.full(3, 1e17), dt)
    with pytest.raises(PlanError, match="not dt"):  # (within the magnitude that resolves dt, the spacing is checked)
        _tiny_plan(np.array([1.8e9, 1.8e9 + dt, 1.8e9 + 2.5 * dt]), dt)
    with pytest.raises(PlanError, match="dt: must be a positive finite number"):
        _tiny_plan(np.arange(3) * dt, 10**400)
    # the boundary: dt = 0 refused as such (times all equal would fit it), a nanosecond accepted
    with pytest.raises(PlanError, match=r"dt: must be a positive finite number, got 0\.0"):
        _tiny_plan(np.zeros(3), 0.0)
    assert _tiny_plan(np.arange(3) * 1e-9, 1e-9).dt == 1e-9


def test_shifted_receded_and_fitted_plans_are_plans_construction_accepts():
    """``shifted``, ``receded`` and ``fitted`` derive plans without running construction's checks again (rows of the
    plan's own arrays, its hold repeated); each derived plan is what ``Plan(...)`` of the same fields builds and
    accepts. Their times are still checked at the boundary: ``shifted`` to 2⁴² s is accepted at dt = 10 ms, to 2⁴³ s
    refused; a t0 that is not a finite number is a PlanError."""
    dt, n = 0.01, 5
    rng = np.random.default_rng(3)
    base = Plan(
        times=1.0 + dt * np.arange(n + 1),
        X=rng.normal(size=(n + 1, 2)),
        U=rng.normal(size=(n, 1)),
        K=rng.normal(size=(n, 1, 2)),
        dt=dt,
        model_name="m",
        model_hash="h",
        joint_names=["a"],
        input_names=["a"],
        K_final=np.array([[2.0, 3.0]]),
        U_final=np.array([0.5]),
        converged=False,
    )
    derived = [base.shifted(7.0), base.receded(2), base.receded(0), base.fitted(3), base.fitted(8)]
    for p in derived:
        fields = {f: getattr(p, f) for f in base.__dataclass_fields__}
        rebuilt = Plan(**fields)  # (construction's checks accept every derived plan)
        for f in ("times", "X", "U", "K", "K_final", "U_final"):
            assert np.array_equal(getattr(rebuilt, f), getattr(p, f)), f
        assert p.converged is False and p.model_hash == "h"
    shifted, rec, rec0, cut, padded = derived
    assert np.array_equal(shifted.times, 7.0 + dt * np.arange(n + 1)) and np.array_equal(shifted.X, base.X)
    assert np.array_equal(rec.X, np.vstack([base.X[2:], base.X[[-1, -1]]]))
    assert np.array_equal(rec.U[-2:], [[0.5], [0.5]]) and np.array_equal(rec.K[-1], base.K_final)
    assert np.allclose(rec.times, base.times[2] + dt * np.arange(n + 1), rtol=0, atol=1e-12)
    assert rec0 is not base and np.array_equal(rec0.X, base.X)
    assert cut.horizon == 3 and np.array_equal(cut.times, base.times[:4]) and np.array_equal(cut.K, base.K[:3])
    assert padded.horizon == 8 and np.array_equal(padded.X[-4:], np.repeat(base.X[-1:], 4, axis=0))
    assert base.fitted(n) is base
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match="N: expected an integer"):
            base.fitted(bad)
    with pytest.raises(ValueError, match="steps"):
        base.receded(n)
    base.shifted(2.0**42)
    with pytest.raises(PlanError, match="cannot resolve dt"):
        base.shifted(2.0**43)
    for t0 in (float("nan"), float("inf"), "soon", None):
        with pytest.raises(PlanError, match="t0|times"):
            base.shifted(t0)
