/* coord-trace -- live latency histograms and rates of the Coord daemons from their USDT
 * probes (common/probes.d), through libbpf: no bpftrace needed.
 *
 *   coord-trace ddl|commit|publication|lag|stalls|appends [--pid P] [--binary PATH]
 *               [--interval S] [--duration S] [--check] [--verbose]
 *
 * Each subcommand loads only its programs of coord-trace.bpf.c, attaches them with
 * bpf_program__attach_usdt() to one daemon (--pid) or to every process of the daemon's
 * executable, prints per interval the events' counts and rates and the log2 histograms,
 * and at the end one `total:` line of key=value counts.  --check stops before the load:
 * it opens the skeleton and finds every probe in the executables' .note.stapsdt, which
 * needs no privilege.
 *
 * Exit: 0 done, 1 error, 64 usage, 69 BPF not permitted here (EX_UNAVAILABLE).
 * Errors are -errno inside; main() prints them once.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "coord-trace.h"
#include "coord-trace.skel.h"

#define EXIT_USAGE 64
#define EXIT_NOBPF 69
#define MAX_TARGETS 3
#define MAX_LINKS 256

enum sub { SUB_DDL, SUB_COMMIT, SUB_PUBLICATION, SUB_LAG, SUB_STALLS, SUB_APPENDS, _SUB_MAX };
enum daemon { D_ADAPTER, D_LIFECYCLE, D_CONTROLLER, _D_MAX, D_ALL = _D_MAX };

#define M(s) (1u << (s))
#define M_ALL ((1u << _SUB_MAX) - 1)

static const struct {
        const char *name;
        enum daemon daemon;             /* whose executable without --pid / --binary */
        const char *what;
} subs[_SUB_MAX] = {
        [SUB_DDL] = { "ddl", D_ADAPTER, "client requests; CREATE/DROP/ALTER apart" },
        [SUB_COMMIT] = { "commit", D_ADAPTER, "catalog commits: latency, records, bytes" },
        [SUB_PUBLICATION] = { "publication", D_LIFECYCLE, "publications: records, bytes, gaps" },
        [SUB_LAG] = { "lag", D_LIFECYCLE, "follower apply: us from a commit to its application" },
        [SUB_STALLS] = { "stalls", D_ALL, "event-loop stalls and callbacks over 1 ms" },
        [SUB_APPENDS] = { "appends", D_CONTROLLER, "storage group syncs, released replies, frontiers" },
};

static const char *const daemon_exe[_D_MAX] = { "coord-adapter", "coord-lifecycle", "coord-controller" };
static const char *const daemon_dir[_D_MAX] = { "adapter", "lifecycle", "controller" };

/* Program -> probe, and the subcommands that attach it.  A probe marked `common` may be
 * absent from an executable; any other must be in at least one target. */
static const struct {
        const char *prog;
        const char *probe;
        unsigned subs;
        bool common;
} probes[] = {
        { "on_request_start", "pgwire__request__start", M(SUB_DDL), false },
        { "on_request_done", "pgwire__request__done", M(SUB_DDL), false },
        { "on_admission_refuse", "admission__refuse", M(SUB_DDL), false },
        { "on_commit_start", "catalog__commit__start", M(SUB_COMMIT), false },
        { "on_commit_done", "catalog__commit__done", M(SUB_COMMIT) | M(SUB_DDL), false },
        { "on_lring_publish", "lring__publish", M(SUB_COMMIT), false },
        { "on_sync_fail", "catalog__sync__fail", M(SUB_COMMIT), false },
        { "on_synclog_switch", "catalog__synclog__switch", M(SUB_COMMIT), false },
        { "on_synclog_replay", "catalog__synclog__replay", M(SUB_COMMIT), false },
        { "on_catchup", "catalog__catchup", M(SUB_COMMIT) | M(SUB_LAG), false },
        { "on_publish", "lifecycle__publish", M(SUB_PUBLICATION) | M(SUB_LAG), false },
        { "on_applied", "lifecycle__applied", M(SUB_LAG) | M(SUB_PUBLICATION), false },
        { "on_fallback", "lifecycle__fallback", M(SUB_LAG) | M(SUB_PUBLICATION), false },
        { "on_lring_resync", "lring__resync", M(SUB_LAG), false },
        { "on_frontier", "ring__push", M(SUB_APPENDS), false },
        { "on_stall", "loop__stall", M(SUB_STALLS), false },
        { "on_callback_slow", "loop__callback__slow", M(SUB_STALLS), false },
        { "on_storage_sync", "storage__sync__done", M(SUB_APPENDS), false },
        { "on_release", "controller__release", M(SUB_APPENDS), false },
        { "on_compact", "storage__compact", M(SUB_APPENDS), false },
        { "on_peer_up", "ipc__peer__connect", M_ALL, true },
        { "on_peer_down", "ipc__peer__disconnect", M_ALL, true },
        { "on_peer_stale", "ipc__peer__stale", M_ALL, true },
        { "on_daemon_start", "daemon__start", M_ALL, true },
        { "on_daemon_ready", "daemon__ready", M_ALL, true },
};
#define N_PROBES (sizeof(probes) / sizeof(probes[0]))

