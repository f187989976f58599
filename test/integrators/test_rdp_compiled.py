"""The RDP's steps as one C call (csrc/rdp_driver.c) against the numpy oracle (test/support/rdp_oracle.py) on the
CasADi VM: the same iterates to round-off (bit for bit on the development machine: both solve 2×2 / 3×3 systems by
LU with partial pivoting), the same iteration counts, and the same errors with the same step index — not converged,
a singular Jacobian, a NaN input. The driver over the VM's functions (compile=False) is checked against it too."""

import re

import casadi as ca
import numpy as np
import pytest
from rdp_oracle import NumpyRDP
from scipy.integrate import solve_ivp

from vi_control.integrators import ConvergenceError, NewtonSettings, SingularityError
from vi_control.integrators.rdp import (
    SNAKEBOARD,
    SNAKEBOARD_START,
    ReducedDAlembertPontryagin,
    ReducedSystem,
    sleigh_system,
    snakeboard_inputs,
    snakeboard_start,
    snakeboard_system,
)
from vi_control.mechanics.lagrange_dalembert import NonholonomicODE
from vi_control.model.bundled import load_bundled

H = 10.0 / 128  # Kobilarov2010, §6.2: N = 128 over T = 10 s


def _same_counts(a: np.ndarray, b: np.ndarray) -> None:
    """Iteration counts equal but where round-off could put one residual on the other side of the tolerance: at
    most one apart, on at most 2 % of the steps (LAPACK's dgesv may order a 3×3 LU's operations otherwise)."""
    d = np.abs(a - b)
    assert d.max() <= 1 and (d > 0).mean() <= 0.02, (a, b)


@pytest.fixture(scope="module")
def board():
    system = snakeboard_system(**SNAKEBOARD)
    return system, snakeboard_start(system, **SNAKEBOARD_START), snakeboard_inputs(np.arange(128) * H)


def _both(system, dt, retraction="exp", settings=None):
    c = ReducedDAlembertPontryagin(system, dt, retraction, settings=settings)
    v = NumpyRDP(system, dt, retraction, settings=settings, compile=False)
    assert c.compiled and not v.compiled
    return c, v


@pytest.mark.parametrize("retraction", ["exp", "cayley"])
def test_snakeboard_c_equals_the_numpy_loop(board, retraction):
    system, start, U = board
    c, v = _both(system, H, retraction)
    a, b = c.simulate(*start, forces=U), v.simulate(*start, forces=U)
    for name in ("g", "r", "u", "xi"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=0, atol=1e-12)
    _same_counts(a.iterations, b.iterations)
    assert a.iterations.min() >= 1 and a.iterations.max() <= 5
    assert np.isfinite(a.g).all() and np.abs(a.g[-1, 1:]).max() > 0.1  # the board moved


def test_the_driver_over_compiled_or_vm_functions_equals_the_oracle(board):
    """The oracle over the same compiled residual and update (the benchmark's in-process baseline), and the one
    driver calling the VM's functions back (compile=False): the same iterates and counts."""
    system, start, U = board
    a = ReducedDAlembertPontryagin(system, H).simulate(*start, forces=U)
    oracle = NumpyRDP(system, H)
    assert oracle.functions.compiled("residual")
    vm = ReducedDAlembertPontryagin(system, H, compile=False)
    assert not vm.compiled and not vm.functions.compiled("residual")
    for b in (oracle.simulate(*start, forces=U), vm.simulate(*start, forces=U)):
        np.testing.assert_allclose(a.g, b.g, rtol=0, atol=1e-12)
        _same_counts(a.iterations, b.iterations)


def test_sleigh_c_equals_the_numpy_loop():
    """No shape variables (n_shape = 0): the C loop's empty shape arrays."""
    c, v = _both(sleigh_system(I=1.0, m=1.0, a=0.5), 0.05)
    start = (np.zeros(3), np.zeros(0), np.zeros(0), np.array([1.0, 1.0, 0.5]))
    a, b = c.simulate(*start, steps=500), v.simulate(*start, steps=500)
    np.testing.assert_allclose(a.g, b.g, rtol=0, atol=1e-12)
    _same_counts(a.iterations, b.iterations)
    assert a.r.shape == (501, 0) and a.u.shape == (500, 0)


def test_not_converged_names_the_step_on_both_paths(board):
    system, start, U = board
    for rdp in _both(system, H, settings=NewtonSettings(tol=1e-13, max_iterations=1)):
        with pytest.raises(ConvergenceError) as e:
            rdp.simulate(*start, forces=U)
        assert (e.value.step, e.value.iterations) == (0, 1), rdp.compiled
        assert e.value.residual > 1e-13


def test_nan_force_mid_run_names_its_step_on_both_paths(board):
    system, start, U = board
    U = U.copy()
    U[7, 1] = np.nan
    for rdp in _both(system, H):
        with pytest.raises(ConvergenceError) as e:
            rdp.simulate(*start, forces=U)
        assert e.value.step == 7 and e.value.iterations == 0 and not np.isfinite(e.value.residual)


