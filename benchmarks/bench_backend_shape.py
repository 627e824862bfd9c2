"""Behaviour and hot-path cost of the simulator backends, to compare two commits (the backend
registry refactor: benchmarks/results/backend_registry.md).

For MuJoCo, the kinematic fake and robosuite it runs the same five guarded motions (above the
first object, open, descend, close, lift) through ``make_backend`` and ``MotionService`` and
prints every receipt and a digest of the final joint and object positions (12 decimals): two
commits with the same output behave the same. ``--timing`` adds the per-call time of the MuJoCo
planning kinematics (``fk_matrix``, ``jacobian``: the IK hot path; best of 5 x 2000 calls).

    PYTHONPATH=<tree> python benchmarks/bench_backend_shape.py [--timing]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time

import numpy as np

from captain_ros.backends import make_backend
from captain_ros.motion.service import MotionService
from captain_ros.tasks import get_task

CASES = (("mujoco", "pick_place"), ("fake", "pick_place"), ("robosuite", "lift"))


def motions(backend_name: str, task: str) -> dict[str, object]:
    scene = get_task(task, backend_name).sample(3)
    opts = {} if backend_name == "fake" else {"image_size_px": 64}
    with make_backend(backend_name, scene, **opts) as b:
        m = MotionService(b)
        name = next(iter(b.privileged_state().objects))
        c = b.privileged_state().object(name).position_m.copy()
        down = [0, 1, 0, 0] if backend_name == "robosuite" else [0, 0, 1, 0]
        receipts = [
            m.move_to([c[0], c[1], c[2] + 0.10], down).receipt,
            m.move_to(jaw="open").receipt,
            m.move_to([c[0], c[1], c[2] + 0.005], down, speed_m_s=0.05).receipt,
            m.move_to(jaw="close").receipt,
            m.move_to([c[0], c[1], c[2] + 0.15], down).receipt,
        ]
        q = np.concatenate([b.joint_state(a).position_rad for a in b.spec.arm_names])
        obj = b.privileged_state().object(name).position_m
        digest = hashlib.sha1(np.round(q, 12).tobytes() + repr(obj.round(12)).encode())
        return {"backend": backend_name, "digest": digest.hexdigest()[:12], "receipts": receipts}


def kinematics_us() -> dict[str, float]:
    with make_backend("mujoco", get_task("pick_place").sample(3), image_size_px=64) as b:
        k = b.kinematics("arm")
        rng = np.random.default_rng(0)
        qs = [b.joint_state("arm").position_rad + rng.normal(0, 0.1, 6) for _ in range(2000)]
        out = {}
        for label, fn in (("fk_matrix_us", k.fk_matrix), ("jacobian_us", k.jacobian)):
            best = float("inf")
            for _ in range(5):
                t0 = time.perf_counter()
                for q in qs:
                    fn(q)
                best = min(best, (time.perf_counter() - t0) / len(qs))
            out[label] = round(best * 1e6, 2)
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timing", action="store_true", help="also time the planning kinematics")
    ns = ap.parse_args()
    for backend_name, task in CASES:
        print(json.dumps(motions(backend_name, task)))
    if ns.timing:
        print(json.dumps(kinematics_us()))


if __name__ == "__main__":
    main()
