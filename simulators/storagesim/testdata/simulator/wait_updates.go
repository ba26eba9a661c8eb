// Added to govmomi v0.52.0's simulator package at build time (a patched copy; see
// simulators/storagesim/sims.py). Not built on its own: a testdata directory is ignored by the go tool.
//
// Why: the stock WaitForUpdatesEx answers a waiting collector by re-collecting every filter
// whole, once per filter for each queued change, and a view whose list changed has its filter
// re-send every object it selects as entering. At 40,000 VMs one power-off then costs minutes of
// CPU and megabytes of answer, so the simulator could neither keep up with nor stand for a
// vCenter, which sends only what changed. followUpdates replaces that loop: per filter and batch,
// the selection is re-walked (references only, no properties) only when the batch can have
// changed it, and then only the objects that came in (enter, with their properties) or went out
// (leave) are sent; every other change goes through the filter's property spec as before.

package simulator

import (
	"path"
	"reflect"
	"strings"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// followUpdates adds to set what the queued updates mean for each of the collector's filters.
func (pc *PropertyCollector) followUpdates(ctx *Context, updates []types.ObjectUpdate, set *types.UpdateSet) types.BaseMethodFault {
	for _, ref := range pc.Filter {
		filter, ok := ctx.Session.Get(ref).(*PropertyFilter)
		if !ok {
			continue
		}
		fu := types.PropertyFilterUpdate{Filter: ref}

		entered := map[types.ManagedObjectReference]bool{}
		if filter.takeSync(ctx) || filter.mayReselect(ctx, updates) {
			var fault types.BaseMethodFault
			if entered, fault = filter.reselect(ctx, &fu); fault != nil {
				return fault
			}
		}

		for _, update := range updates {
			if _, ok := filter.refs[update.Obj]; !ok || entered[update.Obj] {
				continue // not selected, or just sent whole as entering
			}
			switch update.Kind {
			case types.ObjectUpdateKindModify:
				if update = filter.apply(ctx, update); len(update.ChangeSet) != 0 {
					fu.ObjectSet = append(fu.ObjectSet, update)
				}
			case types.ObjectUpdateKindLeave:
				delete(filter.refs, update.Obj)
				fu.ObjectSet = append(fu.ObjectSet, update)
			}
		}

		if len(fu.ObjectSet) != 0 {
			set.FilterSet = append(set.FilterSet, fu)
		}
	}
	return nil
}

// takeSync reports and clears the mark UpdateObject sets when an object the spec starts from
// changed (a view's list).
func (f *PropertyFilter) takeSync(ctx *Context) bool {
	var was bool
	ctx.WithLock(f, func() {
		was = f.sync
		f.sync = false
	})
	return was
}

// mayReselect: an object of a selected type came into being (it may hang under a traversed
// folder, whose list changes without an update), or a traversed property changed.
func (f *PropertyFilter) mayReselect(ctx *Context, updates []types.ObjectUpdate) bool {
	var traversals []*types.TraversalSpec
	for _, o := range f.Spec.ObjectSet {
		traversals = appendTraversals(traversals, o.SelectSet)
	}
	for _, u := range updates {
		switch u.Kind {
		case types.ObjectUpdateKindEnter:
			for _, p := range f.Spec.PropSet {
				if isOfType(ctx, u.Obj, p.Type) {
					return true
				}
			}
			for _, ts := range traversals {
				if isOfType(ctx, u.Obj, ts.Type) {
					return true
				}
			}
		case types.ObjectUpdateKindModify:
			for _, ts := range traversals {
				if !isOfType(ctx, u.Obj, ts.Type) {
					continue
				}
				for _, c := range u.ChangeSet {
					if strings.HasPrefix(c.Name, ts.Path) || strings.HasPrefix(ts.Path, c.Name) {
						return true
					}
				}
			}
		}
	}
	return false
}

func appendTraversals(to []*types.TraversalSpec, specs []types.BaseSelectionSpec) []*types.TraversalSpec {
	for _, s := range specs {
		if ts, ok := s.(*types.TraversalSpec); ok {
			to = append(to, ts)
			to = appendTraversals(to, ts.SelectSet)
		}
	}
	return to
}

// isOfType: ref is a kind, or embeds it (e.g. ManagedEntity, ComputeResource), as collect judges.
func isOfType(ctx *Context, ref types.ManagedObjectReference, kind string) bool {
	if ref.Type == kind {
		return true
	}
	obj := ctx.Map.Get(ref)
	if obj == nil {
		return false
	}
	rtype, ok := moType(obj)
	if !ok {
		return false // not a managed object of package mo (a simulator's own): no PropertySpec names it
	}
	if rtype.Name() == kind {
		return true
	}
	field, ok := rtype.FieldByName(kind)
	return ok && field.Anonymous
}

// moType: the mo type obj is or wraps as its first field, as getManagedObject finds it (without
// its panic for an object that wraps none).
func moType(obj mo.Reference) (reflect.Type, bool) {
	rtype := reflect.TypeOf(obj)
	if rtype.Kind() == reflect.Pointer {
		rtype = rtype.Elem()
	}
	for path.Base(rtype.PkgPath()) != "mo" {
		if rtype.Kind() != reflect.Struct || rtype.NumField() == 0 {
			return nil, false
		}
		rtype = rtype.Field(0).Type
		if rtype.Kind() == reflect.Pointer {
			rtype = rtype.Elem()
		}
	}
	return rtype, true
}

// reselect walks the spec's selection again (references only) and adds to fu the objects that
// came in, with their properties, and those that went out. It returns the ones that came in.
func (f *PropertyFilter) reselect(ctx *Context, fu *types.PropertyFilterUpdate) (map[types.ManagedObjectReference]bool, types.BaseMethodFault) {
	rr := &retrieveResult{
		RetrieveResult: &types.RetrieveResult{},
		req:            &types.RetrievePropertiesEx{SpecSet: []types.PropertyFilterSpec{f.Spec}},
		collected:      make(map[types.ManagedObjectReference]bool),
		specs:          make(map[string]*types.TraversalSpec),
	}

	var refs []types.ManagedObjectReference
	for _, o := range f.Spec.ObjectSet {
		unlock := ctx.Map.AcquireLock(ctx, o.Obj)
		rval, ok := getObject(ctx, o.Obj)
		if !ok {
			unlock()
			if isFalse(f.Spec.ReportMissingObjectsInResults) {
				return nil, &types.ManagedObjectNotFound{Obj: o.Obj}
			}
			continue
		}
		if o.SelectSet == nil || isFalse(o.Skip) {
			refs = append(refs, o.Obj)
		}
		err := rr.selectSet(ctx, rval, o.SelectSet, &refs)
		unlock()
		if err != nil {
			return nil, err
		}
	}

	// Properties for the newcomers only; collect skips objects no PropSet type names.
	selected := make(map[types.ManagedObjectReference]bool, len(refs))
	for _, ref := range refs {
		if selected[ref] {
			continue
		}
		selected[ref] = true
		if _, known := f.refs[ref]; !known {
			ctx.WithLock(ref, func() { rr.collect(ctx, ref) })
		}
	}

	entered := make(map[types.ManagedObjectReference]bool, len(rr.Objects))
	for _, o := range rr.Objects {
		f.refs[o.Obj] = struct{}{}
		entered[o.Obj] = true
		ou := types.ObjectUpdate{Obj: o.Obj, Kind: types.ObjectUpdateKindEnter}
		for _, p := range o.PropSet {
			ou.ChangeSet = append(ou.ChangeSet, types.PropertyChange{Op: types.PropertyChangeOpAssign, Name: p.Name, Val: p.Val})
		}
		fu.ObjectSet = append(fu.ObjectSet, ou)
	}

	for ref := range f.refs {
		if !selected[ref] {
			delete(f.refs, ref)
			fu.ObjectSet = append(fu.ObjectSet, types.ObjectUpdate{Obj: ref, Kind: types.ObjectUpdateKindLeave})
		}
	}
	return entered, nil
}
