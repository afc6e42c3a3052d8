/* controller-server-internal.h -- shared by the files of the server (controller-server*.c);
 * not part of the controller-server.h contract.
 *
 * The handle and what it holds (the output gate's entries, peeks, installed dataflows,
 * the mirrors), the helpers that run per key (inline), and the functions that one file
 * of the server calls in another, grouped by the file that defines them.  "(n)" is the
 * server's note of that number: controller-server.c lists where each stands.
 */
#pragma once

#include <assert.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controller-server.h"
#include "controller-eval.h"
#include "controller-storage.h"
#include "ring/fring.h"
#include "hist.h"
#include "oamap.h"
#include "refresh.h"
#include "row/row.h"

#define NS_PER_MS 1000000ull

/* How often clean materialized views write their upper (server_mv_flush()). */
#define CSERVER_MV_FLUSH_MS 1000u
#define GMAP_MIN_SLOTS 64u

/* An entry of a gid map: key (never 0) and three values. */
struct gent {
        uint64_t key;
        uint64_t a, b, c;
};

/* gid -> (a, b, c), open addressing with linear probing, at most half full, key 0 =
 * empty slot; backward-shift deletion (no tombstones).  It grows in steps (oamap.c note
 * 1): while old.slots is set, an entry is either in slots or in old; n counts both.  Walk
 * it with gmap_each(). */
struct gmap {
        struct gent *slots;
        size_t mask, n;
        struct oa_old old;
};

/* A row and its count in a struct cmirror (11); row == NULL: empty slot. */
struct rcent {
        uint64_t hash;
        uint8_t *row;                   /* owned */
        size_t len;
        int64_t count;
};

/* The contents of a built-in at upper - 1, as row -> count (11). */
struct cmirror {
        uint64_t gid, upper;
        struct rcent *slots;            /* open addressing, at most half full */
        size_t mask, n;                 /* n: rows in slots and old */
        struct oa_old old;              /* a grow under way (oamap.c note 1) */
};

/* A row of coord_frontiers, as stored. */
struct frow {
        uint64_t gid, since, upper;
        int64_t count;          /* 1, unless the relation was damaged */
};

struct cserver;

struct peek {
        struct peek *prev, *next;       /* on s->peeks: every peek in flight (5) */
        struct cserver *srv;
        node_peer_t from;
        uint64_t request_id;
        Coord__PeekRequest *req;        /* owned */
        struct dataflow *df;            /* the plan, as of ts; borrows req */
        uint64_t input;                 /* the input last found not readable yet */
        uint64_t ts;
        uint32_t timeout_ms;
        struct loop_timer *timer;       /* set while parked */
        /* Answering (5): the evaluated result, sent chunk_bytes at a time. */
        uint32_t chunk_bytes;           /* 0: one PeekResult */
        struct eval_batch out;          /* the result: consolidated, every count > 0 */
        size_t *order;                  /* out's rows in ORDER BY order */
        struct row_datum *d;            /* out decoded (n x arity), to sort or project */
        size_t arity, keep;             /* the plan's columns, the ones sent */
        size_t pos;                     /* next index into order */
        uint64_t skip, take;            /* OFFSET left to skip, LIMIT left to send */
        ProtobufCBinaryData *rows;      /* a chunk's rows and counts, reused */
        uint64_t *counts;
        size_t rows_cap, counts_cap;
        uint32_t chunks;                /* PeekResults sent */
        bool streaming;                 /* sent more = true: waits for a PeekNext */
        uint64_t pulled_ms;             /* when the last chunk went */
        struct loop_timer *idle;        /* set while streaming */
        struct bgpeek *bg;              /* in the peek thread (18): the thread's alone */
        bool cancelled;                 /* its requester went or cancelled while bg */
};

/* A peek in the peek thread (18).  The loop fills everything but r, e and eval_us
 * before queueing it, the thread those three before it hands it back. */
struct bgpeek {
        struct bgpeek *next;
        struct peek *pk;
        int r;                          /* 0: pk's result is prepared; or -errno with e */
        struct row_error e;
        uint64_t eval_us;
        atomic_bool stop;               /* set by the loop when pk is cancelled (18) */
        struct bgsub **sub;             /* per input: an index read below its since, or NULL */
        struct bgwrite *w;              /* a write's plan instead of a peek (24); pk NULL */
        size_t n;
        struct storage_reader *rd[];    /* one per input; NULL: empty at ts (10) */
};

