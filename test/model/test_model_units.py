"""The model checks do not depend on the unit of mass: a body is physical or not whatever its scale.

Each link inertia is checked against the triangle inequalities (model.inertia) with a round-off slack that scales
with the mass, and a rigid body's inertia, drag and trim (model.rigid_body) with slacks relative to them; scaling by
a power of two s changes no decision.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from vi_control.model import load_robot
from vi_control.model.errors import URDFError
from vi_control.model.generate import planar_chain_urdf
from vi_control.model.inertia import inertia_problem
from vi_control.model.rigid_body import RigidBodyConfigError, load_rigid_body

SCALES = (1.0, 2.0**-20, 2.0**-40, 2.0**20)


@pytest.mark.parametrize("s", SCALES)
def test_a_non_physical_inertia_is_refused_at_any_mass(s):
    """Moments (1, 1, 5)·0.1 kg·m² of a 1 kg body violate λ₁ + λ₂ ≥ λ₃; × 2⁻⁴⁰ (the scale of a 1 mg link of ~1 mm)
    they passed an absolute round-off floor of 1e-12 kg·m²."""
    assert inertia_problem(s, s * np.diag([0.1, 0.1, 0.5])) is not None


@pytest.mark.parametrize("s", SCALES)
def test_a_physical_inertia_is_admitted_at_any_mass(s):
    rod = np.diag([0.0, 0.1, 0.1])  # a thin rod: on the boundary of the triangle inequalities
    assert inertia_problem(s, s * rod) is None
    assert inertia_problem(s, s * (rod + 1e-14 * np.diag([-1.0, 0.0, 1.0]))) is None  # round-off of the rod's


def test_a_urdf_in_milligrams_is_checked_as_in_kilograms():
    """A planar chain written in milligrams loads; with its first link's moments set to (1, 1, 5)·1e-7 kg·m² per kg
    (3e-13 kg·m² off the triangle inequality at 1 mg) it is refused by name, as the same chain in kilograms."""
    for mass in (1.0, 1e-6):
        urdf = planar_chain_urdf(2, length=0.3, mass=mass)
        load_robot(urdf, {"gravity": [0, 0, -9.81]})
        m = 1e-7 * mass
        urdf = re.sub(
            r"<inertia [^>]*/>",
            f'<inertia ixx="{m!r}" ixy="0" ixz="0" iyy="{m!r}" iyz="0" izz="{5 * m!r}"/>',
            urdf,
            count=1,
        )
        with pytest.raises(URDFError, match="triangle inequality"):
            load_robot(urdf, {"gravity": [0, 0, -9.81]})


def _uuv() -> dict:
    return yaml.safe_load((Path(__file__).resolve().parents[2] / "config" / "vehicle_uuv.yaml").read_text())


@pytest.mark.parametrize("s", (1.0, 2.0**-20, 2.0**-39))
def test_a_rigid_body_off_trim_feels_its_restoring_wrench_at_any_mass(s):
    """The 3 kg UUV with buoyancy 1 % short of its weight, masses × s: a configuration-dependent wrench (which DMOC
    refuses) — a floor of 1e-12 N took it for trimmed at × 2⁻⁴⁰ (net 2.7e-13 N). (2⁻³⁹, net 5.4e-13 N: the smallest
    power of two in the mass_scale range [1e-12, 1e6] of every model.)"""
    assert load_rigid_body("vehicle_uuv", mass_scale=s, buoyancy_scale=0.99 * s).has_restoring_wrench
    assert not load_rigid_body("vehicle_uuv", mass_scale=s).has_restoring_wrench


@pytest.mark.parametrize("s", SCALES[:3])
def test_a_rigid_body_yaml_is_checked_whatever_its_units(s):
    """Drag with a negative eigenvalue (it would add energy) and an asymmetric inertia, written × s in the YAML: refused
    at every s (round-off floors of 1e-12 admitted both at × 2⁻⁴⁰)."""
    cfg = _uuv()
    cfg["drag"] = [s, s, s, s, s, -s]
    with pytest.raises(RigidBodyConfigError, match="drag"):
        load_rigid_body(cfg)
    cfg = _uuv()
    cfg["inertia"] = [[s, 0.5 * s, 0.0], [0.4 * s, s, 0.0], [0.0, 0.0, s]]
    with pytest.raises(RigidBodyConfigError, match="symmetric"):
        load_rigid_body(cfg)
