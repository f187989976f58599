"""Compiled evaluation of CasADi functions: generated C, built once per model, cached on disk.

Calling a CasADi Function with numpy arguments costs ~45 µs (``Function.buffer()`` ~1 µs; measured on the
2-core development machine when the backend was chosen); the per-step work here is a few µs, so hot functions
are generated as C, compiled with the system C compiler into a shared library keyed by the hash of the
generated source and the flags, and called through ctypes with preallocated buffers (~1 µs). A group may
carry a driver, C of our own (the whole-step Newton driver of mechanics.discrete, the RDP's rollout) compiled into
the same library. Functions too large to build quickly, or every function under ``VI_CONTROL_NO_COMPILE=1``, are
evaluated by the CasADi virtual machine (a step too large for -O1 is first tried at -O0, see _O0_LIMIT_OPS); a
driver over them is the same C source built once for any model, calling them back through ctypes
(``callback_prelude``): its algorithm exists once, in C. vi_control therefore needs a C compiler;
``require_compiler`` says so, with the fix, where one is first needed.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
import tempfile
import threading
import warnings
from pathlib import Path

import casadi as ca
import numpy as np

from . import cache
from .graph_lock import OwnsGraphs, builds_graph

# Above these sizes gcc time grows fast (DESIGN.md: 150 s at 32 DOF for a dense Jacobian at -O2).
_COMPILE_LIMIT_OPS = 400_000

# A step whose residual is too large for an optimising build (100-link chain: 465k instructions, 15 MB of
# C) is still compiled, at -O0, when its whole library stays below this: gcc -O0 is about linear in the
# source (37 s CPU, 2.2 GB at 100 links) and the code runs ~7x faster than the CasADi VM (17 vs 115 ms per
# step), where -O1 would take many minutes. Measured in docs/benchmarks/step.md.
_O0_LIMIT_OPS = 1_000_000

# -O1: the same step speed as -O2 on generated straight-line code (panda: 13.5 vs 13.9 µs CPU per step)
# for 2/3 of the gcc time; measured in docs/benchmarks/step.md. -march=native: code for this machine's CPU (the panda
# plan ~16 % faster, docs/benchmarks/planner.md), with -ffp-contract=off so that no multiply-add is fused: the same
# numbers as a portable build, bit for bit. Such a library runs only on CPUs like this one, so what "native" resolves
# to here is part of its cache key (``native_target``), and where the compiler cannot say or the build fails, the
# library is built portable (without the native flags). VI_CONTROL_CFLAGS overrides (e.g. "-O1" for portable
# builds only). The flags are part of the cache key.
DEFAULT_CFLAGS = "-O1 -march=native -ffp-contract=off"
NATIVE_FLAGS = ("-march=native", "-mtune=native", "-mcpu=native")


def cflags(level: str | None = None) -> list[str]:
    """The compiler flags of a build: VI_CONTROL_CFLAGS (default DEFAULT_CFLAGS) — or, for a build that chose its
    optimisation ``level`` (``-O0`` where -O1 would take minutes of gcc, ``-O2`` for the DRNEA step), the user's
    other flags (``-march=native``, ``-ffp-contract=off``, …) with that level in place of any ``-O`` of theirs."""
    flags = os.environ.get("VI_CONTROL_CFLAGS", DEFAULT_CFLAGS).split()
    if level is None:
        return flags
    return [level] + [f for f in flags if not f.startswith("-O")]


# Shared libraries compiled / found in the cache by this process (tests check reuse with these, not timing).
build_stats = {"compiled": 0, "cache_hits": 0}


def cache_dir() -> Path:
    """The compile cache (mechanics.cache): a private directory, or a private temporary one with a warning."""
    return cache.private_cache_dir()


def compiler() -> str | None:
    """The C compiler ($CC, else gcc, else cc on PATH), or None."""
    return shutil.which(os.environ.get("CC", "gcc")) or shutil.which("cc")


class CompilerRequiredError(RuntimeError):
    """vi_control's own C (an integrator's Newton driver, the linear-time step, the LQR recursions) cannot be built:
    no C compiler was found."""


def require_compiler(what: str) -> str:
    """The C compiler, or CompilerRequiredError naming ``what`` needs it and the fix."""
    cc = compiler()
    if cc is None:
        raise CompilerRequiredError(
            f"vi_control needs a C compiler: {what} is our C, compiled once into the cache on first use, and none "
            f"was found (CC={os.environ.get('CC', 'gcc')!r}, then 'cc', on PATH). Install gcc (Debian/Ubuntu: "
            "apt-get install gcc) or set CC to a C compiler."
        )
    return cc


# A driver's view of a generated function: CasADi's calling convention (casadi_int = long long, as _build asks).
_CASADI_FN = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.POINTER(ctypes.c_void_p),
    ctypes.POINTER(ctypes.c_void_p),
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_int,
)


class _VMFunction(OwnsGraphs):
    """CasADi virtual-machine evaluation with the same call convention as _CFunction; ``address`` is a C function
    pointer with the generated functions' signature that evaluates it here (for a driver, ``callback_prelude``)."""

    n_iw = n_w = 0  # (a callback needs no work buffers of the driver's)

    def __init__(self, f: ca.Function):
        self.f = f
        self.compiled = False
        self._callback = None

    def __call__(self, *args: np.ndarray) -> list[np.ndarray]:
        out = self.f.call([ca.DM(a) for a in args])
        return [np.array(o) for o in out]

    @property
    def address(self) -> int:
        if self._callback is None:
            f = self.f
            n_in = [f.nnz_in(i) for i in range(f.n_in())]
            n_out = [f.nnz_out(i) for i in range(f.n_out())]
            if any(f.nnz_in(i) != f.numel_in(i) for i in range(f.n_in())):
                raise ValueError(f"{f.name()}: a driver's function must take dense arguments")

            def evaluate(arg, res, iw, w, mem) -> int:
                try:
                    args = [
                        ca.DM(np.ctypeslib.as_array(ctypes.cast(arg[i], ctypes.POINTER(ctypes.c_double)), (n,)))
                        if n
                        else ca.DM.zeros(0, 1)
                        for i, n in enumerate(n_in)
                    ]
                    for i, o in enumerate(f.call(args)):
                        if res[i] and n_out[i]:  # (CasADi's convention: a null output is not wanted)
                            out = ctypes.cast(res[i], ctypes.POINTER(ctypes.c_double))
                            np.ctypeslib.as_array(out, (n_out[i],))[:] = o.nonzeros()
                    return 0
                except Exception:  # (an exception cannot cross C: the driver reports the failed evaluation)
                    return 1

            self._callback = _CASADI_FN(evaluate)
        return ctypes.cast(self._callback, ctypes.c_void_p).value