/* (24) A write's plan evaluated in the peek thread while its Append is parked: the
 * loop fills the first five before queueing, the thread df's result into out (or r
 * with its job's e). */
struct bgwrite {
        Coord__Append *a;               /* owned: replayed when the result is back */
        node_peer_t from;
        uint64_t request_id, epoch;     /* epoch: of from's connection (18b) */
        size_t write;                   /* a->writes[write] is the one evaluated */
        struct bgpeek *job;
        struct dataflow *df;            /* its plan, at a->ts, fed by job->rd[] */
        struct eval_batch out;
        int r;
        struct row_error e;
        uint64_t eval_us;
};

/* An index's input read below its arrangement's since, in the peek thread (13, 18):
 * the index's plan as a one-shot dataflow over readers of its storage collections. */
struct bgsub {
        struct dataflow *df;
        size_t n;
        struct storage_reader *rd[];    /* one per input of df; NULL: empty at ts */
};

/* An installed dataflow: a materialized view or an index (13). */
struct dfent {
        uint64_t gid;
        bool index;
        Coord__DataflowSpec *spec;      /* owned */
        struct dataflow *df;            /* NULL while failed */
        struct arrangement *arr;        /* index: its output, readable by peeks */
        uint64_t as_of;                 /* as installed */
        uint64_t emit_from;             /* materialized view: its durable upper at install */
        uint64_t pending_upper;         /* materialized view: stepped, write in progress */
        uint64_t published_since, published_upper;
        uint64_t steps;
        struct eval_batch out;          /* scratch: one step's output */
        struct eval_batch correction;   /* see server_dfent_hydrate() */
        uint64_t *reads;                /* the distinct gids it is registered as a reader of */
        size_t n_reads;
        bool dirty;                     /* on s->pending or a pass's work (13) */
        bool fwait;                     /* on s->fwait at fwait_need (13c) */
        uint64_t fwait_need;
        bool failed;
        bool complete;                  /* a refresh view past its last refresh (13b): its
                                         * upper is empty and it has no dataflow */
        uint64_t released;              /* leased refresh view: the last refresh released
                                         * (controller-server-refresh.c note 1); 0: none */
        uint64_t refresh_fence;         /* the highest refresh lease epoch seen for it */
        bool sink;                      /* (19) */
        struct sink_file *file;         /* sink: open while installed */
        uint64_t sink_frontier;         /* sink: stepped to; sink_out holds times below */
        uint64_t sink_seq;              /* sink: storage seq its output derives from (16) */
        uint64_t sink_written_ms;       /* sink: when its progress was last written */
        struct eval_batch sink_out;     /* sink: stepped, not in the file yet */
        struct row_error *err;          /* why failed (server_dfent_error()); allocated on failure:
                                         * 1.3 KB, and 100,000 healthy entries are usual */
};

struct ratelimit {
        uint64_t window_ms;
        unsigned n, suppressed;
};

/* An entry held by the output gate (16). */
enum out_kind { OUT_MSG, OUT_RING_SET, OUT_RING_FORGET };

struct out_ent {
        uint64_t seq;                   /* release once storage_durable_seq() >= seq */
        enum out_kind kind;
        node_peer_t to;                 /* OUT_MSG */
        Coord__MsgType type;
        uint64_t rid;
        uint8_t *buf;                   /* the packed payload, owned */
        size_t len;
        struct fring_frontier rec;      /* OUT_RING_*: rec.id only for a forget */
        uint64_t held_ns;               /* when it was held */
        uint64_t append_t0_ns;          /* an Append's Ok: when the Append arrived; else 0 */
};

/* A complete set in parts (17a, 12a): the part expected next, and whether one was
 * missed (parts_next()). */
struct parts {
        uint32_t next;
        bool broken;
};

/* Take part number `part`: true when it starts a new set (part 0); a number out of
 * order breaks the set, whose last part then removes nothing. */
static inline bool parts_next(struct parts *p, uint32_t part)
{
        bool first = part == 0;

        if (first)
                p->broken = false;
        else if (part != p->next)
                p->broken = true;
        p->next = part + 1;
        return first;
}

