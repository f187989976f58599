"""ament_python package definition for vi_control."""

from glob import glob

from setuptools import find_packages, setup

package_name = "vi_control"

setup(
    name=package_name,
    version="0.1.0",
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
    install_requires=["setuptools"],
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
