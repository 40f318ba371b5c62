"""Build the C CPU references (kernels/cpu) as the extension ``nqprof._cpu``.

Everything else about the package lives in pyproject.toml; setuptools needs this file for
the extension module and the package list (found, not written out).
"""

import sys

from setuptools import Extension, find_packages, setup

extra_compile_args = ["-O3", "-std=c11"]
extra_link_args = []
if sys.platform != "win32":
    extra_compile_args.append("-pthread")
    extra_link_args.append("-pthread")

setup(
    # every package under src/ (a new subpackage needs only its __init__.py), and the kernel
    # sources, which pyproject.toml's package-dir maps from kernels/ to nqprof.kernels
    packages=find_packages("src") + ["nqprof.kernels"],
    ext_modules=[
        Extension(
            "nqprof._cpu",
            sources=[
                "kernels/cpu/nqueens_cpu.c",
                "kernels/cpu/d4.c",
                "kernels/cpu/d4_py.c",
                "kernels/cpu/constellations.c",
                "kernels/cpu/constellations_py.c",
            ],
            depends=["kernels/cpu/d4.h", "kernels/cpu/constellations.h", "kernels/cpu/py_tasks.h"],
            extra_compile_args=extra_compile_args,
            extra_link_args=extra_link_args,
        )
    ],
)
