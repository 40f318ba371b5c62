"""nqprof characterize without a GPU: parsing, tables and figures from recorded fixtures,
the measurement loops with fake probes, one-line errors for bad input, and the kernels'
build variants compiled with nvcc.

The fixtures under tests/data/characterize named synthetic-* are SYNTHETIC (invented
numbers in the recorded shape, written by make_synthetic.py), not measurements.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_process import HEAVY, command_imports
from host_programs import host_program_output

from nqprof.characterize import efficiency, ideal, launch, reserve, residency
from nqprof.cli import main
from nqprof.errors import InputError, WatchdogError
from nqprof.strategies.cdp import device_records as dr
from nqprof.textfmt import MIB

DATA = Path(__file__).parent / "data" / "characterize"


def doc(name: str) -> dict:
    return json.loads((DATA / f"synthetic-{name}.json").read_text())


# --- launch --------------------------------------------------------------------------------


def test_launch_counts_and_modes_parse():
    assert launch.parse_counts("256K, 32,1k,1M,32") == [32, 1024, 262144, 1 << 20]
    assert launch.parse_modes("tail,own") == ["tail", "own"]
    for bad in ("", "32,x", "0", "-4", "1G"):
        with pytest.raises(InputError, match="--counts takes"):
            launch.parse_counts(bad)
    with pytest.raises(
        InputError, match="--modes takes a comma list of default, own, fire-and-forget, tail"
    ):
        launch.parse_modes("default,stream")


def test_launch_help_names_every_mode(capsys):
    """`nqprof characterize launch --help` lists the modes the measurement takes, graph
    modes too."""
    with pytest.raises(SystemExit):
        main(["characterize", "launch", "--help"])
    text = " ".join(capsys.readouterr().out.split()).replace("- ", "-")  # argparse wraps at hyphens
    listed = re.search(r"--modes MODES launch modes, a comma list of ([\w\-, ]+?) \(", text)
    assert listed and listed.group(1).split(", ") == list(launch.MODES), text


def test_pending_is_sized_to_the_count():
    assert launch.pending_for(1024, "default") == 1280
    assert launch.pending_for(1024, "own") == 2560  # a thread's own stream takes a second slot
    assert launch.pending_for(1, "tail") == launch.MIN_PENDING


def test_launch_table_from_the_fixture():
    points = launch.load(doc("launch"))
    header, rows, notes = launch.table(points)
    assert header[:3] == ["mode", "launches", "pending limit"]
    by = {(r[0], r[1]): r for r in rows}
    default_256k = by[("default", "262,144")]
    assert (
        default_256k[5] == "262.164" and default_256k[6] == "1.000"
    )  # t1 - t2 in ms, per launch in us
    failed = by[("tail", "1,048,576")]
    assert failed[5] == "-" and failed[7].startswith("12 of 4,194,304 launches failed")
    assert "cudaErrorLaunchPendingCountExceeded (69)" in failed[7]
    assert by[("own", "1,048,576")][7] == "no measurement [1]" and notes[0].startswith(
        "[1] own x1,048,576: "
    )
    series = launch.series(points)
    assert [c for c, _, _ in series["tail"]] == [
        32,
        1024,
        32768,
        262144,
    ]  # the failed point is not drawn
    assert series["fire-and-forget"][-1][2] == pytest.approx(0.6e-6, rel=1e-3)


def test_launch_measure_skips_larger_counts_after_one_that_does_not_fit():
    calls = []

    def probe(strategy, params, timeout):
        calls.append((params["mode"], params["count"]))
        if params["count"] >= 1024:
            raise InputError(f"{params['count']:,} launches ({params['mode']}) do not fit: ...")
        return {
            "mode": params["mode"],
            "count": params["count"],
            "t1_s": [2e-3],
            "t2_s": [1e-3],
            "launches": 64,
            "launch_failures": 0,
            "stream_failures": 0,
            "first_error": 0,
            "pending": 40,
            "rounds": 2,
            "device": "fake",
            "toolkit": "13.0",
            "driver": "13.0",
            "block": 128,
        }

    out = launch.measure([32, 1024, 4096], ["default", "own"], repeats=1, probe=probe)
    assert calls == [("default", 32), ("default", 1024), ("own", 32), ("own", 1024)]
    points = launch.load(out)
    assert [p.error is None for p in points] == [True, False, False] * 2
    assert points[2].error.startswith("skipped") and out["machine"]["device"] == "fake"
    assert points[0].cost == pytest.approx(1e-3)


def _launch_probe(calls):
    def probe(strategy, params, timeout):
        calls.append((params["mode"], params["count"]))
        return {
            "mode": params["mode"],
            "count": params["count"],
            "t1_s": [2e-3],
            "t2_s": [1e-3],
            "launches": params["count"],
            "launch_failures": 0,
            "stream_failures": 0,
            "first_error": 0,
            "rounds": 2,
            "device": "fake",
            "toolkit": "13.0",
            "driver": "13.0",
        }

    return probe


def test_launch_graph_modes_run_up_to_their_limits_and_state_them_past():
    """A graph mode is asked for no count past its limit (120 fire-and-forget launches per
    graph execution, one tail launch): it measures the limit itself instead, and the table
    states the limit for the larger counts; the CDP modes are asked for all."""
    calls = []
    counts = [32, 256, 4096]
    out = launch.measure(counts, ["tail", "graph-ff", "graph-tail"], probe=_launch_probe(calls))
    assert calls == [
        ("tail", 32),
        ("tail", 256),
        ("tail", 4096),
        ("graph-ff", 32),
        ("graph-ff", 120),
        ("graph-tail", 1),
    ]
    points = launch.load(out)
    stated = [(p.mode, p.count) for p in points if p.limit]
    assert stated == [("graph-ff", 256), ("graph-ff", 4096)] + [("graph-tail", c) for c in counts]
    assert all(p.cost is None for p in points if p.limit)
    assert all(p.cost == pytest.approx(1e-3) for p in points if not p.limit)
    _, rows, notes = launch.table(points)
    by_key = {(r[0], r[1]): r for r in rows}
    assert by_key[("graph-ff", "256")][-1] == launch.graph_limit_text("graph-ff")
    assert "120 fire-and-forget" in by_key[("graph-ff", "4,096")][-1]
    assert "2 or more tail launches" in by_key[("graph-tail", "32")][-1]
    assert by_key[("graph-tail", "32")][5] == "-" and not notes
    assert by_key[("graph-tail", "1")][5] == "1.000"  # t1 - t2 = 1 ms


def test_launch_past_the_runtimes_pending_cap_is_a_stated_limit_for_that_count_and_more():
    from nqprof.errors import LimitError

    calls = []
    fake = _launch_probe(calls)

    def probe(strategy, params, timeout):
        if params["count"] >= 1 << 20:
            calls.append((params["mode"], params["count"]))
            raise LimitError("limit: the device runtime takes at most 599,186 pending launches")
        return fake(strategy, params, timeout)

    points = launch.load(launch.measure([1024, 1 << 20, 1 << 22], ["default"], probe=probe))
    assert calls == [("default", 1024), ("default", 1 << 20)]  # 4M is not tried
    assert [p.limit is not None for p in points] == [False, True, True]
    assert all(p.error is None for p in points) and "599,186" in points[2].limit
    _, rows, notes = launch.table(points)
    assert rows[1][-1].startswith("limit: the device runtime") and not notes


def test_launch_beyond_limits_runs_the_graph_modes_past_them():
    calls = []
    launch.measure([121], ["graph-ff"], probe=_launch_probe(calls), beyond_limits=True)
    assert calls == [("graph-ff", 120), ("graph-ff", 121)]


def test_launch_measure_records_a_hang_and_goes_on():
    def probe(strategy, params, timeout):
        raise WatchdogError(
            f"characterize-launch: no answer to 'run' within {timeout:g} s; worker killed"
        )

    points = launch.load(launch.measure([32, 64], ["tail"], probe=probe, timeout=5))
    assert "within 5 s" in points[0].error and points[1].error.startswith("skipped")


def _rendered(tmp_path, capsys, *argv) -> str:
    """What ``nqprof ARGV --figure FILE.png`` printed, its figure checked: a PNG of some size."""
    png = tmp_path / "figure.png"
    assert main([*argv, "--figure", str(png)]) == 0
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"
    return capsys.readouterr().out


@pytest.mark.slow
def test_launch_figure(tmp_path, capsys):
    md = tmp_path / "fig5.md"
    out = _rendered(
        tmp_path,
        capsys,
        "characterize",
        "launch",
        "--from",
        str(DATA / "synthetic-launch.json"),
        "-o",
        str(md),
    )
    assert "SYNTHETIC" in out and "Paper (Kepler) Fig. 5" in out and "K20c 143 ms" in out
    assert (
        md.read_text().startswith("# Device launch time vs launch count")
        and "| mode | launches |" in md.read_text()
    )


# --- reserve -------------------------------------------------------------------------------


def test_reserve_table_fit_and_sync_depth():
    points = reserve.load(doc("reserve"))
    slope, intercept, used = reserve.fit_slot_bytes(points)
    assert slope == pytest.approx(9728) and intercept == pytest.approx(100 * MIB) and used == 5
    header, rows, notes = reserve.table(points)
    by = {(r[0], r[1]): r for r in rows}
    assert by[("pending launches", "32")][2:4] == ["0.0", "100.3"]
    assert by[("malloc heap", "512 MiB")][3] == "612.0"
    assert by[("pending launches", "16,777,216")][4].startswith("does not fit")
    assert any("9,728 B (9.50 KiB); fixed reserve 100.0 MiB" in n for n in notes)
    assert any(
        n.startswith(
            "Fig. 6(b) (memory per sync level) does not exist on CDP2: setting the sync depth to 2 "
            "was refused: cuCtxSetLimit failed"
        )
        for n in notes
    )
    assert reserve.series(points)["+ cudadevrt module"][0] == (0, pytest.approx(100.0))


def test_reserve_fit_needs_two_limits():
    one = [reserve.ReservePoint("pending", 4096, True, free_context=10 * MIB, free_launch=5 * MIB)]
    assert reserve.fit_slot_bytes(one) is None


def test_reserve_measure_adds_the_largest_limit_that_fits():
    seen = []
    free = (
        reserve.HEADROOM + 1000 * reserve.PENDING_SLOT_BYTES
    )  # room for 1,000 slots beside the headroom

    def probe(strategy, params, timeout):
        seen.append((params["kind"], params["value"], params["module"]))
        if params["kind"] == "sync-depth":
            return {
                "kind": "sync-depth",
                "value": 2,
                "module": True,
                "free_context": free,
                "error": "refused: operation not supported",
            }
        gone = params["value"] * reserve.PENDING_SLOT_BYTES if params["module"] else 0
        return {
            **params,
            "free_context": free,
            "free_limit": free,
            "free_module": free - gone,
            "free_launch": free - gone,
            "error": None,
            "device": "fake",
        }

    def watched(p, params, timeout):
        return probe(p, params, timeout), {"cpu": {"probe_s": 0.1}}

    out = reserve.measure(pending=[0, 16, 4096], heap_mib=[8], probe=watched)
    pending = [(v, m) for k, v, m in seen if k == "pending"]
    top = reserve.largest_pending(free)
    assert top == 1000  # 4096 does not fit: dropped
    assert pending == [(0, False), (16, False), (top, False), (0, True), (16, True), (top, True)]
    assert seen[-1][0] == "sync-depth" and ("heap", 8, True) in seen
    assert reserve.load(out)[-1].error.startswith("refused")
    assert reserve.load(out)[0].conditions == {"cpu": {"probe_s": 0.1}}


# --- ideal ---------------------------------------------------------------------------------


def test_ideal_from_the_fixture():
    results = {(r.strategy, r.n): r for r in ideal.load(doc("ideal"))}
    dp3 = results[("dp3", 14)]
    assert dp3.overhead == pytest.approx(3e-3) and dp3.per_launch == pytest.approx(1e-6)
    assert dp3.ideal_paper == pytest.approx(7e-3) and dp3.ideal == pytest.approx(1e-3)
    assert dp3.speedup(dp3.measured) == pytest.approx(1.2) and dp3.baseline == ("feinbube", 0.012)
    assert dp3.same_parent_work
    broken = results[("dpswap", 16)]
    assert broken.measured is None and broken.errors[0].startswith("empty: WatchdogError")
    header, rows, notes = ideal.table(list(results.values()))
    by = {(r[0], r[1]): r for r in rows}
    assert by[("dp2", 16)][2] == "200.000" and by[("dp2", 16)][12:] == ["0.75x", "1.07x", "1.07x"]
    assert by[("dpswap", 16)][2].startswith("no measurement [")
    assert by[("dpswap", 14)][10].startswith(
        "-20.000 ["
    )  # the scaled estimate exceeds the time: said so
    assert any("ideal all does not hold here" in n for n in notes)


def test_ideal_flags_different_parent_work_and_unverified_counts():
    d = doc("ideal")
    d["runs"][0]["variants"]["none"]["gen1"]["boards"] += 1
    d["runs"][1]["variants"]["real"]["verified"] = False
    results = ideal.load(d)
    assert not results[0].same_parent_work
    assert results[1].errors == ["real: count 1 not verified"] and results[1].measured is None
    _, rows, notes = ideal.table(results)
    assert "[" in rows[0][5] and any("not the same parent work" in n for n in notes)


def test_ideal_measure_with_fake_runs():
    from nqprof.result import RunRecord

    def record(strategy, n, launch_mode, seconds):
        gens = [
            {"generation": 0, "grids": 1, "boards": 10, "min": 10, "max": 10, "mean": 10.0},
            {"generation": 1, "grids": 7, "boards": 70, "min": 10, "max": 10, "mean": 10.0},
        ]
        return RunRecord(
            strategy,
            n,
            {"launch": launch_mode},
            5,
            5,
            launch_mode == "real",
            seconds,
            seconds,
            1,
            [seconds],
            [seconds],
            device={"name": "fake", "driver": "13.0"},
            toolkit={"version": "13.0"},
            generations=gens,
            device_failures={"launches": 7},
            conditions={"cpu": {"steal_pct": 0.5}, "gpu": {"sm_clock_mhz_median": 1980}},
        )

    calls = []

    def variant(s, n, params, launch_mode, repeats, warmup, timeout):
        calls.append((s, n, launch_mode))
        return record(s, n, launch_mode, {"real": 0.01, "empty": 0.004, "none": 0.002}[launch_mode])

    import nqprof.runner as runner

    original = runner.solve
    runner.solve = lambda *a, **k: record("feinbube", 8, "real", 0.02)
    try:
        out = ideal.measure(["dp2"], [8], variant=variant, repeats=1)
    finally:
        runner.solve = original
    assert calls == [("dp2", 8, "real"), ("dp2", 8, "empty"), ("dp2", 8, "none")]
    # every measurement carries the conditions of its rounds
    for entry in [*out["runs"][0]["variants"].values(), *out["baselines"]]:
        assert entry["conditions"]["gpu"]["sm_clock_mhz_median"] == 1980 and entry["rounds"] == 1
    (r,) = ideal.load(json.loads(json.dumps(out)))
    assert (
        r.overhead == pytest.approx(0.002)
        and r.host_launches == 7
        and r.speedup(r.measured) == pytest.approx(2)
    )


def test_ideal_cli(tmp_path, capsys):
    out = _rendered(
        tmp_path, capsys, "characterize", "ideal", "--from", str(DATA / "synthetic-ideal.json")
    )
    assert "Paper (Kepler) Fig. 4: ideal CDP 1.13-2.73x" in out
    assert main(["characterize", "ideal", "--strategies", "feinbube"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("nqprof: error: --strategies: feinbube launches nothing from the device")
        and err.count("\n") == 1
    )


# --- the launch parameter of the CDP strategies -----------------------------------------------


def test_every_cdp_strategy_has_the_launch_variants():
    from nqprof.strategies import all_strategies
    from nqprof.strategies.cdp.params import launch_defines

    # graph-cst launches graphs, not CDP grids: it has no measurement builds
    cdp = [s for s in all_strategies() if s.cdp and s.name != "graph-cst"]
    assert {"dp2", "dp3", "dpswap", "cdp-cst"} <= {s.name for s in cdp}
    for s in cdp:
        assert s.resolve(12)["launch"] == "real"
        assert s.resolve(12, {"launch": "none"})["launch"] == "none"
        with pytest.raises(
            InputError, match="parameter launch must be one of real, empty, none, record"
        ):
            s.resolve(12, {"launch": "fast"})
    assert launch_defines({"launch": "real"}) == {} and launch_defines({}) == {}
    assert launch_defines({"launch": "empty"}) == {"CDP_LAUNCH_MODE": 1}
    assert launch_defines({"launch": "none"}) == {"CDP_LAUNCH_MODE": 2}


# --- efficiency ----------------------------------------------------------------------------


def test_ncu_csv_parses_into_per_kernel_measures():
    df = efficiency.parse_csv((DATA / "synthetic-ncu-dp3.csv").read_text())
    assert list(df["kernel"]) == ["dp3_root", "dp3_root"] and df["warp_inst"].tolist() == [1e6, 3e6]
    (k,) = efficiency.per_kernel(df).to_dict("records")
    assert k["launches"] == 2 and k["duration_ns"] == 3e6
    assert k["lanes_per_inst"] == pytest.approx(14.0) and k["wee"] == pytest.approx(
        14 / 32
    )  # weighted by warp inst
    assert k["shared_conflicts"] == 6000 and k["shared_wavefronts_per_inst"] == pytest.approx(
        160_000 / 120_000
    )
    assert (
        k["global_ld_sectors_per_request"] == pytest.approx(4.0)
        and k["global_st_sectors_per_request"] == 4.0
    )
    assert k["l2_hit_pct"] == pytest.approx(75.5)


def test_ncu_csv_errors_and_missing_metrics():
    with pytest.raises(InputError, match="not ncu CSV output"):
        efficiency.parse_csv("==PROF== nothing profiled\n")
    df = efficiency.parse_csv(
        '"ID","Kernel Name","smsp__inst_executed.sum"\n"","","inst"\n"0","k(int)","10"\n'
    )
    k = efficiency.per_kernel(df).iloc[0]
    assert k["warp_inst"] == 10 and k["wee"] != k["wee"]  # NaN where ncu did not report the metric


def test_weei_is_the_instruction_weighted_efficiency():
    assert efficiency.weei([(0.5, 100), (0.25, 300)]) == pytest.approx((50 + 75) / 400)
    assert efficiency.weei([(0.5, 100), (float("nan"), 300)]) == 0.5
    with pytest.raises(InputError, match="WEEI needs"):
        efficiency.weei([])


def test_efficiency_command_line_and_table(tmp_path, capsys):
    cmd = efficiency.profile_command(
        "ncu", tmp_path / "r", ["python3", "-m", "nqprof.cli"], "^(dp3_root|dp3_child)", 5
    )
    assert cmd[:5] == ["ncu", "--target-processes", "all", "--clock-control", "none"]
    assert "regex:^(dp3_root|dp3_child)" in cmd and cmd[-4:] == [
        "--",
        "python3",
        "-m",
        "nqprof.cli",
    ]
    assert (
        efficiency.solve_argv("dp3", 14, {"depth": 4})[-6:]
        == ["--strategy", "dp3", "--repeats", "1", "-q", "--param", "depth=4"][-6:]
    )
    df = efficiency.parse_csv((DATA / "synthetic-ncu-dp3.csv").read_text())
    entry = efficiency.summarize("dp3", 14, efficiency.per_kernel(df), cdp=True)
    d = {
        "kind": efficiency.KIND,
        "n": 14,
        "strategies": [entry, {"strategy": "dp2", "n": 14, "error": "ncu failed"}],
    }
    path = tmp_path / "eff.json"
    path.write_text(json.dumps(d))
    assert main(["characterize", "efficiency", "--from", str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        "dp3_root" in out
        and "0.438 [1]" in out
        and "on CDP2 ncu does not reach device-launched children" in out
    )
    assert "[2] dp2 N=14: ncu failed" in out


def _record_fixture():
    return efficiency.record_from_output((DATA / "synthetic-record-dp3.out").read_text())


def test_efficiency_weei_with_the_replayed_children(tmp_path, capsys):
    """Parent from the real run, children from the launch=record replay: the first 2 of 4
    launches profiled (40 of 100 boards), so inst_c = 2M x 2.5; WEEI = (0.4375 x 4M + 0.75 x
    5M) / 9M."""
    parents = efficiency.per_kernel(
        efficiency.parse_csv((DATA / "synthetic-ncu-dp3.csv").read_text())
    )
    children = efficiency.per_kernel(
        efficiency.parse_csv((DATA / "synthetic-ncu-dp3-record.csv").read_text())
    )
    replay = efficiency.check_replay(_record_fixture())
    entry = efficiency.summarize("dp3", 14, parents, True, children, replay)
    assert entry["children_profiled"] and entry["weei"] == pytest.approx(
        (0.4375 * 4e6 + 0.75 * 5e6) / 9e6
    )
    w = entry["replay"]
    assert (w["kernel"], w["profiled"], w["replayed"], w["boards_profiled"], w["boards"]) == (
        "dp3_child",
        2,
        4,
        40,
        100,
    )
    assert w["scale"] == 2.5
    assert [(k["kernel"], k["role"], k["inst_weighted"]) for k in entry["kernels"]] == [
        ("dp3_root", "parent", 4e6),
        ("dp3_child", "child", 5e6),
    ]
    header, rows, notes = efficiency.table([entry])
    assert (
        header[3] == "role"
        and rows[1][2:5] == ["dp3_child", "child", "2 of 4"]
        and rows[1][7] == "0.750"
    )
    assert rows[1][-1] == "0.611 [1]" and rows[0][-1] == ""
    assert "without their own descendants" in notes[0] and "inst_c scaled by 2.500" in notes[0]
    assert "inst_c = profiled child inst x B_all / B_profiled" in notes[-1]
    # every launch profiled: no scaling
    all4 = efficiency.summarize(
        "dp3",
        14,
        parents,
        True,
        children,
        {**replay, "boards": [10, 30], "replayed": 2, "recorded": 2},
    )
    assert (
        all4["replay"]["scale"] == 1.0
        and "all 2 replayed launches profiled" in efficiency.table([all4])[2][0]
    )
    path = tmp_path / "eff.json"
    path.write_text(json.dumps({"kind": efficiency.KIND, "n": 14, "strategies": [entry]}))
    assert main(["characterize", "efficiency", "--from", str(path)]) == 0
    assert "dp3_child" in capsys.readouterr().out


def test_efficiency_checks_the_replay_it_weights_by():
    good = _record_fixture()
    assert efficiency.check_replay(good)["replayed"] == 4
    for bad, message in [
        ({**good, "verified": True}, "not marked as a measurement build"),
        ({**good, "measurement_build": None}, "not marked as a measurement build"),
        ({**good, "replay": {}}, "no replay in its record"),
        ({**good, "replay": {**good["replay"], "replayed": 3}}, "launched 3 of 4 recorded grids"),
    ]:
        with pytest.raises(InputError, match=message):
            efficiency.check_replay(bad)
    with pytest.raises(InputError, match="no run record"):
        efficiency.record_from_output("==PROF== Disconnected\n")
    assert efficiency.solve_argv("dp3", 14, {"launch": "record"}, json=True)[-3:] == [
        "--json",
        "--param",
        "launch=record",
    ]


def test_efficiency_measure_profiles_parent_and_children(tmp_path, monkeypatch):
    """A CDP strategy is profiled twice: the real run (its kernels) and the launch=record run
    (its child kernel only, at most --child-launches launches); a failed child profile keeps
    the parent's rows with the reason."""
    from nqprof.errors import UnavailableError

    calls = []

    def profile(
        strategy,
        n,
        out_dir,
        params=None,
        ncu=None,
        timeout=600,
        launch_count=200,
        kernels=None,
        tag="",
    ):
        calls.append((strategy, dict(params or {}), launch_count, kernels, tag))
        if tag == "record":
            if strategy == "dp2":
                raise UnavailableError("ncu on dp2 N=14 (record) failed (exit 2): boom")
            return (DATA / "synthetic-ncu-dp3-record.csv").read_text(), (
                DATA / "synthetic-record-dp3.out"
            ).read_text()
        return (DATA / "synthetic-ncu-dp3.csv").read_text(), ""

    monkeypatch.setattr(efficiency, "profile", profile)
    doc = efficiency.measure(
        ["dp3", "dp2"], 14, tmp_path, params={"dp3": {"depth": 3}}, child_launches=2
    )
    assert calls[:2] == [
        ("dp3", {"depth": 3}, 200, None, ""),
        ("dp3", {"depth": 3, "launch": "record"}, 2, ["dp3_child"], "record"),
    ]
    assert calls[3][3] == ["dp2_child"]
    dp3, dp2 = doc["strategies"]
    assert dp3["children_profiled"] and dp3["replay"]["scale"] == 2.5
    assert not dp2["children_profiled"] and "boom" in dp2["children_error"]
    notes = efficiency.table(efficiency.load(doc))[2]
    assert any("dp2: WEEI over the host-launched kernels only" in n and "boom" in n for n in notes)
    efficiency.measure(["feinbube"], 14, tmp_path)
    assert calls[-1][4] == ""  # not a CDP strategy: one profile


