// storagesim: a vCenter (or standalone ESXi) simulator with a storage configuration and a
// PerformanceManager that serves fixture values for the real instances of that configuration.
//
// Built on github.com/vmware/govmomi/simulator. Stock vcsim has fake perf instances
// ("datastore-50" for a disk) and random values; this one has FC HBAs at known speeds, naa.*
// LUNs with queue depths and two paths each, VMFS datastores shared by several hosts,
// NFS datastores with the vmkernel network that carries them, Disk.SchedNumReqOutstanding,
// and per-instance counter values from a JSON fixture (or a generated inventory of any size,
// for benchmarks).
//
// On start it prints one JSON line to stdout: {"url": ..., "hosts": N, "cert": FILE}.
package main

import (
	"context"
	"crypto/md5"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"log"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path"
	"reflect"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// Path is one path of a LUN, through one HBA.
type Path struct {
	Adapter string           `json:"adapter"`
	Target  int32            `json:"target"`
	State   string           `json:"state"`
	Perf    map[string]int64 `json:"perf"`
}

// Lun is one SCSI disk; Datastore is the VMFS volume on it ("" for none).
type Lun struct {
	Name       string           `json:"name"`
	Display    string           `json:"display"`
	Vendor     string           `json:"vendor"`
	Model      string           `json:"model"`
	QueueDepth int32            `json:"queue_depth"`
	Datastore  string           `json:"datastore"`
	Paths      []Path           `json:"paths"`
	Perf       map[string]int64 `json:"perf"`
	// Standard-API device state and multipathing (defaults: ok, VMW_PSP_RR, VMW_SATP_ALUA).
	State string `json:"state"`
	Psp   string `json:"psp"`
	Satp  string `json:"satp"`
	Ssd   bool   `json:"ssd"`
	Local bool   `json:"local"`
	// What esxcli reports per device (ExecuteSoap): DSNRO (default: the host's) and adaptive queue depth.
	EsxcliDsnro    int32 `json:"esxcli_dsnro"`
	QfullSample    int32 `json:"qfull_sample_size"`
	QfullThreshold int32 `json:"qfull_threshold"`
}

func orDefault(value, fallback string) string {
	if value == "" {
		return fallback
	}
	return value
}

// Hba is a Fibre Channel adapter, or (Type "iscsi") a software iSCSI adapter bound to Vmnics.
type Hba struct {
	Device    string           `json:"device"`
	Type      string           `json:"type"`
	Model     string           `json:"model"`
	Driver    string           `json:"driver"`
	SpeedGbps int64            `json:"speed_gbps"`
	Vmnics    []Vmnic          `json:"vmnics"`
	Perf      map[string]int64 `json:"perf"`
}

// Vmnic is a physical NIC bound to a software iSCSI adapter.
type Vmnic struct {
	Device  string `json:"device"`
	SpeedMb int32  `json:"speed_mb"`
}

// Network is a host's vmkernel networking, which decides the link an NFS datastore's traffic
// takes: vmnics (SpeedMb 0: link down), standard vSwitches with port groups, distributed
// switches (as the host sees them: its proxy switch and the uplinks on it), vmknics and the
// default gateway with the vmknic it is reached through.
type Network struct {
	Pnics         []Pnic      `json:"pnics"`
	Vswitches     []Vswitch   `json:"vswitches"`
	Portgroups    []Portgroup `json:"portgroups"`
	Dvs           []Dvs       `json:"dvs"`
	Vmknics       []Vmknic    `json:"vmknics"`
	Gateway       string      `json:"gateway"`
	GatewayVmknic string      `json:"gateway_vmknic"`
}

type Pnic struct {
	Device  string `json:"device"`
	Driver  string `json:"driver"`
	SpeedMb int32  `json:"speed_mb"`
}

// Vswitch teams its uplinks in their order (all active).
type Vswitch struct {
	Name    string   `json:"name"`
	Uplinks []string `json:"uplinks"`
}

// Portgroup with no Active list inherits the vSwitch's teaming order.
type Portgroup struct {
	Name    string   `json:"name"`
	Vswitch string   `json:"vswitch"`
	Active  []string `json:"active"`
	Standby []string `json:"standby"`
}

type Dvs struct {
	Uuid    string   `json:"uuid"`
	Name    string   `json:"name"`
	Uplinks []string `json:"uplinks"`
}

// Vmknic is on a standard port group, or (Dvs set) on a distributed switch.
type Vmknic struct {
	Device    string `json:"device"`
	Portgroup string `json:"portgroup"`
	Dvs       string `json:"dvs"`
	Ip        string `json:"ip"`
	Mask      string `json:"mask"`
}

// Nfs is an NFS datastore; Version "nfs" (v3) or "nfs41"; Server an address or a host name.
type Nfs struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Server  string `json:"server"`
	Path    string `json:"path"`
}

// IscsiManager answers QueryBoundVnics with the vmnics bound to each software iSCSI adapter
// (the govmomi simulator has no iSCSI manager of its own).
type IscsiManager struct {
	mo.IscsiManager
	bound map[string][]types.IscsiPortInfo
}

func (m *IscsiManager) QueryBoundVnics(req *types.QueryBoundVnics) soap.HasFault {
	return &methods.QueryBoundVnicsBody{Res: &types.QueryBoundVnicsResponse{Returnval: m.bound[req.IScsiHbaName]}}
}

// Host is one ESXi host; Perf holds host-wide counters (instance ""), DatastorePerf the
// host-level datastore.* counters by datastore name (VMFS and NFS). Network, if set, replaces
// the simulator's default one (vmk0 on vmnic0).
type Host struct {
	Name          string                      `json:"name"`
	Dsnro         int64                       `json:"dsnro"`
	CpuHz         int64                       `json:"cpu_hz"`
	Hbas          []Hba                       `json:"hbas"`
	Luns          []Lun                       `json:"luns"`
	Nfs           []Nfs                       `json:"nfs"`
	Network       *Network                    `json:"network"`
	Perf          map[string]int64            `json:"perf"`
	DatastorePerf map[string]map[string]int64 `json:"datastore_perf"`
	Vms           []Vm                        `json:"vms"`
	Vsan          *VsanHost                   `json:"vsan"` // vsan.go
}

type Fixture struct {
	Hosts []Host       `json:"hosts"`
	Vsan  *VsanFixture `json:"vsan"` // vsan.go
}

// Vm is a virtual machine running on its host (PoweredOff: registered there, not running), in a
// VM folder under the datacenter's vm folder if Folder is set.
type Vm struct {
	Name       string  `json:"name"`
	Folder     string  `json:"folder"`
	PoweredOff bool    `json:"powered_off"`
	Disks      []Vdisk `json:"disks"`
	// InstanceUuid replaces the simulator's config.instanceUuid (vSAN names VMs by it).
	InstanceUuid string `json:"instance_uuid"`
}

// Vdisk is one virtual disk: its controller (pvscsi, lsilogic, lsilogic-sas, buslogic, ahci, nvme)
// with the bus and unit that make its perf instance (scsi0:1, sata0:0, nvme0:0), the datastore
// holding its file (an RDM's mapping file), a flat disk's provisioning (thin, thick_lazy,
// thick_eager) or an RDM of a host LUN (Rdm: canonical name, RdmMode physical | virtual), its
// storage I/O allocation (IopsLimit 0: unlimited) and its virtualDisk.* counters.
type Vdisk struct {
	Controller   string           `json:"controller"`
	Bus          int32            `json:"bus"`
	Unit         int32            `json:"unit"`
	Datastore    string           `json:"datastore"`
	Provisioning string           `json:"provisioning"`
	Rdm          string           `json:"rdm"`
	RdmMode      string           `json:"rdm_mode"`
	IopsLimit    int64            `json:"iops_limit"`
	Shares       int32            `json:"shares"`
	Perf         map[string]int64 `json:"perf"`
}

