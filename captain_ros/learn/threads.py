"""The one-line note when a training process (``captain learn sft``, ``captain learn rl``) would
leave CPU cores idle. Torch-free.

Both compute on ``--threads`` when given, else on torch's own default: ``$OMP_NUM_THREADS``, else
every core. Evaluation workers set ``OMP_NUM_THREADS=1`` so that parallel episodes do not
oversubscribe the cores; a trainer that inherits it from an experiment's environment computes on
one core, which on the 2-core AMD EPYC costs 1.45x (benchmarks/results/sft.md). So a
single-process CPU run that took fewer threads than cores from that variable says so (a
``--threads`` the caller named is taken as meant, and torch's default, the physical cores, is
left alone).
"""

from __future__ import annotations

from collections.abc import Mapping


def thread_note(
    prog: str, threads: int, device: str, world_size: int, cores: int, env: Mapping[str, str]
) -> str | None:
    """A one-line note for ``prog`` when a single-process CPU run computes on fewer ``threads``
    than the machine's ``cores`` because ``env`` sets ``OMP_NUM_THREADS``, else None. Call it only
    when no ``--threads`` was given; under ``torchrun`` each process takes its share."""
    if device != "cpu" or world_size > 1 or threads >= cores or "OMP_NUM_THREADS" not in env:
        return None
    return (
        f"{prog}: note: training on {threads} of {cores} CPU cores (OMP_NUM_THREADS="
        f"{env['OMP_NUM_THREADS']}); --threads {cores} uses them all"
    )
