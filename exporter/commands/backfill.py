"""`backfill CAPTURE --tsdb DIR`: write a capture as Prometheus TSDB blocks, labelled with its run."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def register(subparsers):
    parser = subparsers.add_parser(
        "backfill",
        help="Turn an esxtop capture into Prometheus TSDB blocks (history beside live data).",
        description="Same metric names and labels as the live exporter, plus run=NAME to tell captures apart. "
        "Copy the blocks into Prometheus' storage.tsdb.path (or point it at DIR) and restart it.",
    )
    parser.add_argument("capture", help="esxtop batch capture")
    parser.add_argument("--tsdb", required=True, metavar="DIR", help="directory to write the blocks to")
    parser.add_argument(
        "--run",
        dest="run_label",
        metavar="NAME",
        help="value of the run label (default: the capture's file name without extension)",
    )
    parser.add_argument("--keep-openmetrics", metavar="FILE", help="also keep the OpenMetrics text fed to promtool")
    parser.add_argument(
        "--progress",
        action=__import__("argparse").BooleanOptionalAction,
        default=None,
        help="progress bar while reading (default: only on a terminal)",
    )
    parser.set_defaults(run=run)


def run(args) -> int:
    from exporter.analysis.backfill import backfill
    from exporter.analysis.progress import Progress
    from exporter.configuration.flags import fail
    from exporter.esxtop import EsxtopError

    name = args.run_label or Path(args.capture).stem
    try:
        size = os.path.getsize(args.capture)
    except OSError as err:
        return fail(f"{args.capture}: {err.strerror}", 2)
    progress = Progress(os.path.basename(args.capture), size, enabled=args.progress)
    notes: list[str] = []
    try:
        count = backfill(
            args.capture, Path(args.tsdb), name, Path(args.keep_openmetrics) if args.keep_openmetrics else None, progress, notes
        )
    except EsxtopError as err:
        return fail(err, 2)
    except (RuntimeError, OSError) as err:
        return fail(err, 2)
    finally:
        progress.close()
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    sys.stdout.write(f"{args.capture}: {count} samples written to {args.tsdb} with run={name!r}\n")
    return 0
