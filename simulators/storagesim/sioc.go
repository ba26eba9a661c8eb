// Storage I/O Control: each datastore's iormConfiguration and the hosts' SIOC counters.
//
// Fixture section "sioc" (read from the -fixture file beside main.go's own):
//
//	"sioc": {
//	  "datastores": [{"name": "ds-shared-01", "instance": "uuid" | "url",
//	                  "iorm": {"enabled": true, "congestion_threshold_mode": "manual",
//	                           "congestion_threshold_ms": 30, "percent_of_peak_throughput": 90,
//	                           "stats_collection_enabled": true}}],
//	  "perf": {"esx01.lab.local": {"ds-shared-01": {"datastore.sizeNormalizedDatastoreLatency.average": 42000}}}
//	}
//
// StorageResourceManager.ConfigureDatastoreIORM_Task changes a datastore's iormConfiguration and
// reports it to the property collector; its task fails with InvalidArgument (naming the spec's
// field) for a mode, threshold or percent of peak outside those ranges, as vCenter's does; a
// reference to no datastore is the call's ManagedObjectNotFound. vCenter mode only.
//
// A datastore without "iorm" has no iormConfiguration (the property is unset, as on a server
// past vSphere 8.0 U3, where the structure is deprecated): the property collector answers it
// empty. The values are checked as vCenter's ConfigureDatastoreIORM_Task checks a spec
// (StorageIORMConfigSpec): congestionThresholdMode automatic or manual, congestionThreshold
// 5-100 ms, percentOfPeakThroughput 50-100; the simulator refuses to start on any other.
//
// "refuse": "InvalidProperty" makes the property collector refuse any RetrievePropertiesEx whose
// Datastore pathSet names iormConfiguration, as a server whose API no longer has the property
// does; "NoPermission" refuses it as a role without the privilege would (vCenter faults the whole
// call). Other calls are answered.
//
// The SIOC counters (datastore.sizeNormalizedDatastoreLatency.average ...) are host counters with
// one instance per datastore. A real ESXi host names the instance by the VMFS uuid ("uuid", the
// default); govmomi's simulator names datastore instances by the datastore's url ("url":
// ds:///vmfs/volumes/<id>/ here, the form vCenter gives Datastore.summary.url).
package main

