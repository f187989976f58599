"""The midpoint step's derivatives by the tree's recursion (mechanics/csrc/tree_derivatives.c) against CasADi's
automatic differentiation of the same L_d (the generated 'linearize' and 'hessian', evaluated in CasADi's VM: an
independent derivation of the same second and third derivatives), on chains, a branched tree, prismatic joints, a
free-flyer base of six virtual joints with massless links, and the panda; and which steps it covers (the rest keep
the generated functions)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from vi_control.integrators.gni import GeometricNonholonomicIntegrator as GNI
from vi_control.integrators.midpoint import MidpointVI
from vi_control.mechanics.discrete import DiscreteSystemStructure, tree_model
from vi_control.model.bundled import example_robot_urdf, load_bundled
from vi_control.model.generate import planar_chain_urdf
from vi_control.model.spec import load_robot
from vi_control.planning import compiled

_P = ctypes.c_void_p


def _kernel(name: str, argtypes: list):
    """(the planner's kernel library, its C function ``name`` typed with ``argtypes``)."""
    lib = compiled.kernel_library()
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = ctypes.c_int, argtypes
    return lib, fn


def tree_hessian(s: DiscreteSystemStructure, y: np.ndarray, z: np.ndarray, cov: np.ndarray, mu: np.ndarray):
    """H (nw × nw) over w = (y, z) of cov·O + mu·R by vi_tree_hessian, as the DDP kernel calls it."""
    i8 = ctypes.c_longlong
    lib, fn = _kernel("vi_tree_hessian", [_P, _P, ctypes.c_double, _P, _P, _P, _P, _P, i8, i8, i8, _P])
    ints, reals = tree_model(s.robot)
    nw, n = s.ny + s.nz, s.nq
    H, work = np.full(nw * nw, np.nan), np.full(lib.vi_tree_workspace(n), np.nan)
    args = [np.ascontiguousarray(a, float) for a in (z[:n], y[:n], mu, cov[n:])]
    ptr = [a.ctypes.data for a in (ints, reals)]
    assert fn(*ptr, s.dt, *[a.ctypes.data for a in args], H.ctypes.data, nw, 0, s.ny, work.ctypes.data) == 0
    return H.reshape(nw, nw).T  # (column-major, as CasADi's)


def tree_linearize(s: DiscreteSystemStructure, y: np.ndarray, z: np.ndarray) -> list[np.ndarray]:
    """(R_y, R_z, O_y, O_z) by vi_tree_linearize, as the generated 'linearize' returns them."""
    lib, fn = _kernel("vi_tree_linearize", [_P, _P, ctypes.c_double, _P, _P, _P, _P, _P, _P, _P])
    ints, reals = tree_model(s.robot)
    n = s.nq
    shapes = ((s.ny, s.ny), (s.ny, s.nz), (s.nx, s.ny), (s.nx, s.nz))
    out = [np.full(a * b, np.nan) for a, b in shapes]
    work = np.full(lib.vi_tree_workspace(n), np.nan)
    q0, q1 = (np.ascontiguousarray(a[:n], float) for a in (z, y))
    ptrs = [a.ctypes.data for a in (ints, reals)]
    assert fn(*ptrs, s.dt, q0.ctypes.data, q1.ctypes.data, *[o.ctypes.data for o in out], work.ctypes.data) == 0
    return [o.reshape(b, a).T for o, (a, b) in zip(out, shapes, strict=True)]


def generated_hessian(s: DiscreteSystemStructure, y, z, cov, mu) -> np.ndarray:
    return np.array(s.functions.raw["hessian"](y, z, cov, mu))


ROBOTS = {
    "pendulum": lambda: load_bundled("pendulum"),
    "cartpole": lambda: load_bundled("cartpole"),  # a prismatic joint at the root
    "acrobot": lambda: load_bundled("acrobot"),
    "chain10": lambda: load_bundled("chain10"),
    "biped5": lambda: load_bundled("biped5"),  # two legs from one torso: pairs on different branches
    "arm7": lambda: load_bundled("arm7"),
    "panda": lambda: load_robot(example_robot_urdf("panda")),
    "panda_free_flyer": lambda: load_robot(example_robot_urdf("panda"), floating_base=True),  # 6 virtual joints
}


@pytest.fixture(scope="module", params=sorted(ROBOTS))
def structure(request):
    return DiscreteSystemStructure(ROBOTS[request.param](), 0.05, eager=False)  # (symbolic: nothing compiled)


def test_the_recursion_is_the_generated_hessian(structure):
    """Random states, inputs, covectors and multipliers, and a pose at rest with large angles: every entry of H equal
    to the generated one to round-off (relative to its largest entry)."""
    s = structure
    assert s.recursive_derivatives
    rng = np.random.default_rng(7)
    draws = [tuple(rng.standard_normal(k) for k in (s.ny, s.nz, s.nx, s.ny)) for _ in range(4)]
    q = 3.0 * rng.uniform(-1, 1, s.nq)  # at rest (q_{k+1} = q_k) far from the zero pose
    draws.append((q, np.concatenate([q, np.zeros(s.nz - s.nq)]), rng.standard_normal(s.nx), rng.standard_normal(s.ny)))
    for y, z, cov, mu in draws:
        want = generated_hessian(s, y, z, cov, mu)
        got = tree_hessian(s, y, z, cov, mu)
        assert np.all(np.isfinite(got))
        assert np.abs(got - want).max() <= 1e-12 * np.abs(want).max(), np.abs(got - want).max() / np.abs(want).max()
    # only the (q_{k+1}, q_k) blocks: momenta and inputs enter the step linearly
    n = s.nq
    mask = np.zeros((s.ny + s.nz,) * 2, bool)
    for a in (np.arange(n), s.ny + np.arange(n)):
        for b in (np.arange(n), s.ny + np.arange(n)):
            mask[np.ix_(a, b)] = True
    assert np.all(got[~mask] == 0.0)


def test_the_first_derivatives_by_recursion_are_the_generated_ones(structure):
    """R_y, R_z, O_y, O_z of the step (damping and the actuated joints' input columns included) equal to the generated
    'linearize' to round-off, at random states and inputs and at rest far from the zero pose."""
    s = structure
    rng = np.random.default_rng(11)
    draws = [(rng.standard_normal(s.ny), rng.standard_normal(s.nz)) for _ in range(4)]
    q = 3.0 * rng.uniform(-1, 1, s.nq)
    draws.append((q, np.concatenate([q, rng.standard_normal(s.nz - s.nq)])))
    for y, z in draws:
        want = [np.array(m) for m in s.functions.raw["linearize"](y, z)]
        got = tree_linearize(s, y, z)
        for name, g, w in zip(("R_y", "R_z", "O_y", "O_z"), got, want, strict=True):
            assert g.shape == w.shape and np.all(np.isfinite(g)), name
            assert np.abs(g - w).max() <= 1e-12 * max(1.0, np.abs(w).max()), (name, np.abs(g - w).max())


def test_the_recursion_is_linear_in_the_covector_and_the_multipliers():
    """H(c·λ₁ + λ₂) = c·H(λ₁) + H(λ₂) for (cov, mu) — a property of the contraction, not of the model."""
    s = DiscreteSystemStructure(load_bundled("biped5"), 0.01, eager=False)
    rng = np.random.default_rng(3)
    y, z = rng.standard_normal(s.ny), rng.standard_normal(s.nz)
    (c1, m1), (c2, m2) = [(rng.standard_normal(s.nx), rng.standard_normal(s.ny)) for _ in range(2)]
    lhs = tree_hessian(s, y, z, 2.5 * c1 + c2, 2.5 * m1 + m2)
    rhs = 2.5 * tree_hessian(s, y, z, c1, m1) + tree_hessian(s, y, z, c2, m2)
    assert np.abs(lhs - rhs).max() <= 1e-12 * np.abs(lhs).max()
    assert np.all(tree_hessian(s, y, z, np.zeros(s.nx), np.zeros(s.ny)) == 0.0)


def _marionette():  # (prescribed strings and holonomic constraints)
    return load_bundled("marionette")


def _chain_prescribed():  # (a prescribed joint and nothing else the recursion lacks)
    return load_robot(planar_chain_urdf(3), {"prescribed": ["joint1"]})


@pytest.mark.parametrize(
    "make, build",
    [
        pytest.param(lambda: MidpointVI(load_bundled("fourbar"), 0.02), True, id="holonomic constraints"),
        pytest.param(lambda: GNI(load_bundled("diffdrive"), 0.05), True, id="nonholonomic (GNI)"),
        pytest.param(lambda: MidpointVI(_chain_prescribed(), 0.01), True, id="prescribed joint"),
        # (its generated 'hessian' takes minutes of gcc on a cold cache: the decision alone)
        pytest.param(lambda: DiscreteSystemStructure(_marionette(), 0.02, eager=False), False, id="marionette"),
    ],
)
def test_steps_the_recursion_does_not_cover_keep_the_generated_hessian(make, build):
    """Constraint rows, prescribed joints and the GNI's projections add terms only the generated 'hessian' has: no
    tree model, and the DDP kernel gets the generated function's address."""
    system = make()
    s = getattr(system, "structure", system)
    assert not s.recursive_derivatives
    if build:
        kernel = s.step_kernel(True)
        assert kernel.tree is None and kernel.hessian != 0 and kernel.linearize != 0


def test_the_trapezoidal_lagrangian_is_not_covered():
    s = DiscreteSystemStructure(load_bundled("acrobot"), 0.01, lagrangian="trapezoidal_se3", eager=False)
    assert not s.recursive_derivatives
