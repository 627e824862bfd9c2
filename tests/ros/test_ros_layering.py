"""Every module of the core packages imports with rclpy (and the ROS message packages) absent."""

import subprocess
import sys

CORE = [
    "captain_ros.core",
    "captain_ros.api",
    "captain_ros.harness",
    "captain_ros.motion",
    "captain_ros.perception",
    "captain_ros.tasks",
    "captain_ros.policy",
    "captain_ros.backends",
]
ROS_ONLY = [
    "rclpy",
    "rcl_interfaces",
    "std_msgs",
    "sensor_msgs",
    "geometry_msgs",
    "captain_ros_interfaces",
    "tf2_msgs",
    "builtin_interfaces",
]

PROBE = f"""
import importlib, pkgutil, sys
for name in {ROS_ONLY!r}:
    sys.modules[name] = None  # `import rclpy` now raises ImportError
imported = []
for pkg in {CORE!r}:
    mod = importlib.import_module(pkg)
    imported.append(pkg)
    for info in pkgutil.walk_packages(getattr(mod, "__path__", []), pkg + "."):
        if "transformers" in info.name:  # torch/transformers policy: heavy, ROS-free by lint
            continue
        importlib.import_module(info.name)
        imported.append(info.name)
print(len(imported))
"""


def test_core_packages_import_without_rclpy():
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert int(proc.stdout.strip().splitlines()[-1]) >= len(CORE)


def test_ros_layer_really_needs_rclpy():
    """The probe is not vacuous: the ROS layer fails to import when rclpy is blocked."""
    code = "import sys; sys.modules['rclpy'] = None\nimport captain_ros.ros.robot_node"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "rclpy" in proc.stderr


def test_the_node_processes_import_no_learning_or_statistics_stack() -> None:
    """The robot stack and the recorder stay light: the composition root once made the robot
    process import ``scipy.stats`` through the evaluation package (+44 MiB at start)."""
    heavy = ["scipy.stats", "torch", "transformers", "llama_cpp", "ray", "matplotlib", "pandas"]
    code = (
        "import sys\n"
        "import captain_ros.ros.robot_stack, captain_ros.ros.recorder_node\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]", proc.stdout
