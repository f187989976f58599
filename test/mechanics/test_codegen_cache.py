"""The compile cache cannot run foreign code: each attack planted, each refused.

The victim runs in a subprocess wherever loading a library could run its constructor or crash the
interpreter (SIGBUS on a truncated library). The planted library's constructor writes a marker file: the
marker must never appear, and the victim must still compute with the library it built itself.
"""

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from vi_control.mechanics import cache, codegen

pytestmark = pytest.mark.skipif(codegen.compiler() is None, reason="no C compiler")

SRC = "double vi_cache_answer(void) { return 42.0; }\n"
FLAGS = ["-O1"]
NAME = cache.entry_name("t", " ".join(FLAGS) + "\n" + SRC)

VICTIM = textwrap.dedent("""
    import ctypes, json, os, sys, warnings
    warnings.simplefilter("always")
    from vi_control.mechanics import codegen
    src, results = sys.argv[1], {}
    for d in sys.argv[2:]:  # one scenario per cache directory: one interpreter start for all of them
        os.environ["VI_CONTROL_CACHE"] = d
        before = codegen.build_stats["compiled"]
        with warnings.catch_warnings(record=True) as caught:
            so = codegen.compile_shared_library(src, "t", ["-O1"], "test library")
            fn = ctypes.CDLL(str(so)).vi_cache_answer
            fn.restype = ctypes.c_double
            answer = fn()
        results[d] = {"answer": answer, "so": str(so), "compiled": codegen.build_stats["compiled"] - before,
                      "warnings": [str(w.message) for w in caught]}
    print(json.dumps(results))
""")