// datastoreUUID derives a VMFS-style uuid from the datastore name, the same on every host.
func datastoreUUID(name string) string {
	sum := md5.Sum([]byte(name))
	h := fmt.Sprintf("%x", sum)
	return fmt.Sprintf("%s-%s-%s-%s", h[0:8], h[8:16], h[16:20], h[20:32])
}

// nfsID is an NFS datastore's id in its mount path (and its datastore.* perf instance), the
// same on every host that mounts it.
func nfsID(name string) string {
	h := fmt.Sprintf("%x", md5.Sum([]byte("nfs:"+name)))
	return h[0:8] + "-" + h[8:16]
}

func wwn(prefix int64, a, b int) int64 { return prefix<<48 | int64(a)<<16 | int64(b) }

func wwnText(v int64) string { return fmt.Sprintf("%016x", v) }

// hostStorage is what one host exposes: device info, mounts, and perf instances by group.
type hostStorage struct {
	fx        *Host
	iscsi     map[string][]types.IscsiPortInfo       // software iSCSI adapter -> bound vmnics
	instances map[string]map[string]map[string]int64 // group -> instance -> counter -> value
}

func buildHost(hostIdx int, fx *Host) (*types.HostStorageDeviceInfo, []types.HostFileSystemMountInfo, *hostStorage) {
	info := &types.HostStorageDeviceInfo{
		MultipathInfo:     &types.HostMultipathInfo{},
		PlugStoreTopology: &types.HostPlugStoreTopology{},
	}
	hs := &hostStorage{fx: fx, instances: map[string]map[string]map[string]int64{
		"disk": {}, "storageAdapter": {}, "storagePath": {}, "datastore": {}, "cpu": {},
	}}
	hbaKey := map[string]string{}
	hbaIdx := map[string]int{}
	hs.iscsi = map[string][]types.IscsiPortInfo{}
	for i, hba := range fx.Hbas {
		if hba.Type == "iscsi" {
			key := "key-vim.host.InternetScsiHba-" + hba.Device
			hbaKey[hba.Device] = key
			hbaIdx[hba.Device] = i
			info.HostBusAdapter = append(info.HostBusAdapter, &types.HostInternetScsiHba{
				HostHostBusAdapter: types.HostHostBusAdapter{Key: key, Device: hba.Device, Status: "online", Model: hba.Model, Driver: hba.Driver},
				IsSoftwareBased:    true,
				IScsiName:          fmt.Sprintf("iqn.1998-01.com.vmware:%s", fx.Name),
			})
			for v, nic := range hba.Vmnics {
				hs.iscsi[hba.Device] = append(hs.iscsi[hba.Device], types.IscsiPortInfo{
					VnicDevice: fmt.Sprintf("vmk%d", v+1), PnicDevice: nic.Device,
					Pnic: &types.PhysicalNic{Key: "key-vim.host.PhysicalNic-" + nic.Device, Device: nic.Device, Driver: "ixgben",
						LinkSpeed: &types.PhysicalNicLinkInfo{SpeedMb: nic.SpeedMb, Duplex: true}},
				})
			}
			info.PlugStoreTopology.Adapter = append(info.PlugStoreTopology.Adapter, types.HostPlugStoreTopologyAdapter{
				Key: "key-vim.host.PlugStoreTopology.Adapter-" + hba.Device, Adapter: key,
			})
			hs.instances["storageAdapter"][hba.Device] = hba.Perf
			continue
		}
		key := "key-vim.host.FibreChannelHba-" + hba.Device
		hbaKey[hba.Device] = key
		hbaIdx[hba.Device] = i
		info.HostBusAdapter = append(info.HostBusAdapter, &types.HostFibreChannelHba{
			HostHostBusAdapter: types.HostHostBusAdapter{
				Key: key, Device: hba.Device, Status: "online", Model: hba.Model, Driver: hba.Driver,
				Pci: fmt.Sprintf("0000:%02x:00.0", 0x3b+i),
			},
			PortWorldWideName: wwn(0x2100, hostIdx, i),
			NodeWorldWideName: wwn(0x2000, hostIdx, i),
			PortType:          "fabric",
			Speed:             hba.SpeedGbps * 1000 * 1000 * 1000, // the API's unit: bits per second
		})
		info.PlugStoreTopology.Adapter = append(info.PlugStoreTopology.Adapter, types.HostPlugStoreTopologyAdapter{
			Key: "key-vim.host.PlugStoreTopology.Adapter-" + hba.Device, Adapter: key,
		})
		hs.instances["storageAdapter"][hba.Device] = hba.Perf
	}
	mounts := map[string]*types.HostVmfsVolume{}
	var order []string
	for l, lun := range fx.Luns {
		lunKey := "key-vim.host.ScsiDisk-" + lun.Name
		info.ScsiLun = append(info.ScsiLun, &types.HostScsiDisk{
			ScsiLun: types.ScsiLun{
				HostDevice:       types.HostDevice{DeviceName: "/vmfs/devices/disks/" + lun.Name, DeviceType: "disk"},
				Key:              lunKey,
				Uuid:             lunUUID(lun.Name),
				CanonicalName:    lun.Name,
				DisplayName:      lun.Display,
				LunType:          "disk",
				Vendor:           lun.Vendor,
				Model:            lun.Model,
				QueueDepth:       lun.QueueDepth,
				OperationalState: []string{orDefault(lun.State, "ok")},
			},
			Capacity:   types.HostDiskDimensionsLba{BlockSize: 512, Block: 2147483648},
			DevicePath: "/vmfs/devices/disks/" + lun.Name,
			Ssd:        types.NewBool(lun.Ssd),
			LocalDisk:  types.NewBool(lun.Local),
		})
		mpLun := types.HostMultipathInfoLogicalUnit{
			Key: "key-vim.host.MultipathInfo.LogicalUnit-" + lun.Name, Id: lun.Name, Lun: lunKey,
			Policy:                 &types.HostMultipathInfoLogicalUnitPolicy{Policy: orDefault(lun.Psp, "VMW_PSP_RR")},
			StorageArrayTypePolicy: &types.HostMultipathInfoLogicalUnitStorageArrayTypePolicy{Policy: orDefault(lun.Satp, "VMW_SATP_ALUA")},
		}
		for _, p := range lun.Paths {
			runtime := fmt.Sprintf("%s:C0:T%d:L%d", p.Adapter, p.Target, l)
			i := hbaIdx[p.Adapter]
			long := fmt.Sprintf("fc.%s:%s-fc.%s:%s-%s", wwnText(wwn(0x2000, hostIdx, i)), wwnText(wwn(0x2100, hostIdx, i)),
				wwnText(wwn(0x5006, 0, int(p.Target))), wwnText(wwn(0x5006, 1, int(p.Target))), lun.Name)
			if fx.Hbas[i].Type == "iscsi" {
				long = fmt.Sprintf("iqn.1998-01.com.vmware:%s-00023d000001,iqn.2010-06.com.purestorage:flasharray.%d,t,1-%s", fx.Name, p.Target, lun.Name)
			}
			mpLun.Path = append(mpLun.Path, types.HostMultipathInfoPath{
				Key: "key-vim.host.MultipathInfo.Path-" + runtime, Name: runtime, PathState: p.State, State: p.State,
				IsWorkingPath: types.NewBool(p.State == "active"), Adapter: hbaKey[p.Adapter], Lun: mpLun.Key,
				Transport: &types.HostFibreChannelTargetTransport{PortWorldWideName: wwn(0x5006, 1, int(p.Target)), NodeWorldWideName: wwn(0x5006, 0, int(p.Target))},
			})
			info.PlugStoreTopology.Path = append(info.PlugStoreTopology.Path, types.HostPlugStoreTopologyPath{
				Key: "key-vim.host.PlugStoreTopology.Path-" + long, Name: long, ChannelNumber: 0, TargetNumber: p.Target,
				LunNumber: int32(l), Adapter: "key-vim.host.PlugStoreTopology.Adapter-" + p.Adapter,
				Device: "key-vim.host.PlugStoreTopology.Device-" + lun.Name,
			})
			hs.instances["storagePath"][long] = p.Perf
		}
		info.MultipathInfo.Lun = append(info.MultipathInfo.Lun, mpLun)
		hs.instances["disk"][lun.Name] = lun.Perf
		if lun.Datastore != "" {
			vol, ok := mounts[lun.Datastore]
			if !ok {
				vol = &types.HostVmfsVolume{
					HostFileSystemVolume: types.HostFileSystemVolume{Type: "VMFS", Name: lun.Datastore, Capacity: 1 << 40},
					BlockSizeMb:          1, MaxBlocks: 63963136, MajorVersion: 6, Version: "6.82",
					Uuid: datastoreUUID(lun.Datastore),
				}
				mounts[lun.Datastore] = vol
				order = append(order, lun.Datastore)
			}
			vol.Extent = append(vol.Extent, types.HostScsiDiskPartition{DiskName: lun.Name, Partition: 1})
		}
	}
	var mountInfo []types.HostFileSystemMountInfo
	for _, name := range order {
		vol := mounts[name]
		mountInfo = append(mountInfo, types.HostFileSystemMountInfo{
			MountInfo: types.HostMountInfo{Path: "/vmfs/volumes/" + vol.Uuid, AccessMode: "readWrite",
				Mounted: types.NewBool(true), Accessible: types.NewBool(true)},
			Volume: vol,
		})
		hs.instances["datastore"][vol.Uuid] = fx.DatastorePerf[name]
	}
	for _, n := range fx.Nfs {
		id := nfsID(n.Name)
		mountInfo = append(mountInfo, types.HostFileSystemMountInfo{
			MountInfo: types.HostMountInfo{Path: "/vmfs/volumes/" + id, AccessMode: "readWrite",
				Mounted: types.NewBool(true), Accessible: types.NewBool(true)},
			Volume: &types.HostNasVolume{
				HostFileSystemVolume: types.HostFileSystemVolume{Type: strings.ToUpper(n.Version), Name: n.Name, Capacity: 1 << 40},
				RemoteHost:           n.Server, RemotePath: n.Path, RemoteHostNames: []string{n.Server},
			},
		})
		hs.instances["datastore"][id] = fx.DatastorePerf[n.Name]
	}
	hs.instances["cpu"][""] = fx.Perf
	return info, mountInfo, hs
}

