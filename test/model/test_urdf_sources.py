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
