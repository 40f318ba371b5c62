"""Numbers mirrored between the CUDA kernels and the host: every strategy's device-counter
layout against its kernel header's #defines, and the sizes of what the host allocates,
uploads and reads back against the kernels' types (a host program built with nvcc prints
them; it runs on the CPU, no GPU needed)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from host_programs import host_program_output

from nqprof.cuda.sources import read_source
from nqprof.strategies import all_strategies
from nqprof.strategies.cdp import model as cdp_model
from nqprof.strategies.cdp.stacks import STATE_BYTES
from nqprof.strategies.gpu_common import COUNTER_BYTES
from nqprof.subproblems import BOARD_UPLOAD_BYTES, MASK_DTYPE, ROW_DTYPE

LAYOUTS = {
    s.counters.header + ":" + s.counters.prefix: s.counters for s in all_strategies() if s.counters
}


def test_some_strategy_keeps_counters():
    assert LAYOUTS


@pytest.mark.parametrize("key", sorted(LAYOUTS))
def test_counter_layout_matches_its_header(key):
    layout = LAYOUTS[key]
    text = read_source(layout.header)
    defines = dict(
        re.findall(
            rf"^#define ({re.escape(layout.prefix)}\w+) \(?([^/\n]+?)\)?\s*(?://.*)?$", text, re.M
        )
    )
    expect = layout.mirrored()
    missing = sorted(set(expect) - set(defines))
    assert not missing, f"{layout.header} does not define {missing}"
    for name, value in expect.items():
        # a define may be an expression of the others (CDP_WORDS): let the C preprocessor's
        # arithmetic be Python's, with the other defines substituted
        expr = re.sub(
            r"\b[A-Z_][A-Z0-9_]*\b", lambda m: defines.get(m.group(0), m.group(0)), defines[name]
        )
        expr = re.sub(r"\b[A-Z_][A-Z0-9_]*\b", lambda m: defines.get(m.group(0), m.group(0)), expr)
        assert eval(expr, {}) == value, (
            f"{name}: header {defines[name]} = {eval(expr, {})}, host {value}"
        )


#: C expression (in a program that includes the kernels) -> the host's number.
SIZES = {
    "sizeof(mask_t)": np.dtype(MASK_DTYPE).itemsize,
    "sizeof(count_t)": COUNTER_BYTES,
    "3 * sizeof(mask_t) + sizeof(unsigned char)": BOARD_UPLOAD_BYTES,
    "sizeof(nq_board)": cdp_model.BOARD_BYTES,
    "CDP_STATE_BYTES": STATE_BYTES,
    "DPSWAP_FIELDS * sizeof(mask_t)": cdp_model.SWAP_STATE_BYTES,
    "sizeof(cdp_word)": COUNTER_BYTES,
}


def test_row_type_is_one_byte():
    assert np.dtype(ROW_DTYPE).itemsize == 1  # the kernels read rows as unsigned char


@pytest.mark.slow
def test_sizes_match_the_kernels(tmp_path, toolkit):
    prints = "\n".join(f'    printf("%d\\n", (int)({expr}));' for expr in SIZES)
    printed = host_program_output(
        toolkit,
        tmp_path,
        "sizes",
        f'#include <cstdio>\n#include "dpswap.cu"\nint main() {{\n{prints}\n    return 0;\n}}\n',
        flags=["-rdc=true"],
        libs=["-lcudadevrt"],
    ).split()
    assert dict(zip(SIZES, map(int, printed), strict=True)) == SIZES
