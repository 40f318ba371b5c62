"""The nvcc-only build path: compile every kernel without a GPU and report its resources.

Plain sources compile to a cubin, as PyCUDA's ``SourceModule`` does. Dynamic-parallelism
sources compile to a relocatable cubin (``-rdc=true``) that nvlink then links, fully, with
the toolkit's ``libcudadevrt.a``, as PyCUDA's ``DynamicSourceModule`` does on the GPU: a
missing or incompatible device runtime fails here, not on the GPU machine. (``nvcc
-dlink`` would quietly take nvcc's own cudadevrt; the explicit nvlink call takes the one
the toolkit lookup found.)

Registers, shared memory, stack frame and spills come from ``ptxas -v`` (and, for linked
code, from nvlink's final allocation, which includes the device runtime's stack use);
constant bytes come from the cubin's ``.nv.constant*`` sections: the kernel's own bank 0
(parameters) plus the module's ``__constant__`` data.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from ..errors import BuildError, InputError
from ..textfmt import table
from .sources import COMMON_OPTIONS, KernelSource, define_options, kernels_dir, left_out_note
from .toolkit import Toolkit, find_toolkit

_ARCH = re.compile(r"sm_\d+[a-z]?")


@dataclass(frozen=True)
class KernelResources:
    source: str  # file name, e.g. "feinbube.cu"
    kernel: str
    arch: str
    registers: int
    shared_bytes: int  # static shared memory
    local_bytes: int  # stack frame
    spill_stores: int
    spill_loads: int
    constant_bytes: int
    cdp: bool
    toolkit: str  # CUDA release, e.g. "13.0"

    @classmethod
    def from_dict(cls, d: Mapping) -> KernelResources:
        return cls(**{f.name: d[f.name] for f in fields(cls)})


# --- parsing the tools' reports ----------------------------------------------------------

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_PROPS = re.compile(r"Function properties for '?([^':\s]+)'?:?\s*$")
_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"\b[Uu]sed (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_NVLINK_STACK = re.compile(r"(\d+) stack\b")


def parse_ptxas(text: str) -> dict[str, dict[str, int]]:
    """Per entry function in ``ptxas -v`` output: registers, shared_bytes, local_bytes,
    spill_stores, spill_loads. Non-entry (device) functions' properties are left out."""
    entries: dict[str, dict[str, int]] = {}
    props: dict[str, tuple[int, int, int]] = {}
    current = pending = None
    for line in text.splitlines():
        if m := _ENTRY.search(line):
            current = m.group(1)
            entries[current] = {"registers": 0, "shared_bytes": 0}
        elif m := _PROPS.search(line):
            pending = m.group(1)
        elif (m := _STACK.search(line)) and pending is not None:
            props[pending] = tuple(int(g) for g in m.groups())
            pending = None
        elif (m := _USED.search(line)) and current is not None:
            smem = _SMEM.search(line)
            entries[current] = {
                "registers": int(m.group(1)),
                "shared_bytes": int(smem.group(1)) if smem else 0,
            }
    for name, entry in entries.items():
        stack, stores, loads = props.get(name, (0, 0, 0))
        entry.update(local_bytes=stack, spill_stores=stores, spill_loads=loads)
    return entries


def parse_nvlink(text: str) -> dict[str, dict[str, int]]:
    """Per function in ``nvlink -v`` output (the final allocation after linking):
    registers, shared_bytes, local_bytes (stack)."""
    out: dict[str, dict[str, int]] = {}
    name = None
    for line in text.splitlines():
        if m := _PROPS.search(line):
            name = m.group(1)
        elif name is not None and (m := _USED.search(line)):
            smem, stack = _SMEM.search(line), _NVLINK_STACK.search(line)
            out[name] = {
                "registers": int(m.group(1)),
                "shared_bytes": int(smem.group(1)) if smem else 0,
                "local_bytes": int(stack.group(1)) if stack else 0,
            }
            name = None
    return out


