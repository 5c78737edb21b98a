#!/usr/bin/env python
import gc
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmark.settings")
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    finally:
        # The command is done: the interpreter's shutdown need not walk every object the
        # process made for garbage cycles (~0.3 s of CPU after an evaluation, with the model
        # SDK loaded). Files and connections are closed by their owners before this.
        gc.freeze()


if __name__ == "__main__":
    main()