# --- the command line ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, message",
    [
        (["launch", "--from", "nowhere.json"], "--from nowhere.json does not exist"),
        (["launch", "--counts", "12,abc"], "--counts takes a comma list"),
        (
            ["launch", "--repeats", "0", "--from", str(DATA / "synthetic-launch.json")],
            "--rounds: the number of rounds (or auto) must be an integer in 1..100000",
        ),
        (
            ["reserve", "--from", str(DATA / "synthetic-launch.json")],
            "not an nqprof reserve characterization",
        ),
        (
            ["reserve", "--pending", "4,-1"],
            "--pending takes a comma list of integers in 0..67108864, got '4,-1'",
        ),
        (["ideal", "--strategies", "dp9"], "unknown strategy 'dp9'"),
        (["ideal", "--n", "0:x"], "N"),
        (["efficiency", "--n", "99"], "N"),
    ],
)
def test_bad_input_is_one_line(argv, message, capsys):
    assert main(["characterize", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nqprof: error: ") and message in err and err.count("\n") == 1


def test_not_json_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["characterize", "ideal", "--from", str(bad)]) == 2
    assert f"{bad} is not JSON" in capsys.readouterr().err


def test_measuring_without_a_gpu_says_so(capsys, monkeypatch):
    import nqprof.cuda.device as device

    monkeypatch.setattr(device, "gpu_available", lambda: (False, "no CUDA driver"))
    assert main(["characterize", "launch", "--counts", "32"]) == 2
    assert "no GPU on this machine (no CUDA driver)" in capsys.readouterr().err


def test_characterize_help_imports_nothing_heavy():
    imported = command_imports(["characterize", "launch", "--help"])
    assert not imported & (HEAVY | {"numpy"})


# --- the kernels ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "file, mode",
    [
        (f, m)
        for f in (
            "characterize.cu",
            "dp1.cu",
            "dp2.cu",
            "dp3.cu",
            "dpswap.cu",
            "cdp_bp.cu",
            "cdp_dp3.cu",
        )
        for m in (1, 2)
        if not (f == "characterize.cu" and m == 1)
    ],
)
def test_launch_variants_compile_and_link(file, mode, toolkit):
    """Every CDP kernel builds (and device-links) in the variants of `characterize ideal`;
    the empty-child variant adds its stand-in kernel."""
    from nqprof.catalog import catalog
    from nqprof.cuda import nvcc

    src = catalog()[file]
    rows = nvcc.compile_source(
        src, "sm_90", defines={**src.check_defines, "CDP_LAUNCH_MODE": mode}, toolkit=toolkit
    )
    names = {r.kernel for r in rows}
    assert set(src.kernels) <= names
    assert any("cdp_empty_child" in k for k in names) == (mode == 1)


