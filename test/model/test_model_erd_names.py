"""``erd:<name>`` names URDF files; example-robot-data's Python loader names that are no file stem (``talos``) are
refused with the spelling of the file that loader reads.

Why refuse rather than resolve: the loaders' table (``example_robot_data.ROBOTS``) is not shipped with the data
package we pin (example-robot-data 6.0.0; the separate example-robot-data-loaders 5.0.0 requires the data at ==5.0.0),
and a loader's model is more than its URDF — a free-flyer base, rotor inertias from an SRDF (talos), a model built in
Python (talos_legs) — so ``erd:talos`` resolved to a fixed-base talos_reduced.urdf would be another robot under the
loader's name. The file's own name says what is loaded. Pinocchio's parse of the named file is the independent check.
"""

import pinocchio as pin
import pytest

import vi_control as vc
from vi_control.model.bundled import ERD_LOADER_NAMES, example_robot_data_dir, example_robot_path
from vi_control.model.errors import URDFError


def test_erd_talos_names_the_file_its_loader_reads_and_that_file_loads():
    with pytest.raises(
        URDFError,
        match=r"unknown example robot 'talos' \('talos' is example-robot-data's Python "
        r"loader name, not a URDF file: that loader reads erd:talos_reduced; it also "
        r"adds a free-flyer base \(here: floating_base: true.*rotor inertias",
    ):
        vc.load_robot("erd:talos")
    path = example_robot_path("talos_reduced")
    assert path == example_robot_data_dir() / "talos_data/robots/talos_reduced.urdf"
    reference = pin.buildModelFromUrdf(str(path))
    robot = vc.load_robot("erd:talos_reduced")
    assert robot.nq == reference.nq == 32
    assert robot.total_mass == pytest.approx(sum(I.mass for I in reference.inertias), rel=1e-12)


@pytest.mark.parametrize("name", sorted(ERD_LOADER_NAMES))
def test_every_loader_name_is_refused_with_a_spelling_that_resolves(name):
    spelling, _ = ERD_LOADER_NAMES[name]
    with pytest.raises(URDFError, match=rf"'{name}' is example-robot-data's Python loader name.*erd:{spelling}[;)]"):
        example_robot_path(name)
    target = example_robot_path(spelling)  # the spelling is accepted by the resolver, and is a file of the data
    assert target.is_file() and target.suffix == ".urdf"
    assert target.stem != name or "/" in spelling  # (anymal: a stem of two files, so a path under robots/)
