"""``captain learn student-folder student[:NAME]|ADAPTER.gguf --out DIR``: a shipped student (or any
llama LoRA adapter GGUF on the packaged SmolLM2) as a trainable student folder, laid out as
``captain learn sft`` leaves one, for ``captain learn rl --policy-folder``, ``captain learn re0
--student`` and ``captain learn sft --init-adapter`` (:mod:`captain_ros.learn.gguf_adapter`).

Bad input ends with one line on stderr and exit status 1 (``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="captain learn student-folder",
        description="A shipped student's adapter GGUF as a trainable student folder "
        "(peft adapter, merged model, sft_config.json).",
    )
    p.add_argument("student", help="student, student:NAME (shipped), or a LoRA adapter .gguf file")
    p.add_argument("--out", required=True, help="the new student folder")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    ns = build_parser().parse_args(argv)
    from captain_ros.core.errors import CaptainError

    try:
        from captain_ros.policy.students import DEFAULT, get_student, is_student_spec

        out = Path(ns.out)
        if out.exists() and any(out.iterdir()):
            raise CaptainError(f"{out} is not empty: write the student folder into a new one")
        if is_student_spec(ns.student):
            shipped = get_student(ns.student.partition(":")[2] or DEFAULT)
            gguf, base, profile = shipped.adapter, shipped.base, shipped.profile
            source = {"student": shipped.name, "base_sha256": shipped.base_sha256}
            record = json.loads((shipped.folder / "student.json").read_text())
            if "training" in record:  # its training stages, for the card of a continuation
                source["training"] = record["training"]
        else:
            gguf, base, profile, source = Path(ns.student), "smollm2", "student", {}
            if not gguf.is_file():
                raise CaptainError(f"{gguf}: no such adapter file (or name student[:NAME])")
        from captain_ros.learn.gguf_adapter import student_folder_from_gguf

        student_folder_from_gguf(gguf, out, base=base, profile=profile, source=source)
    except (CaptainError, OSError) as exc:
        if ns.debug:
            raise
        print(f"captain learn student-folder: {exc}", file=sys.stderr)
        return 1
    meta = json.loads((out / "sft_config.json").read_text())
    print(json.dumps({"out": str(out), "rank": meta["options"]["lora_r"], **meta["imported_from"]}))
    return 0
