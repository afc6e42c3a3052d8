/* ring-shm.h -- what the shared-memory rings of common/ring have in common (internal).
 *
 * Used by fring.c (the frontier ring) and lring.c (the catalog log ring) only: POSIX
 * shared-memory names derived from the instance id, the ownership check a producer makes
 * before it takes an object over, opening and mapping a ring's two objects from either
 * side (struct ring_shm), the wait page (NAME.wait) and the sleep/wake handshake over it
 * (fring.c note 7), the header seqlock as both sides use it, and the reader calls both
 * rings spell alike (RING_READER_DEFINE()).  Each ring keeps its own layout and
 * semantics.  Nothing here keeps state beyond what the caller's handle owns, or logs;
 * errors are -errno.
 */
#pragma once

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every ring has a second object NAME + this suffix: the page readers write (the count
 * of sleeping readers), since they map NAME itself read-only. */
#define RING_SHM_WAIT_SUFFIX    ".wait"

/* A POSIX shm name: "/" then 1..NAME_MAX bytes without "/", leaving room for the wait
 * suffix.  -EINVAL or -ENAMETOOLONG. */
int ring_shm_name_check(const char *name);

/* NAME.wait into buf; name passed ring_shm_name_check(). */
void ring_shm_wait_name(const char *name, char buf[static NAME_MAX + 2]);

/* Writes "/coord-<instance>-<what>" into buf.  The instance id is [A-Za-z0-9._-]+.
 * -EINVAL on a bad instance id, -ENAMETOOLONG if the name does not fit buf or NAME_MAX. */
int ring_shm_name_for(const char *instance, const char *what, char *buf, size_t size);

/* A producer takes over only objects of its own uid, and makes sure nobody else can open
 * them (a pre-created, world-writable object would let anybody forge what readers
 * trust): -EPERM for another owner; the mode is set back to 0600 if it differs. */
int ring_shm_secure(int fd);

/* FUTEX_WAIT on a shared futex word (no FUTEX_PRIVATE_FLAG: the word lives in a shared
 * object and the producer wakes it from another process; FUTEX_WAIT only reads the word,
 * so a read-only mapping is enough).  timeout_ms < 0: no timeout.  0 when woken, when the
 * word no longer held val or on a signal (look again); -ETIMEDOUT; other -errno. */
int ring_futex_wait(const uint32_t *word, uint32_t val, int timeout_ms);

/* FUTEX_WAKE every sleeper on a shared futex word; the number woken (0 on error). */
unsigned ring_futex_wake(uint32_t *word);

/* NAME.wait, the same 16 bytes for every ring (each layout header spells it out as its
 * own struct with its own magic; ring_waitpage_check_layout() keeps them equal):
 * written by the producer once (magic, version), by readers only afterwards (waiters,
 * +1 before sleeping, -1 after; the producer only reads it). */
struct ring_waitpage {
        uint64_t magic;
        uint32_t version;
        uint32_t waiters;
};
#define ring_waitpage_check_layout(T)                                                   \
        _Static_assert(sizeof(T) == sizeof(struct ring_waitpage) &&                     \
                       offsetof(T, magic) == offsetof(struct ring_waitpage, magic) &&   \
                       offsetof(T, version) == offsetof(struct ring_waitpage, version) && \
                       offsetof(T, waiters) == offsetof(struct ring_waitpage, waiters), \
                       "wait page layout")

/* ---- the two objects of one ring, as one side holds them --------------------------- */

/* NAME and NAME.wait, open and mapped by the producer's or a reader's handle, which owns
 * them.  map is map_size bytes of NAME: read-write for the producer, PROT_READ for a
 * reader.  ring_shm_init() first; ring_shm_done() releases whatever is set, so it also
 * undoes a failed ring_shm_create() or ring_shm_attach(). */