def test_report_wang_renders_the_kept_measurements(tmp_path, capsys):
    out = _rendered(
        tmp_path, capsys, "report", "wang", "fig6", "--from", str(DATA / "synthetic-reserve.json")
    )
    assert "Paper (Kepler) Fig. 6(a): 172-202 MB" in out
    assert main(["report", "wang", "fig5", "--from", str(DATA / "synthetic-launch.json")]) == 0
    assert "K40 98.6 ms" in capsys.readouterr().out


# --- the device timeline -------------------------------------------------------------------


def test_timeline_table_overhead_and_check():
    from nqprof.characterize import timeline

    d = doc("timeline")
    header, rows, notes = timeline.table(d)
    assert [r[:3] for r in rows] == [[0, "1", "100"], [1, "3", "33"], [2, "5", "10"]]
    assert rows[1][3:] == ["9.0 us", "34.0 us", "22.0 us", "4.0 us"]
    assert notes[0].startswith(
        "9 grids recorded (8 launched from the device; the run's accounting counted 8"
    )
    assert "recording overhead: 4.200 ms with, 4.000 ms without" in notes[1] and notes[1].endswith(
        "+5.0%"
    )
    d["launches"], d["timeline"]["dropped"] = 9, 1
    problems = timeline.check(d, timeline.frame(d))
    assert problems == [
        "1 grid not recorded: the buffer held 1,034",
        "8 device grids recorded, the accounting counted 9 launches",
    ]


