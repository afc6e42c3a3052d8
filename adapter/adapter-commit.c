/* adapter-commit.c -- catalog commits on worker threads.  See adapter-commit.h.
 *
 * Ownership: a job belongs to the submit queue until a worker takes it, to the worker
 * while it commits, then to the done queue until the loop thread runs its callback and
 * frees it.  Both queues are guarded by cm->lock; workers wait on cm->cond.
 *
 * Order.  Workers take jobs in submission order, but commit them concurrently, so two
 * jobs may reach the store in either order.  A job submitted with after_earlier
 * (committer_submit_opts()) is held by its worker until every job submitted before it
 * has returned from the store: every earlier job has been taken already (the queue is
 * FIFO), so the worker waits until none of the tickets in cm->working is below its
 * own.  Completions go back to the loop in the order the store returned them, so
 * such a job's callback runs after those of the jobs it waited for.
 */
#include "adapter-commit.h"
#include "hist.h"

#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "killpoint.h"
#include "loop/loop.h"
#include "util.h"

struct job {
        struct job *next;
        struct catalog_op *ops;         /* every transaction's, one after the other */
        struct catalog_txn_ops *txns;   /* slices of ops */
        size_t n_txns;
        uint8_t *bytes;                 /* the copied keys and values */
        commit_done_fn done;
        void *ctx;
        int r;
        uint64_t seq;
        uint64_t ticket;                /* submission order, from 1 */
        bool after;                     /* commit_opts.after_earlier */
        uint32_t test_delay_ms;         /* committer_submit_opts() */
        int reply_fd;                   /* commit_opts.reply: not owned */
        const void *reply;
        size_t reply_len;
        ssize_t *reply_sent;
        uint32_t test_wake_delay_ms;    /* commit_opts.test_reply_wake_delay_ms */
};

struct committer {
        struct catalog *store;
        struct loop_waker *waker;
        struct loop *loop;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        pthread_cond_t drained;         /* signalled when committing drops to 0 */
        unsigned committing;            /* submitted, catalog_commit() not returned */
        struct job *todo, **todo_tail;  /* FIFO */
        struct job *done;               /* LIFO of completions; on_done() reverses it */
        uint64_t next_ticket;
        uint64_t *working;              /* per worker: the ticket it commits, 0 idle */
        pthread_t *threads;
        unsigned n_threads;
        unsigned in_flight;             /* loop thread only */
        bool stop;
        struct hist *hist;              /* set before the first submit; NULL: none */
};

static void job_free(struct job *j)
{
        free(j->ops);
        free(j->txns);
        free(j->bytes);
        free(j);
}

/* A free cm->working slot: there are as many as workers, and each worker holds one job
 * at most.  Lock held. */
static unsigned working_slot(const struct committer *cm)
{
        for (unsigned i = 0; i < cm->n_threads; i++)
                if (!cm->working[i])
                        return i;
        assert(!"more jobs in the works than workers");
        return 0;
}

/* Whether a job submitted before ticket is still in the store.  Lock held. */
static bool earlier_working(const struct committer *cm, uint64_t ticket)
{
        for (unsigned i = 0; i < cm->n_threads; i++)
                if (cm->working[i] && cm->working[i] < ticket)
                        return true;
        return false;
}

