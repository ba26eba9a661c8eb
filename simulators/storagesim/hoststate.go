// Hosts as vCenter lists them beyond "connected", and the volumes a real host mounts beside its
// datastores.
//
// Fixture fields of a host (read from the -fixture file beside main.go's own; vCenter mode):
//
//   - "connection_state": "notResponding" or "disconnected" from the start. vCenter keeps listing
//     such a host with the last configuration it read (its config.* properties stay as they were:
//     stale), and every call that needs the host fails: methods of its configuration managers
//     (configManager.*: option, iSCSI, storage, datastore, network ...), of its managed method
//     executer (esxcli) and of the HostSystem itself (but for DisconnectHost_Task,
//     ReconnectHost_Task, Destroy_Task and RetrieveManagedMethodExecuter, which vCenter answers
//     itself). The fault is vmodl.fault.HostNotReachable for a host not responding ("the server
//     was unable to communicate with the host") and vmodl.fault.HostNotConnected for one
//     disconnected ("a method needs to communicate with a host that has been disconnected"), as
//     the vSphere API reference describes both (subtypes of HostCommunication).
//   - "maintenance": true, runtime.inMaintenanceMode from the start.
//   - "boot_volumes": "7.0" or "6.7", the system volumes a real ESXi host lists in
//     config.fileSystemVolume.mountInfo beside its datastores, as `govc object.collect
//     HostSystem:ha-host config.fileSystemVolume` shows them (govmomi's simulator/esx template
//     was captured that way): from 7.0, BOOTBANK1 and BOOTBANK2 (HostVfatVolume, type OTHER,
//     4 GiB) and OSDATA-<uuid> (a HostVmfsVolume of type OTHER, VMFS-L 1.00, its extent on the
//     boot device); before 7.0, the two boot banks, the locker and the scratch partition, all
//     vfat, type OTHER, with an empty name. "boot_device" names the boot device ("" :
//     mpx.vmhba32:C0:T0:L0, an SD card not in the host's LUN list).
//
// At run time (a test's control, no vSphere API): POST /storagesim/hoststate with form fields
// host (its name) and state (connected, notResponding, disconnected) sets a host's
// runtime.connectionState and reports it to the property collector, as vCenter reports a host
// that stops responding or comes back. EnterMaintenanceMode_Task and ExitMaintenanceMode_Task
// report runtime.inMaintenanceMode when their task ends (the stock tasks change it silently).
// Hosts added after start (AddHost_Task) are refused and controlled too (placement.go adopts them).
// The refusal is a hook of the registry (Registry.Handler), chained to any hook set before it.
package main

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/units"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// hostStateFixture is what this file reads of a fixture host.
type hostStateFixture struct {
	Name            string `json:"name"`
	ConnectionState string `json:"connection_state"`
	Maintenance     bool   `json:"maintenance"`
	BootVolumes     string `json:"boot_volumes"`
	BootDevice      string `json:"boot_device"`
}

// hostStates knows which managed objects belong to which host, to refuse calls to a host that
// is not connected.
type hostStates struct {
	reg    *simulator.Registry
	mu     sync.RWMutex
	owner  map[types.ManagedObjectReference]*simulator.HostSystem // a host's managers and executer -> the host
	byName map[string]*simulator.HostSystem
}

// Methods of a HostSystem that vCenter answers itself, whatever the host's state.
var hostMethodsWithoutHost = map[string]bool{
	"DisconnectHost_Task": true, "ReconnectHost_Task": true, "Destroy_Task": true, "RetrieveManagedMethodExecuter": true,
}