import (
	"encoding/json"
	"fmt"
	"log"
	"os"
	"sort"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// siocIorm is a datastore's iormConfiguration as the fixture gives it.
type siocIorm struct {
	Enabled                 bool   `json:"enabled"`
	CongestionThresholdMode string `json:"congestion_threshold_mode"`
	CongestionThresholdMs   int32  `json:"congestion_threshold_ms"`
	PercentOfPeak           int32  `json:"percent_of_peak_throughput"`
	StatsCollectionEnabled  bool   `json:"stats_collection_enabled"`
}

type siocDatastore struct {
	Name     string    `json:"name"`
	Instance string    `json:"instance"`
	Iorm     *siocIorm `json:"iorm"`
}

type siocFixture struct {
	Refuse     string                                 `json:"refuse"`
	Datastores []siocDatastore                        `json:"datastores"`
	Perf       map[string]map[string]map[string]int64 `json:"perf"` // host -> datastore -> counter -> value
}

// checkIorm refuses what ConfigureDatastoreIORM_Task refuses (InvalidArgument on the spec's field).
func checkIorm(c *siocIorm) error {
	if field := badSpecField(c.CongestionThresholdMode, c.CongestionThresholdMs, c.PercentOfPeak); field != "" {
		return fmt.Errorf("%s out of range (mode automatic or manual, threshold 5-100 ms, percent of peak 50-100): %q, %d, %d",
			field, c.CongestionThresholdMode, c.CongestionThresholdMs, c.PercentOfPeak)
	}
	return nil
}

// badSpecField names the StorageIORMConfigSpec field vCenter refuses ("" for none); "" and 0 are unset.
func badSpecField(mode string, threshold, percent int32) string {
	switch {
	case mode != "" && mode != string(types.StorageIORMThresholdModeAutomatic) && mode != string(types.StorageIORMThresholdModeManual):
		return "spec.congestionThresholdMode"
	case threshold != 0 && (threshold < 5 || threshold > 100):
		return "spec.congestionThreshold"
	case percent != 0 && (percent < 50 || percent > 100):
		return "spec.percentOfPeakThroughput"
	}
	return ""
}

// iormManager is the simulator's StorageResourceManager with ConfigureDatastoreIORM_Task.
type iormManager struct {
	*simulator.StorageResourceManager
}

func (m *iormManager) ConfigureDatastoreIORMTask(ctx *simulator.Context, req *types.ConfigureDatastoreIORM_Task) soap.HasFault {
	ds, ok := ctx.Map.Get(req.Datastore).(*simulator.Datastore)
	if !ok { // a reference to nothing: the call's fault, as for any method
		return &methods.ConfigureDatastoreIORM_TaskBody{Fault_: simulator.Fault("", &types.ManagedObjectNotFound{Obj: req.Datastore})}
	}
	// The task's entity is the datastore, as vCenter reports it.
	task := simulator.CreateTask(ds, "configureDatastoreIORM", func(*simulator.Task) (types.AnyType, types.BaseMethodFault) {
		spec := req.Spec
		if field := badSpecField(spec.CongestionThresholdMode, spec.CongestionThreshold, spec.PercentOfPeakThroughput); field != "" {
			return nil, &types.InvalidArgument{InvalidProperty: field}
		}
		next := types.StorageIORMInfo{CongestionThresholdMode: "manual", CongestionThreshold: 30, PercentOfPeakThroughput: 90,
			StatsCollectionEnabled: types.NewBool(false)} // vCenter's defaults
		if ds.IormConfiguration != nil {
			next = *ds.IormConfiguration
		}
		if spec.Enabled != nil {
			next.Enabled = *spec.Enabled
		}
		if spec.CongestionThresholdMode != "" {
			next.CongestionThresholdMode = spec.CongestionThresholdMode
		}
		if spec.CongestionThreshold != 0 {
			next.CongestionThreshold = spec.CongestionThreshold
		}
		if spec.PercentOfPeakThroughput != 0 {
			next.PercentOfPeakThroughput = spec.PercentOfPeakThroughput
		}
		if spec.StatsCollectionEnabled != nil {
			next.StatsCollectionEnabled = types.NewBool(*spec.StatsCollectionEnabled)
		}
		ctx.Map.Update(ctx, ds, []types.PropertyChange{{Name: "iormConfiguration", Val: &next}})
		return nil, nil
	})
	return &methods.ConfigureDatastoreIORM_TaskBody{Res: &types.ConfigureDatastoreIORM_TaskResponse{Returnval: task.Run(ctx)}}
}

// installSioc sets the fixture's iormConfiguration on the datastores and adds the SIOC counters
// to the placed hosts' datastore instances.
// With -esx only the fixture's first host is placed: the others' counters are left out.
func installSioc(reg *simulator.Registry, perf *PerfManager, hosts []*simulator.HostSystem, fixturePath string, esx bool) {
	srm := types.ManagedObjectReference{Type: "StorageResourceManager", Value: "StorageResourceManager"}
	if obj, ok := reg.Get(srm).(*simulator.StorageResourceManager); ok {
		reg.Put(&iormManager{obj})
	}
	if fixturePath == "" {
		return
	}
	data, err := os.ReadFile(fixturePath)
	if err != nil {
		log.Fatal(err)
	}
	var fx struct {
		Sioc *siocFixture `json:"sioc"`
	}
	if err := json.Unmarshal(data, &fx); err != nil {
		log.Fatalf("%s: %v", fixturePath, err)
	}
	if fx.Sioc == nil {
		return
	}
	if err := refuseIorm(reg, fx.Sioc.Refuse); err != nil {
		log.Fatalf("%s: sioc: %v", fixturePath, err)
	}
	byName := map[string]siocDatastore{}
	for _, ds := range fx.Sioc.Datastores {
		if ds.Instance != "" && ds.Instance != "uuid" && ds.Instance != "url" {
			log.Fatalf("%s: sioc datastore %s: instance %q: uuid or url", fixturePath, ds.Name, ds.Instance)
		}
		if ds.Iorm != nil {
			if err := checkIorm(ds.Iorm); err != nil {
				log.Fatalf("%s: sioc datastore %s: %v", fixturePath, ds.Name, err)
			}
		}
		byName[ds.Name] = ds
	}
	for _, obj := range reg.All("Datastore") {
		ds := obj.(*simulator.Datastore)
		if fd, ok := byName[ds.Name]; ok && fd.Iorm != nil {
			c := fd.Iorm
			ds.IormConfiguration = &types.StorageIORMInfo{
				Enabled: c.Enabled, CongestionThresholdMode: c.CongestionThresholdMode, CongestionThreshold: c.CongestionThresholdMs,
				PercentOfPeakThroughput: c.PercentOfPeak, StatsCollectionEnabled: types.NewBool(c.StatsCollectionEnabled),
			}
		}
	}
	placed := map[string]*simulator.HostSystem{}
	for _, h := range hosts {
		placed[h.Name] = h
	}
	names := make([]string, 0, len(fx.Sioc.Perf))
	for name := range fx.Sioc.Perf {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		h, ok := placed[name]
		if !ok && esx {
			continue
		}
		if !ok {
			log.Fatalf("%s: sioc perf: no host %s", fixturePath, name)
		}
		hs := perf.hosts[h.Self.Value]
		for datastore, counters := range fx.Sioc.Perf[name] {
			id, ok := mountID(h, datastore)
			if !ok {
				log.Fatalf("%s: sioc perf: host %s mounts no datastore %s", fixturePath, name, datastore)
			}
			for counter := range counters {
				if !knownCounter(perf, counter) {
					log.Fatalf("%s: sioc perf: host %s datastore %s: no counter %s", fixturePath, name, datastore, counter)
				}
			}
			instance := id
			if byName[datastore].Instance == "url" {
				instance = "ds:///vmfs/volumes/" + id + "/"
			}
			values := map[string]int64{}
			for k, v := range hs.instances["datastore"][instance] { // the datastore's I/O counters, kept
				values[k] = v
			}
			for k, v := range counters {
				values[k] = v
			}
			hs.instances["datastore"][instance] = values
		}
	}
}

// mountID is the id in a datastore's mount path (/vmfs/volumes/<id>): a VMFS uuid or an NFS id.
func mountID(h *simulator.HostSystem, datastore string) (string, bool) {
	for _, mount := range h.Config.FileSystemVolume.MountInfo {
		if mount.Volume.GetHostFileSystemVolume().Name == datastore {
			p := mount.MountInfo.Path
			return p[len("/vmfs/volumes/"):], len(p) > len("/vmfs/volumes/")
		}
	}
	return "", false
}

func knownCounter(perf *PerfManager, name string) bool {
	for _, n := range perf.names {
		if n == name {
			return true
		}
	}
	return false
}

// refuseIorm installs the "refuse" fault as a hook of the registry, chained to any set before it.
func refuseIorm(reg *simulator.Registry, refuse string) error {
	var fault types.BaseMethodFault
	switch refuse {
	case "":
		return nil
	case "InvalidProperty":
		fault = &types.InvalidProperty{Name: "iormConfiguration"}
	case "NoPermission":
		fault = &types.NoPermission{PrivilegeId: "System.Read"}
	default:
		return fmt.Errorf("refuse %q: InvalidProperty or NoPermission", refuse)
	}
	previous := reg.Handler
	reg.Handler = func(ctx *simulator.Context, method *simulator.Method) (mo.Reference, types.BaseMethodFault) {
		if req, ok := method.Body.(*types.RetrievePropertiesEx); ok && asksIorm(req.SpecSet) {
			return nil, fault
		}
		if previous != nil {
			return previous(ctx, method)
		}
		return nil, nil
	}
	return nil
}

func asksIorm(specs []types.PropertyFilterSpec) bool {
	for _, spec := range specs {
		for _, ps := range spec.PropSet {
			for _, path := range ps.PathSet {
				if ps.Type == "Datastore" && path == "iormConfiguration" {
					return true
				}
			}
		}
	}
	return false
}