// buildNetwork replaces the template's network with the fixture's, computing each port group's
// effective teaming (its own order, else its vSwitch's) as ESXi does, and the default TCP/IP
// stack's route table: a connected route per vmknic and the default route.
func buildNetwork(base *types.HostNetworkInfo, n *Network) *types.HostNetworkInfo {
	info := *base
	info.Pnic, info.Vswitch, info.Portgroup, info.ProxySwitch, info.Vnic = nil, nil, nil, nil, nil
	pnicKey := func(device string) string { return "key-vim.host.PhysicalNic-" + device }
	keys := func(devices []string) []string {
		var out []string
		for _, d := range devices {
			out = append(out, pnicKey(d))
		}
		return out
	}
	teaming := func(active, standby []string) *types.HostNicTeamingPolicy {
		return &types.HostNicTeamingPolicy{Policy: "failover_explicit",
			NicOrder: &types.HostNicOrderPolicy{ActiveNic: active, StandbyNic: standby}}
	}
	for i, p := range n.Pnics {
		nic := types.PhysicalNic{Key: pnicKey(p.Device), Device: p.Device, Driver: p.Driver,
			Pci: fmt.Sprintf("0000:%02x:00.0", 0x18+i), Mac: fmt.Sprintf("00:50:56:00:%02x:%02x", i, len(n.Pnics))}
		if p.SpeedMb > 0 { // a link that is down has no linkSpeed
			nic.LinkSpeed = &types.PhysicalNicLinkInfo{SpeedMb: p.SpeedMb, Duplex: true}
		}
		info.Pnic = append(info.Pnic, nic)
	}
	uplinks := map[string][]string{}
	for _, v := range n.Vswitches {
		uplinks[v.Name] = v.Uplinks
		info.Vswitch = append(info.Vswitch, types.HostVirtualSwitch{
			Name: v.Name, Key: "key-vim.host.VirtualSwitch-" + v.Name, NumPorts: 1536, NumPortsAvailable: 1520, Mtu: 1500,
			Pnic: keys(v.Uplinks),
			Spec: types.HostVirtualSwitchSpec{NumPorts: 128, Bridge: &types.HostVirtualSwitchBondBridge{NicDevice: v.Uplinks},
				Policy: &types.HostNetworkPolicy{NicTeaming: teaming(v.Uplinks, nil)}},
		})
	}
	for _, pg := range n.Portgroups {
		key := "key-vim.host.PortGroup-" + pg.Name
		spec := types.HostNetworkPolicy{}
		computed := teaming(uplinks[pg.Vswitch], nil)
		if len(pg.Active) > 0 {
			spec.NicTeaming = teaming(pg.Active, pg.Standby)
			computed = teaming(pg.Active, pg.Standby)
		}
		info.Portgroup = append(info.Portgroup, types.HostPortGroup{
			Key: key, Vswitch: "key-vim.host.VirtualSwitch-" + pg.Vswitch,
			ComputedPolicy: types.HostNetworkPolicy{NicTeaming: computed},
			Spec:           types.HostPortGroupSpec{Name: pg.Name, VswitchName: pg.Vswitch, Policy: spec},
		})
		for i := range info.Vswitch {
			if info.Vswitch[i].Name == pg.Vswitch {
				info.Vswitch[i].Portgroup = append(info.Vswitch[i].Portgroup, key)
			}
		}
	}
	for _, d := range n.Dvs {
		info.ProxySwitch = append(info.ProxySwitch, types.HostProxySwitch{
			DvsUuid: d.Uuid, DvsName: d.Name, Key: d.Uuid, NumPorts: 512, NumPortsAvailable: 500, Mtu: 9000, Pnic: keys(d.Uplinks),
		})
	}
	routes := []types.HostIpRouteEntry{{Network: "0.0.0.0", PrefixLength: 0, Gateway: n.Gateway, DeviceName: n.GatewayVmknic}}
	for _, v := range n.Vmknics {
		spec := types.HostVirtualNicSpec{Ip: &types.HostIpConfig{IpAddress: v.Ip, SubnetMask: v.Mask}, Mtu: 1500,
			NetStackInstanceKey: "defaultTcpipStack"}
		portgroup := v.Portgroup
		if v.Dvs != "" {
			portgroup = "" // a vmknic on a distributed port has no standard port group
			spec.DistributedVirtualPort = &types.DistributedVirtualSwitchPortConnection{SwitchUuid: v.Dvs, PortgroupKey: "dvportgroup-" + v.Device, PortKey: "16"}
		}
		spec.Portgroup = portgroup
		info.Vnic = append(info.Vnic, types.HostVirtualNic{Device: v.Device, Key: "key-vim.host.VirtualNic-" + v.Device, Portgroup: portgroup, Spec: spec})
		mask := net.IPMask(net.ParseIP(v.Mask).To4())
		ones, _ := mask.Size()
		routes = append(routes, types.HostIpRouteEntry{Network: net.ParseIP(v.Ip).Mask(mask).String(), PrefixLength: int32(ones), Gateway: "0.0.0.0", DeviceName: v.Device})
	}
	info.RouteTableInfo = &types.HostIpRouteTableInfo{IpRoute: routes}
	info.IpRouteConfig = &types.HostIpRouteConfig{DefaultGateway: n.Gateway}
	return &info
}

