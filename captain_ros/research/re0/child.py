"""A generation's distilled child as a student that ships: base + ONE adapter, on llama.cpp.

RE-OPD distils the corpus into a LoRA adapter trained on the *merged* parent
(:func:`~captain_ros.research.re0.generation.distill`, ``captain learn sft --base PARENT``), so the
child's weights are the base model, the parent's adapter and the child's adapter. That is the
situation of an RL version over an SFT student, and the same exact stacking serves:
:func:`~captain_ros.learn.rl.student.stack_student` (peft ``add_weighted_adapter(..., "cat")``)
writes ``OUT/child/``, a folder laid out as ``captain learn sft`` leaves one (merged model,
``adapter/`` of rank r_parent + r_child on the base, ``sft_config.json`` naming the original
base). When the parent was exported as an adapter for the packaged SmolLM2 (what ships), the
child's stacked adapter is exported and checked the same way (``captain learn export --adapter``
with the corpus' prompts), so the child runs where the parent ran: llama.cpp, packaged Q4_1 base
plus ``adapter.f16.gguf`` (:func:`~captain_ros.research.re0.seats.seat_engine`). The next
generation takes ``OUT/child`` as its student; its own child stacks onto it in turn (one adapter
of rank r_0 + r_1 + r_2 after two generations).

A parent without ``adapter/`` (a full fine-tune, a base model) has no adapter to stack onto: the
distilled folder ``OUT/student`` stays the child (transformers).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

CHILD = "child"
RECORD = "re0_child.json"
"""What a finished child was stacked from (the distillation's record): a resume reuses it."""


def stackable(parent: str | Path) -> bool:
    """Whether ``parent`` is a ``captain learn sft``-style folder with a LoRA adapter to stack on."""
    p = Path(parent)
    return (p / "adapter" / "adapter_config.json").is_file() and (p / "sft_config.json").is_file()


def _exported_for_smollm2(folder: Path) -> bool:
    try:
        rec = json.loads((folder / "export.json").read_text()).get("adapter")
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(rec, dict) and rec.get("base") == "smollm2"


def ship_child(
    parent: str | Path, distilled: str | Path, out: str | Path, data: str | Path
) -> dict[str, Any]:
    """Stack ``distilled`` (a ``captain learn sft`` folder trained on the merged ``parent``) onto
    ``parent`` into ``out`` and, when the parent ships as a SmolLM2 adapter, export and check the
    stacked adapter with ``data``'s prompts. Returns the report (``folder``, ``stacked_rank``,
    ``exported``, the export's figures); reuses ``out`` when its record names the same
    distillation."""
    from captain_ros.learn.rl.student import stack_student

    parent, distilled, out = Path(parent), Path(distilled), Path(out)
    source = json.loads((distilled / "re0_distill.json").read_text())
    what = {"parent": str(parent.resolve()), "corpus_sha256": source.get("corpus_sha256")}
    done = out / RECORD
    if done.is_file():
        stored = json.loads(done.read_text())
        if {k: stored.get(k) for k in what} == what:
            return {**stored, "reused": True}
        shutil.rmtree(out)
    stack_student(parent, distilled / "adapter", out)
    meta = json.loads((out / "sft_config.json").read_text())
    report: dict[str, Any] = {
        **what,
        "folder": str(out),
        "stacked_rank": int(meta.get("rl", {}).get("stacked_rank", 0)),
        "exported": False,
    }
    drafts = parent / "drafts.txt"
    if drafts.is_file():  # prompt lookup's corpus: the same student family writes the same calls
        shutil.copy(drafts, out / "drafts.txt")
    if _exported_for_smollm2(parent):
        from captain_ros.learn.export import export_adapter

        fig = export_adapter(out, data=data)
        report.update(
            exported=True,
            greedy_tokens_agree=fig.get("greedy_tokens_agree"),
            max_abs_logprob_diff=fig.get("max_abs_logprob_diff"),
        )
    else:
        report["why_not_exported"] = (
            f"the parent {parent} ships no adapter for the packaged smollm2 (no export.json "
            "'adapter' record): the child runs on transformers"
        )
    done.write_text(json.dumps(report, indent=2, default=str) + "\n")
    return report
