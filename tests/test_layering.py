"""The layer map of the README holds: imports point down, torch and rclpy stay in their layers.

Static checks parse every module under captain_ros/ with ``ast`` (imports at module level and
inside functions alike, so lazy imports count as arrows too); imports by name at run time
(``importlib`` with a string) are not seen. The probes import the core with torch, rclpy and
transformers blocked.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "captain_ros"

# The README's layer map, top to bottom. A package may import the packages of the rows below its
# own, never those above it nor the others of its own row.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("research",),
    ("cli",),
    ("ros",),
    ("learn",),
    ("evaluation",),
    ("report",),
    ("harness",),
    ("policy",),
    ("api",),
    ("tasks",),
    ("perception", "motion"),
    ("bags",),
    ("backends",),
    ("core", "data"),
)
RANK = {pkg: i for i, row in enumerate(LAYERS) for pkg in row}

# Upward imports kept on purpose, each with its reason: (importing module, imported module).
EXCEPTIONS: set[tuple[str, str]] = set()
# (None today: the ROS arm's transport is registered by the ros layer, see
# test_backends_never_import_the_ros_layer.)

ML = ("torch", "transformers", "peft", "trl")
# Where torch & co. may be imported anywhere in a module: the learning layer and the research
# that trains students (RE-OPD distillation).
ML_PACKAGES = ("captain_ros.learn", "captain_ros.research.re0")
# Where they may be imported outside those: the model adapters, and only inside functions (so
# importing the module stays light).
LAZY_ML_ADAPTERS = (
    "captain_ros.policy.transformers_chat",  # the in-process transformers policy
    "captain_ros.policy.chat_render",  # its chat template renderer (shared with SFT)
    "captain_ros.perception.sam",  # SAM segmenter
    "captain_ros.perception.vlm_pointer",  # local VLM pointer
)
ROS_PREFIXES = ("rclpy", "rosidl", "launch", "tf2", "ament_index_python", "rosbag2_py")
ROS_SUFFIXES = ("_msgs", "_interfaces")  # message packages: captain_ros_interfaces, geometry_msgs
# Where rclpy and the message packages may be imported: the ros layer, and the research layer's
# own node (CoEvolve over the humanoid controller).
ROS_PACKAGES = ("captain_ros.ros", "captain_ros.research.ros")
RESEARCH = "captain_ros.research"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def imports() -> tuple[tuple[str, int, str, bool], ...]:
    """``(module, line, imported module, at module level)`` for every import in captain_ros."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        mod = module_name(path)
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        top = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: resolved against the importing package
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                targets = [base]
            else:
                continue
            found += [(mod, node.lineno, t, id(node) in top) for t in targets]
    return tuple(found)


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "captain_ros" and len(parts) > 1 else None


def upward_imports() -> Iterator[str]:
    for mod, line, target, _ in imports():
        src, dst = layer_of(mod), layer_of(target)
        if src is None or dst is None or src == dst:
            continue
        if (mod, target) in EXCEPTIONS:
            continue
        if RANK[dst] <= RANK[src]:
            yield f"{mod}:{line} imports {target} ({src} may not import {dst})"


# Inside harness/, the concept folders are layered the same way, top to bottom; the harness
# package's own __init__ (its re-exports) sits above them all and no folder imports it.
HARNESS_LAYERS: tuple[tuple[str, ...], ...] = (
    ("episode",),
    ("record", "sandbox"),
)
HARNESS_RANK = {folder: i for i, row in enumerate(HARNESS_LAYERS) for folder in row}


def harness_folder(module: str) -> str | None:
    """The harness folder of ``module`` ("" for the harness package itself), None outside it."""
    parts = module.split(".")
    if parts[:2] != ["captain_ros", "harness"]:
        return None
    return parts[2] if len(parts) > 2 else ""


def upward_harness_imports() -> Iterator[str]:
    for mod, line, target, _ in imports():
        src, dst = harness_folder(mod), harness_folder(target)
        if not src or dst is None or src == dst:  # "" : harness/__init__ may re-export them all
            continue
        if dst not in HARNESS_RANK or HARNESS_RANK[dst] <= HARNESS_RANK.get(src, -1):
            what = f"harness/{dst}" if dst else "the harness package"
            yield f"{mod}:{line} imports {target} (harness/{src} may not import {what})"


def readme_layers() -> tuple[tuple[str, ...], ...]:
    """The rows of the README's layer map: the ``name/`` words at the start of each line."""
    text = (PACKAGE.parent / "README.md").read_text()
    block = text.split("## Layer map", 1)[1].split("```", 2)[1]
    rows = []
    for line in block.splitlines():
        names = re.match(r"^ ((?:[a-z_]+/ )*[a-z_]+/)(?:\s|$)", line)
        if names:
            rows.append(tuple(n.rstrip("/") for n in names.group(1).split()))
    return tuple(rows)


