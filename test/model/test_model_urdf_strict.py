"""URDF numbers read as the C++ parser reads them, dropped elements caught, inertias physical.

The reference is Pinocchio itself (urdfdom inside): a value it refuses in an <inertial> makes it drop the whole
element — the body then carries no rotational inertia — and a value it refuses in a joint makes it refuse the
model. Our loader must refuse exactly those values, naming the link or joint.
"""

import numpy as np
import pinocchio as pin
import pytest
from scipy.optimize import minimize, nnls

from vi_control.model import URDFError, load_robot
from vi_control.model.bundled import bundled_urdf, example_robot_urdf, load_bundled
from vi_control.model.crba import articulated_pivots
from vi_control.model.generate import planar_chain_urdf
from vi_control.model.inertia import _TRIANGLE, _project_moments, inertia_problem, nearest_physical_inertia
from vi_control.model.urdf import build_pinocchio_model, check_inertias, parse_urdf
from vi_control.model.urdf_grammar import urdf_double, urdf_vector

CARTPOLE = open(bundled_urdf("cartpole")).read()
MASS = '<mass value="1.0"/>'
IXX = 'ixx="0.005208333"'

HAND_PICKED = [
    "1.0",
    " 1.0",
    "\t1.0",
    "\n1.0",
    "1.0 ",
    " 1.0 ",
    "1.0\t",
    "1_0",
    "\u0661.0",
    "\uff11.0",
    "1e0",
    "1E+0",
    "+1",
    "-1",
    ".5",
    "5.",
    "+.5",
    "1.e1",
    ".e1",
    ".",
    "1e",
    "1e+",
    "inf",
    "-inf",
    "nan",
    "infinity",
    "0x1p0",
    "1,0",
    "1e400",
    "-1e400",
    "1e-400",
    "",
    " ",
    "1.0f",
    "1d0",
    "- 1",
    "--1",
    "1.2.3",
    "1e5.5",
    "007",
    "0.0",
    "1 2",
]


def _random_strings(n, seed=0):
    rng = np.random.default_rng(seed)
    alphabet = list("0123456789.+-eE _x,\t") + ["\u0661", "inf", "nan"]
    return ["".join(rng.choice(alphabet, size=rng.integers(0, 7))) for _ in range(n)]


def _pinocchio_reads_mass(value: str) -> float | None:
    """The cart's mass as Pinocchio reads it, or None when its parser dropped the <inertial> (which then also
    loses the rotational inertia; a kept one keeps ixx)."""
    model = pin.buildModelFromXML(CARTPOLE.replace(MASS, f'<mass value="{value}"/>'))
    body = model.inertias[1]
    # the <inertial> stays (mass read) iff the lever-free rotational inertia about the CoM keeps ixx
    return body.mass if body.inertia[0, 0] != 0.0 else None


@pytest.mark.parametrize("values", [HAND_PICKED, _random_strings(120)], ids=["hand-picked", "random"])
def test_number_grammar_is_urdfdoms(values):
    """For every string: our grammar accepts it exactly when Pinocchio's parser does, with the same value; and
    load_robot refuses every string the parser would drop, naming the link and the element."""
    for v in values:
        theirs, ours = _pinocchio_reads_mass(v), urdf_double(v)
        assert (theirs is None) == (ours is None), repr(v)
        if ours is not None:
            assert ours == theirs, repr(v)
        else:
            with pytest.raises(URDFError, match=r"link 'cart' <mass>: attribute value="):
                load_robot(CARTPOLE.replace(MASS, f'<mass value="{v}"/>'))


def test_vector_grammar_is_urdfdoms():
    """A vector (here a fixed joint's origin) Pinocchio's parser refuses makes it refuse the whole model."""
    tip = '<origin xyz="0 0 -0.5" rpy="0 0 0"/>\n  </joint>'
    for v in [
        "0 0 -0.5",
        " 0 0 -0.5",
        "0  0 -0.5",
        "0 0 -0.5 ",
        "0\t0 -0.5",
        "0 0 -0.5\t",
        "0 0",
        "0 0 0 0",
        "0 0 x",
        "0,0,-0.5",
        "\t0 0 -0.5",
        "0 0 1e400",
        "0 0 -.5",
    ] + _random_strings(60, seed=1):
        try:
            pin.buildModelFromXML(CARTPOLE.replace(tip, f'<origin xyz="{v}" rpy="0 0 0"/>\n  </joint>'))
            theirs = True
        except (RuntimeError, ValueError):
            theirs = False
        assert theirs == (urdf_vector(v) is not None), repr(v)


