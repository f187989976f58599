"""The RDP's Newton iteration in numpy (Kobilarov2010, eqs. 27–28): the tests' oracle of the package's one
implementation, the C driver (vi_rdp_simulate in vi_control/integrators/csrc/rdp_driver.c).

``NumpyRDP`` is a ``ReducedDAlembertPontryagin`` whose ``rollout`` runs this loop over the system's generated (or VM)
functions, with LAPACK's dgesv where the driver has its own LU: the tests compare the two (the same iterates to
round-off, the same iteration counts, the same errors), and the nonholonomic benchmark times the driver against it.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from vi_control.integrators.base import ConvergenceError, SingularityError
from vi_control.integrators.rdp import ReducedDAlembertPontryagin


class NumpyRDP(ReducedDAlembertPontryagin):
    """``ReducedDAlembertPontryagin`` stepped by the numpy loop (module docstring)."""

    def rollout(self, forces, z, P, G, Rr, U, XI, its) -> None:
        """The driver's contract (``ReducedDAlembertPontryagin.rollout``): Newton on eq. 27 from the previous root,
        stopping at |R|∞ ≤ tol·(p₁ + |(π⁺_k, μ⁺_k)|∞), then eq. 28's update."""
        ns, st = self.n_shape, self.settings
        res_fn, upd = self.functions["residual"], self.functions["update"]
        pi_p, mu_p = P[ns : 2 * ns].copy(), P[2 * ns : 2 * ns + 3].copy()
        for k in range(len(forces)):
            P[:ns], P[ns : 2 * ns], P[2 * ns : 2 * ns + 3], P[2 * ns + 3 :] = Rr[k], pi_p, mu_p, forces[k]
            scale = st.scale(np.abs(P[ns : 2 * ns + 3]).max(initial=0.0))
            for it in range(st.max_iterations + 1):
                Rv, Jv = res_fn(z, P)
                rnorm = float(np.abs(Rv).max())
                if rnorm <= st.tol * scale:
                    break
                if it == st.max_iterations or not np.isfinite(rnorm):
                    raise ConvergenceError(k, rnorm, it, "RDP (Kobilarov2010, eq. 27)")
                _, _, dz, info = lapack.dgesv(Jv, Rv.ravel())
                if info != 0:
                    raise SingularityError(k, 0.0, "the RDP Jacobian (eq. 27)")
                z = z - dz
            its[k] = it
            out = np.array(upd(z, P, G[k])).ravel()
            G[k + 1], Rr[k + 1] = out[:3], out[3 : 3 + ns]
            pi_p, mu_p = out[3 + ns : 3 + 2 * ns].copy(), out[3 + 2 * ns : 6 + 2 * ns].copy()
            U[k], XI[k] = z[:ns], out[6 + 2 * ns :]
