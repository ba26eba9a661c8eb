// vSAN for storagesim: vSAN clusters in the inventory (/sdk) and the vSAN management API on
// vCenter's /vsanHealth endpoint (namespace urn:vsan), with values the fixture chooses.
//
// # Inventory (/sdk)
//
// A vSAN cluster is a ClusterComputeResource with configurationEx.vsanConfigInfo {enabled: true,
// defaultConfig.uuid, vsanEsaEnabled} and configurationEx.vsanHostConfig (one per host). Its hosts
// are moved into it (or, when a simulator cluster already holds exactly those hosts, that cluster
// is renamed); the others keep vsanConfigInfo absent. Each vSAN host has config.vsanHostConfig
// {enabled, clusterInfo {uuid, nodeUuid}, vsanEsaEnabled, storageInfo {diskMapping, diskMapInfo}}:
// for OSA one mapping per disk group, {ssd: cache disk, nonSsd: capacity disks}, each a copy of
// the host's config.storageDevice.scsiLun entry (same canonicalName) with vsanDiskInfo.vsanUuid,
// which the scsiLun entry carries too. ESA clusters have no disk mapping (ESA keeps its disks in a
// storage pool). Local disks without paths (vSAN's) get one path each through a local SAS adapter
// (HostSerialAttachedHba, the first free vmhbaN) with PSP VMW_PSP_FIXED and SATP VMW_SATP_LOCAL, as
// ESXi shows them. Every host of the cluster mounts the cluster's vsanDatastore (a
// HostFileSystemVolume of type "vsan" at /vmfs/volumes/vsan:<uuid without its dashes, split in
// two>), a Datastore object with summary.type "vsan", the fixture's capacity
// and free space; VMs whose disks the fixture puts on it list it in their datastore property.
// VMs keep the simulator's config.instanceUuid (derived from their path, so stable) unless the
// fixture gives one.
//
// # /vsanHealth
//
// The vCenter session cookie from /sdk authorises calls here (the simulator maps the
// vmware_soap_session cookie of any endpoint to the /sdk session); without a session a call gets
// NotAuthenticated, as on /sdk. Managed objects, as vCenter names them:
//
//   - VsanPerformanceManager "vsan-performance-manager": VsanPerfQueryPerf(querySpecs, cluster)
//     -> VsanPerfEntityMetricCSV[] {entityRefId "type:uuid", sampleInfo "YYYY-MM-DD HH:MM:SS,..."
//     (UTC), value[] {metricId {label, metricsCollectInterval = sample seconds}, values "1.5,2,,4"}}.
//     Entity types: cluster-domclient (the vSAN cluster uuid), host-domclient (node uuid),
//     disk-group (its cache disk's vsanUuid), cache-disk and capacity-disk (vsanUuid),
//     virtual-machine (config.instanceUuid); vSAN ESA's storage pool disks vsan-esa-disk-layer and
//     vsan-esa-disk-scsifw (one entity per disk, its vsanUuid, which the host's
//     configManager.vsanSystem QueryDisksForVsan answers with state inUse); the network
//     vsan-host-net (node uuid), vsan-pnic-net ("<node uuid>|vmnicN"), vsan-vnic-net
//     ("<node uuid>|defaultTcpipStack|vmkN", also in vsanHostConfig.networkInfo.port); the backend
//     host-domcompmgr (node uuid), cluster-domcompmgr and cluster-domowner (cluster uuid);
//     vsan-tcpip-stats ("<node uuid>|defaultTcpipStack", one per host: the netstack of its vmknics),
//     host-domowner (node uuid). VsanPerfGetSupportedEntityTypes lists, for a type in the fixture's
//     "advertised", exactly those labels while the type returns what its perf section has (the real
//     service understates: vsan-esa-disk-layer lists 6 and returns 38, vsan-tcpip-stats lists 16
//     and returns 32; and vsan-host-net lists tcpTxRexmitRate and tcpRxErrRate but returns no data
//     for them, absent, not blank; vsan.json does the same). "type:*" is every entity of that type in the
//     cluster (VMs: all those registered on its hosts; ESA: no disk-group, cache-disk or
//     capacity-disk entities, and no error); "type:uuid1,uuid2,..." (a multi-entity spec, served
//     from API 8.0.0.3, vSAN 8.0U2) each of those; an unknown uuid matches nothing; an entity the
//     fixture gives no values answers its sample times and no series. Samples are at multiples of
//     the sample spacing since the epoch, each stamped with the end of its interval, served once
//     that end has passed: startTime < t <= min(endTime, now) (the reference: endTime is replaced
//     by the server's time when later, and the sample at startTime is not returned). labels: only
//     those, in request order, leaving out labels the entity does not have; none: every label of
//     the entity, sorted. metricId.group/rollupType/statsType stay unset (query results do not
//     fill them; the entity type descriptions do): a client must not need them.
//   - VsanVcClusterHealthSystem "vsan-cluster-health-system": VsanQueryVcClusterHealthSummary
//     (cluster, fields, fetchFromCache, ...) -> VsanClusterHealthSummary {overallHealth,
//     overallHealthDescription, timestamp, objectHealth.objectHealthDetail[] {numObjects, health}};
//     with fields, only those of these are filled.
//   - VsanSpaceReportSystem "vsan-cluster-space-report-system": VsanQuerySpaceUsage(cluster) ->
//     VsanSpaceUsage {totalCapacityB, freeCapacityB}.
//   - VsanObjectSystem "vsan-cluster-object-system": QuerySyncingVsanObjectsSummary(cluster,
//     syncingObjectFilter) -> VsanHostVsanObjectSyncQueryResult {totalObjectsToSync,
//     totalBytesToSync, totalRecoveryETA}.
//   - VsanVcDiskManagementSystem "vsan-disk-management-system": QueryVsanManagedDisks(host,
//     filterSpec) -> a host's disk groups (OSA) or storage pool disks (ESA) with their vSAN uuids
//     (vsandisks.go, which says what it refuses).
//
// The reference's rules on querySpecs are enforced, each refusal vmodl.fault.InvalidArgument
// ("A specified parameter was not correct: PROPERTY") and logged ("vsan: VsanPerfQueryPerf
// refused (InvalidArgument PROPERTY): why"): no spec at all (querySpecs); a spec without
// startTime or endTime (that property: the reference says both "must be specified"; there is
// no default); an entityRefId that is not <known type>:<uuid> (entityRefId); a wildcard or
// multi-entity spec with any other spec in the call, or more than 100 specs in a call (an
// empty property: the form a vCenter 8.0.3 refused a SexiGraf query with, its cause not
// confirmed, sexibytes/sexigraf#425); more than
// 400 uuids in one multi-entity spec, or an empty uuid in it (entityRefId). Before API
// 8.0.0.3 "type:a,b" is one uuid that names nothing, as an older vSAN reads it. More than
// 10,000 samples in one spec is InvalidArgument startTime, a guard of this simulator. Which
// property a rule names (but entityRefId) is this simulator's choice. A call that passes is
// logged as "vsan: VsanPerfQueryPerf specs 1 spec: host-domclient:*" (or "<N uuids>", or
// "N specs: TYPE xK, ...").
//
// Zero-valued optional fields are left out of the answer (govmomi's types are omitempty): a
// client reads an unset totalBytesToSync, freeCapacityB, ... as 0. Every call is logged to stderr
// ("vsan: METHOD cluster NAME"; a VsanPerfQueryPerf refused for its specs is logged as refused
// instead), so a test can see which clusters were asked.
//
// Faults, as vSAN answers them (the reference lists InvalidArgument, NotSupported when the host
// asked is not the stats master, and NotFound when no host could be contacted): a cluster whose
// performance service is off answers VsanPerfQueryPerf with vim.fault.NotFound and an empty
// faultstring (govmomi, hence Telegraf's
// vSphere input, reads it as "ServerFaultCode: NotFound" and takes it to mean the service is off);
// an entityRefId whose type vSAN does not know, or without a ":", answers
// vmodl.fault.InvalidArgument {invalidProperty: "entityRefId"} ("A specified parameter was not
// correct: entityRefId", as SexiGraf users report from vCenter 8.0). Not checked against a real
// vCenter, so choices of this simulator: a cluster without vSAN answers all four methods with
// NotFound, a missing cluster argument InvalidArgument {invalidProperty: "cluster"}, a reference
// to no cluster ManagedObjectNotFound. (Old vSAN 6.5 failed a whole query for an unknown label,
// "no such column"; this simulator leaves such a label out.)
//
// # Fixture
//
// A top-level "vsan" section (unknown keys are an error):
//
//	"vsan": {
//	  "sample_seconds": 300,            // sample spacing (-vsan-sample-seconds overrides it)
//	  "advertised": {"vsan-host-net": ["rxThroughput", ...]},  // what the supported-types answer lists
//	  "api_version": "8.0.0.4",         // the vSAN API served (vsanServiceVersions.xml): 8.0.0.4 (default),
//	                                    // 8.0.0.3, 8.0.0.2, 8.0.0.1, 7.4, vSAN 7.0U3, 6.7, 6.6; multi-entity specs from 8.0.0.3
//	  "clusters": [{
//	    "name": "vsan-osa", "uuid": "52...",  // uuid: derived from the name if left out
//	    "esa": false, "hosts": ["esx21.lab.local", ...],
//	    "datastore": "vsanDatastore",   // default vsanDatastore, then "vsanDatastore (1)", ...
//	    "perf_service": true,           // false: VsanPerfQueryPerf answers NotFound
//	    "health": "red",                // green (default), yellow or red
//	    "health_description": "...",    // default: derived from health
//	    "objects": {"healthy": 200, "inaccessible": 1},  // vSAN's health state names
//	    "space": {"total_bytes": N, "free_bytes": N},    // default: 1 TiB per capacity disk, half free
//	    "resync": {"bytes": N, "objects": N, "eta_seconds": N},
//	    "faults": {"perf": "NotFound", "health": "VsanFault", "space": "NotSupported", "resync": "Timedout"},
//	                                    // perf NotSupported: the host asked is not the stats master
//	    "perf_faults": {"virtual-machine": "NotSupported"},  // a call holding a spec of that type answers that fault
//	    "wildcard_refused": ["disk-group"],  // "type:*" answers InvalidArgument entityRefId; by uuid it answers
//	    "managed_disks_faults": {"esx31.lab.local": "NotSupported"},  // QueryVsanManagedDisks for that host
//	    "disk_query_hides_pool": true,  // QueryDisksForVsan lists pool disks ineligible, without a uuid
//	    "perf": {
//	      "cluster-domclient": {"latencyAvgRead": 1200, ...},
//	      "host-domclient":  {"<host name>": {"latencyAvgWrite": [900, null, 1100], ...}},
//	      "disk-group":      {"<cache device>": {...}},
//	      "cache-disk":      {"<cache device>": {...}},
//	      "capacity-disk":   {"<capacity device>": {...}},
//	      "virtual-machine": {"<VM name>": {...}}}}]}
//
// and per fixture host "vsan": {"node_uuid": "...", "disk_groups": [{"cache": DISK, "capacity":
// [DISK, ...]}], "storage_pool": [DISK, ...] (ESA only, SSDs), "vmnics": ["vmnic1"], "vmknics":
// ["vmk1"] (of the host's "network" section)}, perf keys "<host>|vmnicN" and "<host>|vmkN" for the
// NIC types, "<host>|defaultTcpipStack" for vsan-tcpip-stats, the device for ESA disks, a DISK being a device name or {"device": NAME, "vsan_uuid": "52..."} (node and
// disk uuids are derived from the names when left out; a storage-pool DISK may add "unmounted": true
// or "fault": FAULT, which QueryVsanManagedDisks reports as isMounted false or its error). Every disk must be one of the host's
// "luns" with "local": true, a cache disk also "ssd": true. A fault is one of NotFound, InvalidArgument, NotSupported, Timedout,
// VsanFault, SystemError. A VM may set "instance_uuid".
//
// A perf value is a number, null (a blank cell) or a non-empty list of them, cycled by the
// sample's index since the epoch (t / sample seconds), so values can change over time. Numbers are
// passed through as written, in vSAN's own units (latency µs, throughput bytes/s, percentages
// 0-100, congestion counts): the client converts.
//
// # Generated inventory
//
// -vsan-clusters N (without -fixture) splits the generated hosts evenly into N vSAN OSA clusters
// (the simulator's clusters are sized to match, so -cluster-size is not used), gives each host
// two disk groups of one cache and three capacity local SSDs (extra LUNs with disk.* counters),
// moves the generated VMs' disks onto their cluster's vsanDatastore and serves deterministic
// pseudo-random values in sensible ranges for every entity, computed per request (no memory per
// sample). Every tenth cluster is yellow, with two objects resyncing.
package main

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
	"github.com/vmware/govmomi/vsan"
	vsanmethods "github.com/vmware/govmomi/vsan/methods"
	vsantypes "github.com/vmware/govmomi/vsan/types"
)

