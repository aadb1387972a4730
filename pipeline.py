#!/usr/bin/env python3
"""Entry point: `python pipeline.py <command>` (see `python pipeline.py --help`)."""

import sys


def _run() -> int:
    from gputenancy.cli.app import main

    return main()


if __name__ == "__main__":
    try:
        code = _run()
    except ModuleNotFoundError as exc:
        if not exc.name or exc.name.split(".")[0] == "gputenancy":
            raise
        print(
            f"pipeline.py: error: the Python package providing {exc.name!r} is not installed for {sys.executable};"
            " install the pipeline first: pip install -e . (README, Set up)",
            file=sys.stderr,
        )
        code = 1
    raise SystemExit(code)