def elf_sections(data: bytes) -> dict[str, int]:
    """Section name -> size of a 64-bit little-endian ELF file (a cubin)."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError("not a 64-bit ELF file")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab_off, strtab_size = headers[shstrndx][4], headers[shstrndx][5]
    strtab = data[strtab_off : strtab_off + strtab_size]
    return {strtab[h[0] : strtab.index(b"\0", h[0])].decode(): h[5] for h in headers}


def elf_type(data: bytes) -> int:
    """ELF e_type: 1 relocatable, 2 executable (a fully linked cubin)."""
    return struct.unpack_from("<H", data, 0x10)[0]


_USER_CONSTANT = re.compile(r"\.nv\.constant[1-9]\d*")


def constant_bytes(sections: Mapping[str, int], kernel: str) -> int:
    user = sum(size for name, size in sections.items() if _USER_CONSTANT.fullmatch(name))
    return sections.get(f".nv.constant0.{kernel}", 0) + user


def demangle(names: Iterable[str]) -> dict[str, str]:
    """Mangled C++ names -> readable ones (c++filt where available); others unchanged."""
    names = list(names)
    mangled = [n for n in names if n.startswith("_Z")]
    result = {n: n for n in names}
    filt = shutil.which("c++filt")
    if mangled and filt:
        out = subprocess.run([filt], input="\n".join(mangled), capture_output=True, text=True)
        if out.returncode == 0:
            result.update(zip(mangled, out.stdout.splitlines(), strict=True))
    return result


# --- running the tools --------------------------------------------------------------------

_ERROR_LINE = re.compile(r"\b(error|fatal)\b", re.I)


def _first_errors(output: str, limit: int = 3) -> str:
    lines = [" ".join(line.split()) for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if _ERROR_LINE.search(line)] or lines[-limit:]
    return " | ".join(errors[:limit]) or "no output"


def _run_tool(cmd: list[str], what: str) -> str:
    """Run a compiler step; its stdout and stderr together, or BuildError."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        raise BuildError(f"{what}: timed out after 900 s") from None
    except OSError as exc:
        raise BuildError(f"{what}: cannot run {cmd[0]}: {exc}") from None
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise BuildError(f"{what} failed (exit {proc.returncode}): {_first_errors(output)}")
    return output


def _source_path(src: KernelSource) -> Path:
    path = Path(src.file)
    if path.is_absolute():
        return path
    try:
        return kernels_dir() / path
    except FileNotFoundError as exc:  # a packaging fault, never a skip
        raise BuildError(str(exc)) from None


def nvcc_command(
    toolkit: Toolkit, path: Path, arch: str, defines: Mapping[str, int | str], cdp: bool, out: Path
) -> list[str]:
    return [
        str(toolkit.nvcc),
        *COMMON_OPTIONS,
        *define_options(dict(defines)),
        f"-I{path.parent}",
        f"-arch={arch}",
        *(["-rdc=true"] if cdp else []),
        "-cubin",
        "-Xptxas",
        "-v",
        "-o",
        str(out),
        str(path),
    ]


def nvlink_command(toolkit: Toolkit, arch: str, cubin: Path, out: Path) -> list[str]:
    return [
        str(toolkit.nvlink),
        f"-arch={arch}",
        "-v",
        str(cubin),
        f"-L{toolkit.lib_dir}",
        "-lcudadevrt",
        "-o",
        str(out),
    ]


