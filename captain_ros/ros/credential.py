"""Credentials of the secured graph (``secure:=true``): an HMAC over every command that moves or
un-stops the robot, with a per-deployment key (no rclpy here).

The middleware in the lock cannot authenticate peers (no Fast DDS security plugins, no other rmw
with access control: docs/ros.md), so the secured mode works at the application layer. Whoever
holds the key file (mode 0600, at least 32 bytes; :func:`generate_key` writes one) can command;
whoever does not, cannot:

- a ``RunEpisode`` goal is signed through its goal UUID, the one client-chosen field of every
  goal (:meth:`Signer.goal_uuid`: 4 bytes of time, 4 of nonce, 8 of HMAC-SHA256 over the goal's
  fields), so the action and its type stay the standard ones;
- every other command (a robot call, the e-stop reset, snapshot/restore, scene loading) carries a
  token ``{"ts", "nonce", "mac"}`` over its operation and fields (:meth:`Signer.token`).

A verifier accepts a credential once (the nonce), within :data:`FRESH_S` of its time. This
authenticates and binds the request; it does not encrypt: DDS traffic stays readable on the host,
and anyone who can read the key file (its owner, root) can command.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
import struct
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from captain_ros.core.errors import InvalidArgumentError

KEY_ENV = "CAPTAIN_KEY_FILE"
"""Environment variable naming the key file (the launch's ``key_file`` argument wins)."""
MIN_KEY_BYTES = 32
FRESH_S = 30.0
"""A credential is accepted within this many seconds of its time stamp, either way [s]."""
GOAL_FIELDS = (
    "task",
    "seed",
    "policy",
    "max_requests",
    "max_physical_actions",
    "max_wall_time_s",
    "output_dir",
)
"""The ``RunEpisode`` goal fields a goal credential binds."""


class CredentialError(InvalidArgumentError):
    """A key file that cannot be used (missing, too short, readable by others)."""


def load_key(path: str | os.PathLike[str]) -> bytes:
    """The key in ``path``: a regular file of mode 0600 (or stricter) with at least
    :data:`MIN_KEY_BYTES` bytes (surrounding whitespace ignored).

    Raises:
        CredentialError: With the reason in one line.
    """
    p = Path(path).expanduser()
    try:
        st = p.stat()
    except OSError as exc:
        raise CredentialError(f"key file {p}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise CredentialError(f"key file {p} is not a regular file")
    if st.st_mode & 0o077:
        raise CredentialError(
            f"key file {p} has mode {stat.S_IMODE(st.st_mode):04o}: others can "
            f"read it; chmod 600 {p}"
        )
    key = p.read_bytes().strip()
    if len(key) < MIN_KEY_BYTES:
        raise CredentialError(
            f"key file {p} holds {len(key)} bytes; at least {MIN_KEY_BYTES} "
            "(`captain ros keygen PATH` writes one)"
        )
    return key


def key_path(explicit: str = "", env: Mapping[str, str] | None = None) -> str:
    """``explicit``, else ``$CAPTAIN_KEY_FILE``, else ""."""
    return explicit or (os.environ if env is None else env).get(KEY_ENV, "")


def generate_key(path: str | os.PathLike[str]) -> Path:
    """Write a new random key (64 hex characters) to ``path``, created with mode 0600; never
    overwrites (raises ``FileExistsError``)."""
    p = Path(path).expanduser()
    p.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(secrets.token_hex(32) + "\n")
    return p


def canonical(fields: Mapping[str, Any]) -> bytes:
    """The bytes a credential covers: sorted-key compact JSON."""
    return json.dumps(dict(fields), sort_keys=True, separators=(",", ":"), default=str).encode()


def goal_fields(goal: Any) -> dict[str, Any]:
    """The bound fields of a ``RunEpisode`` goal (message or mapping)."""
    get = goal.get if isinstance(goal, Mapping) else lambda k: getattr(goal, k)
    return {k: get(k) for k in GOAL_FIELDS}


def _mac(key: bytes, op: str, fields: Mapping[str, Any], ts: int, nonce: str) -> str:
    msg = b"\n".join([op.encode(), canonical(fields), str(ts).encode(), nonce.encode()])
    return hmac.new(key, msg, hashlib.sha256).hexdigest()


class Signer:
    """Makes credentials with ``key``."""

    def __init__(self, key: bytes, clock: Callable[[], float] = time.time) -> None:
        self.key = key
        self.clock = clock

    def token(self, op: str, fields: Mapping[str, Any]) -> dict[str, Any]:
        ts, nonce = int(self.clock()), secrets.token_hex(8)
        return {"ts": ts, "nonce": nonce, "mac": _mac(self.key, op, fields, ts, nonce)}

    def goal_uuid(self, goal: Any) -> bytes:
        """16 bytes: time (uint32), nonce (4 bytes), HMAC-SHA256 truncated to 8 bytes."""
        ts, nonce = int(self.clock()), secrets.token_bytes(4)
        mac = _mac(self.key, "goal", goal_fields(goal), ts, nonce.hex())
        return struct.pack(">I", ts & 0xFFFFFFFF) + nonce + bytes.fromhex(mac)[:8]


class Verifier:
    """Checks credentials made with ``key``; each is accepted once, while fresh."""

    def __init__(
        self, key: bytes, fresh_s: float = FRESH_S, clock: Callable[[], float] = time.time
    ) -> None:
        self.key = key
        self.fresh_s = float(fresh_s)
        self.clock = clock
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def _fresh_once(self, ts: int, nonce: str) -> str | None:
        now = self.clock()
        if abs(now - ts) > self.fresh_s:
            return f"its time stamp is {now - ts:+.0f} s off (accepted within {self.fresh_s:g} s)"
        with self._lock:
            self._seen = {n: t for n, t in self._seen.items() if now - t <= 2 * self.fresh_s}
            if nonce in self._seen:
                return "it was used before (a replay)"
            self._seen[nonce] = now
        return None

    def check(self, op: str, fields: Mapping[str, Any], token: Any) -> str | None:
        """Why ``token`` does not authorise ``op`` on ``fields`` (None: it does)."""
        if not isinstance(token, Mapping):
            return "no credential"
        try:
            ts, nonce, mac = int(token["ts"]), str(token["nonce"]), str(token["mac"])
        except (KeyError, TypeError, ValueError):
            return "a malformed credential"
        if not hmac.compare_digest(mac, _mac(self.key, op, fields, ts, nonce)):
            return (
                "a wrong credential (not made with this deployment's key, or for another request)"
            )
        return self._fresh_once(ts, f"{op}:{nonce}")

    def check_goal(self, goal: Any, uuid: bytes) -> str | None:
        """Why a goal with this UUID is not authorised (None: it is)."""
        uuid = bytes(uuid)
        if len(uuid) != 16:
            return "a malformed goal id"
        ts, nonce = struct.unpack(">I", uuid[:4])[0], uuid[4:8].hex()
        mac = _mac(self.key, "goal", goal_fields(goal), ts, nonce)
        if not hmac.compare_digest(uuid[8:], bytes.fromhex(mac)[:8]):
            return "no valid credential in its goal id (sign it: captain ros goal --key-file)"
        return self._fresh_once(ts, f"goal:{nonce}")
