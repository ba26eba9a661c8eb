// Datastore space and VM snapshots, as vCenter reports them.
//
// vCenter keeps each Datastore's summary (capacity, freeSpace, uncommitted, accessible,
// maintenanceMode, type, url) and info.timestamp (when it last refreshed them) and reports a
// change of either to the property collector; each VM's snapshot tree (snapshot), its files
// (layoutEx: each file's type and size, each disk's chain of units from the base disk to the
// running delta, each snapshot's own files and chain) and runtime.consolidationNeeded likewise.
// The stock simulator gives datastores no parent (the fixture's are made by main.go), no url of
// the ds:///vmfs/volumes/<id>/ form, and makes snapshots without delta disks; here:
//
//   - every Datastore gets the datacenter's datastore folder as parent (a container view of the
//     root folder lists it, as vCenter's does) and summary.url ds://<its hosts' mount path>/;
//
//   - the fixture's "space" section (read beside main.go's) sets figures and adds datastores:
//
//     "space": {
//     "tick_seconds": 2,                    // how often figures move (default 20, vCenter's own refresh is slower)
//     "datastores": {"ds-shared-01": {"capacity": 1099511627776, "free": 120000000000,
//     "uncommitted": 500000000000, "fill_bytes_per_second": 0,
//     "accessible": true, "maintenance_mode": "normal"}},
//     "extra_datastores": [{"name": "vvol-01", "type": "VVOL", "id": "vvol:...", "capacity": ...}],
//     "snapshots": {"db01": {"tree": [{"name": "before-upgrade", "age_seconds": 400000,
//     "delta_bytes": 2000000000, "memory_bytes": 0, "parent": -1}],
//     "chain": 0, "grow_bytes_per_second": 0, "consolidation_needed": false,
//     "orphan_deltas": 0, "extra_files": 0}}
//     }
//
//     A datastore with fill_bytes_per_second loses that much free space every second (a tick at
//     a time); a VM with grow_bytes_per_second has its running delta disk grow as much, taken
//     from the free space of the datastore holding it: the datastore is filled by a growing
//     snapshot. Each change is reported as vCenter does: summary and info.timestamp, layoutEx.
//     An extra datastore is a Datastore object no host mounts (vCenter keeps listing one every
//     host lost: an inaccessible datastore, or a thin LUN whose pool ran out at capacity 0).
//
//   - a snapshot tree: each node's parent is the one before it unless "parent" says (-1: a root);
//     the last node is the current snapshot. "chain": N adds N more in a line (1,000: hostile).
//     Each snapshot has its state file (.vmsn, snapshotData) and, with memory_bytes, its memory
//     file (snapshotMemory); each disk gets a delta (descriptor and -sesparse extent) per
//     snapshot; "orphan_deltas" are deltas left with no snapshot (a failed delete: consolidation
//     needed); "extra_files" adds that many log files to layoutEx (hostile: 100,000).
//
// Hostile values are the fixture's to give: a negative capacity, 9223372036854775807, free above
// capacity. vCenter itself never sends them; the exporter must refuse them alone.
// POST /storagesim/space with datastore=NAME and any of capacity, free, uncommitted (bytes),
// accessible (true|false) sets a datastore's figures at run time and reports the change.
package main

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

type dsFigures struct {
	Capacity           *int64 `json:"capacity"`
	Free               *int64 `json:"free"`
	Uncommitted        *int64 `json:"uncommitted"`
	FillBytesPerSecond int64  `json:"fill_bytes_per_second"`
	Accessible         *bool  `json:"accessible"`
	MaintenanceMode    string `json:"maintenance_mode"`
}

type extraDatastore struct {
	dsFigures
	Name string `json:"name"`
	Type string `json:"type"` // VMFS, NFS, NFS41, VVOL, vsan
	ID   string `json:"id"`   // its id in /vmfs/volumes/<id> (default: from its name)
}

type snapshotNode struct {
	Name        string `json:"name"`
	Parent      *int   `json:"parent"`
	AgeSeconds  int64  `json:"age_seconds"`
	DeltaBytes  int64  `json:"delta_bytes"`
	MemoryBytes int64  `json:"memory_bytes"`
}

