"""`python -m harness` is the `freshrag` command."""

import sys

from harness.cli import main

sys.exit(main())
