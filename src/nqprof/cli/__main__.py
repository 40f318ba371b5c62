"""``python -m nqprof.cli``: the same as the ``nqprof`` command."""

import sys

from . import main

sys.exit(main())
