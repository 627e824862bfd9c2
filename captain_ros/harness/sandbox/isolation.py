"""OS-level isolation of the sandbox child (Linux), under the Python audit hook.

Each layer is applied by the child itself, before any policy code runs, only where the kernel
offers it, and its state is recorded as ``"on"`` or ``"unavailable: <why>"``
(:data:`LAYERS` names them; ``--strict-sandbox`` refuses a session where one of
:data:`REQUIRED` is not on). Nothing here needs a helper binary or a Python package: the system
calls are made through :mod:`ctypes` on the C library.

- ``netns``: a new, empty network namespace (``unshare(CLONE_NEWNET)``; as root before the uid
  drop, otherwise inside a new user namespace mapping only the caller's uid and gid). No
  interface but a down loopback: no host, no localhost, no ROS graph.
- ``no_new_privs``: ``PR_SET_NO_NEW_PRIVS``: no set-uid binary or file capability can raise the
  child's privileges (and the condition for the two layers below without privileges).
- ``landlock``: a Landlock ruleset that handles every write-like filesystem right and allows them
  only beneath the workspace (reads stay open; the audit hook narrows them), denies TCP bind and
  connect (ABI >= 4) and abstract unix sockets and signals outside the sandbox (ABI >= 6).
  A Landlock domain also cannot ptrace, hence cannot read ``/proc/<pid>/environ``, ``mem`` or
  ``maps`` of a process outside it - the harness included, whatever the uid.
- ``landlock_reads``: a second Landlock layer, once the child has imported what it needs: files
  are read and folders listed only beneath the workspace, the Python library folders and the
  system folders (:data:`SYSTEM_READ_ROOTS`); the episode folder around the workspace (its hidden
  ``privileged.jsonl``), home folders, ``/tmp`` and the repository are out of sight.
- ``seccomp``: a BPF filter (x86-64 and aarch64) that fails socket creation, ``execve``,
  ``mknod``, ``ptrace``, mounts, namespaces, ``bpf``, ``io_uring`` and kernel keyrings with
  ``EPERM`` and kills the process on any other syscall ABI.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct

LAYERS = (
    "clean_env",
    "rlimits",
    "uid_drop",
    "netns",
    "no_new_privs",
    "landlock",
    "landlock_reads",
    "seccomp",
)
REQUIRED = ("clean_env", "rlimits", "no_new_privs", "landlock", "seccomp")
"""Layers ``--strict-sandbox`` needs (``netns`` is extra: seccomp already denies sockets, and
``uid_drop`` applies only to a harness running as root)."""

SYSTEM_READ_ROOTS = (
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/etc",
    "/dev",
    "/proc/self",
    "/sys/devices/system/cpu",
)
"""Readable beside the workspace and the Python library folders (shared libraries, time zone,
locale and TLS data, ``/dev/urandom``, the CPU count)."""
CLONE_NEWNET, CLONE_NEWUSER = 0x40000000, 0x10000000
PR_SET_NO_NEW_PRIVS = 38
_SYSCALLS = {  # machine: (audit arch, seccomp(2), landlock_create_ruleset, denied syscalls)
    "x86_64": (
        0xC000003E,
        317,
        444,
        (
            41,
            53,
            59,
            322,
            101,
            133,
            259,
            165,
            166,
            155,
            161,
            272,
            308,
            310,
            311,
            248,
            249,
            250,
            321,
            298,
            323,
            246,
            320,
            175,
            313,
            304,
            425,
            426,
            427,
            428,
            429,
            430,
            431,
            432,
            442,
        ),
    ),
    "aarch64": (
        0xC00000B7,
        277,
        444,
        (
            198,
            199,
            221,
            281,
            117,
            33,
            40,
            39,
            41,
            51,
            97,
            268,
            270,
            271,
            217,
            218,
            219,
            280,
            241,
            282,
            104,
            294,
            105,
            273,
            265,
            425,
            426,
            427,
            428,
            429,
            430,
            431,
            432,
            442,
        ),
    ),
}
_FS_RIGHTS = {1: 0x1FF2, 2: 0x3FF2, 3: 0x7FF2, 5: 0xFFF2}  # write-like rights known per ABI
"""LANDLOCK_ACCESS_FS_* minus EXECUTE/READ_FILE/READ_DIR: WRITE_FILE, REMOVE_*, MAKE_*,
REFER (ABI 2), TRUNCATE (ABI 3), IOCTL_DEV (ABI 5)."""
_READ_RIGHTS = 0x4 | 0x8  # READ_FILE | READ_DIR
_FILE_RIGHTS = 0x2 | 0x4 | 0x4000 | 0x8000  # the rights that apply to a file (not a folder)


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _err(what: str) -> str:
    errno = ctypes.get_errno()
    return f"unavailable: {what} failed ({os.strerror(errno) if errno else 'unknown error'})"


def enter_netns(as_root: bool) -> str:
    """Move into a new network namespace (call while single-threaded, before the uid drop)."""
    libc = _libc()
    if as_root:
        return "on" if libc.unshare(CLONE_NEWNET) == 0 else _err("unshare(CLONE_NEWNET)")
    uid, gid = os.getuid(), os.getgid()
    libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: a process that changed uid may not own its maps
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        return _err("unshare(CLONE_NEWUSER|CLONE_NEWNET) (unprivileged user namespaces are off)")
    try:
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    except OSError as exc:
        return f"unavailable: mapping the user namespace failed ({exc.strerror})"
    return "on"


def no_new_privs() -> str:
    return (
        "on"
        if _libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
        else _err("prctl(PR_SET_NO_NEW_PRIVS)")
    )


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def _landlock_abi() -> tuple[int, str]:
    """The kernel's Landlock ABI version (0 and why when there is none usable here)."""
    table = _SYSCALLS.get(platform.machine())
    if table is None:
        return 0, f"unavailable: no Landlock syscall numbers for {platform.machine()}"
    if _threads() != 1:
        return 0, f"unavailable: the child has {_threads()} threads (Landlock binds one)"
    abi = _libc().syscall(table[2], None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # _VERSION
    if abi < 1:
        return 0, _err("landlock_create_ruleset (not in this kernel or disabled)")
    return int(abi), ""


def _restrict(abi: int, fs: int, net: int, scoped: int, paths: tuple[str, ...]) -> str:
    """Create a ruleset handling ``fs``/``net``/``scoped``, allow ``fs`` beneath ``paths`` (those
    that exist), and enforce it on this process ("" when done)."""
    libc, nr_create = _libc(), 444
    attr = struct.pack("=QQQ", fs, net, scoped)[: 8 if abi < 4 else 16 if abi < 6 else 24]
    buf = ctypes.create_string_buffer(attr, len(attr))
    rs = libc.syscall(nr_create, buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if rs < 0:
        return _err("landlock_create_ruleset")
    try:
        for path in paths:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a folder this system does not have
            try:
                rights = fs if os.path.isdir(path) else fs & _FILE_RIGHTS
                rule = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd), 12)
                if libc.syscall(
                    nr_create + 1, ctypes.c_int(rs), ctypes.c_int(1), rule, ctypes.c_uint32(0)
                ):
                    return _err(f"landlock_add_rule({path})")
            finally:
                os.close(fd)
        if libc.syscall(nr_create + 2, ctypes.c_int(rs), ctypes.c_uint32(0)) != 0:
            return _err("landlock_restrict_self")
    finally:
        os.close(rs)
    return ""


