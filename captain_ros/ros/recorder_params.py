"""The recorder node's parameters and the topics an episode's bag holds
(:mod:`captain_ros.ros.recorder_node`)."""

from __future__ import annotations

from captain_ros.ros.params import Param

EVENTS_TOPIC = "/captain/episode_events"
EPISODE_TOPICS = (
    "/captain/receipts,/captain/episode_events,/captain/observations,/captain/privileged,"
    "/captain/trajectory,/captain/joint_commands,/captain/detections,/captain/estop/state,/captain/wrench/*,/joint_states,/tf,"
    "/tf_static,/camera/*/image_raw,/camera/*/depth/image_raw,/camera/*/camera_info"
)
PARAMS = (
    Param("output_dir", "runs/bags", "Directory that receives one bag per episode."),
    Param("topics", EPISODE_TOPICS, "Comma-separated topic patterns (fnmatch) to record."),
    Param(
        "flush_period_s",
        0.5,
        "Flush (close chunk + fsync) period [s]: with hold_s, what a crash can lose.",
        0.05,
        60.0,
    ),
    Param("discovery_period_s", 0.25, "Period of the topic discovery scan [s].", 0.05, 10.0),
    Param(
        "discovery_settle_s",
        2.0,
        "Not ready before this long after start [s]: a fresh "
        "process has not yet discovered every publisher, so 'matched to all it knows' would be "
        "true of topics it has not seen (a respawned recorder lost a stream's first message); "
        "the same after a new robot process is heard.",
        0.0,
        60.0,
    ),
    Param(
        "close_grace_s",
        10.0,
        "Longest wait after 'end' for the messages the nodes published in "
        "the episode [s]; past it the bag closes marked incomplete.",
        0.0,
        120.0,
    ),
    Param(
        "hold_s",
        0.3,
        "A message is written once this much older than now [s] (its episode's "
        "end may be announced after it was published); a crash loses at most this plus the "
        "flush period.",
        0.0,
        10.0,
    ),
    Param(
        "buffer_s",
        30.0,
        "How long messages are kept for an episode whose start event arrives after them [s].",
        1.0,
        600.0,
    ),
)
