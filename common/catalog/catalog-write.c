/* catalog-write.c -- writing the catalog store: catalog_commit() and
 * catalog_commit_many() through group commit, the meta writes, and the test hooks on
 * the write path.
 *
 * What the store's files share is catalog-internal.h; the NOTES ON THE DESIGN are in
 * catalog.c (and catalog-read.c note 6).
 *
 * GROUP COMMIT
 *
 * RocksDB groups concurrent sync writers itself, but measured only 3x with 8 writers
 * (DESIGN section 11).  We group before RocksDB, leader/follower style (RocksDB's
 * WriteThread, PostgreSQL's XLogFlush): each caller queues a request on c->queue; a
 * caller that finds the write path free becomes the leader, takes the queued
 * requests (up to GROUP_MAX) as its group, writes them in one synced batch with
 * c->lock released, and completes every member.  Callers that arrive while a group
 * is being written queue up and form the next group.
 *
 * A request moves:
 *
 *      catalog_commit()        group_lead()            group_finish()
 *   NEW ----------------> QUEUED -------------> GROUPED --------------> DONE
 *                     (on c->queue,     (taken by a leader      (result set by the
 *                      under c->lock)    under c->lock; seq      leader, c->lock not
 *                                        assigned unlocked)      held; owner returns)
 *
 * The write path (under c->lock; GATHERING is window_end_ns != 0, BUSY writer_busy):
 *
 *            group_ready(): fewer queued than expected
 *      IDLE ------------------------------------------> GATHERING
 *        |                                                  |
 *        | group_ready(): enough queued                     | group_ready(): enough
 *        | (or a single writer)                             | queued, or the window
 *        v                                                  v closed
 *      BUSY <-----------------------------------------------+
 *        |   group_lead(): the caller that made the group ready leads it
 *        |
 *        +--> IDLE   group_finish(): last_seq advanced (or ERROR entered); then,
 *                    c->lock released, the members DONE and one wake-up for all
 *
 * The commit window (GATHERING).  Closed-loop writers (each commits again as soon as
 * its commit returns) would otherwise split into two alternating groups: the members
 * of group A are woken only when A is durable, by which time group B has started, so
 * they form group C, and so on -- half of the writers per fsync.  So a group is held
 * back until as many requests are queued as there were committers at the end of the
 * previous group (c->expect = its size + the requests queued behind it), for at most
 * the average time of a group's write, capped at GROUP_WINDOW_MAX_NS: waiting longer
 * than a write would cost more than the write it saves.  The caller whose arrival
 * completes the group leads it -- it is running already, while waking a sleeper on
 * another vCPU costs ~25 us.  A single writer has expect = 1 and never waits; when
 * writers go away the window closes once unfilled and expect shrinks to what came.
 *
 * Sleeping.  Callers sleep on one futex word, c->group_end, bumped when a group is
 * complete -- the only event any of them waits for, except that the caller who opened
 * a window also wakes when it closes, and then leads the group if nobody filled it
 * first.  Woken, a caller returns if its request is DONE, else looks under c->lock
 * whether to lead, else sleeps again; a GROUPED caller just sleeps again.  One
 * FUTEX_WAKE per group, and members that do not wake up into c->lock: with 8 writers
 * on 2 vCPUs, per-member condition variables and the lock convoy they cause cost
 * about a third of an fsync per group.  Only the opener sleeps with a timeout: when
 * every QUEUED caller did, all of them woke at the window's end -- by then GROUPED,
 * in the middle of their group's fdatasync -- for nothing, 7 context switches per
 * group of 8 that delayed the leader's own wake-ups between the fdatasync's I/Os
 * (13% more commits/s with 8 writers without them).  A leader whose own request did
 * not fit in its group goes round the loop and leads again.
 *
 * Yielding before sleeping.  A member that sleeps costs its group twice on a virtual
 * machine: the leader's FUTEX_WAKE of seven sleepers took ~50 us after the group's
 * fdatasync (bpftrace, bench-catalog, 8 writers), and a vCPU with nobody to run
 * halts, so the disk's interrupt and the wake-ups that follow each pay a trip through
 * the hypervisor.  So a caller about to sleep until a group ends, without a window to
 * close (the opener sleeps with a timeout: see above), first calls sched_yield() in a
 * loop for about what the group in flight still needs -- twice the average write, at
 * most c->spin_max_ns (CATALOG_WAIT_SPIN_DEFAULT_NS, or catalog_set_wait_spin()) --
 * and looks at group_end after every yield; only then does it sleep.  RocksDB's
 * WriteThread waits the same way (adaptive yield, 100 us).  A yield gives the vCPU to
 * anything else runnable, the leader first, so the yielders do not delay the write;
 * they keep their vCPUs awake and see the group's end without a wake-up.
 * Bounds: at most GROUP_SPINNERS_MAX callers yield at once (the rest sleep); none on a
 * disk slower than spin_max_ns per write (waiting out a slow write by yielding would
 * buy nothing); none while fewer than GROUP_YIELD_MIN committers came to the last
 * group end (a lone waiter has nobody to yield to: it keeps a vCPU busy, which on this
 * VM slows the other one by up to a third, to save one wake-up -- 2 writers were
 * slower yielding in 3 of 4 runs); and a wait yields at most once per group end.  The
 * price is CPU: with 8 writers ~50 us per commit against ~30 (bench-catalog prints both
 * rows, and the counters waits_yielded, waits_slept); one writer never waits.
 */
