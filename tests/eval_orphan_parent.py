"""A benchmark stand-in for the orphan-worker test: runs two long jobs in ``run_local`` workers.

``python eval_orphan_parent.py DIR`` starts two spawned workers; each writes its pid to
``DIR/pick_place/seed_0000N.pid`` and sleeps. The test kills this process and checks the workers end.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from captain_ros.evaluation.config import BackendConfig, EpisodeConfig, RecordingConfig
from captain_ros.evaluation.runner import make_jobs, run_local


def sleep_job(job: dict[str, Any]) -> dict[str, Any]:
    """Write this worker's pid next to the episode folder, then sleep far past the test."""
    Path(job["out_dir"]).parent.mkdir(parents=True, exist_ok=True)
    Path(job["out_dir"] + ".pid").write_text(str(os.getpid()))
    time.sleep(300.0)
    raise RuntimeError("the orphan-worker test should have killed this worker")


if __name__ == "__main__":
    jobs = make_jobs(
        ["pick_place"],
        [1, 2],
        sys.argv[1],
        EpisodeConfig(backend=BackendConfig("fake"), recording=RecordingConfig(report=False)),
    )
    run_local(jobs, workers=2, job_path="eval_orphan_parent:sleep_job")
