"""How many CPU threads torch computes with in a training process (``captain learn sft`` and
``captain learn rl``), and the one-line note when a run would leave cores idle. Torch-free.

The default follows the engines' (:func:`~captain_ros.policy.engines.base.default_threads`):
``$OMP_NUM_THREADS``, else every core. Evaluation workers set ``OMP_NUM_THREADS=1`` so that
parallel episodes do not oversubscribe the cores; a trainer that inherits it from an experiment's
environment computes on one core. On the 2-core AMD EPYC that costs 1.45x (benchmarks/results/
sft.md), so a single-process CPU run on fewer threads than cores says so.
"""

from __future__ import annotations

from captain_ros.policy.engines.base import default_threads


def cpu_threads(requested: int | None) -> int:
    """``requested`` when given (> 0), else :func:`default_threads`."""
    return requested if requested and requested > 0 else default_threads()


def thread_note(prog: str, threads: int, device: str, world_size: int, cores: int) -> str | None:
    """A one-line note for ``prog`` when a single-process CPU run computes on fewer ``threads``
    than the machine's ``cores``, else None. Under ``torchrun`` each process takes its share."""
    if device != "cpu" or world_size > 1 or threads >= cores:
        return None
    return (
        f"{prog}: note: training on {threads} of {cores} CPU cores "
        f"(--threads, else $OMP_NUM_THREADS); --threads {cores} uses them all"
    )
