"""Kerbl et al. 2018, "The Broker Queue: a fast,
linearizable FIFO queue for fine-granular work distribution on the GPU".
"""

from __future__ import annotations

from . import Artefact, Paper

#: Their Fig. 1 finding: with each thread doing 10 enqueue/dequeue pairs, both broker queues
#: beat a lock-free ring queue and the Gottlieb queue by up to an order of magnitude.
PAPER_FIG1_SPEEDUP_UP_TO = 10.0

PAPER = Paper(
    "kerbl",
    "Kerbl et al.: The Broker Queue: a fast, linearizable FIFO queue for fine-granular work distribution on the GPU (2018)",
    (Artefact("fig1", "queue microbenchmark: time vs threads, one line per queue",
              planned="the queues and nqprof queue-bench are not written yet"),),
)
