import sys

from cleveragents.transports.lsp.main import main

sys.exit(main())