struct cserver {
        struct node *node;
        struct loop *loop;
        /* Appends' latency: server_handle_append() sets append_t0_ns for its server_reply_ok(); a held
         * reply takes it into its out_ent (recorded at release), one sent at once is
         * recorded there and then. */
        struct hist append_hist;
        uint64_t append_t0_ns;
        struct fring *ring;
        char *path;
        struct storage *st;             /* NULL only after a failed reopen (8) */
        bool failed;
        /* A CreateDataflows of more than one (a follower's resync): one line for the
         * message, the dataflows' own at debug (100,000 of them at 100,000 objects). */
        bool bulk_install;
        uint64_t bulk_installed, bulk_rows;
        /* A bulk CreateDataflows installed in slices (17); the follower's messages
         * that came after it wait in deferred (FIFO) until it is done. */
        struct install *install;
        struct deferred *deferred_head, **deferred_tail;
        size_t n_deferred;
        /* A complete CreateDataflows in parts (17a): the gids its parts named so far,
         * the part expected next, and whether one was missed. */
        struct gmap resync_listed;
        struct parts resync_parts;
        /* The same for a complete EnsureCollections (12a): the tables listed so far. */
        uint64_t *ensure_listed;
        size_t n_ensure_listed, cap_ensure_listed;
        struct parts ensure_parts;
        uint64_t installs_sliced, install_slices;

        /* coord_frontiers at its upper - 1 (4): table rows by gid (a = since, b = upper,
         * c = count), row 0's write frontier (0: no row 0), rows to retract at the next
         * append (duplicates or damage found at load), gids whose row may differ from
         * their stored frontiers (created or dropped since the last append; unsorted,
         * may repeat), and whether every table must be compared (the relation was
         * recreated, or recording a gid failed). */
        struct gmap fr;
        uint64_t fr0;
        struct frow *stray;
        size_t n_stray, cap_stray;
        uint64_t *dirty;
        size_t n_dirty, cap_dirty, dirty_head; /* (4a): dirty[dirty_head..n_dirty) wait */
        bool fr_rebuild;

        uint64_t *builtins;             /* gids of the built-ins, ascending (6), (10) */
        size_t n_builtins, cap_builtins;
        uint64_t born_above, born_above_gid;    /* (10): 0 or a table's upper > T */

        struct gmap allowed;            /* (14): gid -> a = the allowed since (committed bound) */
        struct gmap allow_pending;      /* (14): gids whose since is still below it */
        uint64_t allow_msgs, allow_moved;
        size_t allow_max;               /* most records in one AllowCompaction */
        uint64_t *allow_q;              /* (14a): gids permitted, not applied yet */
        size_t allow_q_head, n_allow_q, cap_allow_q;
        struct loop_timer *allow_timer; /* set while the queue waits for its next turn */
        uint64_t allow_slices;
        size_t allow_slice;             /* CSERVER_ALLOW_SLICE, or the test's */
        size_t frontier_rows;           /* CSERVER_FRONTIER_ROWS, or the test's (4a) */
        uint64_t mirror_reads;                  /* (11) mirrors built by a read */
        struct gmap rc;                 /* what the ring shows (7): a = upper, b = since,
                                         * c = physical_since */
        struct cmirror *cm;             /* row counts of built-ins (11) */
        size_t n_cm, cap_cm;
        struct kmirror **km;            /* key counts of tables with keys (22) */
        size_t n_km, cap_km;
        struct storage_info *cols;      /* scratch: a listing of the collections */
        size_t n_cols, cap_cols;

        struct peek *peeks_head, *peeks_tail;
        size_t n_peeks, n_parked;

        struct dfent **dfs;             /* installed dataflows by gid (13) */
        size_t n_dfs, cap_dfs;
        uint64_t *df_gids;              /* dfs[i]->gid, searched without touching the
                                         * entries (a bound each of 100,000 dataflows
                                         * missed the cache at every step) */
        size_t cap_df_gids;
        struct gmap readers;            /* (13): gid -> a = its struct rlist * */
        size_t n_mvs;                   /* installed materialized views */
        size_t n_sinks;                 /* installed sinks (19) */
        struct srcent **srcs;           /* sources (20), by creation */
        size_t n_srcs, cap_srcs;
        uint64_t source_ticks, source_rows, source_errors;
        uint64_t sink_flushes, sink_bytes, sink_errors;
        struct dfent **pending;         /* dirty dataflows, for the next pass (13) */
        size_t n_pending, cap_pending;
        struct dfent **work;            /* a pass's work: a min-heap by gid */
        size_t n_work, cap_work;
        struct dfent **defer;           /* a pass's dirty ones that could not step yet */
        size_t n_defer, cap_defer;
        struct fwait { uint64_t need; struct dfent *e; } *fwait;       /* (13c) min-heap by need */
        size_t n_fwait, cap_fwait;
        uint64_t fwait_total, fwait_released;
        uint64_t index_catchups;        /* clean dataflows stepped when read (13) */
        uint64_t mv_flush_ms, mv_flushes;       /* server_mv_flush() */
        uint64_t compute_writes;
        struct loop_timer *compact_timer;