type vmSnapshotFixture struct {
	Tree                []snapshotNode `json:"tree"`
	Chain               int            `json:"chain"`
	GrowBytesPerSecond  int64          `json:"grow_bytes_per_second"`
	ConsolidationNeeded bool           `json:"consolidation_needed"`
	OrphanDeltas        int            `json:"orphan_deltas"`
	ExtraFiles          int            `json:"extra_files"`
}

type spaceFixture struct {
	TickSeconds float64                      `json:"tick_seconds"`
	Datastores  map[string]dsFigures         `json:"datastores"`
	Extra       []extraDatastore             `json:"extra_datastores"`
	Snapshots   map[string]vmSnapshotFixture `json:"snapshots"`
}

type growingDelta struct {
	vm        *simulator.VirtualMachine
	fileIndex int // its extent in vm.LayoutEx.File
	datastore *simulator.Datastore
	rate      int64
}

type spaceSim struct {
	reg     *simulator.Registry
	fx      spaceFixture
	mu      sync.Mutex
	byName  map[string]*simulator.Datastore
	filling map[*simulator.Datastore]int64
	growing []growingDelta
	ids     map[*simulator.Datastore]string // extra datastores' ids (the others': their hosts' mount path)
}

// readSpaceFixture reads the fixture's "space" section (none: nothing changes).
func readSpaceFixture(fixturePath string) spaceFixture {
	var fx struct {
		Space spaceFixture `json:"space"`
	}
	if fixturePath != "" {
		data, err := os.ReadFile(fixturePath)
		if err != nil {
			log.Fatal(err)
		}
		if err := json.Unmarshal(data, &fx); err != nil {
			log.Fatalf("%s: space: %v", fixturePath, err)
		}
	}
	if fx.Space.TickSeconds <= 0 {
		fx.Space.TickSeconds = 20
	}
	return fx.Space
}

// installDatastores places every datastore in its datacenter's datastore folder with its url, and
// adds the fixture's extra datastores; before the VMs are made. It returns what sets the
// fixture's figures and snapshots and starts the ticks, once the VMs exist.
func installDatastores(service *simulator.Service, reg *simulator.Registry, fixturePath string) func() {
	s := &spaceSim{reg: reg, fx: readSpaceFixture(fixturePath), byName: map[string]*simulator.Datastore{},
		filling: map[*simulator.Datastore]int64{}, ids: map[*simulator.Datastore]string{}}
	if s.fx.Datastores == nil {
		s.fx.Datastores = map[string]dsFigures{}
	}
	var firstFolder *simulator.Folder
	for _, obj := range reg.All("Datacenter") {
		dc := obj.(*simulator.Datacenter)
		folder := reg.Get(dc.DatastoreFolder).(*simulator.Folder)
		if firstFolder == nil {
			firstFolder = folder
		}
		for _, ref := range reg.All("Datastore") {
			ds := ref.(*simulator.Datastore)
			if ds.Parent == nil && strings.HasPrefix(ds.Self.Value, "datastore-"+dc.Self.Value+"-") {
				s.place(ds, folder)
			}
		}
	}
	for _, ref := range reg.All("Datastore") {
		ds := ref.(*simulator.Datastore)
		s.byName[ds.Name] = ds
	}
	for _, extra := range s.fx.Extra {
		if extra.Name == "" || extra.Type == "" {
			log.Fatalf("%s: space: an extra datastore needs a name and a type", fixturePath)
		}
		if s.byName[extra.Name] != nil {
			log.Fatalf("%s: space: datastore %q exists already", fixturePath, extra.Name)
		}
		if firstFolder == nil {
			log.Fatalf("%s: space: no datacenter for extra datastore %q", fixturePath, extra.Name)
		}
		id := extra.ID
		if id == "" {
			id = datastoreUUID(extra.Name)
		}
		dir, err := os.MkdirTemp("", "storagesim-extra")
		if err != nil {
			log.Fatal(err)
		}
		ds := &simulator.Datastore{}
		ds.Self = types.ManagedObjectReference{Type: "Datastore", Value: "datastore-extra-" + extra.Name}
		ds.Name = extra.Name
		ds.Summary = types.DatastoreSummary{Datastore: &ds.Self, Name: extra.Name, Url: dir, Accessible: true, Type: extra.Type}
		ds.Info = &types.DatastoreInfo{Name: extra.Name, Url: dir}
		s.ids[ds] = id
		reg.Put(ds)
		s.place(ds, firstFolder)
		s.byName[ds.Name] = ds
		s.fx.Datastores[extra.Name] = mergeFigures(s.fx.Datastores[extra.Name], extra.dsFigures)
	}
	for name := range s.fx.Datastores {
		if s.byName[name] == nil {
			log.Fatalf("%s: space: no datastore %q", fixturePath, name)
		}
	}
	service.HandleFunc("/storagesim/space", s.serve)
	return func() {
		ctx := simulator.NewContext()
		ctx.Map = reg
		s.urls()
		now := time.Now()
		for _, ds := range s.byName {
			ds.Info.GetDatastoreInfo().Timestamp = &now // vCenter's last refresh
		}
		for name, f := range s.fx.Datastores {
			ds := s.byName[name]
			applyFigures(&ds.Summary, f)
			if f.FillBytesPerSecond != 0 {
				s.filling[ds] = f.FillBytesPerSecond
			}
		}
		names := make([]string, 0, len(s.fx.Snapshots))
		for name := range s.fx.Snapshots {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if err := s.snapshots(ctx, name, s.fx.Snapshots[name], now); err != nil {
				log.Fatalf("%s: space: VM %s: %v", fixturePath, name, err)
			}
		}
		if len(s.filling) > 0 || len(s.growing) > 0 {
			go s.tick(time.Duration(s.fx.TickSeconds * float64(time.Second)))
		}
	}
}

