"""launch=record on the CPU: the record build's layout against the kernels (a host program
built with nvcc packs arguments with the kernels' own code), the records read back, checked
and replayed with a fake driver, the session's refusals, the measurement build in the run
record, and every CDP strategy's child kernel."""

from __future__ import annotations

import struct

import numpy as np
import pytest
import test_chunked_session
from host_programs import host_program_output
from test_chunked_session import run

from nqprof.errors import InputError
from nqprof.result import Measurement, RunRecord
from nqprof.runners import verify
from nqprof.strategies import all_strategies, get
from nqprof.strategies.cdp import device_records as dr
from nqprof.strategies.cdp import replay as rp
from nqprof.strategies.cdp.params import launch_defines, measurement_build

CDP = [s for s in all_strategies() if s.cdp]
#: The fake CUDA driver's fixture, used here by its name.
fake_gpu = test_chunked_session.fake_gpu


# --- parameters, strategies, the run record ---------------------------------------------------


def test_record_is_a_launch_mode_of_every_cdp_strategy():
    assert {s.name for s in CDP} >= {"dp1", "dp2", "dp3", "dpswap", "cdp-bp", "cdp-dp3"}
    for s in CDP:
        if s.name in ("cdp-cst", "graph-cst"):  # no launch=record (tests/test_cdp_cst.py)
            continue
        assert s.resolve(10, {"launch": "record"})["launch"] == "record"
    assert launch_defines({"launch": "record"}) == {"CDP_LAUNCH_MODE": 3}


@pytest.mark.parametrize("strategy", [s.name for s in CDP])
def test_each_cdp_strategy_names_its_child_kernel(strategy):
    """The kernel of generation 1's grids: one of its sources' kernels and of its session's."""
    s = get(strategy)
    kernels = {k for src in s.sources for k in src.kernels}
    assert s.child_kernel in kernels
    module = __import__(type(s).__module__, fromlist=["x"])
    sessions = [
        v
        for v in vars(module).values()
        if isinstance(v, type) and hasattr(v, "child_kernels") and v.__module__ == module.__name__
    ]
    assert sessions and all(s.child_kernel in cls.child_kernels for cls in sessions)


def test_measurement_builds_are_never_verified():
    assert measurement_build({"launch": "real"}) is None and measurement_build({}) is None
    text = measurement_build({"launch": "record"})
    assert (
        text.startswith("measurement build launch=record (generation 1's launches recorded")
        and "not N's" in text
    )
    assert (
        get("dp3").measurement_build({"launch": "none"}).startswith("measurement build launch=none")
    )
    assert get("dp3").measurement_build({"launch": "real"}) is None
    assert (
        get("serial").measurement_build({"launch": "record"}) is None
    )  # not a CDP strategy: no such build
    # the runner does not check a measurement build's count, and the record never says verified
    m = Measurement(
        count=92,
        wall_s=0.1,
        gpu_s=0.01,
        stats={"replay": {"kernel": "dp3_child", "recorded": 2, "replayed": 2, "boards": [3, 4]}},
    )
    assert verify("dp3", 8, {}, m, text) is m
    with pytest.raises(Exception, match="counted 92, expected"):
        verify("dp3", 9, {}, m)
    info = {"measurement_build": text}
    record = RunRecord.from_measurements("dp3", 8, {"launch": "record"}, 92, [m], info)
    assert (
        record.count == record.expected == 92 and not record.verified
    )  # even where the count happens to match
    summary = record.summary()
    assert f"count      92  not verified: {text}" in summary
    assert (
        "replay     2 of 2 recorded launches of generation 1 "
        "launched from the host as dp3_child grids (7 boards" in summary
    )
    assert RunRecord.from_measurements("dp3", 8, {}, 92, [m], {}).verified


# --- the records ------------------------------------------------------------------------------


def test_record_dtype():
    assert rp.record_dtype().itemsize == 128 and dr.header_dtype().itemsize == dr.HEADER_BYTES == 16
    assert rp.record_dtype().fields["args"][1] == 40 and rp.record_dtype().fields["boards"][1] == 32


#: Kernel parameter lists (as C types) and the layout of their parameter buffer, by hand:
#: each parameter at its natural alignment, in order, the size the end of the last one.
LAYOUTS = {
    # cdp_dp3_child: pointer, unsigned, pointer (at 16: 4 bytes of padding), five ints, pointer (at
    # 48)
    "const nq_board*, unsigned, unsigned*, int, int, int, int, int, cdp_word*": (
        "<QI4xQiiiii4xQ",
        (0, 8, 16, 24, 28, 32, 36, 40, 48),
        56,
    ),
    # the condensed children (dp2_child, dp3_child): two pointers, unsigned, five ints, pointer (at
    # 40)
    "nq_board**, unsigned*, unsigned, int, int, int, int, int, cdp_word*": (
        "<QQIiiiiiQ",
        (0, 8, 16, 20, 24, 28, 32, 36, 40),
        48,
    ),
    # dp1_swarm: three masks, six ints, pointer (at 40)
    "mask_t, mask_t, mask_t, int, int, int, int, int, int, cdp_word*": (
        "<IIIiiiiii4xQ",
        (0, 4, 8, 12, 16, 20, 24, 28, 32, 40),
        48,
    ),
}
VALUES = {
    "const nq_board*": 0x1122334455667788,
    "nq_board**": 0x0102030405060708,
    "unsigned*": 0x0A0B0C0D0E0F1011,
    "cdp_word*": 0x7FFF000011112222,
    "unsigned": 0xFEDCBA98,
    "int": -7,
    "mask_t": 0x2A5,
}