        /* The output gate (16): held entries out[out_head .. n_out), tags ascending. */
        struct cserver_config cfg;
        struct out_ent *out;
        size_t out_head, n_out, cap_out;
        struct loop_waker *sync_waker;  /* storage's syncer: a sync finished */
        struct peek_worker *pw;         /* (18), started at the first big peek */
        /* (18b): each peer's connection epoch, and the message being handled. */
        uint64_t peer_epochs[NODE_PEERS];     /* by node_peer_t */
        uint64_t msg_epoch;
        node_peer_t msg_from;
        bool msg_stale;                 /* its connection is gone: replies dropped */
        uint64_t stale_replies;
        /* The duty fence (controller-server-fence.c note 1). */
        uint64_t duty_fence, duty_fenced, duty_fenced_logged, duty_fenced_last;
        uint64_t refresh_releases, refresh_fenced;      /* controller-server-refresh.c */
        size_t n_bg;                    /* peeks in it */
        uint64_t peeks_bg, peek_bg_max_us;
        uint64_t peeks_bg_sub;          /* of them, with an index read below its since (18) */
        uint64_t peeks_keyed;           /* index inputs read by key (23) */
        struct bgwrite *bgwrite;        /* (24) the Append parked for its write's plan */
        uint64_t writes_bg, write_bg_max_us;
        uint64_t out_held_msgs, out_held_ring, out_failed, out_max_held_ns;
        size_t out_max;                 /* most entries held at once */

        struct ratelimit rl_input, rl_storage;
        uint64_t appends, peeks_answered, errors_sent;
        uint64_t peek_chunks;           /* PeekResults sent, chunks of streams included */
        uint64_t peek_streams;          /* peeks answered in more than one chunk */
        uint64_t subscribe_reads;       /* SubscribeReads answered (26) */
        size_t n_streaming;             /* streams waiting for a PeekNext now (5) */
        size_t last_append_collections;  /* collections the last append wrote (status) */
        size_t last_append_frontier_rows;       /* coord_frontiers updates it wrote */
};

/* Small helpers, inline: they run per update or per key. */

static inline int reserve(void **p, size_t *cap, size_t need, size_t size)
{
        size_t n;
        void *q;

        if (need <= *cap)
                return 0;
        n = *cap ? *cap : 16;
        while (n < need)
                n *= 2;
        q = reallocarray(*p, n, size);
        if (!q)
                return -ENOMEM;
        *p = q;
        *cap = n;
        return 0;
}
#define RESERVE(p, cap, need) reserve((void **)&(p), &(cap), (need), sizeof(*(p)))

/* The byte order of eval_batch_consolidate() (and of storage reads): memcmp, then
 * shorter first. */
static inline int row_bytes_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
        int c = memcmp(a, b, alen < blen ? alen : blen);

        if (c)
                return c;
        return (alen > blen) - (alen < blen);
}

static inline int u64_cmp(const void *x, const void *y)
{
        uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

        return (a > b) - (a < b);
}

/* ---- gid maps ----------------------------------------------------------------------- */

static inline struct gent *gent_probe(struct gent *slots, size_t mask, uint64_t key)
{
        for (size_t i = oa_hash_id(key) & mask; slots[i].key; i = (i + 1) & mask)
                if (slots[i].key == key)
                        return &slots[i];
        return NULL;
}

/* Where key is, in the new array or in old (oamap.c note 1); NULL if in neither. */
static inline struct gent *gmap_find(const struct gmap *m, uint64_t key)
{
        struct gent *e;

        if (!m->slots || key == 0)
                return NULL;
        e = gent_probe(m->slots, m->mask, key);
        if (!e && m->old.slots)
                e = gent_probe(m->old.slots, m->old.mask, key);
        return e;
}

static inline bool gent_used(const void *e)
{
        return ((const struct gent *)e)->key != 0;
}

static inline uint64_t gent_hash(const void *e)
{
        return oa_hash_id(((const struct gent *)e)->key);
}

static const struct oa_kind gmap_kind = {
        .entry_size = sizeof(struct gent), .min_slots = GMAP_MIN_SLOTS,
        .used = gent_used, .hash = gent_hash,
};

