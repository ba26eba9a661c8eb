"""python -m dashboards [--check] [--out DIR]: write (or compare) the generated dashboard JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .boards import adapters, before_after, capacity, cpu_efficiency, disks, lun_detail, overview, sioc, space, vms, vsan
from .render import dumps, import_flavour, to_json

BOARDS = (overview, lun_detail, adapters, capacity, cpu_efficiency, before_after, vms, disks, vsan, sioc, space)
HERE = Path(__file__).resolve().parent
FLAVOURS = {"provisioned": lambda model: model, "import": import_flavour}


def generate() -> dict[str, str]:
    """Relative path -> file text, for every dashboard in every flavour."""
    files = {}
    for board in BOARDS:
        model = to_json(board.build())
        for flavour, convert in FLAVOURS.items():
            files[f"{flavour}/{board.FILE}"] = dumps(convert(model))
    return files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dashboards", description=__doc__)
    ap.add_argument("--check", action="store_true", help="exit 1 if the committed JSON differs from the code's")
    ap.add_argument("--out", type=Path, default=HERE, help="directory to write into (default: dashboards/)")
    args = ap.parse_args(argv)
    files = generate()
    if args.check:
        stale = [
            rel
            for rel, text in files.items()
            if not (args.out / rel).is_file() or (args.out / rel).read_text(encoding="utf-8") != text
        ]
        extra = sorted({str(p.relative_to(args.out)) for f in FLAVOURS for p in (args.out / f).glob("*.json")} - set(files))
        for rel in stale:
            print(f"dashboards: {rel} is not what the generator makes; run python -m dashboards", file=sys.stderr)
        for rel in extra:
            print(f"dashboards: {rel} is not made by the generator; delete it", file=sys.stderr)
        return 1 if stale or extra else 0
    for rel, text in files.items():
        path = args.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} dashboards to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