/* What an interval prints: counters (with a rate when `rate`) and histograms. */
static const struct {
        enum ct_count c;
        const char *key;                /* in the total: line */
        const char *label;
        unsigned subs;
        bool rate;
} counters[] = {
        { CT_C_REQUESTS, "requests", "requests", M(SUB_DDL), true },
        { CT_C_REQUESTS_FAILED, "requests_failed", "failed", M(SUB_DDL), false },
        { CT_C_DDL, "ddl", "ddl", M(SUB_DDL), true },
        { CT_C_DDL_FAILED, "ddl_failed", "failed", M(SUB_DDL), false },
        { CT_C_ADMISSION_REFUSED, "admission_refused", "admission refused", M(SUB_DDL), false },
        { CT_C_COMMITS, "commits", "catalog commits", M(SUB_DDL) | M(SUB_COMMIT), true },
        { CT_C_COMMITS_FAILED, "commits_failed", "failed", M(SUB_COMMIT), false },
        { CT_C_COMMIT_OPS, "commit_records", "records", M(SUB_COMMIT), true },
        { CT_C_COMMIT_BYTES, "commit_bytes", "bytes", M(SUB_COMMIT), true },
        { CT_C_SYNC_FAILED, "sync_failed", "sync failures", M(SUB_COMMIT), false },
        { CT_C_SYNCLOG_SWITCH, "synclog_switches", "sync log switches", M(SUB_COMMIT), false },
        { CT_C_REPLAYED, "replayed", "replayed at open", M(SUB_COMMIT), false },
        { CT_C_CATCHUP, "catchups", "catch-ups", M(SUB_COMMIT) | M(SUB_LAG), false },
        { CT_C_PUBLICATIONS, "publications", "publications", M(SUB_PUBLICATION) | M(SUB_LAG), true },
        { CT_C_PUB_RECORDS, "publication_records", "records", M(SUB_PUBLICATION), true },
        { CT_C_PUB_BYTES, "publication_bytes", "bytes", M(SUB_PUBLICATION), true },
        { CT_C_APPLIED, "applied", "applied", M(SUB_LAG) | M(SUB_PUBLICATION), true },
        { CT_C_FALLBACK, "fallbacks", "fallbacks", M(SUB_LAG) | M(SUB_PUBLICATION), false },
        { CT_C_LRING_RESYNC, "log_ring_resyncs", "log ring resyncs", M(SUB_LAG), false },
        { CT_C_STALLS, "stalls", "loop stalls", M(SUB_STALLS), true },
        { CT_C_CALLBACKS_SLOW, "slow_callbacks", "callbacks over 1 ms", M(SUB_STALLS), true },
        { CT_C_STORAGE_SYNCS, "syncs", "group syncs", M(SUB_APPENDS), true },
        { CT_C_STORAGE_SYNCS_FAILED, "syncs_failed", "failed", M(SUB_APPENDS), false },
        { CT_C_RELEASES, "releases", "releases", M(SUB_APPENDS), true },
        { CT_C_RELEASED_MSGS, "released_replies", "replies", M(SUB_APPENDS), true },
        { CT_C_RELEASED_RECORDS, "released_records", "ring records", M(SUB_APPENDS), true },
        { CT_C_FRONTIER, "frontier_advances", "frontier advances", M(SUB_APPENDS), true },
        { CT_C_COMPACTIONS, "compactions", "compactions", M(SUB_APPENDS), true },
        { CT_C_PEER_UP, "peer_up", "peers up", M_ALL, false },
        { CT_C_PEER_DOWN, "peer_down", "peers down", M_ALL, false },
        { CT_C_PEER_STALE, "peer_stale", "stale peers", M_ALL, false },
        { CT_C_DAEMON_START, "daemon_starts", "daemon starts", M_ALL, false },
        { CT_C_DAEMON_READY, "daemon_ready", "daemons ready", M_ALL, false },
};
#define N_COUNTERS (sizeof(counters) / sizeof(counters[0]))

