"""Native builds (``codegen.DEFAULT_CFLAGS``: ``-march=native -ffp-contract=off``): keyed in the cache by the CPU they
target, built portable where the compiler cannot say what "native" is here or cannot build for it, and computing the
same numbers as a portable build, bit for bit (no fused multiply-add: ``-ffp-contract=off``)."""

import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from vi_control.mechanics import cache, codegen

pytestmark = pytest.mark.skipif(codegen.compiler() is None, reason="no C compiler")

SRC = "double vi_native_answer(void) { return 42.0; }\n"
NATIVE = ["-O1", "-march=native", "-ffp-contract=off"]

BUILD = textwrap.dedent("""
    import ctypes, json, sys, warnings
    warnings.simplefilter("always")
    from vi_control.mechanics import codegen
    with warnings.catch_warnings(record=True) as caught:
        so = codegen.compile_shared_library(sys.argv[1], "t", sys.argv[2].split(), "test library")
        fn = ctypes.CDLL(str(so)).vi_native_answer
        fn.restype = ctypes.c_double
        print(json.dumps({"so": str(so), "answer": fn(), "warnings": [str(w.message) for w in caught]}))
""")


def _wrapper(tmp_path, body: str) -> str:
    """A C compiler that is gcc (or cc) except where ``body`` (sh) exits first."""
    real = codegen.compiler()
    cc = tmp_path / "cc-wrapper"
    cc.write_text(f'#!/bin/sh\n{body}\nexec "{real}" "$@"\n')
    cc.chmod(cc.stat().st_mode | stat.S_IXUSR)
    return str(cc)


def _build(tmp_path, flags: list[str], cc: str | None = None) -> dict:
    env = {**os.environ, "VI_CONTROL_CACHE": str(tmp_path / "cache")}
    if cc is not None:
        env["CC"] = cc
    out = subprocess.run(
        [sys.executable, "-c", BUILD, SRC, " ".join(flags)], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.splitlines()[-1])


def _entry(flags: list[str], target: str = "") -> str:
    return cache.entry_name("t", " ".join(flags) + (f"\n{target}" if target else "") + "\n" + SRC)


def test_a_native_build_is_keyed_by_the_cpu_it_targets(tmp_path, monkeypatch):
    target = codegen.native_target(codegen.compiler(), tuple(NATIVE))
    if target is None:
        pytest.skip("this compiler does not say what -march=native resolves to")
    assert "native" not in target and any(t.startswith(("-march=", "-mcpu=", "-target-cpu=")) for t in target.split())
    monkeypatch.setenv("VI_CONTROL_CACHE", str(tmp_path / "cache"))
    so = codegen.compile_shared_library(SRC, "t", NATIVE, "test library")
    assert so.name.startswith(_entry(NATIVE, target)) and so.name != _entry(NATIVE)
    # another CPU sharing the cache (a cluster's home directory): its "native" resolves otherwise, so it builds its own
    built = codegen.build_stats["compiled"]
    monkeypatch.setattr(codegen, "native_target", lambda cc, flags: "-march=some-other-cpu -mno-avx2")
    other = codegen.compile_shared_library(SRC, "t", NATIVE, "test library")
    assert other != so and codegen.build_stats["compiled"] == built + 1
    assert other.name.startswith(_entry(NATIVE, "-march=some-other-cpu -mno-avx2"))


def test_a_compiler_that_does_not_say_what_native_is_builds_portable(tmp_path):
    cc = _wrapper(tmp_path, 'case " $* " in *" -E "*) exit 0 ;; esac')  # (its -v says nothing)
    got = _build(tmp_path, NATIVE, cc)
    assert got["answer"] == 42.0 and not got["warnings"]
    assert os.path.basename(got["so"]).startswith(_entry(["-O1", "-ffp-contract=off"]))


