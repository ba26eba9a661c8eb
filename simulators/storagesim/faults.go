// Faults of one host's managers, as real vCenters send them.
//
// Inventories recorded from real vCenters (6.7 U3, 7.0 U1c, VMC on AWS) list a host's
// configManager.advancedOption (OptionManager:EsxHostAdvSettings-N) or configManager.iscsiManager
// while the object itself is gone: every call on it (QueryOptions, QueryBoundVnics) answers
// vmodl.fault.ManagedObjectNotFound with obj set to the reference asked for.
//
//	-no-option-manager esx02.lab.local,esx03.lab.local   these hosts' option managers are gone
//	-no-iscsi-manager esx01.lab.local                     and these hosts' iSCSI managers
//
// The host keeps its configManager reference and the object leaves the registry. For a
// reference it does not hold, govmomi's simulator (v0.52.0, Service.call) answers any method with
// the fault vCenter sends: ManagedObjectNotFound{Obj: the reference asked for}, and the property
// collector a read of it the same way (collect). Only the fault string differs: the simulator's
// "managed object not found: OptionManager:EsxHostAdvSettings-3", vCenter's "The object
// 'vim.option.OptionManager:EsxHostAdvSettings-3' has already been deleted or has not been
// completely created"; a client reads the fault's type and obj, not its text.
package main

import (
	"context"
	"flag"
	"log"
	"strings"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

var (
	noOptionManager = flag.String("no-option-manager", "", "comma-separated host names whose advanced-option manager is gone (QueryOptions: ManagedObjectNotFound)")
	noIscsiManager  = flag.String("no-iscsi-manager", "", "comma-separated host names whose iSCSI manager is gone (QueryBoundVnics: ManagedObjectNotFound)")
)

// removeManagers takes the chosen hosts' managers away: after the hosts are built and named,
// before any view, collector or session exists (none is told of the removal).
func removeManagers(reg *simulator.Registry, hosts []*simulator.HostSystem) {
	byName := map[string]*simulator.HostSystem{}
	for _, h := range hosts {
		byName[h.Name] = h
	}
	ctx := &simulator.Context{Context: context.Background(), Map: reg}
	for _, spec := range []struct {
		names, what string
		ref         func(h *simulator.HostSystem) *types.ManagedObjectReference
	}{
		{*noOptionManager, "advanced-option manager", func(h *simulator.HostSystem) *types.ManagedObjectReference { return h.ConfigManager.AdvancedOption }},
		{*noIscsiManager, "iSCSI manager", func(h *simulator.HostSystem) *types.ManagedObjectReference { return h.ConfigManager.IscsiManager }},
	} {
		for _, name := range strings.Split(spec.names, ",") {
			if name = strings.TrimSpace(name); name == "" {
				continue
			}
			h := byName[name]
			if h == nil {
				log.Fatalf("no host %q to take the %s of", name, spec.what)
			}
			ref := spec.ref(h)
			if ref == nil || reg.Get(*ref) == nil {
				log.Fatalf("host %s has no %s to take away", name, spec.what)
			}
			reg.Remove(ctx, *ref) // the host's configManager still names it, as vCenter's did
		}
	}
}