def callback_prelude(names: tuple[str, ...]) -> str:
    """C to put before a driver's source so that its calls of the generated functions ``names`` go through
    pointers, set per thread by ``vi_set_callbacks(void** addresses)`` (in the order of ``names``): the driver built
    once for any model, over functions evaluated elsewhere (``_VMFunction.address``)."""
    lines = ["typedef int (*vi_generated_fn)(const double**, double**, long long*, double*, int);"]
    for n in names:
        lines.append(f"static __thread vi_generated_fn vi_cb_{n};")
        lines.append(f"#define {n}(a, r, iw, w, m) vi_cb_{n}(a, r, iw, w, m)")
    lines.append("int vi_set_callbacks(void** f) {")
    lines += [f"  vi_cb_{n} = (vi_generated_fn)f[{i}];" for i, n in enumerate(names)]
    lines.append("  return 0;\n}")
    return "\n".join(lines) + "\n"


class _CFunction(OwnsGraphs):
    """ctypes call into generated code; returns views of reused output buffers (copy to keep)."""

    def __init__(self, lib: ctypes.CDLL, f: ca.Function):
        name = f.name()
        self.f = f
        self.compiled = True
        self._fn = getattr(lib, name)
        self._fn.restype = ctypes.c_int
        # For our own C that calls the function directly (the planner's whole-horizon kernel, planning.compiled).
        self.address: int = ctypes.cast(self._fn, ctypes.c_void_p).value
        work = getattr(lib, name + "_work")
        sz = [ctypes.c_longlong() for _ in range(4)]
        if work(*[ctypes.byref(s) for s in sz]) != 0:
            raise RuntimeError(f"{name}_work failed")
        n_arg, n_res, n_iw, n_w = (s.value for s in sz)
        self.n_iw, self.n_w = n_iw, n_w
        self._arg = (ctypes.c_void_p * max(n_arg, 1))()
        self._res = (ctypes.c_void_p * max(n_res, 1))()
        self._iw = np.zeros(max(n_iw, 1), dtype=np.int64)
        self._w = np.zeros(max(n_w, 1))
        self._out = [np.zeros((f.size1_out(i), f.size2_out(i)), order="F") for i in range(f.n_out())]
        for i, o in enumerate(self._out):
            self._res[i] = o.ctypes.data
        self._n_in = f.n_in()
        self._sizes = [f.numel_in(i) for i in range(self._n_in)]
        self._keep: list[np.ndarray] = [None] * self._n_in
        # Converted once: ctypes.cast on every call cost ~10 µs, more than the generated code of small models.
        self._iw_p = ctypes.c_void_p(self._iw.ctypes.data)
        self._w_p = ctypes.c_void_p(self._w.ctypes.data)

    def __call__(self, *args: np.ndarray) -> list[np.ndarray]:
        for i, a in enumerate(args):
            if not (type(a) is np.ndarray and a.dtype == np.float64 and a.flags.c_contiguous):
                a = np.ascontiguousarray(a, dtype=float)
            if a.size != self._sizes[i]:
                raise ValueError(f"{self.f.name()}: argument {i} has size {a.size}, expected {self._sizes[i]}")
            self._keep[i] = a
            self._arg[i] = a.ctypes.data
        if self._fn(self._arg, self._res, self._iw_p, self._w_p, 0) != 0:
            raise RuntimeError(f"{self.f.name()}: evaluation failed")
        return self._out


