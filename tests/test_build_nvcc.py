"""The nvcc-only build path (nqprof.cuda.nvcc) and its commands (nqprof.cli.build).

Report parsing runs everywhere; the compile tests use the real toolkit and are skipped
without one. No test depends on a particular kernel's register count."""

from __future__ import annotations

import dataclasses
import json

import pytest

from nqprof.catalog import catalog, compile_all
from nqprof.cli import main as nqprof_main
from nqprof.cuda import nvcc
from nqprof.cuda.nvcc import KernelResources
from nqprof.cuda.sources import KernelSource, kernels_dir
from nqprof.errors import BuildError, InputError

# ptxas -v of a plain source (CUDA 13 format), with a non-inlined device function.
PTXAS_OUTPUT = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'spill' for 'sm_90'
ptxas info    : Function properties for spill
    512 bytes stack frame, 24 bytes spill stores, 20 bytes spill loads
ptxas info    : Used 19 registers, used 0 barriers, 512 bytes cumulative stack size
ptxas info    : Compile time = 25.719 ms
ptxas info    : Function properties for _Z6helperPji
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Compiling entry function 'add_one' for 'sm_90'
ptxas info    : Function properties for add_one
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 9 registers, used 1 barriers, 512 bytes smem
ptxas info    : Compile time = 2.182 ms
"""

# ptxas -v in the older format (CUDA 12), which also printed cmem.
PTXAS_OUTPUT_12 = """\
ptxas info    : Compiling entry function 'k' for 'sm_80'
ptxas info    : Function properties for k
    40 bytes stack frame, 36 bytes spill stores, 32 bytes spill loads