// urls gives every datastore vCenter's url, ds:///vmfs/volumes/<id>/. The simulator keeps a
// datastore's files under summary.url (path.Join(url, file): ds:/vmfs/volumes/<id>/file, relative),
// so the process works from a directory where ds:/vmfs/volumes/<id> links to each one's files.
// Called once everything the flags name is read (a relative path would now be read from there).
func (s *spaceSim) urls() {
	root, err := os.MkdirTemp("", "storagesim-urls")
	if err != nil {
		log.Fatal(err)
	}
	for _, ref := range s.reg.All("Datastore") {
		ds := ref.(*simulator.Datastore)
		id := s.ids[ds]
		if id == "" && len(ds.Host) > 0 {
			id = strings.TrimPrefix(ds.Host[0].MountInfo.Path, "/vmfs/volumes/")
		}
		if id == "" || strings.HasPrefix(ds.Summary.Url, "ds://") {
			continue
		}
		link := path.Join(root, "ds:", "vmfs", "volumes", id)
		if _, err := os.Lstat(link); err == nil {
			// The generated inventory's datastores of one name in several datacenters share a mount
			// path (-datacenters N); vCenter's urls are unique, so the later one is told apart by its id.
			id += "-" + ds.Self.Value
			link = path.Join(root, "ds:", "vmfs", "volumes", id)
		}
		if err := os.MkdirAll(path.Dir(link), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.Symlink(ds.Summary.Url, link); err != nil {
			log.Fatal(err)
		}
		ds.Summary.Url = "ds:///vmfs/volumes/" + id + "/"
	}
	if err := os.Chdir(root); err != nil {
		log.Fatal(err)
	}
}

func mergeFigures(a, b dsFigures) dsFigures {
	if b.Capacity != nil {
		a.Capacity = b.Capacity
	}
	if b.Free != nil {
		a.Free = b.Free
	}
	if b.Uncommitted != nil {
		a.Uncommitted = b.Uncommitted
	}
	if b.Accessible != nil {
		a.Accessible = b.Accessible
	}
	if b.FillBytesPerSecond != 0 {
		a.FillBytesPerSecond = b.FillBytesPerSecond
	}
	if b.MaintenanceMode != "" {
		a.MaintenanceMode = b.MaintenanceMode
	}
	return a
}

func applyFigures(sum *types.DatastoreSummary, f dsFigures) {
	if f.Capacity != nil {
		sum.Capacity = *f.Capacity
	}
	if f.Free != nil {
		sum.FreeSpace = *f.Free
	}
	if f.Uncommitted != nil {
		sum.Uncommitted = *f.Uncommitted
	}
	if f.Accessible != nil {
		sum.Accessible = *f.Accessible
	}
	if f.MaintenanceMode != "" {
		sum.MaintenanceMode = f.MaintenanceMode
	} else if sum.MaintenanceMode == "" {
		sum.MaintenanceMode = string(types.DatastoreSummaryMaintenanceModeStateNormal)
	}
}

func (s *spaceSim) place(ds *simulator.Datastore, folder *simulator.Folder) {
	ds.Parent = &folder.Self
	folder.ChildEntity = append(folder.ChildEntity, ds.Self)
}

// report tells the property collector a datastore's figures changed, as vCenter does after a refresh.
func (s *spaceSim) report(ctx *simulator.Context, ds *simulator.Datastore) {
	now := time.Now()
	sum := ds.Summary
	// The registry applies a change to info.timestamp through DatastoreInfo's own fields, which a
	// subtype (VmfsDatastoreInfo, NasDatastoreInfo ...) does not have at the same places: it is
	// applied to a plain copy, then set on the datastore's own info.
	own := ds.Info
	plain := *own.GetDatastoreInfo()
	ds.Info = &plain
	s.reg.Update(ctx, ds, []types.PropertyChange{{Name: "summary", Val: sum}, {Name: "info.timestamp", Val: &now}})
	own.GetDatastoreInfo().Timestamp = &now
	own.GetDatastoreInfo().FreeSpace = sum.FreeSpace
	ds.Info = own
}

func (s *spaceSim) tick(every time.Duration) {
	ctx := simulator.NewContext()
	ctx.Map = s.reg
	seconds := every.Seconds()
	for range time.Tick(every) {
		s.mu.Lock()
		changed := map[*simulator.Datastore]bool{}
		for ds, rate := range s.filling {
			s.reg.WithLock(ctx, ds, func() { take(ds, int64(float64(rate)*seconds)) })
			changed[ds] = true
		}
		for _, g := range s.growing {
			grow := int64(float64(g.rate) * seconds)
			var layout types.VirtualMachineFileLayoutEx
			s.reg.WithLock(ctx, g.vm, func() {
				file := &g.vm.LayoutEx.File[g.fileIndex]
				file.Size += grow
				file.UniqueSize += grow
				g.vm.LayoutEx.Timestamp = time.Now()
				layout = *g.vm.LayoutEx
			})
			s.reg.Update(ctx, g.vm, []types.PropertyChange{{Name: "layoutEx", Val: &layout}})
			if g.datastore != nil {
				s.reg.WithLock(ctx, g.datastore, func() { take(g.datastore, grow) })
				changed[g.datastore] = true
			}
		}
		for ds := range changed {
			s.report(ctx, ds)
		}
		s.mu.Unlock()
	}
}

// take removes bytes from a datastore's free space (never below 0, as VMFS stops writers there).
func take(ds *simulator.Datastore, bytes int64) {
	free := ds.Summary.FreeSpace - bytes
	if free < 0 {
		free = 0
	}
	ds.Summary.FreeSpace = free
	ds.Info.GetDatastoreInfo().FreeSpace = free
}

func (s *spaceSim) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST datastore=NAME&capacity=&free=&uncommitted=&accessible=", http.StatusMethodNotAllowed)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ds := s.byName[r.FormValue("datastore")]
	if ds == nil {
		http.Error(w, fmt.Sprintf("no datastore %q", r.FormValue("datastore")), http.StatusNotFound)
		return
	}
	var f dsFigures
	for field, to := range map[string]**int64{"capacity": &f.Capacity, "free": &f.Free, "uncommitted": &f.Uncommitted} {
		if raw := r.FormValue(field); raw != "" {
			v, err := strconv.ParseInt(raw, 10, 64)
			if err != nil {
				http.Error(w, field+": "+err.Error(), http.StatusBadRequest)
				return
			}
			*to = &v
		}
	}
	if raw := r.FormValue("accessible"); raw != "" {
		v := raw == "true"
		f.Accessible = &v
	}
	f.MaintenanceMode = r.FormValue("maintenance_mode")
	applyFigures(&ds.Summary, f)
	ctx := simulator.NewContext()
	ctx.Map = s.reg
	s.report(ctx, ds)
	w.WriteHeader(http.StatusNoContent)
}