def test_timeline_chrome_alone_and_merged_with_nsight(tmp_path):
    from nqprof.analysis import trace as nsys_trace
    from nqprof.characterize import timeline

    d = doc("timeline")
    alone = json.loads(timeline.to_chrome(d, tmp_path / "alone.json").read_text())
    grids = [e for e in alone["traceEvents"] if e.get("cat") == "cdp_grid"]
    assert len(grids) == 9 and {e["tid"] for e in grids} == {0, 1, 2}
    assert grids[0]["ts"] == 0 and grids[0]["dur"] == 40.0
    d["root_kernel"] = "parent"  # the kernel of the recorded Nsight sample
    trace = nsys_trace.load(Path(__file__).parent / "data" / "nsys" / "cdp-sample.sqlite")
    merged = json.loads(timeline.to_chrome(d, tmp_path / "merged.json", trace).read_text())
    origin = merged["otherData"]["origin_ns"]
    parent = [
        e for e in merged["traceEvents"] if e.get("cat") == "kernel" and e["name"] == "parent"
    ][0]
    host = [e for e in merged["traceEvents"] if e.get("name") == "gen 0 grid 0"][0]
    assert (
        host["ts"] == parent["ts"] == (725191258 - origin) / 1000
    )  # aligned on the root kernel's row
    assert sum(e.get("cat") == "cdp_grid" for e in merged["traceEvents"]) == 9
    d["root_kernel"] = "nowhere"
    with pytest.raises(InputError, match="no row for nowhere"):
        timeline.to_chrome(d, tmp_path / "x.json", trace)


