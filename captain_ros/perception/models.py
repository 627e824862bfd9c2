"""Which segmentation and pointing models perception uses, chosen by configuration.

The weight-free colour/depth segmenter suits the simulator, not a real table. On hardware the
perception node (ROS parameters) and ``captain run`` (flags) select:

- ``segmenter``: ``default`` (weight-free) or ``sam`` (:class:`~.sam.SamSegmenter` over a local
  SAM checkpoint folder, ``sam_folder``; meant: ``facebook/sam-vit-base`` or ``sam-vit-huge``
  saved with ``save_pretrained``);
- ``pointer``: ``default`` (weight-free), ``vlm_local`` (:class:`~.vlm_pointer.TransformersVLM`
  over a local image-text-to-text folder, ``vlm_folder``) or ``vlm_endpoint``
  (:class:`~.vlm_pointer.EndpointVLM`: an OpenAI-compatible server, ``vlm_url`` + ``vlm_model``,
  serving a Molmo-style pointing model, meant: ``allenai/Molmo-7B-D-0924`` under vLLM; the key
  is read from the environment variable named by ``vlm_api_key_env``).

A SAM segmenter turns text prompts into points with the chosen pointer. Models load lazily (torch
only when first used); a missing folder or an incomplete endpoint is refused at start.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captain_ros.core.errors import InvalidArgumentError

SEGMENTERS = ("default", "sam")
POINTERS = ("default", "vlm_local", "vlm_endpoint")


@dataclass(frozen=True)
class PerceptionModels:
    """The perception model selection (see the module docstring); defaults = the simulator's."""

    segmenter: str = "default"
    sam_folder: str = ""
    pointer: str = "default"
    vlm_folder: str = ""
    vlm_url: str = ""
    vlm_model: str = ""
    vlm_api_key_env: str = "CAPTAIN_VLM_API_KEY"
    vlm_coords: str = "auto"
    device: str = "cpu"

    def __post_init__(self) -> None:
        if self.segmenter not in SEGMENTERS:
            raise InvalidArgumentError(
                f"segmenter {self.segmenter!r}; valid: {', '.join(SEGMENTERS)}"
            )
        if self.pointer not in POINTERS:
            raise InvalidArgumentError(f"pointer {self.pointer!r}; valid: {', '.join(POINTERS)}")
        if self.segmenter == "sam" and not (Path(self.sam_folder) / "config.json").is_file():
            raise InvalidArgumentError(
                f"segmenter sam: sam_folder {self.sam_folder!r} holds no "
                "SAM checkpoint (config.json); save one with "
                "save_pretrained (no hub access at run time)"
            )
        if self.pointer == "vlm_local" and not (Path(self.vlm_folder) / "config.json").is_file():
            raise InvalidArgumentError(
                f"pointer vlm_local: vlm_folder {self.vlm_folder!r} holds no model (config.json)"
            )
        if self.pointer == "vlm_endpoint" and not (self.vlm_url and self.vlm_model):
            raise InvalidArgumentError(
                "pointer vlm_endpoint needs vlm_url (e.g. "
                "http://localhost:8000/v1) and vlm_model (served name)"
            )

    @property
    def is_default(self) -> bool:
        return self.segmenter == "default" and self.pointer == "default"

    def build(self) -> tuple[Any, Any]:
        """``(segmenter, pointer)`` for :class:`~.service.PerceptionService` (``None`` = default)."""
        pointer: Any = None
        if self.pointer == "vlm_local":
            from captain_ros.perception.vlm_pointer import TransformersVLM, VLMPointer

            pointer = VLMPointer(
                TransformersVLM(self.vlm_folder, device=self.device), coords=self.vlm_coords
            )
        elif self.pointer == "vlm_endpoint":
            from captain_ros.perception.vlm_pointer import EndpointVLM, VLMPointer

            key = os.environ.get(self.vlm_api_key_env) if self.vlm_api_key_env else None
            pointer = VLMPointer(
                EndpointVLM(self.vlm_url, self.vlm_model, api_key=key), coords=self.vlm_coords
            )
        segmenter: Any = None
        if self.segmenter == "sam":
            from captain_ros.perception.default_segmenter import DefaultPointer
            from captain_ros.perception.sam import SamSegmenter

            segmenter = SamSegmenter(
                self.sam_folder, pointer=pointer or DefaultPointer(), device=self.device
            )
        return segmenter, pointer

    def service(self, backend: Any) -> Any:
        """A :class:`~.service.PerceptionService` over ``backend`` with these models."""
        from captain_ros.perception.service import PerceptionService

        segmenter, pointer = self.build()
        return PerceptionService(backend, segmenter=segmenter, pointer=pointer)


__all__ = ["POINTERS", "SEGMENTERS", "PerceptionModels"]