// --- snapshots ----------------------------------------------------------------------------

// withoutDisks drops the disk files the simulator laid out when it made the VM (on its first
// datastore), keeping those of the units in base.
func withoutDisks(files []types.VirtualMachineFileLayoutExFileInfo, base map[int32]types.VirtualMachineFileLayoutExDiskUnit) []types.VirtualMachineFileLayoutExFileInfo {
	keep := map[int32]bool{}
	for _, unit := range base {
		for _, key := range unit.FileKey {
			keep[key] = true
		}
	}
	out := files[:0]
	for _, f := range files {
		if keep[f.Key] || (f.Type != string(types.VirtualMachineFileLayoutExFileTypeDiskDescriptor) &&
			f.Type != string(types.VirtualMachineFileLayoutExFileTypeDiskExtent)) {
			out = append(out, f)
		}
	}
	return out
}

func (s *spaceSim) vmByName(name string) *simulator.VirtualMachine {
	for _, obj := range s.reg.All("VirtualMachine") {
		if vm := obj.(*simulator.VirtualMachine); vm.Name == name {
			return vm
		}
	}
	return nil
}

func datastoreName(file string) string {
	if strings.HasPrefix(file, "[") {
		if end := strings.Index(file, "]"); end > 0 {
			return file[1:end]
		}
	}
	return ""
}

