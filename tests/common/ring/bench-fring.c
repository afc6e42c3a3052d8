/* bench-fring.c -- how fast the frontier ring carries a change to another process.
 *
 *   bench-fring [--iterations N]
 *
 * Prints figures, asserts nothing:
 *   ring spin   publish-to-observe latency, the reader spinning on fring_read();
 *   ring futex  the same with the reader asleep in fring_wait(), so a FUTEX_WAKE and
 *               a context switch are on the path;
 *   ring tput   records per second through the ring with a reader keeping up (the
 *               producer never runs more than half a ring ahead of it).
 * The producer puts its CLOCK_MONOTONIC send time in `upper` and the sample number in
 * `since`; the reader, a forked process, stores now - upper per sample in a shared
 * page and acknowledges through it.  N is the number of samples of each latency test
 * (default 20000 spin, 2000 futex); the throughput run carries 100 * N records
 * (default 2000000).
 */
#include "ring/fring.h"

#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ring/fring-layout.h"
#include "util.h"

enum mode { MODE_SPIN, MODE_FUTEX, MODE_TPUT };

#define TPUT_RING       65536u
#define TPUT_IDS        1024u

/* Shared between the producer (parent) and the reader (child). */
struct ctl {
        uint64_t ready;                 /* reader attached and drained its snapshot */
        uint64_t ack;                   /* samples (records) the reader has seen */
        uint64_t resyncs;               /* snapshots after the first */
        uint64_t end_ns;                /* tput: when the reader saw the last record */
        uint64_t sleeps;                /* reader's voluntary context switches meanwhile */
        uint64_t lat_ns[];              /* per sample */
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#else
        __asm__ __volatile__("" ::: "memory");
#endif
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

static _Noreturn void reader(const char *name, enum mode mode, uint64_t n, struct ctl *ctl)
{
        struct fring_frontier buf[256];
        struct fring_reader *rd = NULL;
        struct rusage ru0, ru1;
        bool resynced;
        int k;

        if (fring_attach(name, &rd) < 0)
                _exit(1);
        while ((k = fring_read(rd, buf, ELEMENTSOF(buf), NULL)) > 0 || fring_reader_resyncing(rd))
                ;
        if (k < 0)
                _exit(1);
        getrusage(RUSAGE_SELF, &ru0);
        __atomic_store_n(&ctl->ready, 1, __ATOMIC_RELEASE);

        for (uint64_t seen = 0; seen < n;) {
                k = fring_read(rd, buf, ELEMENTSOF(buf), &resynced);
                if (k < 0)
                        _exit(1);
                if (resynced)
                        ctl->resyncs++;
                if (k == 0) {
                        if (mode == MODE_FUTEX)
                                (void)fring_wait(rd, 1000);
                        else
                                cpu_relax();
                        continue;
                }
                for (int i = 0; i < k; i++) {
                        uint64_t t = now_ns();

                        if (mode != MODE_TPUT && buf[i].since < n)
                                ctl->lat_ns[buf[i].since] = t - buf[i].upper;
                        if (buf[i].since + 1 > seen)
                                seen = buf[i].since + 1;
                }
                if (seen >= n)
                        ctl->end_ns = now_ns();
                /* Publishes lat_ns[] for the producer.  Pairs with its acquire loads. */
                __atomic_store_n(&ctl->ack, seen, __ATOMIC_RELEASE);
        }
        getrusage(RUSAGE_SELF, &ru1);
        ctl->sleeps = (uint64_t)(ru1.ru_nvcsw - ru0.ru_nvcsw);
        fring_reader_free(rd);
        _exit(0);
}

static void wait_until(const uint64_t *word, uint64_t at_least)
{
        while (__atomic_load_n(word, __ATOMIC_ACQUIRE) < at_least)
                cpu_relax();
}

static const struct fring_waitpage *map_waitpage(const char *name)
{
        char wname[NAME_MAX + 2];
        void *p;
        int fd;

        snprintf(wname, sizeof wname, "%s%s", name, FRING_WAIT_SUFFIX);
        fd = shm_open(wname, O_RDONLY | O_CLOEXEC, 0);
        if (fd < 0)
                return NULL;
        p = mmap(NULL, sizeof(struct fring_waitpage), PROT_READ, MAP_SHARED, fd, 0);
        close(fd);
        return p == MAP_FAILED ? NULL : p;
}

/* Runs one measurement; returns 0 or -errno. */
static int run(enum mode mode, uint64_t n, const char *label)
{
        const size_t ctl_size = sizeof(struct ctl) + (mode == MODE_TPUT ? 0 : n * sizeof(uint64_t));
        const struct fring_waitpage *wp = NULL;
        struct fring *r = NULL;
        struct ctl *ctl;
        uint64_t t0, t1 = 0;
        char name[64];
        int k, status;
        pid_t pid;

        snprintf(name, sizeof name, "/coord-bench-%d-%d", (int)getpid(), (int)mode);
        ctl = mmap(NULL, ctl_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (ctl == MAP_FAILED)
                return -errno;
        /* Room to spare: this measures publishes and reads, not a grow (fring.c note 10),
         * whose snapshot would hand the reader every id's older timestamp. */
        k = fring_create(name, 2 * TPUT_IDS, mode == MODE_TPUT ? TPUT_RING : 1024, 1, &r);
        if (k < 0)
                goto out;
        if (mode == MODE_FUTEX && !(wp = map_waitpage(name))) {
                k = -errno;
                goto out;
        }
        fflush(stdout);
        pid = fork();
        if (pid < 0) {
                k = -errno;
                goto out;
        }
        if (pid == 0)
                reader(name, mode, n, ctl);
        wait_until(&ctl->ready, 1);

        t0 = now_ns();
        for (uint64_t i = 0; i < n; i++) {
                struct fring_frontier f = { .id = 1 + i % TPUT_IDS, .since = i };

                switch (mode) {
                case MODE_SPIN:
                        break;
                case MODE_FUTEX:
                        /* The reader is done with the last sample and asleep again. */
                        while (__atomic_load_n(&wp->waiters, __ATOMIC_ACQUIRE) == 0)
                                cpu_relax();
                        usleep(50);             /* well asleep: a futex wake, not a spin */
                        break;
                case MODE_TPUT:
                        /* Keep within half a ring of the reader: it keeps up by design. */
                        if (i % 64 == 0 && i > TPUT_RING / 2)
                                wait_until(&ctl->ack, i - TPUT_RING / 2);
                        break;
                }
                f.upper = now_ns();
                k = fring_publish(r, &f);
                if (k < 0)
                        goto out;
                if (mode != MODE_TPUT)
                        wait_until(&ctl->ack, i + 1);
        }
        t1 = now_ns();
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                k = -ECHILD;
                goto out;
        }

        if (mode == MODE_TPUT) {
                double secs = (double)(ctl->end_ns - t0) / 1e9;

                printf("%-11s %6.2f M records/s   (%llu records, publish %.0f ns each, "
                       "%llu reader resyncs)\n", label, (double)n / secs / 1e6,
                       (unsigned long long)n, (double)(t1 - t0) / (double)n,
                       (unsigned long long)ctl->resyncs);
        } else {
                qsort(ctl->lat_ns, n, sizeof(uint64_t), cmp_u64);
                printf("%-11s p50=%8.2f us  p99=%8.2f us  max=%9.2f us   (n=%llu, reader "
                       "slept %.2f times per sample)\n", label,
                       (double)ctl->lat_ns[n / 2] / 1e3, (double)ctl->lat_ns[n * 99 / 100] / 1e3,
                       (double)ctl->lat_ns[n - 1] / 1e3, (unsigned long long)n,
                       (double)ctl->sleeps / (double)n);
        }
        k = 0;
out:
        if (wp)
                munmap((void *)wp, sizeof *wp);
        fring_free(r);
        fring_unlink(name);
        munmap(ctl, ctl_size);
        return k;
}

int main(int argc, char **argv)
{
        uint64_t spin = 20000, futex = 2000, tput = 2000000, n;
        int k;

        if (argc == 3 && strcmp(argv[1], "--iterations") == 0) {
                k = parse_u64(argv[2], 10000000, &n);
                if (k < 0 || n == 0) {
                        fprintf(stderr, "bench-fring: bad --iterations '%s'\n", argv[2]);
                        return 2;
                }
                spin = futex = n;
                tput = 100 * n;
        } else if (argc != 1) {
                fprintf(stderr, "usage: %s [--iterations N]\n", argv[0]);
                return 2;
        }

        k = run(MODE_SPIN, spin, "ring spin");
        if (k == 0)
                k = run(MODE_FUTEX, futex, "ring futex");
        if (k == 0)
                k = run(MODE_TPUT, tput, "ring tput");
        if (k < 0) {
                fprintf(stderr, "bench-fring: %s\n", strerror(-k));
                return 1;
        }
        return 0;
}
