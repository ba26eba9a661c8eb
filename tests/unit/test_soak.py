"""Memory soak, bounded to seconds: a long replay of a wide capture whose LUNs, paths and worlds
come and go (a new esxtop run every 10 rows, 30 of 100 LUNs replaced each run). With stale
series dropped after stale_after, the state, the exposition and the RSS stay flat.
The long version with the never-forgetting counterfactual beside it is bench/soak.py."""

from __future__ import annotations

import gc

from exporter.esxtop import EsxtopReader
from exporter.esxtop.streams import pump
from exporter.serving.exposition import Exposition
from exporter.store.store import Store
from simulators.esxtop_churn import rss_bytes, run_lines

RUNS, ROWS, INTERVAL = 60, 10, 5.0
LUNS, SHIFT, WORLDS = 100, 30, 4


def test_rss_flat_while_luns_and_worlds_come_and_go():
    store = Store(stale_after=60.0)
    exposition = Exposition(store)
    reader = EsxtopReader("soak")
    ts = 1_700_000_000.0
    marks = []
    for run in range(RUNS):
        pump(run_lines(run, ROWS, ts, INTERVAL, LUNS, SHIFT, WORLDS), reader, store.ingest, store.count_parse_error)
        ts += ROWS * INTERVAL
        body = exposition.body()  # a scrape per run
        if run % 10 == 9:
            gc.collect()
            objects = sum(len(family) for family in store.hosts["esx-churn"].objects.values())
            marks.append((rss_bytes(), objects, len(body)))
    assert not store.parse_errors
    distinct_luns = LUNS + (RUNS - 1) * SHIFT
    luns_held = len(store.hosts["esx-churn"].objects["luns"])
    assert distinct_luns == 1870 and luns_held <= LUNS + 2 * SHIFT  # only the live ones and those within stale_after
    (rss0, objects0, body0), (rss1, objects1, body1) = marks[1], marks[-1]
    assert objects1 == objects0
    assert abs(body1 - body0) <= body0 * 0.01
    growth = rss1 - rss0
    print(f"\nRSS after run 20: {rss0 / 2**20:.1f} MiB, after run {RUNS}: {rss1 / 2**20:.1f} MiB; objects {objects1}")
    # Never forgetting would hold ~4,700 more objects here (~+10 MiB, see bench/soak.py).
    assert growth < 3 * 2**20, f"RSS grew {growth / 2**20:.1f} MiB"
