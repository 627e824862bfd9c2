"""The robot API from plain Python, without a policy: pick the red cube, put it on the plate.

    .venv/bin/python examples/robot_api_plain_python.py --seed 3

The calls are the ones a policy writes in its cells (the same generated ``robot`` client), here
executed directly by the in-process RobotService: every call returns a Result (``success``,
``failure_category``, ``message``, ``value``) and a short receipt of what physically happened,
and never raises. Safety (workspace, joint, velocity and force limits) sits below the API.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from captain_ros.api import build_client
from captain_ros.api.client import RobotResult
from captain_ros.core.geometry import quat_multiply
from captain_ros.evaluation.episode import build_robot

POINTING_DOWN = np.array([0.0, 0.0, 1.0, 0.0])  # (w, x, y, z): the tool turned 180 deg about y


def top_down(yaw_rad: float) -> list[float]:
    """Tool pointing straight down, turned by ``yaw_rad`` about the world z axis."""
    turn = np.array([math.cos(yaw_rad / 2), 0.0, 0.0, math.sin(yaw_rad / 2)])
    return [float(v) for v in quat_multiply(turn, POINTING_DOWN)]


def show(result: RobotResult) -> RobotResult:
    """Print a call's receipt (or its failure) and hand the Result back."""
    print(result["receipt"] or f"FAILED {result['failure_category']}: {result['message']}")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=3, help="a training seed (0-999)")
    args = parser.parse_args()

    # The scene of task pick_place at this seed on the MuJoCo rig, with motion and perception.
    task, backend, service = build_robot("pick_place", args.seed, "mujoco")
    robot = build_client(lambda name, kwargs: service.call(name, kwargs).to_dict())
    try:
        show(robot.observe())  # RGB-D from the head and wrist cameras
        cube = show(robot.segment("red cube")).value["detections"][0]
        plate = show(robot.segment("plate")).value["detections"][0]
        m = show(robot.measure_object_geometry(cube["id"], destination=plate["id"])).value
        (x, y, z), top = m["center_m"], m["top_z_m"]

        # Plan before moving: a jaw orientation across the cube's faces that check_motion accepts
        # above the cube, and the lowest grasp height whose descent keeps the fingers off the table.
        grasp = None
        for k in range(4):
            q = top_down(m["yaw_rad"] + k * math.pi / 2)
            if not robot.check_motion(position=[x, y, top + 0.08], orientation=q).value["feasible"]:
                continue
            for dz in (0.0, 0.004, 0.008, 0.012):
                if robot.check_motion(position=[x, y, z + dz], orientation=q).value["feasible"]:
                    grasp = (q, z + dz)
                    break
            if grasp:
                break
        if grasp is None:
            print("no feasible top-down grasp for this seed")
            return 1
        q, grasp_z = grasp

        # Grasp: open, go above, descend guarded (stops at first contact > 5 N), close, lift.
        show(robot.move_to(jaw="open"))
        show(robot.move_to(position=[x, y, top + 0.08], orientation=q))
        show(robot.move_to(position=[x, y, grasp_z], speed_m_s=0.03))
        show(robot.move_to(jaw="close"))
        show(robot.move_to(position=[x, y, top + 0.10], mode="manipulation"))
        held = show(robot.gripper_state()).value["holding"]
        print(f"holding the cube: {held}")

        # Place: carry it above the plate, lower it to 5 mm above its resting height, release.
        px, py, _ = plate["centroid_m"]
        plate_top = robot.measure_object_geometry(plate["id"]).value["top_z_m"]
        rest_z = plate_top + (grasp_z - m["bottom_z_m"])  # tool height with the cube on the plate
        show(robot.move_to(position=[px, py, rest_z + 0.06], mode="manipulation"))
        show(robot.move_to(position=[px, py, rest_z + 0.005], mode="manipulation", speed_m_s=0.03))
        show(robot.release())
        show(robot.move_to(position=[px, py, rest_z + 0.08]))

        # Verify with a fresh observation: the cube's offset from the plate's centre.
        show(robot.observe())
        cube = show(robot.segment("red cube")).value["detections"][0]
        plate = show(robot.segment("plate")).value["detections"][0]
        after = show(robot.measure_object_geometry(cube["id"], destination=plate["id"])).value
        distance_m = after["destination"]["distance_xy_m"]
        print(
            f"measured: cube {100 * distance_m:.1f} cm from the plate centre "
            f"(tolerance {100 * task.tolerances['xy_m']:.1f} cm)"
        )
        # The simulator's ground truth (hidden from policies): the task predicate itself.
        success = task.success(backend.privileged_state())
        print(f"task success (privileged state): {success}")
        return 0 if success else 1
    finally:
        backend.close()


if __name__ == "__main__":
    raise SystemExit(main())
