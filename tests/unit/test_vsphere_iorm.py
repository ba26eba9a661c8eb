"""Datastore.iormConfiguration as the property collector's answer carries it (exporter/vsphere/iorm.py):
each field read in base units, an absent or empty value "not reported", a bad field refused in one
line naming the datastore and the field, and the hosts that mount each datastore."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from exporter.store import model as m
from exporter.vsphere import iorm

NS = 'xmlns="urn:vim25" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'


def val(body: str) -> ET.Element:
    return ET.fromstring(f'<val {NS} xsi:type="StorageIORMInfo">{body}</val>')


def mounts(*hosts: str) -> ET.Element:
    inner = "".join(f'<DatastoreHostMount><key type="HostSystem">{h}</key></DatastoreHostMount>' for h in hosts)
    return ET.fromstring(f'<val {NS} xsi:type="ArrayOfDatastoreHostMount">{inner}</val>')


def name(text: str) -> ET.Element:
    return ET.fromstring(f"<val {NS}>{text}</val>")


FULL = (
    "<enabled>true</enabled><congestionThresholdMode>automatic</congestionThresholdMode>"
    "<congestionThreshold>27</congestionThreshold><percentOfPeakThroughput>90</percentOfPeakThroughput>"
    "<statsCollectionEnabled>false</statsCollectionEnabled>"
)


def test_every_field_in_base_units():
    config = iorm.config_of(val(FULL), "ds1")
    assert config == m.SiocConfig(
        reported=True, enabled=True, stats_enabled=False, mode="automatic", threshold_seconds=0.027, peak_throughput_ratio=0.9
    )


def test_absent_or_empty_is_not_reported():
    assert iorm.config_of(None, "ds1") == m.SiocConfig(reported=False)
    assert iorm.config_of(val(""), "ds1") == m.SiocConfig(reported=False)


def test_a_field_the_server_leaves_out_stays_unknown():
    config = iorm.config_of(val("<enabled>false</enabled><congestionThreshold>30</congestionThreshold>"), "ds1")
    assert (config.enabled, config.stats_enabled, config.mode, config.peak_throughput_ratio) == (False, None, "", None)


@pytest.mark.parametrize(
    "body, message",
    [
        ("<enabled>yes</enabled>", "datastore ds1: iormConfiguration.enabled is 'yes', not a boolean"),
        (
            "<congestionThreshold>thirty</congestionThreshold>",
            "datastore ds1: iormConfiguration.congestionThreshold is 'thirty', not a number",
        ),
        (
            "<congestionThreshold>-5</congestionThreshold>",
            "datastore ds1: iormConfiguration.congestionThreshold is '-5', below 0",
        ),
        ("<percentOfPeakThroughput>NaN</percentOfPeakThroughput>", "iormConfiguration.percentOfPeakThroughput is 'NaN', below 0"),
    ],
)
def test_a_bad_field_is_refused_in_one_line(body, message):
    with pytest.raises(iorm.BadValue) as err:
        iorm.config_of(val(body), "ds1")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_by_host_gives_each_mounting_host_the_datastore_and_reports_bad_ones():
    answer = [
        ("datastore-1", {"name": name("ds1"), "host": mounts("host-1", "host-2", "host-9"), "iormConfiguration": val(FULL)}),
        ("datastore-2", {"name": name("ds2"), "host": mounts("host-1")}),  # no iormConfiguration
        ("datastore-3", {"name": name("ds3"), "host": mounts("host-2"), "iormConfiguration": val("<enabled>maybe</enabled>")}),
    ]
    found, problems = iorm.by_host(answer, {"host-1": "esx01", "host-2": "esx02"})  # host-9: not a chosen host
    assert set(found) == {"esx01", "esx02"}
    assert found["esx01"]["ds1"] == found["esx02"]["ds1"] and found["esx01"]["ds1"].enabled is True
    assert found["esx01"]["ds2"] == m.SiocConfig(reported=False)
    assert found["esx02"]["ds3"] == m.SiocConfig(reported=False)
    assert problems == ["datastore ds3: iormConfiguration.enabled is 'maybe', not a boolean"]


def test_overlay_copies_and_never_changes_the_published_inventory():
    inventory = m.Inventory(
        host="esx01", datastores={"ds1": m.DatastoreConfig(type="vmfs"), "nfs": m.DatastoreConfig(type="nfs")}
    )
    config = m.SiocConfig(reported=True, enabled=True)
    laid = iorm.overlay(inventory, {"ds1": config, "gone": config})
    assert laid.datastores["ds1"].sioc == config and laid.datastores["nfs"].sioc is None
    assert "gone" not in laid.datastores
    assert inventory.datastores["ds1"].sioc is None
    assert iorm.overlay(inventory, {}) is inventory
