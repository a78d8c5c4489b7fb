#!/usr/bin/env python3
"""Runs one pytest file of the Python package's suite for CTest (python/CMakeLists.txt).

Exits 77 (CTest's skip) with the reason when numpy or pytest is missing from this
interpreter, or when the fusor package was not built for it; else pytest's own status.
"""

import sys


def main():
    for module in ("numpy", "pytest"):
        try:
            __import__(module)
        except ImportError:
            print(f"skipped: {module} is not installed for {sys.executable} (scripts/python-env.sh installs it)")
            return 77
    import pytest

    return pytest.main(["-q", "-p", "no:cacheprovider", "-rs", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