// PerfManager serves the fixture values for each host's real instances, and each VM's virtual
// disks by instance (scsi0:0 ...; stock vcsim answers only aggregate VM counters).
type PerfManager struct {
	*simulator.PerformanceManager
	mu    sync.Mutex              // hosts and vms: entities added after start are derived on first query
	hosts map[string]*hostStorage // host moref value -> storage
	vms   map[string]*vmPerf      // VM moref value -> its virtual disks' counters
	names map[int32]string        // counter key -> group.name.rollup
}

// vmPerf is one VM's counters: group -> instance -> counter -> value.
type vmPerf struct {
	vm        *simulator.VirtualMachine
	instances map[string]map[string]map[string]int64
	derived   bool // created after start: its counters follow its devices
}

// entity is the counters of a host or VM; running is false for a VM that is not powered on,
// which has no real-time samples (as on vCenter). A host added or a VM created after start gets
// counters for its own devices (changes.go).
func (p *PerfManager) entity(ctx *simulator.Context, ref types.ManagedObjectReference) (instances map[string]map[string]map[string]int64, running, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if hs, ok := p.hosts[ref.Value]; ok && ref.Type == "HostSystem" {
		return hs.instances, true, true
	}
	if v, ok := p.vms[ref.Value]; ok && ref.Type == "VirtualMachine" && !v.derived {
		return v.instances, v.vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn, true
	}
	switch obj := ctx.Map.Get(ref).(type) {
	case *simulator.HostSystem:
		hs := derivedHost(obj)
		p.hosts[ref.Value] = hs
		return hs.instances, true, true
	case *simulator.VirtualMachine:
		v := derivedVM(obj) // again at every query: its disks may have changed
		p.vms[ref.Value] = v
		return v.instances, obj.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn, true
	}
	return nil, false, false
}

func (p *PerfManager) seriesFor(all map[string]map[string]map[string]int64, id types.PerfMetricId) []types.PerfMetricId {
	name, ok := p.names[id.CounterId]
	if !ok {
		return nil
	}
	group := strings.SplitN(name, ".", 2)[0]
	instances := all[group]
	var out []types.PerfMetricId
	if id.Instance == "*" {
		keys := make([]string, 0, len(instances))
		for inst, values := range instances {
			if _, has := values[name]; has {
				keys = append(keys, inst)
			}
		}
		sort.Strings(keys)
		for _, inst := range keys {
			out = append(out, types.PerfMetricId{CounterId: id.CounterId, Instance: inst})
		}
	} else if values, has := instances[id.Instance]; has {
		if _, has := values[name]; has {
			out = append(out, id)
		}
	}
	return out
}

// QueryPerf answers real-time queries like vCenter: samples on 20 s boundaries, oldest first,
// after StartTime (exclusive), at most MaxSample of the newest.
func (p *PerfManager) QueryPerf(ctx *simulator.Context, req *types.QueryPerf) soap.HasFault {
	body := &methods.QueryPerfBody{Res: &types.QueryPerfResponse{}}
	latest := time.Now().UTC().Truncate(20 * time.Second)
	for _, qs := range req.QuerySpec {
		hs, running, ok := p.entity(ctx, qs.Entity)
		if !ok {
			body.Fault_ = simulator.Fault("", &types.InvalidArgument{InvalidProperty: "entity"})
			return body
		}
		end := latest
		if qs.EndTime != nil && qs.EndTime.Before(end) {
			end = qs.EndTime.UTC().Truncate(20 * time.Second)
		}
		var stamps []time.Time
		for t := end; running && len(stamps) < 180; t = t.Add(-20 * time.Second) {
			if qs.StartTime != nil && !t.After(*qs.StartTime) {
				break
			}
			stamps = append(stamps, t)
			if qs.MaxSample > 0 && int32(len(stamps)) >= qs.MaxSample {
				break
			}
		}
		sort.Slice(stamps, func(i, j int) bool { return stamps[i].Before(stamps[j]) })
		var ids []types.PerfMetricId
		for _, id := range qs.MetricId {
			ids = append(ids, p.seriesFor(hs, id)...)
		}
		if len(stamps) == 0 {
			// vCenter returns an entity with no samples when nothing is newer than StartTime.
			body.Res.Returnval = append(body.Res.Returnval, &types.PerfEntityMetric{PerfEntityMetricBase: types.PerfEntityMetricBase{Entity: qs.Entity}})
			continue
		}
		if qs.Format == string(types.PerfFormatCsv) {
			info := make([]string, 0, 2*len(stamps))
			for _, t := range stamps {
				info = append(info, "20", t.Format(time.RFC3339))
			}
			m := &types.PerfEntityMetricCSV{PerfEntityMetricBase: types.PerfEntityMetricBase{Entity: qs.Entity}, SampleInfoCSV: strings.Join(info, ",")}
			for _, id := range ids {
				v := p.value(hs, id)
				vals := make([]string, len(stamps))
				for i := range vals {
					vals[i] = fmt.Sprint(v)
				}
				m.Value = append(m.Value, types.PerfMetricSeriesCSV{PerfMetricSeries: types.PerfMetricSeries{Id: id}, Value: strings.Join(vals, ",")})
			}
			body.Res.Returnval = append(body.Res.Returnval, m)
			continue
		}
		m := &types.PerfEntityMetric{PerfEntityMetricBase: types.PerfEntityMetricBase{Entity: qs.Entity}}
		for _, t := range stamps {
			m.SampleInfo = append(m.SampleInfo, types.PerfSampleInfo{Timestamp: t, Interval: 20})
		}
		for _, id := range ids {
			v := p.value(hs, id)
			vals := make([]int64, len(stamps))
			for i := range vals {
				vals[i] = v
			}
			m.Value = append(m.Value, &types.PerfMetricIntSeries{PerfMetricSeries: types.PerfMetricSeries{Id: id}, Value: vals})
		}
		body.Res.Returnval = append(body.Res.Returnval, m)
	}
	return body
}

func (p *PerfManager) value(all map[string]map[string]map[string]int64, id types.PerfMetricId) int64 {
	name := p.names[id.CounterId]
	return all[strings.SplitN(name, ".", 2)[0]][id.Instance][name]
}

