"""Foxglove layouts for the topics the recorder writes (Foxglove opens rosbag2 MCAP directly).

:func:`layout` builds one for a rig's arms, joints and cameras: the TF tree in 3D (``/tf``,
``/tf_static``), each camera's image with its calibration, joint positions and jaw openings
(``/joint_states``), each arm's contact force (``/captain/wrench/<arm>``), the request index of
every robot call and the receipts themselves (``/captain/receipts``), and the episode events.
Plots use the header stamps (the times the bags are ordered by). The package ships the layout of
the default single-arm rig (``data/foxglove/captain.json``, :func:`shipped_layout`);
``captain bag layout BAG`` writes one for the rig a bag recorded (e.g. the dual PiPER).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from captain_ros.data import data_path

SHIPPED = ("foxglove", "captain.json")
DEFAULT_ARMS = {"arm": ["joint1", "joint2", "joint3", "joint4", "joint5", "joint6"]}
DEFAULT_CAMERAS = ["head", "wrist"]


def _plot(title: str, paths: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "title": title,
        "paths": [
            {"value": v, "enabled": True, "timestampMethod": "headerStamp", "label": label}
            for v, label in paths
        ],
        "showXAxisLabels": True,
        "showYAxisLabels": True,
        "showLegend": True,
        "legendDisplay": "floating",
        "showPlotValuesInLegend": True,
        "isSynced": True,
        "xAxisVal": "timestamp",
        "sidebarDimension": 240,
    }


def _split(panels: list[Any], direction: str) -> Any:
    """A Foxglove mosaic of ``panels`` side by side (``row``) or stacked (``column``), evenly."""
    if len(panels) == 1:
        return panels[0]
    return {
        "first": panels[0],
        "second": _split(panels[1:], direction),
        "direction": direction,
        "splitPercentage": round(100 / len(panels), 1),
    }


def layout(arms: dict[str, list[str]], cameras: list[str]) -> dict[str, Any]:
    """The layout of a rig: ``arms`` maps each arm to its joints in ``/joint_states`` order
    (each arm's jaw opening follows all arms' joints, as the nodes publish them)."""
    configs: dict[str, Any] = {
        "3D!captain_tf": {
            "followMode": "follow-pose",
            "followTf": "world",
            "scene": {},
            "transforms": {},
            "topics": {"/tf": {"visible": True}, "/tf_static": {"visible": True}},
            "publish": {},
            "layers": {
                "grid": {
                    "layerId": "foxglove.Grid",
                    "instanceId": "grid",
                    "visible": True,
                    "frameLocked": True,
                    "label": "Grid",
                    "size": 2,
                    "divisions": 20,
                    "lineWidth": 1,
                    "color": "#248eff",
                    "position": [0, 0, 0],
                    "rotation": [0, 0, 0],
                }
            },
        }
    }
    for cam in cameras:
        configs[f"Image!captain_{cam}"] = {
            "imageMode": {
                "imageTopic": f"/camera/{cam}/image_raw",
                "calibrationTopic": f"/camera/{cam}/camera_info",
            },
            "cameraState": {},
            "followMode": "follow-pose",
            "scene": {},
            "transforms": {},
            "topics": {},
            "layers": {},
            "publish": {},
        }
    joints = [j for js in arms.values() for j in js]
    configs["Plot!captain_joints"] = _plot(
        "Joint positions [rad]", [(f"/joint_states.position[{i}]", j) for i, j in enumerate(joints)]
    )
    configs["Plot!captain_gripper"] = _plot(
        "Jaw opening [m]",
        [
            (f"/joint_states.position[{len(joints) + k}]", f"{a}_jaw_opening_m")
            for k, a in enumerate(arms)
        ],
    )
    configs["Plot!captain_wrench"] = _plot(
        "Contact force along tool z [N]", [(f"/captain/wrench/{a}.wrench.force.z", a) for a in arms]
    )
    configs["Plot!captain_requests"] = _plot(
        "Request of each robot call",
        [("/captain/receipts.request_index", "request"), ("/captain/receipts.call_index", "call")],
    )
    raw = {
        "diffEnabled": False,
        "diffMethod": "custom",
        "diffTopicPath": "",
        "showFullMessageForDiff": False,
    }
    configs["RawMessages!captain_receipts"] = {**raw, "topicPath": "/captain/receipts"}
    configs["RawMessages!captain_events"] = {**raw, "topicPath": "/captain/episode_events"}
    images = [f"Image!captain_{c}" for c in cameras]
    plots = [
        "Plot!captain_joints",
        "Plot!captain_gripper",
        "Plot!captain_wrench",
        "Plot!captain_requests",
    ]
    right = _split(
        [_split(images, "row"), _split(plots, "row")] if images else [_split(plots, "row")],
        "column",
    )
    tree = {
        "first": {
            "first": "3D!captain_tf",
            "second": {
                "first": "RawMessages!captain_receipts",
                "second": "RawMessages!captain_events",
                "direction": "column",
                "splitPercentage": 70,
            },
            "direction": "column",
            "splitPercentage": 55,
        },
        "second": right,
        "direction": "row",
        "splitPercentage": 30,
    }
    return {
        "configById": configs,
        "globalVariables": {},
        "userNodes": {},
        "linkedGlobalVariables": [],
        "playbackConfig": {"speed": 1},
        "layout": tree,
    }


def topics_of(doc: dict[str, Any]) -> set[str]:
    """Every topic a layout reads (what a bag must hold for each panel to show something)."""
    out = set()
    for cfg in doc["configById"].values():
        out |= set(cfg.get("topics", {}))
        mode = cfg.get("imageMode", {})
        out |= {mode[k] for k in ("imageTopic", "calibrationTopic") if k in mode}
        if "topicPath" in cfg:
            out.add(cfg["topicPath"])
        for p in cfg.get("paths", []):
            out.add(p["value"].split(".", 1)[0])
    return out


def shipped_layout() -> Path:
    """The packaged layout of the default rig."""
    return data_path(*SHIPPED)


def rig_of_bag(bag: str | Path) -> tuple[dict[str, list[str]], list[str]]:
    """The arms (with their joints) and cameras a bag recorded."""
    from captain_ros.bags.lerobot.episode import IMAGE_TOPIC, JAW_SUFFIX, JOINT_TOPIC
    from captain_ros.bags.rosbag2 import read_messages, summarize_bag

    topics = summarize_bag(bag).msgtypes
    cameras = sorted(m.group(1) for t in topics if (m := IMAGE_TOPIC.match(t)))
    names: list[str] = next((list(m.name) for _, _, m in read_messages(bag, [JOINT_TOPIC])), [])
    arms = [n[: -len(JAW_SUFFIX)] for n in names if n.endswith(JAW_SUFFIX)]
    joints = [n for n in names if not n.endswith(JAW_SUFFIX)]
    per = len(joints) // max(1, len(arms))
    return {a: joints[k * per : (k + 1) * per] for k, a in enumerate(arms)}, cameras


def write(doc: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")
