"""ament_python package definition for vi_control."""

from glob import glob

from setuptools import find_packages, setup

package_name = "vi_control"

# What `import vi_control` and the integrators, planners and controllers need (requirements/runtime.txt, core).
RUNTIME = [
    "numpy~=2.4",
    "scipy~=1.17",
    "pin~=4.1",
    "casadi~=3.8",
    "PyYAML~=6.0",
    "matplotlib~=3.11",
    "example-robot-data~=6.0",  # `erd:<name>` models load its URDFs at run time
]
# Optional features: `pip install vi_control[sweep]` etc. (requirements/runtime.txt and requirements/ros.txt).
EXTRAS = {
    "sweep": ["ray~=2.60"],
    "plant": ["mujoco~=4.0"],
    "view": [
        "meshcat~=0.3.2",
        "tornado~=6.6",
        "pyzmq~=27.3",
        "u-msgpack-python~=2.8",
        "ipython~=9.18",
        "pillow~=13.0",
        "mcap~=1.6",
        "mcap-ros2-support~=0.6.0",
    ],
    "bag": ["mcap~=1.6"],
    # ROS 2 kilted wheels for the nodes without a ROS install (on one, rosdep installs package.xml's exec_depends)
    "ros": [
        "ros-rclpy~=9.1",
        "ros-rmw-fastrtps-cpp~=9.3",
        "ros-std-msgs~=5.5",
        "ros-std-srvs~=5.5",
        "ros-sensor-msgs~=5.5",
        "ros-nav-msgs~=5.5",
        "ros-trajectory-msgs~=5.5",
        "ros-geometry-msgs~=5.5",
        "ros-builtin-interfaces~=2.3",
        "ros-rosgraph-msgs~=2.3",
        "ros-lifecycle-msgs~=2.3",
        "ros-diagnostic-msgs~=5.5",
        "ros-ament-index-python~=1.11",
    ],
}

setup(
    name=package_name,
    version="0.3.17",
    packages=find_packages(exclude=["test", "test.*", "benchmarks"]),
    package_data={f"vi_control.{layer}": ["csrc/*.c"] for layer in ("mechanics", "integrators", "control", "planning")},
    # our C sources, each in the layer whose module loads it, compiled on first use
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/launch", glob("launch/*.py")),
        ("share/" + package_name + "/config", glob("config/*.yaml")),
        ("share/" + package_name + "/urdf", glob("urdf/*.urdf")),
    ],
    python_requires=">=3.11",
    # Compatible ranges (~=: same major, at least the tested minor), not the exact pins of requirements/*.txt: a
    # library installed beside others must not force its exact versions on them. The pins stay in requirements/
    # for the reproducible .venv and CI; test/project/test_packaging.py checks that each pin lies inside its range here.
    install_requires=RUNTIME,
    extras_require={**EXTRAS, "all": sorted({r for reqs in EXTRAS.values() for r in reqs})},
    zip_safe=True,
    maintainer="vi_control developers",
    maintainer_email="vi-control@example.org",
    description="Variational integrators for simulation, planning and control of robots (ROS 2).",
    license="BSD-3-Clause",
    entry_points={
        "console_scripts": [
            "vi_inspect = vi_control.model.inspect:main",
            "vi_simulator = vi_control.ros.simulator_node:main",
            "vi_planner = vi_control.ros.planner_node:main",
            "vi_controller = vi_control.ros.controller_node:main",
            "vi_mujoco_plant = vi_control.ros.mujoco_plant:main",
            "vi_main_job = vi_control.ros.main_job:main",
            "vi_sweep = vi_control.sweep.cli:main",
            "vi_view = vi_control.ros.view_node:main",
            "vi_recorder = vi_control.ros.recorder_node:main",
        ],
    },
)
