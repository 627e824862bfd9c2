"""SAM-family segmentation through transformers (``SamModel``), loaded from a local folder.

Point and box prompts go straight to the model; a text prompt is first turned into points by a
:class:`~captain_ros.perception.segmenter.Pointer` (Molmo-style pointing, or the weight-free
default), then each point is segmented. torch and transformers are imported only when the model is
first used, so importing :mod:`captain_ros.perception` stays torch-free. The image processor is
the PIL one (``SamImageProcessorPil``): PyPI torchvision does not import beside the local torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from captain_ros.core.errors import InvalidArgumentError
from captain_ros.core.types import CameraFrame
from captain_ros.perception.segmenter import MaskCandidate, Pointer


class SamSegmenter:
    """Promptable segmentation with a SAM checkpoint folder (``config.json`` + weights + the image
    processor's ``preprocessor_config.json``).

    Args:
        folder: Local model folder (no hub access on these machines).
        pointer: Turns a text prompt into points; without one, text-only prompts return ``[]``.
        device: torch device string.
        mask_threshold: Logit threshold of the upsampled masks.
        num_threads: torch CPU threads (``None`` leaves torch's setting alone).
    """

    name = "sam"

    def __init__(
        self,
        folder: str | Path,
        pointer: Pointer | None = None,
        device: str = "cpu",
        mask_threshold: float = 0.0,
        num_threads: int | None = None,
    ) -> None:
        self.folder = Path(folder)
        if not (self.folder / "config.json").is_file():
            raise InvalidArgumentError(
                f"{self.folder} holds no SAM checkpoint (config.json missing)"
            )
        self.pointer = pointer
        self.device = device
        self.mask_threshold = mask_threshold
        self.num_threads = num_threads
        self._model: Any = None
        self._processor: Any = None
        self._emb_cache: tuple[np.ndarray, Any, Any] | None = None

    def _load(self) -> None:
        if self._model is not None:
            return
        import torch
        from transformers import SamImageProcessorPil, SamModel, SamProcessor

        if self.num_threads:
            torch.set_num_threads(self.num_threads)
        self._processor = SamProcessor(
            image_processor=SamImageProcessorPil.from_pretrained(self.folder)
        )
        self._model = SamModel.from_pretrained(self.folder).to(self.device).eval()  # type: ignore[arg-type]

    def _embeddings(self, rgb: np.ndarray) -> tuple[Any, Any]:
        """Image embeddings (cached for the last image) and the processor's size info."""
        import torch

        if self._emb_cache is not None and self._emb_cache[0] is rgb:
            return self._emb_cache[1], self._emb_cache[2]
        inputs = self._processor(images=rgb, return_tensors="pt")
        with torch.no_grad():
            emb = self._model.get_image_embeddings(inputs["pixel_values"].to(self.device))
        self._emb_cache = (rgb, emb, inputs)
        return emb, inputs

    def _run(
        self,
        rgb: np.ndarray,
        points: list[tuple[float, float]] | None,
        box: tuple[float, float, float, float] | None,
    ) -> tuple[np.ndarray, float]:
        import torch

        emb, image_inputs = self._embeddings(rgb)
        kwargs: dict[str, Any] = {}
        if points:
            kwargs["input_points"] = [[[[float(u), float(v)] for u, v in points]]]
            kwargs["input_labels"] = [[[1] * len(points)]]
        if box is not None:
            kwargs["input_boxes"] = [[[float(x) for x in box]]]
        prompt = self._processor(images=rgb, return_tensors="pt", **kwargs)
        model_kwargs = {
            k: prompt[k].to(self.device)
            for k in ("input_points", "input_labels", "input_boxes")
            if k in prompt
        }
        with torch.no_grad():
            out = self._model(image_embeddings=emb, multimask_output=True, **model_kwargs)
        masks = self._processor.image_processor.post_process_masks(
            out.pred_masks.cpu(),
            image_inputs["original_sizes"],
            image_inputs["reshaped_input_sizes"],
            mask_threshold=self.mask_threshold,
        )[0][0]  # (3, H, W) for the first prompt
        scores = out.iou_scores[0, 0].cpu().numpy()
        k = int(np.argmax(scores))
        return np.asarray(masks[k], dtype=bool), float(np.clip(scores[k], 0.0, 1.0))

    def segment(
        self,
        frame: CameraFrame,
        text: str = "",
        points: list[tuple[float, float]] | None = None,
        box: tuple[float, float, float, float] | None = None,
    ) -> list[MaskCandidate]:
        """One mask per prompt point (or for the box); text prompts are pointed first."""
        self._load()
        if not points and box is None:
            if not text or self.pointer is None:
                return []
            points = [(p.u, p.v) for p in self.pointer.point(frame, text)]
            if not points:
                return []
        out: list[MaskCandidate] = []
        if box is not None:
            mask, score = self._run(frame.rgb, points or None, box)
            if mask.any():
                out.append(MaskCandidate(mask, score, text or "object"))
            return out
        for u, v in points or []:
            mask, score = self._run(frame.rgb, [(u, v)], None)
            if mask.any():
                out.append(MaskCandidate(mask, score, text or "object"))
        out.sort(key=lambda c: -c.score)
        return out