def test_timeline_measure_runs_with_and_without_recording():
    from nqprof.characterize import timeline
    from nqprof.result import RunRecord

    calls = []

    def solve(strategy, n, params, **kw):
        calls.append(params["timeline"])
        tl = doc("timeline")["timeline"] if params["timeline"] else {}
        return RunRecord(
            strategy,
            n,
            params,
            1,
            1,
            True,
            0.1,
            0.01 + 0.001 * params["timeline"],
            1,
            [0.1],
            [0.01],
            device={"name": "fake"},
            toolkit={"version": "13.0"},
            device_failures={"launches": 8},
            kernels=[{"name": "dp3_root"}, {"name": "dp3_child"}],
            timeline=tl,
        )

    d = timeline.measure("dp3", 13, {"depth": 3}, solve=solve)
    assert (
        calls == [0, 1]
        and d["root_kernel"] == "dp3_root"
        and timeline.overhead(d) == pytest.approx(0.1)
    )
    assert len(timeline.frame(d)) == 9
    with pytest.raises(InputError, match="strategy feinbube keeps no device timeline"):
        timeline.measure("feinbube", 13, solve=solve)


def test_timeline_cli_errors(tmp_path, capsys):
    assert main(["characterize", "timeline", "--from", str(DATA / "synthetic-ideal.json")]) == 2
    assert "not an nqprof device timeline" in capsys.readouterr().err
    d = doc("timeline")
    d["timeline"] = {}
    bad = tmp_path / "t.json"
    bad.write_text(json.dumps(d))
    assert main(["characterize", "timeline", "--from", str(bad)]) == 2
    assert "holds no grid records (was the run made with timeline=1?)" in capsys.readouterr().err
    assert main(["characterize", "timeline"]) == 2
    assert "give N (or --from FILE)" in capsys.readouterr().err


