// vSAN's disk management system on /vsanHealth: VsanVcDiskManagementSystem
// ("vsan-disk-management-system", wsdl type VimClusterVsanVcDiskManagementSystem)
// QueryVsanManagedDisks(host, filterSpec) -> VimVsanHostVsanManagedDisksInfo {vSANDiskMapInfo[]
// (OSA's disk groups, VimVsanHostDiskMapInfoEx), storagePools[] (ESA: one pool per host,
// storagePoolDisks[] {disk (the host's ScsiDisk, with vsanDiskInfo.vsanUuid), vsanUuid, isMounted,
// error, diskType "singleTier"})}, as the vSAN Management API reference describes it (method since
// vSAN 7.0U1; the filterSpec parameter and storagePools since API 8.0.0.1, vSAN 8.0).
//
// govmomi's vsan types (v0.46.0 to v0.52.0) have neither: their request has no filterSpec (Go's
// XML decoder would drop the element unseen) and their answer no storagePools. So this file
// defines the request, its spec and the answer in the wire form pyVmomi sends and reads, and
// registers the request as "vsan:QueryVsanManagedDisks" in place of govmomi's (this package's
// init runs after govmomi's).
//
// Refusals, as the reference lists them or a vmomi server answers:
//   - no host argument, or a reference that is not a HostSystem: ManagedObjectNotFound (this
//     simulator's choice; pyVmomi cannot send one: it checks the argument's type);
//   - a HostSystem reference to no host ("Specified host doesn't exist"), and a host that is not
//     connected to vCenter (disconnected or not responding: "Specified host is not connected to
//     vCenter server"): vim.fault.VsanFault, the fault the reference gives for both;
//   - a filterSpec whose vsanDiskType is not diskGroup, storagePool or directDisk (enum
//     VimVsanHostVsanDiskType): InvalidArgument {invalidProperty: "filterSpec.vsanDiskType"};
//   - a filterSpec while the fixture serves a vSAN API older than 8.0.0.1, which does not have the
//     parameter: vmodl.fault.InvalidRequest, "Unexpected element tag \"filterSpec\" seen", what a
//     vmomi server answers for an element its version does not know (rbvmomi#132 quotes vCenter's
//     "InvalidRequest: Unexpected element tag ... seen ... while parsing call information for
//     method ..."). pyVmomi itself leaves the parameter out under a stub version older than
//     vsan.version20, so only a client that says it speaks 8.0.0.1 or later meets this.
//
// filterSpec: vsanDiskType keeps only that kind (none: all of them); diskName keeps only the disk
// group holding that device or the pool disk of that name. A host outside every vSAN cluster
// answers an empty result. The fixture may make the call fault for a host
// (vsan.clusters[].managed_disks_faults {"<host>": FAULT}), and may mark a storage-pool disk
// {"unmounted": true} (isMounted false) or {"fault": FAULT} (its error set). Each call is logged as
// "vsan: QueryVsanManagedDisks host NAME (TYPE): N disk groups, M pool disks" or "... refused (FAULT)".
package main

import (
	"log"
	"reflect"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
	vsantypes "github.com/vmware/govmomi/vsan/types"
)

// managedDisksSince is the vSAN API that added QueryVsanManagedDisks' filterSpec and storagePools.
const managedDisksSince = "8.0.0.1"

// The kinds of vSAN disk (VimVsanHostVsanDiskType).
var vsanDiskTypes = []string{"diskGroup", "storagePool", "directDisk"}

// QueryVsanManagedDisks is the request as pyVmomi sends it from vsan.version20 on.
type QueryVsanManagedDisks struct {
	This       types.ManagedObjectReference   `xml:"_this"`
	Host       *types.ManagedObjectReference  `xml:"host,omitempty"`
	FilterSpec *VimVsanHostQueryVsanDisksSpec `xml:"filterSpec,omitempty"`
}

// VimVsanHostQueryVsanDisksSpec is vim.vsan.host.QueryVsanDisksSpec.
type VimVsanHostQueryVsanDisksSpec struct {
	types.DynamicData

	DiskName     string `xml:"diskName,omitempty"`
	VsanDiskType string `xml:"vsanDiskType,omitempty"`
}

