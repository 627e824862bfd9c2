"""A privileged source over an in-process simulation backend: :class:`BackendPrivileged`.

The episode's :class:`~captain_ros.harness.record.privileged_log.PrivilegedRecorder` reads the
ground truth through it before every request; its snapshots stay in memory, keyed by handle, so
decision points can be restored while the backend lives.
"""

from __future__ import annotations

from typing import Any

from captain_ros.core.errors import NotSupportedError
from captain_ros.core.privileged import PrivilegedState


class BackendPrivileged:
    """Privileged source over an in-process simulation backend; snapshots stay in memory, keyed
    by handle (``<n>``), for restoring decision points while the backend lives."""

    def __init__(self, backend: Any, keep: int = 256) -> None:
        self.backend = backend
        self.keep = keep
        self.snapshots: dict[str, Any] = {}
        self._n = 0

    def state(self) -> PrivilegedState:
        return self.backend.privileged_state()

    def snapshot(self) -> str | None:
        try:
            snap = self.backend.snapshot()
        except NotSupportedError:
            return None
        self._n += 1
        handle = f"snap_{self._n:04d}"
        self.snapshots[handle] = snap
        while len(self.snapshots) > self.keep:  # oldest first
            self.snapshots.pop(next(iter(self.snapshots)))
        return handle
