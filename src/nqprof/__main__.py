"""``python -m nqprof``: the same as the ``nqprof`` command."""

import sys

from .cli import main

sys.exit(main())