/* Room for `more` new keys, so that gmap_put() cannot fail afterwards; moves a step of a
 * grow under way. */
static inline int gmap_reserve(struct gmap *m, size_t more)
{
        void *slots = m->slots;
        int r = oa_reserve_stepped(&gmap_kind, &slots, &m->mask, &m->old, m->n, more);

        m->slots = slots;
        return r < 0 ? r : 0;
}

/* The entry of key, made (values 0) if new -- in the new array; one still in old stays
 * there.  Only after gmap_reserve(). */
static inline struct gent *gmap_put(struct gmap *m, uint64_t key)
{
        struct gent *e;
        size_t i;

        assert(key != 0 && m->slots);
        /* One probe of the new array: the key, or the empty slot where it goes. */
        for (i = oa_hash_id(key) & m->mask; m->slots[i].key; i = (i + 1) & m->mask)
                if (m->slots[i].key == key)
                        return &m->slots[i];
        if (m->old.slots && (e = gent_probe(m->old.slots, m->old.mask, key)))
                return e;
        assert((m->n + 1) * 2 <= m->mask + 1);
        m->slots[i] = (struct gent){ .key = key };
        m->n++;
        return &m->slots[i];
}

static inline void gmap_remove(struct gmap *m, uint64_t key)
{
        struct gent *e;

        if (!m->slots || key == 0)
                return;
        if ((e = gent_probe(m->slots, m->mask, key)))
                oa_delete_at(&gmap_kind, m->slots, m->mask, (size_t)(e - m->slots));
        else if (m->old.slots && (e = gent_probe(m->old.slots, m->old.mask, key))) {
                struct gent *o = m->old.slots;

                oa_delete_at(&gmap_kind, o, m->old.mask, (size_t)(e - o));
                m->old.n--;
        } else
                return;
        m->n--;
}

/* Every entry once, in no order: for (size_t i = 0; (e = gmap_each(m, &i)); ).  No
 * reserve, put or remove meanwhile. */
static inline struct gent *gmap_each(const struct gmap *m, size_t *i)
{
        return oa_each(&gmap_kind, m->slots, m->mask, &m->old, i);
}

static inline void gmap_clear(struct gmap *m)
{
        if (m->slots)
                memset(m->slots, 0, (m->mask + 1) * sizeof(*m->slots));
        oa_old_free(&m->old);
        m->n = 0;
}

static inline void gmap_done(struct gmap *m)
{
        free(m->slots);
        oa_old_free(&m->old);
        *m = (struct gmap){ 0 };
}

/* Batches rows read from storage or an arrangement into dataflow_push() calls.  The
 * rows a read hands out are valid during its callback only, so they are copied into
 * `bytes` until the batch is pushed (which copies what it keeps). */
struct feed {
        struct dataflow *df;
        size_t input;
        struct eval_update buf[256];
        struct row_arena bytes;
        size_t n;
        uint64_t time;          /* for snapshot rows */
        struct row_error *err;
        size_t rows;
};

/* What one compute pass stepped and must write: the materialized views' appends (their
 * updates point into each dfent's `out`). */
struct stage {
        struct storage_append *v;
        struct dfent **ve;              /* v[i] is ve[i]'s */
        size_t n_v;
        struct storage_update *u;
        size_t n_u;
};

struct install {
        Coord__CreateDataflows *m;
        uint64_t *counts;
        size_t next;                    /* m->dataflows[next..] not installed yet */
        struct gmap pending;            /* gid -> a = its index in m->dataflows */
        node_peer_t from;
        uint64_t epoch;                 /* of from's connection that sent it */
        uint64_t request_id, start_ns;
        struct loop_timer *timer;
        unsigned slices;
};

struct srcent {
        uint64_t gid, progress_id;
        Coord__DataflowSpec *spec;      /* owned */
        struct src_reader *reader;      /* NULL when it could not be opened (err says why) */
        struct eval_batch rows, remap;  /* one tick's */
        uint64_t offset;                /* what its remap holds at its upper - 1 */
        char err[256];                  /* why it does not go on; "" when it does */
};

/* controller-server.c: small helpers, dispatch. */
bool server_ratelimit_ok(struct ratelimit *rl, uint64_t now);
size_t server_u64_sort_unique(uint64_t *v, size_t n);
const char *server_kind_name(enum storage_kind k);
bool server_kind_appendable(enum storage_kind k);
const char *server_msg_name(int type);
void server_on_message(struct cserver *s, node_peer_t from, const Coord__Envelope *env);

