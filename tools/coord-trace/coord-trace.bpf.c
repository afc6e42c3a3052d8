/* coord-trace.bpf.c -- the BPF side of coord-trace: one program per USDT probe of
 * common/probes.d that a subcommand uses; coord-trace.c loads only the ones it attaches.
 *
 * Built with clang -target bpf -g -O2; no vmlinux.h (USDT arguments come through
 * <bpf/usdt.bpf.h>, nothing reads kernel structures).  Every program only adds to the
 * .bss arrays of coord-trace.h (atomically: probes fire on several threads at once) and
 * keeps the start of a span in an LRU hash keyed by process and span id, so an end that
 * is never seen costs one slot, evicted later.
 */
#include <linux/types.h>
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#include "coord-trace.h"

char LICENSE[] SEC("license") = "GPL";

__u64 hists[_CT_H_MAX][CT_SLOTS];
__u64 counts[_CT_C_MAX];

/* A span: which process, which request / seq. */
struct span_key {
        __u32 tgid;
        __u32 pad;
        __u64 id;
};

/* pgwire connection -> its current statement is DDL (1) or not (0).  Set at a Query's or
 * a Parse's start from the text; an Execute ("" text) keeps what its Parse set. */
struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, 8192);
        __type(key, struct span_key);
        __type(value, __u32);
} conn_ddl SEC(".maps");

/* catalog seq -> ns of its catalog__commit__start */
struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, 8192);
        __type(key, struct span_key);
        __type(value, __u64);
} commit_start SEC(".maps");

/* tgid -> ns of its previous lifecycle__publish */
struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, 64);
        __type(key, __u32);
        __type(value, __u64);
} last_publish SEC(".maps");

static __always_inline __u32 log2_u32(__u32 v)
{
        __u32 r, shift;

        r = (v > 0xFFFF) << 4; v >>= r;
        shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
        shift = (v > 0xF) << 2; v >>= shift; r |= shift;
        shift = (v > 0x3) << 1; v >>= shift; r |= shift;
        r |= (v >> 1);
        return r;
}

static __always_inline __u32 log2_u64(__u64 v)
{
        __u32 hi = v >> 32;

        return hi ? log2_u32(hi) + 32 : log2_u32((__u32)v);
}

/* Slot k holds [2^k, 2^(k+1)) for k >= 1 and [0, 2) for k = 0 (libbpf-tools' layout). */
static __always_inline void hist_add(int h, __u64 v)
{
        __u32 k = log2_u64(v);

        if (k >= CT_SLOTS)
                k = CT_SLOTS - 1;
        if (h < 0 || h >= _CT_H_MAX)
                return;
        __sync_fetch_and_add(&hists[h][k], 1);
}

static __always_inline void count_add(int c, __u64 v)
{
        if (c < 0 || c >= _CT_C_MAX)
                return;
        __sync_fetch_and_add(&counts[c], v);
}

static __always_inline __u32 tgid(void)
{
        return bpf_get_current_pid_tgid() >> 32;
}

static __always_inline char upper(char c)
{
        return c >= 'a' && c <= 'z' ? c - ('a' - 'A') : c;
}

/* The programs that only count their probe's firings in counts[c] -- and with
 * COUNT_HIST_PROBE(), add v, an expression of the probe's arguments, to hists[h].  The
 * arguments after those are the probe's (common/probes.d), as BPF_USDT() takes them. */
#define COUNT_PROBE(name, c, ...)                                                       \
        SEC("usdt")                                                                     \
        int BPF_USDT(name, __VA_ARGS__)                                                 \
        {                                                                               \
                count_add(c, 1);                                                        \
                return 0;                                                               \
        }
#define COUNT_HIST_PROBE(name, c, h, v, ...)                                            \
        SEC("usdt")                                                                     \
        int BPF_USDT(name, __VA_ARGS__)                                                 \
        {                                                                               \
                count_add(c, 1);                                                        \
                hist_add(h, v);                                                         \
                return 0;                                                               \
        }