def test_the_readme_shows_this_map():
    assert readme_layers() == LAYERS


def test_every_subpackage_is_on_the_map():
    subpackages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and any(p.rglob("*.py"))}
    assert subpackages == set(RANK), "add new packages to LAYERS (and to the README's layer map)"


def test_imports_point_down_the_layer_map():
    offenders = list(upward_imports())
    assert not offenders, "\n".join(offenders)


def test_harness_folders_import_down_their_own_map():
    """episode/ may import record/ and sandbox/; those two import neither each other nor
    episode/, and no folder imports the harness package (which re-exports all three)."""
    offenders = list(upward_harness_imports())
    assert not offenders, "\n".join(offenders)


def test_every_harness_module_is_in_a_folder_on_the_map():
    harness = PACKAGE / "harness"
    folders = {p.name for p in harness.iterdir() if p.is_dir() and any(p.rglob("*.py"))}
    assert folders == set(HARNESS_RANK), "add new harness folders to HARNESS_LAYERS"
    assert [p.name for p in harness.glob("*.py")] == ["__init__.py"], (
        "harness modules live in folders"
    )
    assert all((harness / f / "__init__.py").exists() for f in folders), (
        "each folder has a base module"
    )


def test_the_exceptions_still_exist():
    """A listed exception that was fixed is removed from the list (it would hide a regression)."""
    seen = {(mod, target) for mod, _, target, _ in imports()}
    assert seen >= EXCEPTIONS, EXCEPTIONS - seen


def test_backends_never_import_the_ros_layer():
    """The ``backends`` <-> ``ros`` cycle stays gone, whatever EXCEPTIONS says: the ROS arm's
    transport is registered by the ros layer (``captain_ros.ros.arm_bridge`` calls
    ``register_transport``); backends/ imports no ``captain_ros.ros`` module, at module level or
    lazily, and imports nothing by name at run time (``importlib``), where this check is blind."""
    offenders = [
        f"{mod}:{line} imports {target}"
        for mod, line, target, _ in imports()
        if mod.startswith("captain_ros.backends")
        and (target.startswith("captain_ros.ros") or target.split(".")[0] == "importlib")
    ]
    assert not offenders, "\n".join(offenders)
    registering = [
        mod
        for mod, _, target, _ in imports()
        if target == "captain_ros.backends.ros_arm.transport" and mod.startswith("captain_ros.ros")
    ]
    assert registering, "the ros layer no longer registers the ROS arm transport"


def in_research(module: str) -> bool:
    return module == RESEARCH or module.startswith(RESEARCH + ".")


def test_the_product_imports_no_research():
    """No module outside ``captain_ros/research/`` imports it, at module level or lazily: a
    deployer's install runs without CoEvolve and RE-0 (stricter than the layer map, which would
    also report it, because it holds whatever EXCEPTIONS says)."""
    offenders = [
        f"{mod}:{line} imports {target}"
        for mod, line, target, _ in imports()
        if in_research(target) and not in_research(mod)
    ]
    assert not offenders, "\n".join(offenders)


def research_modules_named_by_the_product() -> list[tuple[str, str]]:
    """``(product module, research module)`` for each research module a product module names in
    a string (the dispatch tables of the CLI and the ROS executables)."""
    named = []
    for path in sorted(PACKAGE.rglob("*.py")):
        mod = module_name(path)
        if in_research(mod):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found = re.fullmatch(r"(captain_ros\.research(?:\.\w+)+)(?::\w+)?", node.value)
                if found:
                    named.append((mod, found.group(1)))
    return named


def test_the_research_modules_the_product_names_exist():
    """The product reaches research only by name (``captain coevolve``, ``captain learn re0``,
    the ``captain_coevolve`` executable); each name is a module under captain_ros/research/."""
    named = research_modules_named_by_the_product()
    assert {target for _, target in named} >= {
        "captain_ros.research.coevolve.cli",
        "captain_ros.research.re0.cli",
        "captain_ros.research.ros.humanoid_coevolve_node",
    }
    missing = [
        f"{mod} names {target}"
        for mod, target in named
        if not (PACKAGE.parent / f"{target.replace('.', '/')}.py").exists()
        and not (PACKAGE.parent / target.replace(".", "/") / "__init__.py").exists()
    ]
    assert not missing, "\n".join(missing)


