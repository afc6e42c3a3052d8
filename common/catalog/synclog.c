/* synclog.c -- a redo log in preallocated segments (contract and format: synclog.h).
 *
 * Threads.  The owner's one appending thread at a time owns the writer state (cur,
 * cur_segno, off, err, the segments' segno); the background thread runs store_sync()
 * when asked.  They share sync_target, synced, thread_err and stop under lock.
 *
 * Invariants (checked in synclog_check()):
 *   - the segment being written is segs[cur], its records carry cur_segno, and it has
 *     off bytes of them;
 *   - every other segment holds records of an earlier use (segno < cur_segno) or none;
 *   - synced <= sync_target < cur_segno: a sync is asked for a segment only once it
 *     is left, so the one being written is never taken for durable elsewhere;
 *   - an append overwrites segment k's previous use s only when synced >= s (I7: the
 *     last copy of an acknowledged commit is never destroyed before the store has one).
 */
#include "synclog.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#include "probes.h"
#include "util.h"

#define SYNCLOG_MAGIC 0x474c5343u               /* "CSLG" little-endian */
/* The largest segno a record may carry.  A log counts its segment uses from 1 and the
 * next use is the largest found + 1, which must not wrap to 0 ("no record").  A larger
 * segno, even under a valid crc, is damage and reads as no record.  Nothing is written
 * under a larger one either: once a use numbered this one is found or left, appends
 * fail with -EBADMSG (after damage only: a real log never counts that far). */
#define SYNCLOG_SEGNO_MAX (UINT64_MAX / 2)
#define FILL_CHUNK (1u << 20)

struct segment {
        int fd;
        uint64_t segno;                         /* of the records it holds; 0: none */
};

struct synclog {
        char *dir;
        size_t seg_size;
        unsigned n_seg;
        struct segment *segs;
        synclog_store_sync_fn store_sync;
        void *userdata;

        /* The appender's (see Threads). */
        bool ready;                             /* synclog_replay() has run */
        unsigned cur;
        uint64_t cur_segno;
        size_t off;
        size_t pending;                         /* written at off, not synced yet */
        int err;                                /* sticky */

        pthread_mutex_t lock;
        pthread_cond_t cond;
        /* Under lock: */
        uint64_t sync_target;                   /* segments <= this asked to be durable */
        uint64_t synced;                        /* segments <= this durable in the store */
        int thread_err;
        bool stop;
        struct synclog_stats stats;

        pthread_t thread;
        bool thread_started;
};

static void le64_put(uint8_t *p, uint64_t v)
{
        le32_put(p, (uint32_t)v);
        le32_put(p + 4, (uint32_t)(v >> 32));
}

static uint64_t le64_get(const uint8_t *p)
{
        return (uint64_t)le32_get(p) | (uint64_t)le32_get(p + 4) << 32;
}

/* zlib's crc32: a maintained, table-driven (and on x86 folded) implementation. */
static uint32_t record_crc(const uint8_t *hdr, const void *payload, size_t len)
{
        uLong crc = crc32(0L, hdr + 8, SYNCLOG_HEADER_SIZE - 8);

        while (len > 0) {
                uInt chunk = len > (1u << 30) ? (1u << 30) : (uInt)len;

                crc = crc32(crc, payload, chunk);
                payload = (const uint8_t *)payload + chunk;
                len -= chunk;
        }
        return (uint32_t)crc;
}

#ifndef NDEBUG
static bool synclog_check(struct synclog *l)
{
        assert(l->cur < l->n_seg);
        assert(l->off <= l->seg_size);
        assert(l->segs[l->cur].segno == l->cur_segno);
        for (unsigned i = 0; i < l->n_seg; i++)
                assert(i == l->cur || l->segs[i].segno < l->cur_segno);
        pthread_mutex_lock(&l->lock);
        assert(l->synced <= l->sync_target && l->sync_target < l->cur_segno);
        pthread_mutex_unlock(&l->lock);
        return true;
}
#endif

static void *sync_thread(void *userdata)
{
        struct synclog *l = userdata;

        pthread_mutex_lock(&l->lock);
        for (;;) {
                uint64_t target;
                int r;

                while (!l->stop && l->thread_err == 0 && l->sync_target <= l->synced)
                        pthread_cond_wait(&l->cond, &l->lock);
                if (l->stop || l->thread_err < 0)
                        break;
                target = l->sync_target;
                pthread_mutex_unlock(&l->lock);
                r = l->store_sync(l->userdata);
                pthread_mutex_lock(&l->lock);
                if (r < 0)
                        l->thread_err = r;
                else {
                        l->synced = target;
                        l->stats.store_syncs++;
                }
                pthread_cond_broadcast(&l->cond);
        }
        pthread_mutex_unlock(&l->lock);
        return NULL;
}

