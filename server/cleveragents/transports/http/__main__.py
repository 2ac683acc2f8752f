import sys

from cleveragents.transports.http.main import main

sys.exit(main())
