/* controller-source.c -- see controller-source.h. */
#include "controller-source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "row/row.h"
#include "util.h"

#define SRC_COUNTER 1u
#define SRC_FILE 2u
#define FMT_TEXT 1u
#define FMT_CSV 2u

/* The most values a counter catches up with in one poll (after a long pause). */
#define COUNTER_MAX_PER_POLL 10000u

struct src_reader {
        uint32_t type, format;
        size_t n_cols;
        uint64_t offset;
        /* counter */
        uint64_t tick_ms, up_to, next_due_ms;
        /* file */
        char *path;
        int fd;
        dev_t dev;
        ino_t ino;
        char *buf, *scratch;
        size_t cap;
        struct row_datum *d;
};

int src_reader_new(const Coord__DataflowSpec *sp, uint64_t offset, struct src_reader **ret)
{
        struct src_reader *r;

        if (sp->source_type != SRC_COUNTER && sp->source_type != SRC_FILE)
                return -EINVAL;
        if (sp->source_type == SRC_FILE && (!sp->source_path || sp->source_path[0] != '/' ||
                                            (sp->source_format != FMT_TEXT && sp->source_format != FMT_CSV) ||
                                            !sp->n_column_types))
                return -EINVAL;
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        *r = (struct src_reader){
                .type = sp->source_type, .format = sp->source_format, .n_cols = sp->n_column_types,
                .offset = offset, .tick_ms = sp->source_tick_ms ? sp->source_tick_ms : 1000,
                .up_to = sp->source_up_to, .fd = -1,
        };
        if (r->type == SRC_FILE) {
                r->path = strdup(sp->source_path);
                r->d = calloc(r->n_cols + 1, sizeof(*r->d));
                if (!r->path || !r->d) {
                        src_reader_free(r);
                        return -ENOMEM;
                }
        }
        *ret = r;
        return 0;
}

struct src_reader *src_reader_free(struct src_reader *r)
{
        if (!r)
                return NULL;
        if (r->fd >= 0)
                close(r->fd);
        free(r->path);
        free(r->buf);
        free(r->scratch);
        free(r->d);
        free(r);
        return NULL;
}

uint64_t src_reader_offset(const struct src_reader *r)
{
        return r->offset;
}

static int fail(char *err, size_t errlen, int r, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int r, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
        return r;
}

static int push_row(struct eval_batch *b, const struct row_datum *d, size_t n, uint64_t ts)
{
        uint8_t small[256], *row = small;
        int64_t size = row_encoded_size(d, n);
        int r;

        if (size < 0)
                return (int)size;
        if ((size_t)size > sizeof(small) && !(row = malloc((size_t)size)))
                return -ENOMEM;
        row_encode_into(d, n, row);
        r = eval_batch_push(b, row, (size_t)size, ts, 1);
        if (row != small)
                free(row);
        return r;
}

static int counter_poll(struct src_reader *r, uint64_t now_ms, uint64_t ts, struct eval_batch *b)
{
        unsigned n = 0;

        if (!r->next_due_ms)
                r->next_due_ms = now_ms;        /* a first value at once, after a restart too */
        while (now_ms >= r->next_due_ms && (!r->up_to || r->offset < r->up_to) && n < COUNTER_MAX_PER_POLL) {
                struct row_datum d = ROW_DATUM_INT((int64_t)(r->offset + 1));
                int e = push_row(b, &d, 1, ts);

                if (e < 0)
                        return e;
                r->offset++;
                r->next_due_ms += r->tick_ms;
                n++;
        }
        if (now_ms >= r->next_due_ms + r->tick_ms)
                r->next_due_ms = now_ms;        /* behind by more than the cap: no burst later */
        return 0;
}

int src_csv_split(const char *line, size_t len, char *scratch, struct row_datum *d, size_t n)
{
        size_t i = 0, k = 0, out = 0;

        for (;;) {
                if (i < len && line[i] == '"') {
                        size_t start = out;

                        for (i++;; i++) {
                                if (i >= len)
                                        return -EBADMSG;        /* an open quote */
                                if (line[i] == '"') {
                                        if (i + 1 < len && line[i + 1] == '"') {
                                                scratch[out++] = '"';
                                                i++;
                                                continue;
                                        }
                                        i++;
                                        break;
                                }
                                scratch[out++] = line[i];
                        }
                        if (i < len && line[i] != ',')
                                return -EBADMSG;
                        if (k < n)
                                d[k] = ROW_DATUM_TEXT(scratch + start, (uint32_t)(out - start));
                } else {
                        size_t start = i;

                        while (i < len && line[i] != ',')
                                i++;
                        if (k < n)
                                d[k] = i == start ? ROW_DATUM_NULL
                                                  : ROW_DATUM_TEXT(line + start, (uint32_t)(i - start));
                }
                k++;
                if (i >= len)
                        return (int)(k > (size_t)INT32_MAX ? INT32_MAX : k);
                i++;    /* the comma */
        }
}

