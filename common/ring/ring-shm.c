/* ring-shm.c -- names, objects, ownership and futexes shared by the rings (ring-shm.h). */
#include "ring-shm.h"

#include <assert.h>
#include <errno.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

int ring_shm_name_check(const char *name)
{
        size_t len;

        if (!name || name[0] != '/' || name[1] == '\0' || strchr(name + 1, '/'))
                return -EINVAL;
        len = strlen(name + 1);
        if (len + strlen(RING_SHM_WAIT_SUFFIX) > NAME_MAX)
                return -ENAMETOOLONG;
        return 0;
}

void ring_shm_wait_name(const char *name, char buf[static NAME_MAX + 2])
{
        int n = snprintf(buf, NAME_MAX + 2, "%s%s", name, RING_SHM_WAIT_SUFFIX);

        assert(n > 0 && n < NAME_MAX + 2);
        (void)n;
}

int ring_shm_name_for(const char *instance, const char *what, char *buf, size_t size)
{
        int n;

        if (!instance || !*instance || !buf)
                return -EINVAL;
        for (const char *p = instance; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                      (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_'))
                        return -EINVAL;
        n = snprintf(buf, size, "/coord-%s-%s", instance, what);
        if (n < 0)
                return -EINVAL;
        if ((size_t)n >= size)
                return -ENAMETOOLONG;
        return ring_shm_name_check(buf);
}

int ring_shm_secure(int fd)
{
        struct stat st;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_uid != geteuid())
                return -EPERM;
        if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) < 0)
                return -errno;
        return 0;
}

int ring_futex_wait(const uint32_t *word, uint32_t val, int timeout_ms)
{
        struct timespec ts, *tsp = NULL;

        if (timeout_ms >= 0) {
                ts.tv_sec = timeout_ms / 1000;
                ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
                tsp = &ts;
        }
        /* The timeout of FUTEX_WAIT is relative (monotonic). */
        if (syscall(SYS_futex, word, FUTEX_WAIT, val, tsp, NULL, 0) < 0) {
                if (errno == ETIMEDOUT)
                        return -ETIMEDOUT;
                if (errno == EAGAIN || errno == EINTR)
                        return 0;       /* the word moved, or a signal: look again */
                return -errno;
        }
        return 0;
}

unsigned ring_futex_wake(uint32_t *word)
{
        long n = syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);

        return n > 0 ? (unsigned)n : 0u;
}

/* ---- opening and mapping ------------------------------------------------------------ */

/* Producer: opens name read-write, creating it 0600 if needed, and keeps it only if it
 * is ours (ring_shm_secure()).  *ret_fd is set once open: the caller closes it, on
 * failure too. */
static int shm_open_own(const char *name, int *ret_fd)
{
        *ret_fd = shm_open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (*ret_fd < 0)
                return -errno;
        return ring_shm_secure(*ret_fd);
}

/* Reader: opens an existing name with oflag (O_RDONLY or O_RDWR) and returns its size in
 * *ret_size.  *ret_fd as for shm_open_own(). */
static int shm_open_existing(const char *name, int oflag, int *ret_fd, uint64_t *ret_size)
{
        struct stat st;

        *ret_fd = shm_open(name, oflag | O_CLOEXEC, 0);
        if (*ret_fd < 0)
                return -errno;
        if (fstat(*ret_fd, &st) < 0)
                return -errno;
        *ret_size = (uint64_t)st.st_size;
        return 0;
}

/* Producer: maps size bytes of fd read-write, first growing the object to size if it is
 * smaller (never shrinking it). */
static int shm_map_rw(int fd, uint64_t size, void **ret_map)
{
        struct stat st;
        void *m;

        if (fstat(fd, &st) < 0)
                return -errno;
        if ((uint64_t)st.st_size < size && ftruncate(fd, (off_t)size) < 0)
                return -errno;
        m = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED)
                return -errno;
        *ret_map = m;
        return 0;
}

