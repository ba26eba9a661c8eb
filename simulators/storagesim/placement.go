// Where a VM runs, kept on both sides as vCenter keeps it, and hosts added at run time given the
// fixture hosts' managers (the churn soak, issue 45).
//
// govmomi's RelocateVM_Task (vMotion, Storage vMotion) changes a VM's runtime.host and datastore
// but neither host's nor datastore's vm list (it removes the target's own reference from the
// target's list: a no-op). The host a VM moved to then did not list it: Destroy_Task, which
// refuses a host with VMs (ResourceInUse) by its own list, removed the host with the VM on it, and
// the next call on the VM that looks its host up (power on or off, destroy) panicked the whole
// simulator ("mo.Reference is nil, not *simulator.HostSystem"); the host it left kept listing it,
// even once destroyed (ManagedObjectNotFound to a client reading that host's VMs). Here:
//
//   - every change of a VM's runtime.host or datastore moves the VM in the hosts' and datastores'
//     vm lists, reported to the property collector (placement.UpdateObject);
//   - RelocateVM_Task is refused as the vSphere API reference documents it, the task failing:
//     InvalidArgument for a target host or datastore that does not exist ("the object specified
//     in relocate cannot be found"), InvalidState for a target host not connected or in
//     maintenance mode ("if the host is in maintenance mode"), MaintenanceModeFileMove for a
//     Storage vMotion off a host in maintenance mode, InvalidDatastore for a datastore the target
//     host does not mount, the VM's or one its disks' files are on ("if the operation cannot be
//     performed on the target datastores");
//   - HostSystem.Destroy_Task fails with ResourceInUse while any VM runs on the host (its
//     runtime.host), whatever the host's list says, before churn.go forgets the host;
//   - a host added after start (AddHost_Task) gets the datastore and storage systems of
//     changes.go as the fixture's hosts have them, at their first call (CreateNasDatastore and
//     RemoveDatastore that change its mounts; the stock datastore system has no RemoveDatastore:
//     MethodNotFound), and hoststate.go's refusals once disconnected (HostNotConnected from its
//     managers, as vCenter).
package main

