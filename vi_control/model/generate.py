"""Generated URDFs: the planar N-link chain (any N) used by tests, bundled models and the scaling benchmarks."""

from __future__ import annotations

from collections.abc import Sequence

from .visuals import add_visuals


def _inertial(mass: float, length: float, radius: float = 0.02) -> str:
    # Slender rod along -z, centre of mass at its middle.
    ixx = mass * (3 * radius**2 + length**2) / 12.0
    izz = mass * radius**2 / 2.0
    return (
        f'<inertial><origin xyz="0 0 {-length / 2}" rpy="0 0 0"/><mass value="{mass}"/>'
        f'<inertia ixx="{ixx}" ixy="0" ixz="0" iyy="{ixx}" iyz="0" izz="{izz}"/></inertial>'
    )


def _names(given: Sequence[str] | None, default: str, n: int, what: str) -> list[str]:
    if given is None:
        return [f"{default}{i}" for i in range(1, n + 1)]
    if len(given) != n or len(set(given)) != n:
        raise ValueError(f"{what}: expected {n} distinct names, got {list(given)}")
    return list(given)


def planar_chain_urdf(
    n: int,
    length: float = 1.0,
    mass: float = 1.0,
    joint_type: str = "continuous",
    damping: float = 0.0,
    effort: float = 50.0,
    name: str | None = None,
    joint_names: Sequence[str] | None = None,
    link_names: Sequence[str] | None = None,
    tip: str | None = None,
    visuals: bool = True,
) -> str:
    """A planar chain of ``n`` rods (length, mass each) hinged about y, hanging along −z at q = 0.

    ``tip`` adds a massless link of that name welded at the end of the last rod (a frame for planners);
    ``visuals`` draws each rod (``add_visuals``: not part of the dynamics nor of the model hash).
    """
    if n < 1:
        raise ValueError(f"a chain needs at least one link, got n={n}")
    if joint_type not in ("continuous", "revolute"):
        raise ValueError("joint_type must be 'continuous' or 'revolute'")
    joints = _names(joint_names, "joint", n, "joint_names")
    links = _names(link_names, "link", n, "link_names")
    parts = [f'<?xml version="1.0"?>\n<robot name="{name or f"chain{n}"}">', '<link name="base"/>']
    limit = (
        f'<limit effort="{effort}" velocity="100"/>'
        if joint_type == "continuous"
        else f'<limit lower="-3.14159" upper="3.14159" effort="{effort}" velocity="100"/>'
    )
    for i in range(n):
        parent = "base" if i == 0 else links[i - 1]
        z = 0.0 if i == 0 else -length
        parts.append(f'<link name="{links[i]}">{_inertial(mass, length)}</link>')
        parts.append(
            f'<joint name="{joints[i]}" type="{joint_type}"><parent link="{parent}"/><child link="{links[i]}"/>'
            f'<origin xyz="0 0 {z}" rpy="0 0 0"/><axis xyz="0 1 0"/>{limit}'
            f'<dynamics damping="{damping}" friction="0"/></joint>'
        )
    if tip:
        parts.append(f'<link name="{tip}"/>')
        parts.append(
            f'<joint name="{tip}_joint" type="fixed"><parent link="{links[-1]}"/><child link="{tip}"/>'
            f'<origin xyz="0 0 {-length}" rpy="0 0 0"/></joint>'
        )
    parts.append("</robot>")
    return add_visuals("\n".join(parts)) if visuals else "\n".join(parts)