def compile_source(
    src: KernelSource,
    arch: str = "sm_90",
    defines: Mapping[str, int | str] | None = None,
    toolkit: Toolkit | None = None,
    workdir: str | os.PathLike | None = None,
    every_kernel: bool = True,
) -> list[KernelResources]:
    """Compile one source for ``arch`` (device-linking it with cudadevrt if it uses dynamic
    parallelism) and return the resources of each kernel it defines, catalogued ones first.

    ``src.file`` is a name under :func:`kernels_dir` or an absolute path. The cubins are
    written to ``workdir`` (kept) or a temporary folder. Raises BuildError when a step
    fails or (``every_kernel``) a catalogued kernel is missing from the output, except one
    that needs a newer toolkit than this one (``src.since``: the source compiles it out);
    a run's build leaves that to the kernels it asks for (its defines may compile some
    out)."""
    if not _ARCH.fullmatch(arch):
        raise InputError(f"bad GPU architecture {arch!r}: expected e.g. sm_90")
    toolkit = toolkit or find_toolkit()
    path = _source_path(src)
    if not path.is_file():
        raise BuildError(f"kernel source {path} does not exist")
    defines = src.check_defines if defines is None else defines
    what = f"{path.name} for {arch} with CUDA {toolkit.version}"
    if src.cdp and toolkit.cudadevrt is None:
        raise BuildError(f"cannot link {what}: no libcudadevrt.a in {toolkit.lib_dir}")
    with tempfile.TemporaryDirectory(prefix="nqprof-build-") as tmp:
        work = Path(workdir) if workdir is not None else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        stem = f"{path.stem}.{arch}"
        cubin = work / (f"{stem}.rdc.cubin" if src.cdp else f"{stem}.cubin")
        compiled = parse_ptxas(
            _run_tool(nvcc_command(toolkit, path, arch, defines, src.cdp, cubin), f"nvcc {what}")
        )
        final: dict[str, dict[str, int]] = {}
        if src.cdp:
            cubin, rdc = work / f"{stem}.linked.cubin", cubin
            final = parse_nvlink(
                _run_tool(nvlink_command(toolkit, arch, rdc, cubin), f"nvlink {what}")
            )
        sections = elf_sections(cubin.read_bytes())
    expected = src.kernels_for(toolkit.version) if every_kernel else ()
    missing = [k for k in expected if k not in compiled]
    if missing:
        raise BuildError(
            f"{what}: no kernel named {', '.join(missing)} "
            "in ptxas' report (extern \"C\" __global__?)"
        )
    order = [k for k in src.kernels if k in compiled] + sorted(set(compiled) - set(src.kernels))
    names = demangle(order)
    return [
        KernelResources(
            source=path.name,
            kernel=names[name],
            arch=arch,
            **{**compiled[name], **final.get(name, {})},
            constant_bytes=constant_bytes(sections, name),
            cdp=src.cdp,
            toolkit=toolkit.version,
        )
        for name in order
    ]


def parse_archs(text: str | Sequence[str]) -> tuple[str, ...]:
    """ "sm_90,sm_100" (or a list of such) -> ("sm_90", "sm_100"); InputError if malformed."""
    items = text.split(",") if isinstance(text, str) else list(text)
    archs = tuple(dict.fromkeys(a.strip() for a in items if a.strip()))
    bad = [a for a in archs if not _ARCH.fullmatch(a)]
    if bad or not archs:
        raise InputError(
            f"bad --arch {','.join(bad) or text!r}: expected e.g. sm_90 or sm_90,sm_100"
        )
    return archs


def compile_all(
    archs: Sequence[str],
    toolkit: Toolkit | None,
    catalog: Mapping[str, KernelSource],
    workdir: str | os.PathLike | None = None,
) -> list[KernelResources]:
    """Compile every source of ``catalog`` (nqprof's whole one:
    :func:`nqprof.catalog.compile_all`) for every arch, in parallel; rows ordered by source,
    arch, kernel."""
    toolkit = toolkit or find_toolkit()
    jobs = [(src, arch) for src in catalog.values() for arch in parse_archs(archs)]
    with ThreadPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1) or 1) as pool:
        results = pool.map(
            lambda job: compile_source(job[0], job[1], toolkit=toolkit, workdir=workdir), jobs
        )
        return [row for rows in results for row in rows]


def left_out(catalog: Mapping[str, KernelSource], toolkit: str) -> list[dict[str, str]]:
    """The catalogued kernels a build by CUDA ``toolkit`` does not hold, as the resource
    table records them (``source``, the file name as in the rows, ``kernel``, ``since``: the
    release each needs): the kernels that :attr:`KernelSource.since` puts past this toolkit."""
    return [
        {"source": Path(src.file).name, "kernel": kernel, "since": since}
        for src in catalog.values()
        for kernel, since in src.left_out(toolkit).items()
    ]


# --- reports ------------------------------------------------------------------------------


RESOURCE_COLUMNS = (
    ("source", "source"),
    ("kernel", "kernel"),
    ("arch", "arch"),
    ("registers", "regs"),
    ("shared_bytes", "smem"),
    ("local_bytes", "stack"),
    ("spill_stores", "spill st"),
    ("spill_loads", "spill ld"),
    ("constant_bytes", "cmem"),
    ("cdp", "cdp"),
)