// generate builds an inventory of n hosts: 2 FC HBAs each, luns LUNs with two paths, every
// LUN carrying a VMFS datastore shared by a group of 8 hosts, and vms VMs per host with one or
// two pvscsi disks each (alternately) on those datastores.
func generate(n, luns, vms int) *Fixture {
	fx := &Fixture{}
	for h := 0; h < n; h++ {
		host := Host{
			Name: fmt.Sprintf("esx%04d.bench.local", h), Dsnro: 32, CpuHz: 2600000000,
			Perf:          map[string]int64{"cpu.usage.average": int64(1000 + h%50*100), "cpu.usagemhz.average": int64(4000 + h%7*100)},
			DatastorePerf: map[string]map[string]int64{},
		}
		for i := 0; i < 2; i++ {
			host.Hbas = append(host.Hbas, Hba{Device: fmt.Sprintf("vmhba%d", i+2), Model: "QLE2692", Driver: "qlnativefc", SpeedGbps: 16,
				Perf: map[string]int64{"storageAdapter.commandsAveraged.average": int64(400 * luns), "storageAdapter.numberReadAveraged.average": int64(250 * luns),
					"storageAdapter.numberWriteAveraged.average": int64(150 * luns), "storageAdapter.read.average": int64(8000 * luns),
					"storageAdapter.write.average": int64(4800 * luns), "storageAdapter.totalReadLatency.average": 3, "storageAdapter.totalWriteLatency.average": 2,
					"storageAdapter.queueLatency.average": 0, "storageAdapter.outstandingIOs.average": int64(2 * luns), "storageAdapter.queued.average": 0,
					"storageAdapter.queueDepth.average": 2048}})
		}
		for l := 0; l < luns; l++ {
			group := h / 8
			name := fmt.Sprintf("naa.60002ac%06x%06x%08x", group, l, 0x2a)
			ds := fmt.Sprintf("vmfs-g%03d-%02d", group, l)
			lun := Lun{Name: name, Display: "3PARdata Fibre Channel Disk (" + name + ")", Vendor: "3PARdata", Model: "VV", QueueDepth: 64, Datastore: ds,
				Perf: map[string]int64{"disk.commandsAveraged.average": int64(800 + l), "disk.numberReadAveraged.average": int64(500 + l),
					"disk.numberWriteAveraged.average": 300, "disk.read.average": 16000, "disk.write.average": 9600,
					"disk.deviceLatency.average": int64(2 + (h+l)%5), "disk.kernelLatency.average": 0, "disk.queueLatency.average": 0,
					"disk.totalLatency.average": int64(2 + (h+l)%5), "disk.totalReadLatency.average": 3, "disk.totalWriteLatency.average": 2,
					"disk.maxQueueDepth.average": 64, "disk.commandsAborted.summation": 0, "disk.busResets.summation": 0,
					"disk.scsiReservationConflicts.summation": 0}}
			for i := 0; i < 2; i++ {
				lun.Paths = append(lun.Paths, Path{Adapter: fmt.Sprintf("vmhba%d", i+2), Target: int32(i), State: "active",
					Perf: map[string]int64{"storagePath.commandsAveraged.average": int64(400 + l), "storagePath.numberReadAveraged.average": 250,
						"storagePath.numberWriteAveraged.average": 150, "storagePath.read.average": 8000, "storagePath.write.average": 4800,
						"storagePath.totalReadLatency.average": 3, "storagePath.totalWriteLatency.average": 2}})
			}
			host.Luns = append(host.Luns, lun)
			host.DatastorePerf[ds] = map[string]int64{"datastore.numberReadAveraged.average": int64(500 + l), "datastore.numberWriteAveraged.average": 300,
				"datastore.read.average": 16000, "datastore.write.average": 9600, "datastore.totalReadLatency.average": 3, "datastore.totalWriteLatency.average": 2}
		}
		for v := 0; v < vms && luns > 0; v++ {
			vm := Vm{Name: fmt.Sprintf("vm%04d-%02d", h, v)}
			for d := 0; d < 1+v%2; d++ {
				vm.Disks = append(vm.Disks, Vdisk{Controller: "pvscsi", Unit: int32(d), Datastore: host.Luns[(v+d)%luns].Datastore, Provisioning: "thin",
					Perf: map[string]int64{"virtualDisk.numberReadAveraged.average": int64(40 + v), "virtualDisk.numberWriteAveraged.average": 20,
						"virtualDisk.read.average": 640, "virtualDisk.write.average": 320, "virtualDisk.totalReadLatency.average": int64(2 + v%5),
						"virtualDisk.totalWriteLatency.average": 3, "virtualDisk.readOIO.latest": int64(1 + v%4), "virtualDisk.writeOIO.latest": 1}})
			}
			host.Vms = append(host.Vms, vm)
		}
		fx.Hosts = append(fx.Hosts, host)
	}
	return fx
}

