"""``ModelSpec``: the one way every entry point names a model (tasks, ROS parameters, ``vi_inspect``, sweeps).

A model is a robot description plus what URDF cannot say:

- ``source``: a bundled name (``acrobot``: its URDF and system YAML from urdf/, config/), ``erd:<name>``
  (an example-robot-data robot, joints locked as vi_control uses it), a URDF file path, or URDF XML text
  (a ``robot_description``);
- ``system``: a system YAML (path, YAML text or mapping); default: the bundled model's own, else none;
- ``mass_scale``: every link mass and inertia multiplied (a model-mismatch knob); ``floating_base``;
- ``inertia_policy``: 'strict' or 'repair' (overrides the system YAML's key of that name, model.inertia);
- ``name``: the model's name in logs and plans (default: the bundled name, the YAML's, or the URDF's).

``ModelSpec.parse`` accepts a string (any of the above forms) or a task file's mapping
(``{bundled|example|urdf: ..., system: ..., config: <bundled YAML name>, name: ...}``); relative paths are
looked up next to the file that named them (``base_dir``), then in the package's share directory.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, replace

import numpy as np

from .bundled import BUNDLED, bundled_config, bundled_models, example_robot_urdf, share_dir
from .errors import ModelError, SystemConfigError, URDFError, unknown_keys
from .limits import MASS_SCALE_RANGE, Bound
from .robot import RobotModel, load_urdf
from .system_config import INERTIA_POLICIES
from .yaml_io import read_text_file

_MAPPING_KEYS = {
    "bundled",
    "example",
    "urdf",
    "system",
    "config",
    "name",
    "mass_scale",
    "floating_base",
    "inertia_policy",
}


@dataclass(frozen=True)
class ModelSpec:
    """A model named the one way every entry point names it (module docstring): ``source`` (bundled name,
    ``erd:<name>``, URDF path or XML), ``system`` YAML, ``name``, ``mass_scale``, ``floating_base``; ``parse`` reads one
    from a string or a task's mapping, ``load`` gives the ``RobotModel``."""

    source: str
    system: str | dict | None = None
    name: str | None = None
    mass_scale: float = 1.0
    floating_base: bool | None = None
    base_dir: str | None = None
    inertia_policy: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.source, str) or not self.source.strip():
            raise ModelError(
                f"model: expected a bundled name, erd:<name>, a URDF path or URDF XML, got {self.source!r}"
            )
        msg = Bound(*MASS_SCALE_RANGE).refusal("mass_scale", self.mass_scale)
        if msg is not None:
            raise SystemConfigError(msg)
        if self.name is not None and (not isinstance(self.name, str) or not self.name.strip()):
            raise SystemConfigError(f"model name: expected a non-empty string, got {self.name!r}")
        if isinstance(self.floating_base, np.bool_):  # (numpy's bool, as load_urdf takes it)
            object.__setattr__(self, "floating_base", bool(self.floating_base))
        if self.floating_base is not None and not isinstance(self.floating_base, bool):
            raise SystemConfigError(f"floating_base: expected true or false, got {self.floating_base!r}")
        if self.inertia_policy not in (None, *INERTIA_POLICIES):
            raise SystemConfigError(
                f"inertia_policy: expected one of {list(INERTIA_POLICIES)}, got {self.inertia_policy!r}"
            )

    # ---- construction ------------------------------------------------------------------------------
    @classmethod
    def parse(cls, value: str | dict | ModelSpec, base_dir: str | None = None, **overrides) -> ModelSpec:
        """A spec from a string, a task-file mapping or another spec; ``overrides`` replace fields."""
        if isinstance(value, ModelSpec):
            spec = value
        elif isinstance(value, (str, os.PathLike)):  # (a pathlib.Path is a URDF path)
            spec = cls(source=os.fspath(value), base_dir=base_dir)
        elif isinstance(value, dict):
            unknown = set(value) - _MAPPING_KEYS
            if unknown:
                raise ModelError(f"model: {unknown_keys(unknown, _MAPPING_KEYS)}; allowed: {sorted(_MAPPING_KEYS)}")
            given = [k for k in ("bundled", "example", "urdf") if k in value]
            if len(given) != 1:
                raise ModelError("model: give exactly one of bundled, example, urdf")
            key = given[0]
            if not isinstance(value[key], str):
                raise ModelError(f"model.{key}: expected a string, got {value[key]!r}")
            source = {"bundled": value[key], "example": f"erd:{value[key]}", "urdf": value[key]}[key]
            system = value.get("system")
            if value.get("config") is not None:
                if system is not None:
                    raise ModelError("model: give system or config, not both")
                system = bundled_config(str(value["config"]))
                if system is None:
                    raise ModelError(f"model.config: no bundled system YAML named {value['config']!r}")
            spec = cls(
                source=source,
                system=system,
                name=value.get("name") or value.get("config"),
                mass_scale=value.get("mass_scale", 1.0),
                floating_base=value.get("floating_base"),
                base_dir=base_dir,
                inertia_policy=value.get("inertia_policy"),
            )
            if key == "bundled" and spec.kind != "bundled":
                raise ModelError(f"model.bundled: no bundled model named {value[key]!r}; bundled: {sorted(BUNDLED)}")
        else:
            raise ModelError(f"model: expected a name, a URDF path or a mapping, got {type(value).__name__}")
        return replace(spec, **overrides) if overrides else spec

    @classmethod
    def from_parameters(
        cls,
        model: str = "",
        urdf_path: str = "",
        robot_description: str = "",
        system_yaml: str = "",
        mass_scale: float = 1.0,
    ) -> ModelSpec:
        """The ROS nodes' parameters: ``robot_description`` overrides ``urdf_path`` overrides ``model``."""
        source = robot_description or urdf_path or model
        if not source:
            raise ModelError("no model given: set `model`, `urdf_path` or `robot_description`")
        # a description from text or a file is named by `model` when it is set (else by its YAML or URDF)
        name = (model or None) if (robot_description or urdf_path) else None
        return cls(source=source, system=system_yaml or None, name=name, mass_scale=float(mass_scale))

    # ---- resolution --------------------------------------------------------------------------------
    @property
    def kind(self) -> str:
        """'xml', 'example', 'bundled' or 'path'."""
        s = self.source.lstrip()
        if s.startswith("<"):
            return "xml"
        if s.startswith("erd:"):
            return "example"
        if s in BUNDLED:
            return "bundled"
        return "path"

    def _file(self, p: str) -> str:
        """A path as given if it exists, else relative to base_dir, then to the share directory."""
        if os.path.isabs(p) or os.path.exists(p):
            return p
        for base in [self.base_dir, str(share_dir()), str(share_dir() / "config")]:
            if base and os.path.exists(os.path.join(base, p)):
                return os.path.join(base, p)
        return p

    def urdf(self) -> str:
        """URDF path or XML text."""
        kind = self.kind
        if kind == "xml":
            return self.source
        if kind == "example":
            return example_robot_urdf(self.source.lstrip()[4:])
        if kind == "bundled":
            return bundled_models()[self.source][0]
        path = self._file(self.source)
        if os.path.exists(path) and not os.path.isfile(path):  # a directory, device or FIFO: say so, not "no model"
            raise URDFError(f"model {self.source!r}: URDF file {path!r} is not a regular file")
        if not os.path.isfile(path) and (os.sep in self.source or self.source.endswith((".urdf", ".xml"))):
            raise URDFError(
                f"URDF file not found: {self.source!r} (it is not a bundled model, erd:<name> or URDF XML)"
            )  # a path: the file is what is missing, not a misspelt name
        if not os.path.isfile(path):
            close = difflib.get_close_matches(self.source, sorted(BUNDLED), n=1)
            raise URDFError(
                f"model {self.source!r} is not a bundled model ({', '.join(sorted(BUNDLED))}), "
                "erd:<name>, URDF XML, or an existing URDF file" + (f" (did you mean {close[0]!r}?)" if close else "")
            )
        return path

    def urdf_text(self) -> str:
        """URDF XML text (what a simulator publishes as its robot_description)."""
        u = self.urdf()
        return u if u.lstrip().startswith("<") else read_text_file(u, "URDF", URDFError)

    def system_source(self) -> str | dict | None:
        """The system YAML (path, text or mapping), the bundled one by default."""
        if self.system is not None:
            if isinstance(self.system, str) and "\n" not in self.system and ":" not in self.system:
                return self._file(self.system)
            return self.system
        return bundled_models()[self.source][1] if self.kind == "bundled" else None

    def default_name(self) -> str | None:
        if self.name:
            return self.name
        if self.kind == "bundled":
            return self.source
        if self.kind == "example":
            return self.source.lstrip()[4:]
        return None

    def describe(self) -> str:
        kind = self.kind
        where = {
            "xml": "robot_description XML",
            "example": f"example-robot-data {self.source[4:]}",
            "bundled": f"bundled {self.source}",
            "path": str(self.source),
        }[kind]
        sys_src = self.system_source()
        if isinstance(sys_src, str) and "\n" not in sys_src:
            where += f" + {sys_src}"
        return where + (f", masses ×{self.mass_scale:g}" if self.mass_scale != 1.0 else "")

    def load(self) -> RobotModel:
        """The RobotModel (URDFError / SystemConfigError naming what is wrong)."""
        return load_urdf(
            self.urdf(),
            self.system_source(),
            name=self.default_name(),
            floating_base=self.floating_base,
            mass_scale=self.mass_scale,
            inertia_policy=self.inertia_policy,
        )


def load_robot(model: str | os.PathLike | dict | ModelSpec, system: str | dict | None = None, **kwargs) -> RobotModel:
    """A RobotModel from anything ``ModelSpec.parse`` takes (bundled name, ``erd:<name>``, URDF path or XML,
    task-file mapping, ModelSpec), with an optional system YAML (path, text or mapping); ``kwargs`` set ModelSpec
    fields (``mass_scale``, ``floating_base``, ``name``, ``inertia_policy``). The one ``load_robot`` of the
    package (``vi_control.load_robot`` is this function); ``load_urdf`` is the step after resolution."""
    overrides = dict(kwargs, **({"system": system} if system is not None else {}))
    return ModelSpec.parse(model, **overrides).load()