#define PACK4(a, b, c, d) (((__u64)(a) << 24) | ((__u64)(b) << 16) | ((__u64)(c) << 8) | (__u64)(d))

/* Does the statement text start (after blanks) with CREATE, DROP or ALTER?  A string of
 * several statements counts by its first.  The first six characters after the blanks
 * are packed into one word: indexes into the stack buffer stay constants, which the
 * verifier wants. */
static __always_inline __u32 text_is_ddl(const char *text)
{
        char b[24] = {};
        __u64 w = 0;
        int n = 0;

        if (!text || bpf_probe_read_user_str(b, sizeof(b), text) <= 0)
                return 0;
#pragma unroll
        for (int k = 0; k < (int)sizeof(b); k++) {
                char c = b[k];

                if (n == 0 && (c == ' ' || c == '\t' || c == '\n' || c == '\r'))
                        continue;
                if (n < 6) {
                        w = (w << 8) | (__u8)upper(c);
                        n++;
                }
        }
        if (n < 6)
                return 0;
        if (w == ((PACK4('C', 'R', 'E', 'A') << 16) | ('T' << 8) | 'E'))
                return 1;
        if ((w >> 16) == PACK4('D', 'R', 'O', 'P'))
                return 1;
        if ((w >> 8) == ((PACK4('A', 'L', 'T', 'E') << 8) | 'R'))
                return 1;
        return 0;
}

/* ---- statements (adapter) ---- */

SEC("usdt")
int BPF_USDT(on_request_start, int conn, int kind, const char *text)
{
        struct span_key key = { .tgid = tgid(), .id = (__u32)conn };
        __u32 ddl;

        if (kind == 'E')
                return 0;       /* the Parse's verdict stands */
        ddl = text_is_ddl(text);
        bpf_map_update_elem(&conn_ddl, &key, &ddl, BPF_ANY);
        return 0;
}

SEC("usdt")
int BPF_USDT(on_request_done, int conn, int kind, int failed, __u64 ns)
{
        struct span_key key = { .tgid = tgid(), .id = (__u32)conn };
        __u32 *ddl = bpf_map_lookup_elem(&conn_ddl, &key);
        __u64 us = ns / 1000;

        count_add(CT_C_REQUESTS, 1);
        if (failed)
                count_add(CT_C_REQUESTS_FAILED, 1);
        hist_add(CT_H_REQUEST_US, us);
        /* A Parse only parses: the DDL runs in its Execute. */
        if (kind != 'P' && ddl && *ddl) {
                count_add(CT_C_DDL, 1);
                if (failed)
                        count_add(CT_C_DDL_FAILED, 1);
                hist_add(CT_H_DDL_US, us);
        }
        return 0;
}

COUNT_PROBE(on_admission_refuse, CT_C_ADMISSION_REFUSED, __u64 as_of, __u64 bound)

/* ---- catalog commits (adapter) ---- */

SEC("usdt")
int BPF_USDT(on_commit_start, __u64 seq, unsigned int ops)
{
        struct span_key key = { .tgid = tgid(), .id = seq };
        __u64 now = bpf_ktime_get_ns();

        bpf_map_update_elem(&commit_start, &key, &now, BPF_ANY);
        count_add(CT_C_COMMIT_OPS, ops);
        hist_add(CT_H_COMMIT_OPS, ops);
        return 0;
}

SEC("usdt")
int BPF_USDT(on_commit_done, __u64 seq, int result)
{
        struct span_key key = { .tgid = tgid(), .id = seq };
        __u64 *t0 = bpf_map_lookup_elem(&commit_start, &key);

        count_add(CT_C_COMMITS, 1);
        if (result)
                count_add(CT_C_COMMITS_FAILED, 1);
        if (t0) {
                hist_add(CT_H_COMMIT_US, (bpf_ktime_get_ns() - *t0) / 1000);
                bpf_map_delete_elem(&commit_start, &key);
        }
        return 0;
}