func main() {
	listen := flag.String("l", "127.0.0.1:0", "listen address")
	esx := flag.Bool("esx", false, "simulate a standalone ESXi host instead of vCenter (uses the first fixture host)")
	fixture := flag.String("fixture", "", "JSON fixture of hosts, HBAs, LUNs and counter values")
	hosts := flag.Int("hosts", 4, "generated inventory: number of hosts (without -fixture)")
	luns := flag.Int("luns", 8, "generated inventory: LUNs per host")
	vmsPerHost := flag.Int("vms", 0, "generated inventory: powered-on VMs per host (one or two disks each)")
	certOut := flag.String("cert-out", "", "write the server's TLS certificate (PEM) here, for the client's CA file")
	user := flag.String("username", "user", "login user")
	pass := flag.String("password", "pass", "login password")
	maxQueryMetrics := flag.Int("max-query-metrics", 0, "vCenter's config.vpxd.stats.maxQueryMetrics advanced setting (0: not set)")
	datacenters := flag.Int("datacenters", 1, "vCenter mode: datacenters the hosts are spread over (hosts must divide evenly)")
	clusterSize := flag.Int("cluster-size", 50, "vCenter mode: most hosts per cluster")
	vsanClusters := flag.Int("vsan-clusters", 0, "generated inventory: vSAN clusters the hosts are split into (they must divide evenly; replaces -cluster-size)")
	vsanSample := flag.Int64("vsan-sample-seconds", 0, "vSAN performance service: seconds between samples (default: the fixture's, else 300)")
	flag.Parse()

	var fx *Fixture
	if *fixture != "" {
		data, err := os.ReadFile(*fixture)
		if err != nil {
			log.Fatal(err)
		}
		fx = &Fixture{}
		if err := json.Unmarshal(data, fx); err != nil {
			log.Fatalf("%s: %v", *fixture, err)
		}
	} else {
		fx = generate(*hosts, *luns, *vmsPerHost)
		if *vsanClusters > 0 {
			if *hosts%*vsanClusters != 0 || *vsanClusters%*datacenters != 0 {
				log.Fatalf("-vsan-clusters %d must divide -hosts %d and be a multiple of -datacenters %d", *vsanClusters, *hosts, *datacenters)
			}
			generateVsan(fx, *vsanClusters)
		}
	}
	if *vsanClusters > 0 && *fixture != "" {
		log.Fatalf("-vsan-clusters is for the generated inventory: %s has its own vsan section", *fixture)
	}
	vs, err := planVsan(fx, *vsanSample)
	if err != nil {
		log.Fatalf("%s: %v", orDefault(*fixture, "generated inventory"), err)
	}
	var model *simulator.Model
	if *esx {
		model = simulator.ESX()
		fx.Hosts = fx.Hosts[:1]
	} else {
		model = simulator.VPX()
		model.Host = 0
		// Hosts in clusters of at most 50 (-cluster-size): the simulator adds a host to a cluster
		// in time linear in the cluster's size, so one cluster of 1,000 takes minutes to build.
		// The model's counts are per datacenter.
		if *datacenters < 1 || len(fx.Hosts)%*datacenters != 0 {
			log.Fatalf("-datacenters %d does not divide %d hosts", *datacenters, len(fx.Hosts))
		}
		model.Datacenter = *datacenters
		perDC := len(fx.Hosts) / *datacenters
		model.Cluster = 1
		for perDC/model.Cluster > *clusterSize || perDC%model.Cluster != 0 {
			model.Cluster++
		}
		if *vsanClusters > 0 { // one simulator cluster per vSAN cluster
			model.Cluster = *vsanClusters / *datacenters
		}
		model.ClusterHost = perDC / model.Cluster
	}
	model.Machine = 0
	model.Autostart = false
	if err := model.Create(); err != nil {
		log.Fatal(err)
	}
	reg := model.Map()
	all := reg.All("HostSystem")
	sort.Slice(all, func(i, j int) bool { return all[i].Entity().Name < all[j].Entity().Name })
	if len(all) < len(fx.Hosts) {
		log.Fatalf("simulator created %d hosts, fixture has %d", len(all), len(fx.Hosts))
	}
	pm := reg.Get(*model.ServiceContent.PerfManager).(*simulator.PerformanceManager)
	perf := &PerfManager{PerformanceManager: pm, hosts: map[string]*hostStorage{}, vms: map[string]*vmPerf{}, names: map[int32]string{}}
	for _, c := range perf.PerfCounter {
		perf.names[c.Key] = c.GroupInfo.GetElementDescription().Key + "." + c.NameInfo.GetElementDescription().Key + "." + string(c.RollupType)
	}
	placed := make([]*simulator.HostSystem, len(fx.Hosts))
	for i := range fx.Hosts {
		h := all[i].(*simulator.HostSystem)
		placed[i] = h
		fh := &fx.Hosts[i]
		info, mounts, hs := buildHost(i, fh)
		mounts = vs.configureHost(h, fh, info, hs, mounts)
		h.Name = fh.Name
		h.Summary.Config.Name = fh.Name
		if fh.CpuHz > 0 && h.Hardware != nil {
			hw := *h.Hardware // the template is shared between hosts
			hw.CpuInfo.Hz = fh.CpuHz
			h.Hardware = &hw
		}
		if fh.Network != nil {
			h.Config.Network = buildNetwork(h.Config.Network, fh.Network)
		}
		h.Config.StorageDevice = info
		h.Config.FileSystemVolume = &types.HostFileSystemVolumeInfo{MountInfo: mounts}
		if ss, ok := reg.Get(*h.ConfigManager.StorageSystem).(*simulator.HostStorageSystem); ok {
			ss.StorageDeviceInfo = info
			ss.FileSystemVolumeInfo = *h.Config.FileSystemVolume
		}
		if om, ok := reg.Get(*h.ConfigManager.AdvancedOption).(*simulator.OptionManager); ok {
			om.Setting = append(om.Setting, &types.OptionValue{Key: "Disk.SchedNumReqOutstanding", Value: fh.Dsnro})
		}
		perf.hosts[h.Self.Value] = hs
		installStorageCLI(reg, h, fh)
		installSmart(h.Self.Value, fh) // smart.go
		installVaai(h.Self.Value, fh)  // vaai.go
		if len(hs.iscsi) > 0 {
			im := &IscsiManager{bound: hs.iscsi}
			im.Self = types.ManagedObjectReference{Type: "IscsiManager", Value: "iscsiManager-" + h.Self.Value}
			reg.Put(im)
			h.ConfigManager.IscsiManager = &im.Self
		}
	}
	reg.Put(perf)
	removeManagers(reg, placed) // faults.go: -no-option-manager, -no-iscsi-manager
	dsRoot, err := os.MkdirTemp("", "storagesim-ds")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dsRoot)
	if err := datastoreObjects(reg, placed, dsRoot); err != nil {
		log.Fatal(err)
	}
	installSioc(reg, perf, placed, *fixture, *esx) // sioc.go: iormConfiguration and the SIOC counters
	if !*esx {
		if err := vs.placeClusters(reg, placed); err != nil {
			log.Fatal(err)
		}
		vs.register(model.Service, reg) // /vsanHealth, before NewServer builds the mux
	}
	if *maxQueryMetrics > 0 && !*esx {
		reg.OptionManager().Setting = append(reg.OptionManager().Setting,
			&types.OptionValue{Key: "config.vpxd.stats.maxQueryMetrics", Value: fmt.Sprint(*maxQueryMetrics)})
	}

	spaceStart := installDatastores(model.Service, reg, *fixture) // datastores.go: space, snapshots
	installChanges(reg, *model.ServiceContent.ViewManager, perf, placed)
	hostStates := installHostStates(model.Service, reg, placed, *fixture, *esx) // hoststate.go: not-connected hosts, boot volumes
	installEvents(model.Service, reg, placed)                                   // events.go: storage events, collectors, POST /storagesim/events
	installChurn(model.Service, reg)                                            // churn.go: the soak's controls (a datastore grown)
	installPlacement(reg, perf)                                                 // placement.go: VMs moved on both sides, relocations refused, added hosts equipped
	installClones(reg, fx)                                                      // clones.go: an added host answers esxcli as the host it copies

	u := &url.URL{Host: *listen, User: url.UserPassword(*user, *pass)}
	model.Service.Listen = u
	model.Service.TLS = new(tls.Config)
	server := model.Service.NewServer()
	if err := createVMs(server.URL, reg, perf, placed, fx, *esx); err != nil {
		log.Fatalf("creating the fixture's VMs: %v", err)
	}
	vs.indexVMs(reg, placed, fx)
	hostStates() // the fixture's connection states and maintenance modes, its VMs running
	spaceStart() // the fixture's datastore figures and VM snapshots, then their ticks
	if *certOut != "" {
		block := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
		if err := os.WriteFile(*certOut, block, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	clean := *server.URL
	clean.User = nil
	line, _ := json.Marshal(map[string]any{"url": clean.String(), "hosts": len(fx.Hosts), "cert": *certOut})
	fmt.Println(string(line))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	server.Close()
	model.Remove()
}

// StorageCLI answers esxcli's storage commands through a host's managed method executer, as a real
// host does (govc host.esxcli, the exporter's vSphere path); every other command goes to the
// simulator's own executer. The simulator's request and answer types are internal to govmomi, so
// they are reached by reflection: the answer is the one the simulator builds for a command it
// knows, with our response put in it.
type StorageCLI struct {
	types.ManagedObjectReference
	inner   mo.Reference
	answers map[string][]map[string]string // esxcli method -> DataObjects (field -> value)
}

func (c *StorageCLI) ExecuteSoap(ctx *simulator.Context, req any) soap.HasFault {
	if res, ok := c.smart(ctx, req); ok { // smart.go: the SMART and NVMe health commands
		return res
	}
	if res, ok := c.vaai(ctx, req); ok { // vaai.go: VAAI status, VMFS3 locking options, lock modes
		return res
	}
	method := reflect.ValueOf(req).Elem().FieldByName("Method")
	rows, ok := c.answers[method.String()]
	if !ok {
		return c.call(ctx, req)
	}
	asked := method.String()
	method.SetString("vim.EsxCLI.hardware.clock.get")
	res := c.call(ctx, req)
	method.SetString(asked)
	returnval := reflect.ValueOf(res).Elem().FieldByName("Res").Elem().FieldByName("Returnval").Elem()
	returnval.FieldByName("Response").SetString(dataObjects(asked, rows))
	return res
}

func (c *StorageCLI) call(ctx *simulator.Context, req any) soap.HasFault {
	out := reflect.ValueOf(c.inner).MethodByName("ExecuteSoap").Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(req)})
	return out[0].Interface().(soap.HasFault)
}

func dataObjects(method string, rows []map[string]string) string {
	kind := strings.ReplaceAll(strings.TrimPrefix(method, "vim."), ".", "")
	var b strings.Builder
	b.WriteString(`<obj xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns="urn:vim25" versionId="5.0" xsi:type="ArrayOfDataObject">`)
	for _, row := range rows {
		fmt.Fprintf(&b, `<DataObject xsi:type="%s">`, kind)
		keys := make([]string, 0, len(row))
		for k := range row {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			var v strings.Builder
			_ = xmlEscape(&v, row[k])
			fmt.Fprintf(&b, "<%s>%s</%s>", k, v.String(), k)
		}
		b.WriteString("</DataObject>")
	}
	b.WriteString("</obj>")
	return b.String()
}