def _values(types):
    return [
        VALUES[t] + (0 if t in ("unsigned", "int", "mask_t") else i) for i, t in enumerate(types)
    ]


def test_hand_layouts_are_pythons_native_struct_layout():
    """PyCUDA packs host-side arguments with the native struct layout; the hand layouts
    above are that layout too."""
    for params, (fmt, _offsets, size) in LAYOUTS.items():
        native = "@" + "".join(
            {"int": "i", "unsigned": "I", "mask_t": "I"}.get(t, "P") for t in params.split(", ")
        )
        assert struct.calcsize(native) == size == struct.calcsize(fmt)
        assert struct.pack(
            native, *[v & (2**64 - 1) if v >= 0 else v for v in _values(params.split(", "))]
        ) == struct.pack(fmt, *_values(params.split(", ")))


@pytest.mark.slow
def test_records_and_packing_match_the_kernels(tmp_path, toolkit):
    """The kernels' record struct against record_dtype(), and cdp_rec_pack (the code that packs
    a recorded launch's arguments on the device) run on the host against the hand layouts."""
    lines = [
        '    printf("%d %d %d %d\\n", (int)sizeof(cdp_rec_launch), (int)offsetof(cdp_rec_buffer, '
        'launches), (int)offsetof(cdp_rec_launch, args), (int)offsetof(cdp_rec_launch, boards));'
    ]
    for params in LAYOUTS:
        types = params.split(", ")
        args = ", ".join(
            f"({t}){v}{'ull' if '*' in t else ''}"
            for t, v in zip(types, _values(types), strict=True)
        )
        lines += [
            "    {",
            "        unsigned char buf[CDP_REC_ARG_BYTES];",
            "        memset(buf, 0xee, sizeof buf);",
            f"        unsigned used = cdp_rec_pack<{params}>(buf, {args});",
            f'        printf("%u %u ", used, cdp_rec_arg_bytes<{params}>());',
            '        for (unsigned i = 0; i < used; ++i) printf("%02x", buf[i]);',
            '        printf("\\n");',
            "    }",
        ]
    out = host_program_output(
        toolkit,
        tmp_path,
        "rec",
        '#include <cstdio>\n#include <cstddef>\n#include "cdp.cuh"\nint main() {\n'
        + "\n".join(lines)
        + "\n    return 0;\n}\n",
    ).splitlines()
    record = rp.record_dtype()
    assert list(map(int, out[0].split())) == [
        record.itemsize,
        dr.HEADER_BYTES,
        record.fields["args"][1],
        record.fields["boards"][1],
    ]
    for line, (params, (fmt, offsets, size)) in zip(out[1:], LAYOUTS.items(), strict=True):
        used, planned, blob = line.split()
        assert int(used) == int(planned) == size <= rp.ARG_BYTES
        packed = bytes.fromhex(blob)
        expected = struct.pack(fmt, *_values(params.split(", ")))
        # padding bytes are left as they were (0xee): compare the parameters, at their offsets
        types = params.split(", ")
        for t, off in zip(types, offsets, strict=True):
            width = 4 if t in ("int", "unsigned", "mask_t") else 8
            assert packed[off : off + width] == expected[off : off + width], (params, t, off)


class FakeMemory:
    """A device of one flat byte array; addresses are offsets + BASE."""

    BASE = 0x1000

    def __init__(self):
        self.mem = bytearray(1 << 16)
        self.top = 0

    def mem_alloc(self, nbytes):
        addr = self.BASE + self.top
        self.top += (nbytes + 15) // 16 * 16
        return addr

    def memcpy_htod(self, addr, array):
        raw = np.ascontiguousarray(array).tobytes()
        self.mem[addr - self.BASE : addr - self.BASE + len(raw)] = raw

    def memcpy_dtoh(self, array, addr):
        raw = bytes(self.mem[addr - self.BASE : addr - self.BASE + array.nbytes])
        array[...] = np.frombuffer(raw, dtype=array.dtype).reshape(array.shape)


class FakeModule:
    def __init__(self, drv):
        self.addr = drv.mem_alloc(8)

    def get_global(self, name):
        assert name == "cdp_rec"
        return self.addr, 8


class FakeKernel:
    def __init__(self):
        self.calls = []

    def _launch_kernel(self, grid, block, buf, shared, stream):
        self.calls.append((grid, block, buf, shared, stream))