/* ---- the wait page (NAME.wait) ---------------------------------------------------- */

int ring_waitpage_create(const char *name, uint64_t magic, uint32_t version, int *ret_fd,
                         struct ring_waitpage **ret_page)
{
        char wname[NAME_MAX + 2];
        struct ring_waitpage *w;
        void *m;
        int k;

        ring_shm_wait_name(name, wname);
        k = shm_open_own(wname, ret_fd);
        if (k < 0)
                return k;
        k = shm_map_rw(*ret_fd, sizeof(struct ring_waitpage), &m);
        if (k < 0)
                return k;
        w = m;
        if (__atomic_load_n(&w->magic, __ATOMIC_RELAXED) != magic ||
            __atomic_load_n(&w->version, __ATOMIC_RELAXED) != version) {
                __atomic_store_n(&w->waiters, 0, __ATOMIC_RELAXED);
                __atomic_store_n(&w->version, version, __ATOMIC_RELAXED);
                /* Publish version and waiters with the magic.  Pairs with the acquire
                 * load of magic in ring_waitpage_attach(). */
                __atomic_store_n(&w->magic, magic, __ATOMIC_RELEASE);
        }
        *ret_page = w;
        return 0;
}

int ring_waitpage_attach(const char *name, uint64_t magic, uint32_t version, int *ret_fd,
                         struct ring_waitpage **ret_page)
{
        char wname[NAME_MAX + 2];
        struct ring_waitpage *w;
        uint64_t size;
        void *m;
        int k;

        ring_shm_wait_name(name, wname);
        k = shm_open_existing(wname, O_RDWR, ret_fd, &size);
        if (k < 0)
                return k;
        if (size < sizeof(struct ring_waitpage))
                return -EBADMSG;
        m = mmap(NULL, sizeof(struct ring_waitpage), PROT_READ | PROT_WRITE, MAP_SHARED, *ret_fd, 0);
        if (m == MAP_FAILED)
                return -errno;
        w = m;
        *ret_page = w;          /* mapped: the caller unmaps it, valid or not */
        /* Pairs with the release store of magic in ring_waitpage_create(). */
        if (__atomic_load_n(&w->magic, __ATOMIC_ACQUIRE) != magic)
                return -EBADMSG;
        if (__atomic_load_n(&w->version, __ATOMIC_RELAXED) != version)
                return -EPROTO;
        return 0;
}

void ring_waitpage_unmap(struct ring_waitpage *w)
{
        if (w)
                munmap(w, sizeof(*w));
}

/* ---- the two objects of one ring ---------------------------------------------------- */

void ring_shm_init(struct ring_shm *s)
{
        *s = (struct ring_shm){ .fd = -EBADF, .wait_fd = -EBADF };
}

void ring_shm_done(struct ring_shm *s)
{
        if (s->map)
                munmap(s->map, s->map_size);
        ring_waitpage_unmap(s->wait);
        closep(&s->wait_fd);
        closep(&s->fd);         /* the producer's releases its flock */
        *s = (struct ring_shm){ .fd = -EBADF, .wait_fd = -EBADF };
}

void *ring_handle_free(struct ring_shm *s, void *owned, void *handle)
{
        ring_shm_done(s);
        free(owned);
        free(handle);
        return NULL;
}

int ring_shm_create(struct ring_shm *s, const char *name, uint64_t size, uint64_t wait_magic,
                    uint32_t version)
{
        int k;

        k = shm_open_own(name, &s->fd);
        if (k < 0)
                return k;
        /* One producer at a time, checked before we touch anything. */
        if (flock(s->fd, LOCK_EX | LOCK_NB) < 0)
                return errno == EWOULDBLOCK ? -EBUSY : -errno;
        k = ring_waitpage_create(name, wait_magic, version, &s->wait_fd, &s->wait);
        if (k < 0)
                return k;
        return ring_shm_map_rw(s, size);
}

