#!/usr/bin/env bash
# The ROS package layout of the editable set-up (`pip install -e .` installs no data files):
#   <venv>/share/ament_index/resource_index/packages/captain_ros   (ament index marker)
#   <venv>/share/captain_ros/{package.xml, launch/*.py, config/*.yaml, urdf/*}   (symlinks to the checkout,
#       file by file: ros2launch walks share/ with os.walk, which does not follow symlinked folders)
#   <venv>/lib/captain_ros/<exe>   (relays to the console scripts in <venv>/bin)
# A non-editable `pip install .` and a colcon install create the same layout themselves.
# Usage: scripts/ament_overlay.sh [VENV]      (idempotent)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=$(cd "${1:-${VENV:-$ROOT/.venv}}" && pwd)
share=$VENV/share/captain_ros
mkdir -p "$VENV/share/ament_index/resource_index/packages"
: >"$VENV/share/ament_index/resource_index/packages/captain_ros"
rm -rf "$share" "$VENV/lib/captain_ros"
mkdir -p "$share/launch" "$share/config" "$share/urdf" "$VENV/lib/captain_ros"
ln -s "$ROOT/package.xml" "$share/package.xml"
for f in "$ROOT"/launch/*.py; do ln -s "$f" "$share/launch/"; done
for f in "$ROOT"/config/*.yaml; do ln -s "$f" "$share/config/"; done
for f in "$ROOT"/urdf/*.urdf "$ROOT"/urdf/*.xml; do ln -s "$f" "$share/urdf/"; done
for f in "$ROOT"/scripts/ros/relay/*; do install -m 0755 "$f" "$VENV/lib/captain_ros/"; done
# The venv's own `ros2` without AMENT_PREFIX_PATH (the venv not activated) looks up packages in
# the venv, as `source .venv/bin/activate` would have it (it printed an ament_index traceback);
# only that command, and only when the variable is unset or empty.
site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
cat >"$site/captain_ros_ament.pth" <<'PTH'
import os, sys; (os.environ.get("AMENT_PREFIX_PATH") or os.path.basename((sys.orig_argv[1:2] or [""])[0]) != "ros2" or not os.path.isdir(os.path.join(sys.prefix, "share", "ament_index"))) or os.environ.__setitem__("AMENT_PREFIX_PATH", sys.prefix)
PTH
echo "[ament] captain_ros share/ and lib/ overlay in $VENV"
# `source .venv/bin/activate` puts the venv on the ament index path, like sourcing a ROS
# workspace's setup.bash (ros2 launch / ros2 run / get_package_share_directory need it).
if ! grep -q "captain_ros: ament index" "$VENV/bin/activate"; then
  cat >>"$VENV/bin/activate" <<'ACT'
# captain_ros: ament index (scripts/ament_overlay.sh)
case ":${AMENT_PREFIX_PATH:-}:" in *":$VIRTUAL_ENV:"*) ;; *) export AMENT_PREFIX_PATH="$VIRTUAL_ENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}" ;; esac
ACT
fi