/* (Re)open the file if needed; its size into *size. */
static int file_stat(struct src_reader *r, off_t *size, char *err, size_t errlen)
{
        struct stat st;

        if (stat(r->path, &st) < 0)
                return fail(err, errlen, -errno, "source file \"%s\": %s", r->path, strerror(errno));
        if (r->fd >= 0 && (st.st_dev != r->dev || st.st_ino != r->ino))
                return fail(err, errlen, -ESTALE, "source file \"%s\" was replaced (read up to byte %llu)",
                            r->path, (unsigned long long)r->offset);
        if ((uint64_t)st.st_size < r->offset)
                return fail(err, errlen, -ESTALE, "source file \"%s\" shrank to %lld bytes below the %llu read",
                            r->path, (long long)st.st_size, (unsigned long long)r->offset);
        if (r->fd < 0) {
                r->fd = open(r->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (r->fd < 0)
                        return fail(err, errlen, -errno, "source file \"%s\": %s", r->path, strerror(errno));
                r->dev = st.st_dev;
                r->ino = st.st_ino;
        }
        *size = st.st_size;
        return 0;
}

static int file_poll(struct src_reader *r, uint64_t ts, size_t max_bytes, struct eval_batch *b,
                     char *err, size_t errlen)
{
        off_t size = 0;
        size_t want, got = 0, used = 0, lines = 0, mark = b->n;
        int e = file_stat(r, &size, err, errlen);

        if (e < 0)
                return e;
        if ((uint64_t)size == r->offset)
                return 0;
        want = (uint64_t)size - r->offset > max_bytes ? max_bytes : (size_t)((uint64_t)size - r->offset);
        if (want > r->cap) {
                char *p = realloc(r->buf, want), *q = realloc(r->scratch, want);

                if (p)
                        r->buf = p;
                if (q)
                        r->scratch = q;
                if (!p || !q)
                        return -ENOMEM;
                r->cap = want;
        }
        while (got < want) {
                ssize_t n = pread(r->fd, r->buf + got, want - got, (off_t)(r->offset + got));

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return fail(err, errlen, -errno, "source file \"%s\": %s", r->path, strerror(errno));
                if (n == 0)
                        break;
                got += (size_t)n;
        }
        /* Complete lines only; the rest waits for its '\n'. */
        for (size_t i = 0; i < got; i++) {
                const char *line = r->buf + used;
                size_t len;

                if (r->buf[i] != '\n')
                        continue;
                len = i - used;
                if (len && line[len - 1] == '\r')
                        len--;
                if (r->format == FMT_TEXT) {
                        r->d[0] = ROW_DATUM_TEXT(line, (uint32_t)len);
                        e = push_row(b, r->d, 1, ts);
                } else {
                        int k = src_csv_split(line, len, r->scratch, r->d, r->n_cols);

                        if (k != (int)r->n_cols) {
                                e = fail(err, errlen, -EBADMSG,
                                         "source file \"%s\": the line at byte %llu %s", r->path,
                                         (unsigned long long)(r->offset + used),
                                         k < 0 ? "is not valid CSV" : "has the wrong number of fields");
                                if (lines)
                                        break;  /* what came before it goes in */
                                b->n = mark;
                                return e;
                        }
                        e = push_row(b, r->d, r->n_cols, ts);
                }
                if (e < 0) {
                        b->n = mark;
                        return e;
                }
                used = i + 1;
                lines++;
        }
        r->offset += used;
        return 0;
}

int src_reader_poll(struct src_reader *r, uint64_t now_ms, uint64_t ts, size_t max_bytes,
                    struct eval_batch *b, char *err, size_t errlen)
{
        if (errlen)
                err[0] = '\0';
        if (r->type == SRC_COUNTER)
                return counter_poll(r, now_ms, ts, b);
        return file_poll(r, ts, max_bytes, b, err, errlen);
}