/* Open segment i, creating or extending it with written zeros to seg_size. */
static int segment_open(struct synclog *l, unsigned i, bool *ret_created)
{
        _cleanup_free_ char *path = NULL, *zeros = NULL;
        struct stat st;
        int fd;

        if (asprintf(&path, "%s/seg-%u", l->dir, i) < 0)
                return -ENOMEM;
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        l->segs[i].fd = fd;
        if (fstat(fd, &st) < 0)
                return -errno;
        if ((uint64_t)st.st_size >= l->seg_size)
                return 0;
        zeros = calloc(1, FILL_CHUNK);
        if (!zeros)
                return -ENOMEM;
        for (off_t at = st.st_size; (uint64_t)at < l->seg_size;) {
                size_t want = l->seg_size - (size_t)at < FILL_CHUNK ? l->seg_size - (size_t)at
                                                                   : FILL_CHUNK;
                ssize_t n = pwrite(fd, zeros, want, at);

                if (n < 0)
                        return -errno;
                at += n;
        }
        if (fdatasync(fd) < 0)
                return -errno;
        *ret_created = true;
        return 0;
}

int synclog_open(const char *dir, size_t segment_size, unsigned n_segments,
                 synclog_store_sync_fn store_sync, void *userdata, struct synclog **ret)
{
        struct synclog *l;
        bool created = false;
        int r;

        if (!dir || !store_sync || !ret || n_segments < 2 || segment_size < (64u << 10) ||
            segment_size % 4096 != 0)
                return -EINVAL;
        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        pthread_mutex_init(&l->lock, NULL);
        pthread_cond_init(&l->cond, NULL);
        l->seg_size = segment_size;
        l->n_seg = n_segments;
        l->store_sync = store_sync;
        l->userdata = userdata;
        l->dir = strdup(dir);
        l->segs = calloc(n_segments, sizeof(*l->segs));
        if (!l->dir || !l->segs) {
                r = -ENOMEM;
                goto fail;
        }
        for (unsigned i = 0; i < n_segments; i++)
                l->segs[i].fd = -EBADF;
        if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
                r = -errno;
                goto fail;
        }
        for (unsigned i = 0; i < n_segments; i++) {
                r = segment_open(l, i, &created);
                if (r < 0)
                        goto fail;
        }
        if (created) {
                /* The new names must survive a crash too, or a later open would
                 * create them again over acknowledged records. */
                _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                if (dfd < 0 || fsync(dfd) < 0) {
                        r = -errno;
                        goto fail;
                }
        }
        r = thread_start(&l->thread, "synclog", sync_thread, l);
        if (r < 0)
                goto fail;
        l->thread_started = true;
        *ret = l;
        return 0;
fail:
        synclog_close(l);
        return r;
}

/* A record header at p with at most avail bytes from p to the segment's end: its
 * payload length, or -1 if it is no record of segno (want 0: of any). */
static ssize_t record_check(const uint8_t *p, size_t avail, uint64_t want_segno,
                            uint64_t *ret_segno)
{
        uint64_t segno;
        uint32_t len;

        if (avail < SYNCLOG_HEADER_SIZE || le32_get(p) != SYNCLOG_MAGIC)
                return -1;
        segno = le64_get(p + 8);
        len = le32_get(p + 28);
        if (segno == 0 || segno > SYNCLOG_SEGNO_MAX || (want_segno && segno != want_segno) ||
            len > avail - SYNCLOG_HEADER_SIZE || le32_get(p + 24) == 0)
                return -1;
        if (record_crc(p, p + SYNCLOG_HEADER_SIZE, len) != le32_get(p + 4))
                return -1;
        *ret_segno = segno;
        return len;
}

/* Walk segment i's records (buf: its contents); fn NULL only finds its segno. */
static int segment_walk(struct synclog *l, const uint8_t *buf, uint64_t *ret_segno,
                        synclog_replay_fn fn, void *userdata)
{
        uint64_t segno = 0;
        size_t off = 0;

        for (;;) {
                uint64_t s;
                ssize_t len = record_check(buf + off, l->seg_size - off, segno, &s);
                int r;

                if (len < 0)
                        break;
                segno = s;
                if (!fn)
                        break;
                COORD_CATALOG_SYNCLOG_REPLAY(le64_get(buf + off + 16), le32_get(buf + off + 24));
                r = fn(le64_get(buf + off + 16), le32_get(buf + off + 24),
                       buf + off + SYNCLOG_HEADER_SIZE, (size_t)len, userdata);
                if (r < 0)
                        return r;
                off += SYNCLOG_HEADER_SIZE + (size_t)len;
        }
        *ret_segno = segno;
        return 0;
}

