/* coord-trace.h -- what coord-trace.bpf.c and coord-trace.c share: the histograms and
 * counters the BPF programs fill in their .bss and the tool reads through the
 * skeleton's mmap of it.
 *
 * Only the BPF side writes, with atomic adds; the tool only reads and prints the
 * difference between two reads, so nothing is ever reset and no update is lost.
 * Plain types only: this header is compiled for -target bpf without libc.
 */
#pragma once

/* log2 buckets (libbpf-tools' layout): slot 0 counts [0, 2), slot k >= 1 counts
 * [2^k, 2^(k+1)); the last slot takes everything above. */
#define CT_SLOTS 40

enum ct_hist {
        CT_H_REQUEST_US,        /* every client request, start to answer */
        CT_H_DDL_US,            /* the requests whose statement is CREATE/DROP/ALTER */
        CT_H_COMMIT_US,         /* catalog__commit__start to __done of one seq */
        CT_H_COMMIT_OPS,        /* records (ops) per catalog transaction */
        CT_H_COMMIT_BYTES,      /* payload bytes per commit published on the log ring */
        CT_H_PUB_RECORDS,       /* bounds + requirements per publication */
        CT_H_PUB_BYTES,         /* bytes per publication */
        CT_H_PUB_GAP_US,        /* time between two publications of one follower */
        CT_H_LAG_US,            /* follower apply: us from a commit to its application */
        CT_H_STALL_US,          /* loop__stall: a busy stretch of an event loop */
        CT_H_CALLBACK_US,       /* loop__callback__slow: one callback over 1 ms */
        CT_H_SYNC_US,           /* controller storage group sync (an append's wait) */
        CT_H_RELEASE_MSGS,      /* replies released per durable group */
        _CT_H_MAX,
};

enum ct_count {
        CT_C_REQUESTS,
        CT_C_REQUESTS_FAILED,
        CT_C_DDL,
        CT_C_DDL_FAILED,
        CT_C_ADMISSION_REFUSED,
        CT_C_COMMITS,
        CT_C_COMMITS_FAILED,
        CT_C_COMMIT_OPS,
        CT_C_COMMIT_BYTES,
        CT_C_SYNC_FAILED,       /* catalog__sync__fail */
        CT_C_SYNCLOG_SWITCH,
        CT_C_REPLAYED,          /* recovery: sync log records replayed at open */
        CT_C_CATCHUP,           /* recovery: a secondary caught up to a seq */
        CT_C_PUBLICATIONS,
        CT_C_PUB_RECORDS,
        CT_C_PUB_BYTES,
        CT_C_APPLIED,           /* follower apply */
        CT_C_FALLBACK,          /* the log ring could not vouch: state read instead */
        CT_C_LRING_RESYNC,
        CT_C_FRONTIER,          /* ring__push: a frontier advance */
        CT_C_STALLS,
        CT_C_CALLBACKS_SLOW,
        CT_C_STORAGE_SYNCS,
        CT_C_STORAGE_SYNCS_FAILED,
        CT_C_RELEASES,
        CT_C_RELEASED_MSGS,
        CT_C_RELEASED_RECORDS,
        CT_C_COMPACTIONS,
        CT_C_PEER_UP,           /* reconnect: ipc__peer__connect */
        CT_C_PEER_DOWN,
        CT_C_PEER_STALE,
        CT_C_DAEMON_START,      /* recovery: a daemon (re)started ... */
        CT_C_DAEMON_READY,      /* ... and serves again */
        _CT_C_MAX,
};
