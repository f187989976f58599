"""mass_matrix (composite-rigid-body algorithm without pinocchio.Data) against Pinocchio's own crba."""

import subprocess
import sys

import numpy as np
import pinocchio as pin
import pytest
from test_linear_time import TREE_URDF

from vi_control.model import load_robot
from vi_control.model.bundled import example_robot_urdf, load_bundled
from vi_control.model.crba import mass_matrix
from vi_control.model.generate import planar_chain_urdf


@pytest.mark.parametrize("which", ["panda", "panda_floating", "biped5", "marionette", "tree", "chain30"])
def test_mass_matrix_equals_pinocchio_crba(which, rng):
    robot = {
        "panda": lambda: load_robot(example_robot_urdf("panda")),
        "panda_floating": lambda: load_robot(example_robot_urdf("panda"), floating_base=True),
        "biped5": lambda: load_bundled("biped5"),
        "marionette": lambda: load_bundled("marionette"),
        "tree": lambda: load_robot(TREE_URDF),  # branches, a prismatic joint, tilted joint frames
        "chain30": lambda: load_robot(planar_chain_urdf(30)),
    }[which]()
    model = robot.pin_model
    for _ in range(3):
        q = rng.uniform(-1.5, 1.5, model.nq)
        ref = pin.crba(model, model.createData(), q)
        ref = np.triu(ref) + np.triu(ref, 1).T  # Pinocchio fills the upper triangle
        M = mass_matrix(model, q)
        assert np.allclose(M, ref, rtol=0, atol=1e-13 * np.abs(ref).max())
        assert np.array_equal(M, M.T)


def test_long_chain_loads_without_pinocchio_data():
    """Validation needs M(q) once; with pinocchio.Data a 400-link chain took 10 s and 4 GB to load. Measured in
    a fresh process: this process's peak memory may already be higher from other tests. The child's own peak is
    VmHWM (its memory after exec); ru_maxrss also counts the parent's peak, which Linux carries over fork + exec."""
    code = (
        "import resource; from vi_control.model import load_robot; "
        "from vi_control.model.generate import planar_chain_urdf; r = load_robot(planar_chain_urdf(300)); "
        "from pathlib import Path; status = Path('/proc/self/status'); "
        "hwm = [ln.split()[1] for ln in status.read_text().splitlines() if ln.startswith('VmHWM')] "
        "if status.exists() else []; "
        "print(r.nq, hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    nq, peak_kb = map(int, out.stdout.split())
    assert nq == 300
    assert peak_kb / 1024 < 500, peak_kb  # interpreter + libraries ≈ 100 MB; one pinocchio.Data here ≈ 0.9 GB
