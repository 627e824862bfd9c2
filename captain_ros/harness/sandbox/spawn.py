"""How the sandboxed child process is started: a fixed environment (nothing of the harness's),
the interpreter's isolation flags, the unprivileged uid, and the read-only library folders it may
read. :class:`captain_ros.harness.sandbox.session.PythonSession` starts and talks to it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import captain_ros

NOBODY_UID = 65534
ENV_FIXED = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "MPLBACKEND": "Agg",
    "PYTHONDONTWRITEBYTECODE": "1",
}


def read_roots() -> list[str]:
    """The folders the child may read but not write: the Python library folders (site-packages
    included) and the captain_ros package."""
    roots = {
        sysconfig.get_paths()["stdlib"],
        sysconfig.get_paths()["platstdlib"],
        sysconfig.get_paths()["purelib"],
        sysconfig.get_paths()["platlib"],
        str(Path(captain_ros.__file__).resolve().parent),
    }
    for p in sys.path:
        if p and ("site-packages" in p or "dist-packages" in p) and os.path.isdir(p):
            roots.add(p)
    return sorted(roots)


def spawn_child(
    workspace: Path, hash_seed: int | None, log_path: Path | None
) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    """Start ``python -m captain_ros.harness.sandbox.child`` in ``workspace`` with pipes on its
    stdin/stdout, its stderr to ``log_path`` (None: discarded), in a new session; returns the
    process and the environment it was given."""
    env = {**ENV_FIXED, "HOME": str(workspace)}  # nothing of the harness's environment
    # -I (isolated) would ignore PYTHONHASHSEED; -s -P keep the rest of its isolation (no
    # user site, no script folder on sys.path) and the environment is this fixed dict anyway
    flags = ["-I"]
    if hash_seed is not None:
        env["PYTHONHASHSEED"] = str(int(hash_seed))
        flags = ["-s", "-P"]
    log_file = open(log_path, "ab") if log_path else None  # noqa: SIM115
    try:
        popen = subprocess.Popen(
            [sys.executable, *flags, "-m", "captain_ros.harness.sandbox.child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_file if log_file is not None else subprocess.DEVNULL,
            cwd=workspace,
            env=env,
            close_fds=True,
            start_new_session=True,
        )
    finally:
        if log_file is not None:
            log_file.close()
    return popen, env
