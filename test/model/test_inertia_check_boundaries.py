"""check_against_pinocchio at its boundaries: Pinocchio's body is accepted when its mass, centre of mass or
rotational inertia differs from the URDF's by exactly the tolerance (1e-9 of the scale) and refused, naming the
links, one double beyond. The differences are chosen exactly representable (a value against 0)."""

import math

import numpy as np
import pinocchio as pin
import pytest

from vi_control.model.errors import URDFError
from vi_control.model.inertia import Body, check_against_pinocchio

TOL = 1e-9


def _model(mass: float, lever, inertia) -> pin.Model:
    model = pin.Model()
    j = model.addJoint(0, pin.JointModelRY(), pin.SE3.Identity(), "j")
    model.appendBodyToJoint(
        j, pin.Inertia(mass, np.asarray(lever, float), np.asarray(inertia, float)), pin.SE3.Identity()
    )
    return model


def _check(model: pin.Model, expected: Body) -> None:
    composites = {"base": (Body(), ["base"]), "arm": (expected, ["arm"])}
    check_against_pinocchio(model, composites, "base", {"j": "arm"})


@pytest.mark.parametrize("what", ["mass", "lever", "inertia"])
def test_a_difference_of_exactly_the_tolerance_is_accepted_and_the_next_double_refused(what):
    eye = np.eye(3)
    for diff, ok in ((TOL, True), (math.nextafter(TOL, 1.0), False)):
        if what == "mass":  # a massless link where Pinocchio has diff kg (scale max(m, 1) = 1)
            model, expected = _model(diff, np.zeros(3), eye), Body(0.0, np.zeros(3), eye)
        elif what == "lever":  # 1 kg whose centre of mass Pinocchio has diff m off (scale max(|com|, 1) = 1)
            model, expected = _model(1.0, [diff, 0.0, 0.0], eye), Body(1.0, np.zeros(3), eye)
        else:  # a product of inertia of diff kg·m² (scale: the largest moment, 1)
            off = eye.copy()
            off[0, 1] = off[1, 0] = diff
            model, expected = _model(1.0, np.zeros(3), off), Body(1.0, np.zeros(3), eye)
        if ok:
            _check(model, expected)
        else:
            with pytest.raises(URDFError, match=r"links \['arm'\] \(moved by joint 'j'\)"):
                _check(model, expected)
