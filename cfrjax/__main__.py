"""`python -m cfrjax` runs the command line."""

import sys

from cfrjax.cli import main

sys.exit(main())