// VimVsanHostVsanManagedDisksInfo is vim.vsan.host.VsanManagedDisksInfo with storagePools.
type VimVsanHostVsanManagedDisksInfo struct {
	types.DynamicData

	VSANDirectDisks []vsantypes.VimVsanHostVsanDirectStorage `xml:"vSANDirectDisks,omitempty"`
	VSANDiskMapInfo []vsantypes.VimVsanHostDiskMapInfoEx     `xml:"vSANDiskMapInfo,omitempty"`
	StoragePools    []VimVsanHostStoragePoolInfo             `xml:"storagePools,omitempty"`
}

// VimVsanHostStoragePoolInfo is vim.vsan.host.StoragePoolInfo.
type VimVsanHostStoragePoolInfo struct {
	types.DynamicData

	StoragePoolDisks []VimVsanHostStoragePoolDiskInfo `xml:"storagePoolDisks,omitempty"`
}

// VimVsanHostStoragePoolDiskInfo is vim.vsan.host.StoragePoolDiskInfo.
type VimVsanHostStoragePoolDiskInfo struct {
	types.DynamicData

	Disk        types.HostScsiDisk          `xml:"disk"`
	VsanUuid    string                      `xml:"vsanUuid,omitempty"`
	Error       *types.LocalizedMethodFault `xml:"error,omitempty"`
	IsMounted   *bool                       `xml:"isMounted"`
	IsEncrypted *bool                       `xml:"isEncrypted"`
	DiskType    string                      `xml:"diskType,omitempty"`
}

type queryVsanManagedDisksResponse struct {
	Returnval *VimVsanHostVsanManagedDisksInfo `xml:"returnval,omitempty"`
}

type queryVsanManagedDisksBody struct {
	Res    *queryVsanManagedDisksResponse `xml:"urn:vsan QueryVsanManagedDisksResponse,omitempty"`
	Fault_ *soap.Fault                    `xml:"http://schemas.xmlsoap.org/soap/envelope/ Fault,omitempty"`
}

func (b *queryVsanManagedDisksBody) Fault() *soap.Fault { return b.Fault_ }

func init() {
	for name, value := range map[string]any{
		"QueryVsanManagedDisks":           (*QueryVsanManagedDisks)(nil),
		"VimVsanHostQueryVsanDisksSpec":   (*VimVsanHostQueryVsanDisksSpec)(nil),
		"VimVsanHostVsanManagedDisksInfo": (*VimVsanHostVsanManagedDisksInfo)(nil),
		"VimVsanHostStoragePoolInfo":      (*VimVsanHostStoragePoolInfo)(nil),
		"VimVsanHostStoragePoolDiskInfo":  (*VimVsanHostStoragePoolDiskInfo)(nil),
	} {
		types.Add("vsan:"+name, reflect.TypeOf(value).Elem())
	}
}

// VsanVcDiskManagementSystem answers a host's vSAN disks from the plan and the inventory.
type VsanVcDiskManagementSystem struct {
	types.ManagedObjectReference
	plan      *vsanPlan
	inventory *simulator.Registry // /sdk's: the hosts and their connection state
}

var vsanDiskManagementSystem = types.ManagedObjectReference{Type: "VimClusterVsanVcDiskManagementSystem", Value: "vsan-disk-management-system"}

func (s *VsanVcDiskManagementSystem) QueryVsanManagedDisks(ctx *simulator.Context, req *QueryVsanManagedDisks) soap.HasFault {
	body := &queryVsanManagedDisksBody{}
	info, fault := s.answer(req)
	if fault != nil {
		body.Fault_ = fault
	} else {
		body.Res = &queryVsanManagedDisksResponse{Returnval: info}
	}
	return body
}

