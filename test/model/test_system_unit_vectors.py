"""The system YAML's direction vectors (model.system_config: a constraint's direction, a rolling wheel's axis and
normal) are normalised, and one too short to have a direction is refused: at the 1e-12 boundary of its length,
just inside and just outside, on each key that takes one."""

import numpy as np
import pytest

from vi_control.model.system_config import SystemConfigError, parse_system_config

WHEEL = {"type": "rolling", "link": "left_wheel", "radius": 0.05, "axis": [0.0, 1.0, 0.0], "normal": [0.0, 0.0, 1.0]}


@pytest.mark.parametrize("key", ["axis", "normal"])
def test_a_direction_of_length_1e_12_is_normalised_and_a_shorter_one_refused(key):
    for v, unit in (([1e-12, 0.0, 0.0], (1.0, 0.0, 0.0)), ([0.0, 6.3e-13, 8.4e-13], (0.0, 0.6, 0.8))):
        got = getattr(parse_system_config({"nonholonomic": [dict(WHEEL, **{key: v})]}).nonholonomic[0], key)
        assert np.allclose(got, unit, rtol=0, atol=1e-15), (v, got)
        assert np.linalg.norm(v) >= 1e-12
    short = [0.999e-12, 0.0, 0.0]
    with pytest.raises(SystemConfigError, match=rf"nonholonomic\[0\]\.{key}: must be non-zero"):
        parse_system_config({"nonholonomic": [dict(WHEEL, **{key: short})]})