def test_a_compiler_that_cannot_build_native_code_builds_portable_and_says_so(tmp_path):
    cc = _wrapper(tmp_path, 'case " $* " in *" -march=native "*" -shared "*) echo "no such CPU" >&2; exit 1 ;; esac')
    got = _build(tmp_path, NATIVE, cc)
    assert got["answer"] == 42.0
    assert os.path.basename(got["so"]).startswith(_entry(["-O1", "-ffp-contract=off"]))
    assert len(got["warnings"]) == 1 and "for this CPU (-march=native) failed" in got["warnings"][0]
    assert "no such CPU" in got["warnings"][0] and "portable" in got["warnings"][0]
    # a second library in the same process: straight to portable, no second failed native build, no second warning
    log = tmp_path / "builds.txt"
    cc = _wrapper(
        tmp_path,
        f'case " $* " in *" -shared "*) echo "$*" >> "{log}" ;; esac\n'
        'case " $* " in *" -march=native "*" -shared "*) echo "no such CPU" >&2; exit 1 ;; esac',
    )
    two = "import sys, warnings; warnings.simplefilter('always'); from vi_control.mechanics import codegen as c\n"
    two += "with warnings.catch_warnings(record=True) as w:\n"
    two += "    for src in (sys.argv[1], sys.argv[1] + '/* another */'):\n"
    two += "        assert c.compile_shared_library(src, 't', sys.argv[2].split(), 'test library') is not None\n"
    two += "print(len(w))"
    env = {**os.environ, "VI_CONTROL_CACHE": str(tmp_path / "cache3"), "CC": cc}
    out = subprocess.run(
        [sys.executable, "-c", two, SRC, " ".join(NATIVE)], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0 and out.stdout.split() == ["1"], out.stderr[-1000:]
    builds = log.read_text().splitlines()
    assert len(builds) == 3 and sum("-march=native" in b for b in builds) == 1, builds
    # a flag of the user's that fails is no native build: it fails as it is, warned, not retried
    code = "import sys; from vi_control.mechanics import codegen as c; "
    code += "print(c.compile_shared_library(sys.argv[1], 't', sys.argv[2].split(), 'test library'))"
    env = {**os.environ, "VI_CONTROL_CACHE": str(tmp_path / "cache2")}
    out = subprocess.run(
        [sys.executable, "-W", "always", "-c", code, SRC, "-O1 -mno-such-option-xyz"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0 and out.stdout.split() == ["None"], out.stderr[-1000:]
    assert "no-such-option-xyz" in out.stderr and "portable" not in out.stderr


PLAN = textwrap.dedent("""
    import hashlib
    import numpy as np
    from vi_control.planning import load_task, make_system, plan_task
    task = load_task("task_pendulum_swingup")
    vi = make_system(task)
    plan, res = plan_task(vi, task)
    xs = [plan.X[0]]
    for u in plan.U:
        xs.append(vi.step(xs[-1], u))
    h = hashlib.sha256()
    for a in (plan.X, plan.U, plan.K, plan.K_final, np.array(xs)):
        h.update(np.ascontiguousarray(a).tobytes())
    print(res.iterations, h.hexdigest())
""")


def test_native_and_portable_builds_plan_and_step_the_same_numbers_bit_for_bit():
    """The pendulum swing-up plan (X, U, TV-LQR gains, hold gain) and its simulation by a build for this CPU and by a
    portable one (each its own cache entries): the same bytes."""
    runs = {}
    for name, flags in (("native", None), ("portable", "-O1")):
        env = {k: v for k, v in os.environ.items() if k != "VI_CONTROL_CFLAGS"}
        if flags:
            env["VI_CONTROL_CFLAGS"] = flags
        out = subprocess.run([sys.executable, "-c", PLAN], env=env, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
        runs[name] = out.stdout.split()
    assert runs["native"] == runs["portable"] and int(runs["native"][0]) > 0


def test_the_default_flags_resolve_here_once():
    """``native_target`` asks the compiler once per (compiler, flags): no extra process per build after the first."""
    cc = codegen.compiler()
    codegen.native_target(cc, tuple(NATIVE))
    hits = codegen.native_target.cache_info().hits
    codegen.native_target(cc, tuple(NATIVE))
    assert codegen.native_target.cache_info().hits == hits + 1


CLANG_V = (  # (the cc1 line of `clang-14 -march=native -E -v -` on a Rocket Lake machine, shortened)
    ' "/usr/lib/llvm-14/bin/clang" -cc1 -triple x86_64-pc-linux-gnu -E -disable-free -main-file-name - '
    "-mrelocation-model pic -pic-level 2 -mframe-pointer=none -ffp-contract=off -target-cpu rocketlake "
    "-target-feature -avx512pf -target-feature +avx2 -target-feature +fma -debugger-tuning=gdb -o - -x c -\n"
    "clang -cc1 version 14.0.6 based upon LLVM 14.0.6 default target x86_64-pc-linux-gnu\n"
)


def test_clangs_answer_is_read_as_its_target_cpu_and_features(tmp_path):
    """clang names what -march=native means as -target-cpu and -target-feature pairs in its cc1 line: they become the
    key (a compiler that prints this line for -E -v, as clang 14 does)."""
    (tmp_path / "v.txt").write_text(CLANG_V)
    cc = _wrapper(tmp_path, f'case " $* " in *" -E "*) cat "{tmp_path / "v.txt"}" >&2; exit 0 ;; esac')
    target = codegen.native_target(cc, tuple(NATIVE))
    assert target is not None and "-target-cpu=rocketlake" in target.split()
    assert {"-target-feature=-avx512pf", "-target-feature=+avx2", "-target-feature=+fma"} <= set(target.split())
    assert "native" not in target and "-ffp-contract=off" not in target