/* controller-server-out.c: the output gate (16), replies. */
uint64_t server_out_tag(const struct cserver *s);
bool server_out_holding(const struct cserver *s);
void server_out_ent_done(struct out_ent *o);
int server_out_push(struct cserver *s, const struct out_ent *o);
void server_out_release(struct cserver *s);
/* controller-server-refresh.c note 1: the highest upper a refresh view (schedule rs)
 * may have now; REFRESH_NONE when its refreshes are not leased. */
uint64_t server_refresh_limit(const struct dfent *e, const struct refresh_schedule *rs);
void server_handle_release_refresh(struct cserver *s, node_peer_t from, const Coord__Envelope *env);
/* controller-server-fence.c note 1. */
int server_fence_load(struct cserver *s);
bool server_fence_refuses(struct cserver *s, node_peer_t from, const Coord__Envelope *env);
uint64_t server_peer_epoch(const struct cserver *s, node_peer_t peer);
int server_out_send(struct cserver *s, node_peer_t to, Coord__MsgType type, uint64_t rid,
                    const ProtobufCMessage *payload);
void server_out_fail(struct cserver *s, int err);
void server_out_drop_role(struct cserver *s, node_peer_t peer);
void server_on_synced(struct loop *l, uint64_t count, void *userdata);
int server_storage_attach(struct cserver *s);
void server_send_logged(struct cserver *s, node_peer_t to, Coord__MsgType type, uint64_t rid,
                        const ProtobufCMessage *payload);
void server_reply_error(struct cserver *s, node_peer_t to, uint64_t rid, const struct row_error *e);
void server_reply_ok(struct cserver *s, node_peer_t to, uint64_t rid, uint64_t *counts, size_t n,
                     uint64_t upper);
/* An Append's Ok with the writes that failed alone (22) and the RETURNING rows of the
 * others (coord.proto TableWrite.returning). */
void server_reply_ok_failed(struct cserver *s, node_peer_t to, uint64_t rid, uint64_t *counts,
                            size_t n, uint64_t upper, Coord__WriteFailure **failures,
                            size_t n_failures, Coord__WriteRows **returned, size_t n_returned);
void server_reply_malformed(struct cserver *s, node_peer_t to, const Coord__Envelope *env);
/* The reply to a request whose only result is r: the error e when r < 0, else an Ok
 * without counts. */
void server_reply_result(struct cserver *s, node_peer_t to, uint64_t rid, int r,
                         const struct row_error *e);

/* controller-server-mirror.c: listing, the tables' shared frontier (10), the ring (7) and
 * frontiers (4) mirrors, recovery (8), row counts of built-ins (11). */
int server_list_all(struct cserver *s);
int server_list_some(struct cserver *s, const uint64_t *gids, size_t n);
uint64_t server_tables_frontier(struct cserver *s);
void server_effective(struct storage_frontiers *f, enum storage_kind kind, uint64_t T);
void server_ring_set(struct cserver *s, uint64_t gid, const struct storage_frontiers *f);
void server_ring_forget(struct cserver *s, uint64_t gid);
void server_frontiers_clear(struct cserver *s);
void server_frontiers_dirty(struct cserver *s, uint64_t gid);
void server_frontiers_reset(struct cserver *s);
int server_builtins_from_cols(struct cserver *s);
int server_mirrors_rebuild(struct cserver *s);
int server_storage_opened(struct cserver *s);
void server_storage_recover(struct cserver *s);