#include "catalog-internal.h"

#include <assert.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probes.h"
#include "rocks.h"
#include "synclog.h"
#include "util.h"

static enum req_state req_state(const struct commit_req *req)
{
        return __atomic_load_n(&req->state, __ATOMIC_ACQUIRE);
}

static void req_set_state(struct commit_req *req, enum req_state state)
{
        __atomic_store_n(&req->state, state, __ATOMIC_RELEASE);
}

#ifndef NDEBUG
/* The invariants of the group commit state, checked at its transitions.  Lock held. */
bool catalog_check(const struct catalog *c)
{
        size_t n = 0;

        assert(c->err <= 0);
        assert(!c->secondary || (!c->writer_busy && !c->queue_head));
        for (const struct commit_req *q = c->queue_head; q; q = q->next) {
                assert(req_state(q) == REQ_QUEUED);
                assert(q->next || q == c->queue_tail);
                n++;
        }
        assert(n == c->n_queued);
        assert(!!c->queue_head == !!c->queue_tail);
        assert(!c->window_end_ns || (!c->writer_busy && c->queue_head));
        assert(!c->window_end_ns || (c->window_opener && req_state(c->window_opener) == REQ_QUEUED));
        assert(c->stats.commits == 0 || c->stats.groups > 0);
        return true;
}
#endif

/* ---- Writing ------------------------------------------------------------------- */

static bool is_last_seq_key(const struct catalog_op *op)
{
        return op->cf == CATALOG_CF_META && op->key_len == strlen(CATALOG_META_LAST_SEQ) &&
               memcmp(op->key, CATALOG_META_LAST_SEQ, op->key_len) == 0;
}

static int ops_validate(const struct catalog_op *ops, size_t n_ops)
{
        if (!ops || n_ops == 0)
                return -EINVAL;
        for (size_t i = 0; i < n_ops; i++) {
                const struct catalog_op *op = &ops[i];

                if (op->kind < 0 || op->kind >= _CATALOG_OP_KIND_MAX)
                        return -EINVAL;
                if (op->cf < 0 || op->cf >= _CATALOG_CF_MAX)
                        return -EINVAL;
                if (!op->key || op->key_len == 0)
                        return -EINVAL;
                if (op->kind == CATALOG_OP_PUT && !op->value && op->value_len > 0)
                        return -EINVAL;
                if (is_last_seq_key(op))
                        return -EINVAL;
        }
        return 0;
}

/* Build the request and its log entry in the caller's thread, so that the leader only
 * numbers and packs.  Protobuf-c reads key and value and never writes them; the casts
 * drop const only to fit ProtobufCBinaryData. */
