"""Only the package list lives here; everything else is in pyproject.toml.

setuptools' ``packages.find`` cannot add ``pycudamlx.kernels_ptx``: that directory is the
checkout's top-level kernels_ptx/ (mapped into the package by ``package-dir`` in pyproject.toml),
so the wheel ships it as pycudamlx/kernels_ptx.
"""

from setuptools import find_namespace_packages, setup

setup(packages=find_namespace_packages(include=["pycudamlx*"]) + ["pycudamlx.kernels_ptx"])