// snapshots gives a VM the fixture's snapshot tree, with its files and delta disks in layoutEx.
func (s *spaceSim) snapshots(ctx *simulator.Context, name string, fx vmSnapshotFixture, now time.Time) error {
	vm := s.vmByName(name)
	if vm == nil {
		return fmt.Errorf("no such VM")
	}
	nodes := append([]snapshotNode(nil), fx.Tree...)
	for i := 0; i < fx.Chain; i++ {
		nodes = append(nodes, snapshotNode{Name: fmt.Sprintf("chain-%d", i+1), AgeSeconds: int64(fx.Chain - i), DeltaBytes: 1 << 20})
	}
	parents := make([]int, len(nodes))
	for i, n := range nodes {
		parents[i] = i - 1
		if n.Parent != nil {
			if *n.Parent >= i || *n.Parent < -1 {
				return fmt.Errorf("snapshot %d: parent %d is not an earlier snapshot", i, *n.Parent)
			}
			parents[i] = *n.Parent
		}
	}
	layout := vm.LayoutEx
	if layout == nil {
		layout = &types.VirtualMachineFileLayoutEx{}
	}
	nextKey := int32(0)
	for _, f := range layout.File {
		if f.Key >= nextKey {
			nextKey = f.Key + 1
		}
	}
	addFile := func(name, kind string, size int64) int32 {
		key := nextKey
		nextKey++
		layout.File = append(layout.File, types.VirtualMachineFileLayoutExFileInfo{Key: key, Name: name, Type: kind,
			Size: size, UniqueSize: size, Accessible: types.NewBool(true)})
		return key
	}
	// each virtual disk's base unit (descriptor and flat extent) as its backing names it now
	// (main.go moved the disks onto the fixture's datastores after the simulator laid them out);
	// the snapshot files go beside the first disk, as the VM's working directory
	base := map[int32]types.VirtualMachineFileLayoutExDiskUnit{}
	baseName := map[int32]string{}
	vmDir := path.Dir(vm.Config.Files.VmPathName)
	layout.Disk = nil
	for _, dev := range vm.Config.Hardware.Device {
		disk, ok := dev.(*types.VirtualDisk)
		if !ok {
			continue
		}
		backing, ok := disk.Backing.(types.BaseVirtualDeviceFileBackingInfo)
		if !ok {
			continue
		}
		name := backing.GetVirtualDeviceFileBackingInfo().FileName
		if len(baseName) == 0 {
			vmDir = path.Dir(name)
		}
		stem := strings.TrimSuffix(name, ".vmdk")
		desc := addFile(name, string(types.VirtualMachineFileLayoutExFileTypeDiskDescriptor), 512)
		extent := addFile(stem+"-flat.vmdk", string(types.VirtualMachineFileLayoutExFileTypeDiskExtent), disk.CapacityInBytes)
		base[disk.Key] = types.VirtualMachineFileLayoutExDiskUnit{FileKey: []int32{desc, extent}}
		baseName[disk.Key] = stem
	}
	layout.File = withoutDisks(layout.File, base)
	deltas := make([]map[int32]types.VirtualMachineFileLayoutExDiskUnit, len(nodes)+fx.OrphanDeltas)
	var newest struct {
		index int
		name  string
	}
	// a snapshot's delta holds what was written after it: it stays while the snapshot has children
	// or is on the current branch; a leaf left behind by a revert lost its own (ESXi deletes it)
	kept := make([]bool, len(deltas))
	for i := len(nodes) - 1; i >= 0; i = parents[i] {
		kept[i] = true
	}
	for i := range nodes {
		if parents[i] >= 0 {
			kept[parents[i]] = true
		}
	}
	for i := range deltas {
		deltas[i] = map[int32]types.VirtualMachineFileLayoutExDiskUnit{}
		if i < len(nodes) && !kept[i] {
			continue
		}
		size := int64(1 << 20)
		if i < len(nodes) && nodes[i].DeltaBytes > 0 {
			size = nodes[i].DeltaBytes
		}
		for key := range base {
			stem := fmt.Sprintf("%s-%06d", baseName[key], i+1)
			desc := addFile(stem+".vmdk", string(types.VirtualMachineFileLayoutExFileTypeDiskDescriptor), 512)
			extent := addFile(stem+"-sesparse.vmdk", string(types.VirtualMachineFileLayoutExFileTypeDiskExtent), size)
			deltas[i][key] = types.VirtualMachineFileLayoutExDiskUnit{FileKey: []int32{desc, extent}}
			newest.index, newest.name = len(layout.File)-1, stem
		}
	}
	chainOf := func(upTo int, include bool, orphans bool) []types.VirtualMachineFileLayoutExDiskLayout {
		var path []int // the snapshots from the root down to upTo
		for i := upTo; i >= 0; i = parents[i] {
			path = append(path, i)
		}
		var out []types.VirtualMachineFileLayoutExDiskLayout
		keys := make([]int32, 0, len(base))
		for key := range base {
			keys = append(keys, key)
		}
		sort.Slice(keys, func(a, b int) bool { return keys[a] < keys[b] })
		for _, key := range keys {
			chain := []types.VirtualMachineFileLayoutExDiskUnit{base[key]}
			for j := len(path) - 1; j >= 0; j-- {
				if path[j] == upTo && !include {
					continue
				}
				chain = append(chain, deltas[path[j]][key])
			}
			if orphans {
				for j := len(nodes); j < len(deltas); j++ {
					chain = append(chain, deltas[j][key])
				}
			}
			out = append(out, types.VirtualMachineFileLayoutExDiskLayout{Key: key, Chain: chain})
		}
		return out
	}
	trees := make([]types.VirtualMachineSnapshotTree, len(nodes))
	refs := make([]types.ManagedObjectReference, len(nodes))
	for i, n := range nodes {
		snap := &simulator.VirtualMachineSnapshot{}
		snap.Self = types.ManagedObjectReference{Type: "VirtualMachineSnapshot", Value: fmt.Sprintf("snapshot-%s-%d", vm.Self.Value, i+1)}
		snap.Vm = vm.Self
		snap.Config = *vm.Config
		s.reg.Put(snap)
		refs[i] = snap.Self
		memory := int64(32 << 10)
		data := addFile(fmt.Sprintf("%s/%s-Snapshot%d.vmsn", vmDir, vm.Name, i+1), string(types.VirtualMachineFileLayoutExFileTypeSnapshotData), memory)
		memoryKey := int32(-1)
		if n.MemoryBytes > 0 {
			memoryKey = addFile(fmt.Sprintf("%s/%s-Snapshot%d.vmem", vmDir, vm.Name, i+1), string(types.VirtualMachineFileLayoutExFileTypeSnapshotMemory), n.MemoryBytes)
		}
		layout.Snapshot = append(layout.Snapshot, types.VirtualMachineFileLayoutExSnapshotLayout{Key: snap.Self, DataKey: data,
			MemoryKey: memoryKey, Disk: chainOf(i, false, false)})
		trees[i] = types.VirtualMachineSnapshotTree{Snapshot: snap.Self, Vm: vm.Self, Name: n.Name, Id: int32(i + 1),
			CreateTime: now.Add(-time.Duration(n.AgeSeconds) * time.Second), State: vm.Runtime.PowerState,
			ReplaySupported: types.NewBool(false)}
	}
	// children after their parents: built from the last node back, so each child is complete
	// before it is copied into its parent (no recursion: a chain 1,000 deep is a loop)
	children := make([][]int, len(nodes))
	var roots []int
	for i := range nodes {
		if parents[i] < 0 {
			roots = append(roots, i)
		} else {
			children[parents[i]] = append(children[parents[i]], i)
		}
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		for _, c := range children[i] {
			trees[i].ChildSnapshotList = append(trees[i].ChildSnapshotList, trees[c])
		}
	}
	current := len(nodes) - 1
	if current >= 0 {
		layout.Disk = chainOf(current, true, true)
		info := &types.VirtualMachineSnapshotInfo{CurrentSnapshot: &refs[current]}
		for _, r := range roots {
			info.RootSnapshotList = append(info.RootSnapshotList, trees[r])
		}
		vm.Snapshot = info
		vm.RootSnapshot = []types.ManagedObjectReference{refs[roots[0]]}
	} else if fx.OrphanDeltas > 0 {
		var keys []int32
		for key := range base {
			keys = append(keys, key)
		}
		sort.Slice(keys, func(a, b int) bool { return keys[a] < keys[b] })
		layout.Disk = nil
		for _, key := range keys {
			chain := []types.VirtualMachineFileLayoutExDiskUnit{base[key]}
			for j := range deltas {
				chain = append(chain, deltas[j][key])
			}
			layout.Disk = append(layout.Disk, types.VirtualMachineFileLayoutExDiskLayout{Key: key, Chain: chain})
		}
	}
	for i := 0; i < fx.ExtraFiles; i++ {
		addFile(fmt.Sprintf("%s/vmware-%d.log", vmDir, i), string(types.VirtualMachineFileLayoutExFileTypeLog), 4096)
	}
	layout.Timestamp = now
	vm.LayoutEx = layout
	if fx.GrowBytesPerSecond > 0 && len(base) > 0 {
		s.growing = append(s.growing, growingDelta{vm: vm, fileIndex: newest.index, datastore: s.byName[datastoreName(newest.name)],
			rate: fx.GrowBytesPerSecond})
	}
	changes := []types.PropertyChange{{Name: "layoutEx", Val: layout}}
	if fx.ConsolidationNeeded {
		changes = append(changes, types.PropertyChange{Name: "runtime.consolidationNeeded", Val: true})
	}
	if vm.Snapshot != nil {
		changes = append(changes, types.PropertyChange{Name: "snapshot", Val: vm.Snapshot})
	}
	s.reg.Update(ctx, vm, changes)
	return nil
}
