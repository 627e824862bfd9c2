"""The robot API, declared once.

Every capability the policy can call as ``robot.<name>(...)`` is declared here exactly once: its
parameters (name, kind, default, doc with units), its docstring, its group, whether it is a
physical action that counts against the action budget, and whether it takes the optional ``arm``.
The sandbox ``robot`` client (:mod:`captain_ros.api.client`), the API section of TASK.md
(:mod:`captain_ros.api.taskmd`) and the argument validation of
:class:`~captain_ros.api.service.RobotService` are all generated from these declarations (their
types, also importable from here: :mod:`captain_ros.api.capability`). This module is pure data:
it imports nothing heavy, so the sandbox child can import it.
"""

from __future__ import annotations

from typing import Any

# the capability types, also importable from here (GROUPS and KINDS are used by importers)
from captain_ros.api.capability import GROUPS, KINDS, REQUIRED, Capability, Param  # noqa: F401

_ARM = Param(
    "arm",
    "arm",
    None,
    "arm name ('arm' on one-arm rigs, 'left'/'right' on the dual rig); "
    "None = nearest arm to the target unless the other arm holds an object",
    nullable=True,
)
_POS = Param(
    "position", "position", REQUIRED, "tool-centre-point position [x, y, z] in metres, world frame"
)
_ORI = Param(
    "orientation",
    "quat",
    None,
    "tool orientation quaternion [w, x, y, z]; None keeps the current one",
    nullable=True,
)
_HANDLE = Param(
    "handle", "str", None, "observation handle 'obs_<n>'; None = latest observation", nullable=True
)
_CAMERA = Param("camera", "str", "head", "camera name, e.g. 'head' or 'wrist'")
_OBJ = Param("obj", "obj", REQUIRED, "detection id 'det_<n>' (or the detection dict)")

