/* bench-coldmem -- a floor of the machine, not of Coord: what touching memory costs
 * after the process has left it alone for a while.
 *
 *   bench-coldmem [--mib N] [--rounds N]
 *
 * For 4 KiB pages and for transparent huge pages (madvise), touch one byte per 4 KiB
 * of an N MiB buffer (default 16), sleep, touch again, and print the cost per 4 KiB
 * after each idle gap (median of --rounds, default 3).  On the 2-vCPU VMs this project
 * is measured on, a page left alone for 500 ms costs ~2-3 us at its next touch (about
 * a full two-dimensional page walk with every level missing the caches) while a huge
 * page stays ~0.02 us: a DDL that arrives after an idle half second runs 10-30x slower
 * than one right after another (docs/benchmarks.md, "Isolated DDL").  Asserts nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "conf.h"
#include "util.h"

#define HUGE_SIZE (2u << 20)

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static void idle_ms(unsigned ms)
{
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

        while (nanosleep(&ts, &ts) < 0)
                ;
}

/* ns per 4 KiB touched, reading one byte of each. */
static double touch(volatile const uint8_t *p, size_t size)
{
        uint64_t t0 = now_ns();
        unsigned sum = 0;

        for (size_t i = 0; i < size; i += 4096)
                sum += p[i];
        __asm__ volatile("" : : "r"(sum));
        return (double)(now_ns() - t0) / (double)(size / 4096);
}

int main(int argc, char **argv)
{
        static const unsigned gaps_ms[] = { 0, 10, 100, 500, 2000 };
        uint64_t mib = 16, rounds = 3;
        struct conf_option opts[] = {
                { "mib", CONF_U64, &mib, 1024, "buffer size in MiB (default 16)" },
                { "rounds", CONF_U64, &rounds, 100, "measurements per gap, the median is printed (default 3)" },
        };
        char err[256];
        char *args[4];
        int nargs = 0, r = -EINVAL;

        if (argc > 5 || (r = conf_parse(argc, argv, "bench", opts, ELEMENTSOF(opts), args, &nargs, err,
                            sizeof(err))) < 0 || nargs || mib == 0 || rounds == 0) {
                fprintf(stderr, "usage: bench-coldmem [--mib N] [--rounds N]%s%s\n", r < 0 ? ": " : "",
                        r < 0 ? err : "");
                return 64;
        }
        if (r == 1) {
                conf_usage(stdout, opts, ELEMENTSOF(opts));
                return 0;
        }
        for (int huge = 0; huge <= 1; huge++) {
                size_t size = (size_t)mib << 20;
                uint8_t *p = mmap(NULL, size + HUGE_SIZE, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                uint8_t *b;

                if (p == MAP_FAILED) {
                        perror("bench-coldmem: mmap");
                        return 1;
                }
                b = (uint8_t *)(((uintptr_t)p + HUGE_SIZE - 1) & ~(uintptr_t)(HUGE_SIZE - 1));
                (void)madvise(b, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
                memset(b, 1, size);
                printf("touch after idle, %s pages, %" PRIu64 " MiB:", huge ? "huge (THP)" : "4 KiB",
                       mib);
                for (size_t g = 0; g < ELEMENTSOF(gaps_ms); g++) {
                        double v[100];

                        for (uint64_t k = 0; k < rounds; k++) {
                                touch(b, size);
                                idle_ms(gaps_ms[g]);
                                v[k] = touch(b, size);
                        }
                        qsort(v, rounds, sizeof(*v), cmp_double);
                        printf("  %u ms %.2f us", gaps_ms[g], v[rounds / 2] / 1000.0);
                }
                printf("  (per 4 KiB)\n");
                munmap(p, size + HUGE_SIZE);
        }
        conf_done(opts, ELEMENTSOF(opts));
        return 0;
}
