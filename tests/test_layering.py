"""The core layers import neither torch nor rclpy (ROS-free, torch-free core)."""

import subprocess
import sys

CORE = ["captain_ros.core", "captain_ros.backends", "captain_ros.api", "captain_ros.harness",
        "captain_ros.motion", "captain_ros.perception", "captain_ros.tasks", "captain_ros.policy"]


def _probe(blocked: list[str]) -> subprocess.CompletedProcess:
    code = (
        "import importlib, importlib.util, sys\n"
        f"blocked = {blocked!r}\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in blocked:\n"
        "            raise ImportError(f'{name} is blocked for this test')\n"
        "sys.meta_path.insert(0, Block())\n"
        f"for mod in {CORE!r}:\n"
        "    if importlib.util.find_spec(mod) is not None:\n"
        "        importlib.import_module(mod)\n"
        "leaked = [m for m in sys.modules if m.split('.')[0] in blocked]\n"
        "assert not leaked, leaked\n"
        "print('ok')\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_core_imports_without_torch_and_rclpy():
    proc = _probe(["torch", "rclpy", "transformers"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith("ok")