CAPABILITIES: tuple[Capability, ...] = (
    # --- perception ----------------------------------------------------------------------------
    Capability(
        "observe",
        "perception",
        "Capture RGB-D images from the head and wrist cameras and return an observation handle.",
        (Param("cameras", "str_list", None, "camera names; None = all cameras", nullable=True),),
        False,
        "perception",
        "{handle, cameras, stamp_s [s], robot}",
    ),
    Capability(
        "segment",
        "perception",
        "Find objects matching a text prompt (text-prompted masks) and return metric detections.",
        (Param("text", "str", REQUIRED, "what to find, e.g. 'red block'"), _HANDLE, _CAMERA),
        False,
        "perception",
        "{detections: [{id, label, score, centroid_m, extents_m [m], pixel_uv, area_px, handle, camera}]}",
    ),
    Capability(
        "point",
        "perception",
        "Point at image locations matching a text prompt (pixel coordinates only).",
        (Param("text", "str", REQUIRED, "what to point at"), _HANDLE, _CAMERA),
        False,
        "perception",
        "{points: [{u, v, label}]} in pixels",
    ),
    Capability(
        "mark_point",
        "perception",
        "Back-project a pixel you chose into a metric detection (segments the object there).",
        (
            Param("handle", "str", REQUIRED, "observation handle 'obs_<n>'"),
            Param("camera", "str", REQUIRED, "camera name"),
            Param("u", "float", REQUIRED, "pixel column [px]"),
            Param("v", "float", REQUIRED, "pixel row [px]"),
            Param("label", "str", "", "your label for this detection"),
            Param(
                "granularity",
                "str",
                "object",
                "segment the whole object or just the point",
                choices=("object", "part", "point"),
            ),
        ),
        False,
        "perception",
        "one detection",
    ),
    Capability(
        "select_detection",
        "perception",
        "Pick one detection out of several by a rule.",
        (
            Param("detection_ids", "str_list", REQUIRED, "detection ids to choose from"),
            Param(
                "by",
                "str",
                "score",
                "selection rule",
                choices=(
                    "score",
                    "largest",
                    "nearest",
                    "leftmost",
                    "rightmost",
                    "highest",
                    "lowest",
                ),
            ),
        ),
        False,
        "perception",
        "one detection",
    ),
    Capability(
        "track_target",
        "perception",
        "Re-identify a detected object in a newer observation (observes first if handle is None).",
        (Param("detection_id", "obj", REQUIRED, "detection id to track"), _HANDLE),
        False,
        "perception",
        "the same object as a new detection",
    ),
    # --- measurement ---------------------------------------------------------------------------
    Capability(
        "measure_object_geometry",
        "measurement",
        "Measure an object's centre, extents and yaw, and its offset to a destination. "
        "These measurements are what finish() is checked against.",
        (
            _OBJ,
            Param("destination", "obj", None, "destination detection id", nullable=True),
            Param("shape", "str", "auto", "shape model", choices=("auto", "box", "cylinder")),
        ),
        False,
        "perception",
        "{object_id, center_m, extents_m, yaw_rad, shape, radius_m, footprint_m, top_z_m, resting, "
        "destination: {id, center_m, top_z_m, offset_xy_m, distance_xy_m} | None}",
    ),
    Capability(
        "measure_image_points",
        "measurement",
        "Back-project pixels to 3-D points in the world frame.",
        (
            Param("handle", "str", REQUIRED, "observation handle"),
            Param("camera", "str", REQUIRED, "camera name"),
            Param("points", "points", REQUIRED, "pixels [[u, v], ...]"),
        ),
        False,
        "perception",
        "{points_m: [[x, y, z] | None, ...]} [m]",
    ),
    Capability(
        "inspect_contact_geometry",
        "measurement",
        "Check whether both gripper pads would contact an object at a tool pose (read-only).",
        (
            _OBJ,
            _POS,
            _ORI,
            Param(
                "jaw_opening_m",
                "float",
                None,
                "jaw opening to check [m]; None = current",
                nullable=True,
            ),
            _ARM,
        ),
        False,
        "perception",
        "{both_pads_contact, clearance_per_pad_m, ...}",
    ),
    Capability(
        "inspect_release_geometry",
        "measurement",
        "Check whether the held object is above the destination support and the expected drop.",
        (Param("destination", "obj", REQUIRED, "destination detection id"), _ARM),
        False,
        "perception",
        "{above_support, expected_drop_m, offset_xy_m}",
    ),
    Capability(
        "compare_object_observations",
        "measurement",
        "Compare the same object between two detections.",
        (
            Param("before_id", "obj", REQUIRED, "earlier detection id"),
            Param("after_id", "obj", REQUIRED, "later detection id"),
        ),
        False,
        "perception",
        "{displacement_m, displacement_xyz_m, yaw_change_rad}",
    ),
    # --- motion --------------------------------------------------------------------------------
    Capability(
        "move_to",
        "motion",
        "Move the tool in a straight Cartesian sweep to an absolute pose, OR command the jaw "
        "(never both). Guarded mode stops at first contact above 5 N; manipulation mode "
        "tolerates load up to force_limit_n; the 80 N emergency limit is always on. On the dual "
        "rig, arm='both' moves both arms together with position={'left': [x, y, z], "
        "'right': [x, y, z]} (and optionally orientation as such a dict).",
        (
            Param(
                "position",
                "position",
                None,
                "target tool position [x, y, z] in metres",
                nullable=True,
            ),
            _ORI,
            Param(
                "jaw",
                "jaw",
                None,
                "jaw opening [m] or 'open' / 'close' (alone, without a pose)",
                nullable=True,
            ),
            _ARM,
            Param("speed_m_s", "pos_float", 0.05, "Cartesian speed [m/s]"),
            Param(
                "duration_s", "pos_float", None, "move duration [s]; overrides speed", nullable=True
            ),
            Param(
                "mode", "str", "guarded", "contact handling", choices=("guarded", "manipulation")
            ),
            Param(
                "force_limit_n",
                "pos_float",
                None,
                "load tolerated in manipulation mode [N]; default 40",
                nullable=True,
            ),
        ),
        True,
        "motion",
        "{stop_reason, executed_distance_m, peak_force_n, jaw_before_m, jaw_after_m, ...}",
    ),
    Capability(
        "hold",
        "motion",
        "Hold the current pose for a while (let things settle).",
        (Param("duration_s", "pos_float", 1.0, "how long [s]"), _ARM),
        True,
        "motion",
        "{duration_s, peak_force_n}",
    ),
    Capability(
        "recover",
        "motion",
        "Back out along the last executed trajectory by a bounded distance (works in contact).",
        (Param("distance_m", "pos_float", 0.05, "how far to reverse [m]"), _ARM),
        True,
        "motion",
        "{executed_distance_m, stop_reason}",
    ),
    Capability(
        "release",
        "motion",
        "Open the jaw to release a held object; reports whether it was released.",
        (_ARM,),
        True,
        "motion",
        "{released, jaw_before_m, jaw_after_m}",
    ),
    # --- planning (read-only) ------------------------------------------------------------------
    Capability(
        "check_motion",
        "planning",
        "Check (without moving) whether a tool pose is reachable and collision-free.",
        (_POS, _ORI, _ARM),
        False,
        "motion",
        "{reachable, ik_residual_m, verdict, predicted_duration_s}",
    ),
    Capability(
        "preview_motion",
        "planning",
        "Plan (without moving) the straight sweep to a pose: waypoints, joint path, duration, clearance.",
        (_POS, _ORI, _ARM, Param("speed_m_s", "pos_float", 0.05, "Cartesian speed [m/s]")),
        False,
        "motion",
        "{waypoints_m, joint_path_rad, duration_s, min_clearance_m}",
    ),
    # --- state ---------------------------------------------------------------------------------
    Capability(
        "get_robot_state",
        "state",
        "Tool pose, joint positions, jaw opening and contact force of an arm.",
        (_ARM,),
        False,
        "perception",
        "{tcp_position_m, tcp_quat_wxyz, joints_rad, jaw_opening_m, force_n}",
    ),
    Capability(
        "gripper_state",
        "state",
        "Jaw opening [m], commanded opening [m], grip force [N] and whether an object is held.",
        (_ARM,),
        False,
        "perception",
        "{opening_m, command_m, force_n, holding}",
    ),
    Capability(
        "robot_geometry",
        "state",
        "Static rig description: arms, base poses, reach, jaw range, pad size, cameras, workspace bounds.",
        (),
        False,
        "perception",
        "{arms: [...], cameras, workspace_min_m, workspace_max_m}",
    ),
    Capability(
        "read_motion_trajectory",
        "state",
        "Samples of the last executed motion: time, tool position, jaw opening, force.",
        (_ARM, Param("last_n", "int", 50, "number of most recent samples")),
        False,
        "motion",
        "{samples: [{t_s, position_m, jaw_m, force_n}]}",
    ),
    Capability(
        "transform_pose",
        "state",
        "Express a pose given in one frame in another frame (world, arm bases, tool, cameras).",
        (
            _POS,
            _ORI,
            Param("from_frame", "str", "world", "frame the pose is given in"),
            Param("to_frame", "str", "world", "frame to express it in"),
        ),
        False,
        "perception",
        "{position_m, quat_wxyz, frame}",
    ),
    # --- completion ----------------------------------------------------------------------------
    Capability(
        "finish",
        "completion",
        "Declare the task complete. The completion gate checks your own recorded "
        "measure_object_geometry results against the tolerances in TASK.md; it may reject "
        "twice with a reason, the third call is accepted.",
        (Param("summary", "str", "", "one line on what you achieved"),),
        False,
        "harness",
        "{accepted, reason, rejections}",
    ),
)

CAPABILITY_BY_NAME: dict[str, Capability] = {c.name: c for c in CAPABILITIES}
PHYSICAL: frozenset[str] = frozenset(c.name for c in CAPABILITIES if c.physical)


def get(name: str) -> Capability:
    """The capability called ``name``; raises UnknownNameError listing valid names."""
    try:
        return CAPABILITY_BY_NAME[name]
    except KeyError:
        from captain_ros.core.errors import UnknownNameError

        raise UnknownNameError("capability", name, sorted(CAPABILITY_BY_NAME)) from None


def to_wire() -> list[dict[str, Any]]:
    """Plain-data form of the registry (what the sandbox child builds its client from)."""
    out = []
    for c in CAPABILITIES:
        out.append(
            {
                "name": c.name,
                "group": c.group,
                "doc": c.doc,
                "physical": c.physical,
                "returns": c.returns,
                "params": [
                    {
                        "name": p.name,
                        "required": p.required,
                        "default": None if p.required else p.default,
                        "doc": p.doc,
                    }
                    for p in c.params
                ],
            }
        )
    return out