static const struct {
        enum ct_hist h;
        const char *title;
        const char *unit;
        unsigned subs;
} hists[] = {
        { CT_H_DDL_US, "DDL latency (CREATE/DROP/ALTER, request to answer)", "usecs", M(SUB_DDL) },
        { CT_H_REQUEST_US, "request latency (every Query, Parse, Execute)", "usecs", M(SUB_DDL) },
        { CT_H_COMMIT_US, "catalog commit latency (start to durable)", "usecs", M(SUB_COMMIT) },
        { CT_H_COMMIT_OPS, "records per catalog transaction", "records", M(SUB_COMMIT) },
        { CT_H_COMMIT_BYTES, "bytes per commit on the catalog log ring", "bytes", M(SUB_COMMIT) },
        { CT_H_PUB_GAP_US, "time between publications", "usecs", M(SUB_PUBLICATION) },
        { CT_H_PUB_RECORDS, "records per publication (bounds + requirements)", "records", M(SUB_PUBLICATION) },
        { CT_H_PUB_BYTES, "bytes per publication", "bytes", M(SUB_PUBLICATION) },
        { CT_H_LAG_US, "follower lag (commit to applied)", "usecs", M(SUB_LAG) },
        { CT_H_STALL_US, "event-loop busy stretches over 10 ms", "usecs", M(SUB_STALLS) },
        { CT_H_CALLBACK_US, "callbacks over 1 ms", "usecs", M(SUB_STALLS) },
        { CT_H_SYNC_US, "storage group sync (an append's wait for the disk)", "usecs", M(SUB_APPENDS) },
        { CT_H_RELEASE_MSGS, "replies released per durable group", "replies", M(SUB_APPENDS) },
};
#define N_HISTS (sizeof(hists) / sizeof(hists[0]))

struct target {
        pid_t pid;                      /* -1: every process of path */
        char path[PATH_MAX];
        char *notes;                    /* "provider\0name\0" pairs of .note.stapsdt */
        size_t notes_len;
};

struct snapshot {
        uint64_t hists[_CT_H_MAX][CT_SLOTS];
        uint64_t counts[_CT_C_MAX];
};

static volatile sig_atomic_t stop;
static bool verbose;

static void on_signal(int sig)
{
        stop = 1;
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
        if (!verbose)
                return 0;       /* warnings too: the caller says what failed, once */
        return vfprintf(stderr, fmt, ap);
}

static void usage(FILE *f)
{
        fprintf(f, "usage: coord-trace SUBCOMMAND [--pid P] [--binary PATH] [--interval S] "
                   "[--duration S] [--check] [--verbose]\n\nSubcommands:\n");
        for (int i = 0; i < _SUB_MAX; i++)
                fprintf(f, "  %-12s %s (%s)\n", subs[i].name, subs[i].what,
                        subs[i].daemon == D_ALL ? "every daemon" : daemon_exe[subs[i].daemon]);
        fprintf(f, "\nOptions:\n"
                   "  --pid P        trace that process only (its /proc/P/exe)\n"
                   "  --binary PATH  trace every process of this executable\n"
                   "  --interval S   print every S seconds (default 5)\n"
                   "  --duration S   stop after S seconds (default: at SIGINT/SIGTERM)\n"
                   "  --check        open the BPF skeleton and find the probes; load nothing\n"
                   "  --verbose      libbpf's messages\n"
                   "Run as root (CAP_BPF and CAP_PERFMON).  Exit 69 when BPF is not permitted.\n");
}

/* ---- .note.stapsdt ---- */

