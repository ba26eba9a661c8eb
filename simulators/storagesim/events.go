// ESXi's storage events, as vCenter serves them: an event manager whose collectors, pages and
// catalog follow the vSphere API reference (EventManager, EventHistoryCollector, EventFilterSpec),
// and a test's control that posts the storage events ESXi raises, with their real arguments.
//
// govmomi's simulator has an EventManager (CreateCollectorForEvents, ReadNextEvents, ...), but it
// keeps only the newest 1,000 events, stamps every event with the time it is posted and numbers it
// itself, so it can neither send events out of order or repeated nor a page past maxCount. Its
// methods are therefore answered here (a hook of the registry, chained as hoststate.go's is):
// CreateCollectorForEvents, QueryEvents and PostEvent on the EventManager, and every method of the
// collectors made here. The stock manager keeps the events the simulator raises itself (VM power
// operations ...): none is a storage event. Its description.eventInfo gains the storage ids with
// their messages, as a vCenter 8.0 U3 lists them.
//
// Rules kept (vSphere API reference):
//   - CreateCollectorForEvents: filter.maxCount (the page size) 0 (default 10) to 1000, else
//     InvalidArgument; at most 32 collectors per session ("event.maxCollectors"), else InvalidState.
//     A collector belongs to its session: it is gone (ManagedObjectNotFound) once the session is.
//   - eventTypeId matches an EventEx's eventTypeId, time.beginTime/endTime its createdTime
//     (inclusive), as the reference describes.
//   - ReadNextEvents/ReadPreviousEvents: maxCount > 0, else InvalidArgument; the scrollable view
//     starts before the oldest event and moves with each read; events posted later are appended.
//   - latestPage: the newest `maxCount` events, newest first, reported to WaitForUpdatesEx.
//
// Control (no vSphere API): POST /storagesim/events with a JSON body
//
//	{"events": [{"host": "NAME", "id": "esx.problem.vmfs.heartbeat.timedout",
//	             "arguments": ["5f1a...-...", "DS01"], "ds": "", "key": 0, "age_seconds": 0}],
//	 "distinct_ids": 0, "page_events": 0}
//
// posts each event as the host's EventEx (key: the next one, or the one given: a repeat; age: a
// createdTime that many seconds back: out of order). Hostile switches: distinct_ids N posts N
// events of N distinct ids of the storage families that no filter asked for, and lists the ids in
// the catalog; page_events N posts N copies of the first event (new keys) that the next
// ReadNextEvents answers in one page, whatever its maxCount.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// -events-state FILE keeps the storage events posted through the control in FILE, and reads them
// back at start: vCenter keeps its events (and their keys) in its database across a restart, which
// a test of the exporter's follower across a restart needs.
var eventsState = flag.String("events-state", "", "file the storage events are kept in across a restart (vCenter's database)")

const (
	eventMaxPage       = 1000
	eventMaxCollectors = 32
	eventDefaultPage   = 10
)

// storageEventInfo: the ids this simulator posts, with vCenter's message templates.
var storageEventInfo = [][3]string{
	{"esx.problem.vmfs.heartbeat.timedout", "info", "Lost access to volume {1} ({2}) due to connectivity issues. Recovery attempt is in progress and outcome will be reported shortly."},
	{"esx.problem.vmfs.heartbeat.recovered", "info", "Successfully restored access to volume {1} ({2}) following connectivity issues."},
	{"esx.problem.vmfs.heartbeat.unrecoverable", "error", "Lost connectivity to volume {1} ({2}) and subsequent recovery attempts have failed."},
	{"esx.problem.storage.apd.start", "warning", "Device or filesystem with identifier {1} has entered the All Paths Down state."},
	{"esx.problem.storage.apd.timeout", "warning", "Device or filesystem with identifier {1} has entered the All Paths Down Timeout state after being in the All Paths Down state for 140 seconds. I/Os will now be fast failed."},
	{"esx.clear.storage.apd.exit", "info", "Device or filesystem with identifier {1} has exited the All Paths Down state."},
	{"esx.problem.scsi.device.state.permanentloss", "error", "Device: {1} has been removed or is permanently inaccessible. Affected datastores (if any): {2}."},
	{"esx.problem.scsi.device.io.latency.high", "warning", "Device {1} performance has deteriorated. I/O latency increased from average value of {2} microseconds to {3} microseconds."},
	{"esx.clear.scsi.device.io.latency.improved", "info", "Device {1} performance has improved. I/O latency reduced from {2} microseconds to {3} microseconds."},
	{"esx.problem.storage.redundancy.lost", "error", "Lost path redundancy to storage device {1}. Path {2} is down. Affected datastores: {3}."},
	{"esx.problem.storage.redundancy.degraded", "warning", "Path redundancy to storage device {1} degraded. Path {2} is down. Affected datastores: {3}."},
	{"esx.clear.storage.redundancy.restored", "info", "Path redundancy to storage device {1} (Datastores: {2}) restored. Path {3} is active again."},
	{"esx.problem.scsi.device.thinprov.atquota", "warning", "Space utilization on thin-provisioned device {1} exceeded configured threshold. Affected datastores (if any): {2}."},
	{"esx.problem.vmfs.ats.support.lost", "error", "ATS-Only VMFS volume {1} not mounted. Host does not support ATS or ATS initialization has failed."},
}