@pytest.mark.parametrize(
    "old, new, message",
    [
        (MASS, '<mass value=" 1.0 "/>', r"link 'cart' <mass>: attribute value=' 1.0 ' is not a number"),
        (MASS, '<mass value="1_0"/>', r"link 'cart' <mass>: attribute value='1_0'"),
        (MASS, '<mass value="\u0661.0"/>', r"link 'cart' <mass>"),
        (IXX, 'ixx="0.005 "', r"link 'cart' <inertia>: attribute ixx='0.005 '"),
        (IXX, "", r"link 'cart' <inertia>: attribute ixx is required"),
        (
            '<origin xyz="0 0 0" rpy="0 0 0"/>\n      <mass',
            '<origin xyz="0 0 0" rpy="inf 0 0"/>\n      <mass',
            r"link 'cart' <inertial> <origin>: attribute rpy='inf 0 0' is not 3 numbers",
        ),
        (
            '<origin xyz="0 0 0" rpy="0 0 0"/>\n      <mass',
            '<origin xyz="1e300 0 0" rpy="0 0 0"/>\n      <mass',
            r"link 'cart' <inertial> <origin>: attribute xyz='1e300 0 0' is beyond the supported range",
        ),
        (MASS, "", r"link 'cart': <inertial> needs a <mass> element"),
        ('<axis xyz="1 0 0"/>', '<axis xyz="1\t0 0"/>', r"joint 'slider' <axis>: attribute xyz='1\\t0 0'"),
        # (a newline without a tab in the tag: expat would make it a space, urdfdom's tinyxml2 keeps it)
        ('<axis xyz="1 0 0"/>', '<axis xyz="1\n0 0"/>', r"joint 'slider' <axis>: attribute xyz='1\\n0 0'"),
        ('effort="20.0" velocity="10.0"', 'velocity="10.0"', r"joint 'slider' <limit>: attribute effort is required"),
        (
            '<axis xyz="0 1 0"/>',
            '<axis xyz="0 1 0"/><dynamics/>',
            r"joint 'hinge' <dynamics>: needs damping or friction",
        ),
        (
            '<axis xyz="0 1 0"/>',
            '<axis xyz="0 1 0"/><safety_controller k_position="1"/>',
            r"joint 'hinge' <safety_controller>: attribute k_velocity is required",
        ),
        ('<axis xyz="0 1 0"/>', '<axis xyz="0 1 0"/><calibration rising="x"/>', r"joint 'hinge' <calibration>"),
        (
            '<link name="rail"/>',
            '<link name="rail"><visual><geometry><box size="1 1"/></geometry></visual></link>',
            r"link 'rail' <visual> <box>: attribute size='1 1' is not 3 numbers",
        ),
        (
            '<link name="rail"/>',
            '<link name="rail"><collision><geometry/></collision></link>',
            r"link 'rail' <collision><geometry>: contains no shape element",
        ),
        ('<robot name="cartpole">', '<robot name="cartpole" version="2.0">', r"only URDF version 1.0"),
    ],
)
def test_each_rule_of_the_parser_is_ours_naming_the_element(old, new, message, capfd):
    """urdfdom (inside Pinocchio) logs an error on its stderr and drops the element (the cart loses its mass or
    inertia; a visual vanishes) or refuses the model with the generic "The XML stream does not contain a valid
    URDF model"; we refuse it naming the link or joint."""
    assert old in CARTPOLE
    xml = CARTPOLE.replace(old, new, 1)
    capfd.readouterr()
    try:
        pin.buildModelFromXML(xml)
        refused = False
    except (RuntimeError, ValueError):
        refused = True
    logged = "Error:" in capfd.readouterr().err
    assert refused or logged or "1e300" in new  # a huge origin is read by Pinocchio: our range stops it
    with pytest.raises(URDFError, match=message):
        load_robot(xml)


def test_cross_check_names_a_body_pinocchio_got_wrong():
    """The safety net behind the grammar: whatever made Pinocchio's body differ from the URDF is reported by name
    (here its model is built from a copy whose <inertial> the parser drops)."""
    parsed = parse_urdf(CARTPOLE)
    check_inertias(parsed, build_pinocchio_model(parsed))  # consistent: silent
    dropped = parse_urdf(CARTPOLE)
    dropped.xml = CARTPOLE.replace(MASS, '<mass value=" 1.0 "/>')  # what Pinocchio reads: no cart <inertial>
    with pytest.raises(
        URDFError,
        match=r"links \['cart'\] \(moved by joint 'slider'\): Pinocchio's model carries "
        r"mass 0 kg .* where the URDF states 1 kg",
    ):
        check_inertias(parsed, build_pinocchio_model(dropped))


