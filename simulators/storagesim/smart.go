// Disk health through the managed method executer (exporter.smart's vSphere path): the esxcli
// commands a SMART round runs, answered as a real host answers them.
//
//   - storage core device smart get -d DEV (argument devicename): the device's rows (Parameter, Value, Threshold, Worst,
//     Raw) from the -smart fixture, else the fault a device without SMART gives ("CANNOT open
//     device": USB media, SAN LUNs);
//   - nvme device list: the fixture's NVMe controllers (HBAName, Status, Signature);
//   - nvme device log smart get -A vmhbaN: the controller's log fields;
//   - storage core path list: each fixture LUN's paths (Adapter, Device, RuntimeName, ...), so the
//     exporter finds the namespaces behind each controller.
//
// The -smart file maps host name -> {"pages": {device: [rows]}, "errors": {device: message},
// "nvme": {adapter: {"status": "Online", "log": {field: value}}}}.
package main

import (
	"flag"
	"fmt"
	"reflect"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/soap"
)

var smartFile = flag.String("smart", "", "JSON fixture of each host's SMART pages and NVMe logs, answered through esxcli")

// SmartHost is one host's disk health as esxcli reports it.
type SmartHost struct {
	Pages  map[string][]map[string]string `json:"pages"`
	Errors map[string]string              `json:"errors"`
	Nvme   map[string]SmartNvme           `json:"nvme"`
}

// SmartNvme is one NVMe controller (vmhbaN): its state in `nvme device list` and its health log.
type SmartNvme struct {
	Status string            `json:"status"`
	Log    map[string]string `json:"log"`
}

type smartAnswers struct {
	fixture *Host
	disks   SmartHost
}

var (
	smartLoaded map[string]SmartHost
	smartByRef  = map[string]*smartAnswers{} // host moref value (its executer's) -> answers
)

const cannotOpen = "Error getting Smart Parameters: CANNOT open device"

// installSmart makes the host's executer answer the SMART commands (called for each fixture host).
// A host the -smart file does not name (or every host, without the file) answers as a host whose
// devices have no SMART to give (a nested ESXi, disks behind a RAID controller): "CANNOT open
// device" for each, and no NVMe controller. A real host knows the commands; none answers them with
// the executer's "not found".
func installSmart(ref string, fh *Host) {
	executers.Lock()
	defer executers.Unlock()
	if *smartFile != "" && smartLoaded == nil {
		loadJSON(*smartFile, &smartLoaded) // vaai.go
	}
	smartByRef[ref] = &smartAnswers{fixture: fh, disks: smartLoaded[fh.Name]}
}

// smart answers a SMART command on the host behind c; ok false for every other command.
func (c *StorageCLI) smart(ctx *simulator.Context, req any) (soap.HasFault, bool) {
	executers.RLock()
	host := smartByRef[c.Value]
	executers.RUnlock()
	if host == nil {
		return nil, false
	}
	r := reflect.ValueOf(req).Elem()
	method := r.FieldByName("Method").String()
	args := esxcliArguments(r) // vaai.go
	switch method {
	case "vim.EsxCLI.storage.core.device.smart.get":
		device := args["devicename"] // esxcli's -d|--device-name
		if rows, ok := host.disks.Pages[device]; ok {
			return c.answer(ctx, req, method, rows), true
		}
		msg, ok := host.disks.Errors[device]
		if !ok {
			msg = cannotOpen
		}
		return c.fault(ctx, req, msg), true
	case "vim.EsxCLI.nvme.device.list":
		rows := []map[string]string{}
		for i, adapter := range sortedKeys(host.disks.Nvme) {
			rows = append(rows, map[string]string{"HBAName": adapter, "Status": host.disks.Nvme[adapter].Status, "Signature": fmt.Sprintf("nvmeMgmt-nvmhba%d", i)})
		}
		return c.answer(ctx, req, method, rows), true
	case "vim.EsxCLI.nvme.device.log.smart.get":
		if ctrl, ok := host.disks.Nvme[args["adapter"]]; ok && ctrl.Log != nil {
			return c.answer(ctx, req, method, []map[string]string{ctrl.Log}), true
		}
		return c.fault(ctx, req, "Error: Invalid adapter "+args["adapter"]), true
	case "vim.EsxCLI.storage.core.path.list":
		rows := []map[string]string{}
		for l, lun := range host.fixture.Luns {
			for _, p := range lun.Paths {
				runtime := fmt.Sprintf("%s:C0:T%d:L%d", p.Adapter, p.Target, l)
				rows = append(rows, map[string]string{
					"UID": runtime + "-" + lun.Name, "RuntimeName": runtime, "Device": lun.Name, "DeviceDisplayName": lun.Display,
					"Adapter": p.Adapter, "State": p.State, "Plugin": "NMP",
				})
			}
		}
		return c.answer(ctx, req, method, rows), true
	}
	return nil, false
}

// answer is the simulator's own answer to a command it knows, with our DataObjects as its response.
func (c *StorageCLI) answer(ctx *simulator.Context, req any, method string, rows []map[string]string) soap.HasFault {
	field := reflect.ValueOf(req).Elem().FieldByName("Method")
	field.SetString("vim.EsxCLI.hardware.clock.get")
	res := c.call(ctx, req)
	field.SetString(method)
	result := reflect.ValueOf(res).Elem().FieldByName("Res").Elem().FieldByName("Returnval").Elem()
	result.FieldByName("Response").SetString(dataObjects(method, rows))
	return res
}

// fault is the simulator's answer to a command it does not know, with ESXi's message in it.
func (c *StorageCLI) fault(ctx *simulator.Context, req any, msg string) soap.HasFault {
	field := reflect.ValueOf(req).Elem().FieldByName("Method")
	asked := field.String()
	field.SetString("vim.EsxCLI.storagesim.no.such.method")
	res := c.call(ctx, req)
	field.SetString(asked)
	fault := reflect.ValueOf(res).Elem().FieldByName("Res").Elem().FieldByName("Returnval").Elem().FieldByName("Fault").Elem()
	fault.FieldByName("FaultMsg").SetString(msg)
	fault.FieldByName("FaultDetail").SetString("")
	return res
}
