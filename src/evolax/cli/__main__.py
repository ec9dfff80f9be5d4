"""``python -m evolax.cli``: the ``evolax`` command."""

import sys

from evolax.cli import main

if __name__ == "__main__":
    sys.exit(main())
