"""The simulator critic: inputs, ensemble, version, scoring, and its folder on disk.

A critic folder holds ``critic.json`` (format, input spec, ensemble shape, version),
``model.safetensors`` (the ensemble's weights), optionally ``cotrain.pt`` (the co-training
optimizer state and running statistics, for resume) and ``metrics.json`` (held-out figures).

``version`` counts updates: warm start makes it 1 and every co-training round adds 1. Values
handed to the credit code carry the version that produced them, so a round's advantages can be
checked to come from the critic *before* that round's update.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from captain_ros.learn.credit.advantage import EpisodeValues
from captain_ros.learn.critic.inputs import InputSpec, request_states
from captain_ros.learn.critic.model import HIDDEN, N_MEMBERS, EnsembleMLP
from captain_ros.learn.episodes import EpisodeArrays
from captain_ros.learn.errors import CriticFolderError

FORMAT = "captain-critic/1"
_CHUNK = 65536


class Critic:
    """V(s, t) over [x(s); t; onehot(task)] with a fixed input spec."""

    def __init__(
        self,
        spec: InputSpec,
        *,
        n_members: int = N_MEMBERS,
        hidden: Sequence[int] = HIDDEN,
        seed: int = 0,
        version: int = 0,
    ) -> None:
        self.spec = spec
        self.model = EnsembleMLP(spec.dim, n_members, hidden, seed=seed)
        self.seed = int(seed)
        self.version = int(version)

    @classmethod
    def for_episodes(
        cls,
        episodes: Sequence[EpisodeArrays],
        feature_names: Sequence[str],
        tasks: Sequence[str] | None = None,
        seed: int = 0,
    ) -> Critic:
        """A fresh critic whose standardisation is fitted on ``episodes``' request states."""
        b = request_states(episodes)
        if b.x.shape[1] != len(feature_names):
            raise CriticFolderError(
                f"episodes have {b.x.shape[1]} features, names list {len(feature_names)}"
            )
        spec = InputSpec.fit(feature_names, tasks or sorted({e.task for e in episodes}), b.x, b.t)
        return cls(spec, seed=seed)

    # -- scoring ---------------------------------------------------------------------------
    def logits_of(self, inputs: np.ndarray) -> np.ndarray:
        """Ensemble logits of encoded inputs (N, dim), without gradients."""
        self.model.eval()
        out = []
        with torch.no_grad():
            for k in range(0, inputs.shape[0], _CHUNK):
                out.append(self.model(torch.from_numpy(inputs[k : k + _CHUNK])).numpy())
        return np.concatenate(out) if out else np.zeros(0, np.float32)

    def values(self, x: np.ndarray, t: np.ndarray, tasks: Sequence[str]) -> np.ndarray:
        """V(s, t) for raw features (N, F), request indices (N,) and task names."""
        z = self.logits_of(self.spec.encode(x, t, tasks)).astype(np.float64)
        return 1.0 / (1.0 + np.exp(-z))

    def episode_values(self, episodes: Sequence[EpisodeArrays]) -> dict[str, EpisodeValues]:
        """V(s_t, t) and V(s_{t+1}, t) of every episode, in one batched pass, tagged with
        the current version."""
        xs, ts, tasks, spans = [], [], [], []
        for e in episodes:
            n = e.n_requests
            idx = np.arange(1, n + 1)
            xs += [e.features[:n], e.features[1:n]]  # s_1..s_T at t ; s_2..s_T at t = 1..T-1
            ts += [idx, idx[:-1]]
            tasks += [e.task] * (2 * n - 1)
            spans.append(n)
        v = self.values(np.concatenate(xs), np.concatenate(ts), tasks)
        out, k = {}, 0
        for e, n in zip(episodes, spans, strict=True):
            out[e.episode_id] = EpisodeValues(v[k : k + n], v[k + n : k + 2 * n - 1], self.version)
            k += 2 * n - 1
        return out

    # -- folder ----------------------------------------------------------------------------
    def save(self, folder: str | Path) -> Path:
        from safetensors.torch import save_file

        p = Path(folder)
        p.mkdir(parents=True, exist_ok=True)
        meta = {
            "format": FORMAT,
            "spec": self.spec.to_dict(),
            "n_members": self.model.n_members,
            "hidden": list(self.model.hidden),
            "seed": self.seed,
            "version": self.version,
        }
        save_file(
            {k: v.detach().contiguous() for k, v in self.model.state_dict().items()},
            str(p / "model.safetensors"),
        )
        (p / "critic.json").write_text(json.dumps(meta, indent=2))
        return p

    @classmethod
    def load(cls, folder: str | Path, feature_names: Sequence[str] | None = None) -> Critic:
        """Load a critic folder; ``feature_names`` (if given) must match the stored ones."""
        from safetensors.torch import load_file

        p = Path(folder)
        for name in ("critic.json", "model.safetensors"):
            if not (p / name).is_file():
                raise CriticFolderError(f"{p} is not a critic folder: {name} is missing")
        try:
            meta = json.loads((p / "critic.json").read_text())
            if meta.get("format") != FORMAT:
                raise CriticFolderError(f"{p}: format {meta.get('format')!r}, expected {FORMAT!r}")
            spec = InputSpec.from_dict(meta["spec"])
            critic = cls(
                spec,
                n_members=int(meta["n_members"]),
                hidden=tuple(meta["hidden"]),
                seed=int(meta.get("seed", 0)),
                version=int(meta["version"]),
            )
            critic.model.load_state_dict(load_file(str(p / "model.safetensors")))
        except CriticFolderError:
            raise
        except (KeyError, TypeError, ValueError, RuntimeError, json.JSONDecodeError) as exc:
            raise CriticFolderError(
                f"{p}: unreadable critic folder ({type(exc).__name__}: {str(exc)[:200]})"
            ) from exc
        if feature_names is not None and tuple(feature_names) != spec.feature_names:
            raise CriticFolderError(
                f"{p}: the critic was trained on different features "
                f"({len(spec.feature_names)} stored vs {len(feature_names)})"
            )
        return critic
