"""A student folder from a LoRA adapter trained elsewhere (``device_sft.sh pack``): the base with
the adapter merged, the tokenizer with the chat template ``captain learn sft`` trains with, as
``captain_ros.learn.sft_state.save_student`` writes it; the adapter and the run's metadata stay beside.

Run: ``.venv/bin/python benchmarks/experiments/gpu/student_from_adapter.py --student S [--base smollm2]`` with
``S/adapter/`` (adapter_config.json, adapter_model.safetensors) and ``S/sft_config.json`` in place.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--student", required=True, help="folder holding adapter/ and sft_config.json")
    p.add_argument("--base", default="smollm2")
    ns = p.parse_args(argv)
    out = Path(ns.student)
    if not (out / "adapter" / "adapter_config.json").exists():
        print(f"student_from_adapter: {out}/adapter/adapter_config.json not found", file=sys.stderr)
        return 2
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from captain_ros.learn.models import resolve_base
    from captain_ros.policy.chat_render import effective_template

    base = resolve_base(ns.base)
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    tokenizer.chat_template = effective_template(tokenizer)
    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    model = PeftModel.from_pretrained(model, str(out / "adapter")).merge_and_unload()
    model.config.architectures = [type(model).__name__]
    model.config.use_cache = True
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out / "adapter"))
    print(json.dumps({"student": str(out), "base": str(base)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
