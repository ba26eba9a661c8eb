"""Which vmknic and uplink carry an NFS datastore, from config.network.* answers as the property
collector sends them (the storage simulator covers the common cases end to end; these are the
fallbacks it does not reach: inherited teaming, static routes, other TCP/IP stacks, dead links)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from pyVmomi import vim

from exporter.vsphere import discovery
from exporter.vsphere.nfs import HostNetwork

XSI = 'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'


def val(inner: str) -> ET.Element:
    """A property's <val> element, as soap.retrieve yields it."""
    return ET.fromstring(f'<val xmlns="urn:vim25" {XSI}>{inner}</val>')


def pnic(device: str, speed_mb: int | None, driver: str = "ixgben") -> str:
    link = f"<linkSpeed><speedMb>{speed_mb}</speedMb><duplex>true</duplex></linkSpeed>" if speed_mb else ""
    return f"<PhysicalNic><device>{device}</device><key>key-vim.host.PhysicalNic-{device}</key><driver>{driver}</driver>{link}</PhysicalNic>"


def vnic(device: str, ip: str, mask: str, portgroup: str = "", stack: str = "defaultTcpipStack", dvs: str = "") -> str:
    port = f"<distributedVirtualPort><switchUuid>{dvs}</switchUuid></distributedVirtualPort>" if dvs else ""
    return (
        f"<HostVirtualNic><device>{device}</device><portgroup>{portgroup}</portgroup><spec>"
        f"<ip><dhcp>false</dhcp><ipAddress>{ip}</ipAddress><subnetMask>{mask}</subnetMask></ip>{port}"
        f"<netStackInstanceKey>{stack}</netStackInstanceKey></spec></HostVirtualNic>"
    )


def order(active: list[str], standby: list[str] = ()) -> str:
    nics = "".join(f"<activeNic>{n}</activeNic>" for n in active) + "".join(f"<standbyNic>{n}</standbyNic>" for n in standby)
    return f"<nicTeaming><nicOrder>{nics}</nicOrder></nicTeaming>"


def network(pnics: str, vnics: str, portgroups: str = "", vswitches: str = "", proxy: str = "", routes: str = "") -> dict:
    return {
        "config.network.pnic": val(pnics),
        "config.network.vnic": val(vnics),
        "config.network.portgroup": val(portgroups),
        "config.network.vswitch": val(vswitches),
        "config.network.proxySwitch": val(proxy),
        "config.network.routeTableInfo": val(routes),
    }


def route(network_address: str, prefix: int, device: str, gateway: str = "0.0.0.0") -> str:
    return (
        f"<ipRoute><network>{network_address}</network><prefixLength>{prefix}</prefixLength>"
        f"<gateway>{gateway}</gateway><deviceName>{device}</deviceName></ipRoute>"
    )


def test_a_port_group_with_no_order_of_its_own_takes_its_vswitchs():
    props = network(
        pnic("vmnic0", 1000) + pnic("vmnic1", 10000),
        vnic("vmk2", "192.168.60.5", "255.255.255.0", portgroup="NFS-B"),
        portgroups="<HostPortGroup><vswitch>key-vim.host.VirtualSwitch-vSwitch2</vswitch><spec><name>NFS-B</name>"
        "<vswitchName>vSwitch2</vswitchName><policy/></spec></HostPortGroup>",
        vswitches=f"<HostVirtualSwitch><name>vSwitch2</name><key>key-vim.host.VirtualSwitch-vSwitch2</key>"
        f"<spec><policy>{order(['vmnic1'], ['vmnic0'])}</policy></spec></HostVirtualSwitch>",
    )
    net = HostNetwork(props)
    assert net.uplinks("vmk2") == ["vmnic1", "vmnic0"]
    assert net.uplink("vmk2").device == "vmnic1"


