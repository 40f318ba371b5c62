"""CONTRIBUTING.md's map matches the tree: every path it names exists, every module of
src/nqprof is named in it, and the kernels' headers name host files that exist."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "nqprof"
#: Where the map's descriptions start (an entry's name ends before it).
DESCRIPTION_COLUMN = 20


def map_block() -> list[str]:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    section = text[text.index("## The map") :]
    start = section.index("```\n") + 4
    return section[start : section.index("```", start)].splitlines()


def entries() -> list[tuple[Path, str, str]]:
    """(path, the entry's own text, the text of its whole subtree) for every entry of the
    map: a name at two spaces per level, then its description (continuation lines are
    indented to the description's column)."""
    parsed: list[tuple[int, Path, list[str]]] = []
    stack: list[tuple[int, Path]] = []
    for line in map_block():
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        if not stripped:
            continue
        if indent >= DESCRIPTION_COLUMN:  # the description goes on
            parsed[-1][2].append(stripped)
            continue
        name, _, description = stripped.partition("  ")
        assert indent % 2 == 0, f"map line {line!r}: entries are indented two spaces per level"
        depth = indent // 2
        stack = [(d, p) for d, p in stack if d < depth]
        parent = stack[-1][1] if stack else ROOT
        path = parent / name.strip().rstrip("/")
        stack.append((depth, path))
        parsed.append((depth, path, [name, description.strip()]))
    out = []
    for i, (depth, path, own) in enumerate(parsed):
        subtree = list(own)
        for later_depth, _, later in parsed[i + 1 :]:
            if later_depth <= depth:
                break
            subtree.extend(later)
        out.append((path, " ".join(own), " ".join(subtree)))
    return out


def _words(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))


def test_the_map_parses():
    paths = {p for p, _, _ in entries()}
    assert (
        PACKAGE in paths
        and PACKAGE / "strategies" / "cdp" in paths
        and ROOT / "kernels" / "cpu" in paths
    )


def test_every_path_the_map_names_exists():
    missing = [str(p.relative_to(ROOT)) for p, _, _ in entries() if not p.exists()]
    assert not missing, f"CONTRIBUTING.md's map names paths that do not exist: {missing}"


def test_every_file_an_entry_names_exists_under_it():
    """Files named in an entry's description (``base.py``, ``gpu_check.sh``) are in its folder."""
    missing = []
    for path, own, _ in entries():
        if not path.is_dir():
            continue
        for name in re.findall(r"\b[\w./]+\.(?:py|sh|cuh|cu|c|h)\b", own):
            if "*" in name or not re.match(r"^[\w./]+$", name):
                continue
            if not any(path.rglob(Path(name).name)):
                missing.append(f"{path.relative_to(ROOT)}: {name}")
    assert not missing, f"CONTRIBUTING.md's map names files that are not there: {missing}"


def _registered_strategy_modules() -> set[str]:
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][
        "nqprof.strategies"
    ]
    return {value.partition(":")[0] for value in table.values()}


def test_every_module_is_named_in_the_map():
    """Each module and package of src/nqprof is an entry of the map, or named in the text of
    its package's entry (the strategies registered in pyproject.toml are the "one module per
    strategy" of strategies/)."""
    found = {path: subtree for path, _, subtree in entries()}
    top = {
        p
        for p in PACKAGE.iterdir()
        if (p.suffix == ".py" or (p / "__init__.py").exists()) and not p.name.startswith("__")
    }
    unnamed = sorted(str(p.relative_to(PACKAGE)) for p in top if p not in found)
    registered = _registered_strategy_modules()
    for package in sorted(p.parent for p in PACKAGE.rglob("__init__.py")):
        if package == PACKAGE:
            continue
        assert package in found or any(
            package.is_relative_to(p) for p in found if p.is_dir() and p != PACKAGE
        ), f"{package.relative_to(PACKAGE)} is under no entry of the map"
        owner = package
        while owner not in found:
            owner = owner.parent
        words = _words(found[owner])
        for child in sorted(package.iterdir()):
            if child.name.startswith("__") or not (
                child.suffix == ".py" or (child / "__init__.py").exists()
            ):
                continue
            module = ".".join(child.relative_to(PACKAGE.parent).with_suffix("").parts)
            if module in registered or child in found:
                continue
            if child.stem not in words:
                unnamed.append(str(child.relative_to(PACKAGE)))
    assert not unnamed, f"modules CONTRIBUTING.md's map does not name: {unnamed}"


def test_kernel_headers_name_host_files_that_exist():
    missing = []
    for source in sorted((ROOT / "kernels").rglob("*")):
        if source.suffix not in (".cu", ".cuh", ".c", ".h"):
            continue
        for name in re.findall(
            r"\b(?:src/nqprof/|bench/|tests/|tools/)[\w/]+\.py\b", source.read_text()
        ):
            if not (ROOT / name).exists():
                missing.append(f"{source.relative_to(ROOT)}: {name}")
    assert not missing, f"kernel sources name files that do not exist: {missing}"


def test_setup_finds_every_subpackage():
    """setup.py lists no package by hand: every folder of src/nqprof with an __init__.py is
    found, and the kernels ride along as nqprof.kernels (pyproject.toml's package-dir)."""
    from setuptools import find_packages

    text = (ROOT / "setup.py").read_text()
    assert 'packages=find_packages("src") + ["nqprof.kernels"]' in text
    on_disk = {
        ".".join(p.parent.relative_to(PACKAGE.parent).parts) for p in PACKAGE.rglob("__init__.py")
    }
    assert set(find_packages(str(ROOT / "src"))) == on_disk
    package_dir = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"
    ]
    assert (
        package_dir["nqprof.kernels"] == "kernels" and (ROOT / "kernels" / "__init__.py").exists()
    )


def test_every_command_is_in_the_table():
    """Every cli module with add_commands is a group of cli.COMMANDS (the table `nqprof --help`
    lists), and every group the table names is such a module."""
    from nqprof import cli

    groups = {
        p.stem for p in (PACKAGE / "cli").glob("*.py") if "def add_commands(" in p.read_text()
    }
    assert groups == set(cli.GROUPS)
