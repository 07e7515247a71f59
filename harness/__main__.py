"""`python -m freshrag` is the `freshrag` command."""

import sys

from freshrag.cli.main import main

sys.exit(main())
