"""DMOC (seed 002 Alg. 5.2) does not depend on the unit of mass, for bodies lighter than 1 kg·m² at unit velocity.

Masses, inertias and drag × s leave the optimal velocities ξ_k unchanged and the inputs × s: the conditions (31) are
homogeneous in the mass row by row. Newton solves them in the units of a unit body (``dmoc_conditions.unit_scales``),
so its decisions and its stopping test ‖F‖∞ ≤ tol are the same at every s ≤ 1/p; the reference is the unscaled body.
"""

from __future__ import annotations

import numpy as np
import pytest

from vi_control.model.rigid_body import load_rigid_body
from vi_control.planning.dmoc import DMOCProblem, solve_dmoc
from vi_control.planning.vehicle import maneuver_settings, maneuvers


def _solve(name: str, s: float, which: int):
    body = load_rigid_body(name, mass_scale=s, drag_scale=s)
    st = maneuver_settings(body)
    _, g0, gT = list(maneuvers(body))[which]
    return solve_dmoc(DMOCProblem(body, g0, gT, st.horizon, st.duration, st.retraction), fallback=None)


@pytest.mark.parametrize("name, which", [("spacecraft", 0), ("vehicle_uuv", 0), ("vehicle_uuv", 2)])
def test_a_light_body_is_planned_as_in_kilograms(name, which):
    """× 2⁻³⁰ with the stopping test in SI units: the spacecraft stopped at its initial guess (‖F‖∞ 5e-17, the plan
    93 % off in u), the vehicle after 30 iterations unconverged."""
    s = 2.0 ** -30
    r1, r = _solve(name, 1.0, which), _solve(name, s, which)
    assert r1.converged and r.converged and r.iterations == r1.iterations, (r.iterations, r1.iterations)
    assert np.abs(r.xi - r1.xi).max() < 1e-12
    assert np.abs(r.u_minus / s - r1.u_minus).max() < 1e-12 * np.abs(r1.u_minus).max()
