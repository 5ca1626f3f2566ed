"""`python -m worqr`: the `worqr` command line."""

import sys

from .cli import main

sys.exit(main())