def test_singular_jacobian_names_the_step_on_both_paths():
    """A reduced system whose symmetry basis e(r) = (r, 0, 0) vanishes at r = 0: at rest there, with a shape force,
    eq. 27's group row is identically zero → SingularityError for step 0 (no step taken on a singular matrix)."""
    system = ReducedSystem(
        "degenerate",
        np.diag([1.0, 2.0, 3.0, 3.0]),
        1,
        basis=lambda r: ca.vertcat(r[0], 0, 0),
        connection=lambda r: ca.SX.zeros(3, 1),
    )
    for rdp in _both(system, 0.1):
        with pytest.raises(SingularityError) as e:
            rdp.simulate(np.zeros(3), np.zeros(1), np.zeros(1), np.array([0.3, 0.0, 0.0]), forces=np.ones((3, 1)))
        assert e.value.step == 0 and "RDP Jacobian" in str(e.value)


@pytest.mark.parametrize("retraction", ["exp", "cayley"])
def test_sleigh_second_order_against_dop853(retraction):
    """The compiled RDP on the bundled sleigh (I = 0.2, m = 1, a = 0.5: urdf/sleigh.urdf) from test_gni_sleigh's
    start — body backing up at 1 m/s, turning at 2 rad/s — converges with order 2.00 ± 0.05 at T = 2 s to SciPy's
    DOP853 of the Lagrange–d'Alembert equations (Pinocchio, written independently of the RDP)."""
    sleigh = load_bundled("sleigh")
    T, hs = 2.0, np.array([0.04, 0.02, 0.01, 0.005])
    ref = solve_ivp(
        NonholonomicODE(sleigh).rhs,
        (0, T),
        np.array([0.0, 0.0, 0.0, -1.0, 1.0, 2.0]),
        method="DOP853",
        rtol=1e-12,
        atol=1e-12,
    ).y[:3, -1]  # (x, y, θ), CoM velocity (-1, a·2), θ̇ = 2
    err = []
    for h in hs:
        rdp = ReducedDAlembertPontryagin(sleigh_system(I=0.2, m=1.0, a=0.5), h, retraction)
        assert rdp.compiled
        g = rdp.simulate(np.zeros(3), np.zeros(0), np.zeros(0), np.array([2.0, -1.0, 1.0]), steps=int(round(T / h))).g[
            -1
        ]
        err.append(np.abs(g[[1, 2, 0]] - ref).max())
    order = np.log2(np.array(err[:-1]) / np.array(err[1:]))
    assert np.all(np.abs(order - 2.0) < 0.05), (err, order)


def test_bad_start_and_step_count_are_refused_by_name(board):
    system, start, U = board
    rdp = ReducedDAlembertPontryagin(system, H)
    g0, r0, rdot0, xi0 = start
    for args, kwargs, word in (
        ((g0[:2], r0, rdot0, xi0), dict(forces=U), "g0 must have 3 entries"),
        ((g0, r0, rdot0[:1], xi0), dict(forces=U), "rdot0 must have 2 entries"),
        ((g0, r0, rdot0, [np.nan, 0, 0]), dict(forces=U), "xi0 must be finite"),
        ((g0, r0, rdot0, xi0), dict(forces=U[:, :1]), "forces must have shape (N, 2)"),
        ((g0, r0, rdot0, xi0), dict(steps=-1), "steps must be a non-negative integer"),
        ((g0, r0, rdot0, xi0), dict(steps=2.5), "steps must be a non-negative integer"),
        ((g0, r0, rdot0, xi0), {}, "needs forces"),
    ):
        with pytest.raises(ValueError) as e:
            rdp.simulate(*args, **kwargs)
        assert word in str(e.value), (word, str(e.value))
    assert rdp.simulate(*start, steps=0).g.shape == (1, 3)  # no step: the start alone


def test_reduced_system_inertia_is_validated():
    """ℓ = ½ wᵀ𝕄w must be a kinetic energy: a wrong size, an asymmetric or indefinite 𝕄 is refused by name."""
    zero3 = lambda r: ca.SX.zeros(3, 1)  # noqa: E731
    for M, n, word in (
        (np.eye(3), 1, "finite (4, 4) matrix"),
        (np.diag([1.0, 1, 1, np.inf]), 1, "finite"),
        (np.eye(4) + np.triu(np.ones((4, 4)), 1), 1, "symmetric"),
        (np.diag([1.0, -1, 1, 1]), 1, "positive definite"),
        (np.eye(3), -1, "n_shape"),
    ):
        with pytest.raises(ValueError, match=re.escape(word)):
            ReducedSystem("bad", M, n, basis=lambda r: ca.vertcat(1, 0, 0), connection=zero3)
    assert ReducedSystem("ok", np.eye(4), 1, basis=lambda r: ca.vertcat(1, 0, 0), connection=zero3).inertia.shape == (
        4,
        4,
    )
