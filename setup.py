"""Build the C CPU references (kernels/cpu) as the extension ``nqprof._cpu``.

Everything else about the package lives in pyproject.toml; setuptools needs this file
only for the extension module.
"""

import sys

from setuptools import Extension, setup

extra_compile_args = ["-O3", "-std=c11"]
extra_link_args = []
if sys.platform != "win32":
    extra_compile_args.append("-pthread")
    extra_link_args.append("-pthread")

setup(
    packages=[
        "nqprof",
        "nqprof.cuda",
        "nqprof.strategies",
        "nqprof.strategies.cdp",
        "nqprof.cli",
        "nqprof.analysis",
        "nqprof.analysis.trace",
        "nqprof.papers",
        "nqprof.cluster",
        "nqprof.characterize",
        "nqprof.kernels",
    ],
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
