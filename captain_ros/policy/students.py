"""Students shipped in the package: ``--policy student[:NAME]`` runs one teacher-free.

A shipped student is a folder under ``captain_ros/data/students/NAME/`` holding:

- ``student.json``: what it is (the base model and the SHA-256 of the base's GGUF file, the prompt
  profile it was trained with, the adapter's file name, its tasks, the decoding of its held-out
  episodes), written by
  ``scripts/ship_student.py`` from a ``captain learn sft`` run;
- the LoRA adapter as a GGUF file (``captain learn export --adapter``): a few MB that llama.cpp
  applies to the packaged SmolLM2 at load, so the package stores the base once and each student as
  its adapter only;
- ``CARD.md``: the model card (training data and seeds, steps, base and hash, held-out results).

``--policy student`` is ``--policy transformers`` on that folder with the ``llamacpp`` engine, the
student's own profile and the decoding its held-out figures were measured with (``decoding`` in
``student.json``; greedy and 160 new tokens per reply where the record predates the field, as
``exp_student.py`` evaluated every shipped student). ``--temperature`` and ``--max-new-tokens``
override it; everything else (``--engine``, ``--threads``, ``--grammar``) is the transformers
policy's.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.policy.config import PolicyConfig
from captain_ros.policy.engines.base import ModelFileError

STUDENTS_DIR = Path(__file__).resolve().parents[1] / "data" / "students"
RECORD = "student.json"
DEFAULT = "default"


@dataclass(frozen=True)
class ShippedStudent:
    """A student folder read back. ``base`` names the base model (``smollm2``)."""

    name: str
    folder: Path
    base: str
    base_sha256: str
    adapter: Path
    profile: str
    tasks: tuple[str, ...]
    drafts: Path | None = None
    temperature: float = 0.0
    max_new_tokens: int = 160


#: How ``exp_student.py --stages eval`` decodes (greedy, 160 new tokens): a record without
#: ``decoding`` was measured so.
EVAL_DECODING: dict[str, float | int] = {"temperature": 0.0, "max_new_tokens": 160}


def names() -> list[str]:
    """The students the package ships."""
    return sorted(p.parent.name for p in STUDENTS_DIR.glob(f"*/{RECORD}"))


def is_student_folder(folder: str | Path) -> bool:
    return (Path(folder) / RECORD).is_file()


def read_student(folder: str | Path) -> ShippedStudent:
    """The student in ``folder``; :class:`ModelFileError` names what is missing or malformed."""
    root = Path(folder)
    try:
        rec = json.loads((root / RECORD).read_text())
        student = ShippedStudent(
            root.name,
            root,
            str(rec["base"]),
            str(rec["base_sha256"]),
            root / str(rec["adapter"]),
            str(rec["profile"]),
            tuple(str(t) for t in rec.get("tasks", ())),
            root / str(rec["drafts"]) if rec.get("drafts") else None,
            *_decoding(rec.get("decoding", EVAL_DECODING)),
        )
    except OSError as exc:
        raise ModelFileError(f"{root / RECORD} cannot be read: {exc.strerror or exc}") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise ModelFileError(f"{root / RECORD} is not a student record: {exc}") from exc
    if not student.adapter.is_file():
        raise ModelFileError(f"student {student.name}: adapter {student.adapter} is missing")
    if student.drafts is not None and not student.drafts.is_file():
        raise ModelFileError(f"student {student.name}: draft corpus {student.drafts} is missing")
    return student


def _decoding(rec: Any) -> tuple[float, int]:
    """``student.json``'s ``decoding``: (temperature >= 0, max_new_tokens >= 1)."""
    if not isinstance(rec, dict):
        raise ValueError(f"decoding must be an object, got {rec!r}")
    temperature, max_new = rec.get("temperature"), rec.get("max_new_tokens")
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, (int, float))
        or not temperature >= 0
    ):
        raise ValueError(f"decoding.temperature must be a number >= 0, got {temperature!r}")
    if isinstance(max_new, bool) or not isinstance(max_new, int) or max_new < 1:
        raise ValueError(f"decoding.max_new_tokens must be an integer >= 1, got {max_new!r}")
    return float(temperature), max_new


DRAFTS = "drafts.txt"