@pytest.mark.parametrize("name", ["panda", "biped5", "chain30"])
def test_articulated_pivots_are_the_mass_matrix_pivots(name, rng):
    """The O(n) regularity test is Gaussian elimination of M(q): the pivots multiply to det M (Pinocchio's crba),
    and each is at most its diagonal entry."""
    robot = {
        "panda": lambda: load_robot(example_robot_urdf("panda")),
        "biped5": lambda: load_bundled("biped5"),
        "chain30": lambda: load_robot(planar_chain_urdf(30)),
    }[name]()
    model = robot.pin_model
    for _ in range(3):
        q = rng.uniform(-1.5, 1.5, model.nq)
        D, Mii = articulated_pivots(model, q)
        M = pin.crba(model, model.createData(), q)
        M = np.triu(M) + np.triu(M, 1).T
        sign, logdet = np.linalg.slogdet(M)
        assert sign > 0 and np.sum(np.log(D)) == pytest.approx(logdet, abs=1e-9)
        assert np.all(D <= Mii * (1 + 1e-12)) and np.allclose(Mii, np.diag(M), rtol=1e-12)


def test_three_thousand_links_load():
    """Validation is O(n) (articulated-body pivots): a 3000-link chain loads (400/800/1600 links took 4.8/15.5/
    112 s with the dense M(q); benchmarks/bench_model_load.py measures it)."""
    robot = load_robot(planar_chain_urdf(3000))
    assert robot.nq == 3000 and robot.total_mass == pytest.approx(3000.0)


def test_link_count_is_limited():
    from vi_control.model.limits import MAX_LINKS

    links = "".join(f'<link name="l{i}"/>' for i in range(MAX_LINKS + 1))
    with pytest.raises(URDFError, match=rf"more than {MAX_LINKS} links"):
        load_robot(f'<robot name="big">{links}</robot>')


# --- inertia policy ----------------------------------------------------------------------------------


def _nearest_by_optimization(mass: float, inertia: np.ndarray) -> float:
    """Smallest ‖J − inertia‖_F over physical J = tr(Σ)I − Σ with Σ = LLᵀ ⪰ 0 (every physical inertia about the
    CoM is of this form, Σ the second moment of the mass distribution), by scipy from several starts."""

    def J(p):
        L = np.zeros((3, 3))
        L[np.tril_indices(3)] = p
        S = L @ L.T
        return np.trace(S) * np.eye(3) - S

    best = np.inf
    for seed in range(3):
        p0 = np.random.default_rng(seed).normal(size=6) * np.sqrt(np.abs(inertia).max())
        res = minimize(lambda p: np.sum((J(p) - inertia) ** 2), p0, method="BFGS", options={"gtol": 1e-14})
        best = min(best, np.sqrt(res.fun))
    return best


@pytest.mark.parametrize(
    "moments",
    [
        (0.0, 0.0, 3e-6),
        (2.30064072e-06, 3.48526519e-06, 7.26590210e-06),
        (-3.5349e-08, 3.5008e-08, 9.0870e-08),
        (1.0, 1.0, 3.0),
        (-1.0, 2.0, 2.5),
    ],
)
def test_repair_is_the_nearest_physical_inertia(moments, rng):
    """The projection keeps the eigenvectors and moves the moments to the nearest point of the triangle-inequality
    cone: optimal by the KKT conditions (λ − λ* = −Aᵀμ, μ ≥ 0, μ ⟂ Aλ*, by scipy's nnls) and no farther than
    a direct numerical minimization over all physical inertias."""
    R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    inertia = R @ np.diag(moments) @ R.T
    assert inertia_problem(1.0, inertia) is not None
    fixed = nearest_physical_inertia(1.0, inertia)
    assert inertia_problem(1.0, fixed) is None
    lam = np.linalg.eigvalsh(inertia)
    star = _project_moments(lam)
    mu, resid = nnls(-_TRIANGLE.T, lam - star)
    assert resid < 1e-12 * max(1.0, np.abs(lam).max()) and np.all(np.abs(mu * (_TRIANGLE @ star)) < 1e-15)
    dist = np.linalg.norm(fixed - inertia)
    assert dist <= _nearest_by_optimization(1.0, inertia) * (1 + 1e-6) + 1e-12


def test_repair_is_logged_and_changes_only_inertias(caplog):
    xml = CARTPOLE.replace(IXX, 'ixx="0.05"')  # 0.05 > 0.009375 + 0.010833: violates the triangle inequality
    with pytest.raises(
        URDFError,
        match=r"link 'cart': principal moments .* triangle inequality \(inertia_policy: "
        r"repair projects it",
    ):
        load_robot(xml)
    with caplog.at_level("WARNING", logger="vi_control.model"):
        robot = load_robot(xml, {"inertia_policy": "repair"})
    (record,) = caplog.records
    assert "link 'cart': non-physical inertia repaired" in record.getMessage()
    assert robot.total_mass == pytest.approx(1.3)
    assert inertia_problem(1.0, robot.pin_model.inertias[1].inertia) is None
    assert robot.pin_model.inertias[2] == load_bundled("cartpole").pin_model.inertias[2]  # the pole untouched
    assert load_robot(xml, inertia_policy="repair").hash == robot.hash  # keyword = YAML key
    assert load_bundled("cartpole").hash == load_bundled("cartpole", inertia_policy="repair").hash  # nothing to do
