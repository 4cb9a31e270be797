"""`python3 -m gadget_ray`: the entry point `gadget cluster ray` runs."""

import sys

from gadget_ray.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