/* Collect "provider\0name\0" of every SDT note of an ELF64 executable. */
static int notes_read(struct target *t)
{
        struct stat st;
        uint8_t *m = MAP_FAILED;
        const Elf64_Ehdr *eh;
        const Elf64_Shdr *sh;
        const char *shstr;
        char *out = NULL;
        size_t len = 0;
        int fd, r = 0;

        fd = open(t->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0) {
                r = -errno;
                goto out;
        }
        if ((size_t)st.st_size < sizeof(Elf64_Ehdr)) {
                r = -ENOEXEC;
                goto out;
        }
        m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
                r = -errno;
                goto out;
        }
        eh = (const Elf64_Ehdr *)m;
        if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
            eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > (uint64_t)st.st_size ||
            eh->e_shstrndx >= eh->e_shnum) {
                r = -ENOEXEC;
                goto out;
        }
        sh = (const Elf64_Shdr *)(m + eh->e_shoff);
        if (sh[eh->e_shstrndx].sh_offset >= (uint64_t)st.st_size) {
                r = -ENOEXEC;
                goto out;
        }
        shstr = (const char *)m + sh[eh->e_shstrndx].sh_offset;
        for (unsigned i = 0; i < eh->e_shnum; i++) {
                uint64_t off, end;

                if (sh[i].sh_type != SHT_NOTE || strcmp(shstr + sh[i].sh_name, ".note.stapsdt") != 0)
                        continue;
                off = sh[i].sh_offset;
                end = off + sh[i].sh_size;
                if (end > (uint64_t)st.st_size) {
                        r = -ENOEXEC;
                        goto out;
                }
                /* Each note: Elf64_Nhdr, name "stapsdt" (4-aligned), desc = pc, base,
                 * semaphore (8 bytes each), provider\0 name\0 args\0 (4-aligned). */
                while (off + sizeof(Elf64_Nhdr) <= end) {
                        const Elf64_Nhdr *nh = (const Elf64_Nhdr *)(m + off);
                        uint64_t name_off = off + sizeof(*nh);
                        uint64_t desc_off = name_off + ((nh->n_namesz + 3u) & ~3u);
                        uint64_t next = desc_off + ((nh->n_descsz + 3u) & ~3u);
                        const char *prov, *name;
                        size_t pl, nl;
                        char *grown;

                        if (next > end)
                                break;
                        off = next;
                        if (nh->n_type != 3 || nh->n_namesz != 8 || nh->n_descsz < 3 * 8 + 2 ||
                            memcmp(m + name_off, "stapsdt", 8) != 0)
                                continue;
                        prov = (const char *)m + desc_off + 3 * 8;
                        pl = strnlen(prov, nh->n_descsz - 3 * 8);
                        if (pl + 1 >= nh->n_descsz - 3 * 8)
                                continue;
                        name = prov + pl + 1;
                        nl = strnlen(name, nh->n_descsz - 3 * 8 - pl - 1);
                        grown = realloc(out, len + pl + nl + 2);
                        if (!grown) {
                                r = -ENOMEM;
                                goto out;
                        }
                        out = grown;
                        memcpy(out + len, prov, pl + 1);
                        memcpy(out + len + pl + 1, name, nl);
                        out[len + pl + 1 + nl] = '\0';
                        len += pl + nl + 2;
                }
        }
        t->notes = out;
        t->notes_len = len;
        out = NULL;
out:
        free(out);
        if (m != MAP_FAILED)
                munmap(m, (size_t)st.st_size);
        close(fd);
        return r;
}

static bool notes_have(const struct target *t, const char *probe)
{
        for (size_t off = 0; off < t->notes_len;) {
                const char *prov = t->notes + off, *name = prov + strlen(prov) + 1;

                if (strcmp(prov, "coord") == 0 && strcmp(name, probe) == 0)
                        return true;
                off += strlen(prov) + strlen(name) + 2;
        }
        return false;
}

/* ---- targets ---- */

/* The daemon's executable beside this one (installed) or in the build tree
 * (build/tools/coord-trace/coord-trace -> build/<dir>/<exe>). */
static int exe_find(enum daemon d, char *ret, size_t size)
{
        char self[PATH_MAX], *slash;
        const char *build = getenv("COORD_BUILD");
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        char cand[3][PATH_MAX + 64];

        if (n < 0)
                return -errno;
        self[n] = '\0';
        slash = strrchr(self, '/');
        if (slash)
                *slash = '\0';
        snprintf(cand[0], sizeof(cand[0]), "%s/%s", self, daemon_exe[d]);
        snprintf(cand[1], sizeof(cand[1]), "%s/../../%s/%s", self, daemon_dir[d], daemon_exe[d]);
        snprintf(cand[2], sizeof(cand[2]), "%s/%s/%s", build ? build : "build", daemon_dir[d], daemon_exe[d]);
        for (int i = 0; i < 3; i++)
                if (access(cand[i], X_OK) == 0 && realpath(cand[i], ret) && strlen(ret) < size)
                        return 0;
        return -ENOENT;
}