// VsanFixture is the fixture's top-level "vsan" section.
type VsanFixture struct {
	SampleSeconds int64               `json:"sample_seconds"`
	APIVersion    string              `json:"api_version"`
	Advertised    map[string][]string `json:"advertised"`
	Clusters      []VsanCluster       `json:"clusters"`
}

// VsanCluster is one vSAN cluster: its hosts, health, space, resync backlog, faults and the
// performance service's values by entity type.
type VsanCluster struct {
	Name              string                     `json:"name"`
	Uuid              string                     `json:"uuid"`
	Esa               bool                       `json:"esa"`
	Hosts             []string                   `json:"hosts"`
	Datastore         string                     `json:"datastore"`
	PerfService       *bool                      `json:"perf_service"`
	Health            string                     `json:"health"`
	HealthDescription string                     `json:"health_description"`
	Objects           map[string]int32           `json:"objects"`
	Space             VsanSpace                  `json:"space"`
	Resync            VsanResync                 `json:"resync"`
	Faults            map[string]string          `json:"faults"`
	PerfFaults        map[string]string          `json:"perf_faults"`
	WildcardRefused   []string                   `json:"wildcard_refused"`
	Perf              map[string]json.RawMessage `json:"perf"`
	// The disk queries (vsandisks.go): QueryVsanManagedDisks faults for these hosts (host ->
	// fault); QueryDisksForVsan lists storage-pool disks as ineligible, without their vSAN uuid.
	ManagedDisksFaults map[string]string `json:"managed_disks_faults"`
	DiskQueryHidesPool bool              `json:"disk_query_hides_pool"`

	generated bool // values computed (generated inventory), not from Perf
}

type VsanSpace struct {
	TotalBytes int64 `json:"total_bytes"`
	FreeBytes  int64 `json:"free_bytes"`
}

type VsanResync struct {
	Bytes      int64 `json:"bytes"`
	Objects    int64 `json:"objects"`
	EtaSeconds int64 `json:"eta_seconds"`
}

// VsanHost is a fixture host's "vsan" section.
type VsanHost struct {
	NodeUuid    string          `json:"node_uuid"`
	DiskGroups  []VsanDiskGroup `json:"disk_groups"`
	StoragePool []VsanDisk      `json:"storage_pool"` // ESA: the disks of the host's storage pool
	Vmnics      []string        `json:"vmnics"`       // the vmnics vSAN traffic uses (vsan-pnic-net entities)
	Vmknics     []string        `json:"vmknics"`      // vSAN's vmknics (networkInfo.port, vsan-vnic-net entities)
}

type VsanDiskGroup struct {
	Cache    VsanDisk   `json:"cache"`
	Capacity []VsanDisk `json:"capacity"`
}

// VsanDisk is a device name, or {"device": NAME, "vsan_uuid": UUID}; a storage-pool disk may be
// "unmounted": true (isMounted false) or carry a "fault" (its error) in QueryVsanManagedDisks.
type VsanDisk struct {
	Device    string `json:"device"`
	VsanUuid  string `json:"vsan_uuid"`
	Unmounted bool   `json:"unmounted"`
	Fault     string `json:"fault"`
}

// strict decodes data into v, refusing unknown keys (a typo in a test's fixture is an error).
func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func (f *VsanFixture) UnmarshalJSON(data []byte) error {
	type plain VsanFixture
	return strict(data, (*plain)(f))
}

func (h *VsanHost) UnmarshalJSON(data []byte) error {
	type plain VsanHost
	return strict(data, (*plain)(h))
}

func (d *VsanDisk) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		return json.Unmarshal(data, &d.Device)
	}
	type plain VsanDisk
	return strict(data, (*plain)(d))
}

// vsanCells is one label's cells (a number's text, "" for null), cycled by sample index.
type vsanCells []string

func (c *vsanCells) UnmarshalJSON(data []byte) error {
	cell := func(raw json.RawMessage) (string, error) {
		text := string(bytes.TrimSpace(raw))
		if text == "null" {
			return "", nil
		}
		if _, err := strconv.ParseFloat(text, 64); err != nil { // the text is valid JSON: a number parses
			return "", fmt.Errorf("%s: a value is a number, null or a list of them", text)
		}
		return text, nil
	}
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '[' {
		var raws []json.RawMessage
		if err := json.Unmarshal(trimmed, &raws); err != nil {
			return err
		}
		if len(raws) == 0 {
			return fmt.Errorf("an empty list of values")
		}
		for _, raw := range raws {
			v, err := cell(raw)
			if err != nil {
				return err
			}
			*c = append(*c, v)
		}
		return nil
	}
	v, err := cell(data)
	*c = vsanCells{v}
	return err
}

// The entity types this simulator serves, in the order the fixture documents them.
const (
	entityCluster  = "cluster-domclient"
	entityHost     = "host-domclient"
	entityGroup    = "disk-group"
	entityCache    = "cache-disk"
	entityCapacity = "capacity-disk"
	entityVM       = "virtual-machine"
	// vSAN ESA: one entity per storage pool disk (not per host, as the reference says), named by
	// the disk's vSAN uuid; the vSAN layer's view per tier, and the device (SCSI framework) view.
	entityEsaLayer = "vsan-esa-disk-layer"
	entityEsaScsi  = "vsan-esa-disk-scsifw"
	// The vSAN network: per host (node uuid), per vmnic ("<node uuid>|vmnicN") and per vmknic
	// ("<node uuid>|<netstack>|vmkN").
	entityHostNet = "vsan-host-net"
	entityPnicNet = "vsan-pnic-net"
	entityVnicNet = "vsan-vnic-net"
	// TCP/IP per host and netstack ("<node uuid>|<netstack>"): on a live vSAN 9 the TCP rates
	// vsan-host-net lists (tcpTxRexmitRate, tcpRxErrRate) come only from here.
	entityTcpip = "vsan-tcpip-stats"
	// The backend: the DOM component manager per host and cluster, the DOM owner per cluster and host.
	entityHostCompMgr    = "host-domcompmgr"
	entityClusterCompMgr = "cluster-domcompmgr"
	entityClusterOwner   = "cluster-domowner"
	entityHostOwner      = "host-domowner"
)

var vsanEntityTypes = []string{entityCluster, entityHost, entityGroup, entityCache, entityCapacity, entityVM,
	entityEsaLayer, entityEsaScsi, entityHostNet, entityPnicNet, entityVnicNet, entityTcpip, entityHostCompMgr,
	entityClusterCompMgr, entityClusterOwner, entityHostOwner}

// vmknicStack is the netstack of the fixture's vmknics (main.go's buildNetwork), part of a
// vsan-vnic-net entity's id.
const vmknicStack = "defaultTcpipStack"

// vsanHealthStates are vSAN's object health states (VsanObjectHealthState), in the order answers list them.
var vsanHealthStates = []string{
	"healthy", "inaccessible", "reducedavailabilitywithnorebuild", "reducedavailabilitywithnorebuilddelaytimer",
	"reducedavailabilitywithactiverebuild", "reducedavailabilitywithpausedrebuild", "reducedavailabilitywithpolicypending",
	"reducedavailabilitywithpolicypendingfailed", "datamove", "nonavailabilityrelatedreconfig",
	"nonavailabilityrelatedincompliance", "nonavailabilityrelatedincompliancewithpolicypending",
	"nonavailabilityrelatedincompliancewithpolicypendingfailed", "nonavailabilityrelatedincompliancewithpausedrebuild",
	"remoteAccessible",
}

// vsanFaults are the faults a fixture may make a method answer.
var vsanFaults = map[string]func() types.BaseMethodFault{
	"NotFound":        func() types.BaseMethodFault { return &types.NotFound{} },
	"InvalidArgument": func() types.BaseMethodFault { return &types.InvalidArgument{} },
	"NotSupported":    func() types.BaseMethodFault { return &types.NotSupported{} },
	"Timedout":        func() types.BaseMethodFault { return &types.Timedout{} },
	"VsanFault":       func() types.BaseMethodFault { return &types.VsanFault{} },
	"SystemError":     func() types.BaseMethodFault { return &types.SystemError{Reason: "simulated by the fixture"} },
}

// vsanFaultKeys name the method a fixture fault makes fail: VsanPerfQueryPerf,
// VsanQueryVcClusterHealthSummary, VsanQuerySpaceUsage, QuerySyncingVsanObjectsSummary.
var vsanFaultKeys = map[string]bool{"perf": true, "health": true, "space": true, "resync": true}

// vsanAPIVersions are the vSAN API versions a fixture may serve (vsan.api_version), newest first,
// as vCenter's vsanServiceVersions.xml names them: 8.0.0.4 is vSAN 8.0U3, 8.0.0.3 vSAN 8.0U2 (the
// reference's "Since vSAN API 8.0.0.3" marks its 8.0U2 additions), 8.0.0.2 8.0U1, 8.0.0.1 8.0.
var vsanAPIVersions = []string{"8.0.0.4", "8.0.0.3", "8.0.0.2", "8.0.0.1", "7.4", "vSAN 7.0U3", "6.7", "6.6"}

// The reference's limits on VsanPerfQueryPerf's querySpecs.
const (
	multiEntitySince = "8.0.0.3" // multi-entity specs ("type:uuid1,uuid2,..."): from vSAN 8.0U2
	maxPlainSpecs    = 100       // specs in one call without a wildcard or multi-entity spec
	maxMultiUUIDs    = 400       // uuids in one multi-entity spec
)

const (
	tib             = int64(1) << 40
	lunBytes        = 2147483648 * 512 // buildHost's LUN capacity
	maxSamples      = 10000
	vsanDiskFormat  = 17 // on-disk format version of vSAN 8 OSA
	defaultSample   = 300
	localAdapterMod = "Broadcom HBA 9500-8i Tri-Mode"
)

