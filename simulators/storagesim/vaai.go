// VAAI and VMFS locking through the managed method executer (issue 44: the exporter's vSphere
// path reads them as it reads DSNRO), answered as a real host answers them:
//
//   - storage core device vaai status get: per fixture LUN, Device, VAAIPluginName, ATSStatus,
//     CloneStatus, ZeroStatus, DeleteStatus (supported | unsupported | unknown);
//   - system settings advanced list -o PATH (argument option): the option's fields (Path, Type,
//     IntValue, DefaultIntValue, MinValue, MaxValue, StringValue, DefaultStringValue,
//     ValidCharacters, Description) for /VMFS3/UseATSForHBOnVMFS5 and
//     /VMFS3/HardwareAcceleratedLocking; without -o a host lists every option, which this
//     simulator refuses rather than invent them; an unknown option is the host's fault;
//   - storage vmfs lockmode list: each VMFS datastore on the host's LUNs (VolumeName, UUID, Type,
//     LockingMode, ATSCompatible, ATSUpgradeModes, ATSIncompatibilityReason).
//
// By default every device supports every primitive, both options are 1 and every volume is
// ATS-only (a VMFS 6 datastore on VAAI storage). The -vaai file changes that per host name:
// {"esx01": {"status": {"naa...": {"ATSStatus": "unsupported"}}, "options":
// {"/VMFS3/UseATSForHBOnVMFS5": 0}, "lock_modes": {"ds-name": "ATS+SCSI"}}}.
package main

import (
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"log"
	"os"
	"reflect"
	"sort"
	"sync"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/soap"
)

var vaaiFile = flag.String("vaai", "", "JSON of each host's VAAI status, VMFS3 locking options and lock modes, answered through esxcli")

// VaaiHost is what one host's fixture changes from the defaults.
type VaaiHost struct {
	Status    map[string]map[string]string `json:"status"`     // device -> field (ATSStatus ...) -> value
	Options   map[string]int               `json:"options"`    // advanced option path -> Int Value
	LockModes map[string]string            `json:"lock_modes"` // datastore -> LockingMode as esxcli prints it
}

var (
	vaaiLoaded map[string]VaaiHost
	vaaiByRef  = map[string]*vaaiAnswers{} // host moref value (its executer's) -> answers
	// executers guards smartByRef and vaaiByRef: filled at start, and for a host added at run time
	// at its first executer (clones.go) while other hosts' commands are answered.
	executers sync.RWMutex
)

type vaaiAnswers struct {
	fixture *Host
	changes VaaiHost
}

// vaaiOptions are the VMFS3 options the simulator knows, with their descriptions as hosts print them.
var vaaiOptions = map[string]string{
	"/VMFS3/UseATSForHBOnVMFS5":         "Use ATS for HB on ATS supported VMFS5 volumes",
	"/VMFS3/HardwareAcceleratedLocking": "Enable hardware accelerated VMFS locking (requires compliant hardware). Please see http://kb.vmware.com/kb/2094604 before disabling this option.",
}

// installVaai makes the host's executer answer the VAAI commands (called for each fixture host).
func installVaai(ref string, fh *Host) {
	executers.Lock()
	defer executers.Unlock()
	if vaaiLoaded == nil {
		vaaiLoaded = map[string]VaaiHost{}
		if *vaaiFile != "" {
			loadJSON(*vaaiFile, &vaaiLoaded)
		}
	}
	vaaiByRef[ref] = &vaaiAnswers{fixture: fh, changes: vaaiLoaded[fh.Name]}
}

// vaai answers a VAAI or VMFS locking command on the host behind c; ok false for every other command.
func (c *StorageCLI) vaai(ctx *simulator.Context, req any) (soap.HasFault, bool) {
	executers.RLock()
	host := vaaiByRef[c.Value]
	executers.RUnlock()
	if host == nil {
		return nil, false
	}
	r := reflect.ValueOf(req).Elem()
	method := r.FieldByName("Method").String()
	switch method {
	case "vim.EsxCLI.storage.core.device.vaai.status.get":
		rows := []map[string]string{}
		for _, lun := range host.fixture.Luns {
			row := map[string]string{
				"Device": lun.Name, "VAAIPluginName": "", "ATSStatus": "supported", "CloneStatus": "supported",
				"ZeroStatus": "supported", "DeleteStatus": "supported",
			}
			for field, value := range host.changes.Status[lun.Name] {
				row[field] = value
			}
			rows = append(rows, row)
		}
		return c.answer(ctx, req, method, rows), true
	case "vim.EsxCLI.system.settings.advanced.list":
		option := esxcliArguments(r)["option"]
		description, known := vaaiOptions[option]
		if option == "" {
			return c.fault(ctx, req, "this simulator answers only -o "+sortedOptions()), true
		}
		if !known {
			return c.fault(ctx, req, "Unable to find option "+option), true
		}
		value, set := host.changes.Options[option]
		if !set {
			value = 1
		}
		return c.answer(ctx, req, method, []map[string]string{{
			"Path": option, "Type": "integer", "IntValue": fmt.Sprint(value), "DefaultIntValue": "1", "MinValue": "0",
			"MaxValue": "1", "StringValue": "", "DefaultStringValue": "", "ValidCharacters": "", "Description": description,
		}}), true
	case "vim.EsxCLI.storage.vmfs.lockmode.list":
		rows := []map[string]string{}
		seen := map[string]bool{}
		for i, lun := range host.fixture.Luns {
			if lun.Datastore == "" || seen[lun.Datastore] {
				continue
			}
			seen[lun.Datastore] = true
			mode := orDefault(host.changes.LockModes[lun.Datastore], "ATS-only")
			compatible, upgrade := "false", "None"
			if mode != "ATS-only" {
				compatible, upgrade = "true", "Online"
			}
			rows = append(rows, map[string]string{
				"VolumeName": lun.Datastore, "UUID": fmt.Sprintf("5f1e3d3c-b7c6d2e8-%04x-001b21a1b2c3", i), "Type": "VMFS-6",
				"LockingMode": mode, "ATSCompatible": compatible, "ATSUpgradeModes": upgrade, "ATSIncompatibilityReason": "",
			})
		}
		return c.answer(ctx, req, method, rows), true
	}
	return nil, false
}

// esxcliArguments are an ExecuteSoap request's arguments, name -> value (esxcli's long flag names).
func esxcliArguments(r reflect.Value) map[string]string {
	args := map[string]string{}
	list := r.FieldByName("Argument")
	for i := 0; i < list.Len(); i++ {
		var val struct {
			Text string `xml:",chardata"`
		}
		_ = xml.Unmarshal([]byte(list.Index(i).FieldByName("Val").String()), &val)
		args[list.Index(i).FieldByName("Name").String()] = val.Text
	}
	return args
}

// loadJSON reads a fixture file into v, or stops the simulator naming the file.
func loadJSON(path string, v any) {
	data, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		log.Fatalf("%s: %v", path, err)
	}
}

func sortedOptions() string {
	names := make([]string, 0, len(vaaiOptions))
	for name := range vaaiOptions {
		names = append(names, name)
	}
	sort.Strings(names)
	return fmt.Sprint(names)
}
