/* fuzz-ring -- the ring readers (common/ring: fring.h, lring.h) on damaged shared memory.
 *
 * Set-up, once: a real producer creates a frontier ring and a catalog log ring with a
 * few records (names /coord-fuzz<pid>-*), and the pristine bytes of both objects (NAME
 * and NAME.wait) are kept.  The producers are then closed: from here on the harness is
 * the only writer, through a read-write mapping of its own.
 *
 * An input is a program.  Byte 0 picks the ring (bit 0: 0 frontier, 1 catalog log) and
 * whether the region starts as the pristine image or as the input's bytes repeated
 * (bit 1).  Then operations, one byte each plus arguments:
 *     PATCH  off(u16) len(u8 % 32) bytes   write into NAME (bit 3 of the op: NAME.wait)
 *     ATTACH / DETACH                      a reader
 *     READ n                               fring_read() / lring_read()
 *     LOOKUP id(u8)                        fring_lookup() / lring_last() + lring_skip()
 *     SLEEP                                *_sleep_begin() + *_sleep_end(), *_wait(0)
 *     RESIZE k(u8)                         ftruncate NAME to k/64 of its size (only
 *                                          without a reader: shrinking a mapped object
 *                                          raises SIGBUS, as documented)
 *     RESTORE                              the pristine image again
 * Patches between reads model a producer that restarts or misbehaves under a reader.
 *
 * What must hold: no crash or sanitizer report, no hang, only the documented results,
 * and every record handed out lies within what the reader mapped (its payload bytes
 * are read here in full).  After the input, the object is restored for the next one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ring/fring.h"
#include "fuzz.h"
#include "ring/lring.h"

enum { RING_F, RING_L, _RING_MAX };

struct region {
        char name[64];
        char path[96], wait_path[96];
        uint8_t *pristine, *wait_pristine;
        size_t size, wait_size;
        int fd, wait_fd;
        uint8_t *map, *wait_map;        /* read-write, size / wait_size bytes */
        size_t mapped;                  /* current size of NAME */
};

static struct region R[_RING_MAX];

static void load(struct region *g)
{
        struct stat st;

        snprintf(g->path, sizeof(g->path), "/dev/shm%s", g->name);
        snprintf(g->wait_path, sizeof(g->wait_path), "/dev/shm%s.wait", g->name);
        g->fd = open(g->path, O_RDWR | O_CLOEXEC);
        g->wait_fd = open(g->wait_path, O_RDWR | O_CLOEXEC);
        FUZZ_CHECK(g->fd >= 0 && g->wait_fd >= 0);
        FUZZ_CHECK(fstat(g->fd, &st) == 0);
        g->size = g->mapped = (size_t)st.st_size;
        FUZZ_CHECK(fstat(g->wait_fd, &st) == 0);
        g->wait_size = (size_t)st.st_size;
        g->map = mmap(NULL, g->size, PROT_READ | PROT_WRITE, MAP_SHARED, g->fd, 0);
        g->wait_map = mmap(NULL, g->wait_size, PROT_READ | PROT_WRITE, MAP_SHARED, g->wait_fd, 0);
        FUZZ_CHECK(g->map != MAP_FAILED && g->wait_map != MAP_FAILED);
        g->pristine = malloc(g->size);
        g->wait_pristine = malloc(g->wait_size);
        FUZZ_CHECK(g->pristine && g->wait_pristine);
        memcpy(g->pristine, g->map, g->size);
        memcpy(g->wait_pristine, g->wait_map, g->wait_size);
}

static void cleanup(void)
{
        for (int i = 0; i < _RING_MAX; i++) {
                struct region *g = &R[i];

                if (!g->map)
                        continue;
                munmap(g->map, g->size);
                munmap(g->wait_map, g->wait_size);
                close(g->fd);
                close(g->wait_fd);
                free(g->pristine);
                free(g->wait_pristine);
        }
        fring_unlink(R[RING_F].name);
        lring_unlink(R[RING_L].name);
}

