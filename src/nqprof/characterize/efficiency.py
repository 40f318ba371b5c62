"""SIMD lane efficiency, memory irregularity and L2 hit rate, read with Nsight Compute
(Wang and Yalamanchili's counters, on Hopper's metric names).

nqprof runs ``nqprof solve`` under ``ncu`` (one round, its kernels' launches profiled,
``--clock-control none``), exports the report, reads it back as CSV (``--page raw``) and
parses it into pandas. Per kernel:

* warp execution efficiency: active lanes per warp instruction / 32
  (``smsp__thread_inst_executed_per_inst_executed.ratio``), weighted over launches by their
  warp instructions;
* in place of their load/store replay metric (none on Hopper): shared-memory bank
  conflicts and wavefronts per shared instruction, and sectors per global load/store
  request (4 is a fully used 128-byte line; more is irregular);
* the L2 hit rate (``lts__t_sector_hit_rate.pct``).

Their WEEI weights parent and child efficiencies by instructions,
``(WEE_p * inst_p + WEE_c * inst_c) / (inst_p + inst_c)`` (:func:`weei`). On CDP2 Nsight
Compute does not reach device-launched children (measured on an H200: dp3 N=10, only
``dp3_root`` was profiled), so a CDP strategy is profiled twice, the paper's way:

* the parent: the real run (its count verified), its host-launched kernel;
* the children: ``solve N -p launch=record`` (nqprof.strategies.cdp.replay), where the host
  grid's launches of generation 1 are recorded instead of made, with the boards their
  parents handed them, and the session launches every recorded grid of the strategy's
  ``child_kernel`` from the host; ncu profiles those launches (``--kernel-name`` the child
  kernel), the first ``child_launches`` of them (``--launch-count``; 0: all) in the order
  generation 1 recorded them.

Then ``inst_p`` is the parent's warp instructions and
``inst_c = child warp inst (profiled launches) x B_all / B_profiled``, B the boards of all
replayed launches and of the profiled ones (1 when every launch was profiled): the profiled
children stand for all of generation 1 in proportion to their boards; ``WEE_c`` is their
instruction-weighted lane efficiency. What stays an approximation, and the table says so:
the replayed children run without their own descendants (their launches are not made), so
generations >= 2 are missing from the WEEI; sampled launches stand for the others; and the
replay runs the children one after another from the host, not concurrently with their
parents (lane efficiency does not depend on that; the L2 hit rate may).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError, UnavailableError
from . import check_kind

KIND = "nqprof-characterize-efficiency"


def default_strategies() -> list[str]:
    """The host-seeded kernel and every CDP strategy that records its grids on the device
    (strategies.timeline_cdp): the baseline and what is compared with it."""
    from ..strategies import timeline_cdp

    return ["feinbube", *timeline_cdp()]


#: Replayed child launches ncu profiles per strategy (--launch-count; 0: all).
DEFAULT_CHILD_LAUNCHES = 200

#: name -> ncu metric.
METRICS = {
    "duration_ns": "gpu__time_duration.sum",
    "warp_inst": "smsp__inst_executed.sum",
    "thread_inst": "smsp__thread_inst_executed.sum",
    "lanes_per_inst": "smsp__thread_inst_executed_per_inst_executed.ratio",
    "shared_ld_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "shared_st_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "shared_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "shared_ld_inst": "smsp__inst_executed_op_shared_ld.sum",
    "shared_st_inst": "smsp__inst_executed_op_shared_st.sum",
    "global_ld_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "global_ld_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "global_st_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "global_st_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l2_hit_pct": "lts__t_sector_hit_rate.pct",
}
#: ncu's time units (the CSV's second row) -> nanoseconds; ncu picks the unit per report.
TIME_UNITS = {
    "ns": 1.0,
    "nsecond": 1.0,
    "": 1.0,
    "us": 1e3,
    "usecond": 1e3,
    "ms": 1e6,
    "msecond": 1e6,
    "s": 1e9,
    "second": 1e9,
}
#: Metrics that are ratios or percentages: averaged over launches weighted by warp instructions.
RATIOS = ("lanes_per_inst", "l2_hit_pct")
WARP = 32


def find_ncu(given: str | os.PathLike | None = None) -> str:
    """The ncu executable: ``given``, $NQPROF_NCU, PATH, or the toolkit's bin/."""
    for candidate in (given, os.environ.get("NQPROF_NCU"), shutil.which("ncu")):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    try:
        from ..cuda.toolkit import find_toolkit

        ncu = Path(find_toolkit().nvcc).parent / "ncu"
        if ncu.is_file():
            return str(ncu)
    except Exception:  # no toolkit either: the message below says what to do
        pass
    raise UnavailableError("Nsight Compute (ncu) not found: put it on PATH or set NQPROF_NCU")


