// Changes made through the API, reported to the property collector as vCenter reports them.
//
// The govmomi simulator changes some objects without telling its property collector, and tells
// it too much about others. Here, for the exporter's tests of following vCenter's changes:
//
//   - Views: a container view's membership follows objects created and destroyed under its
//     container, with the subtypes of its types (the stock view misses ClusterComputeResource
//     under ComputeResource and walks the inventory for each object created). A list view
//     reports its own changes; the property collector, patched (testdata/simulator), then sends
//     only the objects that entered or left, as vCenter does.
//   - Hosts: DisconnectHost_Task and ReconnectHost_Task change runtime.connectionState without an
//     update; here the change is reported when the task ends.
//   - Storage: HostStorageSystem.DisableMultipathPath, EnableMultipathPath and
//     SetMultipathLunPolicy, and HostDatastoreSystem.CreateNasDatastore and RemoveDatastore change
//     the host's config.storageDevice.multipathInfo and config.fileSystemVolume.mountInfo (the
//     stock simulator has the first three not at all and changes no mount with the last two).
//   - Counters: a host added or a VM created after start answers QueryPerf with values for its
//     own devices, LUNs, paths, datastores and virtual disks (see PerfManager.entity).
package main

import (
	"fmt"
	"path"
	"strings"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// --- views ---------------------------------------------------------------------------------

// ViewManager creates the views below instead of the stock ones.
type ViewManager struct {
	*simulator.ViewManager
}

// containerView: every object of its types under its container.
type containerView struct {
	mo.ContainerView
	types map[string]bool // empty: every type
}

var subtypes = map[string][]string{
	"ComputeResource": {"ClusterComputeResource"},
	"ManagedEntity": {"Folder", "Datacenter", "ComputeResource", "ClusterComputeResource", "HostSystem", "VirtualMachine",
		"VirtualApp", "ResourcePool", "Datastore", "Network", "DistributedVirtualPortgroup", "VmwareDistributedVirtualSwitch"},
}

func (m *ViewManager) CreateContainerView(ctx *simulator.Context, req *types.CreateContainerView) soap.HasFault {
	body := &methods.CreateContainerViewBody{}
	if ctx.Map.Get(req.Container) == nil {
		body.Fault_ = simulator.Fault("", &types.ManagedObjectNotFound{Obj: req.Container})
		return body
	}
	v := &containerView{types: map[string]bool{}}
	v.Self = types.ManagedObjectReference{Type: "ContainerView"}
	v.Container, v.Recursive, v.Type = req.Container, req.Recursive, req.Type
	for _, t := range req.Type {
		v.types[t] = true
		for _, sub := range subtypes[t] {
			v.types[sub] = true
		}
	}
	for _, obj := range ctx.Map.AllReference("") {
		if ref := obj.Reference(); v.includes(ctx, ref) {
			v.View = append(v.View, ref)
		}
	}
	ctx.Session.Put(v)
	ctx.Map.AddHandler(v)
	body.Res = &types.CreateContainerViewResponse{Returnval: v.Self}
	return body
}

// includes: of its types, and under its container (its parent, if not recursive).
func (v *containerView) includes(ctx *simulator.Context, ref types.ManagedObjectReference) bool {
	if len(v.types) != 0 && !v.types[ref.Type] {
		return false
	}
	for depth := 0; depth < 64; depth++ {
		entity, ok := ctx.Map.Get(ref).(mo.Entity)
		if !ok {
			return false
		}
		parent := entity.Entity().Parent
		if parent == nil {
			if vm, ok := ctx.Map.Get(ref).(*simulator.VirtualMachine); ok && vm.ParentVApp != nil {
				parent = vm.ParentVApp
			} else {
				return false
			}
		}
		if *parent == v.Container {
			return true
		}
		if !v.Recursive {
			return false
		}
		ref = *parent
	}
	return false
}

func (v *containerView) PutObject(ctx *simulator.Context, obj mo.Reference) {
	ref := obj.Reference()
	if v.includes(ctx, ref) {
		ctx.WithLock(v, func() { v.View = append(v.View, ref) })
	}
}

func (v *containerView) RemoveObject(ctx *simulator.Context, ref types.ManagedObjectReference) {
	ctx.WithLock(v, func() { simulator.RemoveReference(&v.View, ref) })
}

func (*containerView) UpdateObject(*simulator.Context, mo.Reference, []types.PropertyChange) {}

func (v *containerView) DestroyView(ctx *simulator.Context, c *types.DestroyView) soap.HasFault {
	ctx.Map.RemoveHandler(v)
	ctx.Session.Remove(ctx, c.This)
	return &methods.DestroyViewBody{Res: &types.DestroyViewResponse{}}
}

// listView: the objects its client chose.
type listView struct {
	mo.ListView
}

func (m *ViewManager) CreateListView(ctx *simulator.Context, req *types.CreateListView) soap.HasFault {
	body := &methods.CreateListViewBody{}
	v := &listView{}
	v.Self = types.ManagedObjectReference{Type: "ListView"}
	if missing := v.add(ctx, req.Obj); len(missing) != 0 {
		body.Fault_ = simulator.Fault("", &types.ManagedObjectNotFound{Obj: missing[0]})
		return body
	}
	ctx.Session.Put(v)
	body.Res = &types.CreateListViewResponse{Returnval: v.Self}
	return body
}

func (v *listView) add(ctx *simulator.Context, refs []types.ManagedObjectReference) []types.ManagedObjectReference {
	var missing []types.ManagedObjectReference
	for _, ref := range refs {
		if ctx.Session.Get(ref) == nil {
			missing = append(missing, ref)
		}
		v.View = append(v.View, ref)
	}
	return missing
}

// announce reports the list's change: filters over it select again, and what entered or left is sent.
func (v *listView) announce(ctx *simulator.Context) {
	ctx.Map.Update(ctx, v, []types.PropertyChange{{Name: "view", Val: v.View}})
}

func (v *listView) ModifyListView(ctx *simulator.Context, req *types.ModifyListView) soap.HasFault {
	body := &methods.ModifyListViewBody{Res: &types.ModifyListViewResponse{}}
	ctx.WithLock(v, func() {
		body.Res.Returnval = v.add(ctx, req.Add)
		for _, ref := range req.Remove {
			simulator.RemoveReference(&v.View, ref)
		}
	})
	if len(req.Add) != 0 || len(req.Remove) != 0 {
		v.announce(ctx)
	}
	return body
}

func (v *listView) ResetListView(ctx *simulator.Context, req *types.ResetListView) soap.HasFault {
	body := &methods.ResetListViewBody{Res: &types.ResetListViewResponse{}}
	ctx.WithLock(v, func() {
		v.View = nil
		body.Res.Returnval = v.add(ctx, req.Obj)
	})
	v.announce(ctx)
	return body
}

func (v *listView) DestroyView(ctx *simulator.Context, c *types.DestroyView) soap.HasFault {
	ctx.Session.Remove(ctx, c.This)
	return &methods.DestroyViewBody{Res: &types.DestroyViewResponse{}}
}

// --- hosts' connection state -----------------------------------------------------------------

// hostTaskNotifier reports the host property a host task changed when the task ends (the stock
// tasks set it without an update): the task's description id -> that property as the host now has it.
type hostTaskNotifier struct {
	self    types.ManagedObjectReference
	changed map[string]func(*simulator.HostSystem) types.PropertyChange
}

func (n *hostTaskNotifier) Reference() types.ManagedObjectReference { return n.self }

func (*hostTaskNotifier) PutObject(*simulator.Context, mo.Reference) {}

func (*hostTaskNotifier) RemoveObject(*simulator.Context, types.ManagedObjectReference) {}

func (n *hostTaskNotifier) UpdateObject(ctx *simulator.Context, obj mo.Reference, changes []types.PropertyChange) {
	task, ok := obj.(*mo.Task) // the registry hands its handlers the managed object inside
	if !ok {
		return
	}
	for _, change := range changes {
		if change.Name != "info.state" || change.Val != types.TaskInfoStateSuccess {
			continue
		}
		property, ok := n.changed[task.Info.DescriptionId]
		if !ok {
			continue
		}
		if host, ok := ctx.Map.Get(*task.Info.Entity).(*simulator.HostSystem); ok {
			go ctx.Map.Update(ctx, host, []types.PropertyChange{property(host)})
		}
	}
}

func connectionStateOf(h *simulator.HostSystem) types.PropertyChange {
	return types.PropertyChange{Name: "runtime.connectionState", Val: h.Runtime.ConnectionState}
}

func maintenanceModeOf(h *simulator.HostSystem) types.PropertyChange {
	return types.PropertyChange{Name: "runtime.inMaintenanceMode", Val: h.Runtime.InMaintenanceMode}
}

// --- storage changes ---------------------------------------------------------------------------

// StorageSystem is a host's HostStorageSystem with the multipathing calls.
type StorageSystem struct {
	*simulator.HostStorageSystem
	host *simulator.HostSystem
}

func (s *StorageSystem) multipathChanged(ctx *simulator.Context) {
	ctx.Map.Update(ctx, s.host, []types.PropertyChange{
		{Name: "config.storageDevice.multipathInfo", Val: s.host.Config.StorageDevice.MultipathInfo},
	})
}

func (s *StorageSystem) setPathState(ctx *simulator.Context, name, state string) types.BaseMethodFault {
	found := false
	ctx.WithLock(s.host, func() {
		info := s.host.Config.StorageDevice.MultipathInfo
		for l := range info.Lun {
			for p := range info.Lun[l].Path {
				if path := &info.Lun[l].Path[p]; path.Name == name {
					path.State, path.PathState, path.IsWorkingPath = state, state, types.NewBool(state == "active")
					found = true
				}
			}
		}
	})
	if !found {
		return &types.NotFound{}
	}
	s.multipathChanged(ctx)
	return nil
}

func (s *StorageSystem) DisableMultipathPath(ctx *simulator.Context, req *types.DisableMultipathPath) soap.HasFault {
	body := &methods.DisableMultipathPathBody{Res: &types.DisableMultipathPathResponse{}}
	if fault := s.setPathState(ctx, req.PathName, "disabled"); fault != nil {
		body.Fault_, body.Res = simulator.Fault("", fault), nil
	}
	return body
}

func (s *StorageSystem) EnableMultipathPath(ctx *simulator.Context, req *types.EnableMultipathPath) soap.HasFault {
	body := &methods.EnableMultipathPathBody{Res: &types.EnableMultipathPathResponse{}}
	if fault := s.setPathState(ctx, req.PathName, "active"); fault != nil {
		body.Fault_, body.Res = simulator.Fault("", fault), nil
	}
	return body
}

func (s *StorageSystem) SetMultipathLunPolicy(ctx *simulator.Context, req *types.SetMultipathLunPolicy) soap.HasFault {
	body := &methods.SetMultipathLunPolicyBody{Res: &types.SetMultipathLunPolicyResponse{}}
	found := false
	ctx.WithLock(s.host, func() {
		info := s.host.Config.StorageDevice.MultipathInfo
		for l := range info.Lun {
			if info.Lun[l].Id == req.LunId || info.Lun[l].Key == req.LunId {
				info.Lun[l].Policy = req.Policy
				found = true
			}
		}
	})
	if !found {
		body.Fault_, body.Res = simulator.Fault("", &types.NotFound{}), nil
		return body
	}
	s.multipathChanged(ctx)
	return body
}

// DatastoreSystem is a host's HostDatastoreSystem whose NAS mounts reach the host's mounts.
type DatastoreSystem struct {
	*simulator.HostDatastoreSystem
	host *simulator.HostSystem
	perf *PerfManager
}

func (d *DatastoreSystem) mountsChanged(ctx *simulator.Context) {
	ctx.Map.Update(ctx, d.host, []types.PropertyChange{
		{Name: "config.fileSystemVolume.mountInfo", Val: d.host.Config.FileSystemVolume.MountInfo},
	})
}

func (d *DatastoreSystem) CreateNasDatastore(ctx *simulator.Context, req *types.CreateNasDatastore) soap.HasFault {
	body := &methods.CreateNasDatastoreBody{}
	spec := req.Spec
	if spec.RemoteHost == "" || spec.RemotePath == "" || spec.LocalPath == "" {
		body.Fault_ = simulator.Fault("", &types.InvalidArgument{InvalidProperty: "spec"})
		return body
	}
	kind := strings.ToUpper(spec.Type)
	if kind == "" {
		kind = "NFS"
	}
	name, id := path.Base(spec.LocalPath), nfsID(path.Base(spec.LocalPath))
	ds := &simulator.Datastore{}
	ds.Self = types.ManagedObjectReference{Type: "Datastore", Value: fmt.Sprintf("datastore-%s-%s", d.host.Self.Value, name)}
	ds.Name = name
	ds.Summary = types.DatastoreSummary{Datastore: &ds.Self, Name: name, Url: "/vmfs/volumes/" + id, Accessible: true, Type: kind}
	ds.Info = &types.NasDatastoreInfo{DatastoreInfo: types.DatastoreInfo{Name: name, Url: "/vmfs/volumes/" + id}}
	ctx.Map.Put(ds)
	mount := types.HostFileSystemMountInfo{
		MountInfo: types.HostMountInfo{Path: "/vmfs/volumes/" + id, AccessMode: "readWrite", Mounted: types.NewBool(true), Accessible: types.NewBool(true)},
		Volume: &types.HostNasVolume{
			HostFileSystemVolume: types.HostFileSystemVolume{Type: kind, Name: name, Capacity: 1 << 40},
			RemoteHost:           spec.RemoteHost, RemotePath: spec.RemotePath, RemoteHostNames: []string{spec.RemoteHost},
		},
	}
	ctx.WithLock(d.host, func() {
		d.host.Config.FileSystemVolume.MountInfo = append(d.host.Config.FileSystemVolume.MountInfo, mount)
		d.host.Datastore = append(d.host.Datastore, ds.Self)
	})
	d.perf.setInstance(d.host.Self.Value, "datastore", id, genericPerf("datastore", 0))
	d.mountsChanged(ctx)
	body.Res = &types.CreateNasDatastoreResponse{Returnval: ds.Self}
	return body
}

func (d *DatastoreSystem) RemoveDatastore(ctx *simulator.Context, req *types.RemoveDatastore) soap.HasFault {
	body := &methods.RemoveDatastoreBody{}
	ds, ok := ctx.Map.Get(req.Datastore).(*simulator.Datastore)
	if !ok {
		body.Fault_ = simulator.Fault("", &types.ManagedObjectNotFound{Obj: req.Datastore})
		return body
	}
	found := false
	ctx.WithLock(d.host, func() {
		mounts := d.host.Config.FileSystemVolume.MountInfo[:0]
		for _, mount := range d.host.Config.FileSystemVolume.MountInfo {
			if mount.Volume != nil && mount.Volume.GetHostFileSystemVolume().Name == ds.Name {
				found = true
				continue
			}
			mounts = append(mounts, mount)
		}
		d.host.Config.FileSystemVolume.MountInfo = mounts
		simulator.RemoveReference(&d.host.Datastore, ds.Self)
	})
	if !found {
		body.Fault_ = simulator.Fault("", &types.NotFound{})
		return body
	}
	d.mountsChanged(ctx)
	body.Res = &types.RemoveDatastoreResponse{}
	return body
}

// installChanges puts the above in place of the stock objects.
func installChanges(reg *simulator.Registry, viewManager types.ManagedObjectReference, perf *PerfManager, hosts []*simulator.HostSystem) {
	if stock, ok := reg.Get(viewManager).(*simulator.ViewManager); ok {
		reg.Put(&ViewManager{ViewManager: stock})
	}
	reg.AddHandler(&hostTaskNotifier{
		self: types.ManagedObjectReference{Type: "StorageSimNotifier", Value: "host-tasks"},
		changed: map[string]func(*simulator.HostSystem) types.PropertyChange{
			"HostSystem.disconnectHost":       connectionStateOf,
			"HostSystem.reconnectHost":        connectionStateOf,
			"HostSystem.enterMaintenanceMode": maintenanceModeOf,
			"HostSystem.exitMaintenanceMode":  maintenanceModeOf,
		},
	})
	for _, h := range hosts {
		if ss, ok := reg.Get(*h.ConfigManager.StorageSystem).(*simulator.HostStorageSystem); ok {
			reg.Put(&StorageSystem{HostStorageSystem: ss, host: h})
		}
		if ds, ok := reg.Get(*h.ConfigManager.DatastoreSystem).(*simulator.HostDatastoreSystem); ok {
			reg.Put(&DatastoreSystem{HostDatastoreSystem: ds, host: h, perf: perf})
		}
	}
}

// --- counters of what came after start ------------------------------------------------------------

// genericPerf is one instance's counters of a group, as the generated inventory has them.
func genericPerf(group string, i int) map[string]int64 {
	switch group {
	case "disk":
		return map[string]int64{"disk.commandsAveraged.average": int64(800 + i), "disk.numberReadAveraged.average": int64(500 + i),
			"disk.numberWriteAveraged.average": 300, "disk.read.average": 16000, "disk.write.average": 9600,
			"disk.deviceLatency.average": 3, "disk.kernelLatency.average": 0, "disk.queueLatency.average": 0,
			"disk.totalLatency.average": 3, "disk.totalReadLatency.average": 3, "disk.totalWriteLatency.average": 2,
			"disk.maxQueueDepth.average": 64, "disk.commandsAborted.summation": 0, "disk.busResets.summation": 0,
			"disk.scsiReservationConflicts.summation": 0}
	case "storageAdapter":
		return map[string]int64{"storageAdapter.commandsAveraged.average": 3200, "storageAdapter.numberReadAveraged.average": 2000,
			"storageAdapter.numberWriteAveraged.average": 1200, "storageAdapter.read.average": 64000,
			"storageAdapter.write.average": 38400, "storageAdapter.totalReadLatency.average": 3, "storageAdapter.totalWriteLatency.average": 2,
			"storageAdapter.queueLatency.average": 0, "storageAdapter.outstandingIOs.average": 16, "storageAdapter.queued.average": 0,
			"storageAdapter.queueDepth.average": 2048}
	case "storagePath":
		return map[string]int64{"storagePath.commandsAveraged.average": int64(400 + i), "storagePath.numberReadAveraged.average": 250,
			"storagePath.numberWriteAveraged.average": 150, "storagePath.read.average": 8000, "storagePath.write.average": 4800,
			"storagePath.totalReadLatency.average": 3, "storagePath.totalWriteLatency.average": 2}
	case "datastore":
		return map[string]int64{"datastore.numberReadAveraged.average": int64(500 + i), "datastore.numberWriteAveraged.average": 300,
			"datastore.read.average": 16000, "datastore.write.average": 9600, "datastore.totalReadLatency.average": 3,
			"datastore.totalWriteLatency.average": 2}
	case "virtualDisk":
		return map[string]int64{"virtualDisk.numberReadAveraged.average": int64(40 + i), "virtualDisk.numberWriteAveraged.average": 20,
			"virtualDisk.read.average": 640, "virtualDisk.write.average": 320, "virtualDisk.totalReadLatency.average": 2,
			"virtualDisk.totalWriteLatency.average": 3, "virtualDisk.readOIO.latest": 1, "virtualDisk.writeOIO.latest": 1}
	}
	return map[string]int64{"cpu.usage.average": 1500, "cpu.usagemhz.average": 4200}
}

// derivedHost: the counters of a host the fixture did not describe (added after start), one
// instance per LUN, adapter, path and mounted datastore of its own configuration.
func derivedHost(h *simulator.HostSystem) *hostStorage {
	hs := &hostStorage{instances: map[string]map[string]map[string]int64{
		"disk": {}, "storageAdapter": {}, "storagePath": {}, "datastore": {}, "cpu": {"": genericPerf("cpu", 0)},
	}}
	if h.Config == nil {
		return hs
	}
	if info := h.Config.StorageDevice; info != nil {
		for i, lun := range info.ScsiLun {
			hs.instances["disk"][lun.GetScsiLun().CanonicalName] = genericPerf("disk", i)
		}
		for i, hba := range info.HostBusAdapter {
			hs.instances["storageAdapter"][hba.GetHostHostBusAdapter().Device] = genericPerf("storageAdapter", i)
		}
		if info.PlugStoreTopology != nil {
			for i, p := range info.PlugStoreTopology.Path {
				hs.instances["storagePath"][p.Name] = genericPerf("storagePath", i)
			}
		}
	}
	if h.Config.FileSystemVolume != nil {
		for i, mount := range h.Config.FileSystemVolume.MountInfo {
			hs.instances["datastore"][path.Base(mount.MountInfo.Path)] = genericPerf("datastore", i)
		}
	}
	return hs
}

// derivedVM: the counters of a VM created after start, one instance per virtual disk.
func derivedVM(vm *simulator.VirtualMachine) *vmPerf {
	disks := map[string]map[string]int64{}
	if vm.Config != nil {
		buses := map[int32]string{}
		for _, device := range vm.Config.Hardware.Device {
			prefix := ""
			switch device.(type) {
			case types.BaseVirtualSCSIController:
				prefix = "scsi"
			case *types.VirtualAHCIController, *types.VirtualSATAController:
				prefix = "sata"
			case *types.VirtualNVMEController:
				prefix = "nvme"
			case *types.VirtualIDEController:
				prefix = "ide"
			}
			if controller, ok := device.(types.BaseVirtualController); ok && prefix != "" {
				c := controller.GetVirtualController()
				buses[c.Key] = fmt.Sprintf("%s%d", prefix, c.BusNumber)
			}
		}
		for i, device := range vm.Config.Hardware.Device {
			if disk, ok := device.(*types.VirtualDisk); ok && disk.UnitNumber != nil && buses[disk.ControllerKey] != "" {
				disks[fmt.Sprintf("%s:%d", buses[disk.ControllerKey], *disk.UnitNumber)] = genericPerf("virtualDisk", i)
			}
		}
	}
	return &vmPerf{vm: vm, instances: map[string]map[string]map[string]int64{"virtualDisk": disks}, derived: true}
}

func (p *PerfManager) setInstance(host, group, instance string, values map[string]int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	hs, ok := p.hosts[host]
	if !ok {
		return
	}
	// copied, not changed: a QueryPerf running now reads the maps it was given without the lock
	all := make(map[string]map[string]map[string]int64, len(hs.instances))
	for g, instances := range hs.instances {
		all[g] = instances
	}
	one := make(map[string]map[string]int64, len(all[group])+1)
	for i, v := range all[group] {
		one[i] = v
	}
	one[instance] = values
	all[group] = one
	hs.instances = all
}
