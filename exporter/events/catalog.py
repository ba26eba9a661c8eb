"""The storage event ids followed: the families of issue 43 and the ids known from vSphere 7.0 U1
to 8.0 U3, merged with the server's own catalog (EventManager.description.eventInfo).

Sources of the known ids: VMware's "vSphere Events" reference (the esx.problem/esx.clear EventEx
catalog of vCenter 7.0 U1-8.0 U3, `EventManager.description.eventInfo` as dumped with `govc
events -l`), Broadcom KB 2004684 (APD and PDL), KB 1009557 (vmfs heartbeat: "Lost access to
volume ... due to connectivity issues" and its "Successfully restored access" twin, whose id stays
under esx.problem: esx.problem.vmfs.heartbeat.recovered), KB 2007236 (latency deteriorated /
improved), KB 1009553 (path redundancy), the 8.0 U3 release notes (the psastor family of the new
PSA storage stack), KB 380716 (vSphere 9's boot device monitoring: a remote boot device in All Paths
Down halts the host if it does not recover in 160 s). A vCenter whose catalog lacks one of these still has it followed; one that
lists new ids of the families has those followed too, up to MAX_SERVER_IDS.
"""

from __future__ import annotations

FAMILIES = (
    "esx.problem.storage.",
    "esx.clear.storage.",
    "esx.problem.scsi.",
    "esx.clear.scsi.",
    "esx.problem.vmfs.",
    "esx.problem.psastor.",
    "esx.clear.psastor.",
    "esx.problem.bootdevice.",
    "esx.clear.bootdevice.",
    "vprob.storage.",
    "vprob.vmfs.",
    "vprob.scsi.",
)