import (
	"fmt"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// installPlacement keeps VMs' placement consistent, refuses what vCenter refuses, and equips
// hosts added later. Install after installChurn: its refusals run before churn.go's hook.
func installPlacement(reg *simulator.Registry, perf *PerfManager) {
	reg.AddHandler(&placement{self: types.ManagedObjectReference{Type: "StorageSimPlacement", Value: "placement"}})
	refusals := reg.Put(&refuser{self: types.ManagedObjectReference{Type: "StorageSimRefuser", Value: "placement"}})
	previous := reg.Handler
	reg.Handler = func(ctx *simulator.Context, method *simulator.Method) (mo.Reference, types.BaseMethodFault) {
		if method.This.Type == "HostDatastoreSystem" || method.This.Type == "HostStorageSystem" {
			equip(ctx, perf, method.This)
		}
		if refused := refusePlacement(ctx, method); refused != nil {
			// the simulator looks the object up again by method.This after this hook (events.go):
			// the call goes to the refuser, its body the refusal
			method.This, method.Body = refusals.Reference(), refused
			return refusals, nil
		}
		if previous != nil {
			return previous(ctx, method)
		}
		return nil, nil
	}
}

// placement is a registry handler: it follows VMs' moves and hosts' arrivals.
type placement struct {
	self types.ManagedObjectReference
}

func (p *placement) Reference() types.ManagedObjectReference { return p.self }

func (*placement) RemoveObject(*simulator.Context, types.ManagedObjectReference) {}

// PutObject: a host put in the registry after start (AddHost_Task) gets a list of its own.
func (p *placement) PutObject(_ *simulator.Context, obj mo.Reference) {
	if h, ok := obj.(*simulator.HostSystem); ok {
		// the added host's list shares its template's array: an append to one must not reach the other
		h.Datastore = append([]types.ManagedObjectReference(nil), h.Datastore...)
	}
}

// equip gives a host added after start changes.go's datastore or storage system at the first call
// to it (not when the host is put: AddHost_Task in a vSAN cluster still needs the stock type).
func equip(ctx *simulator.Context, perf *PerfManager, ref types.ManagedObjectReference) {
	owner := func(manager func(*simulator.HostSystem) *types.ManagedObjectReference) *simulator.HostSystem {
		for _, e := range ctx.Map.All("HostSystem") {
			if h, ok := e.(*simulator.HostSystem); ok && manager(h) != nil && *manager(h) == ref {
				return h
			}
		}
		return nil
	}
	switch stock := ctx.Map.Get(ref).(type) {
	case *simulator.HostDatastoreSystem:
		if h := owner(func(h *simulator.HostSystem) *types.ManagedObjectReference { return h.ConfigManager.DatastoreSystem }); h != nil {
			ctx.Map.Put(&DatastoreSystem{HostDatastoreSystem: stock, host: h, perf: perf})
		}
	case *simulator.HostStorageSystem:
		if h := owner(func(h *simulator.HostSystem) *types.ManagedObjectReference { return h.ConfigManager.StorageSystem }); h != nil {
			ctx.Map.Put(&StorageSystem{HostStorageSystem: stock, host: h})
		}
	}
}

// UpdateObject: a VM's new host or datastores take it in their vm lists, the others let it go.
func (p *placement) UpdateObject(ctx *simulator.Context, obj mo.Reference, changes []types.PropertyChange) {
	vm, ok := obj.(*mo.VirtualMachine) // the registry hands its handlers the managed object inside
	if !ok {
		return
	}
	for _, change := range changes {
		switch {
		case change.Name == "runtime.host" && vm.Runtime.Host != nil:
			follow(ctx, "HostSystem", vm.Self, []types.ManagedObjectReference{*vm.Runtime.Host})
		case change.Name == "datastore":
			follow(ctx, "Datastore", vm.Self, vm.Datastore)
		}
	}
}

// follow puts vm in the vm list of each object of the kind in `on` and takes it out of the others'.
func follow(ctx *simulator.Context, kind string, vm types.ManagedObjectReference, on []types.ManagedObjectReference) {
	for _, e := range ctx.Map.All(kind) {
		var list *[]types.ManagedObjectReference
		switch o := e.(type) {
		case *simulator.HostSystem:
			list = &o.Vm
		case *simulator.Datastore:
			list = &o.Vm
		default:
			continue
		}
		ctx.WithLock(e, func() {
			want, has := simulator.FindReference(on, e.Reference()) != nil, simulator.FindReference(*list, vm) != nil
			if want == has {
				return
			}
			kept := append([]types.ManagedObjectReference(nil), *list...)
			if want {
				kept = append(kept, vm)
			} else {
				simulator.RemoveReference(&kept, vm)
			}
			ctx.Map.Update(ctx, e, []types.PropertyChange{{Name: "vm", Val: kept}})
		})
	}
}

// refusePlacement is the refusal of a relocation or a host removal vCenter refuses, or nil.
func refusePlacement(ctx *simulator.Context, method *simulator.Method) *refusal {
	var fault types.BaseMethodFault
	switch {
	case method.This.Type == "VirtualMachine" && method.Name == "RelocateVM_Task":
		vm, ok := ctx.Map.Get(method.This).(*simulator.VirtualMachine)
		req, isReq := method.Body.(*types.RelocateVM_Task)
		if !ok || !isReq {
			return nil // the stock call answers ManagedObjectNotFound
		}
		fault = refuseRelocation(ctx, vm, req.Spec)
	case method.This.Type == "HostSystem" && method.Name == "Destroy_Task":
		for _, e := range ctx.Map.All("VirtualMachine") {
			if vm, ok := e.(*simulator.VirtualMachine); ok && vm.Runtime.Host != nil && *vm.Runtime.Host == method.This {
				fault = &types.ResourceInUse{VimFault: types.VimFault{MethodFault: said(
					"The host has virtual machine %s registered: move it to another host or remove it first.", vm.Name)},
					Type: "VirtualMachine", Name: vm.Name}
				break
			}
		}
	}
	if fault == nil {
		return nil
	}
	return &refusal{entity: method.This, fault: fault}
}

// refuseRelocation checks a relocation as vCenter does before it moves anything.
func refuseRelocation(ctx *simulator.Context, vm *simulator.VirtualMachine, spec types.VirtualMachineRelocateSpec) types.BaseMethodFault {
	current, _ := ctx.Map.Get(*vm.Runtime.Host).(*simulator.HostSystem)
	target := current
	if spec.Host != nil {
		target, _ = ctx.Map.Get(*spec.Host).(*simulator.HostSystem)
		if target == nil {
			return &types.InvalidArgument{InvalidProperty: "spec.host"}
		}
		if target.Runtime.ConnectionState != types.HostSystemConnectionStateConnected {
			return &types.InvalidState{VimFault: types.VimFault{MethodFault: said("The host %s is %s.", target.Name, target.Runtime.ConnectionState)}}
		}
		if target.Runtime.InMaintenanceMode {
			return &types.InvalidState{VimFault: types.VimFault{MethodFault: said("The host %s is in maintenance mode.", target.Name)}}
		}
	}
	datastores := vm.Datastore
	if spec.Datastore != nil {
		if _, ok := ctx.Map.Get(*spec.Datastore).(*simulator.Datastore); !ok {
			return &types.InvalidArgument{InvalidProperty: "spec.datastore"}
		}
		if current != nil && current.Runtime.InMaintenanceMode {
			return &types.MaintenanceModeFileMove{MigrationFault: types.MigrationFault{VimFault: types.VimFault{
				MethodFault: said("The host %s is in maintenance mode: the files of %s cannot move.", current.Name, vm.Name)}}}
		}
		datastores = []types.ManagedObjectReference{*spec.Datastore}
	}
	if target == nil {
		return nil // a VM on no host the registry knows: the stock call answers as it can
	}
	for _, ref := range datastores {
		if simulator.FindReference(target.Datastore, ref) == nil {
			name := ref.Value
			if ds, ok := ctx.Map.Get(ref).(*simulator.Datastore); ok {
				name = ds.Name
			}
			ref := ref
			return notMounted(target, name, &ref)
		}
	}
	if spec.Host == nil || vm.Config == nil {
		return nil
	}
	// the disks' own datastores (govmomi moves no disk file: they stay where their backing says,
	// and a VM destroyed on a host that does not mount them panicked the simulator)
	for _, device := range vm.Config.Hardware.Device {
		disk, ok := device.(*types.VirtualDisk)
		if !ok {
			continue
		}
		backing, ok := disk.Backing.(types.BaseVirtualDeviceFileBackingInfo)
		if !ok {
			continue
		}
		name := datastoreName(backing.GetVirtualDeviceFileBackingInfo().FileName)
		if name != "" && ctx.Map.FindByName(name, target.Datastore) == nil {
			return notMounted(target, name, nil)
		}
	}
	return nil
}

func notMounted(host *simulator.HostSystem, name string, ref *types.ManagedObjectReference) types.BaseMethodFault {
	return &types.InvalidDatastore{VimFault: types.VimFault{MethodFault: said("The host %s does not mount the datastore %s.", host.Name, name)},
		Datastore: ref, Name: name}
}

func said(format string, args ...any) types.MethodFault {
	return types.MethodFault{FaultMessage: []types.LocalizableMessage{{Key: "com.vmware.storagesim.placement", Message: fmt.Sprintf(format, args...)}}}
}

// refuser answers a refused call with a task that fails with the fault, as vCenter does.
type refuser struct {
	self types.ManagedObjectReference
}

// refusal is the body of a refused call: the object called, the fault.
type refusal struct {
	entity types.ManagedObjectReference
	fault  types.BaseMethodFault
}

func (r *refuser) Reference() types.ManagedObjectReference { return r.self }

// entityRef names the object called as the task's entity.
type entityRef types.ManagedObjectReference

func (e entityRef) Reference() types.ManagedObjectReference { return types.ManagedObjectReference(e) }

func (r *refuser) run(ctx *simulator.Context, req *refusal, name string) types.ManagedObjectReference {
	return simulator.CreateTask(entityRef(req.entity), name, func(*simulator.Task) (types.AnyType, types.BaseMethodFault) {
		return nil, req.fault
	}).Run(ctx)
}

func (r *refuser) RelocateVMTask(ctx *simulator.Context, req *refusal) soap.HasFault {
	return &methods.RelocateVM_TaskBody{Res: &types.RelocateVM_TaskResponse{Returnval: r.run(ctx, req, "relocateVm")}}
}

func (r *refuser) DestroyTask(ctx *simulator.Context, req *refusal) soap.HasFault {
	return &methods.Destroy_TaskBody{Res: &types.Destroy_TaskResponse{Returnval: r.run(ctx, req, "destroy")}}
}

// hostAdopter gives a host added after start hoststate.go's refusals and run-time control.
type hostAdopter struct {
	self   types.ManagedObjectReference
	states *hostStates
}

func (a *hostAdopter) Reference() types.ManagedObjectReference { return a.self }

func (*hostAdopter) UpdateObject(*simulator.Context, mo.Reference, []types.PropertyChange) {}

func (*hostAdopter) RemoveObject(*simulator.Context, types.ManagedObjectReference) {}

func (a *hostAdopter) PutObject(_ *simulator.Context, obj mo.Reference) {
	h, ok := obj.(*simulator.HostSystem)
	if !ok {
		return
	}
	a.states.mu.Lock()
	defer a.states.mu.Unlock()
	if _, known := a.states.byName[h.Name]; known {
		return
	}
	a.states.byName[h.Name] = h
	// its own managers only: those it shares with the host it was copied from stay that host's
	added := &hostStates{owner: map[types.ManagedObjectReference]*simulator.HostSystem{}}
	added.own(h)
	for ref := range added.owner {
		if _, taken := a.states.owner[ref]; !taken {
			a.states.owner[ref] = h
		}
	}
}