type storageEvents struct {
	reg        *simulator.Registry
	mu         sync.Mutex
	log        []types.BaseEvent // every storage event, in the order posted
	key        int32
	collectors map[types.ManagedObjectReference]*eventCollector
	hosts      map[string]*simulator.HostSystem
	manager    *eventManagerCalls
}

// eventManagerCalls answers the EventManager's methods that this file takes over.
type eventManagerCalls struct {
	mo.EventManager
	ev *storageEvents
}

type eventCollector struct {
	mo.EventHistoryCollector
	ev      *storageEvents
	filter  types.EventFilterSpec
	size    int
	page    []types.BaseEvent // the events it holds, oldest first
	pos     int               // the scrollable view: events before pos have been read
	pending int               // hostile: events the next read hands over whatever its maxCount
	session string
}

func installEvents(service *simulator.Service, reg *simulator.Registry, hosts []*simulator.HostSystem) {
	ev := &storageEvents{reg: reg, collectors: map[types.ManagedObjectReference]*eventCollector{}, hosts: map[string]*simulator.HostSystem{}}
	for _, h := range hosts {
		ev.hosts[h.Name] = h
	}
	stock := reg.EventManager()
	ev.manager = &eventManagerCalls{EventManager: stock.EventManager, ev: ev}
	for _, info := range storageEventInfo {
		stock.Description.EventInfo = append(stock.Description.EventInfo, types.EventDescriptionEventDetail{
			Key: info[0], Category: info[1], FullFormat: info[2], Description: info[2],
		})
	}
	ev.manager.Description = stock.Description
	// The call is redirected to this manager by its reference: the simulator looks the object up
	// again by method.This after the hook, so returning an object from the hook is not enough.
	ev.manager.Self = types.ManagedObjectReference{Type: "EventManager", Value: "storagesim-events"}
	reg.Put(ev.manager)
	previous := reg.Handler
	reg.Handler = func(ctx *simulator.Context, method *simulator.Method) (mo.Reference, types.BaseMethodFault) {
		if method.This == stock.Self {
			switch method.Name {
			case "CreateCollectorForEvents", "QueryEvents", "PostEvent":
				method.This = ev.manager.Self
				return ev.manager, nil
			}
		}
		if previous != nil {
			return previous(ctx, method)
		}
		return nil, nil
	}
	ev.load()
	service.HandleFunc("/storagesim/events", ev.serve)
}