static int req_init(struct commit_req *req, const struct catalog_op *ops, size_t n_ops)
{
        Coord__CatalogOp *pb;
        Coord__CatalogOp **ptrs;

        if (n_ops > SIZE_MAX / (sizeof(*pb) + sizeof(*ptrs)))
                return -ENOMEM;
        /* One allocation: the op messages, then the pointer array protobuf-c wants. */
        pb = malloc(n_ops * (sizeof(*pb) + sizeof(*ptrs)));
        if (!pb)
                return -ENOMEM;
        ptrs = (Coord__CatalogOp **)(pb + n_ops);

        *req = (struct commit_req){ .ops = ops, .n_ops = n_ops, .pb_ops = pb,
                                    .pb_op_ptrs = ptrs, .state = REQ_QUEUED };
        coord__catalog_txn__init(&req->txn);
        for (size_t i = 0; i < n_ops; i++) {
                coord__catalog_op__init(&pb[i]);
                pb[i].kind = ops[i].kind == CATALOG_OP_PUT ? COORD__CATALOG_OP__KIND__PUT
                                                           : COORD__CATALOG_OP__KIND__DELETE;
                pb[i].cf = ops[i].cf == CATALOG_CF_STATE ? COORD__CATALOG_OP__CF__STATE
                                                         : COORD__CATALOG_OP__CF__META;
                pb[i].key.data = (uint8_t *)ops[i].key;
                pb[i].key.len = ops[i].key_len;
                if (ops[i].kind == CATALOG_OP_PUT) {
                        pb[i].value.data = (uint8_t *)ops[i].value;
                        pb[i].value.len = ops[i].value_len;
                }
                ptrs[i] = &pb[i];
        }
        req->txn.n_ops = n_ops;
        req->txn.ops = ptrs;
        return 0;
}

static void req_done(struct commit_req *req)
{
        free(req->pb_ops);
}

static size_t group_want(const struct catalog *c)
{
        return c->expect < GROUP_MAX ? c->expect : GROUP_MAX;
}

/* NEW -> QUEUED.  Lock held. */
static void queue_push(struct catalog *c, struct commit_req *req)
{
        assert(req_state(req) == REQ_QUEUED && !req->next);
        if (c->queue_tail)
                c->queue_tail->next = req;
        else
                c->queue_head = req;
        c->queue_tail = req;
        c->n_queued++;
}

/* QUEUED -> GROUPED for up to GROUP_MAX requests from the queue head, more only to
 * end a chain (catalog_commit_many(): a chain is never split); returns the group as a
 * NULL-terminated list and its size.  Lock held. */
static size_t queue_take(struct catalog *c, struct commit_req **ret_group)
{
        struct commit_req *head = c->queue_head, *last = NULL, *q;
        size_t n = 0;

        assert(head);
        for (q = head; q && (n < GROUP_MAX || last->chained); q = q->next) {
                req_set_state(q, REQ_GROUPED);
                last = q;
                n++;
        }
        c->queue_head = q;
        if (!q)
                c->queue_tail = NULL;
        last->next = NULL;
        c->n_queued -= n;
        *ret_group = head;
        return n;
}

/* Should the caller, whose request `mine` is QUEUED and who found the write path not
 * BUSY, lead now?  Yes once the group is as large as expected or the window has closed
 * (or the handle failed: then there is nothing to wait for).  Otherwise IDLE ->
 * GATHERING if not yet; the caller that opens the window gets its end in
 * *ret_deadline -- again every time it looks while the window is open -- and closes it
 * if nobody fills the group before; the others sleep until the group they join ends
 * (see Sleeping).  The opener must get its deadline back when it looks again: a group
 * that ends after the window opened (its leader unlocks before it wakes anyone, and a
 * newcomer may open the window in between) wakes the opener with the window still
 * open, and an opener that then slept without a timeout left nobody to close it --
 * every committer asleep for good (seen once in ten setups of 100,000 objects).  The
 * window is open only while no group is being written (catalog_check()), and
 * group_lead() closes it, so the opener is QUEUED for as long as it is open.  Lock
 * held. */
