"""A host program built against the kernel headers with the toolkit's nvcc and run here, for
the tests that check a layout the host mirrors against what the C++ compiler makes of it."""

import subprocess

from nqprof.cuda.sources import kernels_dir


def host_program_output(toolkit, tmp_path, name, source, flags=(), libs=()) -> str:
    """What the program ``source`` prints, built as ``name`` in ``tmp_path`` with ``-I
    kernels/`` (nvcc's ``flags`` before the source, ``libs`` after the output)."""
    program = tmp_path / f"{name}.cu"
    program.write_text(source)
    exe = tmp_path / name
    subprocess.run(
        [
            str(toolkit.nvcc),
            "-std=c++17",
            *flags,
            "-I",
            str(kernels_dir()),
            str(program),
            "-o",
            str(exe),
            *libs,
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