static int targets_resolve(enum sub sub, pid_t pid, const char *binary, struct target *t, int *ret_n)
{
        int n = 0, r;

        if (pid > 0) {
                char link[64];
                ssize_t len;

                snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
                len = readlink(link, t[0].path, sizeof(t[0].path) - 1);
                if (len < 0) {
                        r = -errno;
                        fprintf(stderr, "coord-trace: pid %d: %s: %s\n", (int)pid, link, strerror(-r));
                        return r;
                }
                t[0].path[len] = '\0';
                t[0].pid = pid;
                n = 1;
        } else if (binary) {
                if (!realpath(binary, t[0].path)) {
                        r = -errno;
                        fprintf(stderr, "coord-trace: %s: %s\n", binary, strerror(-r));
                        return r;
                }
                t[0].pid = -1;
                n = 1;
        } else {
                for (int d = 0; d < _D_MAX; d++) {
                        if (subs[sub].daemon != D_ALL && subs[sub].daemon != (enum daemon)d)
                                continue;
                        r = exe_find((enum daemon)d, t[n].path, sizeof(t[n].path));
                        if (r < 0) {
                                fprintf(stderr, "coord-trace: %s not found beside coord-trace, in the "
                                        "build tree or $COORD_BUILD; give --binary or --pid\n", daemon_exe[d]);
                                return r;
                        }
                        t[n++].pid = -1;
                }
        }
        for (int i = 0; i < n; i++) {
                r = notes_read(&t[i]);
                if (r < 0) {
                        fprintf(stderr, "coord-trace: %s: cannot read its probes: %s\n", t[i].path, strerror(-r));
                        return r;
                }
                if (!t[i].notes_len) {
                        fprintf(stderr, "coord-trace: %s has no USDT probes (built without dtrace "
                                "and <sys/sdt.h>, or -Dusdt=false?)\n", t[i].path);
                        return -ENOENT;
                }
        }
        *ret_n = n;
        return 0;
}

/* Every probe the subcommand needs is in some target; returns how many programs. */
static int probes_check(enum sub sub, const struct target *t, int n_targets, bool print)
{
        int used = 0, missing = 0;

        for (size_t p = 0; p < N_PROBES; p++) {
                int found = 0;

                if (!(probes[p].subs & M(sub)))
                        continue;
                for (int i = 0; i < n_targets; i++)
                        found += notes_have(&t[i], probes[p].probe);
                if (!found && !probes[p].common) {
                        fprintf(stderr, "coord-trace: probe coord:%s is in none of", probes[p].probe);
                        for (int i = 0; i < n_targets; i++)
                                fprintf(stderr, " %s", t[i].path);
                        fprintf(stderr, "\n");
                        missing++;
                }
                if (print)
                        printf("  %-28s %-22s %s\n", probes[p].probe, probes[p].prog,
                               found ? "found" : "absent");
                used++;
        }
        return missing ? -ENOENT : used;
}

/* ---- printing ---- */

static void stars(uint64_t v, uint64_t max, int width)
{
        int n = max ? (int)((v * (uint64_t)width + max - 1) / max) : 0;

        if (n > width)
                n = width;
        for (int i = 0; i < width; i++)
                putchar(i < n ? '*' : ' ');
}

/* The layout of libbpf-tools' print_log2_hist(). */
static void hist_print(const uint64_t *slots, const char *title, const char *unit)
{
        uint64_t max = 0, total = 0;
        int last = -1, w;

        for (int k = 0; k < CT_SLOTS; k++) {
                total += slots[k];
                if (slots[k] > max)
                        max = slots[k];
                if (slots[k])
                        last = k;
        }
        if (!total)
                return;
        w = last < 32 ? 10 : 20;        /* libbpf-tools' widths */

        printf("\n%s\n%*s%-*s : count    distribution\n", title, w == 10 ? 5 : 15, "", w == 10 ? 19 : 29, unit);
        for (int k = 0; k <= last; k++) {
                unsigned long long low = k ? 1ull << k : 0, high = (2ull << k) - 1;

                if (k == CT_SLOTS - 1)
                        printf("%*llu -> %-*s : %-8llu |", w, low, w, "more", (unsigned long long)slots[k]);
                else
                        printf("%*llu -> %-*llu : %-8llu |", w, low, w, high, (unsigned long long)slots[k]);
                stars(slots[k], max, 40);
                printf("|\n");
        }
}

