"""The sandbox child's audit hook, built so that policy code cannot change what it decides.

:func:`install` builds the hook from private state captured before any policy code runs and
hands it to :func:`sys.addaudithook`; nothing else keeps a reference to it, so no function,
module global or closure that a cell can reach leads to its tables or its verdicts:

- every table is an immutable copy (tuples, frozensets, strings);
- paths are resolved by a private ``realpath`` over captured C functions (``posix.lstat``,
  ``readlink``, ``getcwd``), never through ``os.path``, whose functions a cell can rebind;
- a path argument is trusted only as characters the open actually uses: an exact copy of a
  ``str``/``bytes`` (a subclass's methods are never called), a ``DirEntry``, or an exact
  ``pathlib`` path whose classes still hold their original methods (its first conversion,
  done by the open itself, caches the string the hook reads back); any other ``__fspath__``
  object is refused, so one that changes between calls gets nowhere;
- a denial is written at once to the harness as a ``violation`` frame by a captured
  ``os.write`` on a captured fd: the record of violations lives in the harness, not in a list
  that a cell can clear. Other Python code denies through the ``sandbox.deny`` audit event.

``os.mknod`` and ``os.mkfifo`` raise no audit event; :func:`install` removes them from ``os``
and ``posix``, and the OS layers (:mod:`captain_ros.harness.sandbox.isolation`) deny them anyway.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import posix
import stat
import struct
import sys
from typing import Any

DENY_EVENT = "sandbox.deny"
_PATH_METHODS = ("__fspath__", "__str__", "_format_parsed_parts", "_str", "_flavour", "__new__")


def _private_realpath(getcwd: Any, lstat: Any, readlink: Any, islnk: Any) -> Any:
    errors = (OSError, ValueError)

    def realpath(path: str) -> str:
        if not path.startswith("/"):
            path = getcwd() + "/" + path
        todo = [p for p in path.split("/") if p and p != "."]
        done: list[str] = []
        links = 0
        while todo:
            name = todo.pop(0)
            if name == "..":
                if done:
                    done.pop()
                continue
            here = "/" + "/".join([*done, name])
            try:
                mode = lstat(here).st_mode
            except errors:
                done.append(name)  # does not exist (yet): the rest is taken literally
                continue
            if not islnk(mode):
                done.append(name)
                continue
            links += 1
            if links > 40:
                return ""
            target = readlink(here)
            if target.startswith("/"):
                done = []
            todo = [p for p in target.split("/") if p and p != "."] + todo
        return "/" + "/".join(done)

    return realpath


def _path_text(getcwd: Any) -> Any:
    """A function: path argument -> exact ``str`` the kernel will see ("" when untrusted)."""
    type_, issubclass_, str_, bytes_, join, bjoin = type, issubclass, str, bytes, "".join, b"".join
    decode, fspath = bytes.decode, os.fspath
    id_, len_, zip_, all_ = id, len, zip, all  # the real builtins module is reachable
    exact_ids = frozenset({id_(os.DirEntry)})
    path_types = (pathlib.PurePosixPath, pathlib.PosixPath)
    mros = {id_(t): tuple(t.__mro__) for t in path_types}
    originals = tuple(
        (vars(c), name, vars(c)[name])
        for t in path_types
        for c in t.__mro__
        for name in _PATH_METHODS
        if name in vars(c)
    )
    absent = tuple(
        (vars(c), name)
        for t in path_types
        for c in t.__mro__
        for name in _PATH_METHODS
        if name not in vars(c) and c is not object
    )
    missing = object()

    def untouched(t: type) -> bool:
        want, have = mros[id_(t)], t.__mro__
        if len_(want) != len_(have):
            return False
        for a, b in zip_(want, have, strict=True):
            if a is not b:
                return False
        for proxy, name, value in originals:
            if proxy.get(name, missing) is not value:
                return False
        return all_(proxy.get(name, missing) is missing for proxy, name in absent)

    def text(p: Any) -> str:
        t = type_(p)
        if id_(t) in mros and untouched(t) or id_(t) in exact_ids:
            p = fspath(p)
        t = type_(p)
        if issubclass_(t, str_):
            return join((p, ""))  # a new exact str: no method of a subclass runs
        if issubclass_(t, bytes_):
            return decode(bjoin((p, b"")), "utf-8", "surrogateescape")
        return ""

    return text


def _reporter(out_fd: int) -> Any:
    """Write one ``violation`` frame (see :mod:`captain_ros.harness.sandbox.wire`) with captured calls."""
    write, pack, join, suppress, len_ = os.write, struct.pack, "".join, contextlib.suppress, len

    def report(msg: str) -> None:
        safe = join([c if " " <= c <= "~" and c not in '"\\' else "?" for c in msg[:300]])
        body = ('{"type":"violation","text":"' + safe + '"}').encode("ascii")
        with suppress(OSError):  # the denial holds; the harness sees the broken pipe
            write(out_fd, pack(">I", len_(body)) + body)

    return report


def install(
    workspace: str, read_roots: tuple[str, ...], out_fd: int, tables: dict[str, Any]
) -> None:
    """Add the hook (irrevocable). ``tables``: deny_prefixes, path_events, read_only_events,
    deny_imports, blocked_attr, safe_pickle (copied here)."""
    realpath = _private_realpath(posix.getcwd, posix.lstat, posix.readlink, stat.S_ISLNK)
    text = _path_text(posix.getcwd)
    report = _reporter(out_fd)
    isinstance_, str_, int_, any_, tuple_, type_, bytes_ = (
        isinstance,
        str,
        int,
        any,
        tuple,
        type,
        bytes,
    )
    issubclass_, join = issubclass, "".join
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    ws = realpath(workspace.rstrip("/"))
    roots = tuple(realpath(r) for r in read_roots)
    deny_prefixes = tuple(tables["deny_prefixes"])
    path_events, read_only = frozenset(tables["path_events"]), frozenset(tables["read_only_events"])
    deny_imports, blocked_attr = (
        frozenset(tables["deny_imports"]),
        frozenset(tables["blocked_attr"]),
    )
    safe_pickle = tuple(tables["safe_pickle"])
    permission_error, deny_event, len_ = PermissionError, DENY_EVENT, len

    def deny(what: str, detail: str = "") -> None:
        msg = f"sandbox: {what} is not allowed in the policy session" + (
            f" ({detail})" if detail else ""
        )
        report(msg)
        raise permission_error(msg)

    def exact(x: Any) -> str:
        """An exact copy of a str argument ("" for anything else; no method of ``x`` runs)."""
        return join((x, "")) if issubclass_(type_(x), str_) else ""

    def under(path: str, root: str) -> bool:
        return path == root or path.startswith(root + "/")

    def resolve(p: Any) -> str:
        s = text(p)
        return realpath(s) if s and "\x00" not in s else ""

    def hook(event: str, args: tuple) -> None:  # noqa: C901 - one flat policy
        if event == deny_event:
            deny(exact(args[0]) if args else "this", exact(args[1]) if len_(args) > 1 else "")
        if event.startswith(deny_prefixes):
            deny(event, "process, network, ctypes and system calls are blocked")
        if event == "open":
            path, mode, flags = (tuple_(args) + (None, None, None))[:3]
            if isinstance_(path, int_):
                deny("opening a raw file descriptor")
            rp = resolve(path)
            if not rp:
                deny("open", "only str, bytes and pathlib paths are accepted")
            if under(rp, ws):
                return
            writing = (isinstance_(mode, str_) and any_(c in mode for c in "wax+")) or (
                isinstance_(flags, int_) and flags & write_flags
            )
            if not writing and any_(under(rp, r) for r in roots):
                return
            deny("file access outside the workspace", f"{rp:.120}; use the current folder")
        elif event in path_events:
            for p in args[:2] if event == "os.rename" else args[:1]:
                if p is None or ((type_(p) is str_ or type_(p) is bytes_) and not p):
                    continue
                rp = resolve(p)
                if rp and (
                    under(rp, ws) or (event in read_only and any_(under(rp, r) for r in roots))
                ):
                    continue
                deny(event + " outside the workspace", f"{rp or '?':.120}")
        elif event == "import":
            name = exact(args[0]) if args else ""
            if name.split(".")[0] in deny_imports or name in deny_imports:
                deny(f"importing {name!r}")
        elif event == "object.__setattr__":
            if len_(args) > 1 and exact(args[1]) in blocked_attr:
                deny(f"setting {args[1]}")
        elif event == "pickle.find_class":
            mod = exact(args[0]) if args else ""
            if not mod.startswith(safe_pickle):
                deny(f"unpickling {mod}.{exact(args[1]) if len_(args) > 1 else ''}")
        elif event == "mmap.__new__" and args and args[0] != -1:
            deny("mapping a file into memory")

    for module in (os, posix):  # no audit event exists for these two
        for name in ("mknod", "mkfifo"):
            if hasattr(module, name):
                delattr(module, name)
    sys.addaudithook(hook)
