"""Part of a vCenter: inventory-path include/exclude (Telegraf style) and --vsphere.shard K/N, on
the project's storage simulator with 12 hosts in 2 datacenters of 2 clusters each."""

from __future__ import annotations

import subprocess
import sys

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.configuration.sharding import parse_shard, shard_of
from exporter.vsphere.selection import HostSelection, path_regex
from simulators.storagesim.sims import PASSWORD, USER, StorageSim
from tests.support.servers import ROOT, exporter_env

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("selection")
    simulator = StorageSim(tmp / "sim", "-hosts", "12", "-luns", "2", "-datacenters", "2", "-cluster-size", "3", fixture=None)
    password = tmp / "password"
    password.write_text(PASSWORD + "\n")
    yield simulator, password
    simulator.stop()


def dump(sim, *extra: str) -> dict[str, dict[str, set[str]]]:
    """host -> {"places": {(datacenter, cluster)}, "families": names of families with that host}."""
    simulator, password = sim
    args = ["--vsphere", simulator.url, "--vsphere.user", USER, "--vsphere.password-file", str(password)]
    args += ["--vsphere.ca-file", str(simulator.cert), *extra]
    done = subprocess.run(
        [sys.executable, "-m", "exporter", "dump", *args], cwd=ROOT, env=exporter_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    hosts: dict[str, dict] = {}
    for family in text_string_to_metric_families(done.stdout):
        for sample in family.samples:
            host = sample.labels.get("host")
            if host:
                entry = hosts.setdefault(host, {"places": set(), "families": set()})
                entry["families"].add(family.name)
                if family.name == "esxi_host_info":
                    entry["places"].add((sample.labels["datacenter"], sample.labels["cluster"]))
    return hosts


@pytest.fixture(scope="module")
def everything(sim):
    hosts = dump(sim)
    assert len(hosts) == 12
    places = {host: next(iter(entry["places"])) for host, entry in hosts.items()}
    assert sorted(set(places.values())) == [("DC0", "DC0_C0"), ("DC0", "DC0_C1"), ("DC1", "DC1_C0"), ("DC1", "DC1_C1")]
    assert all("esxi_lun_commands" in entry["families"] for entry in hosts.values())
    return places


def test_a_datacenter_by_its_path(sim, everything):
    kept = dump(sim, "--vsphere.host-include", "/DC1/**")
    assert set(kept) == {h for h, (dc, _) in everything.items() if dc == "DC1"}
    # every series of a left-out host is gone, not only its inventory
    assert all("esxi_lun_commands" in entry["families"] for entry in kept.values())


def test_a_cluster_excluded_and_a_host_pattern(sim, everything):
    kept = dump(sim, "--vsphere.host-exclude", "/*/host/DC0_C1/**")
    assert set(kept) == {h for h, (_, cluster) in everything.items() if cluster != "DC0_C1"}
    one = sorted(everything)[0]
    only = dump(sim, "--vsphere.host-include", f"/**/{one}")
    assert set(only) == {one}


@pytest.mark.parametrize("total", [2, 3])
def test_shards_cover_every_host_exactly_once(sim, everything, total):
    shares = [set(dump(sim, "--vsphere.shard", f"{k}/{total}")) for k in range(total)]
    assert all(shares), shares  # 12 hosts: no shard is empty
    assert sum(len(s) for s in shares) == len(everything)  # none twice
    assert set().union(*shares) == set(everything)  # none missed
    for k, share in enumerate(shares):
        assert all(shard_of(host, total) == k for host in share)


def test_shard_and_pattern_parsing():
    assert parse_shard("2/3") == (2, 3)
    for bad in ("3/2", "0/0", "x", "1/-2"):
        with pytest.raises(ValueError):
            parse_shard(bad)
    assert path_regex("/DC0/**").match("/DC0/host/C/esx01")
    assert not path_regex("/*/host/C1/*").match("/DC0/host/C1/sub/esx01")
    assert HostSelection(include=("/DC0/**",), shard=None).keeps("/DC0/host/C/esx01", "esx01")
    # stable: the same split in every process (not Python's salted hash)
    assert [shard_of(f"esx{i:02}.lab.local", 3) for i in range(6)] == [shard_of(f"ESX{i:02}.lab.local", 3) for i in range(6)]


def test_a_bad_shard_is_one_line_and_exit_2(sim):
    simulator, password = sim
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "exporter",
            "dump",
            "--vsphere",
            simulator.url,
            "--vsphere.user",
            USER,
            "--vsphere.password-file",
            str(password),
            "--vsphere.shard",
            "3/2",
        ],
        cwd=ROOT,
        env=exporter_env(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "esxi-storage-exporter: vsphere.shard: '3/2': the shard K must be 0 to N-1 and N at least 1"
    ]