static void interval_print(enum sub sub, const struct snapshot *now, const struct snapshot *prev,
                           double secs)
{
        char ts[16];
        time_t t = time(NULL);
        struct tm tm;
        bool first = true;

        strftime(ts, sizeof(ts), "%H:%M:%S", localtime_r(&t, &tm));
        printf("%s %s, last %.1f s:", ts, subs[sub].name, secs);
        for (size_t i = 0; i < N_COUNTERS; i++) {
                uint64_t d = now->counts[counters[i].c] - prev->counts[counters[i].c];

                if (!(counters[i].subs & M(sub)))
                        continue;
                if (counters[i].subs == M_ALL && !d)
                        continue;       /* peers and restarts: only when they happen */
                if (counters[i].rate && secs > 0)
                        printf("%s %s %llu (%.1f/s)", first ? "" : ",", counters[i].label,
                               (unsigned long long)d, (double)d / secs);
                else
                        printf("%s %s %llu", first ? "" : ",", counters[i].label, (unsigned long long)d);
                first = false;
        }
        printf("\n");
        for (size_t i = 0; i < N_HISTS; i++) {
                uint64_t d[CT_SLOTS];

                if (!(hists[i].subs & M(sub)))
                        continue;
                for (int k = 0; k < CT_SLOTS; k++)
                        d[k] = now->hists[hists[i].h][k] - prev->hists[hists[i].h][k];
                hist_print(d, hists[i].title, hists[i].unit);
        }
        printf("\n");
        fflush(stdout);
}

static void total_print(enum sub sub, const struct snapshot *s, double secs)
{
        printf("total: %s seconds=%.1f", subs[sub].name, secs);
        for (size_t i = 0; i < N_COUNTERS; i++)
                if (counters[i].subs & M(sub))
                        printf(" %s=%llu", counters[i].key, (unsigned long long)s->counts[counters[i].c]);
        printf("\n");
        fflush(stdout);
}

/* ---- tracing ---- */

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void snapshot_take(const struct coord_trace *skel, struct snapshot *s)
{
        /* Plain loads of counters the BPF side only ever adds to: each word is read
         * whole (aligned 8 bytes); a sum may miss an add still in flight, which the
         * next interval then counts. */
        for (int h = 0; h < _CT_H_MAX; h++)
                for (int k = 0; k < CT_SLOTS; k++)
                        s->hists[h][k] = __atomic_load_n(&skel->bss->hists[h][k], __ATOMIC_RELAXED);
        for (int c = 0; c < _CT_C_MAX; c++)
                s->counts[c] = __atomic_load_n(&skel->bss->counts[c], __ATOMIC_RELAXED);
}

/* What a kernel or sandbox that refuses bpf() answers; -EACCES is the verifier's. */
static bool bpf_refused(int r)
{
        return r == -EPERM || r == -ENOSYS;
}

/* The subcommand attaches program p to at least one target. */
static bool probe_used(enum sub sub, size_t p, const struct target *t, int n_targets)
{
        if (!(probes[p].subs & M(sub)))
                return false;
        for (int i = 0; i < n_targets; i++)
                if (notes_have(&t[i], probes[p].probe))
                        return true;
        return false;
}

static int attach_all(struct coord_trace *skel, enum sub sub, const struct target *t, int n_targets,
                      struct bpf_link **links, int *ret_n_links)
{
        int n_links = 0;

