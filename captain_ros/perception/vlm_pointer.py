"""Pointing through a vision-language model (Molmo-style ``<point x=.. y=..>`` output).

:class:`VLMPointer` asks a :class:`VLMClient` to point at a phrase in the image and parses the
reply with :func:`~captain_ros.perception.point_parsing.parse_points`. Two clients:
:class:`EndpointVLM` (an OpenAI-compatible chat endpoint such as vLLM or ``transformers serve``,
over httpx) and :class:`TransformersVLM` (a local transformers folder; torch is imported lazily).
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from captain_ros.core.errors import CaptainError
from captain_ros.core.types import CameraFrame
from captain_ros.perception.point_parsing import parse_points
from captain_ros.perception.segmenter import PointCandidate

DEFAULT_PROMPT = "Point to the {text}."


class VLMError(CaptainError):
    """The VLM backend could not be reached or answered with something unusable."""


class VLMClient(Protocol):
    """Anything that answers a text prompt about one RGB image."""

    def generate(self, rgb: np.ndarray, prompt: str) -> str:
        """The model's reply text for ``prompt`` about ``rgb`` ((H, W, 3) uint8)."""


def png_data_url(rgb: np.ndarray) -> str:
    """``data:image/png;base64,...`` of an RGB image."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.asarray(rgb, dtype=np.uint8)).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


class EndpointVLM:
    """Client of an OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        base_url: e.g. ``"http://localhost:8000/v1"``.
        model: Served model name.
        api_key: Bearer token, if the server wants one.
        timeout_s: Request timeout [s].
        max_tokens: Reply length limit [tokens].
        transport: Optional ``httpx`` transport (tests use ``httpx.MockTransport``).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        max_tokens: int = 256,
        transport: Any = None,
    ) -> None:
        import httpx

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.model = model
        self.max_tokens = max_tokens
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout_s, transport=transport
        )

    def generate(self, rgb: np.ndarray, prompt: str) -> str:
        import httpx

        body = {
            "model": self.model,
            "temperature": 0.0,
            "max_tokens": self.max_tokens,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "image_url", "image_url": {"url": png_data_url(rgb)}},
                        {"type": "text", "text": prompt},
                    ],
                }
            ],
        }
        try:
            resp = self._client.post("/chat/completions", json=body)
            resp.raise_for_status()
            data = resp.json()
            content = data["choices"][0]["message"]["content"]
        except (httpx.HTTPError, KeyError, IndexError, TypeError, ValueError) as exc:
            raise VLMError(f"pointing endpoint failed: {type(exc).__name__}: {exc}") from exc
        if isinstance(content, list):  # content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        return str(content or "")

    def close(self) -> None:
        self._client.close()


class TransformersVLM:
    """A local image-text-to-text model folder run with transformers (lazy torch import).

    Args:
        folder: Model folder with processor files (chat template included).
        device: torch device string.
        max_new_tokens: Reply length limit [tokens].
    """

    def __init__(self, folder: str | Path, device: str = "cpu", max_new_tokens: int = 128) -> None:
        self.folder = Path(folder)
        self.device = device
        self.max_new_tokens = max_new_tokens
        self._model: Any = None
        self._processor: Any = None

    def _load(self) -> None:
        if self._model is None:
            from transformers import AutoModelForImageTextToText, AutoProcessor

            self._processor = AutoProcessor.from_pretrained(self.folder)
            self._model = AutoModelForImageTextToText.from_pretrained(self.folder).to(self.device)  # type: ignore[arg-type]
            self._model.eval()

    def generate(self, rgb: np.ndarray, prompt: str) -> str:
        import torch
        from PIL import Image

        self._load()
        messages = [
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}
        ]
        text = self._processor.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=False
        )
        inputs = self._processor(text=[text], images=[Image.fromarray(rgb)], return_tensors="pt")
        inputs = {k: v.to(self.device) if hasattr(v, "to") else v for k, v in inputs.items()}
        with torch.no_grad():
            out = self._model.generate(
                **inputs, max_new_tokens=self.max_new_tokens, do_sample=False
            )
        new = out[0, inputs["input_ids"].shape[1] :]
        return str(self._processor.decode(new, skip_special_tokens=True))


class VLMPointer:
    """Pointer backed by a VLM client; replies are parsed as Molmo-style points.

    Args:
        client: The VLM.
        coords: Unit of XML point coordinates (see :func:`parse_points`).
        prompt: Template with ``{text}``.
    """

    name = "vlm"

    def __init__(
        self, client: VLMClient, coords: str = "auto", prompt: str = DEFAULT_PROMPT
    ) -> None:
        self.client = client
        self.coords = coords
        self.prompt = prompt
        self.last_reply = ""

    def point(self, frame: CameraFrame, text: str) -> list[PointCandidate]:
        self.last_reply = self.client.generate(frame.rgb, self.prompt.format(text=text))
        return parse_points(
            self.last_reply, frame.width, frame.height, self.coords, default_label=text
        )