KNOWN = frozenset(
    {
        # All Paths Down and connectivity (KB 2004684)
        "esx.problem.storage.apd.start",
        "esx.problem.storage.apd.timeout",
        "esx.clear.storage.apd.exit",
        # the same for a remote boot device (vSphere 9, KB 380716): the host halts at its timeout
        "esx.problem.bootdevice.apd.start",
        "esx.problem.bootdevice.apd.timeout",
        "esx.clear.bootdevice.apd.exit",
        "esx.problem.storage.connectivity.lost",
        "esx.problem.storage.connectivity.devicepor",
        "esx.problem.storage.connectivity.pathpor",
        "esx.problem.storage.connectivity.pathstatechanges",
        "esx.clear.storage.connectivity.restored",
        # path redundancy (KB 1009553)
        "esx.problem.storage.redundancy.lost",
        "esx.problem.storage.redundancy.degraded",
        "esx.clear.storage.redundancy.restored",
        # iSCSI
        "esx.problem.storage.iscsi.discovery.connect.error",
        "esx.problem.storage.iscsi.discovery.login.error",
        "esx.problem.storage.iscsi.isns.discovery.error",
        "esx.problem.storage.iscsi.target.connect.error",
        "esx.problem.storage.iscsi.target.login.error",
        "esx.problem.storage.iscsi.target.permanently.lost",
        # SCSI devices: permanent device loss, state, latency (KB 2004684, KB 2007236), thin provisioning
        "esx.problem.scsi.device.state.permanentloss",
        "esx.problem.scsi.device.state.permanentloss.noopens",
        "esx.problem.scsi.device.state.permanentloss.pluggedback",
        "esx.problem.scsi.device.state.permanentloss.withreservationheld",
        "esx.clear.scsi.device.state.permanentloss.deviceonline",
        "esx.problem.scsi.device.state.off",
        "esx.clear.scsi.device.state.on",
        "esx.problem.scsi.device.io.latency.high",
        "esx.clear.scsi.device.io.latency.improved",
        "esx.problem.scsi.device.thinprov.atquota",
        "esx.problem.scsi.device.limitreached",
        "esx.problem.scsi.device.close.failed",
        "esx.problem.scsi.device.detach.failed",
        "esx.problem.scsi.device.io.bad.plugin.type",
        "esx.problem.scsi.device.io.inquiry.failed",
        "esx.problem.scsi.device.io.invalid.disk.qfull.value",
        "esx.problem.scsi.device.io.qerr.change.config",
        "esx.problem.scsi.device.io.qerr.changed",
        "esx.problem.scsi.device.is.local.failed",
        "esx.problem.scsi.device.is.pseudo.failed",
        "esx.problem.scsi.device.is.ssd.failed",
        "esx.problem.scsi.apd.event.descriptor.alloc.failed",
        "esx.problem.scsi.scsipath.limitreached",
        "esx.problem.scsi.scsipath.badpath.unreachpe",
        "esx.problem.scsi.scsipath.badpath.unsafepe",
        "esx.problem.scsi.unsupported.plugin.type",
        # VMFS (KB 1009557 heartbeat; ATS, locks, extents, NFS)
        "esx.problem.vmfs.heartbeat.timedout",
        "esx.problem.vmfs.heartbeat.recovered",
        "esx.problem.vmfs.heartbeat.unrecoverable",
        "esx.problem.vmfs.ats.support.lost",
        "esx.problem.vmfs.error.volume.is.locked",
        "esx.problem.vmfs.extent.offline",
        "esx.problem.vmfs.extent.online",
        "esx.problem.vmfs.journal.createfailed",
        "esx.problem.vmfs.lock.corruptondisk",
        "esx.problem.vmfs.lock.corruptondisk.v2",
        "esx.problem.vmfs.nfs.mount.connect.failed",
        "esx.problem.vmfs.nfs.mount.limit.exceeded",
        "esx.problem.vmfs.nfs.server.disconnect",
        "esx.problem.vmfs.nfs.server.restored",
        "esx.problem.vmfs.resource.corruptondisk",
        "esx.problem.vmfs.volume.locked",
        # ESXi 8.0 U3's PSA storage stack (psastor), beside the scsi family
        "esx.problem.psastor.device.state.permanentloss",
        "esx.problem.psastor.device.state.permanentloss.noopens",
        "esx.problem.psastor.device.io.latency.high",
        "esx.clear.psastor.device.io.latency.improved",
        "esx.problem.psastor.device.state.off",
        "esx.clear.psastor.device.state.on",
        # vCenter's vprob events (the observations behind the esx.problem ones)
        "vprob.storage.connectivity.lost",
        "vprob.storage.redundancy.lost",
        "vprob.storage.redundancy.degraded",
        "vprob.vmfs.heartbeat.timedout",
        "vprob.vmfs.heartbeat.recovered",
        "vprob.vmfs.heartbeat.unrecoverable",
        "vprob.vmfs.error.volume.is.locked",
        "vprob.vmfs.extent.offline",
        "vprob.vmfs.extent.online",
        "vprob.vmfs.journal.createfailed",
        "vprob.vmfs.lock.corruptondisk",
        "vprob.vmfs.nfs.server.disconnect",
        "vprob.vmfs.nfs.server.restored",
        "vprob.vmfs.resource.corruptondisk",
        "vprob.scsi.device.thinprov.atquota",
    }
)

# Most ids taken from a server's catalog beyond the known ones: each id is a label value of
# esxi_storage_events_total, and a catalog is the server's to make as long as it likes.
MAX_SERVER_IDS = 1000
MAX_ID_LENGTH = 128


def in_families(event_id: str) -> bool:
    return event_id.startswith(FAMILIES)


def followed(server_ids) -> tuple[frozenset[str], int]:
    """The ids to follow: the known ones and the server catalog's ids of the families (at most
    MAX_SERVER_IDS of them, no longer than MAX_ID_LENGTH); and how many of the server's were left out."""
    extra, left_out = set(), 0
    for event_id in server_ids:
        if event_id in KNOWN or not in_families(event_id):
            continue
        if len(extra) >= MAX_SERVER_IDS or len(event_id) > MAX_ID_LENGTH:
            left_out += 1
            continue
        extra.add(event_id)
    return KNOWN | extra, left_out
