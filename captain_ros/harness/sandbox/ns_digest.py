"""A stable digest of the policy session's variables, computed in the sandbox after every cell.

The digest lets a replayed session (:mod:`captain_ros.research.re0.replay`) prove that it holds the same
variables as the recorded one at every cell, not only the same printed output: a variable that
silently took another value (a wall-clock reading, an unseeded random draw) changes the digest.

It never runs policy code: values are read by their exact built-in type (numbers by ``repr``,
strings and bytes by content, containers and their subclasses, such as the ``robot`` client's
Result dicts, element by element through the built-in methods, sets order-free, numpy arrays by
dtype, shape and bytes, functions by their bytecode, names, constants and defaults, other objects
by their type and their ``__dict__`` read through ``object.__getattribute__``). A value that is the same
object the session started with (``robot``, ``np``, ...) is left out. At most
:data:`MAX_ITEMS` values are visited; the rest is marked as cut, deterministically. The digest
comes from the untrusted child: the harness only compares it, it never acts on its content.
"""

from __future__ import annotations

import hashlib
import types
from typing import Any

import numpy as np

MAX_ITEMS = 200_000
MAX_DEPTH = 32
_SCALARS = (type(None), bool, int, float, complex)
_CONTAINERS = (dict, list, tuple, set, frozenset)


def _qual(cls: type) -> str:
    """``module.qualname`` of a class, read past any metaclass ``__getattribute__``."""
    get = type.__getattribute__
    return f"{get(cls, '__module__')}.{get(cls, '__qualname__')}"


class _Walk:
    def __init__(self, h: Any) -> None:
        self.h = h
        self.left = MAX_ITEMS
        self.path: set[int] = set()

    def put(self, *parts: bytes) -> None:
        for p in parts:
            self.h.update(len(p).to_bytes(8, "little"))
            self.h.update(p)

    def feed(self, v: Any, depth: int = 0) -> None:  # noqa: C901 - one flat type dispatch
        self.left -= 1
        t = type(v)
        if self.left < 0 or depth > MAX_DEPTH:
            self.put(b"!cut")
            return
        if t in _SCALARS:
            self.put(t.__name__.encode(), repr(v).encode())
        elif t is str:
            self.put(b"str", v.encode("utf-8", "surrogatepass"))
        elif t in (bytes, bytearray):
            self.put(t.__name__.encode(), bytes(v))
        elif issubclass(t, np.generic) and _qual(t).startswith("numpy."):
            self.put(b"np.generic", v.dtype.str.encode(), v.tobytes())
        elif t is np.ndarray:
            self.put(b"ndarray", v.dtype.str.encode(), repr(v.shape).encode())
            if v.dtype.hasobject:
                self._items(list(v.flat), depth)
            else:
                self.put(np.ascontiguousarray(v).tobytes())
        elif id(v) in self.path:
            self.put(b"@cycle")
        elif issubclass(t, _CONTAINERS):  # type(v), never isinstance: that may read v.__class__
            base: Any = next(c for c in _CONTAINERS if issubclass(t, c))  # base-class methods only
            vv: Any = v
            self.path.add(id(v))
            self.put(_qual(t).encode(), str(base.__len__(vv)).encode())
            if base is dict:
                for k, x in dict.items(vv):
                    self.feed(k, depth + 1)
                    self.feed(x, depth + 1)
            elif base in (set, frozenset):
                subs = []
                for x in base.__iter__(vv):
                    sub = _Walk(hashlib.sha256())
                    sub.left, sub.path = self.left, self.path
                    sub.feed(x, depth + 1)
                    self.left = sub.left
                    subs.append(sub.h.digest())
                self.put(*sorted(subs))
            else:
                self._items(base.__iter__(vv), depth)
            self.path.discard(id(v))
        elif t is types.FunctionType:
            self.put(b"function", v.__qualname__.encode())
            self._code(v.__code__, depth)
            self.feed(v.__defaults__, depth + 1)
        elif t is types.CodeType:
            self._code(v, depth)
        elif t is types.ModuleType:
            self.put(b"module", v.__name__.encode())
        elif issubclass(t, type):
            self.put(b"class", _qual(v).encode())
        else:
            self.put(b"object", _qual(t).encode())
            try:
                attrs = object.__getattribute__(v, "__dict__")
            except AttributeError:
                return
            if type(attrs) is dict:
                self.path.add(id(v))
                self.feed(attrs, depth + 1)
                self.path.discard(id(v))

    def _code(self, code: types.CodeType, depth: int) -> None:
        self.put(
            b"code",
            code.co_code,
            " ".join(code.co_names).encode(),
            " ".join(code.co_varnames).encode(),
            " ".join(code.co_freevars).encode(),
        )
        self._items(code.co_consts, depth)

    def _items(self, items: Any, depth: int) -> None:
        for x in items:
            self.feed(x, depth + 1)


def ns_digest(namespace: dict[str, Any], base: dict[str, Any]) -> str:
    """SHA-256 over the session variables of ``namespace`` in name order, leaving out names
    bound to the very object they had in ``base`` (the namespace the session started with)."""
    walk = _Walk(hashlib.sha256())
    names = sorted(k for k in namespace if type(k) is str)
    for name in names:
        value = namespace[name]
        if name in base and base[name] is value:
            continue
        walk.put(b"name", name.encode("utf-8", "surrogatepass"))
        walk.feed(value)
    return walk.h.hexdigest()