func xmlEscape(b *strings.Builder, s string) error {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
	_, err := b.WriteString(r.Replace(s))
	return err
}

func installStorageCLI(reg *simulator.Registry, h *simulator.HostSystem, fh *Host) {
	ctx := simulator.NewContext()
	ctx.Map = reg
	retrieve := reflect.ValueOf(h).MethodByName("RetrieveManagedMethodExecuter")
	retrieve.Call([]reflect.Value{reflect.ValueOf(ctx), reflect.Zero(retrieve.Type().In(1))})
	ref := types.ManagedObjectReference{Type: "ManagedMethodExecuter", Value: h.Self.Value}
	devices, nmp := []map[string]string{}, []map[string]string{}
	for _, lun := range fh.Luns {
		dsnro := lun.EsxcliDsnro
		if dsnro == 0 {
			dsnro = int32(min(atoi(fh.Dsnro), int(lun.QueueDepth)))
		}
		devices = append(devices, map[string]string{
			"Device": lun.Name, "DisplayName": lun.Display, "Vendor": lun.Vendor + "     ", "Model": lun.Model,
			"MultipathPlugin": "NMP", "Status": map[bool]string{true: "degraded", false: "on"}[lun.State == "degraded"],
			"IsSSD": fmt.Sprint(lun.Ssd), "IsLocal": fmt.Sprint(lun.Local), "IsVVOLPE": "false",
			"DeviceMaxQueueDepth": fmt.Sprint(lun.QueueDepth), "NoofoutstandingIOswithcompetingworlds": fmt.Sprint(dsnro),
			"QueueFullSampleSize": fmt.Sprint(lun.QfullSample), "QueueFullThreshold": fmt.Sprint(orDefaultInt(lun.QfullThreshold, 8)),
		})
		psp := orDefault(lun.Psp, "VMW_PSP_RR")
		config := "Current Path=" + lun.Name
		if psp == "VMW_PSP_RR" {
			config = "{policy=rr,iops=1000,bytes=10485760,useANO=0; lastPathIndex=0: NumIOsPending=0,numBytesPending=0}"
		}
		nmp = append(nmp, map[string]string{
			"Device": lun.Name, "StorageArrayType": orDefault(lun.Satp, "VMW_SATP_ALUA"),
			"PathSelectionPolicy": psp, "PathSelectionPolicyDeviceConfig": config,
		})
	}
	adapters := []map[string]string{}
	for _, hba := range fh.Hbas {
		adapters = append(adapters, map[string]string{
			"HBAName": hba.Device, "Driver": hba.Driver, "LinkState": "link-up", "UID": "fc." + hba.Device, "Description": hba.Model,
		})
	}
	// The drivers' module parameters: the LUN queue depth set on the FC driver, the iSCSI one at its default.
	params := []map[string]string{
		{"Name": "ql2xmaxqdepth", "Type": "int", "Value": "64", "Description": "Maximum queue depth to report for target devices."},
		{"Name": "iscsivmk_LunQDepth", "Type": "int", "Value": "", "Description": "Maximum Outstanding Commands Per LUN"},
	}
	reg.Put(&StorageCLI{ManagedObjectReference: ref, inner: reg.Get(ref), answers: map[string][]map[string]string{
		"vim.EsxCLI.storage.core.device.list":      devices,
		"vim.EsxCLI.storage.nmp.device.list":       nmp,
		"vim.EsxCLI.storage.core.adapter.list":     adapters,
		"vim.EsxCLI.system.module.parameters.list": params,
	}})
}

func atoi(s any) int {
	var n int
	fmt.Sscan(fmt.Sprint(s), &n)
	return n
}

func orDefaultInt(value, fallback int32) int32 {
	if value == 0 {
		return fallback
	}
	return value
}

// datastoreObjects makes each datastore the hosts mount a Datastore object of the hosts'
// datacenter, listed by its hosts (HostSystem.datastore): the fixture's mounts are only the
// hosts' view, and the simulator's VM operations (reconfigure, relocate) find each disk's
// datastore by name among its host's. Its files live under root.
func datastoreObjects(reg *simulator.Registry, hosts []*simulator.HostSystem, root string) error {
	made := map[string]*simulator.Datastore{} // datacenter/name -> object
	for _, h := range hosts {
		dc := datacenterOf(reg, h.Self).Value
		for _, mount := range h.Config.FileSystemVolume.MountInfo {
			vol := mount.Volume.GetHostFileSystemVolume()
			key := dc + "/" + vol.Name
			ds := made[key]
			if ds == nil {
				dir := path.Join(root, dc, vol.Name)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
				ds = &simulator.Datastore{}
				ds.Self = types.ManagedObjectReference{Type: "Datastore", Value: fmt.Sprintf("datastore-%s-%s", dc, vol.Name)}
				ds.Name = vol.Name
				ds.Summary = types.DatastoreSummary{Datastore: &ds.Self, Name: vol.Name, Url: dir, Capacity: vol.Capacity,
					FreeSpace: vol.Capacity / 2, Accessible: true, Type: vol.Type}
				ds.Info = &types.DatastoreInfo{Name: vol.Name, Url: dir, FreeSpace: vol.Capacity / 2}
				reg.Put(ds)
				made[key] = ds
			}
			ds.Host = append(ds.Host, types.DatastoreHostMount{Key: h.Self, MountInfo: mount.MountInfo})
			h.Datastore = append(h.Datastore, ds.Self)
		}
	}
	return nil
}

// datastoreOf is the Datastore object of this name among the host's.
func datastoreOf(reg *simulator.Registry, h *simulator.HostSystem, name string) *types.ManagedObjectReference {
	for _, ref := range h.Datastore {
		if ds, ok := reg.Get(ref).(*simulator.Datastore); ok && ds.Name == name {
			return &ref
		}
	}
	return nil
}

// lunUUID is a LUN's ScsiLun.uuid, which an RDM's backing names it by (lunUuid).
func lunUUID(name string) string {
	return "0200000000" + strings.TrimPrefix(name, "naa.") + "4c554e20432d"
}

// instancePrefix is the perf instance prefix of a controller type: scsi0:0, sata0:0, nvme0:0, ide0:0.
func instancePrefix(controller string) string {
	switch controller {
	case "ahci":
		return "sata"
	case "nvme", "ide":
		return controller
	}
	return "scsi"
}

// datacenterOf walks up from an inventory object to its datacenter.
func datacenterOf(reg *simulator.Registry, ref types.ManagedObjectReference) types.ManagedObjectReference {
	for ref.Type != "Datacenter" {
		ref = *reg.Get(ref).(mo.Entity).Entity().Parent
	}
	return ref
}