// installHostStates adds the fixture's system volumes to the placed hosts, refuses calls to hosts
// that are not connected and serves the run-time control. It returns what sets the fixture's
// connection states and maintenance modes, called once the fixture's VMs are created and
// powered on (which neither state allows).
func installHostStates(service *simulator.Service, reg *simulator.Registry, hosts []*simulator.HostSystem, fixturePath string, esx bool) func() {
	states := &hostStates{reg: reg, owner: map[types.ManagedObjectReference]*simulator.HostSystem{}, byName: map[string]*simulator.HostSystem{}}
	fixtures := map[string]hostStateFixture{}
	if fixturePath != "" {
		data, err := os.ReadFile(fixturePath)
		if err != nil {
			log.Fatal(err)
		}
		var fx struct {
			Hosts []hostStateFixture `json:"hosts"`
		}
		if err := json.Unmarshal(data, &fx); err != nil {
			log.Fatalf("%s: %v", fixturePath, err)
		}
		for _, h := range fx.Hosts {
			fixtures[h.Name] = h
		}
	}
	for i, h := range hosts {
		states.byName[h.Name] = h
		states.own(h)
		fh := fixtures[h.Name]
		if err := addBootVolumes(reg, h, i, fh); err != nil {
			log.Fatalf("%s: host %s: %v", fixturePath, h.Name, err)
		}
		if fh.ConnectionState != "" {
			if esx {
				log.Fatalf("%s: host %s: connection_state is vCenter's view of a host (not with -esx)", fixturePath, h.Name)
			}
			if _, err := connectionState(fh.ConnectionState); err != nil {
				log.Fatalf("%s: host %s: %v", fixturePath, h.Name, err)
			}
		}
	}
	previous := reg.Handler
	reg.Handler = func(ctx *simulator.Context, method *simulator.Method) (mo.Reference, types.BaseMethodFault) {
		if fault := states.refuse(method); fault != nil {
			return nil, fault
		}
		if previous != nil {
			return previous(ctx, method)
		}
		return nil, nil
	}
	service.HandleFunc("/storagesim/hoststate", states.serve)
	reg.AddHandler(&hostAdopter{self: types.ManagedObjectReference{Type: "StorageSimHostAdopter", Value: "hoststate"}, states: states})
	return func() {
		for _, h := range hosts {
			fh := fixtures[h.Name]
			if fh.ConnectionState != "" {
				h.Runtime.ConnectionState, _ = connectionState(fh.ConnectionState)
			}
			h.Runtime.InMaintenanceMode = fh.Maintenance
		}
	}
}

// own records the host's configuration managers and its method executer as the host's.
func (s *hostStates) own(h *simulator.HostSystem) {
	s.owner[types.ManagedObjectReference{Type: "ManagedMethodExecuter", Value: h.Self.Value}] = h
	managers := reflect.ValueOf(&h.ConfigManager).Elem()
	for i := 0; i < managers.NumField(); i++ {
		if ref, ok := managers.Field(i).Interface().(*types.ManagedObjectReference); ok && ref != nil {
			s.owner[*ref] = h
		}
	}
}

// refuse is vCenter's answer to a call that needs a host it cannot reach, or nil.
func (s *hostStates) refuse(method *simulator.Method) types.BaseMethodFault {
	var host *simulator.HostSystem
	if method.This.Type == "HostSystem" {
		if hostMethodsWithoutHost[method.Name] {
			return nil
		}
		host, _ = s.reg.Get(method.This).(*simulator.HostSystem)
	} else {
		s.mu.RLock()
		host = s.owner[method.This]
		s.mu.RUnlock()
	}
	if host == nil {
		return nil
	}
	message := func(text string) types.HostCommunication {
		return types.HostCommunication{RuntimeFault: types.RuntimeFault{MethodFault: types.MethodFault{
			FaultMessage: []types.LocalizableMessage{{Key: "com.vmware.vim.vpxd.vpx.vmprov.HostCommunication", Message: fmt.Sprintf(text, host.Name)}},
		}}}
	}
	switch host.Runtime.ConnectionState {
	case types.HostSystemConnectionStateNotResponding:
		return &types.HostNotReachable{HostCommunication: message("Cannot contact the host %s: it is not responding.")}
	case types.HostSystemConnectionStateDisconnected:
		return &types.HostNotConnected{HostCommunication: message("Unable to communicate with the host %s: it is disconnected.")}
	}
	return nil
}