def profile_command(
    ncu: str,
    report: Path,
    argv: Sequence[str],
    kernel_regex: str | None = None,
    launch_count: int | None = None,
) -> list[str]:
    """ncu collecting :data:`METRICS` for ``argv`` (and its worker processes) into ``report``."""
    cmd = [
        ncu,
        "--target-processes",
        "all",
        "--clock-control",
        "none",
        "--metrics",
        ",".join(METRICS.values()),
        "--export",
        str(report),
        "--force-overwrite",
    ]
    if kernel_regex:
        cmd += ["--kernel-name", f"regex:{kernel_regex}"]
    if launch_count:
        cmd += ["--launch-count", str(launch_count)]
    return cmd + ["--", *argv]


def solve_argv(
    strategy: str, n: int, params: Mapping[str, Any] | None = None, json: bool = False
) -> list[str]:
    """One round of ``nqprof solve`` (the count is checked under the profiler too, except
    in a measurement build: launch=record); ``json``: print the run record as JSON."""
    argv = [
        sys.executable,
        "-m",
        "nqprof.cli",
        "solve",
        str(n),
        "--strategy",
        strategy,
        "--repeats",
        "1",
        "-q",
    ]
    if json:
        argv.append("--json")
    for k, v in (params or {}).items():
        argv += ["--param", f"{k}={v}"]
    return argv


def kernel_regex(kernels: Sequence[str]) -> str | None:
    """ncu's --kernel-name filter for these kernels (names that start with one of them)."""
    return "^(" + "|".join(kernels) + ")" if kernels else None


#: The tag of a CDP strategy's second profile: its children, replayed (launch=record).
RECORD_TAG = "record"


def _report_name(strategy: str, n: int, tag: str = "") -> str:
    return f"ncu-{strategy}-{n}" + (f"-{tag}" if tag else "")


def _profiles_children(strategy: str) -> bool:
    from ..strategies import get

    strat = get(strategy)
    return bool(strat.cdp and strat.child_kernel)


def written(strategies: Sequence[str], n: int) -> list[str]:
    """The files :func:`measure` writes into its folder: each profile's report and CSV."""
    return [
        f"{_report_name(s, n, tag)}{suffix}"
        for s in strategies
        for tag in (("", RECORD_TAG) if _profiles_children(s) else ("",))
        for suffix in (".ncu-rep", ".csv")
    ]


def profile(
    strategy: str,
    n: int,
    out_dir: str | os.PathLike,
    params: Mapping[str, Any] | None = None,
    ncu: str | None = None,
    timeout: float = 600,
    launch_count: int | None = 200,
    kernels: Sequence[str] | None = None,
    tag: str = "",
) -> tuple[str, str]:
    """Run one round under ncu; returns the raw-page CSV of the report (also written to
    ``out_dir``) and what the round printed (with ``tag``, the run record as JSON). Only
    ``kernels`` are profiled (default: the strategy's), at most ``launch_count`` launches."""
    from ..strategies import get

    ncu = find_ncu(ncu)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    name = _report_name(strategy, n, tag)
    report = out / name
    if kernels is None:
        kernels = [k for src in get(strategy).sources for k in src.kernels]
    cmd = profile_command(
        ncu,
        report,
        solve_argv(strategy, n, params, json=bool(tag)),
        kernel_regex(kernels),
        launch_count,
    )
    printed = _run(cmd, timeout, f"ncu on {strategy} N={n}" + (f" ({tag})" if tag else ""))
    csv = _run(
        [ncu, "--import", f"{report}.ncu-rep", "--csv", "--page", "raw"], timeout, "ncu --import"
    )
    (out / f"{name}.csv").write_text(csv)
    return csv, printed