def test_with_no_teaming_order_anywhere_the_vswitchs_uplinks_in_order():
    props = network(
        pnic("vmnic4", 0) + pnic("vmnic5", 25000),
        vnic("vmk1", "10.1.1.5", "255.255.255.0", portgroup="Storage"),
        portgroups="<HostPortGroup><spec><name>Storage</name><vswitchName>vSwitch1</vswitchName></spec></HostPortGroup>",
        vswitches="<HostVirtualSwitch><name>vSwitch1</name><key>k1</key>"
        "<pnic>key-vim.host.PhysicalNic-vmnic4</pnic><pnic>key-vim.host.PhysicalNic-vmnic5</pnic><spec/></HostVirtualSwitch>",
    )
    net = HostNetwork(props)
    assert net.uplinks("vmk1") == ["vmnic4", "vmnic5"]
    assert (net.uplink("vmk1").device, net.uplink("vmk1").speed_mb) == ("vmnic5", 25000)  # vmnic4 has no link


def test_routes_longest_prefix_first_and_only_on_the_default_stack():
    props = network(
        pnic("vmnic0", 1000),
        vnic("vmk0", "10.10.0.12", "255.255.255.0")
        + vnic("vmk1", "192.168.50.12", "255.255.255.0")
        + vnic("vmk3", "172.16.8.7", "255.255.255.0", stack="vmotion"),
        routes=route("0.0.0.0", 0, "vmk0", "10.10.0.1") + route("192.168.0.0", 16, "vmk1", "192.168.50.1"),
    )
    net = HostNetwork(props)
    assert net.vmknic_for("192.168.50.20") == "vmk1"  # connected /24
    assert net.vmknic_for("192.168.77.4") == "vmk1"  # static /16 through vmk1's gateway
    assert net.vmknic_for("172.16.8.5") == "vmk0"  # vmk3's subnet, but vmk3 is on the vMotion stack
    assert net.vmknic_for("filer.example.com") == "vmk0"  # a name: not resolved here, the default route
    assert net.vmknic_for("fd00::5") == "vmk0"  # not IPv4: the default route too
    assert (
        HostNetwork(network("", vnic("vmk1", "192.168.50.12", "255.255.255.0"))).vmknic_for("10.0.0.1") == ""
    )  # no default route


def test_an_nfs_vmknic_whose_uplinks_are_all_down_has_no_link_speed():
    props = network(
        pnic("vmnic2", 0, driver="nmlx5_core") + pnic("vmnic3", 0, driver="nmlx5_core"),
        vnic("vmk1", "192.168.50.12", "255.255.255.0", dvs="50 2a"),
        proxy="<HostProxySwitch><dvsUuid>50 2a</dvsUuid><pnic>key-vim.host.PhysicalNic-vmnic2</pnic>"
        "<pnic>key-vim.host.PhysicalNic-vmnic3</pnic></HostProxySwitch>",
        routes=route("0.0.0.0", 0, "vmk1", "192.168.50.1"),
    )
    props["config.fileSystemVolume.mountInfo"] = val(
        "<HostFileSystemMountInfo><mountInfo><path>/vmfs/volumes/0a1b2c3d-4e5f6071</path></mountInfo>"
        '<volume xsi:type="HostNasVolume"><type>NFS41</type><name>nfs41-a</name><remoteHost>192.168.50.30</remoteHost>'
        "<remotePath>/a</remotePath><remoteHostNames>192.168.50.30</remoteHostNames><remoteHostNames>192.168.51.30</remoteHostNames>"
        "</volume></HostFileSystemMountInfo>"
    )
    inv = discovery.storage_of_host("esx09", vim.HostSystem("host-9"), props).inventory
    adapter = inv.adapters["vmk1"]
    assert (adapter.type, adapter.model, adapter.driver, adapter.link_speed_bytes_per_second) == (
        "nfs",
        "vmnic2",
        "nmlx5_core",
        None,
    )
    ds = inv.datastores["nfs41-a"]
    assert (ds.type, ds.remote_host, ds.adapter) == ("nfs41", "192.168.50.30", "vmk1")
