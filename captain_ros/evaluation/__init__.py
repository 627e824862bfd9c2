"""Episodes in-process, evaluations over seeds (processes or Ray), statistics and plots.

- :func:`captain_ros.evaluation.episode.run_one`: one episode and its folder;
- :func:`captain_ros.evaluation.runner.evaluate`: many episodes, ``eval.json`` + ``eval.png``;
- :mod:`captain_ros.evaluation.stats`: Wilson score intervals, exact McNemar test;
- :mod:`captain_ros.evaluation.summary`: the episode summary schema, aggregates, paired comparison.
"""

from captain_ros.evaluation.stats import mcnemar, wilson_interval
from captain_ros.evaluation.summary import aggregate, compare
from captain_ros.harness.record.episode_record import EpisodeRecord

__all__ = ["EpisodeRecord", "aggregate", "compare", "mcnemar", "wilson_interval"]
