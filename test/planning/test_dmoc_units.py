"""DMOC (Jimenez2013, Alg. 5.2) does not depend on the unit of mass.

Masses, inertias and drag × s leave the optimal velocities ξ_k unchanged and the inputs × s: the conditions (31) are
homogeneous in the mass row by row. Newton solves them in the units of a unit body (``dmoc_conditions.unit_scales``),
so its decisions and its stopping test ‖F‖∞ ≤ tol are the same at every s; the reference is the unscaled body.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse.csgraph import structural_rank

from vi_control.model.rigid_body import load_rigid_body
from vi_control.planning.dmoc import DMOCError, DMOCProblem, geodesic_guess, solve_dmoc
from vi_control.planning.dmoc_conditions import entry_scales, unit_scales
from vi_control.planning.dmoc_problem import DMOCConditions, initial_point
from vi_control.planning.vehicle import maneuver_settings, maneuvers, pose_from_spec


def _solve(name: str, s: float, which: int):
    body = load_rigid_body(name, mass_scale=s, drag_scale=s)
    st = maneuver_settings(body)
    _, g0, gT = list(maneuvers(body))[which]
    return solve_dmoc(DMOCProblem(body, g0, gT, st.horizon, st.duration, st.retraction), fallback=None)


@pytest.mark.parametrize("name, which", [("spacecraft", 0), ("vehicle_uuv", 0), ("vehicle_uuv", 2)])
def test_a_light_body_is_planned_as_in_kilograms(name, which):
    """× 2⁻³⁰ with the stopping test in SI units: the spacecraft stopped at its initial guess (‖F‖∞ 5e-17, the plan
    93 % off in u), the vehicle after 30 iterations unconverged."""
    s = 2.0**-30
    r1, r = _solve(name, 1.0, which), _solve(name, s, which)
    assert r1.converged and r.converged and r.iterations == r1.iterations, (r.iterations, r1.iterations)
    assert np.abs(r.xi - r1.xi).max() < 1e-12
    assert np.abs(r.u_minus / s - r1.u_minus).max() < 1e-12 * np.abs(r1.u_minus).max()


@pytest.mark.parametrize("name, which", [("spacecraft", 0), ("vehicle_uuv", 2)])
def test_a_heavy_body_is_planned_as_in_kilograms(name, which):
    """× 2¹⁰ (a 1–2.5 t·m² spacecraft) and × 2¹⁹, with the stopping test in SI units: 30 iterations, reported
    unconverged (‖F‖∞ 6e-9 and 1.5e-3, the E rows ∝ p² cannot reach 1e-11), the plan right to 1e-15 all along."""
    r1 = _solve(name, 1.0, which)
    for s in (2.0**10, 2.0**19):
        r = _solve(name, s, which)
        assert r1.converged and r.converged and r.iterations == r1.iterations, (s, r.iterations, r1.iterations)
        assert np.abs(r.xi - r1.xi).max() < 1e-12
        assert np.abs(r.u_minus / s - r1.u_minus).max() < 1e-12 * np.abs(r1.u_minus).max()


@pytest.mark.parametrize("s", [2.0**-10, 2.0**10])
def test_the_scaled_newton_matrix_keeps_its_structure(s, monkeypatch):
    """The scaled J is diag(1/rows)·J·diag(cols) on J's fixed structure, zeros included: at a heave goal J is
    singular by symmetry and, built by sparse products, structurally singular (rank 600 of 602), where SuperLU read
    uninitialized memory and crashed the process in 1 run of 4. Every matrix Newton factors there is structurally
    regular, and the goal is refused with its cause at every s."""
    from vi_control.integrators import make_integrator
    from vi_control.planning import dmoc_newton
    from vi_control.planning.vehicle import plan_maneuver

    body = load_rigid_body("vehicle_uuv", mass_scale=s, drag_scale=s)
    st = maneuver_settings(body)
    up = pose_from_spec({"position": [0.0, 0.0, 1.0]}, "SE3")
    prob = DMOCProblem(body, np.eye(4), up, st.horizon, st.duration, st.retraction)
    cond = DMOCConditions(prob)
    _, parts = cond.evaluate(initial_point(cond, geodesic_guess(prob)), jacobian=False)
    J = cond.jacobian(parts)
    rs, cs = unit_scales(cond.N, cond.n, cond.c, body.unit_momentum)
    Js = J.copy()
    Js.data *= entry_scales(cond.structure, rs, cs)
    assert (J.data == 0).sum() > 0  # the case: entries zero at this point, kept in the structure
    np.testing.assert_allclose(Js.toarray(), (J.toarray() / rs[:, None]) * cs[None, :], rtol=1e-14, atol=0)
    ranks, splu = [], dmoc_newton.splu
    monkeypatch.setattr(dmoc_newton, "splu", lambda A: (ranks.append((structural_rank(A), A.shape[0])), splu(A))[1])
    with pytest.raises(DMOCError, match="unactuated direction"):
        plan_maneuver(make_integrator("lie_group", body, st.dt), up)
    assert ranks and all(r == n for r, n in ranks), ranks
