"""Where a URDF or a system YAML comes from (model.urdf.read_urdf_text, model.system_config.load_system_config): a
path as str or os.PathLike, XML or YAML text, a YAML file named without its extension."""

from pathlib import Path

import pytest

from vi_control.model import URDFError
from vi_control.model.bundled import bundled_config, bundled_urdf
from vi_control.model.system_config import load_system_config
from vi_control.model.urdf import read_urdf_text


def test_a_urdf_path_as_str_or_pathlike_and_its_text_read_the_same():
    path = bundled_urdf("pendulum")
    text = Path(path).read_text()
    assert read_urdf_text(path) == read_urdf_text(Path(path)) == read_urdf_text(text) == text
    with pytest.raises(URDFError, match="URDF must be a file path or XML text, got int"):
        read_urdf_text(3)


def test_a_system_yaml_named_without_its_extension_is_read_as_a_file(tmp_path):
    text = Path(bundled_config("pendulum")).read_text()
    bare = tmp_path / "pendulum_system"  # (a path: it has a separator, no .yaml)
    bare.write_text(text)
    got, ref = load_system_config(str(bare)), load_system_config(text)
    assert repr(got) == repr(ref) == repr(load_system_config(bundled_config("pendulum")))


def test_a_model_spec_says_where_its_model_comes_from():
    """``ModelSpec.describe`` (the heading of vi_inspect's report, the sweep's model-mismatch error) for every kind of
    source: the example's name without its ``erd:`` prefix, a bundled name, a path, robot_description XML, the system
    YAML file it names, the mass scale."""
    from vi_control.model.spec import ModelSpec

    assert ModelSpec.parse("erd:panda").describe() == "example-robot-data panda"
    assert ModelSpec.parse({"example": "ur5"}).describe() == "example-robot-data ur5"
    config = bundled_config("pendulum")  # (a bundled model's own system YAML)
    assert ModelSpec.parse("pendulum", mass_scale=1.2).describe() == f"bundled pendulum + {config}, masses ×1.2"
    path = bundled_urdf("pendulum")
    assert ModelSpec.parse(path).describe() == path
    assert ModelSpec.parse(Path(path).read_text()).describe() == "robot_description XML"
    assert ModelSpec.parse(path, system=config).describe() == f"{path} + {config}"