struct ring_shm {
        int fd;                         /* NAME: the producer's (O_RDWR) holds its flock,
                                         * a reader's (O_RDONLY) is kept to remap a grown
                                         * layout */
        int wait_fd;                    /* NAME.wait, O_RDWR */
        void *map;
        size_t map_size;
        struct ring_waitpage *wait;     /* read-write mapping of NAME.wait */
};

void ring_shm_init(struct ring_shm *s);
void ring_shm_done(struct ring_shm *s);
/* The *_free() of a ring's handle, whose member s is: ring_shm_done(s) (a producer's
 * flock goes with its descriptor), then frees owned (the one buffer the handle owns, or
 * NULL) and handle.  Returns NULL, as the *_free() calls do. */
void *ring_handle_free(struct ring_shm *s, void *owned, void *handle);

/* Producer: opens NAME (creating it if needed, 0600, own uid only: ring_shm_secure()),
 * takes the exclusive producer flock (-EBUSY while another producer holds it), opens
 * NAME.wait (ring_waitpage_create(): before NAME is sized, so that a reader that finds
 * NAME valid finds NAME.wait too) and maps size bytes of NAME (ring_shm_map_rw()).
 * name passed ring_shm_name_check(). */
int ring_shm_create(struct ring_shm *s, const char *name, uint64_t size, uint64_t wait_magic,
                    uint32_t version);
/* Producer: maps size bytes of NAME read-write in place of the current mapping (if any),
 * growing the object to size first if it is smaller.  It never shrinks it: a reader's
 * mapping past a new end would raise SIGBUS.  On failure the current mapping stays. */
int ring_shm_map_rw(struct ring_shm *s, uint64_t size);

/* Reader: opens NAME read-only and maps all of it PROT_READ.  -EINVAL/-ENAMETOOLONG for
 * a bad name (ring_shm_name_check()), -EAGAIN if the object is empty (created, not sized
 * yet: the producer is busy), -EBADMSG if it is smaller than min_size. */
int ring_shm_attach(struct ring_shm *s, const char *name, size_t min_size);
/* Reader: NAME.wait, mapped read-write (ring_waitpage_attach()). */
int ring_shm_attach_wait(struct ring_shm *s, const char *name, uint64_t wait_magic,
                         uint32_t version);
/* Reader: a header promising need bytes was validated.  If that is more than is mapped
 * (a producer restarted with a bigger layout), maps the whole object again in place of
 * the current mapping; -EBADMSG if the object is smaller than need. */
int ring_shm_cover(struct ring_shm *s, uint64_t need);

/* Unlinks NAME and NAME.wait.  -EINVAL/-ENAMETOOLONG for a bad name, else the first
 * error (a missing NAME.wait is none). */
int ring_shm_unlink(const char *name);

/* Producer: opens (creating if needed) NAME.wait, mode 0600, own uid only.  A page that
 * is new or of another magic or version is initialized (waiters 0, the magic stored
 * last with release); a valid one is kept as is, waiters included.  On success *ret_fd
 * and *ret_page are set; on failure *ret_fd may hold a descriptor the caller closes. */
int ring_waitpage_create(const char *name, uint64_t magic, uint32_t version, int *ret_fd,
                         struct ring_waitpage **ret_page);
/* Reader: maps an existing NAME.wait read-write.  -EBADMSG if it is too small or its
 * magic is not `magic`, -EPROTO for another version; *ret_fd as above. */
int ring_waitpage_attach(const char *name, uint64_t magic, uint32_t version, int *ret_fd,
                         struct ring_waitpage **ret_page);
/* Unmaps a page from either of the above.  Accepts NULL. */
void ring_waitpage_unmap(struct ring_waitpage *w);

/* The producer's half of the sleeping protocol (fring.c note 7), after its stores that
 * readers look for: unless always, nothing when no reader sleeps; else bump *notify and
 * FUTEX_WAKE.  Returns the number woken, -1 when it did not wake (no sleeper). */