static void setup(void)
{
        static bool done;
        char instance[32];
        struct fring *fr = NULL;
        struct lring *lr = NULL;

        if (done)
                return;
        done = true;
        snprintf(instance, sizeof(instance), "fuzz%d", (int)getpid());
        FUZZ_CHECK(fring_name(instance, R[RING_F].name, sizeof(R[RING_F].name)) == 0);
        FUZZ_CHECK(lring_name(instance, R[RING_L].name, sizeof(R[RING_L].name)) == 0);
        atexit(cleanup);

        /* A small table (16 slots) and ring (8 records), lapped once. */
        FUZZ_CHECK(fring_create(R[RING_F].name, 4, 8, 7, &fr) == 0);
        for (uint64_t i = 0; i < 12; i++) {
                struct fring_frontier f = { .id = 1000 + i % 5, .upper = 10 + i,
                                            .since = i, .physical_since = i / 2 };

                FUZZ_CHECK(fring_publish(fr, &f) == 0);
        }
        FUZZ_CHECK(fring_forget(fr, 1003) == 0);
        fring_free(fr);

        /* The smallest ring (4 KiB), lapped, with one payload over capacity / 4. */
        FUZZ_CHECK(lring_create(R[RING_L].name, LRING_CAPACITY_MIN, 3, 100, &lr) == 0);
        for (uint64_t s = 101; s < 140; s++) {
                static uint8_t payload[1200];
                size_t len = s == 120 ? sizeof(payload) : (size_t)(s * 7 % 300);
                struct lring_entry e = { .seq = s, .commit_us = s * 10, .payload = payload,
                                         .len = len };

                memset(payload, (int)s, len);
                FUZZ_CHECK(lring_publish(lr, &e, 1) == 0);
        }
        lring_free(lr);

        load(&R[RING_F]);
        load(&R[RING_L]);
}

static void restore(struct region *g)
{
        if (g->mapped != g->size)
                FUZZ_CHECK(ftruncate(g->fd, (off_t)g->size) == 0);
        g->mapped = g->size;
        memcpy(g->map, g->pristine, g->size);
        memcpy(g->wait_map, g->wait_pristine, g->wait_size);
}

/* A cursor over the input. */
struct in {
        const uint8_t *p;
        size_t n;
};

static bool take(struct in *in, uint8_t *ret)
{
        if (in->n == 0)
                return false;
        *ret = *in->p++;
        in->n--;
        return true;
}

static void patch(struct region *g, bool wait, struct in *in)
{
        uint8_t *dst = wait ? g->wait_map : g->map;
        size_t size = wait ? g->wait_size : g->mapped;
        uint8_t a = 0, b = 0, len = 0;
        size_t off;

        (void)take(in, &a);
        (void)take(in, &b);
        (void)take(in, &len);
        if (size == 0)
                return;
        off = ((size_t)a << 8 | b) % size;
        len %= 32;
        for (uint8_t i = 0; i < len && off + i < size; i++) {
                uint8_t v;

                if (!take(in, &v))
                        break;
                dst[off + i] = v;
        }
}

/* Reads a payload in full: a record outside the mapping is an ASan report or SIGSEGV. */
static uint64_t touch(const void *p, size_t len)
{
        const volatile uint8_t *b = p;
        uint64_t sum = 0;

        for (size_t i = 0; i < len; i++)
                sum += b[i];
        return sum;
}

static void run_fring(struct in *in)
{
        struct fring_reader *rd = NULL;
        struct fring_frontier out[16];
        uint8_t op, arg;
        int r;

        while (take(in, &op)) {
                switch (op % 8) {
                case 0:
                        patch(&R[RING_F], op & 8, in);
                        break;
                case 1:
                        if (rd)
                                break;
                        r = fring_attach(R[RING_F].name, &rd);
                        FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -EPROTO || r == -EAGAIN);
                        FUZZ_CHECK((r == 0) == (rd != NULL));
                        break;
                case 2:
                        if (!rd || !take(in, &arg))
                                break;
                        r = fring_read(rd, out, 1 + arg % 16, NULL);
                        FUZZ_CHECK(r == -EBADMSG || r == -EPROTO || (r >= 0 && r <= 1 + arg % 16));
                        for (int i = 0; i < r; i++)
                                FUZZ_CHECK((out[i].flags & ~(uint32_t)FRING_FRONTIER_FORGOTTEN) == 0);
                        break;
                case 3:
                        if (!rd || !take(in, &arg))
                                break;
                        r = fring_lookup(rd, 1000 + arg % 8, &out[0]);
                        FUZZ_CHECK(r == 0 || r == -ENOENT || r == -EBADMSG || r == -EPROTO ||
                                   r == -EAGAIN);
                        if (r == 0)
                                FUZZ_CHECK(out[0].id == 1000u + arg % 8);
                        break;
                case 4:
                        if (rd) {
                                const uint32_t *word;
                                uint32_t val;

                                r = fring_sleep_begin(rd, &word, &val);
                                if (r == 0) {
                                        (void)touch(word, sizeof(*word));
                                        fring_sleep_end(rd);
                                }
                                (void)fring_wait(rd, 0);
                        }
                        break;
                case 5:
                        rd = fring_reader_free(rd);
                        break;
                case 6:
                        if (rd || !take(in, &arg))
                                break;
                        R[RING_F].mapped = R[RING_F].size * (arg % 65) / 64;
                        FUZZ_CHECK(ftruncate(R[RING_F].fd, (off_t)R[RING_F].mapped) == 0);
                        break;
                case 7:
                        if (!rd)
                                restore(&R[RING_F]);
                        break;
                }
        }
        fring_reader_free(rd);
}