static void *worker(void *userdata)
{
        struct committer *cm = userdata;
        uint32_t wake_delay_ms;
        uint64_t t0;
        unsigned slot;

        pthread_mutex_lock(&cm->lock);
        for (;;) {
                struct job *j;

                while (!cm->todo && !cm->stop)
                        pthread_cond_wait(&cm->cond, &cm->lock);
                if (!cm->todo)
                        break;          /* stopping and nothing left */
                j = cm->todo;
                cm->todo = j->next;
                if (!cm->todo)
                        cm->todo_tail = &cm->todo;
                slot = working_slot(cm);
                cm->working[slot] = j->ticket;
                while (j->after && earlier_working(cm, j->ticket))
                        pthread_cond_wait(&cm->drained, &cm->lock);
                pthread_mutex_unlock(&cm->lock);

                if (j->test_delay_ms)
                        usleep(j->test_delay_ms * 1000u);
                KILLPOINT("catalog.commit.before_write");
                /* Several transactions: one write, all or none (catalog_commit_many). */
                t0 = cm->hist ? now_ns() : 0;
                j->r = j->n_txns == 1 ? catalog_commit(cm->store, j->txns[0].ops, j->txns[0].n_ops, &j->seq)
                                      : catalog_commit_many(cm->store, j->txns, j->n_txns, &j->seq);
                if (cm->hist)
                        hist_record(cm->hist, (now_ns() - t0) / 1000);
                if (j->r == 0)
                        KILLPOINT("catalog.commit.after_write");        /* durable, not answered */

                pthread_mutex_lock(&cm->lock);
                cm->working[slot] = 0;
                j->next = cm->done;
                __atomic_store_n(&cm->done, j, __ATOMIC_RELEASE);
                /* The answer leaves only now that the job is on `done`, and before the
                 * lock is released: a statement it may cause finds the job there
                 * (committer_poll()), and on_done() cannot run the job's callback --
                 * which lets the loop write to the socket again -- before the send
                 * has returned. */
                wake_delay_ms = 0;
                if (j->reply) {
                        *j->reply_sent = j->r == 0 ? send(j->reply_fd, j->reply, j->reply_len,
                                                          MSG_DONTWAIT | MSG_NOSIGNAL)
                                                   : -1;
                        wake_delay_ms = j->test_wake_delay_ms;  /* j is the loop's after unlock */
                }
                assert(cm->committing > 0);
                cm->committing--;
                /* committer_drain() waits for 0, an ordered job for its elders. */
                pthread_cond_broadcast(&cm->drained);
                pthread_mutex_unlock(&cm->lock);
                if (wake_delay_ms)
                        usleep(wake_delay_ms * 1000u);
                loop_waker_wake(cm->waker);
                pthread_mutex_lock(&cm->lock);
        }
        pthread_mutex_unlock(&cm->lock);
        return NULL;
}

static void on_done(struct loop *l, uint64_t count, void *userdata)
{
        struct committer *cm = userdata;
        struct job *list, *rev = NULL;

        pthread_mutex_lock(&cm->lock);
        list = cm->done;
        __atomic_store_n(&cm->done, NULL, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&cm->lock);
        /* In completion order (see Order). */
        for (struct job *j = list, *next; j; j = next) {
                next = j->next;
                j->next = rev;
                rev = j;
        }
        list = rev;
        while (list) {
                struct job *j = list;
                list = j->next;
                cm->in_flight--;
                j->done(j->ctx, j->r, j->seq);
                job_free(j);
        }
}

/* Read by the workers only under a job taken after the submit that follows this: the
 * lock of the submit orders it. */
void committer_set_hist(struct committer *cm, struct hist *h)
{
        cm->hist = h;
}

int committer_new(struct loop *l, struct catalog *store, unsigned threads, struct committer **ret)
{
        struct committer *cm;
        int r;

        cm = calloc(1, sizeof(*cm));
        if (!cm)
                return -ENOMEM;
        cm->store = store;
        cm->loop = l;
        cm->todo_tail = &cm->todo;
        pthread_mutex_init(&cm->lock, NULL);
        pthread_cond_init(&cm->cond, NULL);
        pthread_cond_init(&cm->drained, NULL);
        r = loop_waker_new(l, on_done, cm, &cm->waker);
        if (r < 0)
                goto fail;
        cm->threads = calloc(threads, sizeof(*cm->threads));
        cm->working = calloc(threads, sizeof(*cm->working));
        if (!cm->threads || !cm->working) {
                r = -ENOMEM;
                goto fail;
        }
        for (; cm->n_threads < threads; cm->n_threads++) {
                char name[16];

                snprintf(name, sizeof(name), "committer-%u", cm->n_threads % 100u);
                r = thread_start(&cm->threads[cm->n_threads], name, worker, cm);
                if (r < 0)
                        goto fail;
        }
        *ret = cm;
        return 0;
fail:
        committer_free(cm);
        return r;
}