int ring_wake(uint32_t *notify, const struct ring_waitpage *w, bool always);
/* The reader's half: 0 at once if has_data(ctx), else sleeps on *notify (counted in
 * waiters) until woken, timeout_ms passes (-ETIMEDOUT; 0: just check, < 0: none) or
 * has_data() turns true between the count and the sleep. */
int ring_sleep(const uint32_t *notify, struct ring_waitpage *w, bool (*has_data)(const void *ctx),
               const void *ctx, int timeout_ms);
/* ring_sleep() in two halves, for a reader whose sleep is asynchronous (an event loop's
 * io_uring futex wait): begin returns 1 at once if has_data(ctx); else it counts the
 * reader in waiters, re-checks (1 after taking the count back if has_data() turned
 * true) and returns 0 with *ret_word = notify and *ret_val, the value of *notify to
 * FUTEX_WAIT on (shared).  After each 0 the reader sleeps however it likes and then
 * calls ring_sleep_end() exactly once, whatever the sleep's outcome. */
int ring_sleep_begin(const uint32_t *notify, struct ring_waitpage *w,
                     bool (*has_data)(const void *ctx), const void *ctx,
                     const uint32_t **ret_word, uint32_t *ret_val);
void ring_sleep_end(struct ring_waitpage *w);

/* The header seqlock (fring.c note 4): hdr_seq is 0 never initialized, odd while the
 * producer (re)writes the region, even and new after.  begin makes it odd and returns
 * it: from there to end readers trust nothing in the region.  end publishes it as the
 * next even value, never 0 ("never initialized").  A reader that copied something after
 * it loaded an even h re-checks with ring_hdr_moved(). */
uint32_t ring_hdr_write_begin(uint32_t *hdr_seq);
void ring_hdr_write_end(uint32_t *hdr_seq, uint32_t seq);
bool ring_hdr_moved(const uint32_t *hdr_seq, uint32_t h);

/* A reader's side of the header seqlock: the value its private copy of the layout was
 * validated under (even, nonzero; 0 before the first validation, never re-read from
 * shared memory) and the last value it found damaged (not news for its wait until the
 * producer moves hdr_seq again). */
struct ring_hdr_view {
        uint32_t seq;
        uint32_t rejected;
};

/* Reader: adopts a private copy of the header made under seqlock value h and already
 * checked by the ring (valid: 0 or the ring's -EBADMSG/-EPROTO).  -EAGAIN if hdr_seq
 * moved since h (the copy may be torn, whatever valid says; this re-check is the
 * seqlock's, after the copy's loads), else valid's error, else makes sure the
 * total_size bytes it describes are mapped (ring_shm_cover()). */
int ring_reader_adopt(struct ring_shm *s, const uint32_t *hdr_seq, uint32_t h, int valid,
                      uint64_t total_size);

/* Reader: the identity at the top of a header copy, checked before anything else in it:
 * -EBADMSG if magic is not want_magic (not this ring's region, or damaged), else -EPROTO
 * if version is not want_version (another layout), else 0. */
int ring_header_check_ident(uint64_t magic, uint64_t want_magic, uint32_t version,
                            uint32_t want_version);

/* Reader: the fields every ring's header opens its checked part with, copied (relaxed
 * loads: the seqlock re-check in ring_reader_adopt() decides whether the copy holds) from
 * the mapped header hdr into the private copy c, a struct of the same type. */
#define RING_HDR_COPY_IDENT(c, hdr)                                                     \
        do {                                                                            \
                (c).magic = __atomic_load_n(&(hdr)->magic, __ATOMIC_RELAXED);           \
                (c).version = __atomic_load_n(&(hdr)->version, __ATOMIC_RELAXED);       \
                (c).generation = __atomic_load_n(&(hdr)->generation, __ATOMIC_RELAXED); \
                (c).total_size = __atomic_load_n(&(hdr)->total_size, __ATOMIC_RELAXED); \
                (c).header_size = __atomic_load_n(&(hdr)->header_size, __ATOMIC_RELAXED); \
        } while (0)

