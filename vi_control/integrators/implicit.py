"""The ``Linearizable`` methods of an integrator whose step is the generalized-coordinate DEL equation.

R(y, z) = 0 and x_{k+1} = O(y, z) are built symbolically from a discrete Lagrangian (mechanics.discrete), and
their partial derivatives come from automatic differentiation. A class mixes this in and says where its compiled
function set is (``_derivative_functions``); the step itself may be solved any way (the midpoint VI's Newton
driver, the linear-time VI's DRNEA + RIQN) as long as ``StepResult.y`` holds the solved unknowns
(q_{k+1}[dynamic], λ_k).
"""

from __future__ import annotations

from functools import cached_property

import casadi as ca
import numpy as np

from ..mechanics.codegen import FunctionSet
from ..mechanics.graph_lock import builds_graph
from .base import StepDerivatives, StepResult


class SymbolicStepDerivatives:
    """step_derivatives / step_hessian / curved_outputs from a FunctionSet with 'linearize', 'hessian', 'output'."""

    @property
    def _derivative_functions(self) -> FunctionSet:
        raise NotImplementedError

    def step_derivatives(self, result: StepResult, x: np.ndarray, u: np.ndarray) -> StepDerivatives:
        """R_y, R_z, O_y, O_z at a solved step, by AD of L_d (Johnson2015, eqs. 8–15, 29–30)."""
        z = np.concatenate([np.asarray(x, float), np.asarray(u, float).ravel()])
        Ry, Rz, Oy, Oz = (np.array(a) for a in self._derivative_functions["linearize"](result.y, z))
        return StepDerivatives(Ry=Ry, Rz=Rz, Oy=Oy, Oz=Oz)

    def step_hessian(
        self, result: StepResult, x: np.ndarray, u: np.ndarray, cov: np.ndarray, mu: np.ndarray
    ) -> np.ndarray:
        """∇²_{(y,z)}(covᵀO + μᵀR) at a solved step (Johnson2015, eqs. 16–27 before projection)."""
        z = np.concatenate([np.asarray(x, float), np.asarray(u, float).ravel()])
        return self._derivative_functions["hessian"](result.y, z, cov, mu)[0]

    def curved_outputs(self) -> np.ndarray:
        return self._curved_outputs

    @cached_property
    @builds_graph
    def _curved_outputs(self) -> np.ndarray:
        """Rows i of O(y, z) with ∂²Oᵢ ≠ 0, read from the symbolic output map once.

        q_{k+1} and the prescribed joints' kinematic momenta are linear in (y, z); only the dynamic rows
        of p_{k+1} = D₂L_d (eq. 2b) carry curvature, so the full tensor needs ~nd + ny Hessians, not nx.
        """
        f = self._derivative_functions.raw["output"]
        y, z = ca.SX.sym("y", f.size1_in(0)), ca.SX.sym("z", f.size1_in(1))
        w = ca.vertcat(y, z)
        J = ca.jacobian(f(y, z), w)
        return np.array([i for i in range(J.size1()) if ca.depends_on(J[i, :], w)], dtype=int)
