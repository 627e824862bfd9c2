#!/usr/bin/env bash
# Optional step: the robosuite backend's packages into the venv (docs/robosuite.md).
# robosuite 1.5.2 (a 157 MB wheel with its MJCF assets; pip caches it) goes in with --no-deps, plus
# its real dependencies pinned in requirements/robosuite.txt: its own metadata pins mink==0.0.5,
# which would pull numpy<2 over this project's lock. It runs on the lock's mujoco 4.0.0 through
# captain_ros/backends/robosuite/compat.py. scripts/setup.sh runs this unless CAPTAIN_ROBOSUITE=0.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-${VENV:-$(pwd)/.venv}}
"$VENV/bin/pip" install -q --no-deps -r requirements/robosuite.txt
# robosuite warns at every import without a private macro file; the default one is the template
"$VENV/bin/python" - <<'PY'
import importlib.util, pathlib, shutil
spec = importlib.util.find_spec("robosuite")
root = pathlib.Path(spec.origin).parent
if not (root / "macros_private.py").exists():
    shutil.copy(root / "macros.py", root / "macros_private.py")
PY
echo "[setup] robosuite $(sed -n 's/^robosuite==//p' requirements/robosuite.txt) installed (--no-deps)"
