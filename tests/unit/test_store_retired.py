"""Objects a source drops as gone (Store.drop_objects) with keep_for: their series go at once,
their counters are kept hidden and taken up again if the object comes back within keep_for
seconds of its last sample (a counter with the same labels never goes down); after that they are
forgotten, and without keep_for they go at once, as before."""

from __future__ import annotations

import pytest

from exporter.store import model as m
from exporter.store.store import Store

T0 = 1_700_000_000.0
STEP = 20.0
KEY = ("web01", "scsi0:0")


def sample(at: float, vdisks: bool = True) -> m.Sample:
    one = m.Sample(host="esx01", timestamp=at, interval=STEP, source="vsphere")
    one.luns = {"naa.1": {m.READS: 10.0}}
    if vdisks:
        one.vdisks = {KEY: {m.READS: 100.0}}
        one.vms = {"web01": {m.READS: 100.0}}
    return one


def reads(store: Store, family: str, key) -> float | None:
    obj = store.hosts["esx01"].objects[family].get(key)
    return None if obj is None else obj.counters[m.READS]


def fed(store: Store, *stamps: float, vdisks: bool = True) -> None:
    for at in stamps:
        store.ingest(sample(at, vdisks), origin="vc")


@pytest.fixture
def store() -> Store:
    store = Store()
    fed(store, T0, T0 + STEP, T0 + 2 * STEP)
    return store


def test_a_dropped_object_is_hidden_and_comes_back_from_its_total(store):
    store.drop_objects("esx01", {"vdisks": {KEY}, "vms": {"web01"}}, origin="vc", keep_for=3600.0)
    assert reads(store, "vdisks", KEY) is None and reads(store, "vms", "web01") is None  # no series now
    fed(store, T0 + 3 * STEP, vdisks=False)
    assert reads(store, "vdisks", KEY) is None  # still hidden while away
    fed(store, T0 + 4 * STEP)
    assert reads(store, "vdisks", KEY) == 4 * 100.0 * STEP  # three samples before, one after
    assert reads(store, "vms", "web01") == 4 * 100.0 * STEP
    assert store.host_states[("vc", "esx01")].retired == {}


def test_a_dropped_object_kept_longer_than_keep_for_is_forgotten(store):
    store.drop_objects("esx01", {"vdisks": {KEY}}, origin="vc", keep_for=60.0)
    state = store.host_states[("vc", "esx01")]
    fed(store, T0 + 2 * STEP + 60.0, vdisks=False)  # 60 s after its last sample: still kept
    assert KEY in state.retired["vdisks"]
    fed(store, T0 + 2 * STEP + 61.0, vdisks=False)
    assert state.retired == {}
    fed(store, T0 + 2 * STEP + 80.0)
    assert reads(store, "vdisks", KEY) == 100.0 * STEP  # back after the bound: from 0


def test_without_keep_for_a_dropped_object_goes_for_good(store):
    store.drop_objects("esx01", {"vdisks": {KEY}}, origin="vc")
    assert store.host_states[("vc", "esx01")].retired == {}
    fed(store, T0 + 3 * STEP)
    assert reads(store, "vdisks", KEY) == 100.0 * STEP


def test_a_forgotten_host_takes_its_kept_objects_with_it(store):
    store.drop_objects("esx01", {"vdisks": {KEY}}, origin="vc", keep_for=3600.0)
    store.forget_hosts({"esx01"}, origin="vc")
    fed(store, T0 + 3 * STEP)
    assert reads(store, "vdisks", KEY) == 100.0 * STEP