static int pread_all(int fd, uint8_t *buf, size_t len, size_t at)
{
        for (size_t done = 0; done < len;) {
                ssize_t n = pread(fd, buf + done, len - done, (off_t)(at + done));

                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -EIO;    /* shorter than segment_open() made it */
                done += (size_t)n;
        }
        return 0;
}

/* The use (segno) of segment i, from its first record alone; 0 when it has none. */
static int segment_first_segno(struct synclog *l, unsigned i, uint8_t *buf, uint64_t *ret)
{
        uint32_t len;
        int r;

        *ret = 0;
        r = pread_all(l->segs[i].fd, buf, SYNCLOG_HEADER_SIZE, 0);
        if (r < 0)
                return r;
        len = le32_get(buf + 28);
        if (le32_get(buf) != SYNCLOG_MAGIC || len > l->seg_size - SYNCLOG_HEADER_SIZE)
                return 0;
        r = pread_all(l->segs[i].fd, buf + SYNCLOG_HEADER_SIZE, len, SYNCLOG_HEADER_SIZE);
        if (r < 0)
                return r;
        return segment_walk(l, buf, ret, NULL, NULL);
}

/* The largest segno of any whole record (magic, valid crc) anywhere in segment i,
 * whichever use wrote it; 0 if none. */
static int segment_max_segno(struct synclog *l, unsigned i, uint8_t *buf, uint64_t *ret)
{
        const uint8_t *p = buf, *end = buf + l->seg_size;
        uint64_t max = 0, s;
        int r;

        r = pread_all(l->segs[i].fd, buf, l->seg_size, 0);
        if (r < 0)
                return r;
        while ((p = memmem(p, (size_t)(end - p), "CSLG", 4))) {        /* SYNCLOG_MAGIC */
                if (record_check(p, (size_t)(end - p), 0, &s) >= 0 && s > max)
                        max = s;
                p++;
        }
        *ret = max;
        return 0;
}

int synclog_replay(struct synclog *l, synclog_replay_fn fn, void *userdata)
{
        _cleanup_free_ uint8_t *buf = NULL;
        uint64_t max_segno = 0, done = 0, s;
        unsigned oldest = 0;
        int r;

        if (!l || !fn || l->ready)
                return -EINVAL;
        buf = malloc(l->seg_size);
        if (!buf)
                return -ENOMEM;
        /* A segment's use is its first record's: only that record is read here. */
        for (unsigned i = 0; i < l->n_seg; i++) {
                r = segment_first_segno(l, i, buf, &l->segs[i].segno);
                if (r < 0)
                        return r;
                if (l->segs[i].segno > max_segno)
                        max_segno = l->segs[i].segno;
        }
        /* The next use is numbered above every record still on disk, not only above the
         * uses found: behind a damaged first record, or behind a use's last record,
         * records of older uses remain, and one numbered as the next use would be read
         * as part of it when its records end where that one begins. */
        for (unsigned i = 0; i < l->n_seg; i++) {
                r = segment_max_segno(l, i, buf, &s);
                if (r < 0)
                        return r;
                if (s > max_segno)
                        max_segno = s;
        }

        /* Oldest use first: records are handed over in the order they were written. */
        for (;;) {
                uint64_t next = UINT64_MAX, segno;
                unsigned at = 0;

                for (unsigned i = 0; i < l->n_seg; i++)
                        if (l->segs[i].segno > done && l->segs[i].segno < next) {
                                next = l->segs[i].segno;
                                at = i;
                        }
                if (next == UINT64_MAX)
                        break;
                r = pread_all(l->segs[at].fd, buf, l->seg_size, 0);
                if (r < 0)
                        return r;
                r = segment_walk(l, buf, &segno, fn, userdata);
                if (r < 0)
                        return r;
                assert(segno == next);
                done = next;
        }
        /* Everything replayed is in the store now; make it durable there, and every
         * segment may be reused. */
        r = l->store_sync(l->userdata);
        if (r < 0)
                return r;
        if (max_segno == SYNCLOG_SEGNO_MAX) {
                /* Everything was replayed, but no use may follow. */
                l->err = -EBADMSG;
                l->ready = true;
                return 0;
        }
        for (unsigned i = 0; i < l->n_seg; i++)
                if (l->segs[i].segno < l->segs[oldest].segno)
                        oldest = i;
        l->cur = oldest;
        l->cur_segno = max_segno + 1;
        l->segs[oldest].segno = l->cur_segno;
        l->off = 0;
        pthread_mutex_lock(&l->lock);
        l->sync_target = l->synced = max_segno;
        pthread_mutex_unlock(&l->lock);
        l->ready = true;
        assert(synclog_check(l));
        return 0;
}

/* Leave segment cur for the next one: ask for cur to be made durable in the store, and
 * wait until the next one's previous use is. */