def _victim(*cache_dirs: Path, tmpdir: Path | None = None) -> dict:
    """One victim process over these cache directories; ``tmpdir`` its TMPDIR (where the fallback cache goes)."""
    env = dict(os.environ)
    env.pop("VI_CONTROL_NO_COMPILE", None)
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    out = subprocess.run(
        [sys.executable, "-c", VICTIM, SRC, *map(str, cache_dirs)], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, (out.returncode, out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def _plant(d: Path, lib: Path, record: bool = True) -> Path:
    """The evil library under the entry name the victim will look up, with a record of its true hash."""
    so = d / f"{NAME}.so"
    so.write_bytes(lib.read_bytes())
    if record:
        (d / f"{NAME}.sha256").write_text(cache._record(lib.read_bytes()))
    return so


@pytest.fixture(scope="module")
def attacks(tmp_path_factory) -> dict:
    """Every attack planted in a cache directory of its own, one victim process run over all of them.

    Returns scenario -> (cache directory, marker path, the victim's result). Each scenario's evil library
    writes its own marker from its constructor.
    """
    root = tmp_path_factory.mktemp("attacks")
    root.chmod(0o700)

    def evil(tag: str) -> tuple[Path, Path]:
        marker, src, lib = root / f"PWNED_{tag}", root / f"evil_{tag}.c", root / f"evil_{tag}.so"
        src.write_text(
            f"#include <stdio.h>\n__attribute__((constructor)) static void pwn(void) {{ FILE *f = "
            f'fopen("{marker}", "w"); if (f) {{ fputs("pwned", f); fclose(f); }} }}\n'
            "double vi_cache_answer(void) { return 666.0; }\n"
        )
        subprocess.run([codegen.compiler(), "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
        return lib, marker

    def private(tag: str) -> Path:
        d = root / tag
        d.mkdir(mode=0o700)
        return d

    scenarios: dict[str, tuple[Path, Path]] = {}
    for tag in (
        "no_record",
        "wrong_record",
        "corrupt",
        "symlink",
        "dir_777",
        "dir_775",
        "dir_1777",
        "dir_link",
        "owner_so",
        "owner_sha256",
        "owner_dir",
    ):
        lib, marker = evil(tag)
        d = private(tag)
        if tag == "no_record":
            _plant(d, lib, record=False)
        elif tag == "wrong_record":
            _plant(d, lib)
            (d / f"{NAME}.sha256").write_text(cache._record(b"something else"))
        elif tag == "corrupt":  # same size, one byte changed after the record was written
            so = _plant(d, lib)
            data = bytearray(so.read_bytes())
            data[len(data) // 2] ^= 0xFF
            so.write_bytes(bytes(data))
        elif tag == "symlink":  # the record even matches the link's target
            (d / f"{NAME}.so").symlink_to(lib)
            (d / f"{NAME}.sha256").write_text(cache._record(lib.read_bytes()))
        elif tag.startswith("dir_") and tag != "dir_link":  # a consistent entry: only the directory gives it away
            _plant(d, lib)
            os.chmod(d, int(tag[4:], 8))
        elif tag == "dir_link":
            _plant(d, lib)
            d = root / "link_to_dir_link"
            d.symlink_to(root / tag)
        elif os.geteuid() == 0:  # owner_*: even with a matching record, a file of another user is not ours
            _plant(d, lib)
            os.chown(d if tag == "owner_dir" else d / f"{NAME}.{tag[6:]}", 65534, 65534)
        else:
            continue
        scenarios[tag] = (d, marker)
    listing = {tag: sorted(p.name for p in d.iterdir()) for tag, (d, _) in scenarios.items()}
    clean = root / "fresh" / "cache"
    tmpdir = root / "tmp"  # the victim's TMPDIR: the fallback cache of the untrusted directories goes there
    tmpdir.mkdir(mode=0o700)
    results = _victim(clean, clean, *(d for d, _ in scenarios.values()), tmpdir=tmpdir)
    return {
        "clean": (clean, results),
        "listing": listing,
        "tmpdir": tmpdir,
        **{tag: (d, marker, results[str(d)]) for tag, (d, marker) in scenarios.items()},
    }


def _private(tmp_path: Path) -> Path:
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    return d


def _check_clean(attacks: dict, tag: str, refusal: str, rebuilt: bool = True) -> dict:
    if tag not in attacks:
        pytest.skip("planting a file owned by another user needs root")
    d, marker, result = attacks[tag]
    assert not marker.exists(), "the planted library's constructor ran"
    assert result["answer"] == 42.0 and result["compiled"] == (1 if rebuilt else result["compiled"])  # ours ran
    assert any(refusal in w for w in result["warnings"]), result["warnings"]
    return result


def test_a_clean_cache_is_private_and_reused(attacks):
    d, results = attacks["clean"]
    first = results[str(d)]  # the same directory twice in one process: the second call is a hit
    assert first["answer"] == 42.0 and first["warnings"] == [] and first["so"] == str(d / f"{NAME}.so")
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    for f in d.iterdir():
        st = f.lstat()
        assert stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o600
    assert sorted(f.name for f in d.iterdir()) == [f"{NAME}.sha256", f"{NAME}.so"]  # no temporary left over
    assert cache._record((d / f"{NAME}.so").read_bytes()) == (d / f"{NAME}.sha256").read_text()


@pytest.mark.parametrize(
    "tag, refusal",
    [
        ("no_record", f"{NAME}.sha256: No such file"),
        ("wrong_record", "does not match the hash recorded"),
        ("corrupt", "does not match the hash recorded"),
        ("owner_so", "owned by uid 65534"),
        ("owner_sha256", "owned by uid 65534"),
    ],
)
def test_planted_or_damaged_entry_is_refused_and_rebuilt(attacks, tag, refusal):
    result = _check_clean(attacks, tag, refusal)
    d = attacks[tag][0]
    assert result["so"] == str(d / f"{NAME}.so")  # rebuilt in place, replacing the planted file
    assert cache._record((d / f"{NAME}.so").read_bytes()) == (d / f"{NAME}.sha256").read_text()


def test_symlinked_entry_is_refused_and_its_target_untouched(attacks):
    _check_clean(attacks, "symlink", "Too many levels of symbolic links")
    d = attacks["symlink"][0]
    assert not (d / f"{NAME}.so").is_symlink()
    assert (d.parent / "evil_symlink.so").read_bytes()[:4] == b"\x7fELF"  # the link's target was not written


@pytest.mark.parametrize(
    "tag, refusal",
    [
        ("dir_777", "is writable by group or others"),
        ("dir_775", "is writable by group or others"),
        ("dir_1777", "is writable by group or others"),
        ("dir_link", "is a symbolic link"),
        ("owner_dir", "is owned by uid 65534"),
    ],
)
def test_untrusted_cache_directory_is_not_used(attacks, tag, refusal):
    """Anyone may have planted anything there, records included: the victim warns and builds elsewhere,
    writing nothing into it."""
    result = _check_clean(attacks, tag, refusal, rebuilt=False)  # (built once into the fallback, then found there)
    d = attacks[tag][0]
    assert not result["so"].startswith(str(d)) and sorted(p.name for p in d.iterdir()) == attacks["listing"][tag]
    fallback = attacks["tmpdir"] / f"vi_control_cache_{os.geteuid()}"
    assert result["so"] == str(fallback / f"{NAME}.so") and f"fallback cache {fallback}" in " ".join(result["warnings"])


def test_the_fallback_cache_is_one_directory_that_later_processes_reuse(tmp_path):
    """An unusable cache directory sends every process to this user's one fallback directory (not a new temporary
    directory per process, left behind by a killed node and rebuilt by each): the second process finds the entry
    the first built there, and the temporary directory holds that one directory afterwards."""
    untrusted = tmp_path / "shared"
    untrusted.mkdir()
    untrusted.chmod(0o777)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir(mode=0o700)
    fallback = tmpdir / f"vi_control_cache_{os.geteuid()}"
    first = _victim(untrusted, tmpdir=tmpdir)[str(untrusted)]
    second = _victim(untrusted, tmpdir=tmpdir)[str(untrusted)]
    assert first["answer"] == second["answer"] == 42.0
    assert (first["compiled"], second["compiled"]) == (1, 0)  # built once, then reused by the next process
    assert first["so"] == second["so"] == str(fallback / f"{NAME}.so")
    assert [p.name for p in tmpdir.iterdir()] == [fallback.name]  # nothing else accumulated
    assert stat.S_IMODE(fallback.stat().st_mode) == 0o700 and list(untrusted.iterdir()) == []


def test_a_squatted_fallback_leaves_only_a_temporary_directory_removed_at_exit(tmp_path):
    """Someone planted the fallback's name as a symlink: not followed; this process builds in a fresh private
    directory, which is gone when it exits."""
    untrusted = tmp_path / "shared"
    untrusted.mkdir()
    untrusted.chmod(0o777)
    tmpdir, elsewhere = tmp_path / "tmp", tmp_path / "elsewhere"
    tmpdir.mkdir(mode=0o700)
    elsewhere.mkdir()
    (tmpdir / f"vi_control_cache_{os.geteuid()}").symlink_to(elsewhere)
    result = _victim(untrusted, tmpdir=tmpdir)[str(untrusted)]
    assert result["answer"] == 42.0 and result["compiled"] == 1
    assert Path(result["so"]).parent.parent == tmpdir and "removed at exit" in " ".join(result["warnings"])
    assert "is a symbolic link" in " ".join(result["warnings"])
    assert [p.name for p in tmpdir.iterdir()] == [f"vi_control_cache_{os.geteuid()}"]  # the temporary one: gone
    assert list(elsewhere.iterdir()) == []


def test_predictable_temporary_name_cannot_redirect_the_write(tmp_path, monkeypatch):
    """The old writer copied to ``<entry>.<pid>.part`` and renamed: a symlink planted there made it overwrite
    the symlink's target. New entries go through O_EXCL files with random names."""
    d = _private(tmp_path)
    monkeypatch.setenv("VI_CONTROL_CACHE", str(d))
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    for pattern in (f"{NAME}.{os.getpid()}.part", f"{NAME}.so.{os.getpid()}.part", f".{NAME}.so.part"):
        (d / pattern).symlink_to(victim)
    so = codegen.compile_shared_library(SRC, "t", FLAGS, "test library")
    assert victim.read_text() == "precious"
    assert so == d / f"{NAME}.so" and so.is_file() and not so.is_symlink()
    assert cache.lookup(NAME) == so


def test_truncated_entry_is_rebuilt_not_loaded(tmp_path, monkeypatch):
    """The real DRNEA library (Lee2016), truncated: it used to crash every later run with SIGBUS inside dlopen.
    Now the record exposes it, it is rebuilt, and the rebuilt library steps exactly as the numpy reference."""
    from vi_control.integrators.drnea_c import DRNEA_C, OPT_LEVEL

    d = tmp_path / "cache"
    monkeypatch.setenv("VI_CONTROL_CACHE", str(d))
    so = codegen.compile_shared_library(DRNEA_C, "drnea", codegen.cflags(OPT_LEVEL), "the DRNEA step")
    so.write_bytes(so.read_bytes()[: so.stat().st_size // 2])
    test_dir = str(Path(__file__).resolve().parents[1] / "support")  # the numpy reference: the oracle of the C step
    code = textwrap.dedent(f"""
        import json, warnings
        import numpy as np
        warnings.simplefilter("always")
        with warnings.catch_warnings(record=True) as caught:
            import sys
            sys.path.insert(0, {test_dir!r})
            from linear_time_oracle import NumpyLinearTimeVI
            from vi_control.integrators.linear_time import LinearTimeVI
            from vi_control.model import load_robot
            from vi_control.model.generate import planar_chain_urdf
            robot = load_robot(planar_chain_urdf(4))
            c, py = LinearTimeVI(robot, 0.01, backend="c"), NumpyLinearTimeVI(robot, 0.01)
            x = c.state_from_velocity(np.array([0.3, -0.2, 0.5, 0.1]), np.array([1.0, 0.0, -1.0, 0.5]))
            err = float(np.abs(c.step(x) - py.step(x)).max())
        print(json.dumps({{"err": err, "warnings": [str(w.message) for w in caught]}}))
    """)
    env = dict(os.environ, VI_CONTROL_CACHE=str(d))
    env.pop("VI_CONTROL_NO_COMPILE", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, (out.returncode, out.stderr[-3000:])
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["err"] < 1e-12
    assert any("does not match the hash recorded" in w for w in result["warnings"]), result["warnings"]
    assert cache._record(so.read_bytes()) == so.with_suffix(".sha256").read_text()


def test_records_hash_the_library_bytes(tmp_path, monkeypatch):
    """The record is the SHA-256 of the library and its size, as an independent hashlib call computes them."""
    import hashlib

    monkeypatch.setenv("VI_CONTROL_CACHE", str(_private(tmp_path)))
    so = codegen.compile_shared_library(SRC, "t", FLAGS, "test library")
    digest, size = so.with_suffix(".sha256").read_text().split()
    assert digest == hashlib.sha256(so.read_bytes()).hexdigest() and int(size) == so.stat().st_size
    assert np.isfinite(float(size))


@pytest.mark.parametrize("content", ["passwd", None])
def test_a_directory_vi_control_did_not_create_is_never_changed_or_written(tmp_path, content):
    """VI_CONTROL_CACHE at a directory someone else made — with their files (as /etc), or empty and readable by
    others (as /mnt): refused with the reason, its mode and contents untouched; the fallback cache is used. At the
    boundary, a directory that holds only our entries is ours (test_directory_problems: tightened to 0700)."""
    d = tmp_path / "etc"
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    if content:
        (d / content).write_text("root:x:0:0")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir(mode=0o700)
    result = _victim(d, tmpdir=tmpdir)[str(d)]
    assert result["answer"] == 42.0
    assert stat.S_IMODE(d.stat().st_mode) == 0o755
    assert sorted(p.name for p in d.iterdir()) == ([content] if content else [])
    why = "which is no vi_control cache entry" if content else "vi_control did not create it"
    assert any(why in w for w in result["warnings"]), result["warnings"]


def test_without_a_c_compiler_the_first_use_says_what_to_install(tmp_path):
    """No compiler on PATH: the midpoint VI (its Newton driver, over generated C or the VM), the LQR recursions and
    LinearTimeVI are our C, one implementation each, so each refuses at first use with the fix — also under
    VI_CONTROL_NO_COMPILE=1 (which keeps a model's generated functions in the VM, not our own C) — and what needs
    no C (loading a model, its VM functions) works."""
    code = textwrap.dedent("""
        import numpy as np, vi_control as vc
        from vi_control.mechanics.codegen import CompilerRequiredError
        robot = vc.load_robot("pendulum")
        out = []
        for build in (
            lambda: vc.MidpointVI(robot, 0.1),
            lambda: vc.MidpointVI(robot, 0.1, compile=False),
            lambda: vc.dlqr(np.array([[1.0, 0.1], [0.0, 1.0]]), np.array([[0.0], [0.1]]), 1.0, 1.0),
            lambda: vc.LinearTimeVI(robot, 0.1),
        ):
            try:
                build()
                out.append("built")
            except CompilerRequiredError as e:
                out.append("refused" if "install gcc" in str(e) else repr(e))
        print(*out, robot.nq)
    """)
    for no_compile in ("0", "1"):
        env = dict(
            os.environ,
            PATH=str(tmp_path),
            CC="no-such-cc",
            VI_CONTROL_NO_COMPILE=no_compile,
            VI_CONTROL_CACHE=str(tmp_path / "cache"),
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.split() == ["refused"] * 4 + ["1"], out.stdout


def test_the_users_flags_reach_every_build_and_a_chosen_level_stays(monkeypatch):
    """VI_CONTROL_CFLAGS sets the flags of every build; the builds that chose their optimisation level (-O0 where
    -O1 would take minutes of gcc, -O2 for the DRNEA step) keep it and take the user's other flags
    (``-march=native`` and the like: before, those builds ignored the variable)."""
    monkeypatch.delenv("VI_CONTROL_CFLAGS", raising=False)
    assert codegen.cflags() == codegen.DEFAULT_CFLAGS.split() == ["-O1", "-march=native", "-ffp-contract=off"]
    assert codegen.cflags("-O2") == ["-O2", "-march=native", "-ffp-contract=off"]
    monkeypatch.setenv("VI_CONTROL_CFLAGS", "-O3 -ffp-contract=off -Os")
    assert codegen.cflags() == ["-O3", "-ffp-contract=off", "-Os"]
    assert codegen.cflags("-O0") == ["-O0", "-ffp-contract=off"]


def test_the_drnea_step_is_built_with_the_users_flags(tmp_path):
    """A flag gcc refuses, set in VI_CONTROL_CFLAGS, fails the DRNEA step's build too (it compiled with its own
    flags alone before): the variable reaches it. The failed build is no crash: the library is None, with gcc's
    complaint in the warning."""
    code = textwrap.dedent("""
        import warnings
        warnings.simplefilter("always")
        with warnings.catch_warnings(record=True) as caught:
            from vi_control.integrators import drnea_c
            lib = drnea_c.load_library()
        print(lib is None, any("no-such-option-xyz" in str(w.message) for w in caught))
    """)
    env = {**os.environ, "VI_CONTROL_CACHE": str(tmp_path / "cache"), "VI_CONTROL_CFLAGS": "-O1 -mno-such-option-xyz"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.stdout.split() == ["True", "True"], (out.stdout, out.stderr[-2000:])
