"""Which tier a test module belongs to, read from what it imports (used by tests/conftest.py).

A test module is in the ``ros`` tier when it lives in ``tests/ros/`` or imports ROS 2 (rclpy,
the built interfaces, launch), and in the ``learn`` tier when it imports a learning framework
(torch, transformers, peft, trl, datasets, llama.cpp). "Imports" is followed through the
package: a test that imports ``captain_ros.learn.sft.train`` needs torch because that module
imports it at its top level. The reading is static (``ast``), so nothing heavy is imported to
decide, and a machine without rclpy can still tell which modules to skip.

Imports inside a test module's functions count (a test runs them); inside the package only
module-level imports count (a lazy import runs only when its function is called, which the
runtime check in conftest.py reports if it happens in an unmarked test).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
PACKAGE = "captain_ros"

ROS_ROOTS = frozenset(
    {
        "rclpy",
        "rosidl_runtime_py",
        "rosidl_parser",
        "rosbag2_py",
        "launch",
        "launch_ros",
        "launch_testing",
        "tf2_ros",
        "tf2_msgs",
        "ament_index_python",
        "captain_ros_interfaces",
    }
)
LEARN_ROOTS = frozenset(
    {
        "torch",
        "transformers",
        "peft",
        "trl",
        "datasets",
        "accelerate",
        "vllm",
        "llama_cpp",
    }
)
TIERS = {"ros": ROS_ROOTS, "learn": LEARN_ROOTS}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(tree: ast.Module, everywhere: bool) -> list[ast.stmt | ast.expr]:
    """The import statements (and ``importorskip`` calls) a module runs."""
    if everywhere:
        return [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom | ast.Call)]
    found: list[ast.stmt | ast.expr] = []
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If) and not _is_type_checking(node):
            todo += node.body + node.orelse
        elif isinstance(node, ast.Try):
            todo += node.body + node.orelse + node.finalbody
            for handler in node.handlers:
                todo += handler.body
    return found


def _package_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


@functools.cache
def _names(path: Path, everywhere: bool) -> frozenset[str]:
    """Dotted names a module imports (relative imports resolved inside the package)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return frozenset()
    here = _package_of(path) if path.is_relative_to(ROOT / PACKAGE) else ""
    is_pkg = path.name == "__init__.py"
    names: set[str] = set()
    for node in _statements(tree, everywhere):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = here.split(".") if here else []
                parts = parts[: len(parts) - node.level + (1 if is_pkg else 0)]
                base = ".".join([*parts, base] if base else parts)
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names if a.name != "*")
        elif isinstance(node, ast.Call):
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "importorskip"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                names.add(node.args[0].value)
    return frozenset(names)


@functools.cache
def _helper_files() -> dict[str, Path]:
    """Test helper modules by import name (tests/*.py and tests/<dir>/*.py are on sys.path)."""
    found: dict[str, Path] = {}
    for path in sorted(TESTS.rglob("*.py")):
        if not path.name.startswith(("test_", "conftest")):
            found.setdefault(path.stem, path)
    return found


