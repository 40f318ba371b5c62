/*
 * nqprof CPU reference for timing comparisons: the classic recursive bitmask N-Queens
 * counter with mirror symmetry (first queen in the left half, doubled; for odd N the
 * middle column with the second queen in the left half, doubled).
 *
 * Standalone program, not part of the extension:
 *     gcc -O3 -o recursive_reference recursive_reference.c
 *     ./recursive_reference N
 * prints "<count> <seconds>", the seconds covering the count only (monotonic clock).
 * bench/cpu_reference.py builds and runs it next to nqprof._cpu.serial.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint32_t full;

static uint64_t
solve(uint32_t cols, uint32_t ld, uint32_t rd)
{
    uint64_t count = 0;
    uint32_t free;

    if (cols == full)
        return 1;
    free = ~(cols | ld | rd) & full;
    while (free) {
        uint32_t bit = free & (0u - free);
        free ^= bit;
        count += solve(cols | bit, (ld | bit) << 1, (rd | bit) >> 1);
    }
    return count;
}

static uint64_t
count_all(int n)
{
    uint32_t half = (uint32_t)n / 2u, c;
    uint64_t total = 0;

    if (n == 1)
        return 1;
    for (c = 0; c < half; c++) {
        uint32_t b = 1u << c;
        total += solve(b, b << 1, b >> 1);
    }
    if (n % 2 == 1) {
        uint32_t b = 1u << half;
        uint32_t second = ~(b | (b << 1) | (b >> 1)) & full & ((1u << half) - 1u);
        while (second) {
            uint32_t b2 = second & (0u - second);
            second ^= b2;
            total += solve(b | b2, ((b << 1) | b2) << 1, ((b >> 1) | b2) >> 1);
        }
    }
    return 2 * total;
}

int
main(int argc, char **argv)
{
    struct timespec t0, t1;
    uint64_t total;
    char *end;
    long n;

    if (argc != 2) {
        fprintf(stderr, "usage: %s N   (1 <= N <= 27)\n", argv[0]);
        return 2;
    }
    n = strtol(argv[1], &end, 10);
    if (*argv[1] == '\0' || *end != '\0' || n < 1 || n > 27) {
        fprintf(stderr, "N must be an integer in 1..27, got %s\n", argv[1]);
        return 2;
    }
    full = (1u << n) - 1u;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    total = count_all((int)n);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%llu %.6f\n", (unsigned long long)total,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
    return 0;
}