def record_from_output(text: str) -> dict[str, Any]:
    """The run record ``nqprof solve --json`` printed, among ncu's ``==PROF==`` lines."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == "{"), None)
    if start is None:
        raise InputError("no run record (JSON) in the output of nqprof solve --json")
    offset = sum(len(line) for line in lines[:start])
    try:
        record, _ = json.JSONDecoder().raw_decode(text[offset:])
    except json.JSONDecodeError as exc:
        raise InputError(
            f"the run record printed by nqprof solve --json is not JSON ({exc.msg})"
        ) from None
    return record


def _run(cmd: list[str], timeout: float, what: str) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise UnavailableError(f"{what}: no result within {timeout:g} s") from None
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise UnavailableError(f"{what} failed (exit {done.returncode}): {tail}")
    return done.stdout


# --- parsing ------------------------------------------------------------------------------


def parse_csv(text: str):
    """ncu's ``--csv --page raw`` output -> a DataFrame, one row per profiled launch, with
    the columns ``kernel`` and the names of :data:`METRICS` (numbers; NaN where absent).
    Lines before the header (``==PROF==`` messages, the program's output) are skipped."""
    import pandas as pd

    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise InputError(
            "not ncu CSV output (no header row starting "
            "with \"ID\"); was it run with --csv --page raw?"
        )
    raw = pd.read_csv(io.StringIO("\n".join(lines[start:])), dtype=str, keep_default_na=False)
    if "Kernel Name" not in raw.columns:
        raise InputError("ncu CSV has no 'Kernel Name' column")
    units = raw[raw["ID"].str.strip() == ""]  # the units row has no ID
    units = units.iloc[0] if len(units) else None
    raw = raw[raw["ID"].str.strip() != ""]
    out = pd.DataFrame({"kernel": raw["Kernel Name"].map(_short_name)})
    for name, metric in METRICS.items():
        if metric not in raw.columns:
            out[name] = float("nan")
            continue
        values = pd.to_numeric(raw[metric].str.replace(",", "", regex=False), errors="coerce")
        unit = units[metric].strip() if units is not None else ""
        if name.endswith("_ns"):
            if unit not in TIME_UNITS:
                raise InputError(f"ncu CSV: {metric} in unknown unit {unit!r}")
            values = values * TIME_UNITS[unit]
        out[name] = values
    return out.reset_index(drop=True)


def _short_name(name: str) -> str:
    """``dp3_root`` from ``dp3_root(const unsigned int *, ...)``."""
    return name.split("(", 1)[0].strip()


def per_kernel(df):
    """Per kernel: launches, sums of the counts, instruction-weighted ratios, and the
    derived measures (``wee``, ``shared_conflicts``, ``shared_wavefronts_per_inst``,
    ``global_ld_sectors_per_request``, ``global_st_sectors_per_request``)."""
    import pandas as pd

    rows = []
    for kernel, g in df.groupby("kernel", sort=False):
        r: dict[str, Any] = {"kernel": kernel, "launches": len(g)}
        for name in METRICS:
            if name in RATIOS:  # weighted by the launches' warp instructions where both are known
                known = g[name].notna() & g["warp_inst"].notna()
                w = g.loc[known, "warp_inst"]
                r[name] = (
                    float((g.loc[known, name] * w).sum() / w.sum())
                    if w.sum() > 0
                    else float(g[name].mean())
                )
            else:
                r[name] = float(g[name].sum(min_count=1))
        r["wee"] = r["lanes_per_inst"] / WARP
        r["shared_conflicts"] = _add(r["shared_ld_conflicts"], r["shared_st_conflicts"])
        r["shared_wavefronts_per_inst"] = _div(
            r["shared_wavefronts"], _add(r["shared_ld_inst"], r["shared_st_inst"])
        )
        r["global_ld_sectors_per_request"] = _div(r["global_ld_sectors"], r["global_ld_requests"])
        r["global_st_sectors_per_request"] = _div(r["global_st_sectors"], r["global_st_requests"])
        rows.append(r)
    return pd.DataFrame(rows)


def _add(a: float, b: float) -> float:
    return float(sum(x for x in (a, b) if x == x))


def _div(a: float, b: float) -> float:
    return a / b if b and b == b and a == a else float("nan")


def weei(parts: Iterable[tuple[float, float]]) -> float:
    """Their WEEI: the warp execution efficiencies of parent and children weighted by their
    (warp) instructions, ``sum(WEE_i * inst_i) / sum(inst_i)``, from ``(wee, inst)`` pairs."""
    parts = [(w, i) for w, i in parts if i and i == i and w == w]
    total = sum(i for _, i in parts)
    if not total:
        raise InputError("WEEI needs at least one kernel with instructions")
    return sum(w * i for w, i in parts) / total


# --- the table ----------------------------------------------------------------------------


def replay_weight(replay: Mapping[str, Any], profiled: int) -> dict[str, Any]:
    """How the profiled child launches stand for all of generation 1: the first ``profiled``
    of the replayed launches (ncu profiles them in replay order), their boards, and the
    factor ``B_all / B_profiled`` their instructions are scaled by."""
    boards = list(replay.get("boards") or [])
    replayed = int(replay.get("replayed", len(boards)))
    profiled = min(int(profiled), replayed)
    b_all, b_profiled = sum(boards), sum(boards[:profiled])
    scale = 1.0 if profiled >= replayed else (b_all / b_profiled if b_profiled else float("nan"))
    return {
        "kernel": replay.get("kernel"),
        "recorded": int(replay.get("recorded", replayed)),
        "replayed": replayed,
        "profiled": profiled,
        "boards": b_all,
        "boards_profiled": b_profiled,
        "scale": scale,
    }


def check_replay(record: Mapping[str, Any]) -> dict[str, Any]:
    """The replay of a launch=record run record, checked: a measurement build (never a
    verified count), every launch of generation 1 recorded and replayed."""
    replay = record.get("replay") or {}
    if not record.get("measurement_build") or record.get("verified"):
        raise InputError("the launch=record run is not marked as a measurement build")
    gen1 = next(
        (g.get("grids", 0) for g in record.get("generations", []) if g.get("generation") == 1), 0
    )
    if not replay:
        raise InputError("the launch=record run has no replay in its record")
    if replay.get("replayed") != gen1 or replay.get("recorded") != gen1:
        raise InputError(
            f"the replay launched {replay.get('replayed')} of "
            f"{replay.get('recorded')} recorded grids; generation 1 had {gen1}"
        )
    return replay


def summarize(
    strategy: str,
    n: int,
    kernels,
    cdp: bool,
    children=None,
    replay: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One strategy's entry of the document: its kernels' rows (``role`` parent; a CDP
    strategy's replayed children ``role`` child, with ``scale`` and ``inst_weighted``) and
    its WEEI over them. ``children_profiled``: True for a non-CDP strategy and where the
    replay's children were profiled; False for a CDP strategy profiled without them."""
    rows = [
        {**r, "role": "parent", "scale": 1.0, "inst_weighted": r["warp_inst"]}
        for r in kernels.to_dict("records")
    ]
    weight = None
    if children is not None and replay is not None:
        child_rows = children.to_dict("records")
        profiled = sum(int(r["launches"]) for r in child_rows)
        weight = replay_weight(replay, profiled)
        rows += [
            {
                **r,
                "role": "child",
                "scale": weight["scale"],
                "inst_weighted": r["warp_inst"] * weight["scale"],
            }
            for r in child_rows
        ]
    value = weei((r["wee"], r["inst_weighted"]) for r in rows) if rows else None
    return {
        "strategy": strategy,
        "n": n,
        "cdp": cdp,
        "kernels": rows,
        "weei": value,
        "children_profiled": not cdp or bool(weight and weight["profiled"]),
        "replay": weight,
        "error": None,
    }


def load(doc: dict[str, Any]) -> list[dict[str, Any]]:
    check_kind(doc, KIND, "efficiency characterization")
    if not isinstance(doc.get("strategies"), list):
        raise InputError("malformed efficiency characterization: no strategies list")
    return doc["strategies"]


def _f(value, fmt: str) -> str:
    return "-" if value is None or value != value else format(value, fmt)


def table(entries: Sequence[dict[str, Any]]) -> tuple[list[str], list[list], list[str]]:
    header = [
        "strategy",
        "N",
        "kernel",
        "role",
        "launches",
        "time (ms)",
        "warp inst",
        "WEE",
        "shared conflicts",
        "shared wavefronts/inst",
        "global ld sectors/req",
        "global st sectors/req",
        "L2 hit %",
        "WEEI",
    ]
    rows, notes = [], []
    for e in entries:
        if e.get("error"):
            notes.append(f"[{len(notes) + 1}] {e['strategy']} N={e['n']}: {e['error']}")
            rows.append([e["strategy"], e["n"], f"no measurement [{len(notes)}]"] + ["-"] * 11)
            continue
        w = e.get("replay") or {}
        for k in e["kernels"]:
            role = k.get("role", "parent")
            launches = k["launches"]
            if role == "child" and w:
                launches = f"{w['profiled']:,} of {w['replayed']:,}"
            rows.append(
                [
                    e["strategy"],
                    e["n"],
                    k["kernel"],
                    role,
                    launches,
                    _f(k["duration_ns"] / 1e6, ".3f"),
                    _f(k["warp_inst"], ".3e"),
                    _f(k["wee"], ".3f"),
                    _f(k["shared_conflicts"], ".3e"),
                    _f(k["shared_wavefronts_per_inst"], ".2f"),
                    _f(k["global_ld_sectors_per_request"], ".2f"),
                    _f(k["global_st_sectors_per_request"], ".2f"),
                    _f(k["l2_hit_pct"], ".1f"),
                    "",
                ]
            )
        weei_cell = _f(e.get("weei"), ".3f")
        if e.get("cdp") and not e.get("children_profiled"):
            notes.append(
                f"[{len(notes) + 1}] {e['strategy']}: WEEI over the host-launched kernels only; on "
                "CDP2 ncu does not reach device-launched children"
                + (f" ({e['children_error']})" if e.get("children_error") else "")
            )
            weei_cell += f" [{len(notes)}]"
        elif e.get("cdp") and w:
            sampled = (
                f"the first {w['profiled']:,} of {w['replayed']:,} replayed launches profiled "
                f"({w['boards_profiled']:,} of {w['boards']:,} "
                f"boards): inst_c scaled by {w['scale']:.3f}"
                if w["profiled"] < w["replayed"]
                else f"all {w['replayed']:,} replayed launches profiled"
            )
            notes.append(
                f"[{len(notes) + 1}] {e['strategy']}: children = generation 1's {w['kernel']} "
                "grids replayed from the host over the boards their parents recorded "
                "(launch=record), without their own descendants "
                f"(generations >= 2 not in the WEEI); {sampled}"
            )
            weei_cell += f" [{len(notes)}]"
        if e["kernels"]:
            rows[-1][-1] = weei_cell
    notes.append(
        "WEE: active lanes per warp instruction / 32; WEEI = (WEE_p x inst_p + WEE_c x inst_c) / "
        "(inst_p + inst_c), inst = warp instructions, inst_c = profiled child inst x B_all / "
        "B_profiled (boards of all replayed launches over those "
        "profiled); sectors/req: 4 is one fully used 128-byte line"
    )
    return header, rows, notes


def measure(
    strategies: Sequence[str],
    n: int,
    out_dir: str | os.PathLike,
    params=None,
    ncu: str | None = None,
    timeout: float = 600,
    progress=None,
    child_launches: int = DEFAULT_CHILD_LAUNCHES,
) -> dict[str, Any]:
    """Profile each strategy at N (a CDP strategy twice: the real run for its parent, the
    launch=record run for its children); returns the JSON document (the CSVs stay in
    ``out_dir``). A failed child profile leaves the parent's rows, with the reason."""
    from ..errors import NqprofError
    from ..strategies import get

    entries = []
    for s in strategies:
        strat = get(s)
        given = dict((params or {}).get(s) or {})
        if progress is not None:
            progress.case(f"efficiency {s} N={n}")
        try:
            csv, _ = profile(s, n, out_dir, given, ncu=ncu, timeout=timeout)
            df = parse_csv(csv)
            if df.empty:
                raise InputError("ncu profiled no kernel of this strategy")
            parents = per_kernel(df)
        except NqprofError as exc:
            entries.append({"strategy": s, "n": n, "error": str(exc)})
            continue
        if not _profiles_children(s):
            entries.append(summarize(s, n, parents, strat.cdp))
            continue
        if progress is not None:
            progress.case(f"efficiency {s} N={n} children (launch=record)")
        try:
            csv, printed = profile(
                s,
                n,
                out_dir,
                {**given, "launch": "record"},
                ncu=ncu,
                timeout=timeout,
                launch_count=child_launches or None,
                kernels=[strat.child_kernel],
                tag=RECORD_TAG,
            )
            replay = check_replay(record_from_output(printed))
            df = parse_csv(csv)
            children = per_kernel(df[df["kernel"] == strat.child_kernel])
            if children.empty:
                raise InputError(f"ncu profiled no {strat.child_kernel} launch of the replay")
            entries.append(summarize(s, n, parents, True, children, replay))
        except NqprofError as exc:
            entries.append({**summarize(s, n, parents, True), "children_error": str(exc)})
    return {"kind": KIND, "n": n, "child_launches": child_launches, "strategies": entries}
