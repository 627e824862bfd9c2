"""QoS profiles shared by the graph's servers and their clients.

:data:`FEEDBACK_QOS`: ``RunEpisode`` feedback carries every receipt of an episode, so its
publisher and every subscriber keep a deep reliable queue (rclpy's default for action feedback is
``KEEP_LAST`` 10: a client busy for a moment lost a receipt). A subscriber that uses a shallower
profile still matches but may lose feedback when it falls behind.
"""

from __future__ import annotations

from rclpy.qos import QoSProfile

FEEDBACK_QOS = QoSProfile(depth=1000)
"""Reliable, volatile, keep-last 1,000: deeper than any episode's receipts."""