static bool group_ready(struct catalog *c, const struct commit_req *mine, uint64_t *ret_deadline)
{
        uint64_t now, window;

        assert(!c->writer_busy && c->queue_head);
        assert(req_state(mine) == REQ_QUEUED);
        if (c->err < 0 || c->n_queued >= group_want(c))
                return true;
        now = now_ns();
        if (c->window_end_ns == 0) {
                window = c->sync_avg_ns < GROUP_WINDOW_MAX_NS ? c->sync_avg_ns
                                                              : GROUP_WINDOW_MAX_NS;
                if (c->debug_window_ns)
                        window = c->debug_window_ns;
                if (window == 0)
                        return true;
                c->window_start_ns = now;
                c->window_end_ns = now + window;
                c->window_opener = mine;
        } else if (now >= c->window_end_ns)
                return true;
        if (c->window_opener == mine)
                *ret_deadline = c->window_end_ns;
        return false;
}

/* Room for size bytes in pack_buf; grows geometrically, so a group packs in O(bytes). */
static int pack_buf_reserve(struct catalog *c, size_t size)
{
        size_t want = c->pack_size ? c->pack_size : 4096;
        uint8_t *p;

        if (size <= c->pack_size)
                return 0;
        while (want < size)
                want = want <= SIZE_MAX / 2 ? want * 2 : size;
        p = realloc(c->pack_buf, want);
        if (!p)
                return -ENOMEM;
        c->pack_buf = p;
        c->pack_size = want;
        return 0;
}

/* Number the group first_seq.. and fill c->batch: per transaction its changes and its
 * log entry, then "last_seq" once (catalog.c NOTE 1, 3).  The entries stay packed one after the
 * other in c->pack_buf (each member's entry_off/entry_len) for the commit hook, which
 * gets exactly the bytes the log column family stores.  Leader only, lock not held: the
 * members are GROUPED and wait, nobody else touches them or the batch. */
static int group_build(struct catalog *c, struct commit_req *group, uint64_t first_seq)
{
        uint8_t key[SEQ_KEY_LEN];
        uint64_t seq = first_seq, ms = wall_ms();
        size_t off = 0;

        rocksdb_writebatch_clear(c->batch);
        for (struct commit_req *q = group; q; q = q->next, seq++) {
                _unused_ size_t packed;
                size_t size;
                int r;

                assert(req_state(q) == REQ_GROUPED);
                for (size_t i = 0; i < q->n_ops; i++) {
                        const struct catalog_op *op = &q->ops[i];
                        rocksdb_column_family_handle_t *cf = c->cf[cf_index(op->cf)];

                        if (op->kind == CATALOG_OP_PUT)
                                rocksdb_writebatch_put_cf(c->batch, cf, op->key, op->key_len,
                                                          op->value ? op->value : "",
                                                          op->value_len);
                        else
                                rocksdb_writebatch_delete_cf(c->batch, cf, op->key, op->key_len);
                }

                q->seq = seq;
                q->txn.seq = seq;
                q->txn.commit_ms = ms;
                size = coord__catalog_txn__get_packed_size(&q->txn);
                if (size > SIZE_MAX - off)
                        return -ENOMEM;
                r = pack_buf_reserve(c, off + size);
                if (r < 0)
                        return r;
                packed = coord__catalog_txn__pack(&q->txn, c->pack_buf + off);
                assert(packed == size);
                q->entry_off = off;
                q->entry_len = size;
                /* RocksDB copies the value into the batch: pack_buf may move later. */
                be64_put(key, seq);
                rocksdb_writebatch_put_cf(c->batch, c->cf[CF_LOG], (const char *)key, sizeof(key),
                                          (const char *)c->pack_buf + off, size);
                off += size;
                COORD_CATALOG_COMMIT_START(seq, (unsigned)q->n_ops);
        }
        be64_put(key, seq - 1);
        rocksdb_writebatch_put_cf(c->batch, c->cf[CF_META], CATALOG_META_LAST_SEQ,
                                  strlen(CATALOG_META_LAST_SEQ), (const char *)key, sizeof(key));
        return 0;
}

/* The one synced write of a group (catalog.c NOTE 1, 2, 8): the batch into the sync log, then
 * into RocksDB without a sync while the sync log's write-back runs, then the sync
 * log's fdatasync; or, with the sync log off or for a group too big for it, into
 * RocksDB with a sync.  A failure is -ENOSPC or -EIO. */
