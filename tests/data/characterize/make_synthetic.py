"""Writes the SYNTHETIC fixtures of tests/test_characterize.py (synthetic-*): invented
numbers in the shape nqprof characterize records, NOT measurements. They stand in until
fixtures measured on an H200 host (tools/gpu_check.sh characterize) are committed beside
them.

    python3 tests/data/characterize/make_synthetic.py
"""

import json
from pathlib import Path

HERE = Path(__file__).parent
MACHINE = {"device": "SYNTHETIC (not a measurement)", "toolkit": "13.0", "driver": "13.0"}
MIB = 1 << 20


def launch():
    per = {"default": 1.0e-6, "own": 2.0e-6, "fire-and-forget": 0.6e-6, "tail": 0.8e-6}
    points = []
    for mode, cost in per.items():
        for count in (32, 1024, 32768, 262144, 1 << 20):
            p = dict(
                mode=mode,
                count=count,
                pending=max(32, int(count * (2 if mode == "own" else 1) * 1.25 + 0.999)),
                launches=count * 4,
                launch_failures=0,
                stream_failures=0,
                first_error=0,
                error=None,
            )
            t2 = 5e-6 + count * 1e-9
            p["t2_s"] = [t2, t2 * 1.01, t2 * 0.99]
            p["t1_s"] = [t2 + 20e-6 + count * cost * f for f in (1.0, 1.02, 0.98)]
            if mode == "own" and count == 1 << 20:
                p = dict(
                    mode=mode,
                    count=count,
                    t1_s=[],
                    t2_s=[],
                    error="1,048,576 launches (own) do not fit: ...",
                )
            if mode == "tail" and count == 1 << 20:
                p.update(launch_failures=12, first_error=69)
            points.append(p)
    return {
        "kind": "nqprof-characterize-launch",
        "machine": MACHINE,
        "settings": {"block": 128, "repeats": 3, "warmup": 1},
        "points": points,
    }


def reserve():
    free0 = 140_000 * MIB

    def point(kind, value, module, gone, **read):
        """A limit set and read back; with the module loaded, ``gone`` more bytes reserved."""
        p = dict(kind=kind, value=value, module=module, free_context=free0, **read)
        p.update(free_limit=free0, error=None)
        if module:
            p.update(free_module=free0 - gone, free_launch=free0 - gone)
        return p

    points = []
    for module in (False, True):
        for value in (0, 1, 32, 1024, 4096, 65536, 262144, 1 << 20):
            gone = (100 * MIB + value * 9728) if module else 0
            points.append(
                point("pending", value, module, gone, total=143_000 * MIB, limit_read=value)
            )
        points.append(
            dict(
                kind="pending",
                value=1 << 24,
                module=module,
                free_context=free0,
                error="does not fit: about 152.0 GiB of slots, 136.7 GiB free",
            )
        )
        for value in (8, 512):
            gone = (100 * MIB + value * MIB) if module else 0
            points.append(point("heap", value, module, gone, limit_read=value * MIB))
    points.append(
        dict(
            kind="sync-depth",
            value=2,
            module=True,
            free_context=free0,
            error="refused: cuCtxSetLimit failed: operation not supported",
        )
    )
    return {"kind": "nqprof-characterize-reserve", "machine": MACHINE, "points": points}


def variant(seconds, launches, gen1, verified=True):
    return {
        "gpu_s": seconds,
        "gpu_times": [seconds],
        "count": 1,
        "verified": verified,
        "launches": launches,
        "gen1": {"generation": 1, **gen1},
        "generations": [],
        "params": {},
        "error": None,
    }


def ideal():
    runs = []
    for n, scale in ((14, 1.0), (16, 20.0)):
        for s, grids, total in (("dp2", 3000, 3000), ("dp3", 3000, 9000), ("dpswap", 40, 400)):
            g1 = {"grids": grids, "boards": grids * 10, "min": 1, "max": 30}
            runs.append(
                {
                    "strategy": s,
                    "n": n,
                    "variants": {
                        "real": variant(0.010 * scale, total, g1),
                        "empty": variant(0.004 * scale, grids, g1, verified=False),
                        "none": variant(0.001 * scale, grids, g1, verified=False),
                    },
                }
            )
    runs[-1]["variants"]["empty"] = {
        "error": "WatchdogError: dpswap N=16: no answer to 'run' within 300 s"
    }
    base = [
        {"strategy": "feinbube", "n": 14, "seconds": 0.012, "error": None},
        {"strategy": "feinbube", "n": 16, "seconds": 0.150, "error": None},
    ]
    return {
        "kind": "nqprof-characterize-ideal",
        "machine": MACHINE,
        "settings": {"repeats": 3, "warmup": 1, "params": {}},
        "runs": runs,
        "baselines": base,
    }


METRICS = [
    "gpu__time_duration.sum",
    "smsp__inst_executed.sum",
    "smsp__thread_inst_executed.sum",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "smsp__inst_executed_op_shared_ld.sum",
    "smsp__inst_executed_op_shared_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "lts__t_sector_hit_rate.pct",
]
UNITS = [
    "nsecond",
    "inst",
    "inst",
    "",
    "",
    "",
    "",
    "inst",
    "inst",
    "sector",
    "request",
    "sector",
    "request",
    "%",
]


DP3_ROOT = (
    "dp3_root(const unsigned int *, const unsigned int *, const unsigned int *, const unsigned "
    "char *, unsigned int, int, int, int, int, unsigned long long *)"
)
DP3_CHILD = (
    "dp3_child(nq_board **, unsigned int *, unsigned "
    "int, int, int, int, int, int, unsigned long long *)"
)


