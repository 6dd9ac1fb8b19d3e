"""`python -m octet.audit TARGET [--quick|--full] [--json FILE] [--device cpu|cuda]`."""

import argparse
import sys

from . import runner


def parse(argv):
    p = argparse.ArgumentParser(prog="octet audit", description=(
        "Check an FP8 implementation's numerics (casts, quantize, GEMMs) against Octet's reference."))
    p.add_argument("targets", nargs="+", metavar="TARGET", choices=runner.TARGETS,
                   help="one or more of: " + ", ".join(runner.TARGETS))
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quick", dest="mode", action="store_const", const="quick",
                   help="a stratified FP32 sample for FP32 casts (seconds)")
    g.add_argument("--full", dest="mode", action="store_const", const="full",
                   help="every FP32 input for FP32 casts (the default; minutes)")
    p.add_argument("--json", metavar="FILE", help="also write the report as JSON to FILE ('-': stdout only JSON)")
    p.add_argument("--device", choices=runner.DEVICES, default="cpu", help="where the target runs (default cpu)")
    p.add_argument("--progress", action="store_true", help="name each operation on stderr as it starts")
    p.set_defaults(mode="full")
    return p.parse_args(argv)


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    progress = (lambda s: print(s, file=sys.stderr, flush=True)) if args.progress else None
    report = runner.run(args.targets, args.mode, args.device, progress)
    if args.json == "-":
        print(report.dumps())
    else:
        print(report.text())
        if args.json:
            with open(args.json, "w") as f:
                f.write(report.dumps() + "\n")
    return report.exit_status
