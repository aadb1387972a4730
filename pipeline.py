#!/usr/bin/env python3
"""Entry point: `python pipeline.py <command>` (see `python pipeline.py --help`)."""

from gputenancy.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
