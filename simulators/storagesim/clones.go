// Hosts added at run time answer esxcli as the host they were copied from (the churn soak,
// issue 45).
//
// AddHost_Task and AddStandaloneHost_Task with the name of a host in the inventory as the connect
// spec's user name make govmomi's simulator copy that host's configuration (its LUNs, paths,
// adapters, local disks) under the new name. Its managed method executer was the stock one, which
// answers every storage command "not found": no host does. A real host added to vCenter answers
// esxcli about its own devices, and a copy's devices are its template's, so it answers here as its
// template's fixture says (main.go's storage commands, smart.go, vaai.go), from its first
// RetrieveManagedMethodExecuter. A copy of a copy answers as the fixture host at the chain's start.
package main

import (
	"sync"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

type clones struct {
	mu      sync.Mutex
	from    map[string]string // an added host's name -> the name of the host it was copied from
	fixture map[string]*Host  // a fixture host's name -> its fixture
}

// installClones notes each host added as a copy and equips its executer when it is first asked
// for. Install after the hooks whose refusals must run first (hoststate.go's, of a host not
// connected): this hook runs before them, and a refused call equips the executer harmlessly.
func installClones(reg *simulator.Registry, fx *Fixture) {
	c := &clones{from: map[string]string{}, fixture: map[string]*Host{}}
	for i := range fx.Hosts {
		c.fixture[fx.Hosts[i].Name] = &fx.Hosts[i]
	}
	previous := reg.Handler
	reg.Handler = func(ctx *simulator.Context, method *simulator.Method) (mo.Reference, types.BaseMethodFault) {
		switch req := method.Body.(type) {
		case *types.AddHost_Task:
			c.note(req.Spec)
		case *types.AddStandaloneHost_Task:
			c.note(req.Spec)
		}
		if method.This.Type == "HostSystem" && method.Name == "RetrieveManagedMethodExecuter" {
			c.equip(ctx, method.This)
		}
		if previous != nil {
			return previous(ctx, method)
		}
		return nil, nil
	}
}

func (c *clones) note(spec types.HostConnectSpec) {
	if spec.HostName == "" || spec.UserName == "" {
		return // refused (NoHost), or a host from the stock template: nothing to copy
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.from[spec.HostName] = spec.UserName
}

// template is the fixture host an added host was copied from (through copies of copies), or nil.
func (c *clones) template(name string) *Host {
	for range len(c.from) + 1 { // a chain is at most as long as the hosts added
		if fh, ok := c.fixture[name]; ok {
			return fh
		}
		next, ok := c.from[name]
		if !ok {
			return nil
		}
		name = next
	}
	return nil
}

func (c *clones) equip(ctx *simulator.Context, ref types.ManagedObjectReference) {
	h, ok := ctx.Map.Get(ref).(*simulator.HostSystem)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	executer := types.ManagedObjectReference{Type: "ManagedMethodExecuter", Value: ref.Value}
	if _, done := ctx.Map.Get(executer).(*StorageCLI); done {
		return // a fixture host's (equipped at start), or equipped before
	}
	fh := c.template(h.Name)
	if fh == nil {
		return
	}
	ctx.WithLock(h, func() { // installStorageCLI makes the host's stock executer first, as its own call would
		installStorageCLI(ctx.Map, h, fh)
	})
	installSmart(ref.Value, fh)
	installVaai(ref.Value, fh)
}
