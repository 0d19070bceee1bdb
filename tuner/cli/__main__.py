"""``python -m tuner.cli``: the same as the ``gemmtune`` console script."""

from tuner.cli import main

main()