/* An error of the storage layer, as a SQL error; checks for the sticky state (8). */
int server_storage_failure(struct cserver *s, struct row_error *e, int r, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
int server_storage_unavailable(struct row_error *e);
int64_t server_cm_count(const struct cmirror *m, const void *row, size_t len);
/* count(row) += diff; a row whose count reaches 0 goes.  -ENOMEM leaves m unusable. */
int server_cm_add(struct cmirror *m, const void *row, size_t len, int64_t diff);
/* Every row once, in no order: for (size_t i = 0; (e = server_cm_each(m, &i)); ).  No
 * server_cm_add() meanwhile. */
struct rcent *server_cm_each(const struct cmirror *m, size_t *i);
size_t server_peek_memory_limit(const struct cserver *s);
void server_cm_clear(struct cmirror *m);
void server_cm_drop(struct cserver *s, uint64_t gid);
void server_cm_drop_all(struct cserver *s);
int server_cm_get(struct cserver *s, const struct storage_info *info, struct cmirror **ret);
void server_cm_apply(struct cserver *s, const struct storage_info *info, const struct eval_batch *pend,
                     uint64_t new_upper);

/* controller-server-unique.c: PRIMARY KEY, UNIQUE (22) and FOREIGN KEY (25). */
struct kmirror;
struct uniq;
struct uniq *server_uniq_new(void);
void server_uniq_free(struct uniq *u);
int server_uniq_stage(struct cserver *s, struct uniq *u, const struct storage_info *info,
                      const Coord__TableWrite *w, const struct eval_batch *pend, size_t from,
                      struct row_error *err);
int server_uniq_commit(struct uniq *u, struct row_error *err);
int server_uniq_skip(struct cserver *s, struct uniq *u, const struct storage_info *info,
                     const Coord__TableWrite *w, struct eval_batch *pend, size_t from,
                     struct row_error *err);
void server_uniq_apply(struct cserver *s, const struct storage_info *info, const struct eval_batch *pend,
                       uint64_t new_upper);
void server_km_drop(struct cserver *s, uint64_t gid);
void server_km_drop_all(struct cserver *s);

/* controller-server-peek.c: peeks (5), (18). */
void server_peek_free(struct peek *pk);
void server_peek_cancel(struct peek *pk);
uint64_t server_peeks_hold(const struct cserver *s, uint64_t gid);
int server_storage_snapshot(void *userdata, uint64_t id, uint64_t ts, eval_emit_fn emit,
                            void *emit_userdata);
void server_handle_peek_next(struct cserver *s, node_peer_t from, const Coord__Envelope *env);
void server_peek_worker_stop(struct cserver *s);
void server_peeks_wake(struct cserver *s);
void server_handle_peek(struct cserver *s, node_peer_t from, const Coord__Envelope *env);
/* controller-server-subscribe.c (26) */
void server_handle_subscribe_read(struct cserver *s, node_peer_t from, const Coord__Envelope *env);

/* (18) the peek thread, shared with (24). */
int server_peek_worker_start(struct cserver *s);
void server_peek_worker_queue(struct cserver *s, struct bgpeek *j);
uint64_t server_peek_bg_min(const struct cserver *s);
uint64_t server_plan_cost(const Coord__Plan__Relation *rel, const struct dataflow *df,
                          const uint64_t *ups, unsigned depth);

/* controller-server-bgwrite.c: a write's plan in the peek thread (24). */
/* 1 when a's expensive write went to the thread (a is the job's now, the Append
 * parked); 0: handle a on the loop. */
int server_bgwrite_try(struct cserver *s, node_peer_t from, uint64_t request_id, Coord__Append *a);
void server_bgwrite_eval(struct bgpeek *j);                             /* the thread */
void server_bgwrite_finish(struct cserver *s, struct bgpeek *j, bool stopping);
bool server_plan_is_chain(const Coord__Plan__Relation *rel);
/* controller-server-append.c: handle Append a, with w's result for one of its writes. */
void server_append_run(struct cserver *s, node_peer_t from, uint64_t request_id,
                       const Coord__Append *a, struct bgwrite *w);
void server_deferred_run(struct cserver *s);

/* controller-server-lookup.c: keyed index lookups (23). */
/* Key arr (new, empty) by sp's keys when all are of a keyable type: 0 or -errno. */
int server_index_keys(struct arrangement *arr, const Coord__DataflowSpec *sp);
/* 1 with the key (malloc'ed, row-encoded) when plan may read index gid's keyed
 * arrangement arr by key alone; 0 when it must read it all; -ENOMEM. */
int server_lookup_key(const Coord__Plan__Relation *plan, uint64_t gid, const struct arrangement *arr,
                      uint8_t **ret_key, size_t *ret_len);

/* controller-server-compute.c: installed dataflows and compute passes (13). */
size_t server_dfent_pos(const struct cserver *s, uint64_t gid);
struct dfent *server_dfent_find(const struct cserver *s, uint64_t gid);
void server_dfent_untrack(struct cserver *s, struct dfent *e);
int server_dfent_track(struct cserver *s, struct dfent *e);
void server_readers_done(struct cserver *s);
void server_dfent_dirty(struct cserver *s, struct dfent *e);
void server_work_forget(struct cserver *s, const struct dfent *e);
int server_object_frontiers(struct cserver *s, uint64_t gid, struct storage_frontiers *ret,
                            enum storage_kind *ret_kind, struct dfent **ret_index);
void server_dfent_publish(struct cserver *s, struct dfent *e);
int server_feed_flush(struct feed *f);
int server_feed_add(struct feed *f, const void *row, size_t len, uint64_t time, int64_t diff);
int server_feed_row(const void *row, size_t len, int64_t count, void *userdata);
int server_feed_emit(void *userdata, const void *row, size_t len, int64_t diff);
int server_feed_update(const void *row, size_t len, uint64_t time, int64_t diff, void *userdata);
const char *server_dfent_kind(const struct dfent *e);
void server_dfent_fail(struct cserver *s, struct dfent *e, const struct row_error *err);
struct row_error server_dfent_error(const struct dfent *e);
bool server_dfent_schedule(const struct dfent *e, struct refresh_schedule *rs);
void server_compute_push(struct cserver *s, uint64_t gid, const struct eval_batch *b);
uint64_t server_dfent_target(struct cserver *s, struct dfent *e, uint64_t T_next);
int server_dfent_step(struct cserver *s, struct dfent *e, uint64_t frontier);
void server_dfent_catch_up(struct cserver *s, struct dfent *e);
uint64_t server_mv_upper(struct cserver *s, uint64_t gid, uint64_t stored);
int server_compute_stage(struct cserver *s, uint64_t T_next, struct stage *st);
void server_compute_staged(struct cserver *s, struct stage *st, bool ok);
void server_compute_run(struct cserver *s);
void server_compute_reinstall_all(struct cserver *s);
void server_mv_flush(struct cserver *s);

/* controller-server-install.c: installing dataflows (17). */
int server_dfent_hydrate(struct cserver *s, struct dfent *e);
void server_dfent_free(struct dfent *e);
void server_dfent_remove(struct cserver *s, uint64_t gid);
int server_spec_copy(const Coord__DataflowSpec *sp, Coord__DataflowSpec **ret);
bool server_install_pending(const struct cserver *s, uint64_t gid);
int server_defer_message(struct cserver *s, node_peer_t from, const Coord__Envelope *env);
void server_deferred_free(struct cserver *s);
void server_install_free(struct install *in);
void server_handle_create_dataflows(struct cserver *s, node_peer_t from, const Coord__Envelope *env);

/* controller-server-source.c: sources (20) and sinks (19). */
int server_sink_open(struct cserver *s, struct dfent *e, uint64_t *as_of, struct row_error *err);
int server_sink_keep(struct cserver *s, struct dfent *e, uint64_t frontier);
struct srcent *server_srcent_find(const struct cserver *s, uint64_t gid);
void server_srcents_free(struct cserver *s);
void server_srcent_remove(struct cserver *s, uint64_t gid);
int server_source_install(struct cserver *s, const Coord__DataflowSpec *sp, struct row_error *err);
void server_source_tick(struct cserver *s);
int server_sink_switch(struct cserver *s, struct dfent *e, const Coord__DataflowSpec *sp,
                       struct row_error *err);
void server_sink_flush(struct cserver *s);

/* controller-server-append.c: appends (2), (3), (4), (15). */
void server_handle_append(struct cserver *s, node_peer_t from, const Coord__Envelope *env);

/* controller-server-collection.c: collections (12). */
int server_drop_one(struct cserver *s, uint64_t gid, bool defer, struct row_error *e);
int server_created(struct cserver *s, const struct storage_info *info, struct row_error *e);
void server_handle_ensure(struct cserver *s, node_peer_t from, const Coord__Envelope *env);
void server_handle_drop(struct cserver *s, node_peer_t from, const Coord__Envelope *env);
void server_handle_list(struct cserver *s, node_peer_t from, const Coord__Envelope *env);

/* controller-server-compact.c: compaction permission (14) and compaction (6). */
void server_allowed_forget(struct cserver *s, uint64_t gid);
/* (14a) Most permissions applied in one loop turn. */
#define CSERVER_ALLOW_SLICE 256u
/* (4a) Most rows of s->dirty one append rewrites in coord_frontiers. */
#define CSERVER_FRONTIER_ROWS 4096u
void server_allow_queue_done(struct cserver *s);
uint64_t server_index_allowed_target(struct cserver *s, struct dfent *e);
void server_handle_allow_compaction(struct cserver *s, node_peer_t from, const Coord__Envelope *env);
void server_compact_arm(struct cserver *s, uint64_t ms);
