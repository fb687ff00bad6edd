#!/usr/bin/env python
"""Django's command-line utility for Flux Memory."""
import os
import sys


def main() -> None:
    os.umask(0o077)  # what the commands create (database, secret, logs) is the owner's alone
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fluxsite.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
