"""The on-disk cache of compiled libraries, built so that it cannot make us run code we did not compile.

Loading a shared library runs its constructors, so a cache entry is code execution. The threats, each
tested in test/mechanics/test_codegen_cache.py:

- **Planted entries.** Entry names are predictable (hashes of our own C source), so anyone who can write
  into the cache directory can plant a library under the right name. The directory must therefore be
  private: ``VI_CONTROL_CACHE`` (default ``~/.cache/vi_control``) is created with mode 0700; an existing
  one must be a real directory (not a symlink), owned by us, writable by us and by no one else. Otherwise we
  warn and use this user's fallback ``$TMPDIR/vi_control_cache_<uid>`` under the same rules (its parent must be
  sticky or private, so no one else can swap it) — one directory that later processes reuse, so nothing
  accumulates in /tmp and nothing is rebuilt per process; only if that one is unusable too (another user
  squatting the name), a fresh ``mkdtemp`` directory for this process, removed at exit. Never the untrusted
  one. A directory that existed before is used only if it holds nothing but our entries (``VI_CONTROL_CACHE=/etc``
  is refused and left alone); one of ours that others can read but not write is tightened to 0700.
- **Foreign or modified entries.** Each library ``<name>.so`` has a record ``<name>.sha256`` (its SHA-256
  and size, written when we built it). Before ``dlopen`` both are opened with ``O_NOFOLLOW`` (a symlink is
  refused, not followed), must be regular files owned by us and not writable by others, and the library's
  bytes must hash to the record. Anything else — no record, another owner, a symlink, a truncated or
  corrupt file (a truncated library crashes the process with SIGBUS inside ``dlopen``) — is
  reported and rebuilt; the rebuilt entry replaces it.
- **Temporary-file races.** New entries are written to ``tempfile.mkstemp`` files in the cache directory
  (``O_CREAT | O_EXCL``, random names, mode 0600) and renamed into place, so a symlink planted at a
  predictable name can neither redirect the write nor be loaded half-written. Builds run in a fresh
  ``mkdtemp`` directory with relative file names, so the same source gives the same bytes.

Out of scope: an attacker running as the same user (they can write the record too) or as root.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import stat
import tempfile
import warnings
from pathlib import Path

FORMAT = "v2"  # part of every entry name: entries of an older layout (no record) are not looked at

_resolved: dict[str, Path] = {}  # requested directory -> the directory actually used (this process)


def _warn(message: str) -> None:
    warnings.warn(f"vi_control: {message}", RuntimeWarning, stacklevel=3)


def requested_cache_dir() -> Path:
    return Path(os.environ.get("VI_CONTROL_CACHE") or Path.home() / ".cache" / "vi_control")


# The names of what this module puts in a cache directory: entries (``entry_name``) and their temporary files.
_ENTRY = re.compile(r"^\.?[A-Za-z0-9_]+_[0-9a-f]{20}(\..*)?$")


def _foreign_entry(d: Path) -> str | None:
    """The name of a file in ``d`` that is no cache entry of ours (None: only ours, or empty); stops at the first."""
    try:
        with os.scandir(d) as it:
            for e in it:
                if not _ENTRY.match(e.name):
                    return e.name
    except OSError as e:
        return f"(unreadable: {e.strerror})"
    return None


def _directory_problem(d: Path) -> str | None:
    """Why ``d`` cannot serve as a private cache directory (None: it can, and now has mode 0700). A directory that
    existed before is used only if it holds nothing but our entries, and made private (chmod 0700) only if it holds
    some: a directory someone else made — ``VI_CONTROL_CACHE=/etc`` as root — is never written to or changed."""
    created = False
    try:
        d.parent.mkdir(parents=True, exist_ok=True)
        d.mkdir(mode=0o700)
        created = True
    except FileExistsError:
        pass
    except OSError as e:
        return f"cannot be created ({e.strerror})"
    st = os.lstat(d)
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if st.st_uid != os.geteuid():
        return f"is owned by uid {st.st_uid}, not by us (uid {os.geteuid()})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    if not created:
        foreign = _foreign_entry(d)
        if foreign is not None:
            return (
                f"holds {foreign!r}, which is no vi_control cache entry: not a cache of ours (not used; its "
                "permissions are left as they are)"
            )
        if stat.S_IMODE(st.st_mode) != 0o700 and not any(d.iterdir()):
            return (
                f"is readable by others (mode {stat.S_IMODE(st.st_mode):o}) and empty: vi_control did not create "
                "it, so it does not change its permissions (chmod 700 it, or name a directory that does not exist)"
            )
    try:
        if stat.S_IMODE(st.st_mode) != 0o700:
            os.chmod(d, 0o700)
    except OSError as e:
        return f"cannot be made private ({e.strerror})"
    if not os.access(d, os.W_OK | os.X_OK):  # (a read-only file system: every build would fail to store)
        return "is not writable"
    return None


def fallback_cache_dir() -> Path:
    """This user's fallback cache: one fixed directory under the temporary directory, reused by every process."""
    return Path(tempfile.gettempdir()) / f"vi_control_cache_{os.geteuid()}"


