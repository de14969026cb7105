"""`python -m bench [--quick]`: run every benchmark and print its figures."""

from __future__ import annotations

import argparse

from bench import (
    board,
    changepoints,
    index,
    instrument,
    junit,
    redact,
    scale,
    search_parity,
    secrets_detectors,
    site,
    startup,
)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="few repeats: checks the benchmarks run, not the figures")
    args = parser.parse_args()
    startup.run(repeats=3 if args.quick else 21)
    instrument.run(repeats=2 if args.quick else 9)
    redact.run(quick=args.quick)
    junit.run(quick=args.quick)
    index.run(sizes=(1_000,) if args.quick else (10_000, 100_000), repeats=2 if args.quick else 5)
    board.run(sizes=(1_000,) if args.quick else (10_000, 100_000), repeats=2 if args.quick else 5)
    changepoints.run(sizes=(1_000,) if args.quick else (10_000, 100_000), repeats=1 if args.quick else 3)
    if args.quick:
        site.run(sizes=(300,), repeats=1, quick=True)
    else:
        site.run(sizes=(10_000,), repeats=3, quick=False)
    scale.main(["1000", "--repeats", "1"] if args.quick else ["100000"])  # 1,000,000: python -m bench.scale
    search_parity.run(count=200 if args.quick else 1000)
    secrets_detectors.run()


if __name__ == "__main__":
    main()
