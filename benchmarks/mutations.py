"""The curated mutations of ``benchmarks/mutation.py``: small, plausible bugs, one at a time.

Each names the file, the exact original snippet (it must occur once: ``test/project/test_mutation_harness.py`` checks
that every snippet still exists, so the list cannot rot), its replacement, what it models, and the test files
(or node ids) that ought to kill it — per mutation only those, so a run stays bounded. ``issue`` marks the
nineteen of the second audit (the nine that survived the whole suite, the two caught only by accident, and the ones it
says were caught); the rest are ours.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str  # relative to the repository root
    original: str
    replacement: str
    description: str
    tests: tuple[str, ...]
    issue: bool = False
    area: str = ""  # default: the subpackage of ``file`` (ros → nodes)

    @property
    def subpackage(self) -> str:
        if self.area:
            return self.area
        part = self.file.split("/")[1]
        return "nodes" if part == "ros" else part


T_WIRING = "test/control/test_wiring_references.py"
T_DDP_REF = "test/planning/test_ddp_second_order_reference.py"
T_ROS_WIRING = "test/ros/test_ros_wiring.py"
T_TRACKING = "test/ros/test_ros_tracking.py"
T_LQR = "test/control/test_lqr.py"
T_PENDULUM = "test/integrators/test_integrator_pendulum.py"
T_DYNAMICS = "test/model/test_model_dynamics.py"
T_LIN = "test/linearization/test_linearization.py"
T_COMPILED = "test/planning/test_planning_compiled.py"
T_TREE = ("test/mechanics/test_tree_derivatives.py",)
# the selections of the audit of the real-arm paths (docs/guides/testing.md)
T_MPC = ("test/planning/test_planning_mpc.py",)
T_INTAKE = (
    "test/control/test_control_joint_merge.py",
    "test/control/test_control_intake.py",
)
T_REQUESTS = (
    "test/planning/test_planning_requests.py",
    "test/planning/test_plan_limits_property.py",
)
T_CODECS = (
    "test/ros/test_plan_codec.py",
    "test/ros/test_joint_state_partial.py",
    "test/ros/test_message_time_fields.py",
    "test/ros/test_ros_tracking.py::test_plan_message_round_trips_exactly_and_is_validated",
    "test/ros/test_ros_tracking.py::test_raw_joint_state_reader_equals_rclpy_deserialization",
    "test/robustness/test_fuzz_generator.py",
)
T_RUNNER = (
    "test/control/test_control_runner.py",
    "test/control/test_tracking_law_end.py",
    "test/control/test_safe_damping.py",
    "test/control/test_control_hold_law.py",
    "test/planning/test_planning_mpc.py",
    "test/control/test_plan_schedule.py",
)
T_PLAN_DERIVED = (
    "test/control/test_plan_file.py",
    "test/planning/test_planning_warm_start.py",
    "test/model/test_model_scalars.py",
    "test/planning/test_planning_mpc.py",
)
T_LAW = (
    "test/control/test_tracking_law_end.py",
    "test/control/test_control_hold_law.py",
    "test/control/test_control_hold_integral.py",
    "test/control/test_wiring_references.py",
    "test/control/test_control_runner.py",
    "test/control/test_plan_schedule.py",
)

MUTATIONS: tuple[Mutation, ...] = (
    # ---- model -------------------------------------------------------------------------------------------------
    Mutation(
        "gravity_x1.01",
        "vi_control/model/robot.py",
        "gravity=np.asarray(cfg.gravity, float)",
        "gravity=1.01 * np.asarray(cfg.gravity, float)",
        "gravity 1 % too strong in the robot the integrators build on",
        (T_DYNAMICS,),
        issue=True,
    ),
    Mutation(
        "mass_scale_ignored_in_model",
        "vi_control/model/robot.py",
        "        scale_inertias(model, mass_scale)",
        "        pass",
        "load_robot(mass_scale=s) hashes s but leaves the inertias",
        (T_ROS_WIRING + "::test_simulator_steps_the_scaled_robot_in_its_joint_order",),
    ),
    # ---- mechanics (the discrete Lagrangian and the DEL residual, generated C) ----------------------------------
    Mutation(
        "native_build_not_keyed_by_cpu",
        "vi_control/mechanics/codegen.py",
        '" ".join(flags) + (f"\\n{target}" if target else "") + "\\n" + src',
        '" ".join(flags) + "\\n" + src',
        "a library built for this CPU is found under the same cache key on another CPU (a shared home directory)",
        ("test/mechanics/test_codegen_native.py",),
    ),
    Mutation(
        "failed_native_build_not_rebuilt_portable",
        "vi_control/mechanics/codegen.py",
        "                return compile_shared_library(src, prefix, portable(flags), what)\n            warnings.warn(",
        "                return None\n            warnings.warn(",
        "where the compiler cannot build for this CPU, the model runs in the CasADi VM instead of portable C",
        ("test/mechanics/test_codegen_native.py",),
    ),
    Mutation(
        "rectangle_rule",
        "vi_control/mechanics/lagrangians.py",
        "dt * L((q0 + q1) / 2, (q1 - q0) / dt)",
        "dt * L(q0, (q1 - q0) / dt)",
        "left-rectangle quadrature instead of the midpoint rule (Johnson2015, eq. 3a)",
        (T_PENDULUM,),
    ),
    Mutation(
        "rotational_kinetic_energy_dropped",
        "vi_control/mechanics/symbolic.py",
        "0.5 * m * ca.dot(vc, vc) + 0.5 * ca.dot(w, Ic @ w)",
        "0.5 * m * ca.dot(vc, vc)",
        "the bodies' rotational kinetic energy left out of L",
        (T_DYNAMICS,),
    ),
    Mutation(
        "damping_sign",
        "vi_control/mechanics/discrete.py",
        "- c * (q1 - q0)",
        "+ c * (q1 - q0)",
        "joint damping pumps energy in",
        ("test/integrators/test_integrator_forcing.py",),
    ),
    Mutation(
        "constraint_jacobian_off",
        "vi_control/mechanics/discrete.py",
        "h0 = h_fn(q0)",
        "h0 = h_fn(1.01 * q0)",
        "wrong constraint Jacobian: 1.01·Dh(1.01·q_k) in the DEL rows",
        ("test/integrators/test_integrator_constraints.py",),
        issue=True,
    ),
    Mutation(
        "prescribed_step_output_p_slot",
        "vi_control/mechanics/discrete.py",
        "p1[idx_k] = (rho - q0[idx_k]) / self.dt",
        "p1[idx_k] = (rho - q0[idx_k]) / (2 * self.dt)",
        "the step writes half the prescribed joints' velocity into their p-slot",
        (T_WIRING,),
    ),
    Mutation(
        "contracted_hessian_directions_swapped",
        "vi_control/mechanics/discrete.py",
        "return rest + dLd(q0, q1, a, b)",
        "return rest + dLd(q0, q1, b, a)",
        "the contracted Hessian differentiates L_d along D₂'s coefficients where D₁'s belong (and back)",
        ("test/mechanics/test_contracted_hessian.py",),
    ),
    # ---- integrators ---------------------------------------------------------------------------------------------
    Mutation(
        "prescribed_p_slot_from_velocity",
        "vi_control/integrators/midpoint.py",
        "p[self.idx_k] = qdot[self.idx_k]",
        "p[self.idx_k] = 0.0",
        "state_from_velocity leaves ∂L/∂q̇ in the prescribed p-slot instead of q̇",
        (T_WIRING,),
        issue=True,
    ),
    Mutation(
        "prescribed_p_slot_from_configurations",
        "vi_control/integrators/midpoint.py",
        "p[self.idx_k] = (q[self.idx_k] - q_prev[self.idx_k]) / self.dt",
        "p[self.idx_k] = q[self.idx_k] - q_prev[self.idx_k]",
        "state_from_configurations: the prescribed p-slot not divided by Δt",
        (T_WIRING,),
    ),
    Mutation(
        "velocity_drops_prescribed_coupling",
        "vi_control/integrators/midpoint.py",
        "rhs = p[d] - M[np.ix_(d, k)] @ v[k] if len(k) else p[d]",
        "rhs = p[d]",
        "velocity() ignores M_dk q̇_k of the prescribed joints",
        (T_WIRING,),
        issue=True,
    ),
    Mutation(
        "potential_gradient_sign",
        "vi_control/integrators/midpoint.py",
        'return -(self.functions["D1Ld"](q, q)[0].ravel() + self.functions["D2Ld"](q, q)[0].ravel())',
        'return (self.functions["D1Ld"](q, q)[0].ravel() + self.functions["D2Ld"](q, q)[0].ravel())',
        "∇V with the wrong sign: holding torques push the wrong way",
        (T_LQR,),
    ),
    # ---- linearization -------------------------------------------------------------------------------------------
    Mutation(
        "second_order_term_dropped",
        "vi_control/linearization/__init__.py",
        "return dydz.T @ W + Hyz.T @ dydz + Hzz",
        "return dydz.T @ W + Hzz",
        "one cross block of Tᵀ∇²T dropped (Johnson2015, eqs. 16–27)",
        (T_LIN,),
        issue=True,
    ),
    Mutation(
        "implicit_term_sign",
        "vi_control/linearization/__init__.py",
        "J = Oz + Oy @ dydz",
        "J = Oz - Oy @ dydz",
        "A, B with the implicit function's term negated",
        (T_LIN,),
    ),
    Mutation(
        "adjoint_sign",
        "vi_control/linearization/__init__.py",
        "mu = -lapack.dgetrs(lu, piv, Oy.T @ cov, trans=1)[0]",
        "mu = lapack.dgetrs(lu, piv, Oy.T @ cov, trans=1)[0]",
        "the adjoint multiplier of the contraction with the wrong sign",
        (T_LIN,),
    ),
    # ---- control -------------------------------------------------------------------------------------------------
    Mutation(
        "hold_R_x100",
        "vi_control/control/hold.py",
        "K, _ = riccati(lin.A, lin.B, Q, R)",
        "K, _ = riccati(lin.A, lin.B, Q, 100 * np.asarray(R, float))",
        "the hold DLQR with R ×100",
        (T_WIRING,),
        issue=True,
    ),
    Mutation(
        "gain_without_A",
        "vi_control/control/csrc/lqr_kernel.c",
        "vi_mm(BtP, A, K, nu, nx, nx, 0, 0); /* K = S^-1 (B'P) A, all columns at once */",
        "for (long long i = 0; i < nu * nx; i++) K[i] = BtP[i]; /* K = S^-1 (B'P) A, all columns at once */",
        "the TV-LQR gain after eq. 36 without its A (the paper's typo)",
        (T_LQR,),
    ),
    Mutation(
        "feedback_sign",
        "vi_control/control/tracking.py",
        "return u_ref + K @ e, e",
        "return u_ref - K @ e, e",
        "a flipped feedback sign",
        (T_TRACKING,),
        issue=True,
    ),
    Mutation(
        "tracking_index_truncates",
        "vi_control/control/tracking.py",
        "return math.floor((t - t0) / dt + 0.5 + 1e-9)",
        "return math.floor((t - t0) / dt + 1e-9)",
        "the step index truncated instead of rounded (7.6·Δt → 7, 0.7/0.1 → 6)",
        (T_WIRING,),
    ),
    Mutation(
        "safe_damping_saturates",
        "vi_control/control/tracking.py",
        "-np.asarray(damping, float) * np.asarray(velocity, float)",
        "-np.asarray(damping, float) * np.sign(np.asarray(velocity, float))",
        "damping not proportional to q̇",
        (T_TRACKING,),
    ),
    Mutation(
        "estimator_ignores_spacing",
        "vi_control/control/tracking.py",
        "if gap > max(self.max_gap, (1 + self.tolerance) * dt):",
        "if False:",
        "p from two configurations however far apart their stamps",
        (T_TRACKING, "test/ros/test_ros_drivers.py"),
    ),
    Mutation(
        "estimator_unwrap_dropped",
        "vi_control/control/tracking.py",
        "        dq[self.mask] = wrap_angle(dq[self.mask])",
        "        pass",
        "a ±π wrap between two samples becomes a huge momentum",
        (T_TRACKING,),
    ),
    Mutation(
        "hold_state_at_zero_momentum",
        "vi_control/control/hold.py",
        "return vi.state_from_configurations(q, q)",
        "return np.concatenate([q, np.zeros(len(q))])",
        "held state with p = 0 instead of the midpoint rule's −(Δt/2)∇V",
        (T_WIRING, T_LQR),
    ),
    Mutation(
        "holding_input_sign",
        "vi_control/control/hold.py",
        "rhs = vi.potential_gradient(q)[vi.idx_d]",
        "rhs = -vi.potential_gradient(q)[vi.idx_d]",
        "gravity compensation pushing the wrong way",
        (T_WIRING,),
    ),
    # ---- planning ------------------------------------------------------------------------------------------------
    Mutation(
        "ddp_takes_another_systems_rollout",
        "vi_control/planning/ddp.py",
        "and ro.system is vi\n",
        "\n",
        "ddp starts from a rollout computed on another system (same sizes, start and inputs)",
        ("test/planning/test_planning_initial_guess.py",),
    ),
    Mutation(
        "ddp_takes_any_initial_rollout",
        "vi_control/planning/ddp.py",
        "and np.array_equal(ro.U, U0)\n",
        "\n",
        "ddp starts from a rollout of other inputs than U0 (the guess's, after the caller changed the inputs)",
        ("test/planning/test_planning_initial_guess.py",),
    ),
    Mutation(
        "held_reference_inputs_unchecked",
        "vi_control/planning/ddp.py",
        "and bool((X[:-1] == X[0]).all()) and bool((U == U[0]).all())",
        "and bool((X[:-1] == X[0]).all())",
        "a reference that holds one state is linearized once even where its inputs change (one step for all stages)",
        ("test/planning/test_planning_initial_guess.py",),
    ),
    Mutation(
        "plan_gains_shifted",
        "vi_control/planning/pipeline.py",
        'K, _ = tv_lqr(A, B, W["lqr", "Q"], W["lqr", "R"], W["lqr", "Qf"])',
        'K, _ = tv_lqr(A, B, W["lqr", "Q"], W["lqr", "R"], W["lqr", "Qf"])\n    K = np.concatenate([K[1:], K[-1:]])',
        "plan gains shifted one step: K_{k+1} used at k",
        (T_WIRING,),
        issue=True,
    ),
    Mutation(
        "tvlqr_from_cost_weights",
        "vi_control/planning/pipeline.py",
        'tv_lqr(A, B, W["lqr", "Q"], W["lqr", "R"], W["lqr", "Qf"])',
        'tv_lqr(A, B, W["weights", "Q"], W["weights", "R"], W["weights", "Qf"])',
        "TV-LQR built from the cost weights instead of the task's lqr weights",
        (T_WIRING,),
        issue=True,
    ),
    Mutation(
        "hold_from_lqr_weights",
        "vi_control/planning/pipeline.py",
        'W["hold", "Q"], W["hold", "R"]',
        'W["lqr", "Q"], W["lqr", "R"]',
        "the hold gain from the lqr weights instead of the hold weights",
        (T_WIRING,),
    ),
    Mutation(
        "step_reference_off_by_one",
        "vi_control/planning/pipeline.py",
        "Q = np.where(np.arange(N + 1)[:, None] < ks, qa, qb)",
        "Q = np.where(np.arange(N + 1)[:, None] <= ks, qa, qb)",
        "the step reference switches one step late (Johnson2015, eq. 35)",
        (T_WIRING,),
        issue=True,
    ),
    Mutation(
        "kernel_Hxu_dropped",
        "vi_control/planning/csrc/ddp_kernel.c",
        "Qux[i * nx + j] += Hz[j * nz + nx + i];",
        "Qux[i * nx + j] += 0.0 * Hz[j * nz + nx + i];",
        "DDP's cross term H_xu dropped in the backward pass (C, its one implementation)",
        (T_DDP_REF,),
        issue=True,
        area="planning",
    ),
    Mutation(
        "kernel_product_accumulation_lost",
        "vi_control/mechanics/csrc/dense_mm.c",
        "for (int c = 0; c < w; c++) s[c] = acc ? z[c] : 0.0;",
        "for (int c = 0; c < w; c++) s[c] = 0.0;",
        "the blocked products forget what they accumulate onto (the DDP kernel's V'_xx = Q_xx + K'T + Q_ux'K)",
        ("test/planning/test_planning_compiled.py::test_every_stage_pass_agrees_with_the_numpy_path",),
        area="planning",
    ),
    Mutation(
        "kernel_product_row_stride_swapped",
        "vi_control/mechanics/csrc/dense_mm.c",
        "long long xr = tx ? 1 : m, xs = tx ? n : 1;",
        "long long xr = tx ? 1 : m, xs = tx ? 1 : n;",
        "the product walks op(X)'s row with the other stride (the hidden stride's bookkeeping)",
        ("test/mechanics/test_dense_mm.py",),
        area="mechanics",
    ),
    Mutation(
        "kernel_contraction_cross_term_dropped",
        "vi_control/planning/csrc/ddp_kernel.c",
        "Hz[p * nz + q] = Hz[q * nz + p] = (Hz[p * nz + q] + E[p * nz + q]) + H[(ny + p) + (ny + q) * nw];",
        "Hz[p * nz + q] = Hz[q * nz + p] = (Hz[p * nz + q] + 0.0 * E[p * nz + q]) + H[(ny + p) + (ny + q) * nw];",
        "the second-order contraction loses H_yz' dy/dz (its product of row-major copies)",
        ("test/planning/test_planning_compiled.py::test_every_stage_pass_agrees_with_the_numpy_path",),
        area="planning",
    ),
    Mutation(
        "kernel_transposed_solve_unpivoted",
        "vi_control/mechanics/csrc/dense_mm.c",
        "  for (long long k = n - 1; k >= 0; k--)\n    if (piv[k] != k)",
        "  for (long long k = n - 1; k >= 0 && 0; k--)\n    if (piv[k] != k)",
        "the multi-right-hand-side transposed solve skips its row swaps (DLQR's A W^-1)",
        (f"{T_LQR}::test_dlqr_is_the_numpy_oracle_and_scipys_dare",),
        area="control",
    ),
    Mutation(
        "kernel_tvlqr_KtRK_dropped",
        "vi_control/control/csrc/lqr_kernel.c",
        "Pk[i] = Q[i] + T1[i] + T2[i];",
        "Pk[i] = Q[i] + T1[i];",
        "a dropped Riccati term in the TV-LQR (its one implementation, C: every plan's and controller's gains)",
        (T_LQR, T_WIRING),
        issue=True,
    ),
    Mutation(
        "cost_gradient_doubled",
        "vi_control/planning/cost.py",
        "return (X[:-1] - self.X_ref[:-1]) @ self.Q, (U - self.U_ref) @ self.R",
        "return (X[:-1] - self.X_ref[:-1]) @ self.Q, 2 * (U - self.U_ref) @ self.R",
        "l_u twice the cost's gradient: DDP descends the wrong function",
        ("test/planning/test_planning_task.py",),
    ),
    Mutation(
        "kernel_reference_stages_chained",
        "vi_control/planning/csrc/ddp_kernel.c",
        "const double* xk = stagewise ? Xg + k * nx : X + k * nx;",
        "const double* xk = X + k * nx;",
        "the feedback guess linearizes the reference along a rollout from its first state, not at its own states",
        (
            ""
            ""
            "test/planning/test_planning_initial_guess.py::test_compiled_reference_jacobians_are_linearize_of_every_stage",
        ),
        area="planning",
    ),
    Mutation(
        "arena_carved_layout_unchecked",
        "vi_control/planning/compiled.py",
        "                shape = hit[2]\n",
        "                pass\n",
        "an array carved by one pass, in another pass's slot of another shape: its shape is not the one checked",
        (
            "test/planning/test_planning_compiled.py::test_the_passes_refuse_arrays_the_kernel_would_read_past_or_misplace",
        ),
        area="planning",
    ),
    Mutation(
        "hold_start_open_loop",
        "vi_control/planning/pipeline.py",
        "u = u_eq + K @ vi.state.diff(x, x_eq)",
        "u = u_eq + 0.0 * K @ vi.state.diff(x, x_eq)",
        "hold_start from a moving start applies the gravity torque open loop: the arm runs away before DDP starts",
        (
            "test/planning/test_planning_initial_guess.py::test_hold_start_from_a_moving_start_is_the_hold_law_along_its_own_rollout",
        ),
        area="planning",
    ),
    Mutation(
        "auto_guess_any_cheaper_feedback",
        "vi_control/planning/pipeline.py",
        "U0 = U_fb if J[1] < 0.5 * J[0] else U0",
        "U0 = U_fb if J[1] < J[0] else U0",
        "initial_guess auto takes any cheaper feedback guess: the bounded pendulum heads to its worse optimum",
        (
            "test/planning/test_planning_initial_guess.py::"
            "test_auto_starts_from_the_feedback_guess_only_where_its_rollout_costs_less_than_half",
        ),
        area="planning",
    ),
    Mutation(
        "safe_command_prescribed_never_measured",
        "vi_control/control/runner.py",
        "                self._held_prescribed = state.x[self.vi.idx_k]\n",
        "                pass\n",
        "the safe command never learns the prescribed joints' positions: no command at all for such a model",
        (
            "test/control/test_safe_damping.py::test_the_safe_command_holds_prescribed_joints_where_they_were_last_measured",
        ),
        area="control",
    ),
    Mutation(
        "simulator_bad_command_prescribed_to_start",
        "vi_control/ros/simulator_node.py",
        "                self.u[self.vi.n_torques :] = self.x[: self.vi.nq][self.vi.idx_k]"
        "  # prescribed joints stay put\n",
        "                pass\n",
        "on a bad command (on_bad_command zero) the prescribed joints jump back to their start positions",
        (
            "test/ros/test_command_sources.py::"
            "test_a_bad_command_under_on_bad_command_zero_keeps_prescribed_joints_where_they_are",
        ),
        area="nodes",
    ),
    Mutation(
        "projection_gradient_regularized",
        "vi_control/planning/gradient.py",
        "        regularization=0.0,",
        "        regularization=1.0,",
        "the first-order method's LQ problem gets a regularization its metric does not have (another direction)",
        ("test/planning/test_planning_solvers.py::test_the_first_order_methods_direction_is_its_lq_problems_solution",),
        area="planning",
    ),
    Mutation(
        "collocation_interval_lookup_shifted",
        "vi_control/planning/collocation/solution.py",
        "edges = np.array([s.t0 for s in self.segments[1:]])",
        "edges = np.array([s.t0 for s in self.segments[2:]])",
        "a collocation solution evaluates times of its second interval on the first interval's polynomial",
        (
            "test/planning/test_collocation_planner.py::test_a_solution_evaluates_each_time_on_its_own_intervals_polynomial",
        ),
        area="planning",
    ),
    Mutation(
        "plan_dt_zero_accepted",
        "vi_control/control/plan.py",
        "if not (math.isfinite(dt) and dt > 0):",
        "if not (math.isfinite(dt) and dt >= 0):",
        "a plan with dt = 0 passes the dt check (refused later, if at all, for its times)",
        ("test/control/test_plan_file.py::test_plan_times_must_resolve_dt_at_their_magnitude",),
        area="control",
    ),
    Mutation(
        "gait_impact_momentum_not_midpoint",
        "vi_control/planning/collocation/gait.py",
        "Ld = dt * L((q0s + q1) / 2, (q1 - q0s) / dt)",
        "Ld = dt * L((q0s + q1) / 3, (q1 - q0s) / dt)",
        "the impact map's post-impact momentum from another discrete Lagrangian than the VI's midpoint rule",
        (
            "test/planning/test_collocation_gait.py::test_a_walker_at_rest_lands_at_rest_on_the_vis_own_discrete_momentum",
        ),
        area="planning",
    ),
    Mutation(
        "startup_parameter_choices_unchecked",
        "vi_control/ros/common.py",
        "        why = spec.check(name, values[name])",
        "        why = None",
        "a params file's value outside a parameter's choices starts the node (refused only when set later)",
        (
            "test/ros/test_nodes_in_process.py::"
            "test_a_start_up_parameter_outside_its_choices_or_not_finite_stops_the_node",
        ),
        area="nodes",
    ),
    Mutation(
        "lockstep_command_does_not_step",
        "vi_control/ros/simulator_node.py",
        "        self.last_command_time = time.monotonic()\n        if self.lockstep:\n            self.advance()",
        "        self.last_command_time = time.monotonic()\n        if not self.lockstep:\n            self.advance()",
        "a lockstep simulator waits on a command that answers its state instead of stepping with it",
        (
            "test/ros/test_command_sources.py::"
            "test_the_lockstep_simulator_refuses_two_publishers_and_steps_on_the_last_valid_command",
        ),
        area="nodes",
    ),
    Mutation(
        "lie_group_unconverged_step_passed_on",
        "vi_control/integrators/lie_group.py",
        "        if not (np.isfinite(rnorm) and st.accepts(rnorm, pnorm, floor)):",
        "        if not (np.isfinite(rnorm) or st.accepts(rnorm, pnorm, floor)):",
        "a Lie-group step Newton did not solve within max_iterations is returned as a step (its residual finite)",
        (
            "test/integrators/test_lie_integrator.py::"
            "test_a_step_newton_has_not_solved_within_max_iterations_is_refused",
        ),
    ),
    Mutation(
        "exp_coefficient_series_term_wrong",
        "vi_control/mechanics/so3_maps.py",
        "        lambda t: 1 / 24 - t / 720 + t**2 / 40320 - t**3 / 3628800,",
        "        lambda t: 1 / 24 - t / 792 + t**2 / 40320 - t**3 / 3628800,",
        "the SE(3) exponential's Q coefficient (θ² + 2cos θ − 2)/(2θ⁴) by a Taylor series with a wrong θ² term",
        (
            "test/mechanics/test_lie_groups.py::"
            "test_the_exponential_maps_coefficients_series_and_closed_forms_are_their_functions",
        ),
    ),
    Mutation(
        "lockstep_refusal_names_brakes",
        "vi_control/ros/simulator_node.py",
        '        return refused_command_fallback(self.p["on_bad_command"], 0.0 if self.lockstep else '
        'self.p["command_timeout"])',
        '        return refused_command_fallback(self.p["on_bad_command"], 0.0 if not self.lockstep else '
        'self.p["command_timeout"])',
        "a lockstep simulator's refusal of a command names brakes it does not have (its command_timeout is off)",
        (
            "test/ros/test_command_sources.py::"
            "test_the_lockstep_simulator_refuses_two_publishers_and_steps_on_the_last_valid_command",
        ),
        area="nodes",
    ),
    Mutation(
        "goal_gains_keyed_without_weights",
        "vi_control/planning/ddp.py",
        "key = (X[0].tobytes(), U[0].tobytes(), *(_weight_key(w) for w in weights))",
        "key = (X[0].tobytes(), U[0].tobytes())",
        "a goal's remembered guess gains are reused for other weights (a re-plan after the lqr weights changed)",
        (
            "test/planning/test_planning_initial_guess.py::test_a_goal_references_gains_are_remembered_per_goal_and_weights",
        ),
        area="planning",
    ),
    Mutation(
        "ddp_stops_early",
        "vi_control/planning/ddp.py",
        "if abs(d1) < tolerance:",
        "if abs(d1) < 1e3 * tolerance:",
        "DDP declares convergence 1000× too early (the one loop, for compiled and numpy stages alike)",
        ("test/planning/test_planning_task.py",),
    ),
    Mutation(
        "kernel_box_qp_clamps_any_bound",
        "vi_control/planning/csrc/ddp_kernel.c",
        "const int clamped = (x[i] <= lo[i] && grad[i] > 0) || (x[i] >= hi[i] && grad[i] < 0);",
        "const int clamped = (x[i] <= lo[i]) || (x[i] >= hi[i]);",
        "the backward pass's box QP (C) keeps an input at its bound though the cost pulls it inside",
        ("test/planning/test_planning_solvers.py",),
        area="planning",
    ),
    Mutation(
        "stale_timeout_doubled",
        "vi_control/control/intake.py",
        "tol = self.timeout",
        "tol = 2 * self.timeout",
        "the controller's stale timeout doubled (stamp check)",
        (T_ROS_WIRING,),
        issue=True,
        area="nodes",
    ),
    Mutation(
        "watchdog_timeout_doubled",
        "vi_control/ros/controller_node.py",
        'return age if age > float(self.p["state_timeout"]) else None',
        'return age if age > 2 * float(self.p["state_timeout"]) else None',
        "the stale timeout on the node's clock doubled (the watchdog's, the tick's, the safe command's)",
        (T_ROS_WIRING,),
    ),
    Mutation(
        "command_order_reversed",
        "vi_control/ros/controller_node.py",
        "np.take(u, self.cmd_index, out=self.cmd.data)",
        "np.take(u, self.cmd_index[::-1], out=self.cmd.data)",
        "the controller's command order reversed",
        (T_ROS_WIRING,),
        issue=True,
    ),
    Mutation(
        "safe_damping_ignores_measured_velocity",
        "vi_control/control/intake.py",
        "velocity = qdot.copy() if qdot is not None else self.vi.velocity(x)",
        "velocity = self.vi.velocity(x)",
        "safe damping from the estimate's q̇, not the measured one",
        (T_ROS_WIRING,),
        issue=True,
        area="nodes",
    ),
    Mutation(
        "safe_damping_of_a_stale_velocity",
        "vi_control/control/runner.py",
        "if state is not None and fresh else None",
        "if state is not None else None",
        "the safe command damps a stale q̇ (a constant torque for as long as states stay away)",
        (T_ROS_WIRING, "test/control/test_control_runner.py", "test/ros/test_ros_dds.py"),
        area="nodes",
    ),
    Mutation(
        "safe_damping_hold_from_the_timer_rate",
        "vi_control/control/runner.py",
        'if trigger == "timer":',
        "if True:",
        "joint_state trigger: the safe damping capped for the timer's 1/rate, not the states' interval",
        (T_ROS_WIRING, "test/control/test_safe_damping.py"),
        area="nodes",
    ),
    Mutation(
        "safe_damping_cap_from_the_diagonal",
        "vi_control/control/runner.py",
        "rows = np.abs(V[:, act]).sum(axis=0)",
        "rows = np.abs(np.diag(V[:, act]))",
        "the damping cap from (M⁻¹)_ii alone (not a bound: coupling makes a mode reverse)",
        ("test/control/test_safe_damping.py",),
        area="nodes",
    ),
    Mutation(
        "simulator_ignores_mass_scale",
        "vi_control/ros/simulator_node.py",
        'self.robot, urdf = self.load_robot(mass_scale=float(p["mass_scale"]))',
        "self.robot, urdf = self.load_robot()",
        "the simulator ignores mass_scale",
        (T_ROS_WIRING,),
        issue=True,
    ),
    Mutation(
        "simulator_command_order_reversed",
        "vi_control/ros/simulator_node.py",
        "self.u = u[self.perm]",
        "self.u = u[self.perm[::-1]]",
        "the simulator applies commands reversed",
        (T_ROS_WIRING,),
    ),
    Mutation(
        "gain_scale_ignored",
        "vi_control/control/tracking.py",
        "K=plan.K * s,",
        "K=plan.K,",
        "the controller's gain_scale leaves the time-varying gains",
        ("test/ros/test_ros_interfaces.py::test_goal_tolerance_and_live_gain_scale",),
        area="nodes",
    ),
    Mutation(
        "plan_entered_a_step_late",
        "vi_control/control/runner.py",
        "elif plan_step(t, t0, plan.dt) < 0:",
        "elif plan_step(t, t0, plan.dt) < 1:",
        "a plan entered one step after its stated start",
        (T_ROS_WIRING,),
        area="nodes",
    ),
    Mutation(
        "wire_velocity_without_half_step",
        "vi_control/control/tracking.py",
        "y[vi.nq + vi.idx_act] += 0.5 * vi.dt * holding_torque(vi, y[: vi.nq])",
        "y[vi.nq + vi.idx_act] += 0.0 * vi.dt * holding_torque(vi, y[: vi.nq])",
        "published joint velocity M⁻¹p_k without the holding torque's half step (a held arm reported moving)",
        ("test/mechanics/test_velocities.py",),
    ),
    Mutation(
        "lockstep_steps_on_any_answer",
        "vi_control/ros/simulator_node.py",
        "if self.lockstep and not self._answers_this_state(msg):",
        "if False:",
        "a lockstep simulator steps on every command, also a second answer to a republished state",
        (
            "test/ros/test_ros_interfaces.py::test_lockstep_simulator_steps_once_per_state_whatever_answers_it",
            "test/ros/test_ros_lockstep.py",
        ),
    ),
    Mutation(
        "newton_tolerance_absolute_again",
        "vi_control/integrators/newton_settings.py",
        "return self.p_unit + momentum_norm_inf",
        "return 1.0 + momentum_norm_inf",
        "the Lie-group VI's Newton loop (and the tests' oracles) stop on an absolute momentum residual (a milligram "
        "model stops early)",
        ("test/integrators/test_integrator_units.py",),
    ),
    Mutation(
        "bordered_condition_in_mixed_units",
        "vi_control/mechanics/csrc/dense_lu.c",
        "const int e = vi_border_exponent(J, n, nd);",
        "const int e = 0;",
        "the step, the planner's kernel and linearize judge the bordered matrix [M/Δt, −Dhᵀ; Dh, 0] unequilibrated "
        "again (a four-bar × 2¹⁹ refused as singular)",
        ("test/integrators/test_constrained_units.py", "test/integrators/test_step_backends.py"),
        area="integrators",
    ),
    Mutation(
        "constraint_rows_in_metres_again",
        "vi_control/mechanics/csrc/newton_driver.c",
        "ldexp(1.0, 2 * vi_border_exponent(J, ny, nd))",
        "1.0",
        "the compiled step's stopping rule reads h(q_{k+1}) in metres against a momentum tolerance (× 2¹⁹: a "
        "near double root accepted 1e-3 from it)",
        ("test/integrators/test_constrained_units.py::test_a_near_singular_constraint_term_is_flagged_at_any_scale",),
        area="integrators",
    ),
    Mutation(
        "ddp_regularization_absolute_again",
        "vi_control/planning/ddp.py",
        "c = regularization_unit(cost, stages.linearization(lin_list)[0].B) if metric is None else 1.0",
        "c = 1.0",
        "DDP's regularization bounds in absolute units again (a cost in other units stops off the optimum)",
        ("test/planning/test_planning_units.py",),
    ),
    Mutation(
        "dmoc_newton_in_si_units",
        "vi_control/planning/dmoc_conditions.py",
        "    if not (p > 0.0 and p != 1.0):",
        "    if True:",
        "DMOC's Newton judged in SI units again (a light spacecraft 'converged' at its initial guess, a heavy "
        "one is reported unconverged)",
        ("test/planning/test_dmoc_units.py",),
    ),
    Mutation(
        "dmoc_scaled_jacobian_by_sparse_products",
        "vi_control/planning/dmoc_newton.py",
        "            Js.data *= factor\n            return Js",
        "            return (sp.diags(1.0 / rs) @ Js @ sp.diags(cs)).tocsc()",
        "DMOC's scaled Newton matrix built by sparse products (drops zero entries: structurally singular at a "
        "heave goal, where SuperLU can crash the process)",
        ("test/planning/test_dmoc_units.py::test_the_scaled_newton_matrix_keeps_its_structure",),
    ),
    Mutation(
        "driver_callbacks_shared_between_threads",
        "vi_control/mechanics/codegen.py",
        'lines.append(f"static __thread vi_generated_fn vi_cb_{n};")',
        'lines.append(f"static vi_generated_fn vi_cb_{n};")',
        "the Newton driver over the VM keeps one set of function pointers for all threads: a model stepped in another "
        "thread evaluates this one's functions",
        ("test/integrators/test_step_backends.py::test_drivers_over_the_vm_in_two_threads_keep_their_own_functions",),
        area="integrators",
    ),
    Mutation(
        "rdp_c_group_momentum_not_carried",
        "vi_control/integrators/csrc/rdp_driver.c",
        "    for (long long i = 0; i < 3; i++) P[2 * ns + i] = out[3 + 2 * ns + i];\n",
        "",
        "the compiled RDP keeps μ⁺_0 in eq. 27's momentum jump instead of carrying μ⁺_k from step to step",
        ("test/integrators/test_rdp_compiled.py",),
    ),
    Mutation(
        "rdp_c_stopping_rule_absolute",
        "vi_control/integrators/csrc/rdp_driver.c",
        "const double scale = p1 + vi_maxabs(P + ns, ns + 3);",
        "const double scale = p1;",
        "the compiled RDP's stopping rule without the step's momentum (not NewtonSettings' rule: the driver and the "
        "tests' oracle stop at different iterates)",
        ("test/integrators/test_rdp_compiled.py",),
    ),
    Mutation(
        "first_state_republish_stamped_on_receipt",
        "vi_control/control/intake.py",
        "return t == 0.0 and not (last_stamp == 0.0 and now <= window)",
        "return t == 0.0",
        "a lockstep simulator's first state, republished after its first step's clock, stamped on receipt (by "
        "the controller's intake and the planner: one rule)",
        (
            "test/control/test_control_intake.py::test_a_zero_stamp_on_a_clock_at_zero_is_a_true_one",
            "test/ros/test_ros_realtime.py::test_the_first_state_republished_after_the_clock_moved_on_is_still_the_"
            "first_state",
            "test/ros/test_ros_lockstep.py::test_the_planner_takes_the_first_state_republished_after_the_clock_moved_"
            "on_for_the_first_state",
        ),
        area="nodes",
    ),
    Mutation(
        "task_memo_not_handed_on",
        "vi_control/planning/task.py",
        "_resolved: dict = field(default_factory=dict, repr=False, compare=False)",
        "_resolved: dict = field(default_factory=dict, init=False, repr=False, compare=False)",
        "a task made by dataclasses.replace (an MPC window, a request's goal) starts with an empty weight memo: a "
        "shrinking horizon parses the task's weights for each new window length (~0.4 ms a panda cycle)",
        (
            "test/planning/test_planning_mpc.py::test_cycles_parse_no_weights_and_plan_as_fresh_tasks",
            "test/planning/test_planning_mpc.py::test_a_shrinking_horizons_windows_share_the_weights_parsed_once",
        ),
    ),
    Mutation(
        "task_memo_unbounded",
        "vi_control/planning/task.py",
        "            self._resolved.clear()\n",
        "            pass\n",
        "the weight memo that tasks made from one task share grows with every new set of weights (a node's requests)",
        ("test/planning/test_planning_mpc.py::test_a_shrinking_horizons_windows_share_the_weights_parsed_once",),
    ),
    Mutation(
        "derived_plan_times_unchecked",
        "vi_control/control/plan.py",
        '        _finite("times", times)\n        _check_times(times, self.dt)\n',
        "",
        "a plan derived by shifted/receded/fitted is not checked at all: shifted to a clock too far out to resolve Δt, "
        "or to a NaN, it is a plan construction would refuse",
        ("test/control/test_plan_file.py::test_shifted_receded_and_fitted_plans_are_plans_construction_accepts",),
    ),
    Mutation(
        "backward_fallback_flag_not_cleared",
        "vi_control/planning/csrc/ddp_kernel.c",
        "    *flags = 0;\n",
        "",
        "a Newton pass that fell back to Gauss–Newton within the call still reports second order: DDP records a "
        "Gauss–Newton step as Newton's and tries Newton again at once where its model was not convex",
        (
            ""
            ""
            "test/planning/test_planning_compiled.py::test_a_failed_newton_pass_falls_back_to_gauss_newton_within_the_call",
        ),
    ),
    Mutation(
        "ddp_fallback_not_heeded",
        "vi_control/planning/ddp.py",
        "            if newton and not stages.second_order_taken:",
        "            if False:",
        "DDP ignores that its Newton pass fell back: the step is recorded as Newton's and the next iteration tries "
        "Newton again where the model was not convex",
        (
            "test/planning/test_planning_solvers.py::"
            "test_a_newton_pass_that_fails_gives_a_gauss_newton_step_and_one_iteration_without_newton",
        ),
    ),
    Mutation(
        "late_tick_at_two_periods",
        "vi_control/ros/supervision.py",
        "        if gap > self.LATE_PERIODS * self.period:\n",
        "        if gap >= self.LATE_PERIODS * self.period:\n",
        "a tick exactly two periods after the last is counted late: the controller's loop reports a missed command "
        "period where none was missed",
        (
            ""
            ""
            "test/ros/test_ros_monitoring_readback.py::test_loop_timing_counts_a_tick_more_than_two_periods_after_the_last",
        ),
    ),
    Mutation(
        "loop_window_not_reset",
        "vi_control/ros/supervision.py",
        "        self._late, self._gap, self._age = 0, 0.0, 0.0\n        return out\n",
        "        return out\n",
        "the controller's /diagnostics window of loop timing never starts anew: a late tick at start-up is reported "
        "in every later period, and a starved plan cannot be told from a starved start",
        (
            ""
            ""
            "test/ros/test_ros_monitoring_readback.py::test_controller_reports_its_late_ticks_and_state_age_in_diagnostics",
        ),
    ),
    Mutation(
        "mpc_cycle_accepts_any_finite",
        "vi_control/planning/mpc.py",
        "return bool(np.isfinite(cost)) and (bool(converged) or bool(merit <= warm_merit))",
        "return bool(np.isfinite(cost))",
        "an MPC cycle stopped at its iteration cap is accepted even where its merit is above that of the executing "
        "plan's continuation: the controller switches to a worse plan",
        T_MPC,
    ),
    Mutation(
        "mpc_cycle_accepts_nonfinite",
        "vi_control/planning/mpc.py",
        "return bool(np.isfinite(cost)) and (bool(converged) or bool(merit <= warm_merit))",
        "return bool(converged) or bool(merit <= warm_merit)",
        "an MPC cycle of a non-finite cost is accepted (converged, or cold: no continuation to compare with): the "
        "controller is handed a plan of NaN",
        T_MPC,
    ),
    Mutation(
        "al_merit_of_the_last_subproblem",
        "vi_control/planning/augmented.py",
        "        first = sub if first is None else first\n",
        "        first = sub\n",
        "the augmented Lagrangian reports its result's merit under its last multiplier and penalty, its start's under "
        "its first: a capped MPC cycle of a terminal-constrained task is accepted or refused on two different measures",
        T_MPC,
    ),
    Mutation(
        "mpc_first_command_unclipped",
        "vi_control/planning/mpc.py",
        "            u0 = np.clip(u0, -self._limits, self._limits)\n",
        "            pass\n",
        "a cycle's step 0 (the executing law's command) is not clamped to the task's input limits: a plan whose U_0 "
        "is beyond the effort limits",
        T_MPC,
    ),
    Mutation(
        "mpc_off_grid_continues",
        "vi_control/planning/mpc.py",
        "abs(t_start - executing.times[0] - k * executing.dt) <= 0.25 * executing.dt",
        "abs(t_start - executing.times[0] - k * executing.dt) <= 0.75 * executing.dt",
        "a cycle whose start lies between two steps of the executing plan continues that law's nearest step as if "
        "it started there",
        T_MPC,
    ),
    Mutation(
        "mpc_warm_start_one_step_behind",
        "vi_control/planning/mpc.py",
        "warm = executing.receded(k + 1).fitted(",
        "warm = executing.receded(k).fitted(",
        "a cycle is warm-started from the executing plan receded to its step 0 (the law's), not to step 1 where the "
        "window it optimizes starts: the guess lags the state by one step",
        T_MPC,
    ),
    Mutation(
        "mpc_period_equal_dt_refused",
        "vi_control/planning/mpc.py",
        "if s.period < vi.dt - 1e-12:",
        "if s.period <= vi.dt:",
        "an MPC period of exactly one step is refused",
        T_MPC,
    ),
    Mutation(
        "mpc_overrun_queues_a_cycle",
        "vi_control/ros/planner_node.py",
        "                f\"plan goes on ({self.mpc_counts['overruns']} overruns)\",\n"
        "            )\n            return\n",
        "                f\"plan goes on ({self.mpc_counts['overruns']} overruns)\",\n            )\n",
        "an MPC tick that finds a cycle still solving queues the next cycle behind it: it then plans from a state "
        "already old, and a slow machine falls ever further behind",
        (
            ""
            ""
            "test/ros/test_nodes_in_process.py::test_an_mpc_cycle_that_overruns_its_period_is_counted_and_the_last_plan_goes_on",
        ),
    ),
    Mutation(
        "mpc_overrun_not_counted",
        "vi_control/ros/planner_node.py",
        '            self.mpc_counts["overruns"] += 1\n',
        "",
        "an MPC cycle that overran its period is not counted: /diagnostics stays OK while the arm runs older plans",
        (
            ""
            ""
            "test/ros/test_nodes_in_process.py::test_an_mpc_cycle_that_overruns_its_period_is_counted_and_the_last_plan_goes_on",
        ),
    ),
    Mutation(
        "merge_extrapolates_unbounded",
        "vi_control/control/joint_merge.py",
        "if a is not None and b[0] - a[0] <= max_age and t - b[0] <= max_age:",
        "if a is not None and b[0] - a[0] <= max_age:",
        "a silent driver's joints are extrapolated from its last two samples however long ago they came",
        T_INTAKE,
    ),
    Mutation(
        "merge_interpolates_across_a_gap",
        "vi_control/control/joint_merge.py",
        "if a is not None and b[0] - a[0] <= max_age and t - b[0] <= max_age:",
        "if a is not None and t - b[0] <= max_age:",
        "a driver's joints are interpolated between two samples however far apart (across the driver's stall)",
        T_INTAKE,
    ),
    Mutation(
        "merge_no_wrap",
        "vi_control/control/joint_merge.py",
        "            d[self.mask] = wrap_angle(d[self.mask])\n",
        "",
        "a continuous joint is interpolated across its ±π wrap the long way round",
        T_INTAKE,
    ),
    Mutation(
        "merge_resets_on_any_out_of_order",
        "vi_control/control/joint_merge.py",
        "if group is not None and t < group.newest - self.max_age:",
        "if group is not None and t < group.newest:",
        "a driver's message that arrives after a newer one of its own (out of order by less than max_age) starts "
        "every group afresh",
        T_INTAKE,
    ),
    Mutation(
        "merge_same_stamp_dropped",
        "vi_control/control/joint_merge.py",
        "        if self.last is not None and t < self.last:\n            return None\n",
        "        if self.last is not None and t <= self.last:\n            return None\n",
        "a partial message at the last merged stamp again (a republished state) gives nothing instead of that state",
        T_INTAKE,
    ),
    Mutation(
        "merge_trigger_first",
        "vi_control/control/joint_merge.py",
        "key=lambda g: (g.newest, g is trigger)",
        "key=lambda g: (g.newest, g is not trigger)",
        "of two drivers' samples of a joint at the same stamp, the other driver's wins over the message being merged",
        T_INTAKE,
    ),
    Mutation(
        "merge_keeps_two",
        "vi_control/control/joint_merge.py",
        "_KEEP = 8\n",
        "_KEEP = 2\n",
        "only two samples per driver are kept: a slow driver's first message finds no fast-driver sample before it",
        T_INTAKE,
    ),
    Mutation(
        "merge_single_sample_without_age",
        "vi_control/control/joint_merge.py",
        "if v_i is not None and t - t_i <= max_age:",
        "if v_i is not None:",
        "a driver's one sample is extrapolated with its velocity however old it is",
        T_INTAKE,
    ),
    Mutation(
        "goal_duration_at_full_speed",
        "vi_control/planning/requests.py",
        "need = np.max(dq[bounded] / (GOAL_SPEED_FRACTION * vlim[bounded]), initial=0.0)",
        "need = np.max(dq[bounded] / vlim[bounded], initial=0.0)",
        "a goal's straight path is timed at the joints' full URDF velocity limits, not a quarter of them",
        T_REQUESTS,
    ),
    Mutation(
        "goal_duration_ignores_task_horizon",
        "vi_control/planning/requests.py",
        "return float(np.ceil(max(minimum, need, vi.dt) / vi.dt - 1e-9) * vi.dt)",
        "return float(np.ceil(max(need, vi.dt) / vi.dt - 1e-9) * vi.dt)",
        "a goal near the start is reached as fast as the velocity limits allow, not over the task's horizon",
        T_REQUESTS,
    ),
    Mutation(
        "path_task_keeps_task_weights",
        "vi_control/planning/requests.py",
        'running = {k: task.lqr.get(k, task.weights[k]) for k in ("Q", "R")}',
        'running = {k: task.weights[k] for k in ("Q", "R")}',
        "a request's path is tracked with the task's soft goal-seeking weights instead of its TV-LQR weights",
        T_REQUESTS,
    ),
    Mutation(
        "verify_plan_no_effort",
        "vi_control/planning/requests.py",
        "    effort = np.full(vi.n_torques, np.inf) if limits is None else limits[: vi.n_torques]\n",
        "    effort = np.full(vi.n_torques, np.inf)\n",
        "a request's plan is not checked against the effort limits the task plans under",
        T_REQUESTS,
    ),
    Mutation(
        "schedule_no_replacement",
        "vi_control/control/schedule.py",
        "        self.plans = self.remaining(float(plan.times[0])) + [plan]\n",
        "        self.plans = self.plans + [plan]\n",
        "a published plan does not replace the plans that start no earlier",
        ("test/control/test_plan_schedule.py",),
    ),
    Mutation(
        "schedule_prunes_the_running",
        "vi_control/control/schedule.py",
        "            self.plans = self.plans[next(i for i, p in enumerate(self.plans) if p is running) :]\n",
        "            self.plans = self.plans[next(i for i, p in enumerate(self.plans) if p is running) + 1 :]\n",
        "pruning forgets the plan that is running as well",
        ("test/control/test_plan_schedule.py",),
    ),
    Mutation(
        "schedule_in_force_from_step_one",
        "vi_control/control/schedule.py",
        "            if plan_step(t, float(p.times[0]), p.dt) >= 0:\n",
        "            if plan_step(t, float(p.times[0]), p.dt) > 0:\n",
        "a plan is in force only from its second step: at its own start the one before is predicted to run",
        ("test/control/test_plan_schedule.py",),
    ),
    Mutation(
        "schedule_predicts_past_the_end",
        "vi_control/control/schedule.py",
        "            if p is None or ti >= p.times[-1]:\n",
        "            if p is None or ti > p.times[-1]:\n",
        "at a plan's last instant the prediction steps its law once more (past X_N) instead of holding",
        ("test/control/test_plan_schedule.py",),
    ),
    Mutation(
        "plan_any_hash_refused_without_own",
        "vi_control/ros/messages.py",
        "    if model_hash and plan_hash != model_hash:\n",
        "    if plan_hash != model_hash:\n",
        "a node without a model hash of its own (an empty one: accept any plan) refuses every plan",
        T_CODECS,
    ),
    Mutation(
        "plan_trailing_bytes_accepted",
        "vi_control/ros/messages.py",
        "if n_values > _MAX_VALUES or len(buf) != _HEADER.size + 8 * n_values:",
        "if n_values > _MAX_VALUES or len(buf) < _HEADER.size + 8 * n_values:",
        "a plan message longer than its header's sizes say (a different layout, or two messages run together) is "
        "read as its first part",
        T_CODECS,
    ),
    Mutation(
        "plan_nonfinite_t0_accepted",
        "vi_control/ros/messages.py",
        "    if not (np.isfinite(dt) and dt > 0 and np.isfinite(t0)):\n",
        "    if not (np.isfinite(dt) and dt > 0):\n",
        "a plan whose start time is NaN or inf is decoded (its times all NaN)",
        T_CODECS,
    ),
    Mutation(
        "joint_state_velocity_count_ignored",
        "vi_control/ros/messages.py",
        "        if len(v) != n:\n            return t, False\n",
        "        if len(v) < n:\n            return t, False\n",
        "a raw joint state with more velocities than names has its first ones taken as the joints' velocities",
        T_CODECS,
    ),
    Mutation(
        "joint_state_raw_nan_positions",
        "vi_control/ros/messages.py",
        "            if not self._finite(self.q):\n"
        '                raise ValueError("joint state positions contain NaN/inf")\n'
        "            _, v = _read_doubles(buf, off)\n",
        "            _, v = _read_doubles(buf, off)\n",
        "the raw joint-state reader passes NaN positions on (to be refused later, or not, by whoever reads them)",
        T_CODECS,
    ),
    Mutation(
        "joint_state_doubles_unbounded",
        "vi_control/ros/messages.py",
        "    if offset + 8 * count > len(buf):",
        "    if False:",
        "a joint state declaring more doubles than its bytes hold fails in numpy with a message naming nothing",
        T_CODECS,
    ),
    Mutation(
        "runner_readmits_an_older_plan",
        "vi_control/control/runner.py",
        "        if seq == self.last_seq or seq in self._admitted:\n",
        "        if seq == self.last_seq:\n",
        "a plan re-published after a newer one was admitted is admitted again and replaces it",
        T_RUNNER,
    ),
    Mutation(
        "runner_dt_at_the_range_edge_refused",
        "vi_control/control/runner.py",
        "        if not lo <= plan.dt <= hi:\n",
        "        if not lo < plan.dt < hi:\n",
        "a plan whose Δt is exactly at the edge of the accepted range is refused",
        T_RUNNER,
    ),
    Mutation(
        "runner_later_plan_replaces_the_waiting",
        "vi_control/control/runner.py",
        "if start_on_receipt or waiting is None or waiting[2] or "
        "replaces(plan.times[0], waiting[1].times[0], plan.dt):",
        "if True:",
        "an MPC cycle's plan that arrives before the previous cycle's has started replaces it instead of following it",
        T_RUNNER,
    ),
    Mutation(
        "runner_retimes_a_plan_on_the_running_timeline",
        "vi_control/control/runner.py",
        "        if late > 1 and running:\n",
        "        if late > 2 and running:\n",
        "a plan two steps late, planned on the running plan's timeline, is re-timed as if the robot were at rest",
        T_RUNNER,
    ),
    Mutation(
        "runner_retime_to_a_past_instant",
        "vi_control/control/runner.py",
        "                m = late if t0 + late * plan.dt >= t else late + 1\n",
        "                m = late\n",
        "a late plan re-timed to a grid instant already past: its U_0 runs part of a step that began before now",
        T_RUNNER,
    ),
    Mutation(
        "runner_retime_ignores_velocity",
        "vi_control/control/runner.py",
        '            if max(gap, ev) <= self.p["retime_tolerance"]:\n',
        '            if gap <= self.p["retime_tolerance"]:\n',
        "a late plan is re-timed when the robot is at X_0's configuration but moving: its first steps then fight the "
        "motion",
        T_RUNNER,
    ),
    Mutation(
        "runner_path_tolerance_skips_the_last_state",
        "vi_control/control/runner.py",
        '        if p["path_tolerance"] > 0 and k <= plan.horizon:\n',
        '        if p["path_tolerance"] > 0 and k < plan.horizon:\n',
        "the path tolerance is not checked at the plan's last state",
        T_RUNNER,
    ),
    Mutation(
        "runner_goal_time_tolerance_at_the_instant",
        "vi_control/control/runner.py",
        '            elif t > plan.times[-1] + p["goal_time_tolerance"]:\n',
        '            elif t >= plan.times[-1] + p["goal_time_tolerance"]:\n',
        "a plan is aborted for its goal exactly at the end of goal_time_tolerance, not after it",
        T_RUNNER,
    ),
    Mutation(
        "runner_clock_back_half_step",
        "vi_control/control/runner.py",
        "        if plan is None or t >= plan.times[0] - 0.5 * plan.dt:\n",
        "        if plan is None or t >= plan.times[0]:\n",
        "after a simulator reset to half a step before a plan's start, the plan is dropped back to pending "
        "instead of kept (its step 0 began)",
        T_RUNNER,
    ),
    Mutation(
        "limits_position_at_the_bound_refused",
        "vi_control/control/intake.py",
        "        bad = (q < self.lo) | (q > self.hi)\n",
        "        bad = (q <= self.lo) | (q >= self.hi)\n",
        "a joint exactly at its (widened) position limit is refused",
        T_INTAKE,
    ),
    Mutation(
        "limits_velocity_at_the_bound_refused",
        "vi_control/control/intake.py",
        "        bad = np.abs(qdot) > factor * self.vmax\n",
        "        bad = np.abs(qdot) >= factor * self.vmax\n",
        "a joint exactly at its velocity bound is refused",
        T_INTAKE,
    ),
    Mutation(
        "limits_no_margin",
        "vi_control/control/intake.py",
        "        lo = np.array([j.lower for j in robot.joints], float) - position_margin\n",
        "        lo = np.array([j.lower for j in robot.joints], float)\n",
        "the position margin widens only the upper limits: a joint resting on its lower end stop is refused",
        T_INTAKE,
    ),
    Mutation(
        "limits_velocity_without_urdf_limit_unbounded",
        "vi_control/control/intake.py",
        "        self.vmax = np.where(np.isfinite(vlim) & (vlim > 0), velocity_factor * vlim, max_velocity)\n",
        "        self.vmax = velocity_factor * vlim\n",
        "a joint whose URDF gives no velocity limit (0 or none) is refused at any speed, or never",
        T_INTAKE,
    ),
    Mutation(
        "stamp_future_at_the_tolerance_refused",
        "vi_control/control/intake.py",
        "        if t - now > tol:\n",
        "        if t - now >= tol:\n",
        "a state stamped exactly state_timeout ahead of the node's clock is refused",
        T_INTAKE,
    ),
    Mutation(
        "stamp_stale_at_the_tolerance_refused",
        "vi_control/control/intake.py",
        "        if now - t > tol:\n",
        "        if now - t >= tol:\n",
        "a state exactly state_timeout old is refused as stale",
        T_INTAKE,
    ),
    Mutation(
        "stamp_back_not_refused",
        "vi_control/control/intake.py",
        "            if now >= self.last_stamp - tol:  # (a clock that itself jumped back re-arms the check)\n",
        "            if False:\n",
        "a state stamped before the last one is taken as a clock reset, never refused",
        T_INTAKE,
    ),
    Mutation(
        "overspeed_trust_ignored",
        "vi_control/control/intake.py",
        "            why = self.limits.overspeed(qdot, OVERSPEED_TRUST)  # (beyond that: no plausible reading)\n",
        "            why = None\n",
        "a measured velocity of any size is taken as the robot's own over-speed, never refused as implausible",
        T_INTAKE,
    ),
    Mutation(
        "receded_to_its_end",
        "vi_control/control/plan.py",
        "        if not is_integer(steps) or not 0 <= steps < n:\n",
        "        if not is_integer(steps) or not 0 <= steps <= n:\n",
        "a plan receded by its whole horizon (nothing of it left: only its hold) is accepted",
        T_PLAN_DERIVED,
    ),
    Mutation(
        "held_without_the_hold_input",
        "vi_control/control/plan.py",
        "        u_hold = self.U[-1] if self.U_final is None else self.U_final\n",
        "        u_hold = self.U[-1]\n",
        "a plan padded past its end repeats its last input instead of its hold input U_final",
        T_PLAN_DERIVED,
    ),
    Mutation(
        "held_without_the_hold_gain",
        "vi_control/control/plan.py",
        "        k_hold = self.K[-1] if self.K_final is None else self.K_final\n",
        "        k_hold = self.K[-1]\n",
        "a plan padded past its end repeats its last gain instead of its hold gain K_final",
        T_PLAN_DERIVED,
    ),
    Mutation(
        "held_times_not_advanced",
        "vi_control/control/plan.py",
        "            self.times[0] + (np.arange(N + 1) + start) * self.dt,\n",
        "            self.times[0] + np.arange(N + 1) * self.dt,\n",
        "a receded plan keeps the original start time instead of times[steps]",
        T_PLAN_DERIVED,
    ),
    Mutation(
        "controller_no_stale_hold",
        "vi_control/ros/controller_node.py",
        '            self.p["stale_hold_time"]\n        )\n',
        "            0.0\n        )\n",
        "stale joint states get zero torque at once instead of the last valid state's gravity torque for "
        "stale_hold_time: a real arm falls when its driver pauses",
        (
            "test/ros/test_ros_mujoco_plant.py::test_panda_held_through_stale_joint_states_and_recovers",
            "test/ros/test_ros_wiring.py::test_two_actuator_controllers_command_in_joint_order_and_go_safe_on_time",
            "test/ros/test_nodes_in_process.py",
            "test/ros/test_ros_monitoring_readback.py",
        ),
    ),
    Mutation(
        "controller_stale_at_the_timeout",
        "vi_control/ros/controller_node.py",
        '        return age if age > float(self.p["state_timeout"]) else None\n',
        '        return age if age >= float(self.p["state_timeout"]) else None\n',
        "a joint state exactly state_timeout old is stale",
        (
            "test/ros/test_ros_mujoco_plant.py::test_panda_held_through_stale_joint_states_and_recovers",
            "test/ros/test_ros_wiring.py::test_two_actuator_controllers_command_in_joint_order_and_go_safe_on_time",
            "test/ros/test_nodes_in_process.py",
            "test/ros/test_ros_monitoring_readback.py",
        ),
    ),
    Mutation(
        "law_holds_at_the_last_step",
        "vi_control/control/tracking.py",
        "        if k >= self.horizon:\n            return self.plan.X[-1], self.U_final, self.K_final\n",
        "        if k > self.horizon:\n            return self.plan.X[-1], self.U_final, self.K_final\n",
        "at k = N (the plan's end) the law reads past its arrays (an IndexError) instead of holding",
        T_LAW,
    ),
    Mutation(
        "law_integrates_every_tick",
        "vi_control/control/tracking.py",
        "            if k > self._integrated_k:  # once per step of the plan's grid (a faster timer repeats k)\n",
        "            if True:\n",
        "the hold's integral grows once per tick instead of once per step: a timer faster than 1/Δt winds it up faster",
        T_LAW,
    ),
    Mutation(
        "law_integral_unclamped",
        "vi_control/control/tracking.py",
        "                self.z = np.clip(self.z + e[self.actuated_q] * self.plan.dt, -bound, bound)\n",
        "                self.z = self.z + e[self.actuated_q] * self.plan.dt\n",
        "the hold's integral is not clamped (windup: an arm held against an end stop builds torque without bound)",
        T_LAW,
    ),
    Mutation(
        "law_hold_about_x_N",
        "vi_control/control/tracking.py",
        "        law_plan.X[-1] = equilibrium_state(vi, plan.X[-1, : vi.nq])\n",
        "        pass\n",
        "after the horizon the law holds X_N (a moving state) instead of the equilibrium the hold gain was computed "
        "about",
        T_LAW,
    ),
    Mutation(
        "replaces_at_the_same_step",
        "vi_control/control/tracking.py",
        "    return plan_step(t0_new, t0_old, dt) <= 0\n",
        "    return plan_step(t0_new, t0_old, dt) < 0\n",
        "a plan starting at the same step as the waiting one follows it instead of replacing it",
        T_LAW,
    ),
    Mutation(
        "hold_law_without_gain_on_failure",
        "vi_control/control/tracking.py",
        "            K, x_eq = np.zeros((vi.nu, vi.state.ndx)), equilibrium_state(vi, q)\n",
        "            raise\n",
        "a pose without a hold gain (singular) is not held by its feed-forward: the hold raises",
        T_LAW,
    ),
    Mutation(
        "mpc_lead_not_capped_at_the_period",
        "vi_control/ros/planner_node.py",
        "                expected = min(expected, self.mpc.settings.period)\n",
        "",
        "an MPC cycle's solve-time lead is the planner's expected solve time (a cold plan's), not at most one period: "
        "each cycle starts seconds ahead",
        (
            ""
            ""
            "test/ros/test_ros_mpc.py::test_mpc_swings_up_and_holds_a_heavier_pendulum_with_a_weaker_actuator_where_tvlqr_falls",
        ),
    ),
    Mutation(
        "mpc_continues_the_latest_plan",
        "vi_control/ros/planner_node.py",
        "                executing = PlanSchedule.in_force(self.schedule.remaining(t_start), t_start)\n",
        "                executing = self.last_plan\n",
        "an MPC cycle continues the latest published plan, not the one that runs at its start",
        (
            ""
            ""
            "test/ros/test_nodes_in_process.py::test_an_mpc_cycle_continues_the_plan_that_runs_at_its_start_not_the_latest",
        ),
    ),
    Mutation(
        "plan_limits_velocity_without_factor",
        "vi_control/planning/limits.py",
        "    vmax = np.where(np.isfinite(vlim) & (vlim > 0), velocity_limit_factor * vlim, np.inf)\n",
        "    vmax = np.where(np.isfinite(vlim) & (vlim > 0), vlim, np.inf)\n",
        "a plan is checked against the URDF velocity limits themselves, not velocity_limit_factor × them: "
        "plans the controller accepts are refused",
        T_REQUESTS,
    ),
    Mutation(
        "plan_limits_effort_without_round_off",
        "vi_control/planning/limits.py",
        "        elim = np.where(elim > 0, elim * (1 + EFFORT_TOLERANCE), np.inf)\n",
        "        elim = np.where(elim > 0, elim, np.inf)\n",
        "an input the box QP left a round-off beyond its effort limit refuses the plan",
        T_REQUESTS,
    ),
    Mutation(
        "plan_limits_position_without_slack",
        "vi_control/planning/limits.py",
        "    slack_lo, slack_hi = 1e-9 * np.maximum(1.0, np.abs(lo)), 1e-9 * np.maximum(1.0, np.abs(hi))\n",
        "    slack_lo, slack_hi = 0.0 * lo, 0.0 * hi\n",
        "a plan ending on a position limit read back from text (a round-off beyond it) is refused",
        T_REQUESTS,
    ),
    Mutation(
        "mpc_sweep_entry_ignores_solve_time",
        "vi_control/sweep/rollout.py",
        "                pending = (max(k + lead, k + int(np.ceil(solves[-1] / dt - 1e-9))), cyc.plan)\n",
        "                pending = (k + lead, cyc.plan)\n",
        "the sweep's MPC enters a cycle's plan at its stated start whatever its solve took: MPC's robustness "
        "is measured without its delay",
        ("test/sweep/test_sweep_rollout.py",),
    ),
    Mutation(
        "mpc_sweep_lead_of_one_step",
        "vi_control/sweep/rollout.py",
        "            lead = max(1, int(np.ceil(1.5 * max(solves[-5:]) / dt - 1e-9))) if solves else 1\n",
        "            lead = 1\n",
        "the sweep's MPC plans every cycle one step ahead whatever its solves take: each plan is entered late",
        ("test/sweep/test_sweep_rollout.py",),
    ),
    Mutation(
        "mpc_sweep_cycles_while_pending",
        "vi_control/sweep/rollout.py",
        "        if k and k % m.steps_per_cycle == 0 and pending is None:\n",
        "        if k and k % m.steps_per_cycle == 0:\n",
        "the sweep's MPC starts a cycle while the last one's plan waits to be entered (a solver that runs "
        "twice at once)",
        ("test/sweep/test_sweep_rollout.py",),
    ),
    Mutation(
        "tree_damping_sign_in_R_y",
        "vi_control/mechanics/csrc/tree_derivatives.c",
        "Ry[i + j * n] = G[i * m2 + n + j] - (i == j ? damping[i] : 0.0);",
        "Ry[i + j * n] = G[i * m2 + n + j] + (i == j ? damping[i] : 0.0);",
        "the recursion's R_y with the joint damping's sign flipped (the panda's and arm7's DDP linearized wrong)",
        T_TREE,
        area="mechanics",
    ),
    Mutation(
        "tree_gravity_curvature_dropped",
        "vi_control/mechanics/csrc/tree_derivatives.c",
        "const double h = vt_dot6(Xk, GX) + vt_dot6(Yk, GY) + vt_dot3(Sk, Gw) + vt_dot6(Ek, GE);",
        "const double h = vt_dot6(Xk, GX) + vt_dot6(Yk, GY) + vt_dot6(Ek, GE);",
        "the second-order term by recursion without gravity's third derivative (V'_x·∂²f wrong under gravity)",
        T_TREE,
        area="mechanics",
    ),
    Mutation(
        "tree_twist_bracket_reversed",
        "vi_control/mechanics/csrc/tree_derivatives.c",
        "    vt_br(S, V, X);\n",
        "    vt_br(V, S, X);\n",
        "X_j = [S_j, V_j] as [V_j, S_j]: every velocity-product term of the recursions with the wrong sign",
        T_TREE,
        area="mechanics",
    ),
    Mutation(
        "kernel_tree_contracts_the_whole_covector",
        "vi_control/planning/csrc/ddp_kernel.c",
        "vi_tree_hessian(m.tree_i, m.tree_d, m.dt, z, Y + k * ny, mua, Vx + m.nq, H, nw, 0, ny, m.tree_w);",
        "vi_tree_hessian(m.tree_i, m.tree_d, m.dt, z, Y + k * ny, mua, Vx, H, nw, 0, ny, m.tree_w);",
        "the DDP kernel pairs D2L_d with V'_x's configuration part instead of its momentum part",
        (T_COMPILED,),
        area="planning",
    ),
    Mutation(
        "tree_budget_at_equality",
        "vi_control/mechanics/discrete.py",
        "        return self.functions.raw[name].n_instructions() > TREE_INSTRUCTIONS_PER_JOINT * self.nq\n",
        "        return self.functions.raw[name].n_instructions() >= TREE_INSTRUCTIONS_PER_JOINT * self.nq\n",
        "the recursion chosen at exactly its instruction budget",
        (T_COMPILED,),
    ),
    Mutation(
        "tree_covers_prescribed_joints",
        "vi_control/mechanics/discrete.py",
        "            and not robot.prescribed\n",
        "",
        "the recursion chosen for a step with prescribed joints (whose terms it does not have)",
        T_TREE,
    ),
    Mutation(
        "mpc_unfollowed_warm_start_has_a_continuation",
        "vi_control/planning/mpc.py",
        "        warm_cost = float(start) if res.warm_started else math.inf",
        "        warm_cost = float(start) if warm is not None else math.inf",
        "a cycle whose executing plan cannot be followed reports the cold guess's merit as its continuation's",
        T_MPC,
    ),
    Mutation(
        "mpc_cycle_at_a_plans_start_step",
        "vi_control/control/schedule.py",
        "        while any(plan_step(t0 + n * dt, float(p.times[0]), dt) == 0 for p in plans):\n            n += 1\n",
        "",
        "an MPC cycle may start at the step another scheduled plan starts at (which plan precedes it then depends "
        "on whether the controller has entered that one)",
        ("test/control/test_plan_schedule.py",),
    ),
    Mutation(
        "bag_write_error_raises",
        "vi_control/ros/bag.py",
        "            except OSError as e:\n                self._fail(e)\n"
        "                self.dropped += 1\n                return False\n",
        "            except OSError:\n                raise\n",
        "a full disk raises out of the recorder's subscription callback: the executor and every node on it stop",
        ("test/ros/test_bag_faults.py",),
    ),
    Mutation(
        "bag_stop_not_reported",
        "vi_control/ros/bag.py",
        "        if not self.file.write(topic, data) and self.file.error is not None and not self._reported:\n",
        "        if not self.file.write(topic, data) and self.file.error is not None and self._reported:\n",
        "the recording stops on a full disk without a word in the log",
        ("test/ros/test_bag_faults.py",),
    ),
    Mutation(
        "view_draws_a_state_shorter_than_its_names",
        "vi_control/ros/view_node.py",
        "        if len(state.position) != len(state.name):\n",
        "        if False:\n",
        "the live view indexes a joint state whose positions do not match its names: an IndexError out of its timer "
        "ends the executor (and the main job's recording on it)",
        ("test/ros/test_view_faults.py",),
    ),
    Mutation(
        "view_ghost_of_a_malformed_trajectory",
        "vi_control/ros/view_node.py",
        "        if any(len(p.positions) != len(names) for p in traj.points):\n",
        "        if False:\n",
        "the live view draws a ghost from a trajectory whose points do not match its joint names, without a word",
        ("test/ros/test_view_faults.py",),
    ),
    Mutation(
        "planner_supersede_silent",
        "vi_control/ros/planner_node.py",
        '            self._status(older, "superseded", f"request {job.id} came before it was solved")\n',
        "            pass\n",
        "a request replaced while it waited hears nothing: its sender waits for an outcome forever",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "planner_queue_keeps_the_older",
        "vi_control/ros/planner_node.py",
        "            older, self._pending = self._pending, job\n",
        "            older, self._pending = None, self._pending or job\n",
        "a request arriving while another waits is dropped without a word (the older, staler one is solved)",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "mpc_cycle_from_a_stale_state",
        "vi_control/ros/planner_node.py",
        "        if self._stale(t_m):\n",
        "        if False:\n",
        "mode mpc plans from a joint state the controller calls stale: with a dead driver each cycle predicts "
        "further from the last state, reported as overruns instead of its cause",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "mpc_stale_at_the_timeout",
        "vi_control/ros/planner_node.py",
        "        if not age > timeout:\n",
        "        if not age >= timeout:\n",
        "a state exactly state_timeout old is stale to the planner but fresh to the controller",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "mpc_cycles_ignore_a_goal_request",
        "vi_control/ros/planner_node.py",
        '                if self.mpc is not None and request.kind in ("goal", "trajectory"):\n',
        "                if False:\n",
        "mode mpc: the cycle after a goal or trajectory request plans the task's window again and turns the arm back "
        "toward the task's goal within one period",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "mpc_follow_keeps_the_task_weights",
        "vi_control/planning/mpc.py",
        "        self._cycle_task = self._capped(result.task)\n",
        "        pass\n",
        "after a request the cycles track its path with the task's soft weights, not the path's (lqr) ones",
        ("test/planning/test_planning_mpc.py",),
    ),
    Mutation(
        "mpc_start_keeps_a_requests_weights",
        "vi_control/planning/mpc.py",
        "        self._cycle_task = self._capped(task)  # (the task's own weights again, after a ``follow``)\n",
        "        pass\n",
        "after ~/replan the task's cycles keep the last request's weights",
        ("test/planning/test_planning_mpc.py",),
    ),
    Mutation(
        "mpc_cycles_ignore_a_trajectory_request",
        "vi_control/ros/planner_node.py",
        '                if self.mpc is not None and request.kind in ("goal", "trajectory"):\n',
        '                if self.mpc is not None and request.kind in ("goal",):\n',
        "mode mpc: the cycle after a ~/joint_trajectory request turns the arm back toward the task's goal",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "vehicle_mpc_ignored",
        "vi_control/ros/planner_node.py",
        '            if p["mode"] == "mpc":  # (refused, not ignored: one plan per goal without a word)\n',
        "            if False:\n",
        "a vehicle planner asked for mode mpc plans each goal once without a word",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "mpc_overrun_during_a_request",
        "vi_control/ros/planner_node.py",
        '        if solving is not None and solving.request.kind != "mpc":\n',
        "        if False:\n",
        "mode mpc: the ticks while a goal or trajectory request is solved are counted and warned as overruns",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "mpc_cycle_errors_unthrottled",
        "vi_control/ros/planner_node.py",
        "        if job.quiet:\n",
        "        if False:\n",
        "mode mpc: a cycle refused every period logs an error 10-100 times a second",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "mpc_clock_back_silent",
        "vi_control/ros/planner_node.py",
        "            if last is not None and last >= t0:\n",
        "            if False:\n",
        "mode mpc after a simulator reset: every cycle skipped without a word until the clock reaches the plan's start",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "drain_keeps_timers",
        "vi_control/ros/main_job.py",
        "                timer.cancel()\n",
        "                pass\n",
        "the recording's drain at the end of a run ends early beside a slow timer (the live view drawing): messages "
        "still queued are not recorded",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "view_keeps_the_ghost_of_a_replaced_plan",
        "vi_control/ros/view_node.py",
        "            ghost = None\n",
        "            return\n",
        "a bad trajectory leaves the live view drawing the plan it replaced, which no longer runs, as the ghost",
        ("test/ros/test_view_faults.py",),
    ),
    Mutation(
        "simulator_timeout_brake_keeps_momentum",
        "vi_control/ros/simulator_node.py",
        "            self.x = equilibrium_state(self.vi, self.x[: self.vi.nq])\n",
        "            pass\n",
        "the simulator's command-timeout brakes keep the state's momentum: released, the joint resumes the motion "
        "it had, as if never braked",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "simulator_command_not_restarting_the_timeout",
        "vi_control/ros/simulator_node.py",
        "            self.command_k = self.k\n",
        "            pass\n",
        "a valid command does not restart command_timeout: the brakes engage under a controller that commands "
        "every step",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "plant_timeout_brakes_at_the_start_pose",
        "vi_control/ros/mujoco_plant.py",
        "                    self.brake_q, self.timed_out, self.braked = d.qpos[self.mj.qadr].copy(), True, True\n",
        "                    self.timed_out, self.braked = True, True\n",
        "the MuJoCo plant's command-timeout brakes snap the joints back to their initial positions instead of "
        "holding them where they are",
        ("test/ros/test_ros_mujoco_plant.py::test_the_plant_brakes_when_commands_stop_for_command_timeout",),
    ),
    Mutation(
        "controller_enters_ended_plans",
        "vi_control/control/runner.py",
        "        if late >= plan.horizon and not retimed:\n",
        "        if False:\n",
        "a plan that ended before it could be entered is entered anyway: the law holds its X_N from wherever the robot "
        "is (a restarted controller's latched plans, entered one after another)",
        ("test/control/test_control_runner.py",),
    ),
    Mutation(
        "mpc_restart_while_a_plan_runs",
        "vi_control/ros/planner_node.py",
        "        if last is not None and last.times[-1] > t_start:\n",
        "        if False:\n",
        "a cycle refused after the task's end restarts the task although a cycle of ours still runs: the task is "
        "planned from a state carried under that cycle",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "controller_brakes_on_after_an_overspeed_abort",
        "vi_control/ros/controller_node.py",
        "        if kind == FAULT_OVERSPEED and self.intake.overspeed is not None:\n",
        "        if kind == FAULT_OVERSPEED:\n",
        "after an over-speed aborted the plan, every later tick brakes (damping and the model's gravity torque) "
        "instead of the hold with its position feedback: a heavier arm sags away",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "mpc_restart_supersedes_a_waiting_request",
        "vi_control/ros/planner_node.py",
        "            if self._pending is not None:\n",
        "            if False:\n",
        "the MPC task's restart after its deadline is submitted while a user's request waits: that request is "
        "superseded without being planned",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "mpc_waits_for_an_entry_that_cannot_come",
        "vi_control/ros/planner_node.py",
        "                and self._now() > self.last_plan.times[-1]\n",
        "                and False\n",
        "mode mpc waits for the controller's entry of the task's plan after that plan has ended: a controller that "
        "dropped it as ended never enters it, and the robot is held for good",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "mpc_restarts_the_task_not_the_users_goal",
        "vi_control/ros/planner_node.py",
        '            request, what = Request("goal", goal=asked.goal, duration=asked.duration), "the goal request"\n',
        '            request, what = Request("task"), "the goal request"\n',
        "a ~/goal request's plan that ended without the controller's entry is replaced by the task's plan: the arm is "
        "taken to the task's goal, not the one the user asked for",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "start_tolerance_checks_hand_overs",
        "vi_control/control/runner.py",
        "        if tol > 0 and not running:\n",
        "        if tol > 0:\n",
        "start_tolerance judges a hand-over from a running plan too: an MPC cycle whose X_0 (a prediction) is off the "
        "measured state is refused, and the old plan runs out",
        ("test/control/test_control_runner.py",),
    ),
    Mutation(
        "start_tolerance_against_x0",
        "vi_control/control/runner.py",
        "            e = min((self.configuration_error(plan.X[k], x) for k in {max(k_in - 1, 0), k_in}), key=np.max)\n",
        "            e = self.configuration_error(plan.X[0], x)\n",
        "start_tolerance judges a late plan against its X_0, not the step it is entered at: a plan entered mid-way "
        "exactly where the arm is gets refused",
        ("test/control/test_control_runner.py",),
    ),
    Mutation(
        "plan_refusal_told_every_time",
        "vi_control/control/runner.py",
        "        if self.on_refuse is not None and seq not in self._refused:\n",
        "        if self.on_refuse is not None:\n",
        "the controller's ~/plan_refused repeats for every re-publish of a refused plan (once a second): the planner "
        "publishes a 'refused' status for it again and again",
        ("test/control/test_control_runner.py",),
    ),
    Mutation(
        "controller_refusal_not_reported",
        "vi_control/ros/planner_node.py",
        "            self._published[seq] = job\n",
        "            pass\n",
        "the planner forgets which request made each plan: a plan the controller refuses leaves its request at "
        "'accepted', the reason only in the controller's log",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "controller_refusal_before_accepted_lost",
        "vi_control/ros/planner_node.py",
        "                self._refused_early[seq] = (why, kind)\n",
        "                pass\n",
        "a refusal the controller sends before the planner's worker has sent 'accepted' (a plan refused on receipt) is "
        "dropped: the sender's last word is 'accepted' for a plan that never ran",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "command_conflict_window_excludes_its_end",
        "vi_control/ros/supervision.py",
        "        for g in [g for g, (t, _) in last.items() if now - t > self.window]:\n",
        "        for g in [g for g, (t, _) in last.items() if now - t >= self.window]:\n",
        "a publisher that commanded exactly command_conflict_window ago no longer counts: the rule's boundary moves",
        ("test/ros/test_command_sources.py",),
    ),
    Mutation(
        "second_publisher_commands_applied",
        "vi_control/ros/simulator_node.py",
        "        if bad or not admitted:\n",
        "        if bad:\n",
        "the simulator applies the commands of two publishers as they come: two controllers drive one robot with "
        "interleaved torques",
        ("test/ros/test_command_sources.py",),
    ),
    Mutation(
        "plant_applies_a_second_publishers_commands",
        "vi_control/ros/mujoco_plant.py",
        "        if not admit_command(self, self.sources, info, self.counts, self._refused_applies):\n",
        "        if not admit_command(self, self.sources, info, self.counts, self._refused_applies) and False:\n",
        "the MuJoCo plant applies the commands of two publishers as they come: a torque published beside the "
        "controller moves the held arm",
        ("test/ros/test_ros_mujoco_plant.py",),
    ),
    Mutation(
        "joint_state_conflict_not_reported",
        "vi_control/ros/controller_node.py",
        "        if now - was:\n",
        "        if False:\n",
        "a joint_state_publisher beside the robot's driver goes unsaid: the controller's refusals of its states are "
        "the only trace, and they do not name it",
        ("test/ros/test_command_sources.py",),
    ),
    Mutation(
        "disjoint_drivers_conflict",
        "vi_control/ros/supervision.py",
        "            if i != j and (p is None or r is None or not p.isdisjoint(r))\n",
        "            if i != j\n",
        "an arm's and a gripper's drivers on one joint_states topic are taken for a conflict: an error and "
        "/diagnostics ERROR on every such robot",
        ("test/ros/test_command_sources.py",),
    ),
    Mutation(
        "planner_plans_from_an_ambiguous_state",
        "vi_control/ros/planner_node.py",
        "        if conflict is not None:  # (planned from it, the plan could start from the other publisher's pose)\n",
        "        if False:\n",
        "the planner plans a request from the newest joint state while a joint_state_publisher publishes beside the "
        "driver: the plan may start from the fake's pose",
        ("test/ros/test_command_sources.py",),
    ),
    Mutation(
        "start_tolerance_without_a_steps_slack",
        "vi_control/control/runner.py",
        "            e = min((self.configuration_error(plan.X[k], x) for k in {max(k_in - 1, 0), k_in}), key=np.max)\n",
        "            e = self.configuration_error(plan.X[k_in], x)\n",
        "a plan one step late from the hold is refused by start_tolerance for its own first step's motion: the "
        "hardware panda's reach refused whenever the start-up plan came 50 ms late",
        ("test/control/test_control_runner.py",),
    ),
    Mutation(
        "controller_counts_its_own_command_publisher",
        "vi_control/ros/supervision.py",
        "    mine = next((i for i, (name, _) in enumerate(named) if name == own), None)\n",
        "    mine = None\n",
        "every controller warns of another publisher on its command topic — itself — and its /diagnostics are never "
        "OK: the warning that names a second controller on the robot means nothing",
        ("test/ros/test_ros_monitoring_readback.py",),
    ),
    Mutation(
        "controller_never_looks_at_its_command_topic",
        "vi_control/ros/controller_node.py",
        "        self._watch_command_topic()\n",
        "        pass\n",
        "a second controller on the robot (a second launch in the same domain) goes unreported by the controller: on "
        "hardware, where the driver applies both streams, nothing says so",
        ("test/ros/test_ros_monitoring_readback.py",),
    ),
    Mutation(
        "late_plan_not_planned_again",
        "vi_control/ros/planner_node.py",
        '        if kind in (REFUSED_ENDED, REFUSED_LATE) and self.mpc is None and job.request.kind != "mpc":\n',
        "        if False:\n",
        "a start-up plan that reached the controller after its end (a writer matched late under load) leaves the arm "
        "held for good in mode plan",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "late_plan_refused_as_start_tolerance",
        "vi_control/control/runner.py",
        '                    REFUSED_LATE if late > 1 and not retimed else "start tolerance",\n',
        '                    "start tolerance",\n',
        "a start-up plan two steps late, the held arm sagged from its X_0, is refused as wrong for where the arm is: "
        "in mode plan nothing plans it again and the arm is held for good",
        ("test/control/test_control_runner.py",),
    ),
    Mutation(
        "overtaken_mpc_restart_published",
        "vi_control/ros/planner_node.py",
        "        return job.unentered is not None and self.entered_seq == job.unentered\n",
        "        return False\n",
        "a restart for a plan the controller entered late after all goes out: a new task plan replaces the running one "
        "mid-motion with a first command that is not the running law's",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "lockstep_not_stepped_to_a_later_plan",
        "vi_control/ros/controller_node.py",
        "        elif self.lockstep() and self.runner.pending is not None:\n",
        "        elif False:\n",
        "a lockstep controller with a plan that starts later and none running commands nothing: it waits for that "
        "start's state, the simulator for a command, for good",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "planner_plans_from_a_robot_moving_under_another_plan",
        "vi_control/ros/planner_node.py",
        "        if measured is not None and not moving and not self.vehicle:\n",
        "        if False:\n",
        "a planner restarted mid-motion plans from the moving robot: its plan starts where the robot no longer is and "
        "the controller hands over to it with a jump in the command",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "brake_capped_for_the_nominal_period_under_a_starved_loop",
        "vi_control/ros/controller_node.py",
        "        return max(self.command_period(), self.loop.recent_gap(self._now()))\n",
        "        return self.command_period()\n",
        "a starved command loop holds the brake's damping 20 periods: capped for one, it reverses the light joints' "
        "velocities every command and the arm runs away",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "starved_hold_fed_the_configurations_estimate",
        "vi_control/ros/controller_node.py",
        "        if state is None or self.vehicle or self.loop.recent_gap(self._now()) <= 0.0:\n",
        "        if True:\n",
        "under a starved loop the hold feeds back p from two configurations (a velocity ~Δt/2 old): held 20 periods "
        "it cycles at 3–5 rad/s on the panda instead of settling",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "late_plan_planned_again_forever",
        "vi_control/ros/planner_node.py",
        "        if job.late >= LATE_REPLANS:\n",
        "        if False:\n",
        "a controller that never gets a plan in time (another clock) makes the planner re-plan without end",
        ("test/ros/test_nodes_in_process.py",),
    ),
    Mutation(
        "graph_lock_not_held_by_the_step_build",
        "vi_control/mechanics/discrete.py",
        "        @builds_graph\n        def symbolic() -> tuple[dict[str, ca.Function], tuple[str, ...]]:\n",
        "        def symbolic() -> tuple[dict[str, ca.Function], tuple[str, ...]]:\n",
        "the midpoint VI's symbolic build runs unlocked: a held system compiled in the background beside the stepping "
        "thread's next build can crash the process (CasADi's symbolics are not thread-safe)",
        ("test/mechanics/test_graph_lock.py",),
    ),
    Mutation(
        "graph_lock_not_held_by_code_generation",
        "vi_control/mechanics/codegen.py",
        "@builds_graph\ndef _generate(",
        "def _generate(",
        "C generated from a function's graph while another thread builds one (the CI segfault in CodeGenerator.add)",
        ("test/mechanics/test_graph_lock.py",),
    ),
    Mutation(
        "graph_lock_decorator_locks_nothing",
        "vi_control/mechanics/graph_lock.py",
        "        with GRAPH_LOCK:\n            _release_dropped()\n            return fn(*args, **kwargs)\n",
        "        return fn(*args, **kwargs)\n",
        "every decorated builder (the symbolic tree, collocation, DMOC, the Lie group step) runs unlocked",
        ("test/mechanics/test_graph_lock.py",),
    ),
    Mutation(
        "dropped_graphs_released_anywhere",
        "vi_control/mechanics/graph_lock.py",
        "            _graveyard.append(dict(attributes))\n",
        "            pass\n",
        "a system dropped in one thread releases its expressions there, while another thread builds (plain SX "
        "reference counts: the SIGABRT of a CI run)",
        ("test/mechanics/test_graph_lock.py",),
    ),
    Mutation(
        "dropped_graphs_never_released",
        "vi_control/mechanics/graph_lock.py",
        "        with GRAPH_LOCK:\n            _release_dropped()\n            return fn(*args, **kwargs)\n",
        "        with GRAPH_LOCK:\n            return fn(*args, **kwargs)\n",
        "dropped systems wait in the graveyard for good: memory grows with every held system a simulator swaps",
        ("test/mechanics/test_graph_lock.py",),
    ),
    Mutation(
        "lazy_compile_unlocked",
        "vi_control/mechanics/codegen.py",
        "            with self._lazy_lock:\n",
        "            if True:\n",
        "a thread that asks for the Hessian while another compiles it gets the CasADi VM's function: its plan takes "
        "the numpy path, ~10x slower",
        ("test/mechanics/test_graph_lock.py",),
    ),
    Mutation(
        "clock_rate_measured_from_zero",
        "vi_control/ros/planner_node.py",
        "        samples.add(wall, clock())\n",
        "        samples.samples.append((wall, clock()))\n",
        "the planner measures a sim clock's rate from 0, before /clock was heard: a lockstep start-up plan starts "
        "ahead of its state and the loop stands still",
        ("test/ros/test_planner_clock_rate.py",),
    ),
)