/* Reader-internal error: the producer is (re)initializing the region (hdr_seq 0 or odd). */
#define RING_E_INITIALIZING     EINPROGRESS

/* Reader: attaches s to NAME (at least header_size bytes), brings the reader's layout up
 * to date with sync(rd) -- which reads its header from s->map -- retrying up to
 * RING_ATTACH_ATTEMPTS times while it returns -EAGAIN, then maps NAME.wait.  -EAGAIN
 * while the producer (re)initializes, else sync()'s or the mapping's errors.  The
 * one attach of both rings (fring_attach(), lring_attach()). */
#define RING_ATTACH_ATTEMPTS    8u
int ring_reader_attach(struct ring_shm *s, const char *name, size_t header_size,
                       uint64_t wait_magic, uint32_t version, int (*sync)(void *rd), void *rd);

/* Reader: brings its layout up to date with *hdr_seq before it reads the region.  If
 * hdr_seq is a new even value, revalidate(rd, h) validates and adopts the layout (and
 * sets v->seq = h); its -EBADMSG or -EPROTO marks h rejected.  On success *ret_h is the
 * value to re-check with ring_hdr_moved() after reading.  -RING_E_INITIALIZING while
 * hdr_seq is 0 or odd, else revalidate()'s errors.  Inline: every read starts here. */
static inline int ring_reader_sync(const uint32_t *hdr_seq, struct ring_hdr_view *v,
                                   int (*revalidate)(void *rd, uint32_t h), void *rd,
                                   uint32_t *ret_h)
{
        /* Pairs with the release store in ring_hdr_write_end(): the region as
         * initialized is visible to us if we see its hdr_seq. */
        uint32_t h = __atomic_load_n(hdr_seq, __ATOMIC_ACQUIRE);
        int k;

        if (h == 0 || (h & 1))
                return -RING_E_INITIALIZING;
        if (h != v->seq) {
                k = revalidate(rd, h);
                if (k == -EBADMSG || k == -EPROTO)
                        v->rejected = h;
                if (k < 0)
                        return k;
        }
        *ret_h = h;
        return 0;
}

/* Reader, for its has_data() of ring_sleep(): what *hdr_seq says before the reader
 * looks at its data.  -1: nothing to read (the producer is (re)initializing, or the value
 * is the one found damaged: sleep until the producer moves it); 1: a new layout, which
 * the reader's next call adopts; 0: the layout it has, look at the data. */
static inline int ring_hdr_news(const uint32_t *hdr_seq, const struct ring_hdr_view *v)
{
        uint32_t h = __atomic_load_n(hdr_seq, __ATOMIC_ACQUIRE);

        if (h == 0 || (h & 1))
                return -1;
        if (h != v->seq)
                return h != v->rejected ? 1 : -1;
        return 0;
}

/* The reader calls that both rings (fring.h, lring.h) spell the same way over their own
 * public handle type T, defined in the ring's .c file: PREFIX_attach(), PREFIX_wait(),
 * PREFIX_sleep_begin(), PREFIX_sleep_end() and PREFIX_reader_generation(), documented in
 * the ring's header, and the static helpers every other reader call starts and ends
 * with, reader_sync() and reader_header_moved().  A macro because the handles are
 * distinct types.  T has the members
 *   shm         struct ring_shm, NAME and NAME.wait;
 *   hdr         const header_T *, == shm.map once attached: the ring's mapped header,
 *               with the members hdr_seq and notify (the futex word, fring.c note 7);
 *   view        struct ring_hdr_view;
 *   generation  uint64_t, of the layout last validated.
 * The ring's file includes assert.h, stdlib.h and util.h, declares PREFIX_reader_freep()
 * (its header does) and defines, before or after the macro (which declares them):
 *   static int revalidate(void *rd, uint32_t h)     for ring_reader_sync();
 *   static int attach_sync(void *rd)                for ring_reader_attach(): points hdr
 *                                                   at shm.map and calls reader_sync();
 *   static bool has_data(const void *rd)            for ring_sleep() and
 *                                                   ring_sleep_begin().
 * wait_magic and version are the ring's NAME.wait magic and layout version. */