static int group_write(struct catalog *c, bool fail, uint64_t first_seq, size_t n)
{
        const rocksdb_writeoptions_t *options = c->write_options;
        char *err = NULL;
        int r;

        c->group_written = false;
        if (fail) {
                set_thread_error("catalog: sync failure injected by catalog_debug_fail_next_sync()");
                return -EIO;
        }
        if (c->synclog) {
                size_t len;
                const char *rep = rocksdb_writebatch_data(c->batch, &len);

                assert(n >= 1 && n <= GROUP_MAX_CHAINED);
                r = synclog_write(c->synclog, first_seq, (uint32_t)n, rep, len);
                if (r == 0) {
                        /* In the sync log now: replay applies it whatever follows. */
                        c->group_written = true;
                        options = c->nosync_options;
                        wal_write(c, options, &err);
                        if (err) {
                                r = rocks_error(err);
                                return r == -ENOSPC ? r : -EIO;
                        }
                        r = synclog_sync(c->synclog);
                        if (r == 0)
                                return 0;
                }
                if (r != -E2BIG) {
                        set_thread_error(c->group_written ? "catalog: sync log sync failed: %s"
                                                          : "catalog: sync log write failed: %s",
                                         strerror(-r));
                        return r == -ENOSPC ? r : -EIO;
                }
        }
        c->group_written = true;        /* RocksDB may have some or all of it */
        wal_write(c, options, &err);
        if (!err)
                return 0;
        r = rocks_error(err);
        return r == -ENOSPC ? r : -EIO;
}

/* Wake every caller sleeping in catalog_commit(): the end of a group is the only
 * event any of them waits for (its own request DONE, or the write path IDLE). */
