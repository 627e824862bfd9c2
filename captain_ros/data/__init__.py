"""Files the Python code loads at run time, installed inside the package (wheel, editable, colcon):

- ``students/``: the shipped students (the LoRA adapter GGUF, its model card and drafts);
- ``tokenizers/``: the packaged SmolLM2 tokenizer;
- ``foxglove/``: the Foxglove layout of the recorded topics (``captain bag layout``, docs/data.md).

The ROS share files, ``config/`` (parameter and rig files) and ``urdf/`` (the PiPER descriptions),
are the repository's top-level folders, installed to ``share/captain_ros/``:
:func:`captain_ros.core.share.share_path` finds them.
"""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent


def data_path(*parts: str) -> Path:
    """Path of a packaged data file, e.g. ``data_path("foxglove", "captain.json")``."""
    return DATA_DIR.joinpath(*parts)