// serve is the test's control: POST host=NAME&state=STATE.
func (s *hostStates) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST host=NAME&state=connected|notResponding|disconnected", http.StatusMethodNotAllowed)
		return
	}
	state, err := connectionState(r.FormValue("state"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.RLock()
	host := s.byName[r.FormValue("host")]
	s.mu.RUnlock()
	if host == nil {
		http.Error(w, fmt.Sprintf("no host %q", r.FormValue("host")), http.StatusNotFound)
		return
	}
	ctx := simulator.NewContext()
	ctx.Map = s.reg
	s.reg.Update(ctx, host, []types.PropertyChange{{Name: "runtime.connectionState", Val: state}})
	w.WriteHeader(http.StatusNoContent)
}

func connectionState(name string) (types.HostSystemConnectionState, error) {
	for _, state := range types.HostSystemConnectionState("").Values() {
		if string(state) == name {
			return state, nil
		}
	}
	return "", fmt.Errorf("connection state %q is none of connected, notResponding, disconnected", name)
}

// addBootVolumes puts the system volumes of the fixture's boot_volumes in the host's mount list.
func addBootVolumes(reg *simulator.Registry, h *simulator.HostSystem, index int, fh hostStateFixture) error {
	if fh.BootVolumes == "" {
		return nil
	}
	uuid := func(n int) string { return fmt.Sprintf("5f3c%04x-%08x-%04x-%012x", index, 0xb0070000+n, n, index) }
	vfat := func(n int, name string, capacity int64, mode string) types.HostFileSystemMountInfo {
		return types.HostFileSystemMountInfo{
			MountInfo: types.HostMountInfo{Path: "/vmfs/volumes/" + uuid(n), AccessMode: mode, Mounted: types.NewBool(true), Accessible: types.NewBool(true)},
			Volume:    &types.HostVfatVolume{HostFileSystemVolume: types.HostFileSystemVolume{Type: "OTHER", Name: name, Capacity: capacity}},
		}
	}
	var mounts []types.HostFileSystemMountInfo
	switch fh.BootVolumes {
	case "7.0":
		device := fh.BootDevice
		if device == "" {
			device = "mpx.vmhba32:C0:T0:L0"
		}
		osdata := types.HostFileSystemMountInfo{
			MountInfo: types.HostMountInfo{Path: "/vmfs/volumes/" + uuid(0), AccessMode: "readWrite", Mounted: types.NewBool(true), Accessible: types.NewBool(true)},
			Volume: &types.HostVmfsVolume{
				HostFileSystemVolume: types.HostFileSystemVolume{Type: "OTHER", Name: "OSDATA-" + uuid(0), Capacity: 128 * units.GB},
				BlockSizeMb:          1, BlockSize: units.KB, MaxBlocks: 256 * units.KB, MajorVersion: 1, Version: "1.00", Uuid: uuid(0),
				Extent: []types.HostScsiDiskPartition{{DiskName: device, Partition: 7}},
				Ssd:    types.NewBool(true), Local: types.NewBool(true),
			},
			VStorageSupport: "vStorageUnsupported",
		}
		mounts = []types.HostFileSystemMountInfo{osdata, vfat(1, "BOOTBANK1", 4*units.GB, "readOnly"), vfat(2, "BOOTBANK2", 4*units.GB, "readOnly")}
	case "6.7":
		mounts = []types.HostFileSystemMountInfo{
			vfat(1, "", 250*units.MB, "readOnly"), vfat(2, "", 250*units.MB, "readOnly"),
			vfat(3, "", 285*units.MB, "readWrite"), vfat(4, "", 4*units.GB, "readWrite"),
		}
	default:
		return fmt.Errorf("boot_volumes %q is neither 7.0 nor 6.7", fh.BootVolumes)
	}
	if strings.HasPrefix(fh.BootVolumes, "6") && fh.BootDevice != "" {
		return fmt.Errorf("boot_device is for OSDATA (boot_volumes 7.0)")
	}
	volumes := h.Config.FileSystemVolume
	if volumes == nil {
		volumes = &types.HostFileSystemVolumeInfo{}
		h.Config.FileSystemVolume = volumes
	}
	volumes.MountInfo = append(volumes.MountInfo, mounts...)
	if ss, ok := reg.Get(*h.ConfigManager.StorageSystem).(*simulator.HostStorageSystem); ok {
		ss.FileSystemVolumeInfo = *volumes
	}
	return nil
}
