// Run-time changes of the inventory that the vSphere API cannot make but a vCenter sees happen,
// for the churn soak (bench/soak_vsphere.py, issue 45).
//
// POST /storagesim/churn/grow with form fields datastore (its name) and bytes (> 0): the datastore
// grows by that much, as when its LUN is grown and the VMFS expanded, or an NFS export grows, from
// outside the API this simulator serves. summary.capacity and summary.freeSpace (and the VMFS
// volume's capacity in info) grow by it, reported to the property collector as vCenter reports a
// datastore's new size.
//
// A host removed from a cluster (Destroy_Task) leaves the cluster's host list and its environment
// browser, as vCenter forgets it: govmomi's simulator kept it in both, and then a container view
// named a deleted object and the next host added crashed the simulator (forgetDestroyedHosts).
package main

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// installChurn serves the soak's controls.
func installChurn(service *simulator.Service, reg *simulator.Registry) {
	forgetDestroyedHosts(reg)
	service.HandleFunc("/storagesim/churn/grow", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST datastore=NAME&bytes=N", http.StatusMethodNotAllowed)
			return
		}
		grow, err := strconv.ParseInt(r.FormValue("bytes"), 10, 64)
		if err != nil || grow <= 0 {
			http.Error(w, fmt.Sprintf("bytes %q is not a positive whole number", r.FormValue("bytes")), http.StatusBadRequest)
			return
		}
		name := r.FormValue("datastore")
		var ds *simulator.Datastore
		for _, e := range reg.All("Datastore") {
			if d, ok := e.(*simulator.Datastore); ok && d.Name == name {
				ds = d
			}
		}
		if ds == nil {
			http.Error(w, fmt.Sprintf("no datastore %q", name), http.StatusNotFound)
			return
		}
		ctx := simulator.NewContext()
		ctx.Map = reg
		changes := []types.PropertyChange{
			{Name: "summary.capacity", Val: ds.Summary.Capacity + grow},
			{Name: "summary.freeSpace", Val: ds.Summary.FreeSpace + grow},
		}
		if info, ok := ds.Info.(*types.VmfsDatastoreInfo); ok && info.Vmfs != nil {
			volume := *info.Vmfs
			volume.Capacity += grow
			grown := *info
			grown.Vmfs = &volume
			changes = append(changes, types.PropertyChange{Name: "info", Val: &grown})
		}
		reg.WithLock(ctx, ds.Reference(), func() { reg.Update(ctx, ds, changes) })
		w.WriteHeader(http.StatusNoContent)
	})
}

// forgetDestroyedHosts keeps a cluster's environment browser from listing a host being removed:
// govmomi's simulator keeps the host there after its Destroy_Task, and the next host added to
// the cluster (AddHost_Task) reads that host's version and panics (a nil HostSystem). vCenter
// forgets a removed host; so does this, before the removal runs.
func forgetDestroyedHosts(reg *simulator.Registry) {
	previous := reg.Handler
	reg.Handler = func(ctx *simulator.Context, method *simulator.Method) (mo.Reference, types.BaseMethodFault) {
		if method.This.Type == "HostSystem" && method.Name == "Destroy_Task" {
			forgetHost(ctx, reg, method.This)
		}
		if previous != nil {
			return previous(ctx, method)
		}
		return nil, nil
	}
}

func forgetHost(ctx *simulator.Context, reg *simulator.Registry, ref types.ManagedObjectReference) {
	host, ok := reg.Get(ref).(*simulator.HostSystem)
	if !ok || host.Parent == nil || len(host.Vm) > 0 { // with VMs the removal is refused (ResourceInUse)
		return
	}
	cluster, ok := reg.Get(*host.Parent).(*simulator.ClusterComputeResource)
	if !ok || cluster.EnvironmentBrowser == nil {
		return
	}
	// govmomi's removal takes the host out of the registry, not out of the cluster's host list:
	// a container view of the tree then names a deleted object (ManagedObjectNotFound).
	var kept []types.ManagedObjectReference
	for _, h := range cluster.Host {
		if h != ref {
			kept = append(kept, h)
		}
	}
	reg.Update(ctx, cluster, []types.PropertyChange{{Name: "host", Val: kept}})
	browser, ok := reg.Get(*cluster.EnvironmentBrowser).(*simulator.EnvironmentBrowser)
	if !ok {
		return
	}
	descriptors := browser.QueryConfigOptionDescriptorResponse.Returnval
	for i := range descriptors {
		kept := descriptors[i].Host[:0]
		for _, h := range descriptors[i].Host {
			if h != ref {
				kept = append(kept, h)
			}
		}
		descriptors[i].Host = kept
	}
}
