"""``python -m respc``: the same command line as the ``respc`` script (see respc.compiler.cli)."""

import sys

from respc.compiler.cli import main

sys.exit(main())
