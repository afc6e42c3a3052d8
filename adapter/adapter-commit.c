/* adapter-commit.c -- catalog commits on worker threads.  See adapter-commit.h.
 *
 * Ownership: a job belongs to the submit queue until a worker takes it, to the worker
 * while it commits, then to the done queue until the loop thread runs its callback and
 * frees it.  Both queues are guarded by cm->lock; workers wait on cm->cond.
 */
#include "adapter-commit.h"

#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "loop.h"
#include "util.h"

struct job {
        struct job *next;
        struct catalog_op *ops;
        size_t n;
        uint8_t *bytes;                 /* the copied keys and values */
        commit_done_fn done;
        void *ctx;
        int r;
        uint64_t seq;
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
        struct job *done;               /* LIFO; order does not matter */
        pthread_t *threads;
        unsigned n_threads;
        unsigned in_flight;             /* loop thread only */
        bool stop;
};

static void job_free(struct job *j)
{
        free(j->ops);
        free(j->bytes);
        free(j);
}

static void *worker(void *userdata)
{
        struct committer *cm = userdata;

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
                pthread_mutex_unlock(&cm->lock);

                j->r = catalog_commit(cm->store, j->ops, j->n, &j->seq);

                pthread_mutex_lock(&cm->lock);
                j->next = cm->done;
                cm->done = j;
                assert(cm->committing > 0);
                if (--cm->committing == 0)
                        pthread_cond_broadcast(&cm->drained);
                pthread_mutex_unlock(&cm->lock);
                loop_waker_wake(cm->waker);
                pthread_mutex_lock(&cm->lock);
        }
        pthread_mutex_unlock(&cm->lock);
        return NULL;
}

static void on_done(struct loop *l, uint64_t count, void *userdata)
{
        struct committer *cm = userdata;
        struct job *list;

        pthread_mutex_lock(&cm->lock);
        list = cm->done;
        cm->done = NULL;
        pthread_mutex_unlock(&cm->lock);
        while (list) {
                struct job *j = list;
                list = j->next;
                cm->in_flight--;
                j->done(j->ctx, j->r, j->seq);
                job_free(j);
        }
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
        if (!cm->threads) {
                r = -ENOMEM;
                goto fail;
        }
        for (; cm->n_threads < threads; cm->n_threads++) {
                r = -pthread_create(&cm->threads[cm->n_threads], NULL, worker, cm);
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
        pthread_cond_destroy(&cm->cond);
        pthread_cond_destroy(&cm->drained);
        pthread_mutex_destroy(&cm->lock);
        free(cm);
        return NULL;
}

int committer_submit(struct committer *cm, const struct catalog_op *ops, size_t n,
                     commit_done_fn done, void *ctx)
{
        struct job *j;
        size_t bytes = 0;
        uint8_t *p;

        for (size_t i = 0; i < n; i++)
                bytes += ops[i].key_len + ops[i].value_len;
        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        j->ops = calloc(n ? n : 1, sizeof(*j->ops));
        j->bytes = malloc(bytes ? bytes : 1);
        if (!j->ops || !j->bytes) {
                job_free(j);
                return -ENOMEM;
        }
        p = j->bytes;
        for (size_t i = 0; i < n; i++) {
                j->ops[i] = ops[i];
                memcpy(p, ops[i].key, ops[i].key_len);
                j->ops[i].key = p;
                p += ops[i].key_len;
                if (ops[i].value_len) {
                        memcpy(p, ops[i].value, ops[i].value_len);
                        j->ops[i].value = p;
                        p += ops[i].value_len;
                }
        }
        j->n = n;
        j->done = done;
        j->ctx = ctx;
        pthread_mutex_lock(&cm->lock);
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

unsigned committer_in_flight(const struct committer *cm)
{
        return cm->in_flight;
}
