"""Which vmkernel NIC carries each NFS datastore's traffic, and the link speed behind it.

ESXi sends NFS traffic out of the vmknic that its default TCP/IP stack routes the server
address to: the vmknic whose subnet holds the server, else the one of a static route, else the
default gateway's (usually vmk0). That vmknic's uplinks come from its port group's teaming
(standard vSwitch: active then standby vmnics, from the port group's computed policy, its own
policy or the vSwitch's) or, on a distributed switch, from the host's proxy switch (the
teaming order is kept by vCenter, not the host, so the proxy switch's uplinks in their order).

Read from `config.network.*` of the same property-collector walk as the rest of discovery.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from exporter.vsphere.soap import children as _all
from exporter.vsphere.soap import text as _text

DEFAULT_STACK = ("", "defaultTcpipStack")  # NFS runs on the default TCP/IP stack only
NETWORK_PROPERTIES = [
    "config.network.vnic",
    "config.network.pnic",
    "config.network.portgroup",
    "config.network.vswitch",
    "config.network.proxySwitch",
    "config.network.routeTableInfo",
]


def _texts(element, path: str) -> list[str]:
    return [e.text.strip() for e in _all(element, path) if e.text and e.text.strip()]


@dataclass(slots=True)
class Uplink:
    device: str
    driver: str
    speed_mb: int  # 0: no link


class HostNetwork:
    """One host's vmknics, their routes and uplinks, from its config.network.* properties."""

    def __init__(self, props: dict):
        self.pnics = {}  # device -> Uplink
        self.pnic_devices = {}  # key -> device
        for pnic in _all(props.get("config.network.pnic"), "PhysicalNic"):
            device = _text(pnic, "device")
            speed = _text(pnic, "linkSpeed/speedMb")  # absent: the link is down
            self.pnics[device] = Uplink(device, _text(pnic, "driver"), int(speed) if speed else 0)
            self.pnic_devices[_text(pnic, "key")] = device
        self.vnics = {_text(v, "device"): v for v in _all(props.get("config.network.vnic"), "HostVirtualNic")}
        self.portgroups = {_text(p, "spec/name"): p for p in _all(props.get("config.network.portgroup"), "HostPortGroup")}
        self.vswitches = {}  # key and name -> element
        for vswitch in _all(props.get("config.network.vswitch"), "HostVirtualSwitch"):
            self.vswitches[_text(vswitch, "key")] = self.vswitches[_text(vswitch, "name")] = vswitch
        self.proxy_uplinks = {  # distributed switch uuid -> its uplinks on this host
            _text(p, "dvsUuid"): self._devices(_texts(p, "pnic")) or _texts(p, "spec/backing/pnicSpec/pnicDevice")
            for p in _all(props.get("config.network.proxySwitch"), "HostProxySwitch")
        }
        self.routes = self._routes(props.get("config.network.routeTableInfo"))

    def _routes(self, table) -> list[tuple[ipaddress.IPv4Network, str]]:
        """(network, vmknic), longest prefix first: the connected subnets of the default-stack
        vmknics (also in the route table on a real host) and the stack's route table."""
        routes = []
        for device, vnic in self.vnics.items():
            if _text(vnic, "spec/netStackInstanceKey") not in DEFAULT_STACK:
                continue
            address, mask = _text(vnic, "spec/ip/ipAddress"), _text(vnic, "spec/ip/subnetMask")
            try:
                routes.append((ipaddress.IPv4Network(f"{address}/{mask}", strict=False), device))
            except ValueError:  # DHCP not yet answered, or an IPv6-only vmknic
                continue
        for entry in _all(table, "ipRoute"):
            try:
                network = ipaddress.IPv4Network(f"{_text(entry, 'network')}/{_text(entry, 'prefixLength')}", strict=False)
            except ValueError:
                continue
            if _text(entry, "deviceName"):
                routes.append((network, _text(entry, "deviceName")))
        return sorted(routes, key=lambda route: -route[0].prefixlen)  # stable: vmknic order among equals

    def vmknic_for(self, server: str) -> str:
        """The vmknic NFS traffic to `server` leaves from; "" if none routes there. A host name is
        not resolved here (this machine's DNS is not the host's): it takes the default route."""
        try:
            address = ipaddress.IPv4Address(server)
        except ValueError:
            address = None
        for network, device in self.routes:
            if address in network if address is not None else network.prefixlen == 0:
                return device
        return ""

    def uplinks(self, vmknic: str) -> list[str]:
        """The vmknic's vmnics in failover order."""
        vnic = self.vnics.get(vmknic)
        if vnic is None:
            return []
        dvs = _text(vnic, "spec/distributedVirtualPort/switchUuid")
        if dvs:
            return self.proxy_uplinks.get(dvs, [])
        portgroup = self.portgroups.get(_text(vnic, "portgroup") or _text(vnic, "spec/portgroup"))
        vswitch = None
        if portgroup is not None:
            vswitch = self.vswitches.get(_text(portgroup, "vswitch"))
            if vswitch is None:  # an element's truth is its children's count, not its presence
                vswitch = self.vswitches.get(_text(portgroup, "spec/vswitchName"))
        for policy in (_policy(portgroup, "computedPolicy"), _policy(portgroup, "spec/policy"), _policy(vswitch, "spec/policy")):
            if policy:
                return policy
        # No teaming order anywhere: the vSwitch's own uplinks.
        return self._devices(_texts(vswitch, "pnic")) or _texts(vswitch, "spec/bridge/nicDevice")

    def _devices(self, keys: list[str]) -> list[str]:
        return [self.pnic_devices.get(k, "") for k in keys]

    def uplink(self, vmknic: str) -> Uplink | None:
        """The vmnic carrying the vmknic's NFS traffic: one NFS v3 mount is one TCP connection,
        so it uses one uplink at a time, the first of the failover order that has link (IP-hash
        teaming with several server addresses, or NFS 4.1 session trunking, can spread over more;
        this is the one-connection ceiling). With no link anywhere, the first uplink, at speed 0."""
        known = [self.pnics[d] for d in self.uplinks(vmknic) if d in self.pnics]
        return next((u for u in known if u.speed_mb > 0), known[0] if known else None)


def _policy(element, path: str) -> list[str]:
    """Active then standby vmnics of a teaming policy; [] where it sets no order."""
    orders = _all(element, path + "/nicTeaming/nicOrder")
    return _texts(orders[0], "activeNic") + _texts(orders[0], "standbyNic") if orders else []
