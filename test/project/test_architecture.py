"""Architecture: the layers' import arrows, the discrete-system interface and the public API.

Layers, bottom to top (DESIGN.md): model → mechanics → integrators → linearization → control → planning → sweep
→ view → ros. A module may import only from its own layer or layers below; only ``ros`` imports rclpy or ROS messages.
"""

import ast
from pathlib import Path

import numpy as np
import pytest

import vi_control as vc
from vi_control.integrators import DiscreteSystem, Linearizable, make_integrator
from vi_control.integrators.base import NewtonSettings

PKG = Path(vc.__file__).resolve().parent
LAYERS = ["model", "mechanics", "integrators", "linearization", "control", "planning", "sweep", "view", "ros"]
ROS_PACKAGES = {
    "rclpy",
    "std_msgs",
    "sensor_msgs",
    "trajectory_msgs",
    "geometry_msgs",
    "nav_msgs",
    "std_srvs",
    "builtin_interfaces",
    "rcl_interfaces",
    "rosgraph_msgs",
    "diagnostic_msgs",
    "lifecycle_msgs",
}


def _imports(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in a file, relative ones resolved against its package."""
    parts = path.relative_to(root.parent).with_suffix("").parts
    package = parts[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ((node.module,) if node.module else ()))
                out += (
                    [(node.lineno, f"{mod}.{a.name}") for a in node.names] if not node.module else [(node.lineno, mod)]
                )
            else:
                out.append((node.lineno, node.module))
    return out


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "vi_control" or len(parts) < 2 or parts[1] not in LAYERS:
        return None
    return LAYERS.index(parts[1])


def layer_violations(root: Path) -> list[str]:
    """Every import in the package at ``root`` that points up the layers or brings ROS outside ``ros``."""
    violations = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        own = LAYERS.index(rel.parts[0]) if rel.parts[0] in LAYERS else None
        for line, mod in _imports(path, root):
            if mod.split(".")[0] in ROS_PACKAGES and own != LAYERS.index("ros"):
                violations.append(f"{rel}:{line} imports {mod} (only vi_control.ros may import ROS)")
            target = _layer(mod)
            if own is None:  # the package's own __init__: the public API, everything but ros
                if target == LAYERS.index("ros"):
                    violations.append(f"{rel}:{line} imports {mod} (the public API must not import ROS)")
            elif target is not None and target > own:
                violations.append(f"{rel}:{line}: {LAYERS[own]} imports {mod} ({LAYERS[target]} is above it)")
    return violations


def test_no_import_points_up_the_layers():
    violations = layer_violations(PKG)
    assert not violations, "\n".join(violations)


def test_import_vi_control_loads_no_viewer_nor_recorder():
    """The browser view (meshcat) and the MCAP writer load only when used."""
    import subprocess
    import sys

    code = (
        "import sys, vi_control; bad = [m for m in sys.modules if m.split('.')[0] in "
        "('meshcat', 'mcap', 'mcap_ros2', 'rosbags', 'zmq', 'tornado') or m.startswith('vi_control.view')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_only_the_layers_and_the_public_api_live_in_the_package():
    top = {p.name for p in PKG.iterdir() if not p.name.startswith(("_", "."))} - {"py.typed"}
    assert top <= set(LAYERS), f"modules outside the layers: {sorted(top - set(LAYERS))}"


def test_the_layer_check_sees_upward_and_ros_arrows(tmp_path):
    """The checker itself, on a small package of its own: each kind of wrong arrow is reported, a right one not."""
    root = tmp_path / "vi_control"
    files = {
        "control/a.py": "from ..planning import plan_task\n",
        "model/b.py": "import rclpy\n",
        "planning/c.py": "from vi_control.control.plan import Plan\nfrom ..model import load_robot\n",
        "__init__.py": "from .ros import main_job\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    found = "\n".join(layer_violations(root))
    assert "control imports vi_control.planning" in found and "only vi_control.ros may import ROS" in found
    assert "public API must not import ROS" in found and "planning/c.py" not in found


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes inside ``if TYPE_CHECKING:`` blocks (annotations only: never run)."""
    return {
        id(x)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for stmt in node.body
        for x in ast.walk(stmt)
    }


def import_graph(root: Path) -> dict[str, set[str]]:
    """module → the package's modules it imports, at module level or lazily inside a function (an import of a
    name from a package points at the package's ``__init__``, of a submodule at the submodule)."""
    modules = {_module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_nodes(tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names if a.name in modules}
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                mod = ".".join(base + ([node.module] if node.module else []))
                for a in node.names:
                    sub = f"{mod}.{a.name}"
                    edges |= {sub} if sub in modules else ({mod} if mod in modules else set())
        graph[name] = edges - {name}
    return graph


def import_loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan): every import loop."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    loops = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                loops.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return loops


def test_no_import_loops():
    """One concept per module: no module imports, at module level or lazily, one that imports it back
    (a split that needs a lazy import back is one concept in two files)."""
    loops = import_loops(import_graph(PKG))
    assert not loops, "\n".join(" ↔ ".join(c) for c in loops)


def private_reads(root: Path) -> list[str]:
    """Every place a module reads another module's private name: ``from <ours> import _x``, ``mod._x`` on a module
    of ours, or ``obj._x`` on anything but ``self``/``cls``, a class of the same module, or a module from outside
    the package (the standard library's ``os._exit`` is its API)."""
    out = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(root)
        outside, own = set(), {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                outside |= {(a.asname or a.name).split(".")[0] for a in node.names if not a.name.startswith(root.name)}
            elif isinstance(node, ast.ImportFrom) and not node.level and not node.module.startswith(root.name):
                outside |= {a.asname or a.name for a in node.names}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or node.module.startswith(root.name)):
                out += [
                    f"{rel}:{node.lineno} imports private {a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
            elif (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"} | outside | own)
            ):
                out.append(f"{rel}:{node.lineno} reads {ast.unparse(node)}")
    return out


def test_no_module_reads_another_modules_private_names():
    found = private_reads(PKG)
    assert not found, "\n".join(found)


def test_the_loop_and_privacy_checks_see_what_they_look_for(tmp_path):
    root = tmp_path / "vi_control"
    files = {
        "__init__.py": "",
        "planning/__init__.py": "",
        "planning/a.py": "from .b import helper\n",
        "planning/b.py": "def helper():\n    from . import a\n",
        "planning/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import D\n",
        "planning/d.py": "import os\nfrom .c import _hidden\nfrom . import c\n"
        "class K:\n    _n = 1\n    def f(self, vi):\n        return self._n + K._n + os._exit"
        " + vi._what + c._x\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    assert import_loops(import_graph(root)) == [["vi_control.planning.a", "vi_control.planning.b"]]
    found = "\n".join(private_reads(root))
    assert "imports private _hidden" in found and "reads vi._what" in found and "reads c._x" in found
    assert "self._n" not in found and "K._n" not in found and "os._exit" not in found


def c_libraries(root: Path = PKG) -> dict[str, set[str]]:
    """The C build graph: for every module-level string of C source in the package (what a loader hands to the
    compiler), the module defining it → the package's C files it concatenates (paths relative to ``root``).

    Found from the running code, not by parsing: each module that names a ``csrc`` directory is imported and each
    of its own module-level assignments is matched against the text of every C file."""
    import importlib

    sources = {str(c.relative_to(root)): c.read_text(encoding="utf-8") for c in sorted(root.rglob("*.c"))}
    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if '"csrc"' not in text:
            continue
        module = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        names = {
            t.id
            for node in ast.parse(text).body
            if isinstance(node, ast.Assign)
            for t in node.targets
            if isinstance(t, ast.Name)
        }
        loaded = importlib.import_module(module)
        for name in sorted(names):
            value = getattr(loaded, name, None)
            if isinstance(value, str):
                found = {rel for rel, src in sources.items() if src in value}
                if found:
                    graph[f"{module}.{name}"] = found
    return graph


def c_build_violations(graph: dict[str, set[str]], sources: set[str]) -> list[str]:
    """Every C file outside ``<layer>/csrc/``, compiled into no library, or included by a library built in a
    layer below its own (a library built in layer L may include C from layers ≤ L only)."""
    out = []
    for rel in sorted(sources):
        parts = Path(rel).parts
        if len(parts) != 3 or parts[0] not in LAYERS or parts[1] != "csrc":
            out.append(f"{rel}: C source outside <layer>/csrc/")
        if not any(rel in used for used in graph.values()):
            out.append(f"{rel}: compiled into no library")
    for lib, used in sorted(graph.items()):
        own = _layer(lib)
        for rel in sorted(used):
            layer = Path(rel).parts[0]
            if own is None or layer not in LAYERS or LAYERS.index(layer) > own:
                out.append(
                    f"{lib} ({LAYERS[own] if own is not None else 'no layer'}) compiles {rel} ({layer} is above it)"
                )
    return out


def test_c_sources_live_in_the_layer_that_loads_them():
    """The layer rule for the C build graph: each C file in its layer's ``csrc/``, each compiled
    library built only from C of its own layer or below — control's LQR library takes mechanics' dense LU and
    products and control's LQR recursions (their one implementation, loaded by control.lqr); planning's DDP kernel
    library the same mechanics helpers, mechanics' derivatives of the midpoint step over a tree, and planning's DDP,
    no LQR (the planner calls control.lqr); the midpoint VI's
    Newton driver (mechanics) nothing from above."""
    graph = c_libraries()
    sources = {str(c.relative_to(PKG)) for c in PKG.rglob("*.c")}
    violations = c_build_violations(graph, sources)
    assert not violations, "\n".join(violations)
    assert graph["vi_control.control.lqr.LQR_C"] == {
        "mechanics/csrc/dense_lu.c",
        "mechanics/csrc/dense_mm.c",
        "control/csrc/lqr_kernel.c",
    }
    assert graph["vi_control.planning.compiled.KERNEL_C"] == {
        "mechanics/csrc/dense_lu.c",
        "mechanics/csrc/dense_mm.c",
        "mechanics/csrc/tree_derivatives.c",
        "planning/csrc/ddp_kernel.c",
    }
    assert graph["vi_control.mechanics.discrete.NEWTON_C"] == {
        "mechanics/csrc/dense_lu.c",
        "mechanics/csrc/newton_driver.c",
    }
    assert graph["vi_control.integrators.rdp.RDP_C"] == {"mechanics/csrc/dense_lu.c", "integrators/csrc/rdp_driver.c"}
    assert graph["vi_control.integrators.drnea_c.DRNEA_C"] == {"integrators/csrc/drnea_step.c"}
    assert graph["vi_control.integrators.bordered.LU_RCOND_C"] == {
        "mechanics/csrc/dense_lu.c",
        "integrators/csrc/lu_rcond.c",
    }


def test_the_c_build_check_sees_c_above_its_library_and_misplaced_files():
    graph = {
        "vi_control.control.lqr.LIB": {"control/csrc/a.c", "planning/csrc/b.c"},
        "vi_control.planning.x.LIB": {"control/csrc/a.c", "planning/csrc/b.c"},
    }
    found = "\n".join(
        c_build_violations(graph, {"control/csrc/a.c", "planning/csrc/b.c", "mechanics/c.c", "model/csrc/orphan.c"})
    )
    assert "vi_control.control.lqr.LIB (control) compiles planning/csrc/b.c" in found
    assert "mechanics/c.c: C source outside <layer>/csrc/" in found
    assert "model/csrc/orphan.c: compiled into no library" in found
    assert "vi_control.planning.x.LIB" not in found


@pytest.fixture(scope="module")
def systems(pendulum_robot):
    return {name: make_integrator(name, pendulum_robot, 0.01) for name in ("midpoint", "linear_time")}


def test_both_integrators_implement_the_interface(systems, rng):
    """Same sizes, same state conventions, same errors; the midpoint VI is also Linearizable."""
    for name, s in systems.items():
        assert isinstance(s, DiscreteSystem), name
        assert isinstance(s.settings, NewtonSettings)
        assert s.state.nx == s.nx == 2 * s.nq and s.state.ndx == s.nx
        x = s.state_from_configurations(np.array([0.3]), np.array([0.31]))
        X, lams = s.simulate(x, np.full((5, s.nu), 0.5))
        assert X.shape == (6, 2) and lams.shape == (5, s.nc)
        # stateless: the same call twice gives the same bits, whatever ran in between
        r1 = s.solve(X[2], np.array([0.5]))
        s.simulate(x, np.full((3, s.nu), -2.0))
        assert np.array_equal(s.solve(X[2], np.array([0.5])).x, r1.x)
        assert np.array_equal(r1.x, X[3])
        assert np.array_equal(s.solve(X[2], np.array([0.5]), y0=s.warm_start(X[3])).x.round(12), X[3].round(12))
        with pytest.raises(ValueError, match="input has size 2"):
            s.step(x, np.zeros(2))
        with pytest.raises(ValueError, match="NaN"):
            s.step(np.array([np.nan, 0.0]))
        assert s.potential_gradient(np.array([0.4])) == pytest.approx([9.8 * np.sin(0.4)], rel=1e-12)
    assert all(isinstance(s, Linearizable) for s in systems.values())
    # the two integrators discretize the same pendulum: one step agrees to O(Δt³)
    x = systems["midpoint"].state_from_velocity(np.array([0.3]), np.array([1.0]))
    a, b = (systems[n].step(x, np.array([0.5])) for n in ("midpoint", "linear_time"))
    assert np.abs(a - b).max() < 1e-5


def test_same_controller_code_runs_on_both_integrators(systems, pendulum_vi):
    """A plan from the planner (on the midpoint VI) tracked by the same TrackingController and StateEstimator
    with either integrator as the plant; the planner refuses a system without derivatives.
    (test_linear_time_linearization.py plans on the linear-time VI with the same planner.)"""
    task = vc.load_task("task_pendulum_swingup")
    plan, res = vc.plan_task(pendulum_vi, task)
    assert res.converged and plan.converged
    plant_dt = {}
    for name in ("midpoint", "linear_time"):
        plant = make_integrator(name, pendulum_vi.robot, pendulum_vi.dt)
        est = vc.StateEstimator(plant)
        ctl = vc.TrackingController(plan, plant.state)  # the seed's swing-up task is unbounded (≈10 N·m peak)
        x = plan.X[0].copy()
        est.update(-plant.dt, x[:1], None)
        for k in range(plan.horizon):
            xhat = est.update(k * plant.dt, x[:1], None)
            x = plant.step(x, ctl.command(k, xhat)[0])
        plant_dt[name] = abs(x[0] - np.pi)
    assert plant_dt["midpoint"] < 1e-6  # the plan's own dynamics: exact up to the estimator's round-off
    assert plant_dt["linear_time"] < 0.05  # another discretization of the same pendulum: feedback absorbs it

    class StepOnly:  # a DiscreteSystem without derivatives: the planner must say so, not fail inside
        def __init__(self, inner):
            self._inner = inner

        def __getattr__(self, name):
            if name in ("step_derivatives", "step_hessian", "curved_outputs"):
                raise AttributeError(name)
            return getattr(self._inner, name)

    with pytest.raises(TypeError, match="not Linearizable"):
        vc.plan_task(StepOnly(pendulum_vi), task)


def test_newton_settings_are_validated():
    for bad in (
        dict(tol=0.0),
        dict(tol=float("nan")),
        dict(rcond_min=-1.0),
        dict(max_iterations=0),
        dict(max_iterations=True),
        dict(step_tol=float("inf")),
    ):
        with pytest.raises(ValueError, match="NewtonSettings"):
            NewtonSettings(**bad)
    s = NewtonSettings(tol=1e-10)
    assert s.accepts(1e-10, 0.0) and not s.accepts(2.1e-10, 1.0) and s.accepts(2e-10, 1.0)
    assert not s.accepts(float("nan"), 0.0)
    assert s.accepts(1e-6, 0.0, floor=s.rounding_floor(1e9, 1.0))


def test_public_api_quick_start():
    """The README's quick start, with the flat namespace only."""
    robot = vc.load_robot("pendulum")
    vi = vc.MidpointVI(robot, dt=0.1)
    x1 = vi.step(np.array([0.2, 0.5]), np.array([0.8]))
    assert x1 == pytest.approx([0.247136194155, 0.362723883110], abs=1e-10)  # REFERENCE §1
    lin = vc.linearize(vi, np.array([0.2, 0.5]), np.array([0.8]))
    assert np.allclose(lin.A, [[0.95333434, 0.09766672], [-0.93331323, 0.95333434]], atol=1e-8)
    assert vc.load_robot("erd:ur5").nq == 6
    assert vc.load_robot("double_pendulum", system={"actuated": [{"joint": "elbow"}]}).actuated == ("elbow",)
    heavy = vc.load_robot("pendulum", mass_scale=1.05)
    assert heavy.total_mass == pytest.approx(1.05 * robot.total_mass) and heavy.hash != robot.hash
    missing = [n for n in vc.__all__ if not hasattr(vc, n)]
    assert not missing


def test_the_linearizable_check_is_remembered_per_class_but_not_for_wrappers(pendulum_vi):
    """require_linearizable remembers classes that passed (the Protocol check costs ~40 µs); a wrapper computing its
    attributes per instance is checked every time: one that hid nothing must not let a later one through."""
    from vi_control.integrators import _LINEARIZABLE_CLASSES, require_linearizable

    class Wrapper:
        def __init__(self, inner, hidden=()):
            self._inner, self._hidden = inner, hidden

        def __getattr__(self, name):
            if name in self._hidden:
                raise AttributeError(name)
            return getattr(self._inner, name)

    require_linearizable(pendulum_vi)
    assert type(pendulum_vi) in _LINEARIZABLE_CLASSES
    require_linearizable(Wrapper(pendulum_vi))  # passes, and is not remembered
    assert Wrapper not in _LINEARIZABLE_CLASSES
    with pytest.raises(TypeError, match="not Linearizable"):
        require_linearizable(Wrapper(pendulum_vi, hidden=("step_derivatives",)))