def test_timeline_buffer_layout_round_trip():
    import numpy as np

    from nqprof.strategies.cdp import timeline as tl

    assert tl.record_dtype().itemsize == 40 and dr.header_dtype().itemsize == dr.HEADER_BYTES
    start = tl.initial_bytes(capacity=4, host_boards=77)
    header, host = start[:16], start[16:]
    ran = np.array([(10, 20, 30, 1, 0, 3, 5)], dtype=tl.record_dtype()).tobytes()
    failed = np.array([(11, tl.NOT_STARTED, 0, 1, 0, 4, 6)], dtype=tl.record_dtype()).tobytes()
    header = np.array([(3, 4, 2, 0)], dtype=dr.header_dtype()).tobytes()
    out = tl.decode(
        header,
        host.replace(np.uint64(tl.NOT_STARTED).tobytes(), np.uint64(1).tobytes(), 1) + ran + failed,
    )
    assert out["recorded"] == 3 and out["dropped"] == 2 and out["not_started"] == 1
    assert (
        out["grids"]["id"] == [0, 1]
        and out["grids"]["boards"] == [77, 5]
        and out["grids"]["parent"][0] == tl.NONE
    )
    assert (
        tl.capacity_for(1000, 5) == 1250 + 1 + tl.EXTRA
        and tl.capacity_for(None, 40) == 50 + 1 + tl.EXTRA
    )
    assert (
        tl.timeline_defines({"timeline": 1}) == {"CDP_TIMELINE": 1}
        and tl.timeline_defines({}) == {}
    )


@pytest.mark.slow
def test_timeline_record_matches_the_kernels(tmp_path, toolkit):
    from nqprof.strategies.cdp import timeline as tl

    printed = host_program_output(
        toolkit,
        tmp_path,
        "tl",
        '#include <cstdio>\n#include <cstddef>\n#include "cdp.cuh"\nint main() {\n'
        '    printf("%d %d %d\\n", (int)sizeof(cdp_tl_grid), (int)offsetof(cdp_tl_buffer, grids), '
        '(int)offsetof(cdp_tl_grid, gen));\n    return 0;\n}\n',
    ).split()
    assert list(map(int, printed)) == [
        tl.record_dtype().itemsize,
        dr.HEADER_BYTES,
        tl.record_dtype().fields["gen"][1],
    ]


@pytest.mark.slow
@pytest.mark.parametrize("file", ["dp2.cu", "dp3.cu", "dpswap.cu"])
def test_timeline_builds_compile_and_link(file, toolkit):
    from nqprof.catalog import catalog
    from nqprof.cuda import nvcc

    src = catalog()[file]
    rows = nvcc.compile_source(
        src, "sm_90", defines={**src.check_defines, "CDP_TIMELINE": 1}, toolkit=toolkit
    )
    assert set(src.kernels) <= {r.kernel for r in rows}


# --- measured on an H200 host (tools/gpu_check.sh characterize-*: the launch run at 32, 1K, 32K
# and 256K launches, 3 rounds; the reserve run at the default limits) -------------------------


def test_reserve_fit_on_the_h200_leaves_the_plateau_out():
    from nqprof.characterize import reserve

    points = reserve.load(json.loads((DATA / "h200-reserve.json").read_text()))
    slope, fixed, used = reserve.fit_slot_bytes(points)
    # 1M, 4M and 15M slots all reserved 5,442 MiB: the line runs through 1K..256K
    assert used == 5 and 9000 < slope < 9800 and 60 * 2**20 < fixed < 110 * 2**20


def test_launch_table_from_the_h200():
    from nqprof.characterize import launch

    points = launch.load(json.loads((DATA / "h200-launch.json").read_text()))
    header, rows, notes = launch.table(points)
    per_launch = {(r[0], r[1]): float(r[6]) for r in rows}
    assert (
        per_launch[("fire-and-forget", "262,144")]
        < per_launch[("default", "262,144")]
        < per_launch[("tail", "262,144")]
    )


def test_ncu_csv_from_the_h200_in_its_own_units():
    """Real ncu output (N=17 on an H200): ncu gave the duration in ms; the lane efficiencies
    are the ones the closing table reports (feinbube 0.315, queue's search 0.831)."""
    q = efficiency.per_kernel(efficiency.parse_csv((DATA / "h200-ncu-queue-17.csv").read_text()))
    q = q.set_index("kernel")
    assert q.loc["queue_search_bwd", "duration_ns"] == pytest.approx(22_832_928)
    assert q.loc["queue_search_bwd", "wee"] == pytest.approx(0.831, abs=5e-4)
    f = efficiency.per_kernel(
        efficiency.parse_csv((DATA / "h200-ncu-feinbube-17.csv").read_text())
    ).iloc[0]
    assert f["kernel"] == "feinbube_dynamic" and f["wee"] == pytest.approx(0.315, abs=5e-4)
    assert 1e6 < f["duration_ns"] < 1e9


def test_ncu_csv_unknown_time_unit_is_an_error():
    text = '"ID","Kernel Name","gpu__time_duration.sum"\n"","","fortnight"\n"0","k(int)","1"\n'
    with pytest.raises(InputError, match="unknown unit 'fortnight'"):
        efficiency.parse_csv(text)


