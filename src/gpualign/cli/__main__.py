"""``python -m gpualign.cli``: the ``gpualign`` command."""

import sys

from . import main

sys.exit(main())
