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
    parser.add_argument("before", nargs="?", help="esxtop batch capture taken before the change")
    parser.add_argument("after", nargs="?", help="esxtop batch capture taken after the change")
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report with plots")
    parser.add_argument(
        "--json", metavar="FILE", help="also write every compared metric as JSON (subject, before, after, p, verdict)"
    )
    history = parser.add_argument_group("from the Prometheus history (instead of two captures)")
    history.add_argument("--prometheus", metavar="URL", help="Prometheus or VictoriaMetrics holding the exporter's series")
    history.add_argument("--before", dest="before_range", metavar="START/DURATION", help="e.g. 2026-11-25T08:00:00Z/1h")
    history.add_argument("--after", dest="after_range", metavar="START/DURATION", help="e.g. 2026-11-25T10:00:00Z/1h")
    history.add_argument(
        "--change", metavar="TIME", help="the change's time: before is the --window up to it, after the --window from it"
    )
    history.add_argument(
        "--last-change", action="store_true", help="the latest setting change in the stored series (DQLEN, DSNRO, PSP, ...)"
    )
    history.add_argument(
        "--shift", metavar="DURATION", help="before = the --after range moved back by DURATION (the before/after board's shift)"
    )
    history.add_argument("--grafana", metavar="URL", help="link the HTML report to the before/after board on this Grafana")
    history.add_argument("--window", default="1h", metavar="DURATION", help="width of each range with --change or --last-change")
    history.add_argument("--lookback", default="7d", metavar="DURATION", help="how far back --last-change looks (default 7d)")
    history.add_argument("--host", action="append", default=[], metavar="NAME", help="only this host (repeatable)")
    history.add_argument("--lun.include", dest="lun_include", metavar="REGEX", help="only LUNs whose device matches")
    history.add_argument("--lun.exclude", dest="lun_exclude", metavar="REGEX", help="no LUN whose device matches")
    history.add_argument("--prometheus.user", dest="prometheus_user", metavar="NAME", help="basic auth user")
    history.add_argument("--prometheus.password-file", dest="prometheus_password_file", metavar="FILE")
    history.add_argument("--prometheus.bearer-token-file", dest="prometheus_token_file", metavar="FILE")
    history.add_argument("--prometheus.ca-file", dest="prometheus_ca_file", metavar="FILE")
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
        limits = thresholds.read(args.thresholds)
        if args.prometheus:
            results = _from_history(args, speeds, limits, skip)
        else:
            if not args.before or not args.after:
                raise ValueError("compare: give two captures (BEFORE AFTER), or --prometheus URL with the ranges")
            before = load(args.before, args.progress).skip(skip)
            after = load(args.after, args.progress).skip(skip)
            results = [compare.compare(before, after, args.allow_other_host, speeds, args.dsnro, limits)]
    except (CaptureError, ValueError, thresholds.ThresholdsError) as err:
        return fail(err, EXIT_BAD_INPUT)
    sys.stdout.write("".join(report_text.render(result) for result in results))
    for path, render in ((args.html, _html), (args.json, _json)):
        if path:
            try:
                with open(path, "w", encoding="utf-8") as out:
                    out.write(render(results))
            except OSError as err:
                return fail(f"{path}: {err.strerror}", EXIT_BAD_INPUT)
    return EXIT_WORSE if any(result.worse for result in results) else 0


def _html(results) -> str:
    from exporter.analysis import report_html

    return "\n".join(report_html.render(result) for result in results)


def _json(results) -> str:
    from exporter.analysis import report_json

    return report_json.render(results)


def _from_history(args, speeds, limits, skip: float) -> list:
    """One comparison per host found in both ranges."""
    from exporter.analysis import compare, history
    from exporter.configuration.filters import LunFilter

    if args.before or args.after:
        raise ValueError("compare: captures and --prometheus exclude each other")
    prom = history.Prometheus(
        args.prometheus, args.prometheus_user, args.prometheus_password_file, args.prometheus_token_file, args.prometheus_ca_file
    )
    ways = sum(bool(x) for x in (args.before_range or args.after_range or args.shift, args.change, args.last_change))
    if ways != 1:
        raise ValueError("compare --prometheus: give --before and --after, or --change TIME, or --last-change")
    if args.change:
        before, after = history.around(history.parse_time(args.change, "--change"), args.window)
    elif args.last_change:
        import time

        found = history.last_change(prom, time.time(), history.parse_window(args.lookback, "--lookback"), args.host)
        if found is None:
            raise ValueError(f"compare --last-change: no setting changed in the last {args.lookback} on {prom.url}")
        sys.stderr.write(f"last change at {history.iso(found[0])}: {found[1]}\n")
        before, after = history.around(found[0], args.window)
    else:
        if not args.after_range or bool(args.before_range) == bool(args.shift):
            raise ValueError("compare --prometheus: --before and --after go together (or --after and --shift)")
        after = history.parse_range(args.after_range, "--after")
        if args.shift:
            shift = history.parse_window(args.shift, "--shift")
            before = (after[0] - shift, after[1] - shift)
        else:
            before = history.parse_range(args.before_range, "--before")
    import re

    try:
        lun_filter = LunFilter(args.lun_include, args.lun_exclude)
    except re.error as err:
        raise ValueError(f"--lun.include/--lun.exclude: not a regular expression: {err}") from None
    found_before = history.captures(prom, *before, args.host, "before", args.progress)
    found_after = history.captures(prom, *after, args.host, "after", args.progress)
    hosts = sorted(set(found_before) & set(found_after))
    if not hosts:
        raise ValueError(
            f"compare --prometheus: no host has esxi_* samples in both ranges on {prom.url} "
            f"(before: {len(found_before)} host(s), after: {len(found_after)})"
        )
    settings_before, settings_after = history.settings(prom, *before, args.host), history.settings(prom, *after, args.host)
    results = []
    for host in hosts:
        b, a = history.keep_luns(found_before[host], lun_filter), history.keep_luns(found_after[host], lun_filter)
        snapshots = (
            {host: settings_before[host]} if host in settings_before else None,
            {host: settings_after[host]} if host in settings_after else None,
        )
        result = compare.compare(b.skip(skip), a.skip(skip), False, speeds, args.dsnro, limits, snapshots)
        if args.grafana:
            result.board = history.board_link(args.grafana, before, after)
        results.append(result)
    compare.correct_together(results)
    return results