int ring_shm_map_rw(struct ring_shm *s, uint64_t size)
{
        struct stat st;
        void *m;
        int k;

        if (!s->map) {
                k = shm_map_rw(s->fd, size, &m);
                if (k < 0)
                        return k;
        } else {
                /* A grown region: mremap() keeps the pages already mapped, where a new
                 * mapping would fault each one in again. */
                if (fstat(s->fd, &st) < 0)
                        return -errno;
                if ((uint64_t)st.st_size < size && ftruncate(s->fd, (off_t)size) < 0)
                        return -errno;
                m = mremap(s->map, s->map_size, (size_t)size, MREMAP_MAYMOVE);
                if (m == MAP_FAILED)
                        return -errno;
        }
        s->map = m;
        s->map_size = (size_t)size;
        return 0;
}

int ring_shm_attach(struct ring_shm *s, const char *name, size_t min_size)
{
        uint64_t size;
        void *m;
        int k;

        k = ring_shm_name_check(name);
        if (k < 0)
                return k;
        k = shm_open_existing(name, O_RDONLY, &s->fd, &size);
        if (k < 0)
                return k;
        if (size == 0)
                return -EAGAIN;         /* created, not sized yet: the producer is busy */
        if (size < min_size)
                return -EBADMSG;
        m = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, s->fd, 0);
        if (m == MAP_FAILED)
                return -errno;
        s->map = m;
        s->map_size = (size_t)size;
        return 0;
}

int ring_shm_attach_wait(struct ring_shm *s, const char *name, uint64_t wait_magic,
                         uint32_t version)
{
        return ring_waitpage_attach(name, wait_magic, version, &s->wait_fd, &s->wait);
}

int ring_reader_attach(struct ring_shm *s, const char *name, size_t header_size,
                       uint64_t wait_magic, uint32_t version, int (*sync)(void *rd), void *rd)
{
        int k = ring_shm_attach(s, name, header_size);

        if (k < 0)
                return k;
        k = -EAGAIN;
        for (unsigned attempt = 0; attempt < RING_ATTACH_ATTEMPTS && k == -EAGAIN; attempt++)
                k = sync(rd);
        if (k == -RING_E_INITIALIZING)
                return -EAGAIN;
        if (k < 0)
                return k;
        return ring_shm_attach_wait(s, name, wait_magic, version);
}

int ring_shm_cover(struct ring_shm *s, uint64_t need)
{
        struct stat st;
        void *m;

        if (need <= s->map_size)
                return 0;
        if (fstat(s->fd, &st) < 0)
                return -errno;
        if ((uint64_t)st.st_size < need)
                return -EBADMSG;        /* the header promises more than the object holds */
        m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, s->fd, 0);
        if (m == MAP_FAILED)
                return -errno;
        munmap(s->map, s->map_size);
        s->map = m;
        s->map_size = (size_t)st.st_size;
        return 0;
}

int ring_header_check_ident(uint64_t magic, uint64_t want_magic, uint32_t version,
                            uint32_t want_version)
{
        if (magic != want_magic)
                return -EBADMSG;
        if (version != want_version)
                return -EPROTO;
        return 0;
}

int ring_reader_adopt(struct ring_shm *s, const uint32_t *hdr_seq, uint32_t h, int valid,
                      uint64_t total_size)
{
        /* Trust the copy only if no (re)initialization overlapped it. */
        if (ring_hdr_moved(hdr_seq, h))
                return -EAGAIN;
        if (valid < 0)
                return valid;
        return ring_shm_cover(s, total_size);
}

int ring_shm_unlink(const char *name)
{
        char wname[NAME_MAX + 2];
        int k, q = 0;

        k = ring_shm_name_check(name);
        if (k < 0)
                return k;
        ring_shm_wait_name(name, wname);
        if (shm_unlink(name) < 0)
                q = -errno;
        if (shm_unlink(wname) < 0 && errno != ENOENT && q == 0)
                q = -errno;
        return q;
}

/* ---- sleeping and waking (fring.c note 7) ----------------------------------------- */

