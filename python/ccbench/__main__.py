"""``python -m ccbench`` is the ``ccbench`` command."""

from ccbench.cli import main

if __name__ == "__main__":
    main()
