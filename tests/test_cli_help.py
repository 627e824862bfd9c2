"""``captain --help`` is complete: every command, and every subcommand of the nested ones."""

from __future__ import annotations

import argparse
import re

import pytest

from captain_ros.cli import learn
from captain_ros.cli.main import PASSTHROUGH, build_parser, main
from captain_ros.research.coevolve import cli as coevolve


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """``captain --help``'s command lines: name -> help text (wide enough not to wrap)."""
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 0
    lines = {}
    for line in capsys.readouterr().out.splitlines():
        if line.startswith("    ") and not line.startswith("     ") and len(line.split()) > 1:
            name, text = line.split(maxsplit=1)
            lines[name] = text
    return lines


def _choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "300")


def test_every_command_and_learn_rl_are_listed(capsys: pytest.CaptureFixture[str]) -> None:
    lines = _help(["--help"], capsys)
    commands = list(_choices(build_parser()))
    assert set(PASSTHROUGH) <= set(commands)
    assert list(lines) == commands, "captain --help lists other commands than it parses"
    words = re.findall(r"[\w-]+", lines["learn"])
    for name in learn.COMMANDS:
        assert name in words, f"captain --help's learn line omits {name}: {lines['learn']}"
    assert "rl" in words


@pytest.mark.parametrize(
    ("command", "parser"),
    [("bag", None), ("coevolve", coevolve.build_parser())],
)
def test_nested_commands_name_their_subcommands(
    command: str, parser: argparse.ArgumentParser | None, capsys: pytest.CaptureFixture[str]
) -> None:
    top = build_parser()
    nested = _choices(parser if parser is not None else _choices(top)[command])
    assert nested, f"{command} has no subcommands"
    words = re.findall(r"[\w-]+", _help(["--help"], capsys)[command])
    for name in nested:
        assert name in words, f"captain --help's {command} line omits {name}"


def test_captain_learn_help_lists_every_learn_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert learn.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name, (_module, help_text) in learn.COMMANDS.items():
        assert f"  {name:<9} {help_text}" in out.splitlines()