@functools.cache
def _module_file(name: str) -> Path | None:
    if name.split(".")[0] == PACKAGE:
        base = ROOT.joinpath(*name.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None
    return _helper_files().get(name)


@functools.cache
def _roots(path: Path, everywhere: bool) -> frozenset[str]:
    """Top-level external packages a module pulls in, through the package and test helpers."""
    seen: set[Path] = set()
    roots: set[str] = set()
    todo = [(path, everywhere)]
    while todo:
        current, deep = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        for name in _names(current, deep):
            parts = name.split(".")
            roots.add(parts[0])
            # importing a.b.c runs a/__init__, a/b/__init__ and a/b/c
            for i in range(1, len(parts) + 1):
                target = _module_file(".".join(parts[:i]))
                if target is not None and target not in seen:
                    todo.append((target, target.parent == TESTS or TESTS in target.parents))
    return frozenset(roots)


def tiers_of(path: Path) -> frozenset[str]:
    """The markers (``ros``, ``learn``) a test module gets from its folder and its imports."""
    roots = _roots(path.resolve(), True)
    found = {tier for tier, names in TIERS.items() if roots & names}
    if (TESTS / "ros") in path.resolve().parents:
        found.add("ros")
    return frozenset(found)


# Slow tests, by module or by test function (node ids relative to tests/): every test of this
# run that took 4 s or more in one `make test-fast --durations=0` on the shared 2-core VM
# (2026-12-05, load average 7-8; about 1 s of CPU each), and the modules whose shared fixture
# runs whole episodes (a setup of 5 s or more). They stay in `make test`.
SLOW: frozenset[str] = frozenset(
    {
        "coevolve/test_cli_coevolve.py::test_bad_input_gets_one_clear_line_and_a_nonzero_status",
        "coevolve/test_cli_coevolve.py::test_eval_prints_the_metrics_table",
        "coevolve/test_cli_coevolve.py::test_run_writes_summary_memory_and_report",
        "coevolve/test_layering_coevolve.py::test_coevolve_imports_without_rclpy_and_torch",
        "coevolve/test_model_roles.py::test_model_roles_drive_a_run_through_the_openai_client",
        "hardware/test_piper_emulator.py::test_guarded_move_agrees_with_mujoco",
        "hardware/test_piper_episode.py::test_hw_check_bus_down_is_one_line",
        "learn/test_dataset_build.py",
        "learn/test_re0_verify.py::test_false_admission_rate_within_alpha_when_delta_is_zero",
        "learn/test_rl_served.py::test_a_served_rollout_records_the_servers_tokens",
        "re0/test_decision_points.py",
        "re0/test_locate.py::test_a_real_faulty_placement_is_located",
        "re0/test_re0_resume.py::test_finished_jobs_are_reused_and_others_rerun",
        "re0/test_reopd.py::test_a_task_at_rho_is_not_refined_and_the_pass_says_so",
        "re0/test_reopd.py::test_rows_of_a_recorded_episode_load_unchanged_with_their_weights",
        "test_cli_errors.py::test_bad_input_is_one_line_and_a_nonzero_exit",
        "test_cli_errors.py::test_debug_shows_the_traceback",
        "test_cli_errors.py::test_overwrite_replaces_a_non_empty_out",
        "test_cli_run.py",
        "test_eval_runner.py::test_spawned_workers_run_jobs_and_isolate_crashes",
        "test_eval_runner.py::test_workers_exit_when_the_parent_is_killed",
        "test_examples.py::test_robot_api_plain_python",
        "test_expert_takeover.py::test_every_task_can_be_taken_over_and_every_cell_compiles",
        "test_lerobot_export.py",
        "test_perception_libraries.py::test_min_area_rectangle_matches_a_brute_force_search",
        "test_perception_service.py::test_inspect_release_geometry_with_held_object",
        "test_perception_service.py::test_track_target_and_compare_after_motion",
        "test_profile_helpers.py",
        "test_profiles.py::test_the_profile_is_recorded_and_datasets_do_not_mix_them",
        "test_report_html.py",
        "test_sandbox_escape.py::test_cpu_limit_kills_and_restarts",
        "test_sandbox_escape.py::test_the_harness_survives_a_crash_loop",
        "test_session_basic.py::test_code_that_ignores_the_interrupt_is_killed_and_restarted",
        "test_session_basic.py::test_time_in_robot_calls_does_not_count_against_the_cell",
        "test_tasks_motion.py::test_reference_solution_by_motion_commands_solves_the_task",
        "test_tiers.py::test_ros_modules_skip_at_collection_without_rclpy",
    }
)


def is_slow(nodeid: str) -> bool:
    """Whether a test (``tests/...::name[params]``) is in :data:`SLOW`."""
    rel = nodeid.removeprefix("tests/")
    module, _, rest = rel.partition("::")
    return module in SLOW or f"{module}::{rest.split('[')[0]}" in SLOW
