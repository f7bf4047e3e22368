"""``python -m pycudamlx``: the same click app as the ``pycudamlx`` console script."""

from .cli import main

if __name__ == "__main__":
    main(prog_name="pycudamlx")
