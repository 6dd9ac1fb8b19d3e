"""`python3 -m octet ...`: the same as the `octet` command (octet._cli)."""

import sys

from ._cli import main

sys.exit(main())