def _device_writes(drv, records, launches, dropped=0):
    """What the record build's launches leave in the buffer."""
    rec = np.zeros(len(launches), dtype=rp.record_dtype())
    for r, (grid, block, shared, boards, blob) in zip(rec, launches, strict=True):
        r["grid"], r["block"], r["shared"], r["boards"] = grid, block, shared, boards
        r["arg_bytes"] = len(blob)
        r["args"][: len(blob)] = np.frombuffer(blob, dtype=np.uint8)
    drv.memcpy_htod(
        records.buf,
        np.array(
            [(len(launches) + dropped, records.capacity, dropped, 0)], dtype=dr.header_dtype()
        ),
    )
    drv.memcpy_htod(records.buf + dr.HEADER_BYTES, rec)


def test_records_are_read_checked_and_replayed():
    drv = FakeMemory()
    module = FakeModule(drv)
    records = rp.LaunchRecords(drv, module, capacity=3)
    pointer = np.zeros(1, dtype=np.uint64)
    drv.memcpy_dtoh(pointer, module.addr)
    assert int(pointer[0]) == records.buf  # the kernels find the buffer through cdp_rec
    records.reset()
    assert rp.decode(bytes(drv.mem[records.buf - drv.BASE :][:16]), b"")["capacity"] == 3
    blob = struct.pack("<QIiQ", 0xABC, 5, -1, 0xDEF)
    launches = [
        ((2, 1, 1), (256, 1, 1), 4096, 300, blob),
        ((1, 1, 1), (256, 1, 1), 4096, 17, blob[:12]),
    ]
    _device_writes(drv, records, launches)
    got = records.read()
    assert (got["recorded"], got["dropped"], got["capacity"]) == (2, 0, 3)
    assert rp.check(got, 2, "dp2 N=12") is None
    assert "recorded 2 launches, the accounting counted 3 grids" in rp.check(got, 3, "dp2 N=12")
    kernel = FakeKernel()
    assert rp.replay(kernel, got["records"]) == 2
    assert kernel.calls == [
        ((2, 1, 1), (256, 1, 1), blob, 4096, None),
        ((1, 1, 1), (256, 1, 1), blob[:12], 4096, None),
    ]
    s = rp.summary(got, 2, "dp2_child", 0.5)
    assert (
        s["boards"] == [300, 17] and s["blocks"] == [2, 1] and s["replayed"] == s["recorded"] == 2
    )
    # past the capacity: counted, reported, an error
    records.reset()
    _device_writes(drv, records, launches * 2 + launches[:1], dropped=2)  # 5 attempted, room for 3
    over = records.read()
    assert over["recorded"] == 3 and over["dropped"] == 2
    assert "kept 3 launches of generation 1 and dropped 2 more" in rp.check(over, 5, "dp2 N=12")


def test_record_capacity_comes_from_the_plan():
    class G:
        def __init__(self, generation, bound_grids):
            self.generation, self.bound_grids = generation, bound_grids

    class Plan:
        generations = [G(0, 1), G(1, 700), G(2, 10**9)]

    assert rp.capacity_for(Plan) == 700
    Plan.generations = [G(0, 1), G(1, 10**9)]
    assert rp.capacity_for(Plan) == rp.MAX_RECORDS
    Plan.generations = [G(0, 1)]
    assert rp.capacity_for(Plan) == 1


# --- the session's refusals (a fake driver: tests/test_chunked_session.py) ---------------------


def test_record_is_refused_where_it_cannot_apply(fake_gpu):
    with pytest.raises(
        InputError,
        match=r"dp2 N=11: launch=record replays one launch of the host grid; this run is "
        r"launched in \d+ chunks",
    ):
        run(fake_gpu, "dp2", 11, {"chunk": 7, "launch": "record"})
    with pytest.raises(
        InputError, match="dp3 N=10: launch=record and timeline=1 do not go together"
    ):
        run(fake_gpu, "dp3", 10, {"launch": "record", "timeline": 1})
    with pytest.raises(
        InputError,
        match=r"dp3 N=11: timeline=1 records one launch of the host grid; this run is "
        r"launched in \d+ chunks",
    ):
        run(fake_gpu, "dp3", 11, {"chunk": 7, "timeline": 1})


@pytest.mark.slow
@pytest.mark.parametrize(
    "file", ["dp1.cu", "dp2.cu", "dp3.cu", "dpswap.cu", "cdp_bp.cu", "cdp_dp3.cu"]
)
def test_record_builds_compile_and_link(file, toolkit):
    """Every CDP kernel builds (and device-links) in the record variant: each launch site's
    arguments fit a record (a static_assert in cdp.cuh)."""
    from nqprof.catalog import catalog
    from nqprof.cuda import nvcc

    src = catalog()[file]
    rows = nvcc.compile_source(
        src, "sm_90", defines={**src.check_defines, "CDP_LAUNCH_MODE": 3}, toolkit=toolkit
    )
    assert set(src.kernels) <= {r.kernel for r in rows}