func (m *eventManagerCalls) CreateCollectorForEvents(ctx *simulator.Context, req *types.CreateCollectorForEvents) soap.HasFault {
	body := new(methods.CreateCollectorForEventsBody)
	ev := m.ev
	size := int(req.Filter.MaxCount)
	if size == 0 {
		size = eventDefaultPage
	}
	if size < 0 || size > eventMaxPage {
		body.Fault_ = simulator.Fault("", &types.InvalidArgument{InvalidProperty: "filter.maxCount"})
		return body
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	mine := 0
	for _, c := range ev.collectors {
		if c.session == ctx.Session.Key {
			mine++
		}
	}
	if mine >= eventMaxCollectors {
		body.Fault_ = simulator.Fault("Too many event collectors to create", new(types.InvalidState))
		return body
	}
	c := &eventCollector{ev: ev, filter: req.Filter, size: size, session: ctx.Session.Key}
	for _, e := range ev.log {
		if c.matches(e) {
			c.page = append(c.page, e)
		}
	}
	c.LatestPage = c.latest()
	c.Self.Type = "EventHistoryCollector" // the session names it with a unique value
	ref := ctx.Session.Put(c).Reference()
	ev.collectors[ref] = c
	body.Res = &types.CreateCollectorForEventsResponse{Returnval: ref}
	return body
}

func (m *eventManagerCalls) QueryEvents(ctx *simulator.Context, req *types.QueryEvents) soap.HasFault {
	ev := m.ev
	ev.mu.Lock()
	defer ev.mu.Unlock()
	c := &eventCollector{filter: req.Filter, size: eventMaxPage}
	for _, e := range ev.log {
		if c.matches(e) {
			c.page = append(c.page, e)
		}
	}
	return &methods.QueryEventsBody{Res: &types.QueryEventsResponse{Returnval: c.latest()}}
}

// PostEvent through the API: the server numbers and stamps it, as vCenter does.
func (m *eventManagerCalls) PostEvent(ctx *simulator.Context, req *types.PostEvent) soap.HasFault {
	m.ev.post([]types.BaseEvent{req.EventToPost}, false, 0, false)
	return &methods.PostEventBody{Res: new(types.PostEventResponse)}
}

func (c *eventCollector) matches(event types.BaseEvent) bool {
	e := event.GetEvent()
	if t := c.filter.Time; t != nil {
		if t.BeginTime != nil && e.CreatedTime.Before(*t.BeginTime) {
			return false
		}
		if t.EndTime != nil && e.CreatedTime.After(*t.EndTime) {
			return false
		}
	}
	if len(c.filter.EventTypeId) == 0 {
		return true
	}
	id := ""
	if x, ok := event.(*types.EventEx); ok {
		id = x.EventTypeId
	}
	for _, want := range c.filter.EventTypeId {
		if want == id {
			return true
		}
	}
	return false
}

// latest is the latestPage property: the newest `size` events, newest first.
func (c *eventCollector) latest() []types.BaseEvent {
	var out []types.BaseEvent
	for i := len(c.page) - 1; i >= 0 && len(out) < c.size; i-- {
		out = append(out, c.page[i])
	}
	return out
}

func (c *eventCollector) ReadNextEvents(ctx *simulator.Context, req *types.ReadNextEvents) soap.HasFault {
	body := new(methods.ReadNextEventsBody)
	if req.MaxCount <= 0 {
		body.Fault_ = simulator.Fault("", &types.InvalidArgument{InvalidProperty: "maxCount"})
		return body
	}
	c.ev.mu.Lock()
	defer c.ev.mu.Unlock()
	n := int(req.MaxCount)
	if c.pending > n {
		n = c.pending // hostile: a page past maxCount
	}
	c.pending = 0
	end := c.pos + n
	if end > len(c.page) {
		end = len(c.page)
	}
	body.Res = &types.ReadNextEventsResponse{Returnval: append([]types.BaseEvent(nil), c.page[c.pos:end]...)}
	c.pos = end
	return body
}

func (c *eventCollector) ReadPreviousEvents(ctx *simulator.Context, req *types.ReadPreviousEvents) soap.HasFault {
	body := new(methods.ReadPreviousEventsBody)
	if req.MaxCount <= 0 {
		body.Fault_ = simulator.Fault("", &types.InvalidArgument{InvalidProperty: "maxCount"})
		return body
	}
	c.ev.mu.Lock()
	defer c.ev.mu.Unlock()
	start := c.pos - int(req.MaxCount)
	if start < 0 {
		start = 0
	}
	var out []types.BaseEvent
	for i := c.pos - 1; i >= start; i-- {
		out = append(out, c.page[i])
	}
	c.pos = start
	body.Res = &types.ReadPreviousEventsResponse{Returnval: out}
	return body
}

func (c *eventCollector) ResetCollector(ctx *simulator.Context, req *types.ResetCollector) soap.HasFault {
	c.ev.mu.Lock()
	c.pos = len(c.page) - len(c.latest()) // just before the latest page
	c.ev.mu.Unlock()
	return &methods.ResetCollectorBody{Res: new(types.ResetCollectorResponse)}
}

func (c *eventCollector) RewindCollector(ctx *simulator.Context, req *types.RewindCollector) soap.HasFault {
	c.ev.mu.Lock()
	c.pos = 0
	c.ev.mu.Unlock()
	return &methods.RewindCollectorBody{Res: new(types.RewindCollectorResponse)}
}

func (c *eventCollector) SetCollectorPageSize(ctx *simulator.Context, req *types.SetCollectorPageSize) soap.HasFault {
	body := new(methods.SetCollectorPageSizeBody)
	if req.MaxCount <= 0 || req.MaxCount > eventMaxPage {
		body.Fault_ = simulator.Fault("", &types.InvalidArgument{InvalidProperty: "maxCount"})
		return body
	}
	c.ev.mu.Lock()
	c.size = int(req.MaxCount)
	latest := c.latest()
	c.ev.mu.Unlock()
	c.ev.reg.Update(simulatorContext(c.ev.reg), c, []types.PropertyChange{{Name: "latestPage", Val: latest}})
	body.Res = new(types.SetCollectorPageSizeResponse)
	return body
}

func (c *eventCollector) DestroyCollector(ctx *simulator.Context, req *types.DestroyCollector) soap.HasFault {
	c.ev.mu.Lock()
	delete(c.ev.collectors, req.This)
	c.ev.mu.Unlock()
	ctx.Session.Remove(ctx, req.This)
	return &methods.DestroyCollectorBody{Res: new(types.DestroyCollectorResponse)}
}

func simulatorContext(reg *simulator.Registry) *simulator.Context {
	ctx := simulator.NewContext()
	ctx.Map = reg
	return ctx
}

// post appends events to the log and to every collector whose filter takes them (every one with
// unfiltered: a server that sends what was not asked), and reports the collectors' latestPage.
// keep: the events carry their own key and time (out of order, repeated); else numbered and
// stamped now. onePage: the next read of each collector hands them over in one page.
func (ev *storageEvents) post(events []types.BaseEvent, keep bool, _ int, unfiltered bool) {
	ev.mu.Lock()
	now := time.Now()
	for _, event := range events {
		e := event.GetEvent()
		if !keep || e.Key == 0 {
			ev.key++
			e.Key = ev.key
			e.ChainId = e.Key
		} else if e.Key > ev.key {
			ev.key = e.Key
		}
		if !keep || e.CreatedTime.IsZero() {
			e.CreatedTime = now
		}
		ev.log = append(ev.log, event)
	}
	var changed []*eventCollector
	for _, c := range ev.collectors {
		took := 0
		for _, event := range events {
			if unfiltered || c.matches(event) {
				c.page = append(c.page, event)
				took++
			}
		}
		if took > 0 {
			changed = append(changed, c)
		}
	}
	latest := map[*eventCollector][]types.BaseEvent{}
	for _, c := range changed {
		latest[c] = c.latest()
	}
	ev.mu.Unlock()
	ctx := simulatorContext(ev.reg)
	for c, page := range latest {
		ev.reg.Update(ctx, c, []types.PropertyChange{{Name: "latestPage", Val: page}})
	}
}

// A posted event, as the control's JSON gives it.
type postedEvent struct {
	Host       string   `json:"host"`
	ID         string   `json:"id"`
	Arguments  []string `json:"arguments"`
	Ds         string   `json:"ds"`
	Key        int32    `json:"key"`
	AgeSeconds float64  `json:"age_seconds"`
}

// keptEvent is one line of the -events-state file.
type keptEvent struct {
	postedEvent
	Created time.Time `json:"created"`
}

// load reads the events a previous run kept, in their order, with their keys and times.
func (ev *storageEvents) load() {
	if *eventsState == "" {
		return
	}
	f, err := os.Open(*eventsState)
	if os.IsNotExist(err) {
		return
	} else if err != nil {
		log.Fatalf("-events-state: %v", err)
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; scanner.Scan(); line++ {
		var kept keptEvent
		if err := json.Unmarshal(scanner.Bytes(), &kept); err != nil {
			log.Fatalf("-events-state %s:%d: %v", *eventsState, line, err)
		}
		e, err := ev.eventEx(kept.postedEvent)
		if err != nil {
			log.Fatalf("-events-state %s:%d: %v", *eventsState, line, err)
		}
		e.Key, e.ChainId, e.CreatedTime = kept.Key, kept.Key, kept.Created
		ev.log = append(ev.log, e)
		if kept.Key > ev.key {
			ev.key = kept.Key
		}
	}
}

// keep appends posted events to the -events-state file.
func (ev *storageEvents) keep(posted []postedEvent, events []types.BaseEvent) {
	if *eventsState == "" {
		return
	}
	f, err := os.OpenFile(*eventsState, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		log.Printf("-events-state: %v", err)
		return
	}
	defer f.Close()
	for i, p := range posted {
		e := events[i].GetEvent()
		p.Key, p.AgeSeconds = e.Key, 0
		line, _ := json.Marshal(keptEvent{postedEvent: p, Created: e.CreatedTime})
		f.Write(append(line, '\n'))
	}
}

type postRequest struct {
	Events      []postedEvent `json:"events"`
	DistinctIDs int           `json:"distinct_ids"`
	PageEvents  int           `json:"page_events"`
}

// eventEx builds the EventEx a host's storage event is in vCenter: the id in eventTypeId, the
// arguments "1", "2", ... as the message's placeholders, the host as its object.
func (ev *storageEvents) eventEx(p postedEvent) (*types.EventEx, error) {
	h := ev.hosts[p.Host]
	if h == nil {
		return nil, fmt.Errorf("no host %q", p.Host)
	}
	if p.ID == "" {
		return nil, fmt.Errorf("an event without an id")
	}
	e := &types.EventEx{EventTypeId: p.ID, Severity: "warning", ObjectId: h.Self.Value, ObjectType: "HostSystem", ObjectName: h.Name}
	e.Host = &types.HostEventArgument{EntityEventArgument: types.EntityEventArgument{Name: h.Name}, Host: h.Self}
	message := p.ID
	for _, info := range storageEventInfo {
		if info[0] == p.ID {
			message, e.Severity = info[2], info[1]
		}
	}
	for i, value := range p.Arguments {
		e.Arguments = append(e.Arguments, types.KeyAnyValue{Key: fmt.Sprint(i + 1), Value: value})
		if len(message) < 4096 {
			message = strings.ReplaceAll(message, fmt.Sprintf("{%d}", i+1), value)
		}
	}
	if len(message) > 4096 {
		message = message[:4096]
	}
	e.FullFormattedMessage = message
	e.Key = p.Key
	if p.AgeSeconds != 0 {
		e.CreatedTime = time.Now().Add(-time.Duration(p.AgeSeconds * float64(time.Second)))
	}
	if p.Ds != "" {
		e.Ds = &types.DatastoreEventArgument{EntityEventArgument: types.EntityEventArgument{Name: p.Ds}}
	}
	return e, nil
}

func (ev *storageEvents) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, `POST {"events": [{"host": ..., "id": ..., "arguments": [...]}]}`, http.StatusMethodNotAllowed)
		return
	}
	var req postRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20)).Decode(&req); err != nil {
		http.Error(w, "the body is no event list: "+err.Error(), http.StatusBadRequest)
		return
	}
	var events []types.BaseEvent
	for _, p := range req.Events {
		e, err := ev.eventEx(p)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		events = append(events, e)
	}
	if len(events) > 0 {
		ev.post(events, true, 0, false)
		ev.keep(req.Events, events)
	}
	if req.DistinctIDs > 0 {
		if len(req.Events) == 0 {
			http.Error(w, "distinct_ids needs one event to copy", http.StatusBadRequest)
			return
		}
		stock := ev.reg.EventManager()
		var many []types.BaseEvent
		for i := 0; i < req.DistinctIDs; i++ {
			p := req.Events[0]
			p.ID, p.Key, p.AgeSeconds = fmt.Sprintf("esx.problem.storage.simulated.%d", i), 0, 0
			e, _ := ev.eventEx(p)
			many = append(many, e)
			stock.Description.EventInfo = append(stock.Description.EventInfo, types.EventDescriptionEventDetail{Key: p.ID, Category: "warning"})
		}
		ev.post(many, false, 0, true)
	}
	if req.PageEvents > 0 {
		if len(req.Events) == 0 {
			http.Error(w, "page_events needs one event to copy", http.StatusBadRequest)
			return
		}
		var many []types.BaseEvent
		for i := 0; i < req.PageEvents; i++ {
			p := req.Events[0]
			p.Key, p.AgeSeconds = 0, 0
			e, _ := ev.eventEx(p)
			many = append(many, e)
		}
		ev.post(many, false, 0, false)
		ev.mu.Lock()
		for _, c := range ev.collectors {
			c.pending = len(c.page) - c.pos
		}
		ev.mu.Unlock()
	}
	w.WriteHeader(http.StatusNoContent)
}