@builds_graph
def _generate(funcs: list[ca.Function], tag: str) -> str:
    """C source of ``funcs`` (generation walks their graphs: under the graph lock; the compiler runs unlocked)."""
    gen = ca.CodeGenerator(f"vi_{tag}.c", {"with_header": False, "casadi_int": "long long int"})
    for f in funcs:
        gen.add(f)
    return gen.dump()


def _build(
    funcs: list[ca.Function], tag: str, extra_source: str = "", flags: list[str] | None = None
) -> ctypes.CDLL | None:
    """Generate C for ``funcs`` (plus our own ``extra_source`` calling them), compile once, load."""
    cc = compiler()
    if cc is None:
        return None
    src = _generate(funcs, tag) + extra_source
    flags = flags or cflags()
    so = compile_shared_library(src, "vi", flags, "generated code (falling back to the CasADi VM)")
    return None if so is None else ctypes.CDLL(str(so))


@functools.cache
def native_target(cc: str, flags: tuple[str, ...]) -> str | None:
    """What the native options among ``flags`` (``NATIVE_FLAGS``) resolve to for the compiler ``cc`` on this machine —
    the target options its driver passes on (gcc: ``-march=rocketlake -mavx2 -mno-xop …``; clang:
    ``-target-cpu=rocketlake -target-feature=+avx2 …``) — or None where its output does not say. Part of the cache
    key of a native build: a library built for one CPU is never loaded on another that shares the cache (a home
    directory on a cluster's file server)."""
    try:
        res = subprocess.run([cc, *flags, "-E", "-v", "-"], input="", capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if res.returncode != 0:
        return None
    for line in res.stderr.splitlines():
        toks = line.replace('"', " ").split()
        if not any(t.endswith("cc1") or t == "-cc1" for t in toks):
            continue
        target = [
            f"{toks[i - 1]}={t}" if i and toks[i - 1] in ("-target-cpu", "-target-feature") else t
            for i, t in enumerate(toks)
            if (t.startswith("-m") and "native" not in t) or (i and toks[i - 1] in ("-target-cpu", "-target-feature"))
        ]
        if any(t.startswith(("-march=", "-mcpu=", "-target-cpu=")) for t in target):
            return " ".join(target)
    return None


def portable(flags: list[str]) -> list[str]:
    """``flags`` without the native options (``NATIVE_FLAGS``): a build that runs on any CPU of the architecture."""
    return [f for f in flags if f not in NATIVE_FLAGS]


_native_fallbacks: set[str] = set()  # the compilers whose native build failed: warned once, then built portable only


def compile_shared_library(src: str, prefix: str, flags: list[str], what: str) -> Path | None:
    """``<cache>/<prefix>_<hash>.so`` of C source ``src``, compiled once per (source, flags); None on failure.

    The cache (mechanics.cache) only hands out an entry it verified — a private directory, our own regular
    file, the content hash recorded when we built it — and rebuilds anything else: a planted, foreign,
    symlinked, truncated or corrupt entry is never loaded. A failed build warns with the compiler's message
    (never silently slower). Native options (``-march=native``, …) are keyed by what they resolve to here
    (``native_target``); where that cannot be told, or the native build fails (warned once: that compiler then
    builds every later library portable), the library is built without them (``portable``).
    """
    cc = compiler()
    if cc is None:
        return None
    target = ""
    if any(f in NATIVE_FLAGS for f in flags):
        # (a compiler that failed one native build fails the next: no second failed gcc run per library)
        target = None if cc in _native_fallbacks else native_target(cc, tuple(flags))
        if target is None:
            return compile_shared_library(src, prefix, portable(flags), what)
    name = cache.entry_name(prefix, " ".join(flags) + (f"\n{target}" if target else "") + "\n" + src)
    so = cache.lookup(name)
    if so is not None:
        build_stats["cache_hits"] += 1
        return so
    with tempfile.TemporaryDirectory(prefix="vi_control_build_") as tmp:
        # Relative names, run in the build directory: the library's bytes do not depend on where it was built.
        Path(tmp, "src.c").write_text(src)
        res = subprocess.run(
            [cc, *flags, "-shared", "-fPIC", "-o", "lib.so", "src.c", "-lm"], capture_output=True, text=True, cwd=tmp
        )
        if res.returncode != 0:
            why = res.stderr[-1500:] or (
                f"killed by signal {-res.returncode}"
                if res.returncode < 0
                else f"exit code {res.returncode}, no message"
            )
            if target:  # (a compiler that resolves "native" but cannot build for it: portable code, still compiled)
                _native_fallbacks.add(cc)
                warnings.warn(
                    f"vi_control: compiling {what} for this CPU ({' '.join(f for f in flags if f in NATIVE_FLAGS)})"
                    f" failed, building portable code instead (and for every later library): {why}",
                    RuntimeWarning,
                    stacklevel=3,
                )
                return compile_shared_library(src, prefix, portable(flags), what)
            warnings.warn(f"vi_control: compiling {what} failed: {why}", RuntimeWarning, stacklevel=3)
            return None
        so = cache.store(name, Path(tmp, "lib.so").read_bytes())
    build_stats["compiled"] += 1
    return so


def load_our_library(src: str, prefix: str, what: str) -> ctypes.CDLL:
    """Our own model-independent C ``src``, compiled once into the cache (flags VI_CONTROL_CFLAGS or -O1) and loaded;
    CompilerRequiredError naming ``what`` without a compiler or when the build fails (its message warned)."""
    require_compiler(what)
    so = compile_shared_library(src, prefix, cflags(), what)
    if so is None:
        raise CompilerRequiredError(f"vi_control: {what} did not compile (warning above)")
    return ctypes.CDLL(str(so))


@functools.cache
def _callback_driver(driver: str, names: tuple[str, ...]) -> ctypes.CDLL:
    """``driver`` built once for any model over generated functions called through pointers (``callback_prelude``)."""
    return load_our_library(callback_prelude(names) + driver, "vi_cb", f"the driver over {', '.join(names)}")


def _size(f: ca.Function) -> int:
    """Instructions of an SX function; for a function calling others (e.g. a ``map``), those of what it calls,
    once each: the generated C loops over one copy."""
    if f.is_a("SXFunction"):
        return f.n_instructions()
    return sum(_size(f.get_function(name)) for name in f.get_function())


class FunctionSet(OwnsGraphs):
    """Named CasADi functions evaluated compiled where worthwhile (see module docstring).

    ``compile``: True compiles every function small enough, False never compiles, None (default)
    compiles unless the environment sets ``VI_CONTROL_NO_COMPILE=1``. ``driver`` is C source of our
    own: appended to the eager library when every function in ``driver_needs`` is compiled there
    (``driver_generated``), else built once for any model after ``callback_prelude`` and pointed at this set's
    functions per call — ``driver_function(name)`` calls it either way (CompilerRequiredError without a compiler).
    ``lib`` is the library holding the driver (None without one); ``work_sizes(names)`` sizes the CasADi work
    buffers. ``flags``: compiler flags of this set (default VI_CONTROL_CFLAGS or -O1).
    """

    def __init__(
        self,
        tag: str,
        funcs: dict[str, ca.Function],
        compile: bool | None = None,
        lazy: tuple[str, ...] = (),
        driver: str = "",
        driver_needs: tuple[str, ...] = (),
        flags: list[str] | None = None,
    ):
        if compile is None:
            compile = os.environ.get("VI_CONTROL_NO_COMPILE", "0") != "1"
        self._compile, self._flags = compile, flags
        self._tag = "".join(c for c in tag if c.isalnum())[:24]
        self._fns: dict[str, _VMFunction | _CFunction] = {n: _VMFunction(f) for n, f in funcs.items()}
        self._lazy = {n: funcs[n] for n in lazy}
        # (one thread compiles a lazy function; another that asks for it meanwhile waits and gets the compiled one)
        self._lazy_lock = threading.Lock()
        self.raw = funcs
        self.lib: ctypes.CDLL | None = None
        # Functions only derivatives need are compiled on first use: a simulator never pays for them.
        self.lib = self._compile_group({n: f for n, f in funcs.items() if n not in self._lazy}, driver, driver_needs)
        self.driver_generated = self.lib is not None
        self._driver_needs, self._callbacks = driver_needs, None
        if driver and self.lib is None:
            names = tuple(funcs[n].name() for n in driver_needs)
            # (also where the cache holds the library: what needs a compiler does not depend on this machine's past)
            require_compiler(f"the driver over {', '.join(names)} (an integrator's Newton iteration)")
            self.lib = _callback_driver(driver, names)
            self._callbacks = (ctypes.c_void_p * len(driver_needs))(*[self[n].address for n in driver_needs])

    def driver_function(self, name: str):
        """The driver's exported C function ``name`` (a ctypes function; set its restype): the library's own where
        the driver is generated with the functions, else one that first points the driver at this set's functions
        (this thread's pointers, ``callback_prelude``)."""
        fn = getattr(self.lib, name)
        if self._callbacks is None:
            return fn
        bind, table = self.lib.vi_set_callbacks, self._callbacks

        def call(*args):
            bind(table)
            return fn(*args)

        call.c_function = fn  # (restype and argtypes are set on it)
        return call

    def _compile_group(
        self, group: dict[str, ca.Function], driver: str = "", driver_needs: tuple[str, ...] = ()
    ) -> ctypes.CDLL | None:
        """Compile the small functions of ``group``; returns the library if the driver went into it.

        If a function the driver needs is too large for an optimising build, the whole group is built at
        -O0 instead (below _O0_LIMIT_OPS), so the step still runs as one C call.
        """
        if not self._compile:
            return None
        small = {n: f for n, f in group.items() if _size(f) < _COMPILE_LIMIT_OPS}
        flags = None
        if (
            driver
            and all(n in group for n in driver_needs)
            and not all(n in small for n in driver_needs)
            and sum(_size(f) for f in group.values()) < _O0_LIMIT_OPS
        ):
            small, flags = dict(group), cflags("-O0")
        extra = driver if driver and all(n in small for n in driver_needs) else ""
        lib = _build(list(small.values()), self._tag, extra, flags or self._flags) if small else None
        if lib is None:
            return None
        for n, f in small.items():
            self._fns[n] = _CFunction(lib, f)
        return lib if extra else None

    def work_sizes(self, names: tuple[str, ...]) -> tuple[int, int]:
        """Integer and real work-buffer sizes that cover every named compiled function."""
        fns = [self._fns[n] for n in names]
        return max(max(f.n_iw for f in fns), 1), max(max(f.n_w for f in fns), 1)

    def __getitem__(self, name: str) -> _VMFunction | _CFunction:
        if name in self._lazy:
            # One library per lazy function: first-order users never wait for the Hessian's gcc time
            # (minutes at marionette size).
            with self._lazy_lock:
                if name in self._lazy:
                    self._compile_group({name: self._lazy[name]})
                    del self._lazy[name]
        return self._fns[name]

    def compiled(self, name: str) -> bool:
        return self[name].compiled