        for (size_t p = 0; p < N_PROBES; p++) {
                struct bpf_program *prog;

                if (!(probes[p].subs & M(sub)))
                        continue;
                prog = bpf_object__find_program_by_name(skel->obj, probes[p].prog);
                for (int i = 0; i < n_targets; i++) {
                        struct bpf_link *l;
                        int r;

                        if (!notes_have(&t[i], probes[p].probe))
                                continue;
                        if (n_links == MAX_LINKS)
                                return -E2BIG;
                        l = bpf_program__attach_usdt(prog, t[i].pid, t[i].path, "coord", probes[p].probe, NULL);
                        if (!l) {
                                r = -errno;
                                fprintf(stderr, "coord-trace: attaching to coord:%s in %s: %s\n",
                                        probes[p].probe, t[i].path, strerror(-r));
                                *ret_n_links = n_links;
                                return r;
                        }
                        links[n_links++] = l;
                }
        }
        *ret_n_links = n_links;
        return 0;
}

static int trace(enum sub sub, const struct target *t, int n_targets, double interval, double duration)
{
        struct bpf_link *links[MAX_LINKS];
        struct snapshot *cur = NULL, *prev = NULL;
        struct coord_trace *skel = NULL;
        double start, last, end;
        int n_links = 0, r;

        skel = coord_trace__open();
        if (!skel) {
                r = -errno;
                fprintf(stderr, "coord-trace: opening the BPF skeleton: %s\n", strerror(-r));
                goto out;
        }
        /* Load only this subcommand's programs. */
        for (size_t p = 0; p < N_PROBES; p++) {
                struct bpf_program *prog = bpf_object__find_program_by_name(skel->obj, probes[p].prog);

                if (!prog) {
                        fprintf(stderr, "coord-trace: no BPF program %s in the skeleton\n", probes[p].prog);
                        r = -ENOENT;
                        goto out;
                }
                bpf_program__set_autoload(prog, probe_used(sub, p, t, n_targets));
        }
        r = coord_trace__load(skel);
        if (r < 0) {
                if (bpf_refused(r))
                        r = -EPERM;
                fprintf(stderr, "coord-trace: loading the BPF programs: %s%s\n", strerror(-r),
                        r == -EPERM ? " (BPF is not permitted here: run as root, or with CAP_BPF "
                                      "and CAP_PERFMON)" :
                        r == -EACCES ? " (the verifier refused a program: --verbose shows its log)" : "");
                goto out;
        }
        r = attach_all(skel, sub, t, n_targets, links, &n_links);
        if (r < 0)
                goto out;
        cur = calloc(1, sizeof(*cur));
        prev = calloc(1, sizeof(*prev));
        if (!cur || !prev) {
                r = -ENOMEM;
                goto out;
        }
        printf("coord-trace: %s: %d probe sites attached in", subs[sub].name, n_links);
        for (int i = 0; i < n_targets; i++)
                printf(" %s%s", t[i].path, t[i].pid > 0 ? "" : " (every process)");
        if (n_targets == 1 && t[0].pid > 0)
                printf(" pid %d", (int)t[0].pid);
        printf("; Ctrl-C to stop\n\n");
        fflush(stdout);

        start = last = now_s();
        end = duration > 0 ? start + duration : 0;
        while (!stop) {
                double now = now_s(), wake = last + interval;
                struct timespec ts;

                if (end && end < wake)
                        wake = end;
                if (now < wake) {
                        ts.tv_sec = (time_t)(wake - now);
                        ts.tv_nsec = (long)((wake - now - (double)ts.tv_sec) * 1e9);
                        /* A signal ends the sleep early; stop is checked then. */
                        (void)nanosleep(&ts, NULL);
                        continue;
                }
                snapshot_take(skel, cur);
                interval_print(sub, cur, prev, now - last);
                *prev = *cur;
                last = now;
                if (end && now >= end)
                        break;
                if (n_targets == 1 && t[0].pid > 0 && kill(t[0].pid, 0) < 0 && errno == ESRCH) {
                        printf("coord-trace: pid %d exited\n", (int)t[0].pid);
                        break;
                }
        }
        snapshot_take(skel, cur);
        if (now_s() - last >= 0.05)
                interval_print(sub, cur, prev, now_s() - last);
        total_print(sub, cur, now_s() - start);
        r = 0;
out:
        while (n_links > 0)
                bpf_link__destroy(links[--n_links]);
        coord_trace__destroy(skel);
        free(cur);
        free(prev);
        return r;
}

