"""Weight synchronisation between the RL trainer and its rollout workers, through the file system.

After every optimizer step the trainer publishes the LoRA adapter as policy version ``v`` in
``OUT/policy/v<v>/`` (peft's ``adapter_model.safetensors`` + ``adapter_config.json``, and
``version.json``). The folder is written under a temporary name and renamed when complete, so a
worker never reads a half-written version. A rollout job names the version it must use; a worker
process keeps its base model loaded and, when a job names a newer version than the one it holds,
copies that adapter's tensors into its model in place (:func:`load_adapter_weights`).

This is the single-machine (and shared-file-system Ray) analogue of the paper's NCCL broadcast to
the vLLM servers; for a 135M student's LoRA adapter it is a few MB per step. Versions older than
``keep`` behind the newest are pruned: rollouts may lag by at most two versions (the staleness
bound), so the default keeps three.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from captain_ros.learn.errors import LearnError

POLICY_DIR = "policy"
ADAPTER_FILE = "adapter_model.safetensors"
_VERSION_RE = re.compile(r"^v(\d{4,})$")


def version_dir(out: str | Path, version: int) -> Path:
    """``OUT/policy/v0007`` for version 7."""
    if version < 0:
        raise LearnError(f"policy versions are >= 0, got {version}")
    return Path(out) / POLICY_DIR / f"v{int(version):04d}"


def published_versions(out: str | Path) -> list[int]:
    """Complete published versions in ``OUT/policy``, ascending."""
    root = Path(out) / POLICY_DIR
    if not root.is_dir():
        return []
    found = []
    for p in root.iterdir():
        m = _VERSION_RE.match(p.name)
        if m and (p / "version.json").is_file() and (p / ADAPTER_FILE).is_file():
            found.append(int(m.group(1)))
    return sorted(found)


def publish_adapter(model: Any, out: str | Path, version: int, keep: int = 3) -> Path:
    """Save ``model``'s adapter (a peft model) as ``version``; prune all but the newest ``keep``."""
    dest = version_dir(out, version)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        model.save_pretrained(str(tmp), safe_serialization=True)
        (tmp / "version.json").write_text(
            json.dumps({"version": int(version), "time": time.time()}) + "\n"
        )
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if keep > 0:
        for v in published_versions(out)[:-keep]:
            shutil.rmtree(version_dir(out, v), ignore_errors=True)
    return dest


def read_version(folder: str | Path) -> int:
    """The version a published adapter folder holds."""
    p = Path(folder) / "version.json"
    try:
        return int(json.loads(p.read_text())["version"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LearnError(f"{p}: not a published policy version ({exc})") from exc


def load_adapter_weights(model: Any, folder: str | Path) -> None:
    """Copy a published adapter's tensors into ``model`` (a peft model of the same LoRA config)."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    path = Path(folder) / ADAPTER_FILE
    if not path.is_file():
        raise LearnError(f"{path}: missing (version not published?)")
    result = set_peft_model_state_dict(model, load_file(str(path)))
    unexpected = list(getattr(result, "unexpected_keys", []) or [])
    if unexpected:
        raise LearnError(f"{path}: adapter does not match the worker's model ({unexpected[0]} ...)")


CRITIC_DIR = "critic"


def publish_critic(critic: Any, out: str | Path, keep: int = 3) -> Path:
    """Save the live critic as ``OUT/critic/v<version>`` (what the workers' early stop reads)."""
    root = Path(out) / CRITIC_DIR
    dest = root / f"v{int(critic.version):04d}"
    if (dest / "critic.json").is_file():
        return dest
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=root))
    try:
        critic.save(tmp)
        os.replace(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    kept = sorted(
        (p for p in root.iterdir() if _VERSION_RE.match(p.name)), key=lambda p: int(p.name[1:])
    )
    for p in kept[:-keep] if keep > 0 else []:
        shutil.rmtree(p, ignore_errors=True)
    return dest