// vsanUUID derives a uuid from a seed; prefix replaces its first digits (vSAN's own uuids
// begin with 52).
func vsanUUID(prefix, seed string) string {
	h := fmt.Sprintf("%x", md5.Sum([]byte(seed)))
	h = prefix + h[len(prefix):]
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}

// vsanDatastoreID is the vsanDatastore's id in its mount path: vsan:5211...-...
func vsanDatastoreID(clusterUUID string) string {
	hex := strings.ReplaceAll(clusterUUID, "-", "")
	if len(hex) != 32 {
		return "vsan:" + hex
	}
	return "vsan:" + hex[:16] + "-" + hex[16:]
}

// vsanClusterPlan is a validated vSAN cluster: its fixture, hosts (fixture indexes), disks and
// VMs, then (once placed) its inventory object and perf entities.
type vsanClusterPlan struct {
	fx        *VsanCluster
	hosts     []int                                      // fixture host indexes
	perfOn    bool                                       // the performance service is on
	disks     map[string]*diskUse                        // device -> where it sits (unique in the cluster)
	vmNames   map[string]bool                            // the fixture's VMs on the cluster's hosts
	nics      map[string]*VsanHost                       // host name -> its vSAN section (vmnics, vmknics)
	perf      map[string]map[string]map[string]vsanCells // entity type -> key ("" for the cluster) -> label -> cells
	ref       types.ManagedObjectReference
	entities  map[string][]*vsanEntity          // entity type -> entities, in inventory order
	byUUID    map[string]map[string]*vsanEntity // entity type -> uuid -> entity
	datastore *simulator.Datastore
}

type diskUse struct {
	host  string
	cache bool
	pool  bool      // an ESA storage pool disk
	disk  *VsanDisk // the fixture's
}

// vsanPlan is the whole vSAN configuration: its clusters, by fixture host name and (once placed)
// by inventory reference, and the sample spacing.
type vsanPlan struct {
	sample   int64  // seconds between samples
	version  string // the vSAN API version served (vsanServiceVersions.xml)
	multi    bool   // multi-entity specs are taken (8.0.0.3, vSAN 8.0U2, and later)
	clusters []*vsanClusterPlan
	byHost   map[string]*vsanClusterPlan
	byRef    map[string]*vsanClusterPlan
	all      map[string]string // every inventory cluster: moref value -> name
	now      func() time.Time
	// entity type -> the labels VsanPerfGetSupportedEntityTypes lists (a type not in it lists every
	// label it serves): the real service lists fewer than it returns, and some it never returns.
	advertised map[string][]string
	diskQuery  map[string][]types.VsanHostDiskResult // host name -> QueryDisksForVsan's answer
	poolDisks  map[string][]types.HostScsiDisk       // host name -> its storage-pool disks (QueryVsanManagedDisks)
}

// planVsan validates the fixture's vSAN section against its hosts and fills the defaults
// (uuids, datastore names, space, local disks' multipathing).
func planVsan(fx *Fixture, sampleFlag int64) (*vsanPlan, error) {
	p := &vsanPlan{sample: defaultSample, version: vsanAPIVersions[0], byHost: map[string]*vsanClusterPlan{},
		byRef: map[string]*vsanClusterPlan{}, all: map[string]string{}, now: time.Now,
		diskQuery: map[string][]types.VsanHostDiskResult{}, poolDisks: map[string][]types.HostScsiDisk{}}
	if fx.Vsan != nil {
		if v := fx.Vsan.APIVersion; v != "" {
			if !contains(vsanAPIVersions, v) {
				return nil, fmt.Errorf("vsan.api_version: %q is not one of %s", v, strings.Join(vsanAPIVersions, ", "))
			}
			p.version = v
		}
		for typ := range fx.Vsan.Advertised {
			if !contains(vsanEntityTypes, typ) {
				return nil, fmt.Errorf("vsan.advertised.%s: not an entity type this simulator serves (%s)", typ, strings.Join(vsanEntityTypes, ", "))
			}
		}
		p.advertised = fx.Vsan.Advertised
		if fx.Vsan.SampleSeconds < 0 {
			return nil, fmt.Errorf("vsan.sample_seconds: %d is not a positive number of seconds", fx.Vsan.SampleSeconds)
		}
		if fx.Vsan.SampleSeconds > 0 {
			p.sample = fx.Vsan.SampleSeconds
		}
		hostIdx := map[string]int{}
		for i, h := range fx.Hosts {
			hostIdx[h.Name] = i
		}
		names := map[string]bool{}
		for ci := range fx.Vsan.Clusters {
			c := &fx.Vsan.Clusters[ci]
			if c.Name == "" {
				return nil, fmt.Errorf("vsan.clusters[%d].name: missing", ci)
			}
			if names[c.Name] {
				return nil, fmt.Errorf("vsan.clusters[%s].name: a second cluster of this name", c.Name)
			}
			names[c.Name] = true
			cp, err := p.planCluster(fx, ci, hostIdx)
			if err != nil {
				return nil, err
			}
			p.clusters = append(p.clusters, cp)
		}
	}
	if sampleFlag > 0 {
		p.sample = sampleFlag
	}
	p.multi = indexOf(vsanAPIVersions, p.version) <= indexOf(vsanAPIVersions, multiEntitySince)
	for i := range fx.Hosts {
		if fx.Hosts[i].Vsan != nil && p.byHost[fx.Hosts[i].Name] == nil {
			return nil, fmt.Errorf("hosts[%s].vsan: the host is in no cluster of the vsan section", fx.Hosts[i].Name)
		}
		localDiskPolicy(&fx.Hosts[i])
	}
	return p, nil
}

// planCluster checks one cluster of the section and fills its defaults.
func (p *vsanPlan) planCluster(fx *Fixture, ci int, hostIdx map[string]int) (*vsanClusterPlan, error) {
	c := &fx.Vsan.Clusters[ci]
	where := fmt.Sprintf("vsan.clusters[%s]", c.Name)
	if c.Uuid == "" {
		c.Uuid = vsanUUID("52", "vsan-cluster:"+c.Name)
	}
	if c.Datastore == "" {
		c.Datastore = "vsanDatastore"
		if ci > 0 {
			c.Datastore = fmt.Sprintf("vsanDatastore (%d)", ci)
		}
	}
	descriptions := map[string]string{"green": "The vSAN cluster is healthy",
		"yellow": "Some vSAN health checks report warnings", "red": "Some vSAN health checks report errors"}
	c.Health = orDefault(c.Health, "green")
	if _, ok := descriptions[c.Health]; !ok {
		return nil, fmt.Errorf("%s.health: %q is not green, yellow or red", where, c.Health)
	}
	c.HealthDescription = orDefault(c.HealthDescription, descriptions[c.Health])
	for state := range c.Objects {
		if !contains(vsanHealthStates, state) {
			return nil, fmt.Errorf("%s.objects.%s: not a vSAN object health state (%s)", where, state, strings.Join(vsanHealthStates, ", "))
		}
	}
	for typ, fault := range c.PerfFaults {
		if !contains(vsanEntityTypes, typ) {
			return nil, fmt.Errorf("%s.perf_faults.%s: not an entity type this simulator serves (%s)", where, typ, strings.Join(vsanEntityTypes, ", "))
		}
		if _, ok := vsanFaults[fault]; !ok {
			return nil, fmt.Errorf("%s.perf_faults.%s: %q is not one of %s", where, typ, fault, strings.Join(sortedKeys(vsanFaults), ", "))
		}
	}
	for _, typ := range c.WildcardRefused {
		if !contains(vsanEntityTypes, typ) {
			return nil, fmt.Errorf("%s.wildcard_refused: %s is not an entity type this simulator serves (%s)", where, typ, strings.Join(vsanEntityTypes, ", "))
		}
	}
	for key, fault := range c.Faults {
		if !vsanFaultKeys[key] {
			return nil, fmt.Errorf("%s.faults.%s: not perf, health, space or resync", where, key)
		}
		if _, ok := vsanFaults[fault]; !ok {
			return nil, fmt.Errorf("%s.faults.%s: %q is not one of %s", where, key, fault, strings.Join(sortedKeys(vsanFaults), ", "))
		}
	}
	if len(c.Hosts) == 0 {
		return nil, fmt.Errorf("%s.hosts: a vSAN cluster needs hosts", where)
	}
	for host, fault := range c.ManagedDisksFaults {
		if !contains(c.Hosts, host) {
			return nil, fmt.Errorf("%s.managed_disks_faults.%s: not a host of the cluster", where, host)
		}
		if _, ok := vsanFaults[fault]; !ok {
			return nil, fmt.Errorf("%s.managed_disks_faults.%s: %q is not one of %s", where, host, fault, strings.Join(sortedKeys(vsanFaults), ", "))
		}
	}
	cp := &vsanClusterPlan{fx: c, perfOn: c.PerfService == nil || *c.PerfService, disks: map[string]*diskUse{}, vmNames: map[string]bool{},
		nics: map[string]*VsanHost{}}
	for _, name := range c.Hosts {
		i, ok := hostIdx[name]
		if !ok {
			return nil, fmt.Errorf("%s.hosts: %s is not a fixture host", where, name)
		}
		if other := p.byHost[name]; other != nil {
			return nil, fmt.Errorf("%s.hosts: %s is already in vSAN cluster %s", where, name, other.fx.Name)
		}
		p.byHost[name] = cp
		cp.hosts = append(cp.hosts, i)
		if err := cp.addHost(&fx.Hosts[i]); err != nil {
			return nil, err
		}
		cp.nics[name] = fx.Hosts[i].Vsan
		for _, vm := range fx.Hosts[i].Vms {
			if cp.vmNames[vm.Name] {
				return nil, fmt.Errorf("%s: two VMs named %s on its hosts", where, vm.Name)
			}
			cp.vmNames[vm.Name] = true
		}
	}
	if c.Space.TotalBytes == 0 && c.Space.FreeBytes == 0 {
		for _, d := range cp.disks {
			if !d.cache {
				c.Space.TotalBytes += lunBytes
			}
		}
		c.Space.FreeBytes = c.Space.TotalBytes / 2
	}
	if c.Space.FreeBytes > c.Space.TotalBytes || c.Space.FreeBytes < 0 {
		return nil, fmt.Errorf("%s.space: free_bytes %d is not between 0 and total_bytes %d", where, c.Space.FreeBytes, c.Space.TotalBytes)
	}
	return cp, cp.parsePerf(where)
}

