"""A trivial episode job for checking that workers or a Ray cluster run jobs at all.

``captain eval --ray ADDRESS --check`` submits it: no simulator, no model, it only reports where
it ran, so a connectivity problem is told apart from an episode problem.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from captain_ros.harness.record.episode_record import EpisodeRecord


def echo_job(job: dict[str, Any]) -> dict[str, Any]:
    """Return a successful placeholder summary naming the host and process it ran in."""
    return EpisodeRecord(
        job["task"],
        int(job["seed"]),
        job["policy"],
        job["backend"],
        "success_with_finish",
        True,
        True,
        True,
        out_dir=job.get("out_dir", ""),
        extra=worker_identity(),
    ).to_dict()


def worker_identity() -> dict[str, Any]:
    """Where this job runs: ``ran_on`` (:func:`ran_on`), ``host`` and ``pid``."""
    return {"ran_on": ran_on(), "host": socket.gethostname(), "pid": os.getpid()}


def ran_on() -> str:
    """``"ray"`` in a Ray worker process, else ``"process"`` (the driver or a spawned worker)."""
    return "ray" if "RAY_RAYLET_PID" in os.environ or _in_ray_worker() else "process"


def _in_ray_worker() -> bool:
    try:
        import ray

        # a Ray task has a task id; the driver (which also has a worker id) has none
        return bool(ray.is_initialized() and ray.get_runtime_context().get_task_id())
    except Exception:  # noqa: BLE001 - ray absent or not a worker
        return False
