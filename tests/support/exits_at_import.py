"""A module that ends the process at import, as a script run as a module would."""

import sys

sys.exit("this module is a script")
