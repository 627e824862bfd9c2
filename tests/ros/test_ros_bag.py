"""rosbag2 MCAP bags: custom Receipt messages written, read back, QoS kept, crash recovery."""

import subprocess
import sys
import textwrap

from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

from captain_ros.bags.rosbag2 import BagWriter, qos, read_messages, recover_bag, summarize_bag
from captain_ros.core import Result
from captain_ros.ros import convert

RECEIPT = "captain_ros_interfaces/msg/Receipt"


def _receipt(i: int):
    return convert.result_to_receipt(
        Result.ok(f"call {i}", {"i": i}, receipt=f"r{i}"), "observe", episode_id="ep", call_index=i
    )


def test_write_and_read_back(tmp_path):
    bag = BagWriter(tmp_path / "bag")
    bag.add_topic("/captain/receipts", RECEIPT, [qos(100, transient_local=False)])
    bag.add_topic("/joint_states", "sensor_msgs/msg/JointState", [qos(10, reliable=False)])
    for i in range(3):
        bag.write("/captain/receipts", 1_000 + i, serialize_message(_receipt(i)))
    js = JointState(name=["j1"], position=[0.5])
    bag.write("/joint_states", 1_500, serialize_message(js))
    bag.close()
    s = summarize_bag(tmp_path / "bag")
    assert s.counts == {"/captain/receipts": 3, "/joint_states": 1}
    assert s.msgtypes["/captain/receipts"] == RECEIPT
    assert s.qos["/captain/receipts"][0].depth == 100
    assert s.qos["/joint_states"][0].reliability.name == "BEST_EFFORT"
    msgs = list(read_messages(tmp_path / "bag", ["/captain/receipts"]))
    assert [m.receipt for _, _, m in msgs] == ["r0", "r1", "r2"]
    assert [convert.receipt_to_result(m).value for _, _, m in msgs] == [
        {"i": 0},
        {"i": 1},
        {"i": 2},
    ]
    assert (tmp_path / "bag" / "metadata.yaml").exists()


def test_rclpy_deserializes_bag_payload(tmp_path):
    """The bytes in the bag are the CDR that rclpy itself reads (same type on both sides)."""
    from captain_ros_interfaces.msg import Receipt
    from rosbags.rosbag2 import Reader

    bag = BagWriter(tmp_path / "b")
    bag.add_topic("/captain/receipts", RECEIPT)
    bag.write("/captain/receipts", 1, serialize_message(_receipt(7)))
    bag.close()
    with Reader(tmp_path / "b") as r:
        ((_, _, raw),) = list(r.messages())
    assert deserialize_message(bytes(raw), Receipt).value_json == '{"i":7}'


def test_crash_after_flush_keeps_flushed_messages(tmp_path):
    code = textwrap.dedent(f"""
        import os
        from rclpy.serialization import serialize_message
        from captain_ros.core import Result
        from captain_ros.ros import convert
        from captain_ros.bags.rosbag2 import BagWriter
        bag = BagWriter({str(tmp_path / "crash")!r})
        bag.add_topic("/captain/receipts", {RECEIPT!r})
        for i in range(4):
            m = convert.result_to_receipt(Result.ok("x", i), "hold", call_index=i)
            bag.write("/captain/receipts", 10 + i, serialize_message(m))
        bag.flush()
        bag.write("/captain/receipts", 99, serialize_message(m))  # never flushed
        os._exit(3)  # crash: no close, no metadata.yaml
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert not (tmp_path / "crash" / "metadata.yaml").exists()
    recover_bag(tmp_path / "crash")
    assert summarize_bag(tmp_path / "crash").counts == {"/captain/receipts": 4}
    calls = [m.call_index for _, _, m in read_messages(tmp_path / "crash")]
    assert calls == [0, 1, 2, 3]