// createVMs puts each fixture host's VMs on it through the API, as a client would (CreateVM_Task,
// PowerOnVM_Task), then gives each disk its fixture backing: the simulator makes every disk a file
// on LocalDS_0, while the fixture's datastores are only the hosts' VMFS and NFS mounts, and an RDM
// needs a host LUN. Each VM's virtual disks answer their virtualDisk.* counters by instance.
func createVMs(u *url.URL, reg *simulator.Registry, perf *PerfManager, hosts []*simulator.HostSystem, fx *Fixture, esx bool) error {
	ctx := context.Background()
	c, err := govmomi.NewClient(ctx, u, true)
	if err != nil {
		return err
	}
	defer func() { _ = c.Logout(ctx) }()
	folders := map[string]*object.Folder{} // datacenter/folder -> VM folder
	var lock sync.Mutex                    // folders and perf.vms, written by the parallel hosts
	var failed error
	var wg sync.WaitGroup
	slots := make(chan struct{}, 8) // hosts whose VMs are created at once (thousands, for benchmarks)
	for i, h := range hosts {
		if len(fx.Hosts[i].Vms) == 0 {
			continue
		}
		wg.Add(1)
		slots <- struct{}{}
		go func(i int, h *simulator.HostSystem) {
			defer func() { <-slots; wg.Done() }()
			if err := createHostVMs(ctx, c, reg, perf, h, &fx.Hosts[i], esx, folders, &lock); err != nil {
				lock.Lock()
				failed = err
				lock.Unlock()
			}
		}(i, h)
	}
	wg.Wait()
	return failed
}

func createHostVMs(ctx context.Context, c *govmomi.Client, reg *simulator.Registry, perf *PerfManager, h *simulator.HostSystem,
	fh *Host, esx bool, folders map[string]*object.Folder, lock *sync.Mutex) error {
	host := object.NewHostSystem(c.Client, h.Self)
	pool, err := host.ResourcePool(ctx)
	if err != nil {
		return err
	}
	dc := object.NewDatacenter(c.Client, datacenterOf(reg, h.Self))
	dcFolders, err := dc.Folders(ctx)
	if err != nil {
		return err
	}
	for _, vm := range fh.Vms {
		folder := dcFolders.VmFolder
		if vm.Folder != "" && !esx { // a standalone host has no VM folders
			key := dc.Reference().Value + "/" + vm.Folder
			lock.Lock()
			if folders[key] == nil {
				folders[key], err = dcFolders.VmFolder.CreateFolder(ctx, vm.Folder)
			}
			folder = folders[key]
			lock.Unlock()
			if err != nil {
				return err
			}
		}
		ref, err := createVM(ctx, folder, pool, host, &vm)
		if err != nil {
			return fmt.Errorf("%s: %v", vm.Name, err)
		}
		obj := reg.Get(ref).(*simulator.VirtualMachine)
		instances := backDisks(obj, &vm, func(name string) *types.ManagedObjectReference { return datastoreOf(reg, h, name) })
		lock.Lock()
		perf.vms[ref.Value] = &vmPerf{vm: obj, instances: map[string]map[string]map[string]int64{"virtualDisk": instances}}
		lock.Unlock()
		if !vm.PoweredOff {
			task, err := object.NewVirtualMachine(c.Client, ref).PowerOn(ctx)
			if err == nil {
				_, err = task.WaitForResult(ctx, nil)
			}
			if err != nil {
				return fmt.Errorf("%s: power on: %v", vm.Name, err)
			}
		}
	}
	return nil
}

func createVM(ctx context.Context, folder *object.Folder, pool *object.ResourcePool, host *object.HostSystem, vm *Vm) (types.ManagedObjectReference, error) {
	var devices object.VirtualDeviceList
	controllers := map[string]types.BaseVirtualController{}
	for d, disk := range vm.Disks {
		key := fmt.Sprintf("%s%d", disk.Controller, disk.Bus)
		ctl, ok := controllers[key]
		if !ok {
			var dev types.BaseVirtualDevice
			var err error
			switch disk.Controller {
			case "ahci":
				dev, err = devices.CreateSATAController()
			case "nvme":
				dev, err = devices.CreateNVMEController()
			default:
				dev, err = devices.CreateSCSIController(disk.Controller)
			}
			if err != nil {
				return types.ManagedObjectReference{}, err
			}
			ctl = dev.(types.BaseVirtualController)
			ctl.GetVirtualController().BusNumber = disk.Bus
			devices = append(devices, dev)
			controllers[key] = ctl
		}
		vd := devices.CreateDisk(ctl, types.ManagedObjectReference{}, fmt.Sprintf("[LocalDS_0] %s/disk%d.vmdk", vm.Name, d))
		vd.UnitNumber = types.NewInt32(disk.Unit)
		vd.CapacityInKB = 10 << 20
		devices = append(devices, vd)
	}
	spec := types.VirtualMachineConfigSpec{Name: vm.Name, GuestId: string(types.VirtualMachineGuestOsIdentifierOtherGuest),
		Files: &types.VirtualMachineFileInfo{VmPathName: "[LocalDS_0]"}}
	var err error
	if spec.DeviceChange, err = devices.ConfigSpec(types.VirtualDeviceConfigSpecOperationAdd); err != nil {
		return types.ManagedObjectReference{}, err
	}
	task, err := folder.CreateVM(ctx, spec, pool, host)
	if err != nil {
		return types.ManagedObjectReference{}, err
	}
	info, err := task.WaitForResult(ctx, nil)
	if err != nil {
		return types.ManagedObjectReference{}, err
	}
	return info.Result.(types.ManagedObjectReference), nil
}

// backDisks gives the created VM's disks their fixture backing and storage I/O allocation, and
// returns their counters by perf instance.
func backDisks(obj *simulator.VirtualMachine, vm *Vm, datastore func(string) *types.ManagedObjectReference) map[string]map[string]int64 {
	instances := map[string]map[string]int64{}
	for _, dev := range obj.Config.Hardware.Device {
		vd, ok := dev.(*types.VirtualDisk)
		if !ok {
			continue
		}
		backing, ok := vd.Backing.(*types.VirtualDiskFlatVer2BackingInfo)
		if !ok {
			continue
		}
		var d int
		if _, err := fmt.Sscanf(path.Base(backing.FileName), "disk%d.vmdk", &d); err != nil || d >= len(vm.Disks) {
			continue
		}
		disk := vm.Disks[d]
		file := fmt.Sprintf("[%s] %s/%s.vmdk", disk.Datastore, vm.Name, vm.Name)
		if d > 0 {
			file = fmt.Sprintf("[%s] %s/%s_%d.vmdk", disk.Datastore, vm.Name, vm.Name, d)
		}
		if disk.Rdm != "" {
			vd.Backing = &types.VirtualDiskRawDiskMappingVer1BackingInfo{
				VirtualDeviceFileBackingInfo: types.VirtualDeviceFileBackingInfo{FileName: strings.TrimSuffix(file, ".vmdk") + "-rdmp.vmdk", Datastore: datastore(disk.Datastore)},
				LunUuid:                      lunUUID(disk.Rdm),
				DeviceName:                   "/vmfs/devices/disks/" + disk.Rdm,
				CompatibilityMode:            orDefault(disk.RdmMode, "physical") + "Mode",
				DiskMode:                     string(types.VirtualDiskModeIndependent_persistent),
			}
		} else {
			backing.FileName, backing.Datastore = file, datastore(disk.Datastore)
			backing.ThinProvisioned = types.NewBool(disk.Provisioning == "thin")
			backing.EagerlyScrub = types.NewBool(disk.Provisioning == "thick_eager")
		}
		limit := int64(-1) // unlimited
		if disk.IopsLimit > 0 {
			limit = disk.IopsLimit
		}
		shares := types.SharesInfo{Shares: 1000, Level: types.SharesLevelNormal}
		if disk.Shares > 0 && disk.Shares != 1000 {
			shares = types.SharesInfo{Shares: disk.Shares, Level: types.SharesLevelCustom}
		}
		vd.StorageIOAllocation = &types.StorageIOAllocationInfo{Limit: &limit, Shares: &shares}
		instances[fmt.Sprintf("%s%d:%d", instancePrefix(disk.Controller), disk.Bus, disk.Unit)] = disk.Perf
	}
	return instances
}