def test_ideal_from_the_h200():
    """dp2, dp3, dpswap at N=14 and 16 on an H200: the same parent work in the three builds,
    every real count verified, and none near feinbube even without launch overhead."""
    results = {
        (r.strategy, r.n): r for r in ideal.load(json.loads((DATA / "h200-ideal.json").read_text()))
    }
    assert sorted(results) == [(s, n) for s in ("dp2", "dp3", "dpswap") for n in (14, 16)]
    for r in results.values():
        assert r.same_parent_work and not r.errors and r.baseline[0] == "feinbube"
        assert r.speedup(r.ideal_paper) < 0.1
    dp2 = results[("dp2", 14)]
    assert dp2.host_launches == dp2.launches == 4816 and dp2.per_launch == pytest.approx(
        0.164e-6, rel=0.01
    )
    _, rows, notes = ideal.table(list(results.values()))
    assert any("dpswap N=14" in n and "ideal all does not hold here" in n for n in notes)


def test_efficiency_from_the_h200():
    """feinbube, dp2, dp3, dpswap at N=14 on an H200, the CDP children profiled from their
    replay: every strategy's children were reached, and the CDP strategies' WEEI is below
    their parents' (the children keep fewer lanes busy), feinbube's 0.290 above dp2's and dp3's."""
    entries = {
        e["strategy"]: e
        for e in efficiency.load(json.loads((DATA / "h200-efficiency-14.json").read_text()))
    }
    assert set(entries) == {"feinbube", "dp2", "dp3", "dpswap"}
    assert all(e["children_profiled"] for e in entries.values())
    assert entries["feinbube"]["weei"] == pytest.approx(0.290, abs=5e-4)
    assert entries["dp2"]["weei"] == pytest.approx(0.097, abs=5e-4)
    assert entries["dp3"]["weei"] == pytest.approx(0.151, abs=5e-4)
    for s in ("dp2", "dp3"):
        parent = next(k for k in entries[s]["kernels"] if k["kernel"].endswith("_root"))
        assert entries[s]["weei"] < parent["wee"]
    header, rows, notes = efficiency.table(list(entries.values()))
    assert any("100 of 4,816" in str(cell) for r in rows for cell in r)


def test_launch_past_the_runtime_cap_on_the_h200():
    """512K and 1M launches on an H200: the runtime keeps its cap of 599,186 pending launches
    whatever nqprof asks for; 512K launches fit in every mode, 1M do not (launches fail and
    the point has no time), and fire-and-forget at 1M hung until the watchdog killed it."""
    from nqprof.characterize import launch
    from nqprof.strategies.cdp.limits import MAX_PENDING

    points = {
        (p.mode, p.count): p
        for p in launch.load(json.loads((DATA / "h200-launch-1m.json").read_text()))
    }
    for mode in ("default", "own", "fire-and-forget", "tail"):
        assert points[(mode, 1 << 19)].ok and points[(mode, 1 << 19)].pending == MAX_PENDING
        big = points[(mode, 1 << 20)]
        assert not big.ok and big.per_launch is None
        if mode == "fire-and-forget":
            assert "no answer" in big.error
        else:
            assert (
                big.launch_failures > 0 and big.first_error == 69
            )  # cudaErrorLaunchPendingCountExceeded


def test_paired_rounds_alternate_and_count_the_launching_runs():
    """Wang and Yalamanchili's t1/t2 pair, one round a call: which goes first alternates,
    launches are counted on the launching runs only, stream failures on both, over every
    round the session ran."""
    from nqprof.characterize.probe import paired_round

    class Session:
        mode = "default"
        ran_calls = 0

        def ran(self):
            self.ran_calls += 1

    order, times = [], iter([1.0, 0.5, 0.6, 1.1, 1.2, 0.7])

    def timed(func, label):
        order.append(label.rsplit(" ", 1)[1])
        return (
            next(times),
            32 if func == "with" else 0,
            1 if func == "with" else 0,
            7 if func == "with" else 0,
            1,
        )

    s = Session()
    rounds = [paired_round(s, "with", "without", timed, copies=3) for _ in range(3)]
    assert order == ["t1", "t2", "t2", "t1", "t1", "t2"]
    assert [(r["t1_s"], r["t2_s"]) for r in rounds] == [(1.0, 0.5), (1.1, 0.6), (1.2, 0.7)]
    last = rounds[-1]
    assert (last["launches"], last["launch_failures"], last["first_error"]) == (96, 3, 7)
    assert last["stream_failures"] == 6 and last["copies"] == 3 and last["rounds"] == 3
    assert rounds[0]["launches"] == 32 and s.ran_calls == 3


def test_default_strategies_come_from_the_registry(monkeypatch):
    """ideal's and efficiency's defaults are every CDP strategy that records its grids on the
    device, so a new one joins them by itself."""
    from nqprof import strategies

    cdp = ideal.default_strategies()
    assert {"dp2", "dp3", "dpswap"} <= set(cdp) and "dp1" not in cdp and "fast" not in cdp
    assert all(strategies.get(s).cdp for s in cdp)
    assert efficiency.default_strategies() == ["feinbube", *cdp]
    monkeypatch.setattr(strategies, "timeline_cdp", lambda: ["dp2", "new-cdp"])
    assert ideal.default_strategies() == ["dp2", "new-cdp"]
    assert efficiency.default_strategies() == ["feinbube", "dp2", "new-cdp"]


# --- residency -----------------------------------------------------------------------------


def test_held_at_once_counts_overlapping_blocks_per_sm():
    from nqprof.characterize.residency import held_at_once

    # SM 0: three blocks at once, then a fourth that starts as the first ends (no overlap)
    records = [(0, 0, 10), (0, 1, 12), (0, 2, 11), (0, 10, 20), (1, 5, 6), (1, 6, 7)]
    assert held_at_once(records) == {0: 3, 1: 1}
    assert held_at_once([]) == {}
    with pytest.raises(ValueError, match="ended before it started"):
        held_at_once([(3, 5, 4)])


def _residency_probe(most_of):
    """A fake worker: `most_of(path, shared)` blocks at once on each of 4 SMs."""

    def probe(p, params, timeout):
        out = []
        for shared in params["shared"]:
            for path in params["paths"]:
                k = most_of(path, shared)
                rec = [(sm, 0, 100_000) for sm in range(4) for _ in range(k)]  # ns
                rec += [(sm, 100_000, 200_000) for sm in range(4)]  # the rest, after
                pt = residency.summarize(path, shared, params["block"], rec, 6)
                out.append({**vars(pt), "device": "fake", "driver": "580", "toolkit": "13.0"})
        return out, {"cpu": {"probe_s": 0.1}}

    return probe


