"""`python -m pykorn_cli ...` is the `pykorn` command."""

import sys

from pykorn_cli.main import main

sys.exit(main())