SEC("usdt")
int BPF_USDT(on_lring_publish, __u64 seq, unsigned int bytes, unsigned int flags)
{
        count_add(CT_C_COMMIT_BYTES, bytes);
        hist_add(CT_H_COMMIT_BYTES, bytes);
        return 0;
}

COUNT_PROBE(on_sync_fail, CT_C_SYNC_FAILED, int err)
COUNT_PROBE(on_synclog_switch, CT_C_SYNCLOG_SWITCH, __u64 segno, __u64 waited_us)

SEC("usdt")
int BPF_USDT(on_synclog_replay, __u64 seq, unsigned int txns)
{
        count_add(CT_C_REPLAYED, txns);
        return 0;
}

COUNT_PROBE(on_catchup, CT_C_CATCHUP, __u64 seq)

/* ---- publications and the follower (lifecycle) ---- */

SEC("usdt")
int BPF_USDT(on_publish, __u64 based_on, unsigned int bounds, unsigned int reqs, unsigned int bytes)
{
        __u32 key = tgid();
        __u64 now = bpf_ktime_get_ns(), *prev = bpf_map_lookup_elem(&last_publish, &key);

        count_add(CT_C_PUBLICATIONS, 1);
        count_add(CT_C_PUB_RECORDS, bounds + reqs);
        count_add(CT_C_PUB_BYTES, bytes);
        hist_add(CT_H_PUB_RECORDS, bounds + reqs);
        hist_add(CT_H_PUB_BYTES, bytes);
        if (prev)
                hist_add(CT_H_PUB_GAP_US, (now - *prev) / 1000);
        bpf_map_update_elem(&last_publish, &key, &now, BPF_ANY);
        return 0;
}

COUNT_HIST_PROBE(on_applied, CT_C_APPLIED, CT_H_LAG_US, us, __u64 seq, __u64 us)
COUNT_PROBE(on_fallback, CT_C_FALLBACK, __u64 seq, int why)
COUNT_PROBE(on_lring_resync, CT_C_LRING_RESYNC, __u64 generation, int why)
COUNT_PROBE(on_frontier, CT_C_FRONTIER, __u64 id, __u64 upper, __u64 since)

/* ---- event loops (every daemon) ---- */

COUNT_HIST_PROBE(on_stall, CT_C_STALLS, CT_H_STALL_US, ns / 1000, __u64 ns)
COUNT_HIST_PROBE(on_callback_slow, CT_C_CALLBACKS_SLOW, CT_H_CALLBACK_US, ns / 1000,
                 void *fn, __u64 ns)

/* ---- appends (controller) ---- */

SEC("usdt")
int BPF_USDT(on_storage_sync, __u64 target, int result, __u64 ns)
{
        count_add(CT_C_STORAGE_SYNCS, 1);
        if (result)
                count_add(CT_C_STORAGE_SYNCS_FAILED, 1);
        hist_add(CT_H_SYNC_US, ns / 1000);
        return 0;
}

SEC("usdt")
int BPF_USDT(on_release, __u64 durable, unsigned int msgs, unsigned int records)
{
        count_add(CT_C_RELEASES, 1);
        count_add(CT_C_RELEASED_MSGS, msgs);
        count_add(CT_C_RELEASED_RECORDS, records);
        hist_add(CT_H_RELEASE_MSGS, msgs);
        return 0;
}

COUNT_PROBE(on_compact, CT_C_COMPACTIONS, __u64 gid, __u64 read, __u64 written)

/* ---- peers and restarts (every daemon, every subcommand) ---- */

COUNT_PROBE(on_peer_up, CT_C_PEER_UP, int role, __u64 incarnation)
COUNT_PROBE(on_peer_down, CT_C_PEER_DOWN, int role, __u64 incarnation)
COUNT_PROBE(on_peer_stale, CT_C_PEER_STALE, int role, __u64 got, __u64 seen)
COUNT_PROBE(on_daemon_start, CT_C_DAEMON_START, int role, __u64 incarnation)
COUNT_PROBE(on_daemon_ready, CT_C_DAEMON_READY, int role)
