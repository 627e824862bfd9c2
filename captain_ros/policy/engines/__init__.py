"""Inference engines for a local student (:class:`~captain_ros.policy.engines.base.ChatEngine`).

One option picks the engine wherever a student runs (``--engine`` of ``captain run`` / ``eval``):

- ``llamacpp``: a GGUF file through llama.cpp (:mod:`~captain_ros.policy.engines.llamacpp`);
- ``transformers``: eager PyTorch (:mod:`~captain_ros.policy.engines.transformers`), the training,
  reference and GPU path;
- ``auto``: llamacpp where llama-cpp-python is installed, the model has a GGUF file and the device
  is not a GPU; transformers otherwise (the choice is measured in docs/engines.md).

The model is named as the transformers policy names it: ``smollm2`` (the packaged
SmolLM2-135M-Instruct GGUF), a GGUF file, or a model folder; a student folder gets its GGUF from
``captain learn export`` (recorded in its ``export.json``); a shipped student's folder
(:mod:`captain_ros.policy.students`) is the packaged SmolLM2 plus its LoRA adapter GGUF.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.policy.engines.base import ChatEngine, EngineSettings, ModelFileError

ENGINES = ("auto", "llamacpp", "transformers")
EXPORT_RECORD = "export.json"
ADAPTER_GGUF = "adapter.f16.gguf"  # `captain learn export --adapter` writes it beside the student

__all__ = [
    "ENGINES",
    "EXPORT_RECORD",
    "ChatEngine",
    "EngineSettings",
    "ModelFileError",
    "ModelSource",
    "exported_adapter_source",
    "make_engine",
    "model_source",
    "resolve_engine",
    "runs_on_llamacpp",
]


@dataclass(frozen=True)
class ModelSource:
    """Where a model's files are: ``folder`` (transformers; None when there is only a GGUF),
    ``gguf`` (the GGUF file, None when there is none), ``drafts`` (a shipped student's draft corpus
    for prompt lookup), ``lora`` (a LoRA adapter GGUF that
    llama.cpp applies to ``gguf``: a shipped student)."""

    folder: Path | None
    gguf: Path | None
    lora: Path | None = None
    drafts: Path | None = None


def model_source(model: str | Path) -> ModelSource:
    """The files behind ``model``: ``smollm2``, a ``.gguf`` file or a model folder."""
    if str(model) == "smollm2":
        from captain_ros.policy.transformers_chat import smollm2_folder

        folder, name = smollm2_folder()
        return ModelSource(folder, folder / name)
    p = Path(model)
    if p.suffix == ".gguf":
        return ModelSource(None, p)
    if not p.is_dir():
        raise ModelFileError(f"model folder not found: {p}")
    from captain_ros.policy import students

    if students.is_student_folder(p):
        student = students.read_student(p)
        return ModelSource(None, students.base_gguf(student), student.adapter, student.drafts)
    record = p / EXPORT_RECORD
    if record.is_file():
        try:
            rec = json.loads(record.read_text())
            name = rec.get("gguf") if "adapter" in rec else rec["gguf"]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ModelFileError(f"{record} is not an export record: {exc}") from exc
        if name is not None:
            return ModelSource(p, p / str(name))
    # a student exported only as its adapter (`learn export --adapter`) is a transformers folder;
    # the adapter's GGUF is not a model
    ggufs = sorted(g for g in p.glob("*.gguf") if g.name != ADAPTER_GGUF)
    return ModelSource(p, ggufs[0] if ggufs else None)


def exported_adapter_source(folder: str | Path) -> ModelSource | None:
    """``folder`` as it ships, when it is a student exported as its adapter (``captain learn export
    --adapter``: ``export.json``'s ``adapter`` record, for the packaged SmolLM2): the packaged base
    GGUF (hash checked) plus ``adapter.f16.gguf``, and ``FOLDER/drafts.txt`` for prompt lookup when
    there is one. None for any other folder. llama.cpp runs such a folder exactly as it runs the
    packaged student made from it (``student.json`` + the same adapter)."""
    p = Path(folder)
    try:
        rec = json.loads((p / EXPORT_RECORD).read_text()).get("adapter")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(rec, dict) or rec.get("base") != "smollm2" or not rec.get("gguf"):
        return None
    from captain_ros.policy import students

    student = students.ShippedStudent(
        p.name,
        p,
        "smollm2",
        str(rec.get("base_sha256", "")),
        p / str(rec["gguf"]),
        str(rec.get("profile", "default")),
        (),
    )
    if not student.adapter.is_file():
        return None
    drafts = p / students.DRAFTS
    return ModelSource(
        None, students.base_gguf(student), student.adapter, drafts if drafts.is_file() else None
    )


def runs_on_llamacpp(model: str | Path) -> bool:
    """Whether ``model`` can run on the llamacpp engine here: llama-cpp-python is installed and
    the model has a GGUF file (its own, a shipped student's base plus adapter, or an exported
    adapter: :func:`exported_adapter_source`)."""
    if not _llama_cpp_installed():
        return False
    try:
        source = model_source(model)
        return source.gguf is not None or (
            source.folder is not None and exported_adapter_source(source.folder) is not None
        )
    except ModelFileError:  # a missing folder, or an adapter trained on another base file
        return False


def _llama_cpp_installed() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def resolve_engine(engine: str, source: ModelSource, device: str | None = None) -> str:
    """The concrete engine ``engine`` means for ``source`` (``auto`` decided here)."""
    if engine not in ENGINES:
        raise InvalidArgumentError(f"unknown engine {engine!r}; valid: {', '.join(ENGINES)}")
    if engine != "auto":
        return engine
    if source.gguf is not None and device != "cuda" and _llama_cpp_installed():
        return "llamacpp"
    return "transformers"


def make_engine(
    engine: str,
    model: str | Path,
    settings: EngineSettings | None = None,
    *,
    grammar: str = "none",
    device: str | None = None,
    n_ctx: int = 0,
    draft_tokens: int | None = None,
) -> ChatEngine:
    """Load ``model`` in ``engine`` (``auto`` resolved by :func:`resolve_engine`);
    ``draft_tokens``: the llamacpp engine's prompt-lookup drafting (None: its default, 0: off)."""
    source = model_source(model)
    name = resolve_engine(engine, source, device)
    if grammar != "none" and name != "llamacpp":
        raise InvalidArgumentError(f"--grammar {grammar} needs the llamacpp engine (got {name})")
    if draft_tokens and name != "llamacpp":
        raise InvalidArgumentError(
            f"--draft-tokens {draft_tokens} needs the llamacpp engine (got {name})"
        )
    if name == "llamacpp":
        if source.gguf is None and source.folder is not None:
            source = exported_adapter_source(source.folder) or source  # as the student ships
        if source.gguf is None:
            raise ModelFileError(f"{model} has no GGUF file: run `captain learn export {model}`")
        if device == "cuda":
            raise InvalidArgumentError(
                "the llamacpp engine runs on the CPU; use --engine transformers on a GPU"
            )
        from captain_ros.policy.engines.llamacpp import LlamaCppChat
        from captain_ros.policy.engines.lookup import LookupSettings

        lookup = None if draft_tokens is None else LookupSettings(max_draft=draft_tokens)
        return LlamaCppChat(
            source.gguf,
            settings,
            grammar=grammar,
            n_ctx=n_ctx,
            lora_path=source.lora,
            draft_corpus=source.drafts,
            lookup=lookup,
        )
    if source.lora is not None:
        raise InvalidArgumentError(
            f"{model} is a LoRA adapter for llama.cpp: use --engine llamacpp"
        )
    from captain_ros.policy.engines.transformers import TransformersEngine

    if source.folder is not None and (source.folder / "config.json").is_file():
        return TransformersEngine(source.folder, settings, device=device)
    if source.gguf is None:
        raise ModelFileError(f"{model} holds neither a transformers model nor a GGUF file")
    from captain_ros.policy.engines.llamacpp import check_gguf

    check_gguf(source.gguf)
    return TransformersEngine(
        source.gguf.parent, settings, gguf_file=source.gguf.name, device=device
    )