def ncu_csv(
    rows=None, banner=("==PROF== Connected to process 4242 (/usr/bin/python3.11)", "strategy   dp3")
):
    head = [
        "ID",
        "Process ID",
        "Process Name",
        "Host Name",
        "Kernel Name",
        "Context",
        "Stream",
        "Block Size",
        "Grid Size",
        "Device",
        "CC",
    ]
    rows = rows or [
        (
            DP3_ROOT,
            [
                "2,000,000",
                "1,000,000",
                "8,000,000",
                "8",
                "1,000",
                "500",
                "40,000",
                "20,000",
                "10,000",
                "4,000",
                "1,000",
                "800",
                "200",
                "90.5",
            ],
        ),
        (
            DP3_ROOT,
            [
                "1,000,000",
                "3,000,000",
                "48,000,000",
                "16",
                "3,000",
                "1,500",
                "120,000",
                "60,000",
                "30,000",
                "12,000",
                "3,000",
                "2,400",
                "600",
                "70.5",
            ],
        ),
    ]
    q = lambda cells: ",".join(f'"{c}"' for c in cells)  # noqa: E731
    lines = [*banner, q(head + METRICS), q([""] * len(head) + UNITS)]
    for i, (kernel, values) in enumerate(rows):
        lines.append(
            q(
                [
                    str(i),
                    "4242",
                    "python3.11",
                    "host",
                    kernel,
                    "1",
                    "7",
                    "(128, 1, 1)",
                    "(5, 1, 1)",
                    "0",
                    "9.0",
                ]
                + values
            )
        )
    return "\n".join(lines) + "\n"


def ncu_csv_record():
    """The replay's children (launch=record): the first 2 of 4 replayed dp3_child launches,
    1M warp instructions each at 24 active lanes (WEE 0.75)."""
    child = [
        "500,000",
        "1,000,000",
        "24,000,000",
        "24",
        "0",
        "0",
        "10,000",
        "5,000",
        "5,000",
        "2,000",
        "500",
        "400",
        "100",
        "80.0",
    ]
    return ncu_csv([(DP3_CHILD, child), (DP3_CHILD, child)], banner=())


def record_output():
    """What `nqprof solve 14 -s dp3 -p launch=record --json` prints under ncu: ncu's lines
    around the run record. Generation 1: 4 grids, 100 boards; replayed in the order 10, 30,
    20, 40 boards (the first two, 40 boards, are the profiled ones: inst_c x 2.5)."""
    record = {
        "strategy": "dp3",
        "n": 14,
        "params": {"launch": "record"},
        "count": 1234,
        "expected": 365596,
        "verified": False,
        "measurement_build": "measurement build launch=record (...): the count is not N's",
        "generations": [
            {"generation": 0, "grids": 1, "boards": 96},
            {"generation": 1, "grids": 4, "boards": 100},
            {"generation": 2, "grids": 50, "boards": 700},
        ],
        "device_failures": {"launches": 54, "launch_failures": 0},
        "replay": {
            "kernel": "dp3_child",
            "recorded": 4,
            "capacity": 4,
            "dropped": 0,
            "replayed": 4,
            "gpu_s": 0.001,
            "boards": [10, 30, 20, 40],
            "blocks": [1, 1, 1, 1],
        },
    }
    return (
        "==PROF== Connected to process 4243 (/usr/bin/python3.11)\n"
        + json.dumps(record, indent=2)
        + "\n"
        "==PROF== Disconnected from process 4243\n"
    )


def timeline():
    none = 0xFFFFFFFF
    t0 = 5_000_000_000
    # id, gen, parent, parent block, boards, launched, start, end (ns after t0)
    grids = [(0, 0, none, 0, 100, 0, 0, 40_000)]
    grids += [
        (1 + i, 1, 0, i, 10 + i, 5_000 + 1000 * i, 9_000 + 1000 * i, 30_000 + 2000 * i)
        for i in range(3)
    ]
    grids += [
        (4 + i, 2, 1 + i % 3, i % 2, 2, 20_000 + 500 * i, 26_000 + 500 * i, 35_000 + 700 * i)
        for i in range(5)
    ]
    cols = {
        "id": [],
        "gen": [],
        "parent": [],
        "parent_block": [],
        "boards": [],
        "launched": [],
        "start": [],
        "end": [],
    }
    for g in grids:
        for key, value in zip(cols, g, strict=True):
            cols[key].append(value + t0 if key in ("launched", "start", "end") else value)
    return {
        "kind": "nqprof-characterize-timeline",
        "strategy": "dp3",
        "n": 13,
        "params": {"timeline": 1},
        "machine": MACHINE,
        "off": {"gpu_s": 0.0040, "gpu_times": [0.0040, 0.0041, 0.0039]},
        "on": {"gpu_s": 0.0042, "gpu_times": [0.0042, 0.0043, 0.0041]},
        "launches": 8,
        "generations": [],
        "root_kernel": "dp3_root",
        "timeline": {
            "recorded": 9,
            "capacity": 1034,
            "dropped": 0,
            "not_started": 0,
            "grids": cols,
        },
    }


if __name__ == "__main__":
    for name, doc in (
        ("launch", launch()),
        ("reserve", reserve()),
        ("ideal", ideal()),
        ("timeline", timeline()),
    ):
        (HERE / f"synthetic-{name}.json").write_text(json.dumps(doc, indent=1) + "\n")
    (HERE / "synthetic-ncu-dp3.csv").write_text(ncu_csv())
    (HERE / "synthetic-ncu-dp3-record.csv").write_text(ncu_csv_record())
    (HERE / "synthetic-record-dp3.out").write_text(record_output())
