"""`python -m stream_dedup.cli`: the `stream-dedup` command."""

import sys

from .main import main

sys.exit(main())
