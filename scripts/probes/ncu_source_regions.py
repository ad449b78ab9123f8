"""Where a kernel's warps spend their time, instruction by instruction: Nsight Compute's source page
(warp-state samples per SASS instruction) summed over the kernel and over runs of instructions that
execute equally often (a loop body, code run once a tile, once a k-step, ...).

    ncu --profile-from-start off --clock-control none --section WarpStateStats --section SourceCounters \\
        -o REP python3 scripts/probes/fp8_coalescing.py call LIB.so|cublas 8192 8192 8192
    ncu -i REP.ncu-rep --page source --csv --print-source sass > REP.csv
    python3 scripts/probes/ncu_source_regions.py REP.csv [--min-share PCT] [--kernel SUBSTR]

For each kernel in the CSV (with at least 1,000 samples): its instructions and samples, the stall
reasons' shares of the samples (the CSV has no column for some reasons, gmma among them: the shares
need not add up to 100%), and each region (consecutive instructions with the same execution count)
holding at least PCT % of the samples (default 0.3), with its first instruction. REP.csv may be
gzipped (REP.csv.gz). The page also shows a library's
kernels (cuBLAS's), whose SASS `cuobjdump` cannot reach. Samples are taken per warp at a fixed
interval, so a region's share of a warp's samples is its share of that warp's time. On bad input one
line and exit 2. The fp8_gemm README ("Step 10") has what it showed.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import sys
from dataclasses import dataclass, field
from pathlib import Path

import probe_args  # this folder's

PROBE = "ncu_source_regions.py"
SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"


@dataclass
class Kernel:
    name: str
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)

    def column(self, name: str) -> list[int]:
        i = self.header.index(name)
        return [int(r[i] or 0) if i < len(r) else 0 for r in self.rows]


def kernels(text: str) -> list[Kernel]:
    """The CSV of `ncu -i REP --page source --csv --print-source sass`: per kernel a "Kernel Name" line,
    a header line (starting "Address"), then one line per instruction. ValueError if it is not one."""
    out: list[Kernel] = []
    for row in csv.reader(text.splitlines()):
        if not row:
            continue
        if row[0] == "Kernel Name":
            out.append(Kernel(row[1] if len(row) > 1 else "?"))
        elif row[0] == "Address" and out:
            out[-1].header = row
        elif out and out[-1].header:
            out[-1].rows.append(row)
    for k in out:
        missing = [c for c in ("Source", SAMPLES, EXECUTED) if c not in k.header]
        if missing:
            raise ValueError(f"kernel {k.name[:60]} has no {', '.join(missing)} column (the source page with "
                             "--print-source sass, from a report with the SourceCounters section?)")
    if not out:
        raise ValueError("no \"Kernel Name\" line: not ncu's source page as CSV")
    return out


def regions(executed: list[int], samples: list[int]) -> list[tuple[int, int, int, int]]:
    """Runs of consecutive instructions with the same execution count: (first, last, count, samples)."""
    out: list[list[int]] = []
    for i, (e, s) in enumerate(zip(executed, samples)):
        if out and out[-1][2] == e:
            out[-1][1] = i
            out[-1][3] += s
        else:
            out.append([i, i, e, s])
    return [(a, b, e, s) for a, b, e, s in out]


def report(k: Kernel, min_share: float) -> list[str]:
    samples, executed = k.column(SAMPLES), k.column(EXECUTED)
    total = sum(samples)
    source = [r[k.header.index("Source")].strip() for r in k.rows]
    lines = [f"{k.name[:100]}: {len(k.rows)} instructions, {total} samples, {sum(executed):,} executed"]
    stalls = {h[len("stall_"):]: sum(k.column(h)) for h in k.header
              if h.startswith("stall_") and "Not Issued" not in h}
    lines.append("  stall reasons: " + ", ".join(f"{name} {v / total:.1%}" for name, v in
                                                  sorted(stalls.items(), key=lambda x: -x[1]) if v))
    for a, b, e, s in regions(executed, samples):
        if s and s >= total * min_share / 100:
            lines.append(f"  [{a:5d}-{b:5d}] executed {e:>11,} each, {b - a + 1:4d} instructions, "
                         f"{s / total:6.2%} of samples  {source[a][:48]}")
    return lines


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(prog=PROBE, description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", help="ncu's source page as CSV (see above)")
    ap.add_argument("--min-share", type=float, default=0.3, help="regions with at least this %% of the samples")
    ap.add_argument("--kernel", default="", help="only kernels whose name holds this")
    a = ap.parse_args(argv)
    path = Path(a.csv)
    if not path.is_file():
        probe_args.fail(PROBE, f"no such file: {path}")
    if not 0 <= a.min_share <= 100:
        probe_args.fail(PROBE, f"--min-share is a percentage from 0 to 100, not {a.min_share}")
    try:
        raw = path.read_bytes()
        found = kernels((gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode(errors="replace"))
    except (ValueError, OSError, EOFError) as e:
        probe_args.fail(PROBE, f"{path}: {e}")
    shown = [k for k in found if a.kernel in k.name and sum(k.column(SAMPLES)) >= 1000]
    if not shown:
        probe_args.fail(PROBE, f"{path}: no kernel{' holding ' + repr(a.kernel) if a.kernel else ''} "
                               "with 1,000 samples or more")
    for k in shown:
        print("\n".join(report(k, a.min_share)))


if __name__ == "__main__":
    main(sys.argv[1:])
