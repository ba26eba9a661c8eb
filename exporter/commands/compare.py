"""`compare BEFORE AFTER`: what a tuning change did, per LUN, adapter, path, world and CPU.

Exit status: 0 nothing got worse, 1 something got worse (a significant change in the bad
direction, or a rule of the paper broken after but not before), 2 the input cannot be used.
"""

from __future__ import annotations

import sys

EXIT_WORSE, EXIT_BAD_INPUT = 1, 2


def parse_link_speed(text: str) -> tuple[str, float]:
    """'vmhba1=2Gb/s' or '*=200MB/s' -> (adapter, bytes per second)."""
    from exporter.store.units import parse_rate

    adapter, sep, rate = text.partition("=")
    try:
        if not sep or not adapter:
            raise ValueError
        return adapter, parse_rate(rate)
    except ValueError:
        raise ValueError(f"--link-speed {text!r}: use ADAPTER=SPEED, e.g. vmhba1=8Gb/s or '*=200MB/s'") from None


def register(subparsers):
    parser = subparsers.add_parser(
        "compare",
        help="Compare two esxtop captures (before/after a change); exit 1 if anything got worse.",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("before", help="esxtop batch capture taken before the change")
    parser.add_argument("after", help="esxtop batch capture taken after the change")
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report with plots")
    parser.add_argument(
        "--link-speed",
        action="append",
        default=[],
        metavar="ADAPTER=SPEED",
        help="link speed of an adapter (or '*' for all), e.g. vmhba1=8Gb/s; enables the link saturation rule",
    )
    parser.add_argument(
        "--dsnro", type=float, metavar="N", help="Disk.SchedNumReqOutstanding of the host; enables the DSNRO rule"
    )
    parser.add_argument(
        "--skip", default="0", metavar="DURATION", help="leave out the first DURATION of each capture (warm-up), e.g. 20m"
    )
    parser.add_argument("--allow-other-host", action="store_true", help="compare captures of two different hosts")
    parser.add_argument(
        "--thresholds",
        metavar="FILE",
        help="thresholds file the findings judge by, as the alerts and dashboards do (default: the package's thresholds.yaml)",
    )
    parser.add_argument(
        "--progress",
        action=__import__("argparse").BooleanOptionalAction,
        default=None,
        help="progress bar while reading (default: only on a terminal)",
    )
    parser.set_defaults(run=run)


def run(args) -> int:
    from exporter.analysis import compare, report_text
    from exporter.analysis.capture import CaptureError, load
    from exporter.configuration import thresholds
    from exporter.configuration.flags import fail

    try:
        speeds = dict(parse_link_speed(s) for s in args.link_speed)
        from exporter.store.units import parse_duration

        skip = parse_duration(args.skip)
        before = load(args.before, args.progress).skip(skip)
        after = load(args.after, args.progress).skip(skip)
        limits = thresholds.read(args.thresholds)
        result = compare.compare(before, after, args.allow_other_host, speeds, args.dsnro, limits)
    except (CaptureError, ValueError, thresholds.ThresholdsError) as err:
        return fail(err, EXIT_BAD_INPUT)
    sys.stdout.write(report_text.render(result))
    if args.html:
        from exporter.analysis import report_html

        try:
            with open(args.html, "w", encoding="utf-8") as out:
                out.write(report_html.render(result))
        except OSError as err:
            return fail(f"{args.html}: {err.strerror}", EXIT_BAD_INPUT)
    return EXIT_WORSE if result.worse else 0
