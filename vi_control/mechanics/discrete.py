"""The discrete mechanical system of Johnson2015: midpoint L_d, forcing, the DEL residual and its derivatives.

Notation (Johnson2015, §II, §VI, eqs. 2 and 28). State x_k = (q_k, p_k) with q the full configuration
(joint order of the RobotModel). For prescribed (kinematic) joints the "momentum" slot holds the
kinematic velocity (ρ_k − ρ_{k−1})/Δt, as trep did, so nx = 2·nq (the marionette's 80 states).
Input u_k = (τ_k for the actuated joints, ρ_{k+1} for the prescribed joints).

Unknowns of one step y = (q_{k+1}[dynamic], λ_k); parameters z = (q_k, p_k, τ_k, ρ_{k+1}):

    R(y, z) = [ p_k + D₁L_d(q_k, q_{k+1}) + F⁻_d − Dh(q_k)ᵀ λ_k ]_dyn   (eq. 28a; eq. 2a if no h)
              h(q_{k+1})                                              (eq. 28b)
    x_{k+1} = O(y, z) = (q_{k+1}, D₂L_d(q_k, q_{k+1}) + F⁺_d)          (eq. 28c / 2b), F⁺_d = 0

with L_d(q_k, q_{k+1}) = Δt·L((q_k+q_{k+1})/2, (q_{k+1}−q_k)/Δt) (eq. 3a) and
F⁻_d = Δt·(S τ_k − c ⊙ (q_{k+1}−q_k)/Δt) (midpoint rule; §II-A). ∂R/∂y is M_{k+1} (eq. 8)
bordered by the constraint Jacobians.

With ``nonholonomic=True`` (the GNI of Kobilarov2010, eqs. 5 and 16, for the velocity constraints A(q)q̇ = 0 of the
system YAML) the unknowns gain the nonholonomic multipliers, y = (q_{k+1}[dyn], λ_k, ν_k), and

    R_dyn += A(q_k)ᵀ ν_k                                   (eq. 5a: P*(D₁L_d + D₂L_d + F) = 0; forcing as eq. 16)
    R_nh   = A(q_k) M(q_k)⁻¹ (p_k − D₁L_d(q_k, q_{k+1}))   (eq. 5b: Q*(D₁L_d − D₂L_d) = 0, the mean of the
                                                             pre- and post-momenta satisfies the constraints)

and the output momentum is written as the momentum update of eq. 16, p_{k+1} = p_k + F⁻_d − Dhᵀλ + Aᵀν
+ (D₁L_d + D₂L_d)(q_k, q_{k+1}) (= D₂L_d + R_dyn, so D₂L_d at the root): the new momentum is the old one plus
impulses, not a difference of q_{k+1} − q_k, which loses |q|·eps/Δt when |q| ≫ |Δq| (a sleigh far from the
origin would lose exact energy conservation to that rounding). Adding a multiple of R to O changes no
derivative of the implicit map (linearization module docstring).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

import casadi as ca
import numpy as np

from ..model.limits import MAX_CONFIGURATION, check_time_step
from ..model.mass_structure import spin_invariant_joints
from ..model.robot import RobotModel
from .codegen import FunctionSet
from .graph_lock import OwnsGraphs, builds_graph
from .lagrangians import discrete_lagrangian
from .symbolic import SymbolicTree, build_tree, constraint_expr, nonholonomic_expr

# Our own C: small dense LU/condition helpers (shared with the planner's kernel, planning.compiled) and the Newton
# driver, the one implementation of a midpoint-type step's Newton iteration: compiled into the same library as the
# generated residual/output/mass, or, where those run in the CasADi VM, once for any model over callbacks
# (codegen.FunctionSet).
DENSE_LU_C = (resources.files(__package__) / "csrc" / "dense_lu.c").read_text()
NEWTON_C = DENSE_LU_C + (resources.files(__package__) / "csrc" / "newton_driver.c").read_text()
# Products and LU solves of many right-hand sides, for the LQR (control.lqr) and DDP (planning.compiled) libraries;
# not in NEWTON_C, so every model's generated library (its cache entry) stays as it was.
DENSE_MM_C = (resources.files(__package__) / "csrc" / "dense_mm.c").read_text()
# A midpoint step's first derivatives and second-order term over a kinematic tree by recursion (for the DDP kernel,
# planning.compiled): faster than the generated 'linearize' and 'hessian' on spatial arms (panda: 2.1× and 2.5× in C),
# and nothing to compile per model.
TREE_DERIVATIVES_C = (resources.files(__package__) / "csrc" / "tree_derivatives.c").read_text()
# VI_CONTROL_RECURSIVE_DERIVATIVES=0 (or False here) keeps the generated functions in the DDP kernel for every system.
# Each recursion costs ~0.2 µs ('linearize') and ~0.35 µs ('hessian') per joint here; a generated function runs at
# ~0.07-0.2 ns per CasADi instruction, which a planar chain keeps few (7 links: 9 212 for 'linearize', 10 330 for
# 'hessian', faster than the recursion) and a spatial arm does not (panda: 25 719 and 28 595, 2-2.5× slower).
# Measured in C for chains of 1-7 links, the acrobot, cart-pole, biped5, arm7 and panda
# (benchmarks/bench_tree_derivatives.py): the recursion is the faster wherever the generated function exceeds this
# many instructions per joint.
TREE_INSTRUCTIONS_PER_JOINT = 2000
RECURSIVE_DERIVATIVES = os.environ.get("VI_CONTROL_RECURSIVE_DERIVATIVES", "1") != "0"

# Generated functions the C driver calls.
STEP_FUNCTIONS = ("residual", "residual_only", "output", "mass")

# Return codes of vi_newton_step.
(
    NEWTON_OK,
    NEWTON_NOT_CONVERGED,
    NEWTON_SINGULAR,
    NEWTON_NONFINITE,
    NEWTON_SINGULAR_MASS,
    NEWTON_OUT_OF_RANGE,
    NEWTON_UNTRUSTED,
) = range(7)


@dataclass(frozen=True)
class StepKernel:
    """Addresses and layout of one step's compiled pieces, for our own C that loops over whole trajectories
    (planning.compiled): ``vi_newton_step`` of the model's library and the generated 'linearize' and 'hessian'
    (0 when not requested, or where ``tree`` replaces them), with work-buffer sizes covering all of them (``n_ws``: the
    Newton driver's own). ``tree``: (ints, reals) of ``tree_model`` where the recursion of tree_derivatives.c
    computes 'linearize' or 'hessian' instead (``DiscreteSystemStructure.recursive``), else None."""

    newton: int
    linearize: int
    hessian: int
    n_iw: int
    n_w: int
    n_ws: int
    nq: int
    nd: int
    nk: int
    nc: int
    ny: int
    nz: int
    nx: int
    n_inputs: int
    dt: float
    idx: np.ndarray  # (idx_d, idx_k), int64
    rot: np.ndarray  # (nd + 1,) int64: the driver's revolute flags (untrusted-root check), padded
    max_configuration: float  # |q_i| the driver accepts
    tree: tuple[np.ndarray, np.ndarray] | None = None  # the tree's model where linearize or hessian is 0
    second_order: bool = True  # the second-order term is available (generated 'hessian' or the tree's)


def tree_model(robot: RobotModel) -> tuple[np.ndarray, np.ndarray]:
    """The kinematic tree as ``csrc/tree_derivatives.c`` reads it: ints (n, nu, parents (−1: the root), prismatic flags,
    the actuated joint of each input) and reals (gravity, joint damping, then per joint its placement's rotation
    (row-major) and translation, axis, mass, centre of mass and inertia about it) — Pinocchio's model, as
    ``symbolic.build_tree`` reads it, and the forcing of the step's residual."""
    m = robot.pin_model
    names = robot.joint_names
    ints = [m.nq, len(robot.actuated)] + [m.parents[i] - 1 for i in range(1, m.njoints)]
    ints += [int(robot.joints[i - 1].type == "prismatic") for i in range(1, m.njoints)]
    ints += [names.index(a) for a in robot.actuated]
    reals = [np.asarray(robot.gravity, float), np.asarray(robot.damping, float)]
    for i in range(1, m.njoints):
        X, inertia = m.jointPlacements[i], m.inertias[i]
        reals += [X.rotation.ravel(), X.translation, np.asarray(robot.joints[i - 1].axis, float)]
        reals += [[inertia.mass], inertia.lever, inertia.inertia.ravel()]
    return np.array(ints, np.int64), np.concatenate([np.asarray(r, float).ravel() for r in reals])


class NewtonStepC:
    """One ctypes call per step into ``vi_newton_step`` with preallocated buffers (DESIGN.md: ~1 µs/call).

    ``z`` (views ``z_x``, ``z_u``) and ``y`` are written by the caller before ``run``; ``xn``, ``y`` and ``info``
    (residual norm, iterations, rcond) are read after it. Settings are copied into the C buffers only when they
    change: each numpy scalar write costs ~0.1 µs, a sizeable share of a ~10 µs step.
    """

    def __init__(self, s: DiscreteSystemStructure):
        lib, fns = s.functions.lib, s.functions
        self.generated = fns.driver_generated  # False: the driver calls the CasADi VM back
        n_iw, n_w = fns.work_sizes(STEP_FUNCTIONS)
        lib.vi_newton_workspace.restype = ctypes.c_longlong
        n_ws = lib.vi_newton_workspace(ctypes.c_longlong(s.nq), ctypes.c_longlong(s.ny))
        self.z, self.y, self.xn = np.zeros(s.nz), np.zeros(s.ny), np.zeros(s.nx)
        self.ip = np.array([s.nq, s.nd, s.nk, s.nc, s.nz, 0, 1, 0, 0], dtype=np.int64)
        self.dp = np.array([s.dt, 0.0, 0.0, 0.0, np.pi, MAX_CONFIGURATION, 1.0])
        self.info = np.zeros(3)
        free = spin_invariant_joints(s.robot)  # wheels: no per-step rotation limit (integrators.base)
        rot = np.array(
            [
                s.robot.joints[i].type in ("revolute", "continuous") and s.robot.joints[i].name not in free
                for i in s.idx_d
            ],
            dtype=np.int64,
        )
        self._keep = [
            np.concatenate([s.idx_d, s.idx_k]).astype(np.int64),
            np.zeros(n_iw, dtype=np.int64),
            np.zeros(n_w),
            np.zeros(n_ws),
            np.zeros(max(s.ny, 1), dtype=np.int64),
        ]
        self.rot = np.concatenate([rot, [0]])  # never empty: ctypes needs an address
        bufs = [self.z, self.y, self.xn, self.ip, self.dp, *self._keep, self.info, self.rot]
        self._packed = (ctypes.c_void_p * len(bufs))(*[b.ctypes.data for b in bufs])
        self._fn = fns.driver_function("vi_newton_step_packed")
        getattr(self._fn, "c_function", self._fn).restype = ctypes.c_int
        # (max_iterations, tol, rcond_min, theta_max, root_check, max_rotation, momentum_scale) as in ip, dp
        self._settings: tuple = (0, 0.0, 0.0, 0.0, False, np.pi, 1.0)
        self._source = None  # the NewtonSettings they came from (use_settings)
        self._mode = (True, False)  # (use_guess, chord) as in ip
        self.z_x, self.z_u = self.z[: s.nx], self.z[s.nx :]  # views: x_k and u_k are written here

    def configure(
        self,
        max_iterations: int,
        tol: float,
        rcond_min: float,
        theta_max: float,
        root_check: bool = False,
        max_rotation: float = np.pi,
        momentum_scale: float = 1.0,
    ) -> None:
        """Copy the Newton settings into the C buffers, if they differ from what the buffers hold."""
        settings = (max_iterations, tol, rcond_min, theta_max, root_check, max_rotation, momentum_scale)
        if settings != self._settings:
            self.ip[5], self.ip[8] = max_iterations, root_check
            self.dp[1], self.dp[2], self.dp[3], self.dp[4] = tol, rcond_min, theta_max, max_rotation
            self.dp[6] = momentum_scale
            self._settings, self._source = settings, None

    def use_settings(self, st, theta_max: float, root_check: bool = False) -> None:
        """``configure`` from a NewtonSettings (frozen): skipped when the same object, rate and check were used
        last."""
        if st is not self._source or theta_max != self._settings[3] or root_check != self._settings[4]:
            self.configure(st.max_iterations, st.tol, st.rcond_min, theta_max, root_check, st.max_rotation, st.p_unit)
            self._source = st

    def run(self, use_guess: bool, chord: bool) -> int:
        """One step with the configured settings; the return code of vi_newton_step."""
        if (use_guess, chord) != self._mode:
            self.ip[6], self.ip[7] = use_guess, chord
            self._mode = (use_guess, chord)
        return self._fn(self._packed)

    def __call__(
        self,
        max_iterations: int,
        tol: float,
        rcond_min: float,
        use_guess: bool,
        chord: bool = False,
        theta_max: float = 0.0,
        root_check: bool = False,
        max_rotation: float = np.pi,
    ) -> int:
        """``configure`` and ``run``."""
        self.configure(max_iterations, tol, rcond_min, theta_max, root_check, max_rotation)
        return self.run(use_guess, chord)


@builds_graph
def directional_lagrangian(
    equations: Callable[[ca.SX, ca.SX], tuple[ca.SX, ca.SX]],
    Ld_of: Callable[[ca.SX, ca.SX], ca.SX],
    q0: ca.SX,
    q1: ca.SX,
    cov: ca.SX,
    mu: ca.SX,
) -> ca.SX:
    """cov·O + mu·R of a step whose residual R and output O depend on L_d(q_k, q_{k+1}) through its two gradients
    alone, linearly, with coefficients (a, b) that are functions of (cov, mu) — the scalar whose Hessian over the
    step's unknowns and inputs is its second-order term contracted with the covector (Johnson2015, eqs. 16–27). The
    L_d part is written as the directional derivative ∇L_d·(a, b) (``ca.jtimes``) instead of as a·D₁L_d + b·D₂L_d
    over the symbolic gradients: the same values to round-off, and CasADi builds its Hessian from L_d's third
    derivatives in one direction, with ~40 % fewer instructions (panda's L_d part: 28 006 against 45 464).

    ``equations(D1, D2)`` → (R, O) from the gradients w.r.t. q_k and the full q_{k+1}. ValueError if the coefficients
    depend on the gradients (R, O not linear in them: the contraction must then be taken as it is)."""
    nq = q0.numel()
    G0, G1 = ca.SX.sym("G0", nq), ca.SX.sym("G1", nq)
    R, O = equations(G0, G1)
    lg = ca.dot(cov, O) + ca.dot(mu, R)
    a, b = ca.gradient(lg, G0), ca.gradient(lg, G1)
    if ca.depends_on(ca.vertcat(a, b), ca.vertcat(G0, G1)):
        raise ValueError("directional_lagrangian: the step is not linear in L_d's gradients")
    rest = ca.substitute(lg, ca.vertcat(G0, G1), ca.SX.zeros(2 * nq))
    Q0, Q1, A, B = (ca.SX.sym(n, nq) for n in ("Q0", "Q1", "A", "B"))
    dLd = ca.Function("dLd", [Q0, Q1, A, B], [ca.jtimes(Ld_of(Q0, Q1), ca.vertcat(Q0, Q1), ca.vertcat(A, B))])
    return rest + dLd(q0, q1, a, b)


class DiscreteSystemStructure(OwnsGraphs):
    """Symbolic build of every function a step, a linearization and a Hessian needs.

    ``lagrangian``: the discrete Lagrangian (mechanics.lagrangians: 'midpoint', Johnson2015; 'trapezoidal_se3',
    Lee2016). ``eager``: compile the step functions and the Newton driver now (a simulator's need); False
    compiles every function on first use and builds no driver (derivatives for an integrator that steps by
    other means, e.g. LinearTimeVI's DRNEA). ``nonholonomic``: the GNI's rows (module docstring, Kobilarov2010).
    """

    def __init__(
        self,
        robot: RobotModel,
        dt: float,
        tree: SymbolicTree | None = None,
        compile: bool | None = None,
        lagrangian: str = "midpoint",
        eager: bool = True,
        nonholonomic: bool = False,
    ):
        self.robot, self.dt = robot, check_time_step(dt)
        self.nonholonomic = bool(nonholonomic)
        # The recursion of tree_derivatives.c covers this step's derivatives: the midpoint L_d of the robot's own tree,
        # no constraint rows, no prescribed joints (their terms are the generated functions' alone).
        self.recursive_derivatives = (
            tree is None
            and lagrangian == "midpoint"
            and not nonholonomic
            and robot.n_constraints == 0
            and not robot.prescribed
        )
        names = robot.joint_names
        self.idx_d = np.array([i for i, n in enumerate(names) if n not in robot.prescribed], dtype=int)
        self.idx_k = np.array([i for i, n in enumerate(names) if n in robot.prescribed], dtype=int)
        self.idx_act = np.array([names.index(n) for n in robot.actuated], dtype=int)
        nq, nd, nk = robot.nq, len(self.idx_d), len(self.idx_k)
        n_h, n_nh = robot.n_constraints, robot.n_nonholonomic if nonholonomic else 0
        if n_nh and nk:
            raise ValueError(
                f"{robot.name}: nonholonomic constraints with prescribed joints "
                f"{list(robot.prescribed)} are not supported by the GNI"
            )
        nu, nc = len(self.idx_act), n_h + n_nh
        self.nq, self.nd, self.nk, self.nu, self.nc = nq, nd, nk, nu, nc
        self.n_holonomic, self.n_nonholonomic = n_h, n_nh
        self.nx, self.n_inputs, self.ny = 2 * nq, nu + nk, nd + nc
        self.nz = 2 * nq + nu + nk

        # (one build at a time in the process, its temporaries released within: mechanics.graph_lock; the C compiler
        # runs after, unlocked)
        @builds_graph
        def symbolic() -> tuple[dict[str, ca.Function], tuple[str, ...]]:
            nonlocal tree
            tree = tree or build_tree(robot)
            self.tree = tree
            Ld_of = discrete_lagrangian(lagrangian, robot, tree, self.dt)
            h_fn = ca.Function("h", [tree.q], [constraint_expr(robot, tree)])

            q0, p0 = ca.SX.sym("q0", nq), ca.SX.sym("p0", nq)
            tau, rho = ca.SX.sym("tau", nu), ca.SX.sym("rho", nk)
            q1d, lam = ca.SX.sym("q1d", nd), ca.SX.sym("lam", nc)
            Pd, Pk = np.eye(nq)[:, self.idx_d], np.eye(nq)[:, self.idx_k]
            q1 = ca.mtimes(ca.DM(Pd), q1d) + (ca.mtimes(ca.DM(Pk), rho) if nk else 0)
            Ld = Ld_of(q0, q1)
            S = np.eye(nq)[:, self.idx_act]
            c = ca.DM(robot.damping)
            Fm = self.dt * (ca.mtimes(ca.DM(S), tau) if nu else ca.SX.zeros(nq)) - c * (q1 - q0)
            h0 = h_fn(q0)
            Dh0 = ca.jacobian(h0, q0)[:, self.idx_d.tolist()] if n_h else ca.SX.zeros(0, nd)
            M_fn = ca.Function("M", [tree.q], [ca.hessian(tree.kinetic, tree.v)[0]])
            rows_h = ca.jacobian(constraint_expr(robot, tree), tree.q) if n_h else ca.SX.zeros(0, nq)
            A_sym = nonholonomic_expr(robot, tree) if nonholonomic else ca.SX.zeros(0, nq)
            A0 = ca.Function("A", [tree.q], [A_sym])(q0) if n_nh else None
            idx_d, idx_k = self.idx_d.tolist(), self.idx_k.tolist()

            def equations(D1Ld, D2Ld):
                """(R, O) of the step — residual (Johnson2015, eqs. 2, 28) and output x_{k+1} — from the two
                gradients of L_d(q_k, q_{k+1}): D1Ld w.r.t. q_k, D2Ld w.r.t. the full q_{k+1} (only its dynamic rows
                are momenta)."""
                R_dyn = (p0 + D1Ld + Fm)[idx_d]
                if n_h:
                    R_dyn = R_dyn - ca.mtimes(Dh0.T, lam[:n_h] if n_nh else lam)
                if n_nh:  # Kobilarov2010, eq. 5 (nk = 0 here, so the dynamic coordinates are all of q)
                    R_dyn = R_dyn + ca.mtimes(A0.T, lam[n_h:])
                    R_nh = ca.mtimes(A0, ca.solve(M_fn(q0), p0 - D1Ld))
                R = ca.vertcat(R_dyn, h_fn(q1)) if n_h else R_dyn
                if n_nh:
                    R = ca.vertcat(R, R_nh)
                p1 = ca.SX.zeros(nq)
                p1[idx_d] = D2Ld[idx_d]
                if (
                    nonholonomic
                ):  # eq. 16's momentum update: the same p_{k+1} at the root, free of q_{k+1} − q_k rounding
                    p1[idx_d] = p1[idx_d] + R_dyn
                if nk:
                    p1[idx_k] = (rho - q0[idx_k]) / self.dt
                return R, ca.vertcat(q1, p1)

            q1_full = ca.SX.sym("q1f", nq)
            Ld_full = Ld_of(q0, q1_full)
            D2_full = ca.Function("D2", [q0, q1_full], [ca.gradient(Ld_full, q1_full)])
            R, O = equations(ca.gradient(Ld, q0), D2_full(q0, q1))

            y = ca.vertcat(q1d, lam)
            z = ca.vertcat(q0, p0, tau, rho)
            Ry, Rz = ca.jacobian(R, y), ca.jacobian(R, z)
            Oy, Oz = ca.jacobian(O, y), ca.jacobian(O, z)
            cov, mu = ca.SX.sym("cov", 2 * nq), ca.SX.sym("mu", self.ny)
            w = ca.vertcat(y, z)
            lagr = (
                (ca.dot(cov, O) + ca.dot(mu, R)) if n_nh else directional_lagrangian(equations, Ld_of, q0, q1, cov, mu)
            )
            hess = ca.hessian(lagr, w)[0]
            D1full = ca.Function("D1", [q0, q1_full], [ca.gradient(Ld_full, q0)])
            v = tree.v
            dens = ca.densify
            extra = {}
            if (
                nonholonomic
            ):  # the continuous Lagrange–d'Alembert multipliers at a start state (GNI.state_from_velocity)
                C_sym = ca.vertcat(rows_h, A_sym)
                bias = (
                    ca.mtimes(ca.jacobian(ca.gradient(tree.kinetic, v), tree.q), v)
                    - ca.gradient(tree.kinetic, tree.q)
                    + ca.gradient(tree.potential, tree.q)
                )
                extra = {
                    "bias": ca.Function("bias", [tree.q, v], [dens(bias)]),
                    "constraint_drift": ca.Function(
                        "cdrift", [tree.q, v], [dens(ca.mtimes(ca.jacobian(ca.mtimes(C_sym, v), tree.q), v))]
                    ),
                }
            names = (
                "residual",
                "residual_only",
                "output",
                "linearize",
                "hessian",
                "mass",
                "momentum",
                "D1Ld",
                "D2Ld",
                "energy",
                "h",
                "constraint_rows",
                *extra,
            )
            funcs = {
                "residual": ca.Function("residual", [y, z], [dens(R), dens(Ry)]),
                # R alone for chord Newton: ~5 % of the instructions of (R, ∂R/∂y) at 32 links.
                "residual_only": ca.Function("residual_only", [y, z], [dens(R)]),
                "output": ca.Function("output", [y, z], [dens(O)]),
                "linearize": ca.Function("linearize", [y, z], [dens(Ry), dens(Rz), dens(Oy), dens(Oz)]),
                "hessian": ca.Function("hessian", [y, z, cov, mu], [dens(hess)]),
                "mass": ca.Function("mass", [tree.q], [dens(ca.hessian(tree.kinetic, v)[0])]),
                "momentum": ca.Function("momentum", [tree.q, v], [dens(ca.gradient(tree.kinetic, v))]),
                "D1Ld": ca.Function("D1Ld", [q0, q1_full], [dens(D1full(q0, q1_full))]),
                "D2Ld": ca.Function("D2Ld", [q0, q1_full], [dens(D2_full(q0, q1_full))]),
                "energy": ca.Function("energy", [tree.q, v], [tree.kinetic + tree.potential]),
                "h": ca.Function("hq", [tree.q], [dens(h_fn(tree.q))]),
                # [Dh(q); A(q)]: every velocity constraint row (GNI's projections, Kobilarov2010, eq. 12)
                "constraint_rows": ca.Function("crows", [tree.q], [dens(ca.vertcat(rows_h, A_sym))]),
                **extra,
            }
            return funcs, names

        funcs, names = symbolic()
        self.functions = FunctionSet(
            robot.hash
            + ("_gni" if nonholonomic else "")
            + f"_dt{self.dt!r}"
            + ("" if lagrangian == "midpoint" else f"_{lagrangian}"),
            funcs,
            compile=compile,
            lazy=("linearize", "hessian") if eager else names,
            driver=NEWTON_C if eager else "",
            driver_needs=STEP_FUNCTIONS if eager else (),
        )
        # The whole Newton step is one call into our C driver (over the VM's functions where they did not compile).
        self.newton = NewtonStepC(self) if eager else None
        # step_kernel's, per (with_hessian, recursive 'linearize', recursive 'hessian'), once built
        self._kernels: dict[tuple[bool, bool, bool], StepKernel] = {}

    def recursive(self, name: str) -> bool:
        """Whether the DDP kernel computes 'linearize' or 'hessian' by the tree's recursion (tree_derivatives.c)
        rather than the generated function: where the recursion covers the step (``recursive_derivatives``,
        ``RECURSIVE_DERIVATIVES``) and is the faster — the generated function's instructions above
        ``TREE_INSTRUCTIONS_PER_JOINT`` per joint (a property of the model: the choice never depends on timing)."""
        if not (RECURSIVE_DERIVATIVES and self.recursive_derivatives):
            return False
        return self.functions.raw[name].n_instructions() > TREE_INSTRUCTIONS_PER_JOINT * self.nq

    def step_kernel(self, with_hessian: bool = True) -> StepKernel | None:
        """The compiled step for whole-trajectory C (``StepKernel``), or None unless the Newton driver, 'linearize'
        and (``with_hessian``) the second-order term are all C: the tree's recursion where ``recursive`` says so, else
        the generated functions, which compile here on first use. A kernel once built is kept (a plan asks twice, an
        MPC loop every cycle)."""
        lin_tree = self.recursive("linearize")
        hess_tree = with_hessian and self.recursive("hessian")
        kept = self._kernels.get((with_hessian, lin_tree, hess_tree))
        if kept is not None:
            return kept
        if self.newton is None or not self.newton.generated:
            return None
        fns = self.functions
        names = STEP_FUNCTIONS + (() if lin_tree else ("linearize",))
        names += ("hessian",) if with_hessian and not hess_tree else ()
        if not all(fns.compiled(n) for n in names):
            return None
        lib = fns.lib
        lib.vi_newton_workspace.restype = ctypes.c_longlong
        n_ws = lib.vi_newton_workspace(ctypes.c_longlong(self.nq), ctypes.c_longlong(self.ny))
        n_iw, n_w = fns.work_sizes(names)
        kernel = self._kernels[(with_hessian, lin_tree, hess_tree)] = StepKernel(
            newton=ctypes.cast(lib.vi_newton_step, ctypes.c_void_p).value,
            linearize=0 if lin_tree else fns["linearize"].address,
            hessian=fns["hessian"].address if with_hessian and not hess_tree else 0,
            n_iw=n_iw,
            n_w=n_w,
            n_ws=int(n_ws),
            nq=self.nq,
            nd=self.nd,
            nk=self.nk,
            nc=self.nc,
            ny=self.ny,
            nz=self.nz,
            nx=self.nx,
            n_inputs=self.n_inputs,
            dt=self.dt,
            idx=np.concatenate([self.idx_d, self.idx_k]).astype(np.int64),
            rot=self.newton.rot,
            max_configuration=MAX_CONFIGURATION,
            tree=tree_model(self.robot) if lin_tree or hess_tree else None,
            second_order=with_hessian,
        )
        return kernel
