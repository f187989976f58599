"""SO(3), SE(2), SE(3) with the Cayley and exponential retractions (Jimenez2013, §5, eqs. 34–38).

Independent references: scipy's matrix exponential, the generic matrix Cayley (e − ξ̂/2)⁻¹(e + ξ̂/2) and its
differentials of §5 b, Lee2016's Bernoulli series (mechanics.lie.dlog_matrix), commutators of the matrices, and
central finite differences of the maps themselves.
"""

from decimal import Decimal, localcontext

import casadi as ca
import numpy as np
import pytest
from scipy.linalg import expm

from vi_control.mechanics import lie
from vi_control.mechanics.groups import (
    SE2,
    SE3,
    SO3,
    Retraction,
    RetractionDomainError,
    quaternion_from_rotation,
    rotation_from_quaternion,
)

GROUPS = [SO3, SE2, SE3]
CASES = [(G, kind) for G in GROUPS for kind in ("cayley", "exp")]
IDS = [f"{G.name}-{kind}" for G, kind in CASES]
EPS = 1e-6  # central differences: truncation ~eps², rounding ~1e-16/eps


def _samples(G, rng, n=6):
    """Algebra elements from tiny to large (|ω| up to 2.5 rad: well inside both retractions' domains)."""
    out = [np.zeros(G.dim), 1e-7 * rng.normal(size=G.dim)]
    for scale in (0.05, 0.5, 1.2):
        out += [scale * rng.normal(size=G.dim) for _ in range(n // 3)]
    return out


def _right_fd(f, G, xi):
    """Right-trivialized derivative of ξ ↦ f(ξ) ∈ G: column i = vee(∂_i f · f⁻¹), by central differences."""
    gi = G.inverse(f(xi))
    cols = []
    for e in np.eye(G.dim):
        cols.append(G.vee((f(xi + EPS * e) - f(xi - EPS * e)) / (2 * EPS) @ gi))
    return np.column_stack(cols)


@pytest.mark.parametrize("G, kind", CASES, ids=IDS)
def test_retraction_is_inverse_symmetric_and_invertible(G, kind, rng):
    r = Retraction(G, kind)
    for xi in _samples(G, rng):
        g = r.tau(xi)
        assert np.abs(g @ r.tau(-xi) - np.eye(G.size)).max() <= 1e-15  # τ(ξ)τ(−ξ) = e (Jimenez2013, §5)
        assert G.distance_from_group(g) <= 1e-15
        assert np.abs(r.tau_inv(g) - xi).max() <= 1e-14 * max(1.0, np.abs(xi).max())


@pytest.mark.parametrize("G, kind", CASES, ids=IDS)
def test_dtau_times_its_inverse_is_identity(G, kind, rng):
    r = Retraction(G, kind)
    for xi in _samples(G, rng):
        assert np.abs(r.dtau(xi) @ r.dtau_inv(xi) - np.eye(G.dim)).max() <= 1e-13
        assert np.abs(r.dtau_inv(xi) @ r.dtau(xi) - np.eye(G.dim)).max() <= 1e-13


@pytest.mark.parametrize("G, kind", CASES, ids=IDS)
def test_right_trivialized_differentials_match_finite_differences(G, kind, rng):
    """Definition 5.1: ∂τ(ξ)η = (dτ_ξ η)τ(ξ) and ∂τ⁻¹(g)·η = dτ⁻¹_ξ(η τ(−ξ))."""
    r = Retraction(G, kind)
    for xi in _samples(G, rng)[2:]:
        assert np.abs(_right_fd(r.tau, G, xi) - r.dtau(xi)).max() <= 1e-8
        # τ⁻¹ along right-trivialized perturbations of g: ∂_ε τ⁻¹(exp(εη)g) = dτ⁻¹_ξ η
        g = r.tau(xi)
        D = np.column_stack(
            [(r.tau_inv(G.exp(EPS * e) @ g) - r.tau_inv(G.exp(-EPS * e) @ g)) / (2 * EPS) for e in np.eye(G.dim)]
        )
        assert np.abs(D - r.dtau_inv(xi)).max() <= 1e-8


@pytest.mark.parametrize("G", GROUPS, ids=lambda G: G.name)
def test_hat_vee_Ad_ad_against_matrices(G, rng):
    for _ in range(5):
        xi, eta = rng.normal(size=G.dim), rng.normal(size=G.dim)
        X, Y = G.hat(xi), G.hat(eta)
        assert np.array_equal(G.vee(X), xi)
        g = expm(G.hat(rng.normal(size=G.dim)))
        assert np.abs(G.Ad(g) @ eta - G.vee(g @ Y @ np.linalg.inv(g))).max() <= 1e-13  # Ad_g η = g η̂ g⁻¹
        assert np.abs(G.ad(xi) @ eta - G.vee(X @ Y - Y @ X)).max() <= 1e-13  # ad_ξ η = [ξ, η]
        # ad is the derivative of Ad: d/dt Ad_{exp(tξ)} at t = 0
        D = (G.Ad(expm(EPS * X)) - G.Ad(expm(-EPS * X))) / (2 * EPS)
        assert np.abs(D - G.ad(xi)).max() <= 1e-8


@pytest.mark.parametrize("G", GROUPS, ids=lambda G: G.name)
def test_cayley_closed_forms_equal_the_matrix_formulas_of_section_5b(G, rng):
    """Eqs. 34, 35, 38 (SO(3), SE(3)) and our SE(2) forms against (e − ξ/2)⁻¹(e + ξ/2), (e − x/2)⁻¹y(e + x/2)⁻¹
    and (e − x/2)y(e + x/2)."""
    E = np.eye(G.size)
    for xi in _samples(G, rng):
        X = 0.5 * G.hat(xi)
        assert np.abs(G.cay(xi) - np.linalg.solve(E - X, E + X)).max() <= 1e-15
        Am, Ap = np.linalg.inv(E - X), np.linalg.inv(E + X)
        dcay = np.column_stack([G.vee(Am @ G.hat(e) @ Ap) for e in np.eye(G.dim)])
        dcay_inv = np.column_stack([G.vee((E - X) @ G.hat(e) @ (E + X)) for e in np.eye(G.dim)])
        assert np.abs(G.dcay(xi) - dcay).max() <= 1e-14
        assert np.abs(G.dcay_inv(xi) - dcay_inv).max() <= 1e-14


def test_eq34_translation_differs_from_the_matrix_cayley_whose_differential_is_eq38(rng):
    """Jimenez2013, eq. 34 writes the SE(3) translation as dcay_ω v (dcay of eq. 35); the matrix Cayley of §5 b gives
    (I − ω̂/2)⁻¹v. Only the latter has eq. 38 as its dτ⁻¹, so it is ours (docs/concepts/lie_groups.md)."""
    xi = np.array([0.4, -0.3, 0.5, 0.7, 0.2, -0.6])

    def eq34(x):
        g = np.eye(4)
        g[:3, :3], g[:3, 3] = SO3.cay(x[:3]), SO3.dcay(x[:3]) @ x[3:]
        return g

    assert np.abs(eq34(xi)[:3, 3] - SE3.cay(xi)[:3, 3]).max() > 5e-3  # (ω·v)ω/(4 + |ω|²)-sized
    assert np.abs(np.linalg.inv(_right_fd(eq34, SE3, xi)) - SE3.dcay_inv(xi)).max() > 1e-2
    assert np.abs(np.linalg.inv(_right_fd(SE3.cay, SE3, xi)) - SE3.dcay_inv(xi)).max() <= 1e-8


@pytest.mark.parametrize("G", GROUPS, ids=lambda G: G.name)
def test_exponential_against_scipy_and_the_bernoulli_series(G, rng):
    for xi in _samples(G, rng):
        assert np.abs(G.exp(xi) - expm(G.hat(xi))).max() <= 1e-14
        # dexp = Σ ad^j/(j+1)! (Jimenez2013, §5 a), summed to convergence
        A, term, S = G.ad(xi), np.eye(G.dim), np.eye(G.dim)
        for j in range(1, 40):
            term = term @ A / (j + 1)
            S = S + term
        assert np.abs(G.dexp(xi) - S).max() <= 1e-13
    if G is SE3:  # Lee2016's truncated series for dexp⁻¹ (|θ| ≤ 1.5)
        xi = np.array([0.5, -0.7, 0.3, 1.0, 2.0, -1.0])
        assert np.abs(G.dexp_inv(xi) - lie.dlog_matrix(xi[None])[0]).max() <= 1e-13


@pytest.mark.parametrize("G, kind", CASES, ids=IDS)
def test_lemmas_8_2_and_8_3(G, kind, rng):
    """dτ_ξ = Ad_{τ(ξ)} dτ_{−ξ} and dτ⁻¹_{−ξ} = dτ⁻¹_ξ Ad_{τ(ξ)}: what makes μ⁺ = Ad*_{τ(hξ)}μ (eq. 27)."""
    r = Retraction(G, kind)
    for xi in _samples(G, rng)[2:]:
        Ad = G.Ad(r.tau(xi))
        assert np.abs(r.dtau(xi) - Ad @ r.dtau(-xi)).max() <= 1e-13
        assert np.abs(r.dtau_inv(-xi) - r.dtau_inv(xi) @ Ad).max() <= 1e-13


@pytest.mark.parametrize("G, kind", [c for c in CASES if c[0] is not SE2], ids=[i for i in IDS if "SE2" not in i])
def test_symbolic_and_numeric_formulas_agree_and_differentiate_at_the_identity(G, kind, rng):
    """The integrator and the optimal-control conditions differentiate the CasADi version of the same formulas."""
    r = Retraction(G, kind)
    x = ca.SX.sym("x", G.dim)
    for name in ("tau", "dtau", "dtau_inv"):
        expr = getattr(r, name)(x)
        f = ca.Function("f", [x], [expr, ca.jacobian(ca.vec(expr), x)])
        for xi in _samples(G, rng)[:4]:
            val, jac = (np.array(a) for a in f(xi))
            assert np.abs(val - getattr(r, name)(xi)).max() <= 1e-14
            assert np.all(np.isfinite(jac))
    g = ca.SX.sym("g", G.nq)
    inv = ca.Function("inv", [g], [r.tau_inv(G.from_coordinates(g))])
    xi = 0.3 * rng.normal(size=G.dim)
    assert np.abs(np.array(inv(G.to_coordinates(r.tau(xi)))).ravel() - xi).max() <= 1e-14


def test_cayley_inverse_is_refused_at_a_half_turn():
    R = np.diag([1.0, -1.0, -1.0])  # rotation by π about x
    with pytest.raises(RetractionDomainError, match="rotation by π"):
        SO3.cay_inv(R)
    g = np.eye(4)
    g[:3, :3] = R
    with pytest.raises(RetractionDomainError, match="half a turn"):
        SE3.cay_inv(g)
    with pytest.raises(RetractionDomainError, match="rotation by π"):
        SE2.cay_inv(np.diag([-1.0, -1.0, 1.0]))
    with pytest.raises(RetractionDomainError, match="2π"):
        SO3.dexp_inv(np.array([0.0, 0.0, 2 * np.pi]))
    assert np.abs(SO3.log(R)).max() == pytest.approx(np.pi)  # the exponential's log is defined at π


def test_quaternions_round_trip_and_refuse_non_unit(rng):
    for _ in range(20):
        R = SO3.exp(rng.normal(size=3))
        q = quaternion_from_rotation(R)
        assert q[3] >= 0 and abs(np.linalg.norm(q) - 1) <= 1e-15
        assert np.abs(rotation_from_quaternion(q) - R).max() <= 1e-15
    assert np.abs(quaternion_from_rotation(np.diag([1.0, -1.0, -1.0])) - [1, 0, 0, 0]).max() == 0.0
    with pytest.raises(ValueError, match="not unit length"):
        rotation_from_quaternion([0.0, 0.0, 0.0, 2.0])
    with pytest.raises(ValueError, match="4 finite"):
        rotation_from_quaternion([0.0, np.nan, 0.0, 1.0])


def test_groups_keeps_its_public_names_after_the_so3_maps_split():
    """The SO(3) closed forms live in ``so3_maps``; ``groups`` re-exports them as the same objects (one
    ``RetractionDomainError`` class, so ``except`` clauses written against either module catch both)."""
    from vi_control.mechanics import groups, so3_maps

    assert [n for n in groups.__all__ if not hasattr(groups, n)] == []
    assert [n for n in so3_maps.__all__ if getattr(groups, n) is not getattr(so3_maps, n)] == []


def test_the_cayley_retraction_has_one_name_everywhere():
    """'cay' (the RDP's old name) and 'cayley' (groups, YAML) named the same map. 'cayley' everywhere;
    'cay' is refused by every entry point with the name to use, and SE(2)'s τ is the same map under both APIs."""
    import casadi as ca

    from vi_control.mechanics import se2
    from vi_control.mechanics.groups import SE2, Retraction

    for make in (lambda k: Retraction(SE2, k), se2.retraction):
        with pytest.raises(ValueError, match="named 'cayley'"):
            make("cay")
    v = np.array([0.7, -0.3, 1.1])
    tau, _ = se2.retraction("cayley")
    theta, x, y = np.array(ca.DM(tau(ca.DM(v)))).ravel()
    g = SE2.cay(v)  # the matrix Cayley map of groups.py: the same element
    assert np.allclose([np.arctan2(g[1, 0], g[0, 0]), g[0, 2], g[1, 2]], [theta, x, y], atol=1e-14)


def _decimal_sin_cos(x: Decimal) -> tuple[Decimal, Decimal]:
    """sin x, cos x to the context's precision by their power series (the Python ``decimal`` documentation's recipe)."""
    s, c, term, k = Decimal(0), Decimal(0), Decimal(1), 0
    while True:  # term = x^k / k!
        last = (s, c)
        if k % 2:
            s += term if k % 4 == 1 else -term
        else:
            c += term if k % 4 == 0 else -term
        k += 1
        term = term * x / k
        if (s, c) == last and k > 2:
            return s, c


# The exponential map's coefficients (mechanics.so3_maps.c_*) as their closed forms, in 60-digit decimal arithmetic.
_COEFFICIENTS = {
    "c_sin": lambda th, s, c: s / th,
    "c_cos": lambda th, s, c: (1 - c) / th**2,
    "c_sin3": lambda th, s, c: (th - s) / th**3,
    "c_cot": lambda th, s, c: (1 - th / 2 * _half_cot(th)) / th**2,
    "c_q2": lambda th, s, c: (th**2 + 2 * c - 2) / (2 * th**4),
    "c_q3": lambda th, s, c: (2 * th - 3 * s + th * c) / (2 * th**5),
}


def _half_cot(th: Decimal) -> Decimal:
    s, c = _decimal_sin_cos(th / 2)
    return c / s


@pytest.mark.parametrize("name", sorted(_COEFFICIENTS))
def test_the_exponential_maps_coefficients_series_and_closed_forms_are_their_functions(name):
    """Each coefficient of the exponential retraction's closed forms — its Taylor series below θ² = 1e-4, its closed
    form above — against that closed form in 60-digit decimal arithmetic (no cancellation there): the series to 1e-14
    (its truncation is ~1e-20 there; a wrong term of order θ² or θ⁴ is off by far more), the closed form in double
    precision to the cancellation its numerator has at θ² = 1e-2 and 1."""
    from vi_control.mechanics import so3_maps

    f = getattr(so3_maps, name)
    with localcontext() as ctx:
        ctx.prec = 60
        for t, rtol in ((1e-8, 1e-14), (3e-5, 1e-14), (0.999999e-4, 1e-14), (1e-2, 1e-8), (1.0, 1e-12)):
            th = Decimal(t).sqrt()
            want = float(_COEFFICIENTS[name](th, *_decimal_sin_cos(th)))
            assert f(t, False) == pytest.approx(want, rel=rtol, abs=0.0), (name, t)
