"""`simulate`: write a simulated scenario as esxtop batch CSV (`esxtop -b -a`), or list scenarios.

    simulate queue-overrun --duration 10m --interval 5s --out capture.csv [--seed N]
    simulate shared-lun-8-hosts --out captures/        # one <host>.csv per host
    simulate shared-lun-8-hosts --host esx03.lab.local --out esx03.csv
    simulate --list

Time is simulated, so a 10-minute capture is written at once; the same seed gives the same file.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path

from ..simulator import ScenarioError, Simulation, list_scenarios, load_scenario, units

DEFAULT_START = "2023-11-14T22:13:20Z"  # unix 1,700,000,000


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "simulate",
        help="write a simulated scenario as esxtop batch CSV",
        description="Run a built-in scenario (or a scenario YAML file) in simulated time and write "
        "what `esxtop -b -a` would have written. A scenario with several hosts writes "
        "one file per host into the --out directory, or one host's file with --host.",
    )
    p.add_argument("scenario", nargs="?", help="built-in scenario name (see --list) or YAML file")
    p.add_argument("--list", action="store_true", help="list the built-in scenarios and exit")
    p.add_argument("--duration", default="10m", type=_duration_arg, help="simulated time to cover, e.g. 10m, 1h (default 10m)")
    p.add_argument("--interval", default="5s", type=_duration_arg, help="esxtop delay between samples (default 5s)")
    p.add_argument("--out", default="-", help="output file, '-' for stdout (default), or a directory for several hosts")
    p.add_argument("--host", help="write only this host's stream")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument(
        "--start", default=DEFAULT_START, type=_time_arg, help=f"UTC time of the first sample, ISO 8601 (default {DEFAULT_START})"
    )
    p.set_defaults(run=run)


def _duration_arg(text: str) -> float:
    try:
        value = units.duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be above zero, got {text!r}")
    return value


def _time_arg(text: str) -> float:
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.timestamp()


def run(args: argparse.Namespace) -> int:
    if args.list:
        for name, description in list_scenarios():
            print(f"{name:28} {description}")
        return 0
    if not args.scenario:
        return _fail("give a scenario name or file (see `simulate --list`)")
    try:
        sim = Simulation(load_scenario(args.scenario), seed=args.seed, interval=args.interval, start=args.start)
    except ScenarioError as e:
        return _fail(str(e))
    hosts = sim.hosts
    if args.host:
        if args.host not in hosts:
            return _fail(f"scenario {args.scenario} has no host {args.host!r} (hosts: {', '.join(hosts)})")
        hosts = [args.host]
    try:
        targets = _targets(args.out, hosts)
    except ValueError as e:
        return _fail(str(e))
    samples = int(args.duration / args.interval + 1e-9) + 1  # the first is esxtop's all-zero one
    with ExitStack() as stack:
        try:
            files = {
                h: sys.stdout if t is None else stack.enter_context(open(t, "w", encoding="utf-8", newline="\n"))
                for h, t in targets.items()
            }
        except OSError as e:
            return _fail(f"{e.filename}: {e.strerror}")
        for h, f in files.items():
            f.write(sim.header(h) + "\n")
        for _ in range(samples):
            lines = sim.step()
            for h, f in files.items():
                f.write(lines[h] + "\n")
    if args.out != "-":
        # The storage configuration beside each capture, for compare's "what was tuned".
        from exporter.store import inventory_snapshot

        by_host = {inv.host: inv for inv in sim.inventories()}
        for host, target in targets.items():
            if target is not None:
                inventory_snapshot.write(target, [by_host[host]])
        print(f"wrote {samples} samples of {len(targets)} host(s) to {args.out}", file=sys.stderr)
    return 0


def _targets(out: str, hosts: list[str]) -> dict[str, Path | None]:
    """Where each host's stream goes: stdout, one file, or <dir>/<host>.csv."""
    if len(hosts) == 1:
        return {hosts[0]: None if out == "-" else Path(out)}
    if out == "-":
        raise ValueError(f"the scenario has {len(hosts)} hosts: give --out DIRECTORY (one <host>.csv each) or --host NAME")
    directory = Path(out)
    if directory.suffix == ".csv" or (directory.exists() and not directory.is_dir()):
        raise ValueError(f"{out}: the scenario has {len(hosts)} hosts, so --out must be a directory")
    directory.mkdir(parents=True, exist_ok=True)
    return {h: directory / f"{h}.csv" for h in hosts}


def _fail(message: str) -> int:
    from exporter.configuration.flags import fail

    return fail(f"simulate: {message}", 2)
