"""The numpy parts of the learning layer import without torch (the harness side can use them)."""

import subprocess
import sys

TORCH_FREE = [
    "captain_ros.learn",
    "captain_ros.learn.episodes",
    "captain_ros.learn.credit",
    "captain_ros.research.re0",
    "captain_ros.learn.critic",
    "captain_ros.learn.critic.inputs",
    "captain_ros.learn.critic.metrics",
    "captain_ros.learn.critic.synthetic",
    "captain_ros.learn.rl",
    "captain_ros.learn.rl.samples",
]


def test_credit_re0_and_metrics_import_without_torch():
    code = (
        "import importlib, sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('torch', 'transformers', 'peft', 'trl'):\n"
        "            raise ImportError(f'{name} is blocked for this test')\n"
        "sys.meta_path.insert(0, Block())\n"
        f"for mod in {TORCH_FREE!r}:\n"
        "    importlib.import_module(mod)\n"
        "leaked = [m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers')]\n"
        "assert not leaked, leaked\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"