def landlock(workspace: str) -> str:
    """Restrict filesystem writes to ``workspace``, TCP and out-of-sandbox scopes (Landlock)."""
    abi, why = _landlock_abi()
    if not abi:
        return why
    fs = _FS_RIGHTS[max(k for k in _FS_RIGHTS if k <= abi)]
    net = 0x3 if abi >= 4 else 0  # BIND_TCP | CONNECT_TCP, no rule allows any port
    scoped = 0x3 if abi >= 6 else 0  # ABSTRACT_UNIX_SOCKET | SIGNAL
    return _restrict(abi, fs, net, scoped, (workspace,)) or f"on (ABI {abi})"


def landlock_reads(readable: tuple[str, ...]) -> str:
    """A second Landlock layer: reading files and listing folders only beneath ``readable``
    (applied once the child has imported what it needs)."""
    abi, why = _landlock_abi()
    if not abi:
        return why
    return _restrict(abi, _READ_RIGHTS, 0, 0, readable) or f"on ({len(readable)} roots)"


def seccomp() -> str:
    """Install the deny-list filter (needs no_new_privs or CAP_SYS_ADMIN)."""
    table = _SYSCALLS.get(platform.machine())
    if table is None:
        return f"unavailable: no seccomp syscall table for {platform.machine()}"
    arch, nr_seccomp, _, denied = table
    allow, deny, kill = 0x7FFF0000, 0x00050000 | 1, 0x80000000  # ALLOW, ERRNO(EPERM), KILL_PROCESS
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    n = len(denied)
    prog = [
        (ld, 0, 0, 4),
        (jeq, 1, 0, arch),
        (ret, 0, 0, kill),
        (ld, 0, 0, 0),
        (jge, n + 1, 0, 0x40000000),
    ]  # x32 ABI numbers: deny
    for i, nr in enumerate(denied):
        prog.append((jeq, n - i, 0, nr))  # to the final "deny"
    prog += [(ret, 0, 0, allow), (ret, 0, 0, deny)]
    filt = b"".join(struct.pack("=HBBI", *ins) for ins in prog)
    fbuf = ctypes.create_string_buffer(filt, len(filt))
    fprog = struct.pack("=HxxxxxxQ", len(prog), ctypes.addressof(fbuf))
    pbuf = ctypes.create_string_buffer(fprog, len(fprog))
    libc = _libc()
    # SECCOMP_SET_MODE_FILTER with SECCOMP_FILTER_FLAG_TSYNC: every thread of the child
    if libc.syscall(nr_seccomp, ctypes.c_uint(1), ctypes.c_uint(1), pbuf) != 0:
        return _err("seccomp(SECCOMP_SET_MODE_FILTER)")
    return f"on ({n} syscalls denied)"


def clean_env(allowed: frozenset[str]) -> str:
    extra = sorted(set(os.environ) - allowed)
    return "on" if not extra else f"unavailable: inherited variables {', '.join(extra)[:120]}"


def missing(layers: dict[str, str], required: tuple[str, ...] = REQUIRED) -> list[str]:
    """``"name: why"`` for each required layer that is not on."""
    return [
        f"{k}: {layers.get(k, 'not reported')}"
        for k in required
        if not str(layers.get(k, "")).startswith("on")
    ]
