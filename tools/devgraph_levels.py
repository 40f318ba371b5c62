"""Where does a devgraph round's level come from? One session, its graphs made K times.

    python3 tools/devgraph_levels.py --n 11 -k 8 -r 40

devgraph's rounds in one worker are steady, but its units (sessions, processes) land on
levels some microseconds apart. This opens one session of devgraph N, makes its graphs
(the scheduler's and the step graphs, instantiated and uploaded) K times, every set kept
alive so that each is uploaded to other memory, and times R rounds of each set, the sets
taken in turn round by round (so the GPU's drift is shared by all). Every count is
verified. It prints each set's median and the spread of the sets' medians: sets that differ
as units do say the level is where the graphs were uploaded; sets that agree say it is
not."""

from __future__ import annotations

import argparse
import math
import statistics


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, action="append", required=True)
    ap.add_argument("-k", type=int, default=8)
    ap.add_argument("-r", type=int, default=40)
    args = ap.parse_args()

    from nqprof.problem import known_count
    from nqprof.strategies import get

    s = get("devgraph")
    for n in args.n:
        session = s.open(n, s.resolve(n, {}))
        sets, layers = [], []
        try:
            for _ in range(args.k):
                if sets:
                    session._make_graphs()
                sets.append((session.graphs, session.exe))
                layers.append(session.graphs)
            times = [[] for _ in sets]
            for i in range(args.r + 2):
                for j, (graphs, exe) in enumerate(sets):
                    session.graphs, session.exe = graphs, exe
                    m = session.run_once()
                    if m.count != known_count(n):
                        raise SystemExit(f"devgraph N={n}: counted {m.count}")
                    if i >= 2:
                        times[j].append(m.gpu_s * 1e6)
            meds = [statistics.median(t) for t in times]
            sd = statistics.stdev(math.log(m) for m in meds) * 100
            print(
                f"devgraph N={n} graphs x{args.k}: "
                f"sd {sd:.2f}%  set medians us: " + " ".join(f"{m:.2f}" for m in meds)
            )
        finally:
            from nqprof.cuda.graphs import release

            for layer in layers[:-1]:
                release(layer)
            session.close()


if __name__ == "__main__":
    main()
