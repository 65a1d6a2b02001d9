"""``python -m sparkseq``: see :mod:`sparkseq.cli`."""

import sys

from sparkseq.cli import main

sys.exit(main())
