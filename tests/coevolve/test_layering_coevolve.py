"""CoEvolve and the humanoid backend are ROS-free and torch-free (rclpy only under ros/ and research/ros/)."""

import subprocess
import sys

MODULES = [
    "captain_ros.research.coevolve",
    "captain_ros.research.coevolve.loop",
    "captain_ros.research.coevolve.roles.model",
    "captain_ros.research.coevolve.evaluate",
    "captain_ros.research.coevolve.report",
    "captain_ros.backends.humanoid.sim",
    "captain_ros.backends.humanoid.remote",
    "captain_ros.research.coevolve.cli",
]


def test_coevolve_imports_without_rclpy_and_torch():
    code = (
        "import importlib, sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('rclpy', 'torch', 'transformers'):\n"
        "            raise ImportError(name + ' is blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        f"for m in {MODULES!r}:\n"
        "    importlib.import_module(m)\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
