"""`capacity`: the paper's Table 2 (max VMs per host and per LUN) from (n, a, d), or per LUN from a capture."""

from __future__ import annotations

import sys

HEAD = ("n (array max outstanding)", "a (avg active per VM)", "d (queue depth)", "m = d/a (VMs per host)", "n/a (VMs per LUN)")


def register(subparsers):
    parser = subparsers.add_parser(
        "capacity",
        help="How many VMs fit on a LUN before commands queue (the paper's Table 2).",
        description="Either give a capture (a is measured per LUN from per-world Active + Queued Commands, or from "
        "the VMs' virtual disks where no world shows load; d is the LUN's DQLEN) or give --avg-active and --queue-depth.",
    )
    parser.add_argument("capture", nargs="?", help="esxtop batch capture (ESX 3.x or ESXi names)")
    parser.add_argument(
        "--array-max-outstanding",
        "-n",
        type=float,
        required=True,
        metavar="N",
        help="commands the array works on at once for one LUN (the paper's n)",
    )
    parser.add_argument("--avg-active", "-a", type=float, metavar="A", help="average outstanding commands per VM (a)")
    parser.add_argument(
        "--queue-depth", "-d", type=float, metavar="D", help="host device queue depth, DQLEN (d); overrides the capture's"
    )
    parser.add_argument(
        "--progress",
        action=__import__("argparse").BooleanOptionalAction,
        default=None,
        help="progress bar while reading (default: only on a terminal)",
    )
    parser.set_defaults(run=run)


def _g(value: float) -> str:
    return f"{value:g}"


def run(args) -> int:
    from exporter.analysis import capacity
    from exporter.analysis.capture import CaptureError, load
    from exporter.configuration.flags import fail
    from exporter.store import inventory_snapshot

    try:
        if args.capture is None:
            if args.avg_active is None or args.queue_depth is None:
                return fail("capacity needs a capture, or both --avg-active and --queue-depth", 2)
            p = capacity.plan(args.array_max_outstanding, args.avg_active, args.queue_depth)
            sys.stdout.write(
                " | ".join(HEAD)
                + "\n"
                + " | ".join([_g(p.n), _g(p.a), _g(p.d), str(p.max_vms_per_host), str(p.max_vms_per_lun)])
                + "\n"
            )
            return 0
        capture = load(args.capture, args.progress)
        loads = capacity.from_capture(
            capture,
            args.array_max_outstanding,
            args.queue_depth,
            inventory_snapshot.read(args.capture),
        )
    except (CaptureError, ValueError) as err:
        return fail(err, 2)
    for note in capture.notes:  # what the user must know about the capture (a conflict, a cut last line)
        print(f"note: {note}", file=sys.stderr)
    for lun in loads:
        sys.stdout.write(f"LUN {lun.device}\n")
        if lun.plan is None:
            sys.stdout.write("  no VM had commands outstanding on this LUN during the capture\n")
            continue
        p = lun.plan
        sys.stdout.write(
            f"  n={_g(p.n)} a={p.a:.2f} d={_g(p.d)} -> at most {p.max_vms_per_host} VMs per host (d/a), "
            f"{p.max_vms_per_lun} VMs on the LUN over all hosts (n/a)\n"
        )
        if lun.source != "worlds":
            sys.stdout.write("  a from the VMs' virtual disks (reads x LAT/rd + writes x LAT/wr): no world shows load here\n")
        sys.stdout.write(
            f"  VMs on the LUN from this host: {len(lun.vms)} -> headroom {lun.host_headroom} on this host, "
            f"{lun.lun_headroom} on the LUN (less the VMs other hosts run on it)\n"
        )
        for vm, outstanding in sorted(lun.vms.items()):
            disks = lun.disk_vms.get(vm) if lun.source == "worlds" else None
            also = "" if disks is None else f" (its virtual disks: {disks:.2f})"
            sys.stdout.write(f"    {vm}: {outstanding:.2f} outstanding commands on average{also}\n")
    return 0