// addHost checks a host's vSAN section (each disk one of its local LUNs, a cache disk an SSD,
// no disk twice in the cluster) and derives the uuids it leaves out.
func (cp *vsanClusterPlan) addHost(fh *Host) error {
	if fh.Vsan == nil {
		fh.Vsan = &VsanHost{}
	}
	if fh.Vsan.NodeUuid == "" {
		fh.Vsan.NodeUuid = vsanUUID("", "vsan-node:"+fh.Name)
	}
	if cp.fx.Esa && len(fh.Vsan.DiskGroups) > 0 {
		return fmt.Errorf("hosts[%s].vsan.disk_groups: cluster %s is ESA, which has no disk groups", fh.Name, cp.fx.Name)
	}
	if !cp.fx.Esa && len(fh.Vsan.StoragePool) > 0 {
		return fmt.Errorf("hosts[%s].vsan.storage_pool: cluster %s is OSA, which has disk groups, no storage pool", fh.Name, cp.fx.Name)
	}
	luns := map[string]*Lun{}
	for l := range fh.Luns {
		luns[fh.Luns[l].Name] = &fh.Luns[l]
	}
	claim := func(where string, disk *VsanDisk, ssd bool, use *diskUse) error {
		lun, ok := luns[disk.Device]
		switch {
		case disk.Device == "":
			return fmt.Errorf("%s: a disk without a device", where)
		case !ok:
			return fmt.Errorf("%s: %s is not one of the host's luns", where, disk.Device)
		case !lun.Local:
			return fmt.Errorf("%s: %s is not a local disk (\"local\": true)", where, disk.Device)
		case ssd && !lun.Ssd:
			return fmt.Errorf("%s: %s is not an SSD (\"ssd\": true)", where, disk.Device)
		case cp.disks[disk.Device] != nil:
			return fmt.Errorf("%s: %s is already a vSAN disk of %s", where, disk.Device, cp.disks[disk.Device].host)
		}
		if (disk.Unmounted || disk.Fault != "") && !use.pool {
			return fmt.Errorf("%s: %s: unmounted and fault are for storage-pool disks", where, disk.Device)
		}
		if _, ok := vsanFaults[disk.Fault]; disk.Fault != "" && !ok {
			return fmt.Errorf("%s: %s: fault %q is not one of %s", where, disk.Device, disk.Fault, strings.Join(sortedKeys(vsanFaults), ", "))
		}
		if disk.VsanUuid == "" {
			disk.VsanUuid = vsanUUID("52", "vsan-disk:"+fh.Name+"/"+disk.Device)
		}
		use.disk = disk
		cp.disks[disk.Device] = use
		return nil
	}
	for g := range fh.Vsan.DiskGroups {
		dg := &fh.Vsan.DiskGroups[g]
		where := fmt.Sprintf("hosts[%s].vsan.disk_groups[%d]", fh.Name, g)
		if len(dg.Capacity) == 0 {
			return fmt.Errorf("%s.capacity: a disk group needs capacity disks", where)
		}
		if err := claim(where+".cache", &dg.Cache, true, &diskUse{host: fh.Name, cache: true}); err != nil {
			return err
		}
		for d := range dg.Capacity {
			if err := claim(where, &dg.Capacity[d], false, &diskUse{host: fh.Name}); err != nil {
				return err
			}
		}
	}
	for d := range fh.Vsan.StoragePool { // ESA takes NVMe/SSD devices only
		where := fmt.Sprintf("hosts[%s].vsan.storage_pool[%d]", fh.Name, d)
		if err := claim(where, &fh.Vsan.StoragePool[d], true, &diskUse{host: fh.Name, pool: true}); err != nil {
			return err
		}
	}
	return cp.checkNetwork(fh)
}

