"""One episode in this process: the scripted expert on the MuJoCo PiPER rig, no ROS.

    .venv/bin/python examples/episode_in_process.py --task pick_place --seed 3

The same path as ``captain run``: build the scene, the robot services and the policy, run the
harness loop (the policy writes Python cells against the robot API, every call returns a Result
and a receipt, ``finish()`` goes through the completion gate) and write the episode folder.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from captain_ros.evaluation.config import (
    BackendConfig,
    EpisodeConfig,
    PolicyConfig,
    RecordingConfig,
)
from captain_ros.evaluation.episode import run_one


def print_receipt(kind: str, data: dict[str, Any]) -> None:
    """Live progress: the harness calls this for every request, reply and robot call."""
    if kind == "request":
        print(f"request {data['t']}")
    elif kind == "receipt":
        print(f"  {data['capability']}: {data['receipt']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="pick_place")
    parser.add_argument("--seed", type=int, default=3, help="a training seed (0-999)")
    parser.add_argument("--out", default="runs/example_episode")
    args = parser.parse_args()

    config = EpisodeConfig(  # validated here: an unknown task or a negative seed is refused
        args.task,
        args.seed,
        args.out,
        policy=PolicyConfig("scripted"),  # or "scripted-faulty:...", "openai", "transformers"
        backend=BackendConfig("mujoco"),  # or "fake" (kinematic, no physics)
        recording=RecordingConfig(bag=True, report=True, overwrite=True),
    )
    record = run_one(config, on_event=print_receipt)
    # The one episode record (also in <out>/summary.json): the paper's outcome label, host
    # success (the task predicate on the simulator's state) and strict success (host success
    # and an accepted finish()), counts and the wall time split.
    print(json.dumps(record.to_dict(), indent=2))
    print(
        f"outcome {record.outcome}: strict success {record.strict_success} after "
        f"{record.requests} requests and {record.physical_actions} physical actions"
    )
    return 1 if record.outcome == "error" else 0


if __name__ == "__main__":
    raise SystemExit(main())
