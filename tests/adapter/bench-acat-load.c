/* bench-acat-load -- what acat_open() (the adapter's restart, adapter-catalog-open.c
 * note 4) costs on a catalog at hand: wall time of the scan and the link, the CPU
 * (user, system), minor page faults and the RSS it leaves, over several opens.
 *
 *   bench-acat-load --catalog DIR [--runs N]
 *
 * DIR is an adapter's catalog directory (DATA/adapter/catalog), copied while that
 * adapter is stopped: the open replays and may write it.  Asserts nothing; prints one
 * line per open and the median of each figure.
 */
#include <errno.h>
#include <stddef.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "adapter-catalog.h"
#include "catalog/catalog.h"
#include "util.h"

struct figures {
        double wall_ms, scan_ms, link_ms, user_ms, sys_ms, rss_mb;
        long minflt;
};

static double tv_ms(struct timeval tv)
{
        return (double)tv.tv_sec * 1e3 + (double)tv.tv_usec / 1e3;
}

static double rss_mb(void)
{
        char line[256];
        double kb = 0;
        FILE *f = fopen("/proc/self/status", "r");

        while (f && fgets(line, sizeof(line), f))
                if (sscanf(line, "VmRSS: %lf kB", &kb) == 1)
                        break;
        if (f)
                fclose(f);
        return kb / 1024;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

static double median(const struct figures *v, size_t n, size_t off)
{
        double *d = calloc(n, sizeof(*d)), m;

        if (!d)
                return -1;
        for (size_t i = 0; i < n; i++)
                d[i] = *(const double *)((const char *)&v[i] + off);
        qsort(d, n, sizeof(*d), cmp_double);
        m = d[n / 2];
        free(d);
        return m;
}

static int one_open(const char *dir, struct figures *f)
{
        struct adapter_catalog *ac = NULL;
        struct acat_load_times lt;
        struct catalog *store = NULL;
        struct rusage r0, r1;
        uint64_t t0;
        int r;

        r = catalog_open(dir, &store);
        if (r < 0)
                return r;
        getrusage(RUSAGE_SELF, &r0);
        t0 = now_ns();
        r = acat_open(store, &ac);
        f->wall_ms = (double)(now_ns() - t0) / 1e6;
        getrusage(RUSAGE_SELF, &r1);
        if (r >= 0) {
                acat_load_times(ac, &lt);
                f->scan_ms = (double)lt.scan_us / 1e3;
                f->link_ms = (double)lt.link_us / 1e3;
                f->user_ms = tv_ms(r1.ru_utime) - tv_ms(r0.ru_utime);
                f->sys_ms = tv_ms(r1.ru_stime) - tv_ms(r0.ru_stime);
                f->minflt = r1.ru_minflt - r0.ru_minflt;
                f->rss_mb = rss_mb();
                printf("open: %zu items, wall %.0f ms (scan %.0f, link %.0f), cpu user %.0f sys %.0f ms, "
                       "%ld minor faults, rss %.0f MB\n", acat_count_user(ac), f->wall_ms, f->scan_ms,
                       f->link_ms, f->user_ms, f->sys_ms, f->minflt, f->rss_mb);
        }
        acat_free(ac);
        catalog_close(store);
        return r;
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "catalog", required_argument, NULL, 'c' },
                { "runs", required_argument, NULL, 'n' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        const char *dir = NULL;
        struct figures *v;
        int runs = 5, c;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 'c': dir = optarg; break;
                case 'n': runs = atoi(optarg); break;
                default:
                        fprintf(stderr, "usage: bench-acat-load --catalog DIR [--runs N]\n");
                        return c == 'h' ? 0 : 64;
                }
        }
        if (!dir || runs < 1) {
                fprintf(stderr, "usage: bench-acat-load --catalog DIR [--runs N]\n");
                return 64;
        }
        v = calloc((size_t)runs, sizeof(*v));
        if (!v)
                return 1;
        for (int i = 0; i < runs; i++) {
                int r = one_open(dir, &v[i]);

                if (r < 0) {
                        fprintf(stderr, "bench-acat-load: open %s: %s\n", dir, strerror(-r));
                        free(v);
                        return 1;
                }
        }
        printf("median of %d: wall %.0f ms (scan %.0f, link %.0f), cpu user %.0f sys %.0f ms\n", runs,
               median(v, (size_t)runs, offsetof(struct figures, wall_ms)),
               median(v, (size_t)runs, offsetof(struct figures, scan_ms)),
               median(v, (size_t)runs, offsetof(struct figures, link_ms)),
               median(v, (size_t)runs, offsetof(struct figures, user_ms)),
               median(v, (size_t)runs, offsetof(struct figures, sys_ms)));
        free(v);
        return 0;
}
