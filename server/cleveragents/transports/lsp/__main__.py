import sys

from cleveragents.transports.lsp.server import main

sys.exit(main())
