"""A rigid body's ``name`` (model.rigid_body): the bundled UUV's, the default, and every refusal — the empty string
and names that are not strings (each of the two conditions alone refuses)."""

import pytest
import yaml

from vi_control.model.bundled import bundled_config
from vi_control.model.rigid_body import RigidBodyConfigError, load_rigid_body


@pytest.fixture(scope="module")
def uuv() -> dict:
    with open(bundled_config("vehicle_uuv")) as f:
        return yaml.safe_load(f)


def test_the_name_is_kept_or_defaults(uuv):
    assert load_rigid_body(dict(uuv, name="auv_7")).name == "auv_7"
    assert load_rigid_body({k: v for k, v in uuv.items() if k != "name"}).name == "rigid_body"


@pytest.mark.parametrize("name", ["", 3, None, ["uuv"], True])
def test_a_name_that_is_empty_or_not_a_string_is_refused(uuv, name):
    with pytest.raises(RigidBodyConfigError, match=r"name: expected a non-empty string, got"):
        load_rigid_body(dict(uuv, name=name))
