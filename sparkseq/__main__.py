"""``python -m sparkseq``: see :mod:`sparkseq.commands.cli`."""

import sys

from sparkseq.commands.cli import main

sys.exit(main())
