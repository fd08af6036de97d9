"""``python -m flashcheck.cli``: the ``flashcheck`` command, for a process spawned with this
interpreter (mutation testing's fuzz runs, the tests)."""

import sys

from flashcheck.cli import main

sys.exit(main())
