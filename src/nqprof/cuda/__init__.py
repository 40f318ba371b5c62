"""CUDA machinery shared by every GPU strategy: toolkit lookup, kernel sources, builds,
device context and memory ledger, NVTX ranges. Nothing here imports PyCUDA at import
time, so the CPU parts of nqprof work without it."""