def _parent_problem(parent: Path) -> str | None:
    """Why entries of a directory in ``parent`` could be swapped by someone else (None: they cannot)."""
    try:
        st = os.stat(parent)
    except OSError as e:
        return f"its parent {parent} cannot be read ({e.strerror})"
    if st.st_uid not in (0, os.geteuid()):  # its owner could rename our directory away and put theirs there
        return f"its parent {parent} is owned by uid {st.st_uid}"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        return f"its parent {parent} is writable by others without the sticky bit (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def private_cache_dir() -> Path:
    """The cache directory (module docstring): the requested one if it is private, else this user's fallback,
    else a temporary one for this process."""
    requested = requested_cache_dir()
    key = str(requested)
    if key not in _resolved or not _resolved[key].is_dir():
        problem = _directory_problem(requested)
        if problem is None:
            _resolved[key] = requested
            return requested
        advice = "set VI_CONTROL_CACHE to a directory only you can write"
        fallback = fallback_cache_dir()
        fallback_problem = _parent_problem(fallback.parent) or _directory_problem(fallback)
        if fallback_problem is None:
            _warn(
                f"compile cache {requested} {problem}: not used; compiling into this user's fallback cache "
                f"{fallback} instead (shared by later processes; {advice})"
            )
            _resolved[key] = fallback
        else:
            tmp = Path(tempfile.mkdtemp(prefix="vi_control_cache_"))
            atexit.register(shutil.rmtree, tmp, ignore_errors=True)
            _warn(
                f"compile cache {requested} {problem}, and the fallback {fallback} {fallback_problem}: neither "
                f"is used; compiling into the private temporary directory {tmp} instead, removed at exit ({advice})"
            )
            _resolved[key] = tmp
    return _resolved[key]


def entry_name(prefix: str, key_text: str) -> str:
    """The entry name for a build described by ``key_text`` (compiler flags and source)."""
    return f"{prefix}_{FORMAT}_{hashlib.sha256(key_text.encode()).hexdigest()[:20]}"


def _read_own_file(path: Path, limit: int | None = None) -> bytes:
    """The bytes of a regular file we own that only we can write, opened without following symlinks."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path.name} is not a regular file")
        if st.st_uid != os.geteuid():
            raise OSError(f"{path.name} is owned by uid {st.st_uid}, not by us")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise OSError(f"{path.name} is writable by group or others")
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
            if limit is not None and size > limit:
                raise OSError(f"{path.name} is larger than a record")
    finally:
        os.close(fd)


def _record(data: bytes) -> str:
    return f"{hashlib.sha256(data).hexdigest()} {len(data)}\n"


def lookup(name: str) -> Path | None:
    """The verified library of entry ``name``, or None if it must be (re)built (a refused entry is reported)."""
    d = private_cache_dir()
    so, rec = d / f"{name}.so", d / f"{name}.sha256"
    if not os.path.lexists(so) and not os.path.lexists(rec):
        return None
    try:
        expected = _read_own_file(rec, limit=200).decode("ascii", "replace")
        data = _read_own_file(so)
        if _record(data) != expected:
            raise OSError(
                f"{so.name} does not match the hash recorded when it was built (truncated, corrupt or replaced)"
            )
    except OSError as e:  # a missing record, ELOOP for a symlink, or one of ours above
        problem = f"{Path(e.filename).name}: {e.strerror}" if e.filename else str(e)
    else:
        return so
    _warn(f"compile cache entry {so} refused ({problem}); rebuilding it")
    return None


def _write_new(d: Path, name: str, data: bytes) -> None:
    """Write ``data`` to ``d/name`` through an O_EXCL temporary file with a random name, then rename."""
    fd, tmp = tempfile.mkstemp(dir=d, prefix=f".{name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, d / name)  # replaces a symlink itself, never its target
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def store(name: str, data: bytes) -> Path:
    """Enter a library we just built; returns its path in the cache."""
    d = private_cache_dir()
    _write_new(d, f"{name}.so", data)
    _write_new(d, f"{name}.sha256", _record(data).encode())
    return d / f"{name}.so"
