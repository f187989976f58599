"""The collocation NLP's size is bounded by what it costs to build, for the model at hand, before anything is built.

The task schema's bounds (nodes ≤ 200, nodes × intervals ≤ 10 000) do not know the model: 10 000 Gauss points of the
panda would take hours and ~100 GB to build. ``size.nlp_size`` estimates the build work from the dynamics row's
operations (benchmarks/bench_collocation_size.py measured it against build time and memory on four models);
``Transcription`` and the planner refuse beyond ``MAX_WORK``. The estimate's variable count is checked against the
NLPs actually built; the edge is tested on the cart-pole without building anything that large.
"""

import numpy as np
import pytest

from vi_control.model.bundled import load_bundled
from vi_control.planning.collocation import CollocationProblem, SecondOrderDynamics, Transcription
from vi_control.planning.collocation.size import MAX_WORK, NLPSizeError, check_size, nlp_size
from vi_control.planning.pipeline import plan_task
from vi_control.planning.task import TaskError, load_task


@pytest.fixture(scope="module")
def cartpole():
    return SecondOrderDynamics(load_bundled("cartpole"))


@pytest.mark.parametrize("method, N, K, free", [("lg2", 5, 3, False), ("lg", 4, 2, True), ("lg2", 6, 1, True)])
def test_the_estimate_counts_the_variables_of_the_built_nlp(cartpole, method, N, K, free):
    problem = CollocationProblem(
        cartpole, method=method, nodes=N, intervals=K, free_time=free, cost="time" if free else "effort"
    )
    tr = Transcription(problem)
    assert nlp_size(problem).variables == tr.n_variables and tr.size == nlp_size(problem)
    assert tr.size.row_operations > 0 and tr.size.coupled_nodes == (0 if method == "lg2" else N)


def test_the_bound_at_its_edge_on_a_cheap_model(cartpole):
    """Exactly the largest interval count that fits passes; one more is refused, with the numbers."""
    per_interval = nlp_size(CollocationProblem(cartpole, method="lg2", nodes=20, intervals=1)).work
    k_max = MAX_WORK // per_interval
    size = check_size(CollocationProblem(cartpole, method="lg2", nodes=20, intervals=k_max))
    assert MAX_WORK - per_interval < size.work <= MAX_WORK
    with pytest.raises(NLPSizeError) as info:
        check_size(CollocationProblem(cartpole, method="lg2", nodes=20, intervals=k_max + 1))
    e = info.value
    assert e.size.work > MAX_WORK and e.limit == MAX_WORK and isinstance(e, ValueError)
    assert str(e).startswith(
        f"nodes × intervals: 20 × {k_max + 1} = {20 * (k_max + 1)} Gauss points of LG2 on "
        f"'cartpole' (nq = 2, {e.size.row_operations} operations per dynamics row) make an NLP "
        f"of {e.size.variables:,} variables"
    )
    assert f"at most {k_max} interval(s) of 20 nodes" in str(e)


def test_transcription_enforces_its_size_limit(cartpole):
    """The same edge through ``Transcription`` itself, at a small limit (cheap to build at the edge)."""
    limit = nlp_size(CollocationProblem(cartpole, method="lg", nodes=5, intervals=3)).work
    tr = Transcription(CollocationProblem(cartpole, method="lg", nodes=5, intervals=3, size_limit=limit))
    assert tr.size.work == limit
    with pytest.raises(NLPSizeError, match=r"^nodes × intervals: 5 × 4 = 20 Gauss points of LG .*at most 3 interval"):
        Transcription(CollocationProblem(cartpole, method="lg", nodes=5, intervals=4, size_limit=limit))
    Transcription(CollocationProblem(cartpole, method="lg", nodes=5, intervals=4, size_limit=None))  # no bound


def test_a_seven_dof_arm_is_bounded_far_below_the_schema_limit():
    """A 7-DOF arm (the bundled arm7) at the schema's largest sizes: 200 nodes × 50 intervals by LG2, 200 nodes by
    LG (whose rows read every node of their interval) are refused, each message saying what fits."""
    arm = SecondOrderDynamics(load_bundled("arm7"))
    with pytest.raises(
        NLPSizeError,
        match=r"200 × 50 = 10000 Gauss points of LG2 on 'arm7' \(nq = 7.*about \d+ s of "
        r"CPU and \d+\.\d GB.*at most 1 interval\(s\) of 200 nodes",
    ):
        check_size(CollocationProblem(arm, method="lg2", nodes=200, intervals=50))
    with pytest.raises(
        NLPSizeError,
        match=r"200 × 1 = 200 Gauss points of LG on 'arm7'.*not even one interval of 200 "
        r"nodes fits: fewer nodes",
    ):
        check_size(CollocationProblem(arm, method="lg", nodes=200, intervals=1))
    assert check_size(CollocationProblem(arm, method="lg", nodes=20, intervals=1)).work <= MAX_WORK


def test_a_task_beyond_the_bound_is_refused_by_key_before_building(tmp_path):
    """Inside the schema's limits (200 × 50 = 10 000 points) but far beyond the cart-pole's build bound."""
    path = tmp_path / "task.yaml"
    path.write_text(
        "name: big\nmodel: cartpole\ndt: 0.05\nhorizon: 40\nstart: {q: [0.0, 0.0]}\n"
        "goal: {q: [0.0, 3.14159]}\nweights: {Q: 1.0, R: 0.1}\n"
        "optimizer: {method: collocation_lg2}\ncollocation: {nodes: 200, intervals: 50}\n"
    )
    task = load_task(str(path))
    from vi_control.integrators import make_integrator

    vi = make_integrator("midpoint", load_bundled("cartpole"), task.dt)
    with pytest.raises(
        TaskError,
        match=r"^collocation\.nodes × collocation\.intervals: 200 × 50 = 10000 Gauss points "
        r"of LG2 on 'cartpole'.*at most \d+ interval\(s\) of 200 nodes",
    ):
        plan_task(vi, task, x0=np.zeros(4))
