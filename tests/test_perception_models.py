"""Perception model selection by configuration (PerceptionModels, the CLI flags): the default
stays the weight-free pair; a Molmo-style OpenAI-compatible endpoint (a real local HTTP server
here), a local SAM folder (a tiny random SamModel); incomplete selections are refused."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from perception_synth import Box, SynthBackend

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.perception.camera import project_points
from captain_ros.perception.default_segmenter import DefaultPointer, DefaultSegmenter
from captain_ros.perception.models import PerceptionModels

CUBE = Box((0.45, 0.05, 0.025), (0.05, 0.05, 0.05), (200, 30, 30), 0.3)


class MolmoServer:
    """A local OpenAI-compatible ``/v1/chat/completions`` server answering Molmo-style points."""

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append((dict(self.headers), body))
                ok = self.path == "/v1/chat/completions"
                data = json.dumps(
                    {"choices": [{"message": {"role": "assistant", "content": outer.reply}}]}
                ).encode()
                self.send_response(200 if ok else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def cube_scene() -> Iterator[tuple[SynthBackend, str]]:
    b = SynthBackend(objects=[CUBE], size_px=128)
    from captain_ros.perception import PerceptionService

    s = PerceptionService(b)
    frame = s.observations.get(s.observe(["head"]).value["handle"]).frame("head")
    ((u, v),) = project_points(frame, np.array([[0.45, 0.05, 0.05]]))[0]
    yield (
        b,
        f'<point x="{100 * u / 128:.1f}" y="{100 * v / 128:.1f}" alt="red cube">red cube</point>',
    )


def test_default_selection_is_the_weight_free_pair() -> None:
    m = PerceptionModels()
    assert m.is_default and m.build() == (None, None)
    svc = m.service(SynthBackend(objects=[CUBE], size_px=64))
    assert isinstance(svc.segmenter, DefaultSegmenter) and isinstance(svc.pointer, DefaultPointer)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"segmenter": "yolo"}, "segmenter 'yolo'; valid: default, sam"),
        ({"pointer": "molmo"}, "pointer 'molmo'; valid: default, vlm_local, vlm_endpoint"),
        ({"segmenter": "sam", "sam_folder": "/nonexistent"}, "holds no SAM checkpoint"),
        ({"pointer": "vlm_local"}, "vlm_folder '' holds no model"),
        ({"pointer": "vlm_endpoint", "vlm_url": "http://x/v1"}, "needs vlm_url .* and vlm_model"),
    ],
)
def test_incomplete_selections_are_refused(kw: dict[str, str], match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        PerceptionModels(**kw)


def test_endpoint_pointer_over_http(
    cube_scene: tuple[SynthBackend, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    backend, reply = cube_scene
    server = MolmoServer(reply)
    monkeypatch.setenv("TEST_VLM_KEY", "secret")
    try:
        m = PerceptionModels(
            pointer="vlm_endpoint",
            vlm_url=server.url,
            vlm_model="molmo-7b-d",
            vlm_api_key_env="TEST_VLM_KEY",
        )
        svc = m.service(backend)
        r = svc.point("red cube", None, "head")
        assert r.success, r.message
        assert len(r.value["points"]) == 1 and r.value["points"][0]["label"] == "red cube"
        headers, body = server.requests[-1]
        assert body["model"] == "molmo-7b-d" and headers["Authorization"] == "Bearer secret"
        r = svc.segment("red cube", None, "head")  # the default segmenter, the VLM's points
        assert r.success and r.value["detections"], r.message
        assert (
            np.linalg.norm(np.asarray(r.value["detections"][0]["centroid_m"][:2]) - [0.45, 0.05])
            < 0.02
        )
    finally:
        server.close()


def test_cli_refuses_an_incomplete_selection(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "captain_ros.cli.main",
            "run",
            "--backend",
            "fake",
            "--pointer",
            "vlm_endpoint",
            "--out",
            str(tmp_path / "ep"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2, out.stderr[-2000:]
    lines = [x for x in out.stderr.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and "vlm_endpoint needs vlm_url" in lines[0]


def tiny_sam(folder: Path) -> Path:
    """A randomly initialised SamModel + PIL image processor (as tests/test_perception_sam.py)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from transformers import SamConfig, SamImageProcessorPil, SamModel
    from transformers.models.sam.configuration_sam import (
        SamMaskDecoderConfig,
        SamPromptEncoderConfig,
        SamVisionConfig,
    )

    torch.set_num_threads(1)
    torch.manual_seed(0)
    vision = SamVisionConfig(
        hidden_size=32,
        output_channels=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=64,
        patch_size=8,
        mlp_dim=64,
        window_size=4,
        global_attn_indexes=[1],
        num_pos_feats=8,
    )
    prompt = SamPromptEncoderConfig(
        hidden_size=16, image_size=64, patch_size=8, mask_input_channels=4
    )
    decoder = SamMaskDecoderConfig(
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        mlp_dim=32,
        iou_head_hidden_dim=16,
    )
    cfg = SamConfig(
        vision_config=vision.to_dict(),
        prompt_encoder_config=prompt.to_dict(),
        mask_decoder_config=decoder.to_dict(),
    )
    SamModel(cfg).save_pretrained(folder)
    SamImageProcessorPil(
        size={"longest_edge": 64}, pad_size={"height": 64, "width": 64}
    ).save_pretrained(folder)
    return folder


@pytest.mark.learn
def test_sam_folder_selected_with_the_endpoint_pointer(
    cube_scene: tuple[SynthBackend, str], tmp_path: Path
) -> None:
    folder = tiny_sam(tmp_path / "tiny_sam")
    backend, reply = cube_scene
    server = MolmoServer(reply)
    try:
        m = PerceptionModels(
            segmenter="sam",
            sam_folder=str(folder),
            pointer="vlm_endpoint",
            vlm_url=server.url,
            vlm_model="molmo",
        )
        svc = m.service(backend)
        assert type(svc.segmenter).__name__ == "SamSegmenter"
        assert svc.segmenter.pointer is svc.pointer
        r = svc.segment("red cube", None, "head")  # text -> VLM points -> SAM masks
        # random weights: masks are noise, so a structured answer is all that can be asked
        assert r.success or r.failure_category.value == "not_detected", r.message
        assert server.requests, "the SAM text prompt went through the VLM pointer"
    finally:
        server.close()
