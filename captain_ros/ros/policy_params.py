"""The policy node's parameters and waits (:mod:`captain_ros.ros.policy_node`)."""

from __future__ import annotations

from captain_ros.harness.episode.profiles import PROFILES
from captain_ros.ros.params import Param

HARDWARE_TRUTH_WAIT_S = 2.0
"""How long a goal on a hardware backend looks for an emulated rig's ``privileged_state`` [s] (the
robot node's parameter services, discovered with it, were found already)."""

ROBOT_HEARTBEAT_WAIT_S = 5.0
"""How long a goal waits to hear the robot process's heartbeat once its parameter services
answered [s]: a respawned robot answers before this node's liveliness reader has its instance."""

PARAMS = (
    Param(
        "policy",
        "scripted",
        "Default policy when a goal leaves it empty (scripted | openai | "
        "transformers | replay:FILE).",
    ),
    Param(
        "model_folder",
        "",
        "Student folder of the transformers policy (empty: the packaged SmolLM2).",
    ),
    Param(
        "engine",
        "auto",
        "Inference engine of the transformers policy (auto | llamacpp | "
        "transformers; docs/engines.md).",
        choices=("auto", "llamacpp", "transformers"),
    ),
    Param(
        "profile",
        "auto",
        "Prompt profile (default | compact | helpers | student; auto: the one "
        "the student in model_folder was trained with, else default).",
        choices=("auto", *PROFILES),
    ),
    Param("output_root", "runs/ros", "Folder of episode folders when a goal gives no output_dir."),
    Param(
        "allowed_root",
        "",
        "Folder that a goal's output_dir and a goal's replay:FILE must lie "
        "under (symlinks resolved); '' = output_root.",
    ),
    Param(
        "key_file",
        "",
        "Secured graph: the deployment's key file (0600). Goals must then carry "
        "its credential (captain ros goal --key-file), and this node signs its robot calls, "
        "scene loads and snapshots ('' = open graph; docs/ros.md).",
    ),
    Param(
        "overwrite_output",
        False,
        "Replace a non-empty episode folder instead of refusing the goal.",
    ),
    Param("call_timeout_s", 120.0, "Longest wait for one robot call [s].", 1.0, 3600.0),
    Param(
        "expect_recorder",
        False,
        "A recorder is part of the graph (set by the launch file): the "
        "first goal waits for it to be discovered instead of reporting no bag.",
    ),
    Param(
        "bag_wait_s",
        15.0,
        "Longest wait for the recorder to close the episode's bag [s] "
        "(longer than the recorder's close_grace_s).",
        0.0,
        120.0,
    ),
)