static int segment_switch(struct synclog *l)
{
        unsigned next = (l->cur + 1) % l->n_seg;
        uint64_t old = l->segs[next].segno, t0 = 0;
        int r;

        pthread_mutex_lock(&l->lock);
        l->sync_target = l->cur_segno;
        pthread_cond_broadcast(&l->cond);
        if (old > l->synced && l->thread_err == 0) {
                l->stats.waits++;
                t0 = now_ns();
        }
        while (old > l->synced && l->thread_err == 0)
                pthread_cond_wait(&l->cond, &l->lock);
        r = l->thread_err;
        l->stats.switches++;
        pthread_mutex_unlock(&l->lock);
        if (r < 0)
                return r;
        if (l->cur_segno == SYNCLOG_SEGNO_MAX)
                return -EBADMSG;
        l->cur = next;
        l->cur_segno++;
        l->segs[next].segno = l->cur_segno;
        l->off = 0;
        COORD_CATALOG_SYNCLOG_SWITCH(l->cur_segno, t0 ? (now_ns() - t0) / 1000 : 0);
        assert(synclog_check(l));
        return 0;
}

size_t synclog_max_payload(const struct synclog *l)
{
        return l->seg_size - SYNCLOG_HEADER_SIZE;
}

int synclog_write(struct synclog *l, uint64_t first_seq, uint32_t n, const void *payload,
                  size_t len)
{
        uint8_t hdr[SYNCLOG_HEADER_SIZE];
        struct iovec iov[2];
        ssize_t w;
        int r;

        if (!l || n == 0 || (!payload && len > 0))
                return -EINVAL;
        if (!l->ready)
                return -EAGAIN;
        if (l->err < 0)
                return l->err;
        assert(l->pending == 0);        /* synclog_sync() first */
        if (len > synclog_max_payload(l))
                return -E2BIG;
        if (l->off + SYNCLOG_HEADER_SIZE + len > l->seg_size) {
                r = segment_switch(l);
                if (r < 0)
                        return l->err = r;
        }
        le32_put(hdr, SYNCLOG_MAGIC);
        le64_put(hdr + 8, l->cur_segno);
        le64_put(hdr + 16, first_seq);
        le32_put(hdr + 24, n);
        le32_put(hdr + 28, (uint32_t)len);
        le32_put(hdr + 4, record_crc(hdr, payload, len));
        iov[0] = (struct iovec){ .iov_base = hdr, .iov_len = sizeof(hdr) };
        iov[1] = (struct iovec){ .iov_base = (void *)payload, .iov_len = len };
        w = pwritev(l->segs[l->cur].fd, iov, 2, (off_t)l->off);
        if (w < 0)
                return l->err = -errno;
        if ((size_t)w != sizeof(hdr) + len)
                return l->err = -EIO;
        /* Start the write-back now, so that the device writes the record while the
         * caller does its part; synclog_sync() waits for it.  Only a head start: its
         * failure shows again at the fdatasync. */
        (void)sync_file_range(l->segs[l->cur].fd, (off_t)l->off, w, SYNC_FILE_RANGE_WRITE);
        l->pending = (size_t)w;
        return 0;
}

int synclog_sync(struct synclog *l)
{
        if (!l || l->pending == 0)
                return -EINVAL;
        if (l->err < 0)
                return l->err;
        /* fdatasync, not fsync: the blocks and the size are already on disk, so there
         * is no metadata to write -- the point of this log. */
        if (fdatasync(l->segs[l->cur].fd) < 0)
                return l->err = errno == ENOSPC ? -ENOSPC : -EIO;
        l->off += l->pending;
        pthread_mutex_lock(&l->lock);
        l->stats.appends++;
        l->stats.bytes += l->pending;
        pthread_mutex_unlock(&l->lock);
        l->pending = 0;
        return 0;
}

int synclog_append(struct synclog *l, uint64_t first_seq, uint32_t n, const void *payload,
                   size_t len)
{
        int r = synclog_write(l, first_seq, n, payload, len);

        return r < 0 ? r : synclog_sync(l);
}

void synclog_get_stats(struct synclog *l, struct synclog_stats *ret)
{
        pthread_mutex_lock(&l->lock);
        *ret = l->stats;
        pthread_mutex_unlock(&l->lock);
}

struct synclog *synclog_close(struct synclog *l)
{
        if (!l)
                return NULL;
        if (l->thread_started) {
                pthread_mutex_lock(&l->lock);
                l->stop = true;
                pthread_cond_broadcast(&l->cond);
                pthread_mutex_unlock(&l->lock);
                pthread_join(l->thread, NULL);
        }
        if (l->segs)
                for (unsigned i = 0; i < l->n_seg; i++)
                        if (l->segs[i].fd >= 0)
                                close(l->segs[i].fd);
        free(l->segs);
        free(l->dir);
        pthread_cond_destroy(&l->cond);
        pthread_mutex_destroy(&l->lock);
        free(l);
        return NULL;
}