ptxas info    : Used 255 registers, 4096 bytes smem, 380 bytes cmem[0]
"""

# nvlink -v after linking a dynamic-parallelism cubin with libcudadevrt.a, as printed (its lines
# are longer than ours: the noqa below is for them).
NVLINK_OUTPUT = """\
nvlink info    : 13181 bytes gmem, 400 bytes cmem[3]
nvlink info    : Function properties for '__nv_static_52__f4510a67_22_cuda_device_runtime_cu_3ecce0c0_2317245__Z16memcpy_3d_deviceImLi1ELi1ELi1EEv12MemcpyParamsIT_E':
nvlink info    : used 16 registers, used 1 barriers, 0 stack, 3080 bytes smem, 656 bytes cmem[0], 0 bytes lmem
nvlink info    : Function properties for 'child':
nvlink info    : used 10 registers, used 0 barriers, 0 stack, 0 bytes smem, 536 bytes cmem[0], 0 bytes lmem
nvlink info    : Function properties for 'parent':
nvlink info    : used 24 registers, used 0 barriers, 16 stack, 0 bytes smem, 540 bytes cmem[0], 0 bytes lmem
"""  # noqa: E501 (nvlink's own lines)


def test_parse_ptxas():
    got = nvcc.parse_ptxas(PTXAS_OUTPUT)
    assert got == {
        "spill": dict(
            registers=19, shared_bytes=0, local_bytes=512, spill_stores=24, spill_loads=20
        ),
        "add_one": dict(
            registers=9, shared_bytes=512, local_bytes=0, spill_stores=0, spill_loads=0
        ),
    }


def test_parse_ptxas_older_format():
    assert nvcc.parse_ptxas(PTXAS_OUTPUT_12) == {
        "k": dict(registers=255, shared_bytes=4096, local_bytes=40, spill_stores=36, spill_loads=32)
    }


def test_parse_nvlink():
    got = nvcc.parse_nvlink(NVLINK_OUTPUT)
    assert got["parent"] == dict(registers=24, shared_bytes=0, local_bytes=16)
    assert got["child"] == dict(registers=10, shared_bytes=0, local_bytes=0)


def test_constant_bytes():
    sections = {
        ".nv.constant0.k": 540,
        ".nv.constant0.other": 600,
        ".nv.constant3": 400,
        ".nv.shared.k": 8,
    }
    assert nvcc.constant_bytes(sections, "k") == 940


def test_first_errors_are_one_line():
    out = (
        'x.cu(3): error: identifier "nope" is undefined\n\n1 '
        'error detected in the compilation of "x.cu".\n'
    )
    assert (
        nvcc._first_errors(out) == 'x.cu(3): error: identifier "nope" is undefined '
        '| 1 error detected in the compilation of "x.cu".'
    )


def test_parse_archs():
    assert nvcc.parse_archs("sm_90, sm_100,sm_90") == ("sm_90", "sm_100")
    assert nvcc.parse_archs(["sm_90a"]) == ("sm_90a",)
    for bad in ("", "90", "sm_90,compute_90"):
        with pytest.raises(InputError):
            nvcc.parse_archs(bad)


def _row(kernel="k", toolkit="13.0", registers=32, **kw):
    base = dict(
        source="s.cu",
        kernel=kernel,
        arch="sm_90",
        registers=registers,
        shared_bytes=0,
        local_bytes=0,
    )
    base.update(spill_stores=0, spill_loads=0, constant_bytes=540, cdp=False, toolkit=toolkit)
    return KernelResources(**{**base, **kw})


def test_resource_table_aligns():
    table = nvcc.resource_table(
        [_row("k", registers=7), _row("longer_kernel", registers=128, cdp=True)]
    )
    lines = table.splitlines()
    assert lines[0].split()[:4] == ["source", "kernel", "arch", "regs"]
    assert len({len(line) for line in lines[:2]}) == 1
    assert lines[2].index(" 7 ") > 0 and lines[3].rstrip().endswith("yes")
    assert lines[2].index("7") == lines[3].index("128") + 2  # numbers right-aligned


def test_matrix_table():
    tables = {
        "cuda13.5": [_row("k", "13.5", registers=40, spill_stores=8, spill_loads=4)],
        "cuda13.0": [_row("k", "13.0", registers=32, local_bytes=16), _row("only_old", "13.0")],
    }
    lines = nvcc.matrix_table(tables).splitlines()
    assert lines[0].split() == ["source", "kernel", "arch", "cuda13.0", "cuda13.5"]  # by version
    assert lines[2].split() == ["s.cu", "k", "sm_90", "32/16/0", "40/0/12"]
    assert lines[3].split()[-1] == "-"
    assert "spill" in lines[-1]


def test_since_drops_a_kernel_before_its_release():
    """A kernel declared with ``since`` is expected from that release on, and only then:
    the boundary release itself keeps it, the one before drops it, and releases compare as
    numbers (12.10 is after 12.3), not as text."""
    src = KernelSource("s.cu", cdp=False, kernels=("a", "new", "b"), since={"new": "12.3"})
    for toolkit in ("12.0", "12.2", "11.8"):
        assert src.kernels_for(toolkit) == ("a", "b"), toolkit
        assert src.left_out(toolkit) == {"new": "12.3"} and not src.available("new", toolkit)
    for toolkit in ("12.3", "12.4", "12.10", "13.0"):
        assert src.kernels_for(toolkit) == ("a", "new", "b"), toolkit
        assert src.left_out(toolkit) == {} and src.available("new", toolkit)
    assert src.available("a", "1.0")  # a kernel without since is in every build


def test_since_is_checked_when_declared():
    with pytest.raises(ValueError, match="since names no kernel of the source"):
        KernelSource("s.cu", cdp=False, kernels=("a",), since={"typo": "12.3"})
    with pytest.raises(InputError, match="names no CUDA release"):
        KernelSource("s.cu", cdp=False, kernels=("a",), since={"a": "twelve"})


def test_left_out_entries_and_notes():
    catalog = {
        "s.cu": KernelSource("s.cu", cdp=False, kernels=("a", "new"), since={"new": "12.3"}),
        "t.cu": KernelSource("t.cu", cdp=False, kernels=("t",)),
    }
    entries = nvcc.left_out(catalog, "12.0")
    assert entries == [{"source": "s.cu", "kernel": "new", "since": "12.3"}]
    assert nvcc.left_out(catalog, "12.3") == []
    assert nvcc.left_out_notes(entries, "12.0") == [
        "s.cu: new left out: it needs CUDA 12.3+, this toolkit is 12.0 (KernelSource.since)"
    ]


def test_matrix_table_says_why_a_kernel_is_left_out():
    tables = {
        "cuda12.0": [_row("k", "12.0")],
        "cuda13.0": [_row("k", "13.0"), _row("new", "13.0")],
    }
    older = {"cuda12.0": [{"source": "s.cu", "kernel": "new", "since": "12.3"}], "cuda13.0": []}
    lines = nvcc.matrix_table(tables, older).splitlines()
    assert lines[3].split() == ["s.cu", "new", "sm_90", "-", "32/0/0"]
    assert lines[-1] == "cuda12.0: s.cu new left out (needs CUDA 12.3+)"


# --- the commands, without a toolkit -----------------------------------------------------


def _write_table(path, version, rows):
    info = {"version": version, "root": "/x", "source": "PATH"}
    path.write_text(
        json.dumps(
            {"toolkit": info, "archs": ["sm_90"], "kernels": [dataclasses.asdict(r) for r in rows]}
        )
    )


def test_matrix_command(tmp_path, capsys):
    _write_table(tmp_path / "resources-cuda13.0.json", "13.0", [_row("k", "13.0")])
    _write_table(tmp_path / "resources-cuda-system.json", "13.0", [_row("k", "13.0", registers=30)])
    _write_table(tmp_path / "resources-cuda13.5.json", "13.5", [_row("k", "13.5", registers=40)])
    out = tmp_path / "matrix.txt"
    assert nqprof_main(["matrix", str(tmp_path), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[0].split() == [
        "source",
        "kernel",
        "arch",
        "cuda-system",
        "(13.0)",
        "cuda13.0",
        "cuda13.5",
    ]
    assert out.read_text() == printed


def test_matrix_command_errors(tmp_path, capsys):
    assert nqprof_main(["matrix", str(tmp_path)]) == 2
    assert "no resources-*.json" in capsys.readouterr().err
    (tmp_path / "resources-bad.json").write_text("{}")
    assert nqprof_main(["matrix", str(tmp_path)]) == 2
    assert "not an nqprof resource table" in capsys.readouterr().err


def test_build_without_toolkit(tmp_path, capsys):
    stale = tmp_path / "resources-cudaX.json"
    stale.write_text("{}")
    args = ["build", "--cuda-home", str(tmp_path / "nowhere"), "-o", str(stale), "--force"]
    assert nqprof_main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("nqprof: error: NQPROF_CUDA_HOME=") and err.count("\n") == 1
    assert nqprof_main(args + ["--skip-missing"]) == 0
    assert capsys.readouterr().out.startswith("skipped: NQPROF_CUDA_HOME=")
    assert not stale.exists()


# --- real compiles --------------------------------------------------------------------------


PLAIN = """\
extern "C" __global__ void with_shared(int *a, int n) {
    __shared__ int buf[BLOCK];
    buf[threadIdx.x] = a[threadIdx.x];
    __syncthreads();
    if (threadIdx.x < n) a[threadIdx.x] = buf[(threadIdx.x + 1) % BLOCK];
}
extern "C" __global__ void with_stack(unsigned long long *out, int n) {
    unsigned long long st[64];
    for (int k = 0; k < 64; ++k) st[k] = k * n;
    unsigned long long s = 0;
    for (int k = 0; k < n; ++k) s += st[(k * 7) & 63];
    out[threadIdx.x] = s;
}
"""

CDP = """\
__constant__ unsigned table[16];
extern "C" __global__ void child(int *a) { a[threadIdx.x] += table[threadIdx.x % 16]; }
extern "C" __global__ void parent(int *a, int n) {
    if (threadIdx.x == 0) child<<<1, n>>>(a);
}
"""


def _source(tmp_path, name, text, cdp, kernels, defines=None):
    path = tmp_path / name
    path.write_text(text)
    return KernelSource(str(path), cdp=cdp, kernels=kernels, check_defines=defines or {})


@pytest.mark.slow
def test_compile_plain(tmp_path, toolkit):
    src = _source(tmp_path, "plain.cu", PLAIN, False, ("with_shared", "with_stack"), {"BLOCK": 64})
    rows = nvcc.compile_source(src, "sm_90", toolkit=toolkit, workdir=tmp_path / "out")
    assert [r.kernel for r in rows] == ["with_shared", "with_stack"]
    shared, stack = rows
    assert shared.shared_bytes == 64 * 4  # the define reached the compiler
    assert stack.local_bytes >= 64 * 8  # the indexed array lives on the stack
    for r in rows:
        assert (r.source, r.arch, r.cdp, r.toolkit) == ("plain.cu", "sm_90", False, toolkit.version)
        assert r.registers > 0 and r.constant_bytes > 0
    assert (tmp_path / "out" / "plain.sm_90.cubin").is_file()
    rows = nvcc.compile_source(src, "sm_90", defines={"BLOCK": 32}, toolkit=toolkit)
    assert rows[0].shared_bytes == 32 * 4  # explicit defines replace check_defines


@pytest.mark.slow
def test_compile_cdp_is_device_linked(tmp_path, toolkit):
    if toolkit.cudadevrt is None:
        pytest.skip(f"{toolkit.describe()} has no libcudadevrt.a")
    src = _source(tmp_path, "cdp.cu", CDP, True, ("parent", "child"))
    rows = nvcc.compile_source(src, "sm_90", toolkit=toolkit, workdir=tmp_path)
    assert [(r.kernel, r.cdp) for r in rows] == [("parent", True), ("child", True)]
    linked = (tmp_path / "cdp.sm_90.linked.cubin").read_bytes()
    assert nvcc.elf_type(linked) == 2  # a fully linked (executable) cubin, not a relocatable one
    sections = nvcc.elf_sections(linked)
    assert len(sections) > len(
        nvcc.elf_sections((tmp_path / "cdp.sm_90.rdc.cubin").read_bytes())
    )  # cudadevrt's code
    assert (
        rows[1].constant_bytes >= sections[".nv.constant0.child"] + 16 * 4
    )  # bank 0 + the __constant__ table


@pytest.mark.slow
def test_the_kernel_cache_compiles_once(tmp_path, toolkit, monkeypatch):
    """A GPU build's cubin (nqprof.cuda.build.cubin) is compiled on the first build and
    taken from the cache folder by every later one: per source, defines and arch, a CDP
    source fully linked; an edited source is another entry."""
    from nqprof.cuda import build

    monkeypatch.setenv("NQPROF_CACHE_DIR", str(tmp_path / "cache"))
    src = _source(tmp_path, "plain.cu", PLAIN, False, ("with_shared", "with_stack"), {"BLOCK": 64})
    path, digest, cached = build.cubin(src, {"BLOCK": 64}, "sm_90", toolkit)
    assert not cached and path.parent == tmp_path / "cache" / "kernels" and digest in path.name
    assert nvcc.elf_sections(path.read_bytes())  # a cubin
    compiled = []
    monkeypatch.setattr(nvcc, "compile_source", lambda *a, **k: compiled.append(a) or [])
    assert (
        build.cubin(src, {"BLOCK": 64}, "sm_90", toolkit) == (path, digest, True) and compiled == []
    )
    monkeypatch.undo()
    monkeypatch.setenv("NQPROF_CACHE_DIR", str(tmp_path / "cache"))
    other, _, cached = build.cubin(src, {"BLOCK": 32}, "sm_90", toolkit)
    assert not cached and other != path
    (tmp_path / "plain.cu").write_text(PLAIN + "// edited\n")
    assert build.cubin(src, {"BLOCK": 64}, "sm_90", toolkit)[0] != path
    assert sorted(p.name for p in (tmp_path / "cache" / "kernels").iterdir()) == sorted(
        p.name for p in (tmp_path / "cache" / "kernels").glob("plain-sm_90-*.cubin")
    )  # no leftovers
    if toolkit.cudadevrt is not None:
        cdp = _source(tmp_path, "cdp.cu", CDP, True, ("parent", "child"))
        linked, _, _ = build.cubin(cdp, None, "sm_90", toolkit)
        assert nvcc.elf_type(linked.read_bytes()) == 2


def test_an_unwritable_kernel_cache_is_a_build_error(tmp_path, toolkit, monkeypatch):
    from nqprof.cuda import build

    (tmp_path / "file").write_text("")
    monkeypatch.setenv("NQPROF_CACHE_DIR", str(tmp_path / "file" / "cache"))
    src = _source(tmp_path, "plain.cu", PLAIN, False, ("with_shared", "with_stack"), {"BLOCK": 64})
    with pytest.raises(BuildError, match="cannot write the kernel cache .* set NQPROF_CACHE_DIR"):
        build.cubin(src, {"BLOCK": 64}, "sm_90", toolkit)


@pytest.mark.slow
def test_cdp_link_needs_cudadevrt(tmp_path, toolkit):
    src = _source(tmp_path, "cdp.cu", CDP, True, ("parent", "child"))
    with pytest.raises(BuildError, match="no libcudadevrt.a"):
        nvcc.compile_source(src, "sm_90", toolkit=dataclasses.replace(toolkit, cudadevrt=None))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(BuildError, match="nvlink .* failed .*Undefined reference"):
        nvcc.compile_source(src, "sm_90", toolkit=dataclasses.replace(toolkit, lib_dir=empty))


@pytest.mark.slow
def test_broken_source_raises_build_error(tmp_path, toolkit):
    src = _source(
        tmp_path,
        "broken.cu",
        'extern "C" __global__ void k(int *a) { a[0] = not_declared; }\n',
        False,
        ("k",),
    )
    with pytest.raises(BuildError) as info:
        nvcc.compile_source(src, "sm_90", toolkit=toolkit)
    message = str(info.value)
    assert message.startswith("nvcc broken.cu for sm_90") and "\n" not in message
    assert "error" in message and "not_declared" in message


@pytest.mark.slow
def test_missing_kernel_raises_build_error(tmp_path, toolkit):
    src = _source(tmp_path, "plain.cu", PLAIN, False, ("with_shared", "not_there"), {"BLOCK": 32})
    with pytest.raises(BuildError, match="no kernel named not_there"):
        nvcc.compile_source(src, "sm_90", toolkit=toolkit)
    # a run's build asks only for the kernels its defines compile (feinbube's steps)
    rows = nvcc.compile_source(src, "sm_90", toolkit=toolkit, every_kernel=False)
    assert [r.kernel for r in rows] == ["with_shared", "with_stack"]


# A kernel only a future release defines, guarded as a kernel with ``since`` is.
FUTURE = """\
extern "C" __global__ void now(int *a) { a[threadIdx.x] = 1; }
#if CUDART_VERSION >= 99000
extern "C" __global__ void future(int *a) { a[threadIdx.x] = 2; }
#endif
"""


@pytest.mark.slow
def test_a_kernel_since_a_newer_release_is_not_expected(tmp_path, toolkit):
    """The "catalogued kernel missing" check expects a kernel declared with ``since`` only
    from that release on: this toolkit builds the source without it and passes; claimed
    to be that release, the same build misses it; undeclared, it is missing as any other."""
    src = _source(tmp_path, "future.cu", FUTURE, False, ("now", "future"))
    declared = dataclasses.replace(src, since={"future": "99.0"})
    rows = nvcc.compile_source(declared, "sm_90", toolkit=toolkit)
    assert [r.kernel for r in rows] == ["now"]
    with pytest.raises(BuildError, match="no kernel named future"):
        nvcc.compile_source(declared, "sm_90", toolkit=dataclasses.replace(toolkit, version="99.0"))
    with pytest.raises(BuildError, match="no kernel named future"):
        nvcc.compile_source(src, "sm_90", toolkit=toolkit)


@pytest.mark.slow
def test_build_command_records_what_it_left_out(tmp_path, toolkit, monkeypatch, capsys):
    """``nqprof build`` says which kernels the toolkit is too old for, in its output and in
    the table it writes, and ``nqprof matrix`` says it beside the table."""
    import nqprof.catalog

    src = _source(tmp_path, "future.cu", FUTURE, False, ("now", "future"))
    small = {"future.cu": dataclasses.replace(src, since={"future": "99.0"})}
    monkeypatch.setattr(nqprof.catalog, "catalog", lambda: small)
    monkeypatch.setattr(
        nqprof.catalog, "compile_all", lambda archs, tk: nvcc.compile_all(archs, tk, small)
    )
    (tmp_path / "tables").mkdir()
    table = tmp_path / "tables" / "resources-here.json"
    assert nqprof_main(["build", "-o", str(table)]) == 0
    out = capsys.readouterr().out
    note = (
        f"future.cu: future left out: it needs CUDA 99.0+, this toolkit is {toolkit.version} "
        "(KernelSource.since)"
    )
    assert note in out.splitlines() and "1 kernel builds from 1 sources" in out
    doc = json.loads(table.read_text())
    assert [k["kernel"] for k in doc["kernels"]] == ["now"]
    assert doc["left_out"] == [{"source": "future.cu", "kernel": "future", "since": "99.0"}]
    assert nqprof_main(["matrix", str(tmp_path / "tables")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"here ({toolkit.version}): future.cu future left out (needs CUDA 99.0+)"
    )


@pytest.mark.slow
def test_compile_all_and_json(tmp_path, toolkit):
    catalog = {
        "plain.cu": _source(
            tmp_path, "plain.cu", PLAIN, False, ("with_shared", "with_stack"), {"BLOCK": 32}
        ),
        "cdp.cu": _source(tmp_path, "cdp.cu", CDP, True, ("parent", "child")),
    }
    rows = nvcc.compile_all(("sm_90", "sm_100"), toolkit=toolkit, catalog=catalog)
    assert [(r.source, r.arch) for r in rows] == [
        (s, a) for s in ("plain.cu", "cdp.cu") for a in ("sm_90", "sm_100") for _ in (0, 1)
    ]
    path = tmp_path / "resources-test.json"
    nvcc.write_json(path, nvcc.resources_json(rows, toolkit, ("sm_90", "sm_100")))
    info, loaded = nvcc.load_json(path)
    assert info["version"] == toolkit.version and loaded == rows


@pytest.mark.slow
def test_catalog_compiles(toolkit, tmp_path):
    """Every kernel nqprof ships compiles (and, with dynamic parallelism, device-links)."""
    kernels_dir()  # a missing kernel folder or header is a failure, never a skip
    rows = compile_all(("sm_90",), toolkit=toolkit)
    expected = {
        (src.file, k) for src in catalog().values() for k in src.kernels_for(toolkit.version)
    }
    assert expected <= {(r.source, r.kernel) for r in rows}
    assert all(r.registers > 0 for r in rows)
    assert nqprof_main(["build", "-o", str(tmp_path / "r.json")]) == 0