static void group_end_wake(struct catalog *c)
{
        __atomic_add_fetch(&c->group_end, 1, __ATOMIC_RELEASE);
        (void)syscall(SYS_futex, &c->group_end, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* How long a caller that waits for a group's end yields before it sleeps (GROUP
 * COMMIT, "Yielding before sleeping"); 0: it sleeps at once.  Lock held. */
static uint64_t wait_spin_ns(const struct catalog *c)
{
        uint64_t ns = 2 * c->sync_avg_ns;

        if (c->spin_max_ns == 0 || c->sync_avg_ns == 0 || c->sync_avg_ns > c->spin_max_ns ||
            c->expect < GROUP_YIELD_MIN)
                return 0;
        return ns < c->spin_max_ns ? ns : c->spin_max_ns;
}

/* Yield the vCPU until group_end moves from gen, for at most spin_ns: true if it
 * moved.  False at once when GROUP_SPINNERS_MAX callers are yielding already. */
static bool group_end_yield(struct catalog *c, uint32_t gen, uint64_t spin_ns)
{
        bool ended = false;

        if (__atomic_add_fetch(&c->spinners, 1, __ATOMIC_RELAXED) <= GROUP_SPINNERS_MAX) {
                uint64_t until = now_ns() + spin_ns;

                do {
                        sched_yield();
                        if (__atomic_load_n(&c->group_end, __ATOMIC_ACQUIRE) != gen) {
                                ended = true;
                                break;
                        }
                } while (now_ns() < until);
        }
        __atomic_sub_fetch(&c->spinners, 1, __ATOMIC_RELAXED);
        return ended;
}

/* Sleep until req is DONE, or, while it is QUEUED, until a group has ended since gen
 * was read (the write path may be IDLE then: the caller looks under c->lock) or the
 * deadline (if not 0) has passed.  Without a deadline, yield for up to spin_ns first,
 * once per group end (GROUP COMMIT, "Yielding before sleeping").  A GROUPED request
 * can only become DONE, which needs no lock to see: its members do not crowd c->lock
 * at every group end.  No
 * wake-up is missed: a leader stores DONE before it bumps group_end, so whoever
 * reads the bumped group_end (acquire) then sees DONE. */
static void group_end_wait(struct catalog *c, struct commit_req *req, uint32_t gen,
                           uint64_t deadline, uint64_t spin_ns)
{
        bool yielded = false;

        for (;;) {
                enum req_state state = req_state(req);
                struct timespec ts, *timeout = NULL;
                uint32_t now;

                if (state == REQ_DONE)
                        return;
                now = __atomic_load_n(&c->group_end, __ATOMIC_ACQUIRE);
                if (now != gen) {
                        if (state == REQ_QUEUED)
                                return;
                        gen = now;
                        yielded = false;
                        continue;
                }
                if (spin_ns && !deadline && !yielded) {
                        yielded = true;
                        if (group_end_yield(c, gen, spin_ns)) {
                                __atomic_add_fetch(&c->waits_yielded, 1, __ATOMIC_RELAXED);
                                continue;
                        }
                }
                if (!deadline)
                        __atomic_add_fetch(&c->waits_slept, 1, __ATOMIC_RELAXED);
                if (deadline && state == REQ_QUEUED) {
                        uint64_t t = now_ns();

                        if (t >= deadline)
                                return;
                        t = deadline - t;
                        ts = (struct timespec){ .tv_sec = (time_t)(t / 1000000000u),
                                                .tv_nsec = (long)(t % 1000000000u) };
                        timeout = &ts;
                }
                (void)syscall(SYS_futex, &c->group_end, FUTEX_WAIT_PRIVATE, gen, timeout,
                              NULL, 0);
        }
}

/* Hand the group's transactions to the commit hook: seqs first_seq.. in order, without
 * a gap to the previous call (catalog.h).  Leader only, lock held, write path BUSY (it
 * owns pack_buf and committed[]). */
static void group_hook(struct catalog *c, struct commit_req *group, size_t n, uint64_t first_seq)
{
        size_t i = 0;

        /* Only durable transactions: the group's synced write succeeded (catalog.c NOTE 2). */
        assert(c->writer_busy && c->err == 0 && n >= 1 && n <= GROUP_MAX_CHAINED);
        assert(c->last_seq == first_seq + n - 1);
        for (const struct commit_req *q = group; q; q = q->next, i++) {
                assert(i < n && q->seq == first_seq + i);
                assert(q->entry_off + q->entry_len <= c->pack_size);
                c->committed[i] = (struct catalog_committed){
                        .seq = q->seq, .entry = c->pack_buf + q->entry_off,
                        .len = q->entry_len,
                };
        }
        assert(i == n);
        c->hook(c->committed, n, c->hook_userdata);
}

/* BUSY -> IDLE for the write path, then GROUPED -> DONE for every member.  A sticky
 * failure moves the handle to ERROR first (catalog.c NOTE 5).  Leader only; lock held on entry,
 * released on return. */
static void group_finish(struct catalog *c, struct commit_req *group, size_t n,
                         uint64_t first_seq, int r, bool sticky)
{
        uint64_t seq = first_seq;

        assert(c->writer_busy);
        assert(r <= 0 && (!sticky || r < 0));
        if (sticky) {
                assert(c->err == 0);
                c->err = r;
                c->err_written = c->group_written;
                snprintf(c->err_msg, sizeof(c->err_msg), "%s", catalog_thread_error);
                COORD_CATALOG_SYNC_FAIL(r);
        }
        if (r == 0) {
                assert(c->last_seq + 1 == first_seq);
                c->last_seq = first_seq + n - 1;
                c->stats.commits += n;
                c->stats.groups++;
                if (n > c->stats.max_group)
                        c->stats.max_group = n;
                /* After the write is durable and last_seq moved, before the members
                 * are answered: a follower woken now finds the group in the log, and
                 * whatever the hook publishes is durable.  The members are GROUPED:
                 * their entries are read before any of them is DONE. */
                if (c->hook)
                        group_hook(c, group, n, first_seq);
        } else
                c->stats.failed += n;
        /* One huge group must not pin its memory for the life of the handle. */
        if (c->pack_size > PACK_BUF_KEEP) {
                free(c->pack_buf);
                c->pack_buf = NULL;
                c->pack_size = 0;
        }
        c->expect = n + c->n_queued;
        c->writer_busy = false;
        assert(catalog_check(c));
        pthread_mutex_unlock(&c->lock);
        if (c->debug_group_end)
                c->debug_group_end(c->debug_group_end_arg);

        /* The members are GROUPED: nobody but us touches them until they are DONE.
         * Read next first: an owner that sees DONE returns and its request vanishes. */
        for (struct commit_req *q = group, *next; q; q = next, seq++) {
                next = q->next;
                assert(req_state(q) == REQ_GROUPED);
                q->result = r;
                COORD_CATALOG_COMMIT_DONE(seq, r);
                req_set_state(q, REQ_DONE);
        }
        /* One wake-up for the whole group, and for the callers queued meanwhile: one
         * of them leads (or starts gathering) the next group, unless a newcomer
         * finds the write path IDLE first. */
        group_end_wake(c);
}

/* Lead one group: take it, write it with the lock released, finish it.  Lock held on
 * entry, released on return; the write path is IDLE on entry and on return. */
static void group_lead(struct catalog *c)
{
        struct commit_req *group;
        uint64_t first_seq;
        bool fail, sticky = false;
        uint64_t t0 = 0;
        size_t n;
        int r;

        assert(catalog_check(c));
        assert(!c->writer_busy && c->queue_head);
        if (c->window_end_ns) {
                c->stats.window_ns += now_ns() - c->window_start_ns;
                c->window_end_ns = 0;
                c->window_opener = NULL;
        }
        c->writer_busy = true;
        n = queue_take(c, &group);
        first_seq = c->last_seq + 1;
        fail = c->fail_next_sync;
        c->fail_next_sync = false;
        r = c->err;
        if (r == 0) {
                /* Released while writing: this is when the next group queues up. */
                pthread_mutex_unlock(&c->lock);
                r = group_build(c, group, first_seq);
                if (r == 0) {
                        t0 = now_ns();
                        r = group_write(c, fail, first_seq, n);
                        t0 = now_ns() - t0;
                        sticky = r < 0;
                }
                if (c->debug_group_write)
                        c->debug_group_write(c->debug_group_write_arg);
                pthread_mutex_lock(&c->lock);
                c->stats.sync_ns += t0;
                if (t0 > c->stats.sync_max_ns)
                        c->stats.sync_max_ns = t0;
                if (t0 > c->sync_window_max_ns)
                        c->sync_window_max_ns = t0;
                /* An average over the last ~8 groups: the disk's speed now. */
                if (r == 0)
                        c->sync_avg_ns = c->sync_avg_ns ? c->sync_avg_ns - c->sync_avg_ns / 8 + t0 / 8
                                                        : t0;
        }
        group_finish(c, group, n, first_seq, r, sticky);
}

int catalog_commit(struct catalog *c, const struct catalog_op *ops, size_t n_ops,
                   uint64_t *ret_seq)
{
        struct commit_req req;
        int r;

        if (!c)
                return -EINVAL;
        if (c->secondary)
                return -EROFS;
        r = ops_validate(ops, n_ops);
        if (r < 0)
                return r;
        r = req_init(&req, ops, n_ops);
        if (r < 0)
                return r;

        pthread_mutex_lock(&c->lock);
        r = sticky_error_locked(c);
        if (r < 0) {
                pthread_mutex_unlock(&c->lock);
                goto out;
        }
        queue_push(c, &req);
        for (;;) {
                /* c->lock held here */
                uint64_t deadline = 0;

                if (req_state(&req) == REQ_QUEUED && !c->writer_busy &&
                    group_ready(c, &req, &deadline))
                        group_lead(c);
                else {
                        /* Read under the lock: the group end that changes what we
                         * saw comes after it, so it cannot be missed. */
                        uint32_t gen = __atomic_load_n(&c->group_end, __ATOMIC_ACQUIRE);
                        uint64_t spin = wait_spin_ns(c);

                        pthread_mutex_unlock(&c->lock);
                        group_end_wait(c, &req, gen, deadline, spin);
                }
                if (req_state(&req) == REQ_DONE)
                        break;
                pthread_mutex_lock(&c->lock);
        }
        /* c->lock not held; the request is DONE */
        r = req.result;
        if (r < 0)
                sticky_error(c);        /* the group's message, if it was sticky */
out:
        if (r == 0 && ret_seq)
                *ret_seq = req.seq;
        req_done(&req);
        return r;
}

int catalog_commit_many(struct catalog *c, const struct catalog_txn_ops *txns, size_t n,
                        uint64_t *ret_first_seq)
{
        struct commit_req *reqs, *last;
        size_t inited = 0;
        int r;

        if (!c || !txns || n == 0 || n > GROUP_MAX)
                return -EINVAL;
        if (c->secondary)
                return -EROFS;
        for (size_t i = 0; i < n; i++) {
                r = ops_validate(txns[i].ops, txns[i].n_ops);
                if (r < 0)
                        return r;
        }
        reqs = calloc(n, sizeof(*reqs));
        if (!reqs)
                return -ENOMEM;
        for (; inited < n; inited++) {
                r = req_init(&reqs[inited], txns[inited].ops, txns[inited].n_ops);
                if (r < 0)
                        goto out;
                reqs[inited].chained = inited + 1 < n;
        }
        last = &reqs[n - 1];

        pthread_mutex_lock(&c->lock);
        r = sticky_error_locked(c);
        if (r < 0) {
                pthread_mutex_unlock(&c->lock);
                goto out;
        }
        /* Queued back to back under one lock hold, and queue_take() never splits a
         * chain: the n requests are one group's, or part of one group -- one
         * WriteBatch, so all or none are durable (catalog.c NOTE 1), numbered in order (3). */
        for (size_t i = 0; i < n; i++)
                queue_push(c, &reqs[i]);
        for (;;) {
                /* c->lock held here; as in catalog_commit(), with the chain's last
                 * request as ours: it is DONE only when the whole chain is. */
                uint64_t deadline = 0;

                if (req_state(last) == REQ_QUEUED && !c->writer_busy && group_ready(c, last, &deadline))
                        group_lead(c);
                else {
                        uint32_t gen = __atomic_load_n(&c->group_end, __ATOMIC_ACQUIRE);
                        uint64_t spin = wait_spin_ns(c);

                        pthread_mutex_unlock(&c->lock);
                        group_end_wait(c, last, gen, deadline, spin);
                }
                if (req_state(last) == REQ_DONE)
                        break;
                pthread_mutex_lock(&c->lock);
        }
        /* c->lock not held; every request is DONE, with the group's one result */
        r = last->result;
        for (size_t i = 0; i < n; i++)
                assert(req_state(&reqs[i]) == REQ_DONE && reqs[i].result == r &&
                       (r < 0 || reqs[i].seq == reqs[0].seq + i));
        if (r < 0)
                sticky_error(c);
out:
        if (r == 0 && ret_first_seq)
                *ret_first_seq = reqs[0].seq;
        for (size_t i = 0; i < inited; i++)
                req_done(&reqs[i]);
        free(reqs);
        return r;
}

int catalog_meta_put(struct catalog *c, const char *key, const void *value, size_t value_len,
                     uint64_t *ret_seq)
{
        struct catalog_op op = {
                .kind = CATALOG_OP_PUT, .cf = CATALOG_CF_META,
                .key = key, .key_len = key ? strlen(key) : 0,
                .value = value, .value_len = value_len,
        };

        return catalog_commit(c, &op, 1, ret_seq);
}

void catalog_debug_fail_next_sync(struct catalog *c)
{
        if (!c)
                return;
        pthread_mutex_lock(&c->lock);
        c->fail_next_sync = !c->secondary;
        pthread_mutex_unlock(&c->lock);
}

void catalog_debug_group_end(struct catalog *c, uint64_t window_ns, void (*fn)(void *), void *arg)
{
        if (!c)
                return;
        pthread_mutex_lock(&c->lock);
        c->debug_window_ns = window_ns;
        c->debug_group_end = fn;
        c->debug_group_end_arg = arg;
        pthread_mutex_unlock(&c->lock);
}

void catalog_debug_group_write(struct catalog *c, void (*fn)(void *), void *arg)
{
        if (!c)
                return;
        pthread_mutex_lock(&c->lock);
        c->debug_group_write = fn;
        c->debug_group_write_arg = arg;
        pthread_mutex_unlock(&c->lock);
}

int catalog_debug_gathering(struct catalog *c)
{
        int r;

        pthread_mutex_lock(&c->lock);
        r = c->window_end_ns != 0;
        pthread_mutex_unlock(&c->lock);
        return r;
}