def test_the_check_sees_an_upward_import(tmp_path, monkeypatch):
    """The checker itself: a core module importing the harness is reported with its line."""
    fake = tmp_path / "captain_ros"
    (fake / "core").mkdir(parents=True)
    (fake / "harness").mkdir()
    (fake / "core" / "bad.py").write_text(
        "import os\n\n\ndef f():\n    from captain_ros.harness import episode\n"
    )
    (fake / "harness" / "ok.py").write_text("from ..core import bad\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    imports.cache_clear()
    try:
        assert list(upward_imports()) == [
            "captain_ros.core.bad:5 imports captain_ros.harness (core may not import harness)"
        ]
        assert ("captain_ros.harness.ok", 1, "captain_ros.core", True) in imports()
    finally:
        imports.cache_clear()


def test_the_checks_see_a_product_import_of_research(tmp_path, monkeypatch):
    """The research checkers themselves: a lazy import of research from learn/ is reported (by the
    strict rule and by the layer map), research importing learn is not, and a dispatch table's
    name of a research module that does not exist is reported."""
    fake = tmp_path / "captain_ros"
    for folder in ("learn", "research/re0", "cli"):
        (fake / folder).mkdir(parents=True)
    (fake / "learn" / "bad.py").write_text("def f():\n    from captain_ros.research.re0 import x\n")
    (fake / "research" / "re0" / "ok.py").write_text("from captain_ros.learn import bad\n")
    (fake / "cli" / "table.py").write_text('T = {"x": "captain_ros.research.re0.gone"}\n')
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    imports.cache_clear()
    try:
        assert [
            f"{mod}:{line} imports {target}"
            for mod, line, target, _ in imports()
            if in_research(target) and not in_research(mod)
        ] == ["captain_ros.learn.bad:2 imports captain_ros.research.re0"]
        assert list(upward_imports()) == [
            "captain_ros.learn.bad:2 imports captain_ros.research.re0 "
            "(learn may not import research)"
        ]
        assert research_modules_named_by_the_product() == [
            ("captain_ros.cli.table", "captain_ros.research.re0.gone")
        ]
    finally:
        imports.cache_clear()


def test_the_check_sees_an_upward_import_between_harness_folders(tmp_path, monkeypatch):
    """The harness checker itself: sandbox/ importing episode/ (lazily) and record/ importing
    the harness package are reported; episode/ importing sandbox/ is not."""
    fake = tmp_path / "captain_ros"
    for folder in ("episode", "record", "sandbox"):
        (fake / "harness" / folder).mkdir(parents=True)
    (fake / "harness" / "sandbox" / "bad.py").write_text(
        "def f():\n    from captain_ros.harness.episode import loop\n"
    )
    (fake / "harness" / "record" / "worse.py").write_text("from .. import episode\n")
    (fake / "harness" / "episode" / "ok.py").write_text("from ..sandbox import bad\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    imports.cache_clear()
    try:
        assert sorted(upward_harness_imports()) == [
            "captain_ros.harness.record.worse:1 imports captain_ros.harness "
            "(harness/record may not import the harness package)",
            "captain_ros.harness.sandbox.bad:2 imports captain_ros.harness.episode "
            "(harness/sandbox may not import harness/episode)",
        ]
    finally:
        imports.cache_clear()


def test_torch_and_transformers_only_in_learn_and_the_lazy_adapters():
    offenders = []
    for mod, line, target, top_level in imports():
        if target.split(".")[0] not in ML or mod.startswith(ML_PACKAGES):
            continue
        if mod in LAZY_ML_ADAPTERS and not top_level:
            continue
        where = "at module level" if top_level else "outside the model adapters"
        offenders.append(f"{mod}:{line} imports {target} {where}")
    assert not offenders, "\n".join(offenders)


def test_rclpy_and_ros_messages_only_in_ros():
    offenders = [
        f"{mod}:{line} imports {target}"
        for mod, line, target, _ in imports()
        if not mod.startswith(ROS_PACKAGES)
        and (target.startswith(ROS_PREFIXES) or target.split(".")[0].endswith(ROS_SUFFIXES))
    ]
    assert not offenders, "\n".join(offenders)


CORE = [
    "captain_ros.core",
    "captain_ros.backends",
    "captain_ros.api",
    "captain_ros.harness",
    "captain_ros.motion",
    "captain_ros.perception",
    "captain_ros.tasks",
    "captain_ros.policy",
]


def _probe(blocked: list[str]) -> subprocess.CompletedProcess:
    code = (
        "import importlib, importlib.util, sys\n"
        f"blocked = {blocked!r}\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in blocked:\n"
        "            raise ImportError(f'{name} is blocked for this test')\n"
        "sys.meta_path.insert(0, Block())\n"
        f"for mod in {CORE!r}:\n"
        "    if importlib.util.find_spec(mod) is not None:\n"
        "        importlib.import_module(mod)\n"
        "leaked = [m for m in sys.modules if m.split('.')[0] in blocked]\n"
        "assert not leaked, leaked\n"
        "print('ok')\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_core_imports_without_torch_and_rclpy():
    proc = _probe(["torch", "rclpy", "transformers"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith("ok")