static void run_lring(struct in *in)
{
        struct lring_reader *rd = NULL;
        struct lring_entry e;
        uint64_t seq, us;
        uint8_t op, arg;
        int r;

        while (take(in, &op)) {
                switch (op % 8) {
                case 0:
                        patch(&R[RING_L], op & 8, in);
                        break;
                case 1:
                        if (rd)
                                break;
                        r = lring_attach(R[RING_L].name, &rd);
                        FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -EPROTO || r == -EAGAIN);
                        FUZZ_CHECK((r == 0) == (rd != NULL));
                        break;
                case 2:
                        if (!rd || !take(in, &arg))
                                break;
                        for (int i = 0; i <= arg % 8; i++) {
                                r = lring_read(rd, 100 + arg / 8, &e);
                                FUZZ_CHECK(r == 0 || r == 1 || r == -ESTALE || r == -EPIPE ||
                                           r == -EBADMSG || r == -EPROTO);
                                if (r != 1)
                                        break;
                                FUZZ_CHECK(e.seq > 100u + arg / 8);
                                if (e.flags & LRING_ENTRY_OMITTED)
                                        FUZZ_CHECK(!e.payload && e.len == 0);
                                else
                                        FUZZ_CHECK(e.len == 0 || e.payload);
                                FUZZ_CHECK(e.len <= LRING_CAPACITY_MAX);
                                (void)touch(e.payload, e.len);
                        }
                        break;
                case 3:
                        if (!rd || !take(in, &arg))
                                break;
                        r = lring_last(rd, &seq, &us);
                        FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -EPROTO || r == -EPIPE ||
                                   r == -EAGAIN);
                        if (arg & 1) {
                                r = lring_skip(rd);
                                FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -EPROTO ||
                                           r == -EPIPE || r == -EAGAIN);
                        }
                        break;
                case 4:
                        if (rd) {
                                const uint32_t *word;
                                uint32_t val;

                                r = lring_sleep_begin(rd, &word, &val);
                                if (r == 0) {
                                        (void)touch(word, sizeof(*word));
                                        lring_sleep_end(rd);
                                }
                                (void)lring_wait(rd, 0);
                        }
                        break;
                case 5:
                        rd = lring_reader_free(rd);
                        break;
                case 6:
                        if (rd || !take(in, &arg))
                                break;
                        R[RING_L].mapped = R[RING_L].size * (arg % 65) / 64;
                        FUZZ_CHECK(ftruncate(R[RING_L].fd, (off_t)R[RING_L].mapped) == 0);
                        break;
                case 7:
                        if (!rd)
                                restore(&R[RING_L]);
                        break;
                }
        }
        lring_reader_free(rd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct in in = { data, size };
        struct region *g;
        uint8_t mode = 0;

        setup();
        (void)take(&in, &mode);
        g = &R[mode & 1 ? RING_L : RING_F];
        if (mode & 2 && in.n > 0)
                for (size_t i = 0; i < g->size; i++)
                        g->map[i] = in.p[i % in.n];
        if (mode & 1)
                run_lring(&in);
        else
                run_fring(&in);
        restore(g);
        return 0;
}
