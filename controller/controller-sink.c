/* controller-sink.c -- see controller-sink.h. */
#include "controller-sink.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "row/row.h"
#include "util.h"

struct sink_file {
        int fd;
        uint64_t length;        /* where the next append goes */
};

int sink_file_open(const char *path, uint64_t length, struct sink_file **ret)
{
        struct sink_file *f;
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);

        if (fd < 0)
                return -errno;
        /* Lines past the durable length were written by a life that died before it
         * recorded them: they are written again from the progress on. */
        if (ftruncate(fd, (off_t)length) < 0 || lseek(fd, (off_t)length, SEEK_SET) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        f = malloc(sizeof(*f));
        if (!f) {
                close(fd);
                return -ENOMEM;
        }
        *f = (struct sink_file){ .fd = fd, .length = length };
        *ret = f;
        return 0;
}

struct sink_file *sink_file_close(struct sink_file *f)
{
        if (f) {
                close(f->fd);
                free(f);
        }
        return NULL;
}

uint64_t sink_file_length(const struct sink_file *f)
{
        return f->length;
}

struct buf {
        char *p;
        size_t n, cap;
};

static int buf_put(struct buf *b, const char *s, size_t len)
{
        if (GROW_ARRAY(b->p, b->cap, b->n + len) < 0)
                return -ENOMEM;
        memcpy(b->p + b->n, s, len);
        b->n += len;
        return 0;
}

/* A text in COPY's text format. */
static int buf_text(struct buf *b, const char *s, size_t len)
{
        for (size_t i = 0; i < len; i++) {
                const char *esc = s[i] == '\\' ? "\\\\" : s[i] == '\t' ? "\\t" : s[i] == '\n' ? "\\n"
                                  : s[i] == '\r' ? "\\r" : NULL;
                int r = esc ? buf_put(b, esc, 2) : buf_put(b, &s[i], 1);

                if (r < 0)
                        return r;
        }
        return 0;
}

/* One update's line into b. */
static int line(struct buf *b, const struct eval_update *u)
{
        struct row_datum d[64], *dp = d;
        char num[48];
        int cols, n, r;

        cols = row_decode(u->row, u->len, d, ELEMENTSOF(d));
        if (cols == -E2BIG) {
                cols = row_validate(u->row, u->len);
                if (cols < 0)
                        return cols;
                dp = calloc((size_t)cols, sizeof(*dp));
                if (!dp)
                        return -ENOMEM;
                cols = row_decode(u->row, u->len, dp, (size_t)cols);
        }
        n = cols;
        if (n < 0)
                goto out;
        r = snprintf(num, sizeof(num), "%" PRIu64 "\t%" PRId64, u->time, u->diff);
        n = buf_put(b, num, (size_t)r);
        for (int c = 0; n >= 0 && c < cols; c++) {
                n = buf_put(b, "\t", 1);
                if (n < 0)
                        break;
                switch (dp[c].kind) {
                case ROW_KIND_NULL:
                        n = buf_put(b, "\\N", 2);
                        break;
                case ROW_KIND_BOOL:
                        n = buf_put(b, dp[c].b ? "t" : "f", 1);
                        break;
                case ROW_KIND_INT:
                        r = snprintf(num, sizeof(num), "%" PRId64, dp[c].i);
                        n = buf_put(b, num, (size_t)r);
                        break;
                case ROW_KIND_NUMERIC: {
                        char scratch[ROW_TEXT_SCRATCH];
                        size_t len = row_numeric_format(&dp[c], scratch);

                        n = buf_put(b, scratch, len);
                        break;
                }
                default:
                        n = buf_text(b, dp[c].text.ptr, dp[c].text.len);
                        break;
                }
        }
        if (n >= 0)
                n = buf_put(b, "\n", 1);
out:
        if (dp != d)
                free(dp);
        return n < 0 ? n : 0;
}

/* By time, then by row bytes: a deterministic order of an append's lines. */
static int update_cmp(const void *x, const void *y)
{
        const struct eval_update *a = *(const struct eval_update *const *)x;
        const struct eval_update *b = *(const struct eval_update *const *)y;
        int c;

        if (a->time != b->time)
                return a->time < b->time ? -1 : 1;
        c = memcmp(a->row, b->row, a->len < b->len ? a->len : b->len);
        if (c)
                return c;
        return a->len < b->len ? -1 : a->len > b->len;
}

int sink_file_append(struct sink_file *f, const struct eval_batch *b, uint64_t *ret_length)
{
        _cleanup_free_ const struct eval_update **v = NULL;
        struct buf out = { 0 };
        size_t off = 0;
        int r = 0;

        if (!b->n) {
                *ret_length = f->length;
                return 0;
        }
        v = malloc(b->n * sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < b->n; i++)
                v[i] = &b->updates[i];
        qsort(v, b->n, sizeof(*v), update_cmp);
        for (size_t i = 0; r >= 0 && i < b->n; i++)
                r = line(&out, v[i]);
        while (r >= 0 && off < out.n) {
                ssize_t w = write(f->fd, out.p + off, out.n - off);

                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        r = -errno;
                else
                        off += (size_t)w;
        }
        /* Fail-stop: after a failed fdatasync nothing says what reached the disk. */
        if (r >= 0 && fdatasync(f->fd) < 0)
                r = -errno;
        free(out.p);
        if (r < 0) {
                /* Back to the last good length for whoever writes next (the caller
                 * reopens anyway: it must not trust this file's tail). */
                (void)lseek(f->fd, (off_t)f->length, SEEK_SET);
                return r;
        }
        f->length += out.n;
        *ret_length = f->length;
        return 0;
}
