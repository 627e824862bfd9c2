"""rosbag2 (MCAP) bags without the ROS bag tools and without rclpy: write, flush, recover, read.

Used by the ROS recorder node, the in-process episode bag of ``captain run`` and the dataset
builder alike, so one reader serves every bag the project writes.
"""

from captain_ros.bags.rosbag2 import (
    BagSummary,
    BagWriter,
    make_typestore,
    qos,
    read_messages,
    recover_bag,
    summarize_bag,
)

__all__ = [
    "BagSummary",
    "BagWriter",
    "make_typestore",
    "qos",
    "read_messages",
    "recover_bag",
    "summarize_bag",
]
