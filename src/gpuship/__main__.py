import sys

from gpuship.cli.main import main

sys.exit(main())
