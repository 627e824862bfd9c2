"""What the recorder reads and how (captain_ros.ros.recorder_topics): its topic patterns, and each
topic's reader QoS from the profiles its publishers offer."""

from __future__ import annotations

import pytest
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosbags.interfaces import QosDurability, QosReliability

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.ros.estop import LATCHED_QOS
from captain_ros.ros.recorder_params import EPISODE_TOPICS, EVENTS_TOPIC
from captain_ros.ros.recorder_topics import TopicSelection, message_class, reader_qos

BEST_EFFORT = QoSProfile(depth=5, reliability=ReliabilityPolicy.BEST_EFFORT)


def test_the_selection_matches_the_patterns_less_the_events_topic() -> None:
    topics = TopicSelection(EPISODE_TOPICS, excluded=[EVENTS_TOPIC])
    assert "/captain/receipts" in topics and "/joint_states" in topics
    assert "/captain/wrench/arm" in topics and "/camera/head/image_raw" in topics
    assert EVENTS_TOPIC not in topics  # it has a subscription of its own
    assert "/tf_extra" not in topics and "/rosout" not in topics
    assert TopicSelection(" /a , ,/b/* ").patterns == ["/a", "/b/*"]
    assert "/b/x" in TopicSelection("/a,/b/*") and "/c" not in TopicSelection("/a,/b/*")


def test_a_reliable_volatile_topic_is_read_reliably_with_a_deep_queue() -> None:
    r = reader_qos("sensor_msgs/msg/JointState", [QoSProfile(depth=10)])
    assert (r.reliable, r.latched, r.depth) == (True, False, 1000)
    p = r.profile()
    assert p.reliability == ReliabilityPolicy.RELIABLE and p.durability == DurabilityPolicy.VOLATILE
    assert p.depth == 1000
    assert r.offered.depth == 1000 and r.offered.reliability == QosReliability.RELIABLE


def test_one_best_effort_publisher_makes_the_reader_best_effort() -> None:
    r = reader_qos("sensor_msgs/msg/Image", [QoSProfile(depth=10), BEST_EFFORT])
    assert not r.reliable and r.depth == 100  # images: a shallower floor
    assert r.profile().reliability == ReliabilityPolicy.BEST_EFFORT
    assert r.offered.reliability == QosReliability.BEST_EFFORT


def test_one_latched_publisher_makes_the_reader_transient_local() -> None:
    r = reader_qos("std_msgs/msg/String", [QoSProfile(depth=10), LATCHED_QOS])
    assert r.latched and r.profile().durability == DurabilityPolicy.TRANSIENT_LOCAL
    assert r.offered.durability == QosDurability.TRANSIENT_LOCAL


def test_a_deeper_publisher_queue_sets_the_depth() -> None:
    r = reader_qos("sensor_msgs/msg/PointCloud2", [QoSProfile(depth=5000)])
    assert r.depth == 5000 and r.profile().depth == 5000 and r.offered.depth == 5000


def test_no_publisher_is_a_clear_error_and_types_resolve() -> None:
    with pytest.raises(InvalidArgumentError, match="no publisher of the std_msgs/msg/String"):
        reader_qos("std_msgs/msg/String", [])
    from std_msgs.msg import String

    assert message_class("std_msgs/msg/String") is String
