"""Write report.html and report.md from an evaluation.json.

    python render_report.py --evaluation evaluation.json --out DIR
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bakeoff_runtime.contract.documents import read_evaluation  # noqa: E402
from bakeoff_runtime.report.document import write_reports  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--evaluation", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    for path in write_reports(read_evaluation(args.evaluation), args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