def test_residency_measure_table_and_rendering(tmp_path, capsys):
    doc_ = residency.measure(
        shared=[0, 36352],
        paths=["host", "tail"],
        probe=_residency_probe(lambda path, shared: 6 if path == "host" or not shared else 1),
    )
    points = residency.load(doc_)
    assert [(p.path, p.shared, p.most, p.grid, p.sms) for p in points] == [
        ("host", 0, 6, 28, 4),
        ("tail", 0, 6, 28, 4),
        ("host", 36352, 6, 28, 4),
        ("tail", 36352, 1, 8, 4),
    ]
    kept = tmp_path / "residency.json"
    kept.write_text(json.dumps(doc_))
    assert (
        main(["characterize", "residency", "--from", str(kept), "-o", str(tmp_path / "r.md")]) == 0
    )
    out = capsys.readouterr().out
    assert "fake, CUDA 13.0, driver 580" in out
    assert re.search(r"36,352\s+tail\s+6\s+1\s+1\s+4\s+200", out), out
    assert "| shared (B) | path |" in (tmp_path / "r.md").read_text()


def test_residency_rejects_bad_paths_and_sizes(capsys):
    with pytest.raises(InputError, match="--paths takes a comma list of host, tail"):
        residency.check_paths(["host", "graph"])
    assert main(["characterize", "residency", "--paths", "x", "--from", "nowhere.json"]) == 2
    assert main(["characterize", "residency", "--shared", "-1"]) == 2
    assert "--shared takes a comma list" in capsys.readouterr().err


def test_launch_defaults_on_the_h200_give_every_row_a_time_or_a_limit():
    """`nqprof characterize launch` with its defaults on an H200 (tests/data/characterize/
    h200-launch-defaults.json, docs/results/live-h200): every mode at every default count is
    a measurement or a stated limit; nothing failed, hung or was skipped."""
    doc = json.loads((DATA / "h200-launch-defaults.json").read_text())
    points = launch.load(doc)
    modes = {p.mode for p in points}
    assert modes == set(launch.MODES)
    for mode in modes:
        counts = {p.count for p in points if p.mode == mode}
        assert set(launch.DEFAULT_COUNTS) <= counts, mode
    for p in points:
        assert p.error is None and not p.launch_failures, (p.mode, p.count, p.error)
        assert (p.limit is None) is (p.cost is not None), (p.mode, p.count)
    limits = {(p.mode, p.count) for p in points if p.limit}
    assert ("graph-ff", 120) not in limits and ("graph-ff", 128) in limits
    assert ("graph-tail", 1) not in limits and ("graph-tail", 32) in limits
    assert {("default", 1 << 20), ("own", 1 << 20), ("tail", 1 << 20)} <= limits


# -- the round loop of paired measurements (characterize launch) ----------------------------


def _paired(repeats, warmup=1, noise=0.0, monkeypatch=None):
    from fake_pair_probe import PROBE

    from nqprof.characterize.probe import run_paired

    monkeypatch.setenv("NQPROF_TEST_PAIR_NOISE", str(noise))
    params = {"mode": "default", "count": 32, "block": 128, "repeats": repeats, "warmup": warmup}
    return run_paired(PROBE, params, timeout=60)


def test_paired_rounds_go_through_the_round_loop_with_a_fixed_count(monkeypatch):
    r = _paired(4, warmup=2, monkeypatch=monkeypatch)
    assert len(r["t1_s"]) == len(r["t2_s"]) == 4 and r["criterion"] == "4 rounds"
    assert r["rounds"] == 6  # the warm-up's two too: launches are counted over every round
    assert r["launches"] == 6 * 32 and r["launch_failures"] == 1  # round 3 failed one
    assert r["t1_s"][0] - r["t2_s"][0] == pytest.approx(0.001)
    assert r["pending"] == 64 and r["device"] == "fake GPU"
    assert "cpu" in r["conditions"]  # the loop's conditions of the rounds


def test_a_single_reading_goes_through_the_round_loop_with_its_conditions(monkeypatch):
    """run_probe (reserve, residency, latency): one round in a fresh worker, no warm-up, and
    the conditions the round loop watched around it."""
    from fake_pair_probe import PROBE

    from nqprof.characterize.probe import run_probe

    monkeypatch.setenv("NQPROF_TEST_PAIR_NOISE", "0")
    params = {"mode": "default", "count": 32, "block": 128}
    reading, conditions = run_probe(PROBE, params, timeout=60)
    assert reading["t1_s"] - reading["t2_s"] == pytest.approx(0.001)
    assert "cpu" in conditions and conditions["cpu"]


def test_auto_paired_rounds_follow_the_relative_standard_error_rule(monkeypatch):
    """t1 - t2 steady: auto stops at its least (5 rounds and 0.5 s: about 10 ms a round, so
    the time decides, about 50 rounds); t1 - t2 moving by +-30%: the median's noise stays
    above 0.5% and the rounds go on to auto's most (200 rounds, or 3 s)."""
    from nqprof.rounds import MAX_ROUNDS, MIN_ROUNDS

    steady = _paired(None, monkeypatch=monkeypatch)
    assert steady["criterion"].startswith("auto: at least 5 rounds")
    assert MIN_ROUNDS <= len(steady["t1_s"]) < MAX_ROUNDS
    noisy = _paired(None, noise=0.3, monkeypatch=monkeypatch)
    assert len(noisy["t1_s"]) > len(steady["t1_s"])
    costs = [a - b for a, b in zip(noisy["t1_s"], noisy["t2_s"], strict=True)]
    assert max(costs) / min(costs) == pytest.approx(1.3 / 0.7, rel=1e-6)


def test_characterize_launch_takes_auto_and_keeps_the_criterion(monkeypatch, capsys, tmp_path):
    """`--rounds auto` reaches the measurement as None (the rule), a count as that count; each
    point of the kept JSON carries its criterion."""
    from nqprof.characterize import launch
    from nqprof.cli import characterize_common, main

    seen = []

    def fake(counts, modes, repeats, **kw):
        seen.append(repeats)
        point = launch.LaunchPoint("default", 32, t1_s=[2e-3], t2_s=[1e-3], criterion="x")
        return launch.document([point], {"device": "fake"}, repeats=repeats)

    monkeypatch.setattr(launch, "measure", fake)
    monkeypatch.setattr(characterize_common, "require_gpu", lambda: "fake GPU")
    out = tmp_path / "l.json"
    assert main(["characterize", "launch", "--rounds", "auto", "-q", "-o", str(out)]) == 0
    assert main(["characterize", "launch", "-q"]) == 0
    assert seen == [None, 5]
    import json

    assert json.loads(out.read_text())["points"][0]["criterion"] == "x"