struct committer *committer_free(struct committer *cm)
{
        if (!cm)
                return NULL;
        pthread_mutex_lock(&cm->lock);
        cm->stop = true;
        pthread_cond_broadcast(&cm->cond);
        pthread_mutex_unlock(&cm->lock);
        for (unsigned i = 0; i < cm->n_threads; i++)
                pthread_join(cm->threads[i], NULL);
        while (cm->done) {
                struct job *j = cm->done;
                cm->done = j->next;
                job_free(j);
        }
        if (cm->waker)
                loop_waker_free(cm->loop, cm->waker);
        free(cm->threads);
        free(cm->working);
        pthread_cond_destroy(&cm->cond);
        pthread_cond_destroy(&cm->drained);
        pthread_mutex_destroy(&cm->lock);
        free(cm);
        return NULL;
}

int committer_submit_opts(struct committer *cm, const struct catalog_txn_ops *txns, size_t n_txns,
                          const struct commit_opts *o, commit_done_fn done, void *ctx)
{
        struct job *j;
        size_t bytes = 0, n_ops = 0, k = 0;
        uint8_t *p;

        if (n_txns == 0)
                return -EINVAL;
        for (size_t t = 0; t < n_txns; t++) {
                n_ops += txns[t].n_ops;
                for (size_t i = 0; i < txns[t].n_ops; i++)
                        bytes += txns[t].ops[i].key_len + txns[t].ops[i].value_len;
        }
        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        j->ops = calloc(n_ops ? n_ops : 1, sizeof(*j->ops));
        j->txns = calloc(n_txns, sizeof(*j->txns));
        j->bytes = malloc(bytes ? bytes : 1);
        if (!j->ops || !j->txns || !j->bytes) {
                job_free(j);
                return -ENOMEM;
        }
        p = j->bytes;
        for (size_t t = 0; t < n_txns; t++) {
                j->txns[t] = (struct catalog_txn_ops){ .ops = &j->ops[k], .n_ops = txns[t].n_ops };
                for (size_t i = 0; i < txns[t].n_ops; i++, k++) {
                        const struct catalog_op *op = &txns[t].ops[i];

                        j->ops[k] = *op;
                        memcpy(p, op->key, op->key_len);
                        j->ops[k].key = p;
                        p += op->key_len;
                        if (op->value_len) {
                                memcpy(p, op->value, op->value_len);
                                j->ops[k].value = p;
                                p += op->value_len;
                        }
                }
        }
        j->n_txns = n_txns;
        j->done = done;
        j->ctx = ctx;
        j->after = o && o->after_earlier;
        j->test_delay_ms = o ? o->test_delay_ms : 0;
        if (o && o->reply) {
                assert(o->reply_sent && o->reply_len > 0);
                j->reply_fd = o->reply_fd;
                j->reply = o->reply;
                j->reply_len = o->reply_len;
                j->reply_sent = o->reply_sent;
                j->test_wake_delay_ms = o->test_reply_wake_delay_ms;
        }
        pthread_mutex_lock(&cm->lock);
        j->ticket = ++cm->next_ticket;
        *cm->todo_tail = j;
        cm->todo_tail = &j->next;
        cm->committing++;
        pthread_cond_signal(&cm->cond);
        pthread_mutex_unlock(&cm->lock);
        cm->in_flight++;
        return 0;
}

void committer_drain(struct committer *cm)
{
        pthread_mutex_lock(&cm->lock);
        while (cm->committing > 0)
                pthread_cond_wait(&cm->drained, &cm->lock);
        pthread_mutex_unlock(&cm->lock);
}

int committer_submit_many(struct committer *cm, const struct catalog_txn_ops *txns, size_t n_txns,
                          commit_done_fn done, void *ctx)
{
        return committer_submit_opts(cm, txns, n_txns, NULL, done, ctx);
}

int committer_submit(struct committer *cm, const struct catalog_op *ops, size_t n,
                     commit_done_fn done, void *ctx)
{
        const struct catalog_txn_ops txn = { .ops = ops, .n_ops = n };

        return committer_submit_many(cm, &txn, 1, done, ctx);
}

void committer_poll(struct committer *cm)
{
        if (__atomic_load_n(&cm->done, __ATOMIC_ACQUIRE))
                on_done(cm->loop, 0, cm);
}

unsigned committer_in_flight(const struct committer *cm)
{
        return cm->in_flight;
}