// checkNetwork: the host's vSAN vmnics and vmknics are ones its "network" section has.
func (cp *vsanClusterPlan) checkNetwork(fh *Host) error {
	if len(fh.Vsan.Vmnics)+len(fh.Vsan.Vmknics) == 0 {
		return nil
	}
	where := fmt.Sprintf("hosts[%s].vsan", fh.Name)
	if fh.Network == nil {
		return fmt.Errorf("%s: vmnics and vmknics need the host's \"network\" section", where)
	}
	pnics, vmknics := map[string]bool{}, map[string]bool{}
	for _, p := range fh.Network.Pnics {
		pnics[p.Device] = true
	}
	for _, v := range fh.Network.Vmknics {
		vmknics[v.Device] = true
	}
	for _, nic := range fh.Vsan.Vmnics {
		if !pnics[nic] {
			return fmt.Errorf("%s.vmnics: %s is not one of the host's network.pnics", where, nic)
		}
	}
	for _, nic := range fh.Vsan.Vmknics {
		if !vmknics[nic] {
			return fmt.Errorf("%s.vmknics: %s is not one of the host's network.vmknics", where, nic)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	return indexOf(list, s) >= 0
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// parsePerf reads the cluster's perf section, checking each key names an entity of the cluster.
func (cp *vsanClusterPlan) parsePerf(where string) error {
	cp.perf = map[string]map[string]map[string]vsanCells{}
	inCluster := map[string]bool{}
	for _, name := range cp.fx.Hosts {
		inCluster[name] = true
	}
	for typ, raw := range cp.fx.Perf {
		at := fmt.Sprintf("%s.perf.%s", where, typ)
		byKey := map[string]map[string]vsanCells{}
		switch typ {
		case entityCluster, entityClusterCompMgr, entityClusterOwner:
			var labels map[string]vsanCells
			if err := strict(raw, &labels); err != nil {
				return fmt.Errorf("%s: %v", at, err)
			}
			byKey[""] = labels
		case entityHost, entityGroup, entityCache, entityCapacity, entityVM, entityEsaLayer, entityEsaScsi, entityHostNet,
			entityHostCompMgr, entityHostOwner, entityPnicNet, entityVnicNet, entityTcpip:
			if err := strict(raw, &byKey); err != nil {
				return fmt.Errorf("%s: %v", at, err)
			}
		default:
			return fmt.Errorf("%s: not an entity type this simulator serves (%s)", at, strings.Join(vsanEntityTypes, ", "))
		}
		for key := range byKey {
			var ok bool
			host, nic, _ := strings.Cut(key, "|")
			switch typ {
			case entityCluster, entityClusterCompMgr, entityClusterOwner:
				ok = true
			case entityHost, entityHostNet, entityHostCompMgr, entityHostOwner:
				ok = inCluster[key]
			case entityTcpip:
				ok = inCluster[host] && nic == vmknicStack
			case entityEsaLayer, entityEsaScsi:
				ok = cp.disks[key] != nil && cp.disks[key].pool
			case entityPnicNet:
				ok = cp.nics[host] != nil && contains(cp.nics[host].Vmnics, nic)
			case entityVnicNet:
				ok = cp.nics[host] != nil && contains(cp.nics[host].Vmknics, nic)
			case entityGroup, entityCache:
				ok = cp.disks[key] != nil && cp.disks[key].cache
			case entityCapacity:
				ok = cp.disks[key] != nil && !cp.disks[key].cache
			case entityVM:
				ok = cp.vmNames[key]
			}
			if !ok {
				what := map[string]string{entityHost: "a host of the cluster", entityGroup: "a cache disk of the cluster",
					entityCache: "a cache disk of the cluster", entityCapacity: "a capacity disk of the cluster", entityVM: "a VM on the cluster's hosts",
					entityEsaLayer: "a storage pool disk of the cluster", entityEsaScsi: "a storage pool disk of the cluster",
					entityHostNet: "a host of the cluster", entityHostCompMgr: "a host of the cluster", entityHostOwner: "a host of the cluster",
					entityTcpip:   "HOST|" + vmknicStack + ", a host of the cluster and its vmknics' netstack",
					entityPnicNet: "HOST|VMNIC, a vSAN vmnic of a host of the cluster", entityVnicNet: "HOST|VMKNIC, a vSAN vmknic of a host of the cluster"}
				return fmt.Errorf("%s.%s: not %s", at, key, what[typ])
			}
		}
		cp.perf[typ] = byKey
	}
	return nil
}

// localDiskPolicy gives local disks without paths ESXi's multipathing for local devices.
func localDiskPolicy(fh *Host) {
	for l := range fh.Luns {
		lun := &fh.Luns[l]
		if lun.Local && len(lun.Paths) == 0 {
			lun.Psp = orDefault(lun.Psp, "VMW_PSP_FIXED")
			lun.Satp = orDefault(lun.Satp, "VMW_SATP_LOCAL")
		}
	}
}

// sortedKeys are a map's keys in order (the fixture's entities and labels, smart.go's NVMe adapters).
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// configureHost adds what one host shows of vSAN to its storage (a path for each local disk, the
// vsanDiskInfo of its vSAN disks), its vsanHostConfig and the vsanDatastore mount; it returns the
// host's mounts.
func (p *vsanPlan) configureHost(h *simulator.HostSystem, fh *Host, info *types.HostStorageDeviceInfo, hs *hostStorage,
	mounts []types.HostFileSystemMountInfo) []types.HostFileSystemMountInfo {
	localPaths(fh, info, hs)
	cp := p.byHost[fh.Name]
	if cp == nil {
		return mounts
	}
	scsi := map[string]*types.HostScsiDisk{}
	for _, lun := range info.ScsiLun {
		if d, ok := lun.(*types.HostScsiDisk); ok {
			scsi[d.CanonicalName] = d
		}
	}
	vsanDisk := func(disk VsanDisk) types.HostScsiDisk {
		d := scsi[disk.Device]
		d.VsanDiskInfo = &types.VsanHostVsanDiskInfo{VsanUuid: disk.VsanUuid, FormatVersion: vsanDiskFormat}
		return *d
	}
	storage := &types.VsanHostConfigInfoStorageInfo{AutoClaimStorage: types.NewBool(false)}
	for _, dg := range fh.Vsan.DiskGroups {
		mapping := types.VsanHostDiskMapping{Ssd: vsanDisk(dg.Cache)}
		for _, d := range dg.Capacity {
			mapping.NonSsd = append(mapping.NonSsd, vsanDisk(d))
		}
		storage.DiskMapping = append(storage.DiskMapping, mapping)
		storage.DiskMapInfo = append(storage.DiskMapInfo, types.VsanHostDiskMapInfo{Mapping: mapping, Mounted: true})
	}
	for _, d := range fh.Vsan.StoragePool { // ESA: no disk mapping; the disk shows its vSAN uuid on the host
		p.poolDisks[fh.Name] = append(p.poolDisks[fh.Name], vsanDisk(d))
	}
	p.diskQuery[fh.Name] = diskQueryResults(info, cp, fh.Name)
	config := *h.Config.VsanHostConfig // the template's network and fault domain parts stay
	if len(fh.Vsan.Vmknics) > 0 {
		network := &types.VsanHostConfigInfoNetworkInfo{}
		for _, vmk := range fh.Vsan.Vmknics {
			network.Port = append(network.Port, types.VsanHostConfigInfoNetworkInfoPortConfig{Device: vmk})
		}
		config.NetworkInfo = network
	}
	config.Enabled = types.NewBool(true)
	config.HostSystem = &h.Self
	config.ClusterInfo = &types.VsanHostConfigInfoClusterInfo{Uuid: cp.fx.Uuid, NodeUuid: fh.Vsan.NodeUuid}
	config.StorageInfo = storage
	config.VsanEsaEnabled = types.NewBool(cp.fx.Esa)
	h.Config.VsanHostConfig = &config
	id := vsanDatastoreID(cp.fx.Uuid)
	hs.instances["datastore"][id] = fh.DatastorePerf[cp.fx.Datastore]
	return append(mounts, types.HostFileSystemMountInfo{
		MountInfo: types.HostMountInfo{Path: "/vmfs/volumes/" + id, AccessMode: "readWrite",
			Mounted: types.NewBool(true), Accessible: types.NewBool(true)},
		Volume: &types.HostFileSystemVolume{Type: "vsan", Name: cp.fx.Datastore, Capacity: cp.fx.Space.TotalBytes},
	})
}

// diskQueryResults is HostVsanSystem.QueryDisksForVsan's answer for a host: every SCSI disk, its
// state (inUse with its vSAN uuid when vSAN claimed it; eligible for an unused local SSD;
// ineligible otherwise, with no reason given here). With the cluster's disk_query_hides_pool, a
// storage-pool disk is ineligible, with no vSAN uuid (nor vsanDiskInfo): what is feared of a
// real ESA host, which nobody has shown to list its pool disks inUse.
func diskQueryResults(info *types.HostStorageDeviceInfo, cp *vsanClusterPlan, host string) []types.VsanHostDiskResult {
	var out []types.VsanHostDiskResult
	for _, lun := range info.ScsiLun {
		d, ok := lun.(*types.HostScsiDisk)
		if !ok {
			continue
		}
		result := types.VsanHostDiskResult{Disk: *d, State: "ineligible"}
		if use := cp.disks[d.CanonicalName]; use != nil && use.host == host && use.pool && cp.fx.DiskQueryHidesPool {
			result.Disk.VsanDiskInfo = nil
		} else if use != nil && use.host == host && d.VsanDiskInfo != nil {
			result.State, result.VsanUuid = "inUse", d.VsanDiskInfo.VsanUuid
		} else if d.LocalDisk != nil && *d.LocalDisk && d.Ssd != nil && *d.Ssd {
			result.State = "eligible"
		}
		out = append(out, result)
	}
	return out
}

// HostVsanSystem is a vSAN host's configManager.vsanSystem: QueryDisksForVsan(canonicalName)
// answers the host's disks (all of them when no name is given; a name the host does not have
// answers nothing).
type HostVsanSystem struct {
	mo.HostVsanSystem
	disks []types.VsanHostDiskResult
}

func (s *HostVsanSystem) QueryDisksForVsan(ctx *simulator.Context, req *types.QueryDisksForVsan) soap.HasFault {
	res := &types.QueryDisksForVsanResponse{}
	for _, d := range s.disks {
		if len(req.CanonicalName) == 0 || contains(req.CanonicalName, d.Disk.CanonicalName) {
			res.Returnval = append(res.Returnval, d)
		}
	}
	log.Printf("vsan: QueryDisksForVsan host %s: %d disks", s.Self.Value, len(res.Returnval))
	return &methods.QueryDisksForVsanBody{Res: res}
}

// localPaths gives each local disk without paths one path through a local SAS adapter, as ESXi
// shows local disks (the first free vmhbaN).
func localPaths(fh *Host, info *types.HostStorageDeviceInfo, hs *hostStorage) {
	var local []string
	for _, lun := range fh.Luns {
		if lun.Local && len(lun.Paths) == 0 {
			local = append(local, lun.Name)
		}
	}
	if len(local) == 0 {
		return
	}
	used := map[string]bool{}
	for _, hba := range fh.Hbas {
		used[hba.Device] = true
	}
	device := "vmhba0"
	for n := 1; used[device]; n++ {
		device = fmt.Sprintf("vmhba%d", n)
	}
	sas := func(seed string) string { return "5" + fmt.Sprintf("%x", md5.Sum([]byte(seed)))[:15] }
	key := "key-vim.host.SerialAttachedHba-" + device
	adapter := sas("sas-adapter:" + fh.Name)
	info.HostBusAdapter = append(info.HostBusAdapter, &types.HostSerialAttachedHba{
		HostHostBusAdapter: types.HostHostBusAdapter{Key: key, Device: device, Status: "online", Model: localAdapterMod,
			Driver: "lsi_msgpt35", Pci: "0000:18:00.0"},
		NodeWorldWideName: adapter,
	})
	info.PlugStoreTopology.Adapter = append(info.PlugStoreTopology.Adapter, types.HostPlugStoreTopologyAdapter{
		Key: "key-vim.host.PlugStoreTopology.Adapter-" + device, Adapter: key,
	})
	for t, name := range local {
		runtime := fmt.Sprintf("%s:C0:T%d:L0", device, t)
		long := fmt.Sprintf("sas.%s-sas.%s-%s", adapter, sas("sas-disk:"+name), name)
		for i := range info.MultipathInfo.Lun {
			mpLun := &info.MultipathInfo.Lun[i]
			if mpLun.Id != name {
				continue
			}
			mpLun.Path = append(mpLun.Path, types.HostMultipathInfoPath{
				Key: "key-vim.host.MultipathInfo.Path-" + runtime, Name: runtime, PathState: "active", State: "active",
				IsWorkingPath: types.NewBool(true), Adapter: key, Lun: mpLun.Key, Transport: &types.HostSerialAttachedTargetTransport{},
			})
		}
		info.PlugStoreTopology.Path = append(info.PlugStoreTopology.Path, types.HostPlugStoreTopologyPath{
			Key: "key-vim.host.PlugStoreTopology.Path-" + long, Name: long, TargetNumber: int32(t),
			Adapter: "key-vim.host.PlugStoreTopology.Adapter-" + device, Device: "key-vim.host.PlugStoreTopology.Device-" + name,
		})
		hs.instances["storagePath"][long] = nil // no storagePath counters for a local path
	}
}

// placeClusters makes each vSAN cluster a cluster of the inventory holding exactly its hosts, with
// its vSAN configuration, and gives its vsanDatastore (made by datastoreObjects from the mounts)
// the cluster's space.
func (p *vsanPlan) placeClusters(reg *simulator.Registry, placed []*simulator.HostSystem) error {
	ctx := simulator.NewContext()
	ctx.Map = reg
	for _, cp := range p.clusters {
		hosts := make([]*simulator.HostSystem, 0, len(cp.hosts))
		for _, i := range cp.hosts {
			if i >= len(placed) {
				return fmt.Errorf("vsan.clusters[%s]: host %d was not placed", cp.fx.Name, i)
			}
			hosts = append(hosts, placed[i])
		}
		dc := datacenterOf(reg, hosts[0].Self)
		for _, h := range hosts[1:] {
			if datacenterOf(reg, h.Self) != dc {
				return fmt.Errorf("vsan.clusters[%s]: its hosts are in more than one datacenter", cp.fx.Name)
			}
		}
		cluster, same := reg.Get(*hosts[0].Parent).(*simulator.ClusterComputeResource)
		same = same && len(cluster.Host) == len(hosts)
		for _, h := range hosts {
			same = same && *h.Parent == cluster.Self
		}
		if same {
			cluster.Name = cp.fx.Name // the simulator's cluster holds exactly these hosts
		} else {
			folder := reg.Get(reg.Get(dc).(*simulator.Datacenter).HostFolder).(*simulator.Folder)
			var fault types.BaseMethodFault
			if cluster, fault = simulator.CreateClusterComputeResource(ctx, folder, cp.fx.Name, types.ClusterConfigSpecEx{}); fault != nil {
				return fmt.Errorf("vsan.clusters[%s]: creating the cluster: %T", cp.fx.Name, fault)
			}
			for _, h := range hosts {
				moveHost(reg, h, cluster)
			}
		}
		cfg := cluster.ConfigurationEx.(*types.ClusterConfigInfoEx)
		cfg.VsanConfigInfo = &types.VsanClusterConfigInfo{
			Enabled:        types.NewBool(true),
			DefaultConfig:  &types.VsanClusterConfigInfoHostDefaultInfo{Uuid: cp.fx.Uuid, AutoClaimStorage: types.NewBool(false)},
			VsanEsaEnabled: types.NewBool(cp.fx.Esa),
		}
		cfg.VsanHostConfig = nil
		for _, h := range hosts {
			system := &HostVsanSystem{disks: p.diskQuery[h.Name]}
			system.Self = types.ManagedObjectReference{Type: "HostVsanSystem", Value: "vsanSystem-" + h.Self.Value}
			system.Config = *h.Config.VsanHostConfig
			reg.Put(system)
			h.ConfigManager.VsanSystem = &system.Self
			cfg.VsanHostConfig = append(cfg.VsanHostConfig, *h.Config.VsanHostConfig)
			cp.datastore = p.vsanDatastore(reg, h, cp, cluster)
		}
		cp.ref = cluster.Self
		p.byRef[cluster.Self.Value] = cp
	}
	for _, c := range reg.All("ClusterComputeResource") {
		p.all[c.Reference().Value] = c.Entity().Name
	}
	return nil
}

// moveHost moves a host into a cluster, as MoveInto_Task does (without its maintenance mode),
// keeping both clusters' summaries right.
func moveHost(reg *simulator.Registry, h *simulator.HostSystem, to *simulator.ClusterComputeResource) {
	hw := h.Summary.Hardware
	add := func(s *types.ComputeResourceSummary, sign int) {
		s.TotalCpu += int32(sign) * hw.CpuMhz
		s.EffectiveCpu += int32(sign) * hw.CpuMhz
		s.TotalMemory += int64(sign) * hw.MemorySize
		s.EffectiveMemory += int64(sign) * hw.MemorySize
		s.NumCpuCores += int16(sign) * hw.NumCpuCores
		s.NumCpuThreads += int16(sign) * hw.NumCpuThreads
		s.NumHosts += int32(sign)
		s.NumEffectiveHosts += int32(sign)
	}
	if from, ok := reg.Get(*h.Parent).(*simulator.ClusterComputeResource); ok {
		simulator.RemoveReference(&from.Host, h.Self)
		if hw != nil {
			add(from.Summary.GetComputeResourceSummary(), -1)
		}
	}
	to.Host = append(to.Host, h.Self)
	if hw != nil {
		add(to.Summary.GetComputeResourceSummary(), 1)
		to.Summary.GetComputeResourceSummary().OverallStatus = types.ManagedEntityStatusGreen
	}
	h.Parent = &to.Self
	for _, ds := range h.Datastore {
		if simulator.FindReference(to.Datastore, ds) == nil {
			to.Datastore = append(to.Datastore, ds)
		}
	}
}

// vsanDatastore is the cluster's vsanDatastore object as the host sees it, given the cluster's
// space and listed by the cluster. Its info stays a DatastoreInfo: vCenter gives VsanDatastoreInfo
// (API 7.0.1) to newer clients, but this simulator speaks API 6.5, and pyVmomi, having agreed on
// 6.5, refuses the newer type's fields.
func (p *vsanPlan) vsanDatastore(reg *simulator.Registry, h *simulator.HostSystem, cp *vsanClusterPlan,
	cluster *simulator.ClusterComputeResource) *simulator.Datastore {
	ref := datastoreOf(reg, h, cp.fx.Datastore)
	ds := reg.Get(*ref).(*simulator.Datastore)
	ds.Summary.Capacity, ds.Summary.FreeSpace = cp.fx.Space.TotalBytes, cp.fx.Space.FreeBytes
	ds.Info = &types.DatastoreInfo{Name: ds.Name, Url: ds.Info.GetDatastoreInfo().Url, FreeSpace: cp.fx.Space.FreeBytes, MaxFileSize: 62 * tib}
	if simulator.FindReference(cluster.Datastore, ds.Self) == nil {
		cluster.Datastore = append(cluster.Datastore, ds.Self)
	}
	return ds
}

// indexVMs, once the VMs exist, gives them the fixture's instance uuids and their vsanDatastore,
// then builds every cluster's perf entities.
func (p *vsanPlan) indexVMs(reg *simulator.Registry, placed []*simulator.HostSystem, fx *Fixture) {
	vms := map[*vsanClusterPlan][][2]string{} // cluster -> (name, instance uuid) in host order
	for i, h := range placed {
		fh := &fx.Hosts[i]
		cp := p.byHost[fh.Name]
		if cp == nil || cp.ref.Value == "" {
			continue
		}
		want := map[string]string{}
		for _, vm := range fh.Vms {
			want[vm.Name] = vm.InstanceUuid
		}
		for _, ref := range h.Vm {
			vm, ok := reg.Get(ref).(*simulator.VirtualMachine)
			if !ok {
				continue
			}
			if id := want[vm.Name]; id != "" {
				vm.Config.InstanceUuid = id
				if vm.Summary.Config.InstanceUuid != "" {
					vm.Summary.Config.InstanceUuid = id
				}
			}
			if onDatastore(vm, cp.datastore.Self) {
				if simulator.FindReference(vm.Datastore, cp.datastore.Self) == nil {
					vm.Datastore = append(vm.Datastore, cp.datastore.Self)
				}
				if simulator.FindReference(cp.datastore.Vm, vm.Self) == nil {
					cp.datastore.Vm = append(cp.datastore.Vm, vm.Self)
				}
			}
			vms[cp] = append(vms[cp], [2]string{vm.Name, vm.Config.InstanceUuid})
		}
	}
	for _, cp := range p.clusters {
		if cp.ref.Value != "" {
			cp.buildEntities(fx, vms[cp])
		}
	}
}

// onDatastore: one of the VM's disks is backed by the datastore.
func onDatastore(vm *simulator.VirtualMachine, ds types.ManagedObjectReference) bool {
	for _, dev := range vm.Config.Hardware.Device {
		if disk, ok := dev.(*types.VirtualDisk); ok {
			if b, ok := disk.Backing.(types.BaseVirtualDeviceFileBackingInfo); ok {
				if ref := b.GetVirtualDeviceFileBackingInfo().Datastore; ref != nil && *ref == ds {
					return true
				}
			}
		}
	}
	return false
}

// vsanEntity is one perf entity: its uuid and labels, with values from the fixture (cells) or
// computed (generated inventory).
type vsanEntity struct {
	uuid   string
	labels []string
	cells  map[string]vsanCells
	gen    bool
}

func (cp *vsanClusterPlan) buildEntities(fx *Fixture, vms [][2]string) {
	cp.entities = map[string][]*vsanEntity{}
	cp.byUUID = map[string]map[string]*vsanEntity{}
	add := func(typ, key, uuid string) {
		e := &vsanEntity{uuid: uuid, gen: cp.fx.generated}
		if e.gen {
			e.labels = vsanGenLabels[typ]
		} else {
			e.cells = cp.perf[typ][key]
			e.labels = sortedKeys(e.cells)
		}
		cp.entities[typ] = append(cp.entities[typ], e)
		if cp.byUUID[typ] == nil {
			cp.byUUID[typ] = map[string]*vsanEntity{}
		}
		cp.byUUID[typ][uuid] = e
	}
	add(entityCluster, "", cp.fx.Uuid)
	add(entityClusterCompMgr, "", cp.fx.Uuid)
	add(entityClusterOwner, "", cp.fx.Uuid)
	for _, i := range cp.hosts {
		fh := &fx.Hosts[i]
		node := fh.Vsan.NodeUuid
		add(entityHost, fh.Name, node)
		add(entityHostCompMgr, fh.Name, node)
		add(entityHostOwner, fh.Name, node)
		add(entityHostNet, fh.Name, node)
		add(entityTcpip, fh.Name+"|"+vmknicStack, node+"|"+vmknicStack) // one netstack: the vmknics'

		for _, nic := range fh.Vsan.Vmnics {
			add(entityPnicNet, fh.Name+"|"+nic, node+"|"+nic)
		}
		for _, nic := range fh.Vsan.Vmknics {
			add(entityVnicNet, fh.Name+"|"+nic, node+"|"+vmknicStack+"|"+nic)
		}
		for _, d := range fh.Vsan.StoragePool {
			add(entityEsaLayer, d.Device, d.VsanUuid)
			add(entityEsaScsi, d.Device, d.VsanUuid)
		}
		for _, dg := range fh.Vsan.DiskGroups {
			add(entityGroup, dg.Cache.Device, dg.Cache.VsanUuid)
			add(entityCache, dg.Cache.Device, dg.Cache.VsanUuid)
			for _, d := range dg.Capacity {
				add(entityCapacity, d.Device, d.VsanUuid)
			}
		}
	}
	for _, vm := range vms {
		add(entityVM, vm[0], vm[1])
	}
}

// register adds /vsanHealth to the service (vCenter mode: a stand-alone host has no vSAN
// management endpoint); called before NewServer, which serves every registered SDK path.
func (p *vsanPlan) register(s *simulator.Service, r *simulator.Registry) {
	if !r.IsVPX() {
		return
	}
	reg := simulator.NewRegistry()
	reg.Namespace = vsan.Namespace
	reg.Path = vsan.Path
	reg.Put(&VsanPerformanceManager{ManagedObjectReference: vsan.VsanPerformanceManagerInstance, plan: p})
	reg.Put(&VsanVcClusterHealthSystem{ManagedObjectReference: types.ManagedObjectReference{Type: "VsanVcClusterHealthSystem", Value: "vsan-cluster-health-system"}, plan: p})
	reg.Put(&VsanSpaceReportSystem{ManagedObjectReference: types.ManagedObjectReference{Type: "VsanSpaceReportSystem", Value: "vsan-cluster-space-report-system"}, plan: p})
	reg.Put(&VsanObjectSystem{ManagedObjectReference: vsan.VsanQueryObjectIdentitiesInstance, plan: p})
	reg.Put(&VsanVcDiskManagementSystem{ManagedObjectReference: vsanDiskManagementSystem, plan: p, inventory: r}) // vsandisks.go
	s.RegisterSDK(reg)
	// A vCenter 8's vSAN API versions (govmomi's own handler offers 6.5-6.7, too old for the resync
	// summary). A method-qualified pattern is more specific than NewServer's, so it wins for GET.
	s.ServeMux.HandleFunc("GET "+r.Path+"/vsanServiceVersions.xml", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, p.serviceVersions())
	})
}

// serviceVersions is vsanServiceVersions.xml for the version served: it and every older one.
func (p *vsanPlan) serviceVersions() string {
	var prior strings.Builder
	for _, v := range vsanAPIVersions[indexOf(vsanAPIVersions, p.version)+1:] {
		fmt.Fprintf(&prior, "   <version>%s</version>\n", v)
	}
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<namespaces version="1.0">
 <namespace>
  <name>urn:vsan</name>
  <version>%s</version>
  <priorVersions>
%s  </priorVersions>
 </namespace>
</namespaces>
`, p.version, prior.String())
}

// VsanPerfGetSupportedEntityTypes lists each entity type with the labels this simulator serves
// for it (the fixture's, or the generated inventory's), one graph per entity type; a type in the
// fixture's "advertised" lists those labels instead, whether it serves them or not.
func (m *VsanPerformanceManager) VsanPerfGetSupportedEntityTypes(ctx *simulator.Context, req *vsantypes.VsanPerfGetSupportedEntityTypes) soap.HasFault {
	log.Printf("vsan: VsanPerfGetSupportedEntityTypes")
	res := &vsantypes.VsanPerfGetSupportedEntityTypesResponse{}
	for _, typ := range vsanEntityTypes {
		seen := map[string]bool{}
		var metrics []vsantypes.VsanPerfMetricId
		listed, advertised := m.plan.advertised[typ]
		if !advertised { // every label the type's entities serve
			for _, cp := range m.plan.clusters {
				for _, e := range cp.entities[typ] {
					listed = append(listed, e.labels...)
				}
			}
		}
		for _, label := range listed { // advertised: as the fixture lists them, served or not
			if !seen[label] {
				seen[label] = true
				metrics = append(metrics, vsantypes.VsanPerfMetricId{Label: label, MetricsCollectInterval: int32(m.plan.sample)})
			}
		}
		sort.Slice(metrics, func(i, j int) bool { return metrics[i].Label < metrics[j].Label })
		res.Returnval = append(res.Returnval, vsantypes.VsanPerfEntityType{
			Name:   typ,
			Id:     typ,
			Graphs: []vsantypes.VsanPerfGraph{{Id: typ, Metrics: metrics, Unit: "number"}},
		})
	}
	return &vsanmethods.VsanPerfGetSupportedEntityTypesBody{Res: res}
}

// cluster is the vSAN cluster a call names, or the fault vSAN answers: the fixture's fault for
// this method (key), NotFound for a cluster without vSAN.
func (p *vsanPlan) cluster(method string, ref *types.ManagedObjectReference, key string) (*vsanClusterPlan, *soap.Fault) {
	if ref == nil {
		log.Printf("vsan: %s without a cluster", method)
		return nil, simulator.Fault("A specified parameter was not correct: cluster", &types.InvalidArgument{InvalidProperty: "cluster"})
	}
	name, ok := p.all[ref.Value]
	if !ok || ref.Type != "ClusterComputeResource" {
		log.Printf("vsan: %s cluster %s (no such cluster)", method, ref.Value)
		return nil, simulator.Fault("", &types.ManagedObjectNotFound{Obj: *ref})
	}
	log.Printf("vsan: %s cluster %s", method, name)
	cp := p.byRef[ref.Value]
	if cp == nil {
		return nil, simulator.Fault("", &types.NotFound{})
	}
	if fault, ok := cp.fx.Faults[key]; ok {
		return nil, simulator.Fault("", vsanFaults[fault]())
	}
	return cp, nil
}

// VsanPerformanceManager serves the performance service's samples.
type VsanPerformanceManager struct {
	types.ManagedObjectReference
	plan *vsanPlan
}

func (m *VsanPerformanceManager) VsanPerfQueryPerf(ctx *simulator.Context, req *vsantypes.VsanPerfQueryPerf) soap.HasFault {
	body := &vsanmethods.VsanPerfQueryPerfBody{}
	queries, fault := m.plan.checkSpecs(req.QuerySpecs)
	if fault == nil {
		log.Printf("vsan: VsanPerfQueryPerf specs %s", describeSpecs(queries))
		var cp *vsanClusterPlan
		if cp, fault = m.plan.cluster("VsanPerfQueryPerf", req.Cluster, "perf"); fault == nil {
			body.Res, fault = m.plan.answer(cp, queries)
		}
	}
	body.Fault_ = fault
	return body
}

// vsanQuery is one spec of a call, checked: its entity type, uuids ("*" alone for a wildcard),
// sample indexes and labels.
type vsanQuery struct {
	typ    string
	uuids  []string
	stamps []int64
	labels []string
}

// invalidArgument is vmodl.fault.InvalidArgument as vSAN writes it: "A specified parameter was not
// correct: PROPERTY" (an empty property for the rules on the spec list), logged with the reason.
func invalidArgument(property, why string) *soap.Fault {
	log.Printf("vsan: VsanPerfQueryPerf refused (InvalidArgument %s): %s", property, why)
	return simulator.Fault("A specified parameter was not correct: "+property, &types.InvalidArgument{InvalidProperty: property})
}

// checkSpecs applies the API reference's rules on querySpecs (VsanPerformanceManager.VsanPerfQueryPerf):
// startTime and endTime in every spec; a wildcard spec ("type:*") or a multi-entity spec
// ("type:uuid1,uuid2,...", from 8.0.0.3, at most 400 uuids) the only spec of its call; otherwise at
// most 100 specs. Before vSAN 8.0U2 a multi-entity spec is one uuid that names nothing.
func (p *vsanPlan) checkSpecs(specs []vsantypes.VsanPerfQuerySpec) ([]vsanQuery, *soap.Fault) {
	if len(specs) == 0 {
		return nil, invalidArgument("querySpecs", "no query spec")
	}
	now := p.now().UTC()
	queries := make([]vsanQuery, 0, len(specs))
	alone := ""
	for i, spec := range specs {
		typ, id, ok := strings.Cut(spec.EntityRefId, ":")
		if !ok || id == "" || !contains(vsanEntityTypes, typ) {
			return nil, invalidArgument("entityRefId", fmt.Sprintf("querySpecs[%d].entityRefId %q is not <entity type>:<uuid>", i, spec.EntityRefId))
		}
		q := vsanQuery{typ: typ, uuids: []string{id}, labels: spec.Labels}
		switch {
		case id == "*":
			alone = "a wildcard spec"
		case p.multi && strings.Contains(id, ","):
			q.uuids = strings.Split(id, ",")
			if contains(q.uuids, "") || contains(q.uuids, "*") {
				return nil, invalidArgument("entityRefId", fmt.Sprintf("querySpecs[%d]: a multi-entity spec with an empty uuid or a wildcard", i))
			}
			if len(q.uuids) > maxMultiUUIDs {
				return nil, invalidArgument("entityRefId", fmt.Sprintf("querySpecs[%d]: %d uuids in one multi-entity spec (at most %d)", i, len(q.uuids), maxMultiUUIDs))
			}
			alone = "a multi-entity spec"
		}
		if spec.StartTime == nil || spec.EndTime == nil {
			field := map[bool]string{true: "startTime", false: "endTime"}[spec.StartTime == nil]
			return nil, invalidArgument(field, fmt.Sprintf("querySpecs[%d] has no %s (both must be set)", i, field))
		}
		var err error
		if q.stamps, err = p.samples(*spec.StartTime, *spec.EndTime, now); err != nil {
			return nil, invalidArgument("startTime", fmt.Sprintf("querySpecs[%d]: %v", i, err))
		}
		queries = append(queries, q)
	}
	if alone != "" && len(specs) > 1 {
		return nil, invalidArgument("", fmt.Sprintf("%s with %d other specs in one call (it must be the only one)", alone, len(specs)-1))
	}
	if len(specs) > maxPlainSpecs {
		return nil, invalidArgument("", fmt.Sprintf("%d specs in one call (at most %d)", len(specs), maxPlainSpecs))
	}
	return queries, nil
}

// describeSpecs sums a checked call up for the log: "1 spec: host-domclient:*", "1 spec:
// virtual-machine:<6 uuids>", "34 specs: host-domclient x3, virtual-machine x6, ...".
func describeSpecs(queries []vsanQuery) string {
	if len(queries) == 1 {
		q := queries[0]
		if len(q.uuids) == 1 {
			return "1 spec: " + q.typ + ":" + q.uuids[0]
		}
		return fmt.Sprintf("1 spec: %s:<%d uuids>", q.typ, len(q.uuids))
	}
	var order []string
	count := map[string]int{}
	for _, q := range queries {
		if count[q.typ] == 0 {
			order = append(order, q.typ)
		}
		count[q.typ]++
	}
	parts := make([]string, len(order))
	for i, typ := range order {
		parts[i] = fmt.Sprintf("%s x%d", typ, count[typ])
	}
	return fmt.Sprintf("%d specs: %s", len(queries), strings.Join(parts, ", "))
}

// answer is the checked queries' entities, or the fault the fixture gives: the performance service
// off (NotFound), an entity type's fault (perf_faults), a wildcard the type refuses (wildcard_refused).
func (p *vsanPlan) answer(cp *vsanClusterPlan, queries []vsanQuery) (*vsantypes.VsanPerfQueryPerfResponse, *soap.Fault) {
	if !cp.perfOn {
		return nil, simulator.Fault("", &types.NotFound{})
	}
	res := &vsantypes.VsanPerfQueryPerfResponse{}
	for i, q := range queries {
		if fault, ok := cp.fx.PerfFaults[q.typ]; ok {
			log.Printf("vsan: VsanPerfQueryPerf cluster %s: %s answers %s (the fixture's)", cp.fx.Name, q.typ, fault)
			return nil, simulator.Fault("", vsanFaults[fault]())
		}
		entities := cp.entities[q.typ]
		if q.uuids[0] == "*" {
			if contains(cp.fx.WildcardRefused, q.typ) {
				return nil, invalidArgument("entityRefId", fmt.Sprintf("querySpecs[%d]: %s refuses the wildcard (the fixture's)", i, q.typ))
			}
		} else {
			entities = nil
			for _, id := range q.uuids {
				if e := cp.byUUID[q.typ][id]; e != nil {
					entities = append(entities, e)
				}
			}
		}
		for _, e := range entities {
			res.Returnval = append(res.Returnval, p.csv(q.typ, e, q.stamps, q.labels))
		}
	}
	return res, nil
}

// samples are the sample indexes k (at t = k * sample seconds) with start < t <= min(end, now): the
// reference's endTime is replaced by the server's time when later, and "the returned samples do not
// include the sample at startTime".
func (p *vsanPlan) samples(start, end, now time.Time) ([]int64, error) {
	last := now
	if end.Before(last) {
		last = end
	}
	lo := start.Unix()/p.sample + 1 // the first sample after start (t is a whole second)
	if start.Unix() < 0 && start.Unix()%p.sample != 0 {
		lo-- // Go's division truncates toward zero
	}
	hi := last.Unix() / p.sample
	if hi-lo+1 > maxSamples {
		return nil, fmt.Errorf("the time range holds more than %d samples", maxSamples)
	}
	var out []int64
	for k := lo; k <= hi; k++ {
		out = append(out, k)
	}
	return out, nil
}

// csv is one entity's answer: its sample times and a series per label asked for (all, sorted,
// when none are).
func (p *vsanPlan) csv(typ string, e *vsanEntity, stamps []int64, asked []string) vsantypes.VsanPerfEntityMetricCSV {
	out := vsantypes.VsanPerfEntityMetricCSV{EntityRefId: typ + ":" + e.uuid}
	times := make([]string, len(stamps))
	for i, k := range stamps {
		times[i] = time.Unix(k*p.sample, 0).UTC().Format("2006-01-02 15:04:05")
	}
	out.SampleInfo = strings.Join(times, ",")
	labels := e.labels
	if len(asked) > 0 {
		has := map[string]bool{}
		for _, l := range e.labels {
			has[l] = true
		}
		labels = nil
		for _, l := range asked {
			if has[l] {
				labels = append(labels, l)
			}
		}
	}
	for _, label := range labels {
		cells := make([]string, len(stamps))
		for i, k := range stamps {
			if e.gen {
				cells[i] = genCell(e.uuid, label, k)
			} else {
				c := e.cells[label]
				cells[i] = c[int(((k%int64(len(c)))+int64(len(c)))%int64(len(c)))]
			}
		}
		out.Value = append(out.Value, vsantypes.VsanPerfMetricSeriesCSV{
			MetricId: vsantypes.VsanPerfMetricId{Label: label, MetricsCollectInterval: int32(p.sample)},
			Values:   strings.Join(cells, ","),
		})
	}
	return out
}

// VsanVcClusterHealthSystem answers the cluster's health summary.
type VsanVcClusterHealthSystem struct {
	types.ManagedObjectReference
	plan *vsanPlan
}

func (s *VsanVcClusterHealthSystem) VsanQueryVcClusterHealthSummary(ctx *simulator.Context, req *vsantypes.VsanQueryVcClusterHealthSummary) soap.HasFault {
	body := &vsanmethods.VsanQueryVcClusterHealthSummaryBody{}
	cp, fault := s.plan.cluster("VsanQueryVcClusterHealthSummary", req.Cluster, "health")
	if fault != nil {
		body.Fault_ = fault
		return body
	}
	want := func(field string) bool {
		if len(req.Fields) == 0 {
			return true
		}
		for _, f := range req.Fields {
			if f == field {
				return true
			}
		}
		return false
	}
	summary := vsantypes.VsanClusterHealthSummary{}
	if want("overallHealth") {
		summary.OverallHealth = cp.fx.Health
	}
	if want("overallHealthDescription") {
		summary.OverallHealthDescription = cp.fx.HealthDescription
	}
	if want("timestamp") {
		now := s.plan.now().UTC()
		summary.Timestamp = &now
	}
	if want("objectHealth") {
		health := &vsantypes.VsanObjectOverallHealth{}
		for _, state := range vsanHealthStates {
			if n, ok := cp.fx.Objects[state]; ok {
				health.ObjectHealthDetail = append(health.ObjectHealthDetail, vsantypes.VsanObjectHealth{NumObjects: n, Health: state})
			}
		}
		summary.ObjectHealth = health
	}
	body.Res = &vsantypes.VsanQueryVcClusterHealthSummaryResponse{Returnval: summary}
	return body
}

// VsanSpaceReportSystem answers the cluster's capacity.
type VsanSpaceReportSystem struct {
	types.ManagedObjectReference
	plan *vsanPlan
}

func (s *VsanSpaceReportSystem) VsanQuerySpaceUsage(ctx *simulator.Context, req *vsantypes.VsanQuerySpaceUsage) soap.HasFault {
	body := &vsanmethods.VsanQuerySpaceUsageBody{}
	cp, fault := s.plan.cluster("VsanQuerySpaceUsage", &req.Cluster, "space")
	if fault != nil {
		body.Fault_ = fault
		return body
	}
	body.Res = &vsantypes.VsanQuerySpaceUsageResponse{Returnval: vsantypes.VsanSpaceUsage{
		TotalCapacityB: cp.fx.Space.TotalBytes, FreeCapacityB: cp.fx.Space.FreeBytes,
	}}
	return body
}

// VsanObjectSystem answers the cluster's resync backlog.
type VsanObjectSystem struct {
	types.ManagedObjectReference
	plan *vsanPlan
}

func (s *VsanObjectSystem) QuerySyncingVsanObjectsSummary(ctx *simulator.Context, req *vsantypes.QuerySyncingVsanObjectsSummary) soap.HasFault {
	body := &vsanmethods.QuerySyncingVsanObjectsSummaryBody{}
	cp, fault := s.plan.cluster("QuerySyncingVsanObjectsSummary", &req.Cluster, "resync")
	if fault != nil {
		body.Fault_ = fault
		return body
	}
	body.Res = &vsantypes.QuerySyncingVsanObjectsSummaryResponse{Returnval: vsantypes.VsanHostVsanObjectSyncQueryResult{
		TotalObjectsToSync: cp.fx.Resync.Objects, TotalBytesToSync: cp.fx.Resync.Bytes, TotalRecoveryETA: cp.fx.Resync.EtaSeconds,
	}}
	return body
}

// vsanGenLabels are the labels the generated inventory serves per entity type.
var vsanGenLabels = map[string][]string{
	entityCluster: domclientLabels,
	entityHost:    domclientLabels,
	entityGroup: {"wbFreePct", "ssdCongestion", "logCongestion", "memCongestion", "slabCongestion", "compCongestion",
		"iopsCongestion", "latencySched", "iopsSched", "latencyDelaySched", "iopsDelayPctSched", "rcHitRate",
		"throughputRead", "throughputWrite", "iopsRead", "iopsWrite", "latencyAvgRead", "latencyAvgWrite", "capacity", "capacityUsed"},
	entityCache:    diskLabels,
	entityCapacity: diskLabels,
	entityVM:       {"iopsRead", "iopsWrite", "throughputRead", "throughputWrite", "latencyRead", "latencyWrite"},
	// The network and backend, padded with labels no client here reads to the counts a live vSAN
	// 9.1.1 cluster returns (issue 39: vsan-pnic-net 65, host-domcompmgr 82, cluster-domowner 46),
	// so an answer without a label list is as big as a real one.
	entityHostNet:        padLabels(netLabels(), 16),
	entityPnicNet:        padLabels(append(netLabels(), "rxCrcErr", "rxErr", "txErr", "pauseCount", "rxCrcErrRaw", "rxErrRaw", "txErrRaw", "pauseCountRaw", "pfcCountRaw"), 65),
	entityVnicNet:        padLabels(netLabels(), 16),
	entityTcpip:          padLabels(tcpLabels, 32),
	entityHostCompMgr:    padLabels(append(append([]string(nil), backendLabels...), queueLabels...), 82),
	entityClusterCompMgr: padLabels(backendLabels, 82),
	entityClusterOwner:   padLabels(append(append([]string(nil), backendLabels...), append(resyncJobLabels[:3:3], "avgResyncParallelism")...), 46),
	entityHostOwner:      padLabels(resyncJobLabels, 288),
}

// vsanGenAdvertised is what the generated inventory's supported-types answer lists where it is not
// every label served: vsan-host-net's TCP rates, listed and never returned, as on a live vSAN 9.
var vsanGenAdvertised = map[string][]string{entityHostNet: append(netLabels(), tcpLabels...)}

var (
	tcpLabels       = []string{"tcpTxRexmitRate", "tcpRxErrRate"}
	resyncJobLabels = []string{"numPendingResyncJobs", "numRunningResyncJobs", "numSuspendedResyncJobs", "numBlockedResyncJobs"}
	// a host's component manager: outstanding resync I/O and queue depth per class and operation
	queueLabels = []string{"oioRecoveryWrite", "oioResyncRead", "vmdiskQueueDepthRead", "vmdiskQueueDepthWrite",
		"namespaceQueueDepthRead", "namespaceQueueDepthWrite", "metadataQueueDepthRead", "metadataQueueDepthWrite",
		"resyncQueueDepthRead", "resyncQueueDepthWrite"}
)

var backendLabels = []string{"iopsRead", "iopsWrite", "throughputRead", "throughputWrite", "latencyAvgRead", "latencyAvgWrite",
	"iopsRecWrite", "throughputRecWrite", "latencyAvgRecWrite", "iopsResyncRead", "tputResyncRead", "latAvgResyncRead", "oio", "congestion"}

func netLabels() []string {
	return []string{"rxThroughput", "txThroughput", "rxPackets", "txPackets", "rxPacketsLossRate", "txPacketsLossRate", "portRxDrops", "portTxDrops"}
}

// padLabels fills a label list up to n with labels no client here reads ("unreadNN").
func padLabels(labels []string, n int) []string {
	out := append([]string(nil), labels...)
	for i := len(out); i < n; i++ {
		out = append(out, fmt.Sprintf("unread%02d", i))
	}
	return out
}

var (
	domclientLabels = []string{"iopsRead", "iopsWrite", "throughputRead", "throughputWrite", "latencyAvgRead",
		"latencyAvgWrite", "congestion", "oio", "clientCacheHitRate", "clientCacheHits"}
	diskLabels = []string{"latencyDevRead", "latencyDevWrite", "latencyDevGAvg", "latencyDevDAvg", "iopsDevRead",
		"iopsDevWrite", "throughputDevRead", "throughputDevWrite"}
)

// vsanGenRanges are the generated values' ranges, in vSAN's units (µs, bytes/s, %, counts).
var vsanGenRanges = map[string][2]int64{
	"iopsRead": {200, 4000}, "iopsWrite": {100, 2500}, "throughputRead": {2 << 20, 200 << 20},
	"throughputWrite": {1 << 20, 120 << 20}, "latencyAvgRead": {300, 4000}, "latencyAvgWrite": {500, 6000},
	"congestion": {0, 2}, "oio": {1, 48}, "clientCacheHitRate": {0, 100}, "clientCacheHits": {0, 3000},
	"wbFreePct": {45, 95}, "ssdCongestion": {0, 2}, "logCongestion": {0, 2}, "memCongestion": {0, 1},
	"slabCongestion": {0, 1}, "compCongestion": {0, 1}, "iopsCongestion": {0, 2}, "latencySched": {100, 2500},
	"iopsSched": {200, 5000}, "latencyDelaySched": {0, 300}, "iopsDelayPctSched": {0, 5}, "rcHitRate": {85, 100},
	"capacity": {3 * lunBytes, 3 * lunBytes}, "capacityUsed": {lunBytes / 2, 2 * lunBytes},
	"latencyDevRead": {100, 2500}, "latencyDevWrite": {150, 3000}, "latencyDevGAvg": {150, 3000},
	"latencyDevDAvg": {100, 2500}, "iopsDevRead": {50, 2000}, "iopsDevWrite": {50, 1500},
	"throughputDevRead": {1 << 20, 80 << 20}, "throughputDevWrite": {1 << 20, 60 << 20},
	"latencyRead": {300, 5000}, "latencyWrite": {500, 7000},
	"tcpTxRexmitRate": {0, 5}, "tcpRxErrRate": {0, 1}, // per mille
	"numPendingResyncJobs": {0, 20}, "numRunningResyncJobs": {0, 8}, "numSuspendedResyncJobs": {0, 2}, "numBlockedResyncJobs": {0, 2},
	"oioRecoveryWrite": {0, 16}, "oioResyncRead": {0, 16}, "vmdiskQueueDepthRead": {0, 64}, "vmdiskQueueDepthWrite": {0, 64},
	"namespaceQueueDepthRead": {0, 4}, "namespaceQueueDepthWrite": {0, 4}, "metadataQueueDepthRead": {0, 8},
	"metadataQueueDepthWrite": {0, 8}, "resyncQueueDepthRead": {0, 32}, "resyncQueueDepthWrite": {0, 32},
}

// genCell is a generated value: fixed per entity, label and sample index modulo 4 (so values
// change over time and repeat), within the label's range.
func genCell(uuid, label string, k int64) string {
	r, ok := vsanGenRanges[label]
	if !ok {
		r = [2]int64{0, 1000} // the network's and backend's labels: a count, a rate or a per mille
	}
	h := fnv.New64a()
	h.Write([]byte(uuid))
	h.Write([]byte(label))
	var step [8]byte
	binary.LittleEndian.PutUint64(step[:], uint64(((k%4)+4)%4))
	h.Write(step[:])
	return strconv.FormatInt(r[0]+int64(h.Sum64()%uint64(r[1]-r[0]+1)), 10)
}

// generateVsan puts the generated hosts into n vSAN OSA clusters: two disk groups of one cache
// and three capacity local SSDs per host, the VMs' disks on their cluster's vsanDatastore.
func generateVsan(fx *Fixture, n int) {
	per := len(fx.Hosts) / n
	fx.Vsan = &VsanFixture{Advertised: vsanGenAdvertised}
	for c := 0; c < n; c++ {
		vc := VsanCluster{Name: fmt.Sprintf("vsan%03d", c), Datastore: "vsanDatastore", generated: true}
		if c > 0 {
			vc.Datastore = fmt.Sprintf("vsanDatastore (%d)", c)
		}
		vms := 0
		for h := c * per; h < (c+1)*per; h++ {
			host := &fx.Hosts[h]
			vc.Hosts = append(vc.Hosts, host.Name)
			host.Vsan = &VsanHost{Vmnics: []string{"vmnic1"}, Vmknics: []string{"vmk1"}}
			if host.Network == nil { // a vSAN vmnic at 25 Gb/s and vSAN's vmknic on it
				host.Network = &Network{Pnics: []Pnic{{Device: "vmnic0", Driver: "ixgben", SpeedMb: 10000}, {Device: "vmnic1", Driver: "nmlx5_core", SpeedMb: 25000}},
					Vswitches:  []Vswitch{{Name: "vSwitch0", Uplinks: []string{"vmnic0"}}, {Name: "vSwitch1", Uplinks: []string{"vmnic1"}}},
					Portgroups: []Portgroup{{Name: "Management Network", Vswitch: "vSwitch0"}, {Name: "vSAN", Vswitch: "vSwitch1"}},
					Vmknics: []Vmknic{{Device: "vmk0", Portgroup: "Management Network", Ip: fmt.Sprintf("10.1.%d.%d", h/250, h%250+1), Mask: "255.255.0.0"},
						{Device: "vmk1", Portgroup: "vSAN", Ip: fmt.Sprintf("172.20.%d.%d", h/250, h%250+1), Mask: "255.255.0.0"}},
					Gateway: "10.1.255.254", GatewayVmknic: "vmk0"}
			}
			for g := 0; g < 2; g++ {
				dg := VsanDiskGroup{}
				for d := 0; d < 4; d++ {
					name := fmt.Sprintf("naa.5000c5%06x%04x%02x", h, g, d)
					model := map[bool]string{true: "KPM6XMUG800G", false: "KPM6XRUG3T84"}[d == 0]
					host.Luns = append(host.Luns, Lun{Name: name, Display: "Local KIOXIA Disk (" + name + ")", Vendor: "KIOXIA", Model: model,
						QueueDepth: 254, Ssd: true, Local: true,
						Perf: map[string]int64{"disk.commandsAveraged.average": int64(300 + d), "disk.numberReadAveraged.average": 180,
							"disk.numberWriteAveraged.average": 120, "disk.read.average": 9000, "disk.write.average": 6000,
							"disk.deviceLatency.average": int64(1 + (h+d)%2), "disk.kernelLatency.average": 0, "disk.queueLatency.average": 0,
							"disk.totalLatency.average": int64(1 + (h+d)%2), "disk.totalReadLatency.average": 1, "disk.totalWriteLatency.average": 1,
							"disk.maxQueueDepth.average": 254, "disk.commandsAborted.summation": 0, "disk.busResets.summation": 0,
							"disk.scsiReservationConflicts.summation": 0}})
					if d == 0 {
						dg.Cache = VsanDisk{Device: name}
					} else {
						dg.Capacity = append(dg.Capacity, VsanDisk{Device: name})
					}
				}
				host.Vsan.DiskGroups = append(host.Vsan.DiskGroups, dg)
			}
			for v := range host.Vms {
				for d := range host.Vms[v].Disks {
					host.Vms[v].Disks[d].Datastore = vc.Datastore
				}
			}
			vms += len(host.Vms)
			host.DatastorePerf[vc.Datastore] = map[string]int64{"datastore.numberReadAveraged.average": 900, "datastore.numberWriteAveraged.average": 600,
				"datastore.read.average": 30000, "datastore.write.average": 20000, "datastore.totalReadLatency.average": 1,
				"datastore.totalWriteLatency.average": 2}
		}
		// A VM has about three objects (namespace, disk, swap); a few generated clusters are not all well.
		vc.Objects = map[string]int32{"healthy": int32(3 * vms)}
		if c%10 == 9 {
			vc.Health = "yellow"
			vc.Objects["reducedavailabilitywithactiverebuild"] = 2
			vc.Resync = VsanResync{Bytes: 40 << 30, Objects: 2, EtaSeconds: 1800}
		}
		fx.Vsan.Clusters = append(fx.Vsan.Clusters, vc)
	}
}