def write_drafts(rows: Iterable[dict[str, Any]], dest: str | Path, per_task: int = 2) -> Path:
    """``dest``: the assistant replies of the first ``per_task`` training rows of each task, as the
    model writes them (reasoning, then each tool call in the chat template's ``<tool_call>``
    envelope). The llamacpp engine drafts from it (prompt lookup) from a process's first request;
    it changes how fast a reply is written, never the reply."""
    taken: dict[str, int] = {}
    parts: list[str] = []
    for row in rows:
        task = str(row.get("task", ""))
        if taken.get(task, 0) >= per_task:
            continue
        taken[task] = taken.get(task, 0) + 1
        for m in row.get("messages", ()):
            if m.get("role") != "assistant":
                continue
            text = str(m.get("content") or "")
            for call in m.get("tool_calls") or ():
                fn = call.get("function", {})
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    args = fn.get("arguments")
                body = json.dumps({"name": fn.get("name"), "arguments": args}, ensure_ascii=False)
                text += f"\n<tool_call>\n{body}\n</tool_call>"
            parts.append(text)
    out = Path(dest)
    out.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return out


def get_student(name: str = DEFAULT) -> ShippedStudent:
    """The shipped student ``name``; :class:`InvalidArgumentError` lists the shipped ones."""
    folder = STUDENTS_DIR / name
    if not name or "/" in name or not is_student_folder(folder):
        shipped = ", ".join(names()) or "none"
        raise InvalidArgumentError(f"no shipped student {name!r} (shipped: {shipped})")
    return read_student(folder)


def file_sha256(path: str | Path) -> str:
    """SHA-256 of ``path``; read once per process while its size and mtime stay the same (every
    episode of an evaluation worker loads the student, and the base GGUF is ~90 MB)."""
    st = Path(path).stat()
    return _sha256(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def base_gguf(student: ShippedStudent) -> Path:
    """The base GGUF the adapter applies to, checked against the hash the student was trained on."""
    if student.base != "smollm2":
        raise ModelFileError(f"student {student.name}: unknown base {student.base!r}")
    from captain_ros.policy.transformers_chat import smollm2_folder

    try:
        folder, name = smollm2_folder()
    except FileNotFoundError as exc:
        raise ModelFileError(f"student {student.name}: {exc}") from None
    gguf = folder / name
    if file_sha256(gguf) != student.base_sha256:
        raise ModelFileError(
            f"student {student.name} was trained on another {student.base} "
            f"(sha256 {student.base_sha256[:12]}..., installed {gguf.name} differs)"
        )
    return gguf


def is_student_spec(spec: str) -> bool:
    return spec == "student" or spec.startswith("student:")


def check_student_task(spec: str, task: str) -> None:
    """Refuse ``student[:NAME]`` on a task the shipped student was never trained on: an operator
    asking for the teacher-free student gets a clear answer, not a robot acting out another task's
    habits (a research run on other tasks names the folder: ``--policy transformers
    --model-folder DIR``). Any other spec, or a student that lists no tasks, passes."""
    if not is_student_spec(spec):
        return
    student = get_student(spec.partition(":")[2] or DEFAULT)
    if student.tasks and task not in student.tasks:
        others = [n for n in names() if task in _tasks_of(n)]
        hint = f"; shipped students for {task}: {', '.join(others)}" if others else ""
        raise InvalidArgumentError(
            f"the shipped student {student.name!r} was trained on {', '.join(student.tasks)}, "
            f"not on {task}{hint}"
        )


def _tasks_of(name: str) -> tuple[str, ...]:
    try:
        return get_student(name).tasks
    except (InvalidArgumentError, ModelFileError):
        return ()


def expand_policy(config: PolicyConfig) -> PolicyConfig:
    """``student[:NAME]`` as the transformers policy on that student's folder (llamacpp unless
    another engine is asked for, which is refused), decoding as its figures were measured unless
    ``temperature`` / ``max_new_tokens`` are given; any other spec unchanged."""
    if not is_student_spec(config.spec):
        return config
    student = get_student(config.spec.partition(":")[2] or DEFAULT)
    engine = "llamacpp" if config.engine in (None, "", "auto") else config.engine
    if engine != "llamacpp":
        raise InvalidArgumentError(
            f"the shipped student runs on the llamacpp engine, not "
            f"{engine!r} (its adapter is a llama.cpp GGUF)"
        )
    return replace(
        config,
        spec="transformers",
        model_folder=str(student.folder),
        engine=engine,
        temperature=student.temperature if config.temperature is None else config.temperature,
        max_new_tokens=config.max_new_tokens or student.max_new_tokens,
    )