func (s *VsanVcDiskManagementSystem) answer(req *QueryVsanManagedDisks) (*VimVsanHostVsanManagedDisksInfo, *soap.Fault) {
	refuse := func(what, message string, fault types.BaseMethodFault) *soap.Fault {
		log.Printf("vsan: QueryVsanManagedDisks %s refused (%T): %s", what, fault, message)
		return simulator.Fault(message, fault)
	}
	if req.Host == nil || req.Host.Type != "HostSystem" {
		ref := types.ManagedObjectReference{}
		if req.Host != nil {
			ref = *req.Host
		}
		return nil, refuse("host "+ref.Value, "", &types.ManagedObjectNotFound{Obj: ref})
	}
	h, _ := s.inventory.Get(*req.Host).(*simulator.HostSystem)
	if h == nil {
		return nil, refuse("host "+req.Host.Value, "Specified host doesn't exist: "+req.Host.Value, &types.VsanFault{})
	}
	what := "host " + h.Name
	if spec := req.FilterSpec; spec != nil {
		if indexOf(vsanAPIVersions, s.plan.version) > indexOf(vsanAPIVersions, managedDisksSince) {
			return nil, refuse(what, "Unexpected element tag \"filterSpec\" seen\n\nwhile parsing call information for method QueryVsanManagedDisks", &types.InvalidRequest{})
		}
		if spec.VsanDiskType != "" && !contains(vsanDiskTypes, spec.VsanDiskType) {
			return nil, refuse(what, "A specified parameter was not correct: filterSpec.vsanDiskType", &types.InvalidArgument{InvalidProperty: "filterSpec.vsanDiskType"})
		}
		what += " (" + spec.VsanDiskType + spec.DiskName + ")"
	}
	if state := h.Runtime.ConnectionState; state != types.HostSystemConnectionStateConnected {
		return nil, refuse(what, "Specified host is not connected to vCenter server: "+h.Name+" is "+string(state), &types.VsanFault{})
	}
	cp := s.plan.byHost[h.Name]
	if cp != nil {
		if fault, ok := cp.fx.ManagedDisksFaults[h.Name]; ok {
			return nil, refuse(what, "", vsanFaults[fault]()) // the fixture's
		}
	}
	info := &VimVsanHostVsanManagedDisksInfo{}
	if cp == nil {
		log.Printf("vsan: QueryVsanManagedDisks %s: no vSAN cluster", what)
		return info, nil
	}
	kind, name := "", ""
	if req.FilterSpec != nil {
		kind, name = req.FilterSpec.VsanDiskType, req.FilterSpec.DiskName
	}
	if kind == "" || kind == "diskGroup" {
		for _, group := range h.Config.VsanHostConfig.StorageInfo.DiskMapInfo {
			if name != "" && !mappingHolds(group.Mapping, name) {
				continue
			}
			flash := group.Mapping.Ssd.Ssd != nil && *group.Mapping.Ssd.Ssd
			for _, d := range group.Mapping.NonSsd {
				flash = flash && d.Ssd != nil && *d.Ssd
			}
			info.VSANDiskMapInfo = append(info.VSANDiskMapInfo, vsantypes.VimVsanHostDiskMapInfoEx{
				Mapping: group.Mapping, IsMounted: group.Mounted, IsAllFlash: flash})
		}
	}
	disks := 0
	if (kind == "" || kind == "storagePool") && cp.fx.Esa {
		pool := VimVsanHostStoragePoolInfo{}
		for _, disk := range s.plan.poolDisks[h.Name] {
			use := cp.disks[disk.CanonicalName]
			if use == nil || name != "" && disk.CanonicalName != name {
				continue
			}
			entry := VimVsanHostStoragePoolDiskInfo{Disk: disk, VsanUuid: use.disk.VsanUuid,
				IsMounted: types.NewBool(!use.disk.Unmounted), IsEncrypted: types.NewBool(false), DiskType: "singleTier"}
			if use.disk.Fault != "" {
				entry.Error = &types.LocalizedMethodFault{Fault: vsanFaults[use.disk.Fault](), LocalizedMessage: "simulated by the fixture"}
			}
			pool.StoragePoolDisks = append(pool.StoragePoolDisks, entry)
		}
		disks = len(pool.StoragePoolDisks)
		if disks > 0 {
			info.StoragePools = append(info.StoragePools, pool)
		}
	}
	log.Printf("vsan: QueryVsanManagedDisks %s: %d disk groups, %d pool disks", what, len(info.VSANDiskMapInfo), disks)
	return info, nil
}

// mappingHolds: the disk group's cache or a capacity disk is the device.
func mappingHolds(mapping types.VsanHostDiskMapping, device string) bool {
	if mapping.Ssd.CanonicalName == device {
		return true
	}
	for _, d := range mapping.NonSsd {
		if d.CanonicalName == device {
			return true
		}
	}
	return false
}
