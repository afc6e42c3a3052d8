/* adapter-commit.h -- catalog commits off the loop thread, so concurrent DDL shares one
 * fsync.
 *
 * The catalog store groups the commits of concurrent callers into one synced batch
 * (common/catalog).  The adapter's loop is one thread, so on its own it would commit
 * one transaction per fsync.  The committer runs a few threads that call
 * catalog_commit(): transactions submitted while a sync is in progress queue in the
 * store and go out together in the next one.  Completions come back to the loop thread
 * through a loop_waker, in the order the store returned them.
 *
 * submit() copies the ops; done runs in the loop thread with the result and the
 * transaction's sequence number.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct loop;
struct catalog;
struct catalog_op;
struct committer;

typedef void (*commit_done_fn)(void *ctx, int r, uint64_t seq);

int committer_new(struct loop *l, struct catalog *store, unsigned threads, struct committer **ret);
/* Record each catalog commit's latency on its committer thread (the write and the
 * sync of its group, as the committing statement waits for them) in h; before the
 * first submit. */
struct hist;
void committer_set_hist(struct committer *cm, struct hist *h);
/* Waits for the transactions in progress (their done callbacks do not run). */
struct committer *committer_free(struct committer *cm);
int committer_submit(struct committer *cm, const struct catalog_op *ops, size_t n,
                     commit_done_fn done, void *ctx);
/* Blocks until every transaction submitted so far is committed or failed (their done
 * callbacks still run later, in the loop).  For the rare caller that must order a
 * commit of its own after them (adapter-oracle.c note 5). */
void committer_drain(struct committer *cm);
/* n_txns transactions in this order, in one write: all durable or none
 * (catalog_commit_many(), at most 256); done gets the first one's sequence number, the
 * others follow it. */
struct catalog_txn_ops;
int committer_submit_many(struct committer *cm, const struct catalog_txn_ops *txns, size_t n_txns,
                          commit_done_fn done, void *ctx);
/* committer_submit_many() with options:
 *   after_earlier  the job goes to the store only once every job submitted before it
 *                  has returned from it (adapter-commit.c, Order): for a transaction
 *                  that must follow one already submitted (a DROP of what a publication
 *                  in flight moves, acat_txn_after_publication());
 *   reply          bytes for the client (the statement's answer, adapter-pgwire.c note
 *                  (7)): once the commit has succeeded, the worker sends them to
 *                  reply_fd itself, send(2, MSG_DONTWAIT) -- after the job is on the
 *                  done queue, under its lock, so that committer_poll() in the loop
 *                  sees the job before any statement the answer may cause -- and
 *                  stores what send() returned in *reply_sent (-1 when the commit
 *                  failed: nothing was sent); both must live until done runs;
 *   test_delay_ms  TEST ONLY: its worker sleeps this long before the commit;
 *   test_reply_wake_delay_ms  TEST ONLY: after sending the reply, its worker sleeps this
 *                  long before it wakes the loop (only committer_poll() can then run
 *                  the callback in time for a statement the reply caused). */
struct commit_opts {
        bool after_earlier;
        int reply_fd;
        const void *reply;
        size_t reply_len;
        ssize_t *reply_sent;
        uint32_t test_delay_ms;
        uint32_t test_reply_wake_delay_ms;
};
int committer_submit_opts(struct committer *cm, const struct catalog_txn_ops *txns, size_t n_txns,
                          const struct commit_opts *o, commit_done_fn done, void *ctx);
/* Run now, in the loop, the done callbacks of the jobs back from the store.  Called
 * before the loop acts on a client's statement: a client answered by a worker
 * directly (commit_opts.reply) may already have told another client, whose statement
 * must see the commit's effects. */
void committer_poll(struct committer *cm);
/* Transactions submitted and not completed yet. */
unsigned committer_in_flight(const struct committer *cm);