/* A whole number of seconds or a decimal, > 0. */
static int seconds_parse(const char *s, double *ret)
{
        char *end;
        double v;

        errno = 0;
        v = strtod(s, &end);
        if (errno || end == s || *end || !(v > 0) || v > 1e7)
                return -EINVAL;
        *ret = v;
        return 0;
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "pid", required_argument, NULL, 'p' },
                { "binary", required_argument, NULL, 'b' },
                { "interval", required_argument, NULL, 'i' },
                { "duration", required_argument, NULL, 'd' },
                { "check", no_argument, NULL, 'c' },
                { "verbose", no_argument, NULL, 'v' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        struct target targets[MAX_TARGETS] = {};
        double interval = 5, duration = 0;
        const char *binary = NULL;
        bool check = false;
        int sub = -1, n_targets = 0, c, r;
        long pid = 0;
        char *end;

        if (argc >= 2 && argv[1][0] != '-') {
                for (int i = 0; i < _SUB_MAX; i++)
                        if (strcmp(argv[1], subs[i].name) == 0)
                                sub = i;
                if (sub < 0) {
                        fprintf(stderr, "coord-trace: unknown subcommand '%s'\n", argv[1]);
                        usage(stderr);
                        return EXIT_USAGE;
                }
                argv[1] = argv[0];      /* getopt's messages name the program */
                argv++;
                argc--;
        }
        while ((c = getopt_long(argc, argv, "p:b:i:d:cvh", opts, NULL)) != -1) {
                switch (c) {
                case 'p':
                        errno = 0;
                        pid = strtol(optarg, &end, 10);
                        if (errno || end == optarg || *end || pid <= 0 || pid > INT32_MAX) {
                                fprintf(stderr, "coord-trace: --pid wants a process id, not '%s'\n", optarg);
                                usage(stderr);
                                return EXIT_USAGE;
                        }
                        break;
                case 'b':
                        binary = optarg;
                        break;
                case 'i':
                case 'd':
                        if (seconds_parse(optarg, c == 'i' ? &interval : &duration) < 0) {
                                fprintf(stderr, "coord-trace: --%s wants seconds > 0, not '%s'\n",
                                        c == 'i' ? "interval" : "duration", optarg);
                                usage(stderr);
                                return EXIT_USAGE;
                        }
                        break;
                case 'c':
                        check = true;
                        break;
                case 'v':
                        verbose = true;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return EXIT_USAGE;
                }
        }
        if (sub < 0 || optind != argc || (pid && binary)) {
                if (sub >= 0 && optind != argc)
                        fprintf(stderr, "coord-trace: unexpected argument '%s'\n", argv[optind]);
                else if (pid && binary)
                        fprintf(stderr, "coord-trace: --pid and --binary exclude each other\n");
                usage(stderr);
                return EXIT_USAGE;
        }
        libbpf_set_print(libbpf_log);

        r = targets_resolve((enum sub)sub, (pid_t)pid, binary, targets, &n_targets);
        if (r < 0)
                goto out;
        if (check) {
                /* Everything up to the load: the skeleton opens (its programs are
                 * valid BPF ELF) and every probe is in the executables. */
                struct coord_trace *skel = coord_trace__open();

                if (!skel) {
                        r = -errno;
                        fprintf(stderr, "coord-trace: opening the BPF skeleton: %s\n", strerror(-r));
                        goto out;
                }
                for (size_t p = 0; p < N_PROBES && r >= 0; p++)
                        if (!bpf_object__find_program_by_name(skel->obj, probes[p].prog)) {
                                fprintf(stderr, "coord-trace: no BPF program %s in the skeleton\n",
                                        probes[p].prog);
                                r = -ENOENT;
                        }
                coord_trace__destroy(skel);
                if (r < 0)
                        goto out;
                printf("coord-trace: %s: probes in", subs[sub].name);
                for (int i = 0; i < n_targets; i++)
                        printf(" %s", targets[i].path);
                printf("\n");
                r = probes_check((enum sub)sub, targets, n_targets, true);
                if (r >= 0)
                        printf("coord-trace: %s: %d programs, every probe found\n", subs[sub].name, r);
                goto out;
        }
        r = probes_check((enum sub)sub, targets, n_targets, false);
        if (r < 0)
                goto out;
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        r = trace((enum sub)sub, targets, n_targets, interval, duration);
out:
        for (int i = 0; i < n_targets; i++)
                free(targets[i].notes);
        if (r == -EPERM)
                return EXIT_NOBPF;
        return r < 0 ? 1 : 0;
}
