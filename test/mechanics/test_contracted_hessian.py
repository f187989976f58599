"""The step's generated 'hessian' — the second-order term contracted with a covector (Johnson2015, eqs. 16–27), built
as the Hessian of L_d's directional derivative (``discrete.directional_lagrangian``) — against the Hessian of
cov·O + mu·R taken over the step's own generated residual and output, with CasADi's AD on those functions: the
contraction as the equations define it, built independently of how L_d enters them."""

import casadi as ca
import numpy as np
import pytest

from vi_control.mechanics.discrete import DiscreteSystemStructure, directional_lagrangian
from vi_control.model.bundled import load_bundled

# pendulum (one joint), cart-pole (a prismatic joint), acrobot (an unactuated joint), four-bar (holonomic
# constraints: multipliers among the unknowns), marionette (prescribed joints: inputs that are positions, and
# constraints), arm7 (7 DOF with damping)
MODELS = ["pendulum", "cartpole", "acrobot", "fourbar", "marionette", "arm7"]


def _oracle(fns) -> ca.Function:
    R, O, H = fns["residual_only"], fns["output"], fns["hessian"]
    y, z = ca.SX.sym("y", H.size1_in(0)), ca.SX.sym("z", H.size1_in(1))
    cov, mu = ca.SX.sym("cov", H.size1_in(2)), ca.SX.sym("mu", H.size1_in(3))
    lagr = ca.dot(cov, O(y, z)) + ca.dot(mu, R(y, z))
    return ca.Function("oracle", [y, z, cov, mu], [ca.densify(ca.hessian(lagr, ca.vertcat(y, z))[0])])


def _compare(structure, seed: int = 0) -> float:
    fns = structure.functions.raw
    H, oracle = fns["hessian"], _oracle(fns)
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(5):
        args = [rng.uniform(-1, 1, H.size1_in(i)) for i in range(4)]
        a, b = np.array(H(*args)), np.array(oracle(*args))
        worst = max(worst, np.abs(a - b).max() / (1.0 + np.abs(b).max()))
    return worst


@pytest.mark.parametrize("name", MODELS)
def test_the_contracted_hessian_is_the_equations_own(name):
    robot = load_bundled(name)
    structure = DiscreteSystemStructure(robot, 0.01, compile=False)
    assert _compare(structure) <= 1e-12


def test_the_trapezoidal_lagrangian_and_a_nonholonomic_step_too():
    """The linear-time VI's SE(3) Lagrangian (a Function of both configurations) takes the directional form too; the
    GNI's nonholonomic residual (M⁻¹A-weighted D₁L_d: a coefficient that depends on q_k) keeps the contraction as it
    is — both equal the oracle."""
    trapezoidal = DiscreteSystemStructure(load_bundled("arm7"), 0.01, compile=False, lagrangian="trapezoidal_se3")
    assert _compare(trapezoidal) <= 1e-12
    sleigh = DiscreteSystemStructure(load_bundled("sleigh"), 0.01, compile=False, nonholonomic=True)
    assert _compare(sleigh) <= 1e-12


def test_a_step_not_linear_in_the_gradients_is_refused():
    q0, q1 = ca.SX.sym("q0", 2), ca.SX.sym("q1", 2)
    cov, mu = ca.SX.sym("cov", 4), ca.SX.sym("mu", 2)

    def Ld_of(a, b):
        return ca.dot(b - a, b - a) + ca.sin(a[0])

    def linear(D1, D2):
        return D1 + q0, ca.vertcat(q1, D2)

    def squared(D1, D2):
        return D1 * D1, ca.vertcat(q1, D2)

    lagr = directional_lagrangian(linear, Ld_of, q0, q1, cov, mu)
    D1 = ca.gradient(Ld_of(q0, q1), q0)
    D2 = ca.gradient(Ld_of(q0, q1), q1)
    direct = ca.dot(cov, ca.vertcat(q1, D2)) + ca.dot(mu, D1 + q0)
    w = ca.vertcat(q0, q1, cov, mu)
    f = ca.Function("f", [w], [ca.hessian(lagr, ca.vertcat(q0, q1))[0] - ca.hessian(direct, ca.vertcat(q0, q1))[0]])
    assert np.abs(np.array(f(np.linspace(-1, 1, 10)))).max() <= 1e-14
    with pytest.raises(ValueError, match="not linear in L_d's gradients"):
        directional_lagrangian(squared, Ld_of, q0, q1, cov, mu)