#define RING_READER_DEFINE(prefix, T, header_T, wait_magic, version, revalidate, attach_sync, \
                           has_data)                                                    \
        static int revalidate(void *, uint32_t);                                        \
        static int attach_sync(void *);                                                 \
        static bool has_data(const void *);                                             \
                                                                                        \
        /* Brings the reader's layout up to date with the header (revalidate()).  On    \
         * success *ret_h is the even seqlock value the caller must re-check            \
         * (reader_header_moved()) after reading the region.  -RING_E_INITIALIZING      \
         * while the producer (re)initializes. */                                       \
        static int reader_sync(T *rd, uint32_t *ret_h)                                  \
        {                                                                               \
                return ring_reader_sync(&rd->hdr->hdr_seq, &rd->view, revalidate, rd,   \
                                        ret_h);                                         \
        }                                                                               \
                                                                                        \
        /* True if the region may have changed under what the caller read since         \
         * reader_sync() returned h.  Pairs with the release fence in                   \
         * ring_hdr_write_begin(). */                                                   \
        static bool reader_header_moved(const T *rd, uint32_t h)                        \
        {                                                                               \
                return ring_hdr_moved(&rd->hdr->hdr_seq, h);                            \
        }                                                                               \
                                                                                        \
        int prefix##_attach(const char *name, T **ret)                                  \
        {                                                                               \
                _cleanup_(prefix##_reader_freep) T *rd = NULL;                          \
                int k;                                                                  \
                                                                                        \
                if (!ret)                                                               \
                        return -EINVAL;                                                 \
                rd = calloc(1, sizeof(*rd));                                            \
                if (!rd)                                                                \
                        return -ENOMEM;                                                 \
                ring_shm_init(&rd->shm);                                                \
                k = ring_reader_attach(&rd->shm, name, sizeof(header_T), wait_magic,    \
                                       version, attach_sync, rd);                       \
                if (k < 0)                                                              \
                        return k;                                                       \
                *ret = TAKE_PTR(rd);                                                    \
                return 0;                                                               \
        }                                                                               \
                                                                                        \
        int prefix##_wait(T *rd, int timeout_ms)                                        \
        {                                                                               \
                if (!rd)                                                                \
                        return -EINVAL;                                                 \
                /* fring.c note 7: the futex word, then the look, then waiters and the  \
                 * look again */                                                        \
                return ring_sleep(&rd->hdr->notify, rd->shm.wait, has_data, rd,         \
                                  timeout_ms);                                          \
        }                                                                               \
                                                                                        \
        int prefix##_sleep_begin(T *rd, const uint32_t **ret_word, uint32_t *ret_val)   \
        {                                                                               \
                if (!rd || !ret_word || !ret_val)                                       \
                        return -EINVAL;                                                 \
                /* fring.c note 7, as PREFIX_wait(), with the sleep itself left to the  \
                 * caller */                                                            \
                return ring_sleep_begin(&rd->hdr->notify, rd->shm.wait, has_data, rd,   \
                                        ret_word, ret_val);                             \
        }                                                                               \
                                                                                        \
        void prefix##_sleep_end(T *rd)                                                  \
        {                                                                               \
                assert(rd);                                                             \
                ring_sleep_end(rd->shm.wait);                                           \
        }                                                                               \
                                                                                        \
        uint64_t prefix##_reader_generation(const T *rd)                                \
        {                                                                               \
                return rd ? rd->generation : 0;                                         \
        }

static inline void ring_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield" ::: "memory");
#else
        __asm__ __volatile__("" ::: "memory");
#endif
}
