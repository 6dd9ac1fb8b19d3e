"""`python -m octet.audit ...` (octet.audit.main)."""

import sys

from .main import main

sys.exit(main())