def resource_table(rows: Iterable[KernelResources]) -> str:
    def cell(r: KernelResources, key: str) -> object:
        value = getattr(r, key)
        return ("yes" if value else "no") if key == "cdp" else value

    return table(
        [label for _, label in RESOURCE_COLUMNS],
        ([cell(r, k) for k, _ in RESOURCE_COLUMNS] for r in rows),
        right_align_numbers=True,
    )


def left_out_notes(entries: Iterable[Mapping[str, str]], toolkit: str) -> list[str]:
    """One line per :func:`left_out` entry: which kernel is not in the table, and why."""
    return [left_out_note(e["source"], e["kernel"], e["since"], toolkit) for e in entries]


def resources_json(
    rows: Iterable[KernelResources],
    toolkit: Toolkit,
    archs: Sequence[str],
    left_out: Sequence[Mapping[str, str]] = (),
) -> dict:
    """The resource table as ``nqprof build -o`` writes it; ``left_out`` (:func:`left_out`)
    names the kernels this toolkit is too old for, so that a row missing from the table is
    told apart from a kernel that failed to build."""
    return {
        "toolkit": {
            "version": toolkit.version,
            "root": str(toolkit.root),
            "source": toolkit.source,
        },
        "archs": list(archs),
        "kernels": [asdict(r) for r in rows],
        "left_out": [dict(e) for e in left_out],
    }


def write_json(path: str | os.PathLike, data: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


def load_json(path: str | os.PathLike) -> tuple[dict, list[KernelResources]]:
    """(toolkit info, rows) from a file :func:`resources_json` wrote; InputError if it is
    not one."""
    from ..files import read_json

    data = read_json(path, "resource table")
    try:
        toolkit = data["toolkit"]
        if not isinstance(toolkit, dict):
            raise TypeError("toolkit is not an object")
        return toolkit, [KernelResources.from_dict(d) for d in data["kernels"]]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"{path} is not an nqprof resource table: {exc}") from None


def load_left_out(path: str | os.PathLike) -> list[dict[str, str]]:
    """The ``left_out`` entries of a resource table (none in a table written before they
    were recorded); InputError if they are malformed."""
    from ..files import read_json

    entries = read_json(path, "resource table").get("left_out", [])
    keys = ("source", "kernel", "since")
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and all(isinstance(e.get(k), str) for k in keys) for e in entries
    ):
        raise InputError(f"{path} is not an nqprof resource table: malformed left_out")
    return [{k: e[k] for k in keys} for e in entries]


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def matrix_table(
    tables: Mapping[str, Sequence[KernelResources]],
    left_out: Mapping[str, Sequence[Mapping[str, str]]] | None = None,
) -> str:
    """One row per (source, kernel, arch), one column per toolkit label; each cell is
    "registers/stack bytes/spill bytes (stores + loads)", "-" where a toolkit lacks the row.
    Columns are ordered by toolkit version. ``left_out`` (label -> :func:`left_out`
    entries) adds a line below the table for each kernel a toolkit was too old for, so
    that its "-" says why."""
    labels = sorted(
        tables,
        key=lambda label: (_version_key(tables[label][0].toolkit) if tables[label] else (), label),
    )
    cells: dict[tuple[str, str, str], dict[str, str]] = {}
    for label in labels:
        for r in tables[label]:
            key = (r.source, r.kernel, r.arch)
            cells.setdefault(key, {})[label] = (
                f"{r.registers}/{r.local_bytes}/{r.spill_stores + r.spill_loads}"
            )
    body = [[*key, *(row.get(label, "-") for label in labels)] for key, row in cells.items()]
    notes = ["cells: registers / stack bytes / spill bytes (stores + loads)"]
    for label in labels:
        notes += [
            f"{label}: {e['source']} {e['kernel']} left out (needs CUDA {e['since']}+)"
            for e in (left_out or {}).get(label, ())
        ]
    return (
        table(["source", "kernel", "arch", *labels], body, right_align_numbers=True)
        + "\n"
        + "\n".join(notes)
    )