int ring_wake(uint32_t *notify, const struct ring_waitpage *w, bool always)
{
        /* Dekker with ring_sleep(): the producer's stores that readers look for are
         * ordered before our load of waiters, and a reader's increment of waiters before
         * its re-check, so either it sees our stores or we see its increment.  Pairs with
         * the seq_cst fence in ring_sleep(). */
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (!always && __atomic_load_n(&w->waiters, __ATOMIC_RELAXED) == 0)
                return -1;
        /* Change the futex word before waking: FUTEX_WAIT compares it under the futex
         * bucket lock, so a reader that read the old value but is not queued yet returns
         * at once, and one already queued is woken below.  The producer is the only
         * writer of the word. */
        __atomic_store_n(notify, __atomic_load_n(notify, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
        return (int)ring_futex_wake(notify);
}

int ring_sleep_begin(const uint32_t *notify, struct ring_waitpage *w,
                     bool (*has_data)(const void *ctx), const void *ctx,
                     const uint32_t **ret_word, uint32_t *ret_val)
{
        uint32_t v;

        /* The futex word is read before looking for data, so that a publish after the
         * look changes it (or finds us in waiters, below). */
        v = __atomic_load_n(notify, __ATOMIC_ACQUIRE);
        if (has_data(ctx))
                return 1;
        __atomic_fetch_add(&w->waiters, 1, __ATOMIC_RELAXED);
        /* Dekker with ring_wake(): our increment of waiters is ordered before our
         * re-check, the producer's stores before its load of waiters, so either we see
         * its store now or it sees us and changes the futex word and wakes us. */
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (has_data(ctx)) {
                ring_sleep_end(w);
                return 1;
        }
        *ret_word = notify;
        *ret_val = v;
        return 0;
}

void ring_sleep_end(struct ring_waitpage *w)
{
        __atomic_fetch_sub(&w->waiters, 1, __ATOMIC_RELAXED);
}

int ring_sleep(const uint32_t *notify, struct ring_waitpage *w, bool (*has_data)(const void *ctx),
               const void *ctx, int timeout_ms)
{
        const uint32_t *word;
        uint32_t v;
        int k;

        if (timeout_ms == 0)
                return has_data(ctx) ? 0 : -ETIMEDOUT;
        k = ring_sleep_begin(notify, w, has_data, ctx, &word, &v);
        if (k > 0)
                return 0;
        k = ring_futex_wait(word, v, timeout_ms);
        ring_sleep_end(w);
        return k;
}

/* ---- the header seqlock ----------------------------------------------------------- */

uint32_t ring_hdr_write_begin(uint32_t *hdr_seq)
{
        uint32_t seq = *hdr_seq;        /* the producer is its only writer */

        seq += (seq & 1) ? 2 : 1;
        if (seq == UINT32_MAX)
                seq = 1;
        __atomic_store_n(hdr_seq, seq, __ATOMIC_RELAXED);
        /* Order the odd hdr_seq before every store of the (re)initialization: a reader
         * that read any of those stores sees an odd or newer hdr_seq when it re-checks.
         * Pairs with the acquire fences of the readers' re-checks (ring_hdr_moved(),
         * the rings' revalidation). */
        __atomic_thread_fence(__ATOMIC_RELEASE);
        return seq;
}

void ring_hdr_write_end(uint32_t *hdr_seq, uint32_t seq)
{
        assert(seq & 1);
        /* Publish the whole region: a reader that loads the new even hdr_seq sees every
         * store made since ring_hdr_write_begin().  Pairs with the readers' acquire
         * loads of hdr_seq. */
        __atomic_store_n(hdr_seq, seq + 1, __ATOMIC_RELEASE);
}

bool ring_hdr_moved(const uint32_t *hdr_seq, uint32_t h)
{
        /* Pairs with the release fence in ring_hdr_write_begin(). */
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        return __atomic_load_n(hdr_seq, __ATOMIC_RELAXED) != h;
}
