"""A student's LoRA adapter for onnxruntime-genai's ``og.Adapters``, from the model builder's output.

ORT-genai's model builder takes a PEFT LoRA folder (``--extra_options adapter_path=ADAPTER``) and
builds it *into* the graph: every adapted projection gets ``lora_A`` / ``lora_B`` MatMul nodes
whose weights are initializers (the scaling folded into B). ``og.Adapters`` instead loads LoRA
weights from an ``.onnx_adapter`` file into graph *inputs* of the same names. This script turns the
first into the second: the LoRA initializers become graph inputs (rank ``lora_rank`` left free),
their values are written with onnxruntime's ``AdapterFormat``, and the other files are copied
(ORT refuses external data behind a symbolic link out of the model's folder, and onnx refuses a
hard-linked one). With ``--ids PROMPT.json`` it then decodes
greedily on both models, the built-in adapter and the base with the adapter file activated, and
says whether the tokens agree.

Run with the interpreter that has onnxruntime-genai (it imports onnx, onnxruntime and
onnxruntime_genai, nothing of the project)::

    PYTHONPATH=.venv/lib/python3.11/site-packages ORTVENV/bin/python \\
        -m onnxruntime_genai.models.builder -i FOLDER -o BUILT -p fp32 -e cpu \\
        --extra_options adapter_path=STUDENT/adapter
    ORTVENV/bin/python benchmarks/ort_adapter.py BUILT OUT [--ids prompt_ids.json] [--tokens 24]

The base graph with adapter inputs then needs an adapter active on every generator: without one,
ORT reports the LoRA inputs as missing (checked with onnxruntime-genai 0.18.0).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

ADAPTER_FILE = "student.onnx_adapter"


def split_adapter(built: Path, out: Path) -> tuple[Path, int]:
    """Write ``out``: ``built``'s graph with its LoRA weights as inputs, and the adapter file.
    Returns the adapter file and the number of LoRA tensors."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(built / "model.onnx"), load_external_data=False)
    lora = [i for i in model.graph.initializer if ".lora_A." in i.name or ".lora_B." in i.name]
    if not lora:
        raise SystemExit(f"ort_adapter: {built} has no LoRA weights (build it with adapter_path=)")
    params = {i.name: numpy_helper.to_array(i, base_dir=str(built)) for i in lora}
    rest = [i for i in model.graph.initializer if i.name not in params]
    del model.graph.initializer[:]
    model.graph.initializer.extend(rest)
    for name, value in params.items():  # A: [in, r], B: [r, out] (MatMul's right operand)
        dims = (
            ["lora_rank", value.shape[1]] if ".lora_B." in name else [value.shape[0], "lora_rank"]
        )
        model.graph.input.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, dims))
    out.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(out / "model.onnx"))  # external data stays in model.onnx.data
    for f in built.iterdir():
        if f.name != "model.onnx" and not (out / f.name).exists():
            shutil.copyfile(f, out / f.name)
    fmt = ort.AdapterFormat()
    fmt.set_adapter_version(1)
    fmt.set_model_version(1)
    values = {
        k: ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(v)) for k, v in params.items()
    }
    fmt.set_parameters(values)
    fmt.export_adapter(str(out / ADAPTER_FILE))
    return out / ADAPTER_FILE, len(params)


def greedy(folder: Path, ids: list[int], tokens: int, adapter: Path | None = None) -> list[int]:
    """``tokens`` greedy tokens after ``ids`` (one thread), with ``adapter`` active if given."""
    import onnxruntime_genai as og

    config = og.Config(str(folder))
    config.clear_providers()
    opts = {"intra_op_num_threads": 1}
    config.overlay(json.dumps({"model": {"decoder": {"session_options": opts}}}))
    model = og.Model(config)
    params = og.GeneratorParams(model)
    params.set_search_options(do_sample=False, max_length=len(ids) + tokens)
    gen = og.Generator(model, params)
    adapters: Any = None
    if adapter is not None:
        adapters = og.Adapters(model)
        adapters.load(str(adapter), "student")
        gen.set_active_adapter(adapters, "student")
    gen.append_tokens(ids)
    out = []
    for _ in range(tokens):
        gen.generate_next_token()
        out.append(int(gen.get_next_tokens()[0]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("built", type=Path, help="the builder's output, built with adapter_path=")
    ap.add_argument("out", type=Path, help="folder for the base graph and the adapter file")
    ap.add_argument("--ids", type=Path, default=None, help="a JSON list of prompt token ids")
    ap.add_argument("--tokens", type=int, default=24)
    ns = ap.parse_args(argv)
    if not (ns.built / "model.onnx").is_file():
        print(f"ort_adapter: {ns.built} holds no model.onnx", file=sys.stderr)
        return 2
    adapter, n = split_adapter(ns.built, ns.out)
    print(json.dumps({"adapter": str(adapter), "lora_tensors": n}))
    if ns.ids is not None:
        ids = [int(i) for i in json.loads(ns.ids.read_text())]
        built = greedy(ns.built, ids, ns.tokens)
        loaded = greedy(ns.out, ids, ns.tokens, adapter)
        print(json.dumps({"built_in": built, "og_adapters": loaded, "agree": built == loaded}))
        return 0 if built == loaded else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
