/* util.h -- small helpers shared by every module: cleanup attributes, time, bytes.
 *
 * Header-only.  Nothing here allocates global state or logs.
 */
#pragma once

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)

/* Take ownership of a pointer: returns it and sets the variable to NULL, so a
 * _cleanup_ handler on the variable does nothing. */
#define TAKE_PTR(p) ({ __typeof__(p) _p_ = (p); (p) = NULL; _p_; })
#define TAKE_FD(fd) ({ int _fd_ = (fd); (fd) = -EBADF; _fd_; })

/* The one sorted-id binary search: the first index i in [0, n) whose KEY (an expression
 * of the index variable named i) is >= key, or n -- for KEY ascending in i. */
#define LOWER_BOUND(n, i, KEY, key) ({                                          \
        size_t _lo_ = 0, _hi_ = (n);                                            \
        while (_lo_ < _hi_) {                                                   \
                size_t i = _lo_ + (_hi_ - _lo_) / 2;                            \
                if ((KEY) < (key))                                              \
                        _lo_ = i + 1;                                           \
                else                                                            \
                        _hi_ = i;                                               \
        }                                                                       \
        _lo_;                                                                   \
})

static inline void freep(void *p) { free(*(void **)p); }
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
        *fd = -EBADF;
}
#define _cleanup_close_ _cleanup_(closep)

/* Monotonic and wall-clock time. */
static inline uint64_t now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static inline uint64_t now_ms(void) { return now_ns() / 1000000ull; }
static inline uint64_t wall_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

/* splitmix64 (Steele, Lea, Flood): a fast seeded generator for tests, benchmarks and
 * drills, whose sequence is a function of the seed alone.  Not for secrets. */
static inline uint64_t splitmix64(uint64_t *state)
{
        uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
}

/* Big-endian u64, for keys that must sort numerically in RocksDB. */
static inline void be64_put(uint8_t *p, uint64_t v)
{
        for (int i = 7; i >= 0; i--, v >>= 8)
                p[i] = (uint8_t)v;
}
static inline uint64_t be64_get(const uint8_t *p)
{
        uint64_t v = 0;
        for (int i = 0; i < 8; i++)
                v = v << 8 | p[i];
        return v;
}

/* Little-endian u32, the frame length prefix. */
static inline void le32_put(uint8_t *p, uint32_t v)
{
        p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8);
        p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline uint32_t le32_get(const uint8_t *p)
{
        return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The k-th smallest of v[0..n), counting from 0 -- v[k] as it would be after sorting --
 * by quickselect (Hoare partition around a median of three): expected O(n), where a
 * sort for one percentile is O(n log n).  v is reordered; afterwards every element
 * before k is <= v[k] and every one after is >= it.  Requires k < n. */
static inline uint64_t u64_nth(uint64_t *v, size_t n, size_t k)
{
        size_t lo = 0, hi = n - 1;

#define U64_SWAP_(a, b) do { uint64_t t_ = v[a]; v[a] = v[b]; v[b] = t_; } while (0)
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2, i = lo, j = hi;
                uint64_t pivot;

                /* v[lo] <= v[mid] <= v[hi]: both scans below stop inside [lo, hi]. */
                if (v[mid] < v[lo])
                        U64_SWAP_(mid, lo);
                if (v[hi] < v[lo])
                        U64_SWAP_(hi, lo);
                if (v[hi] < v[mid])
                        U64_SWAP_(hi, mid);
                pivot = v[mid];
                while (i <= j) {
                        while (v[i] < pivot)
                                i++;
                        while (v[j] > pivot)
                                j--;
                        if (i <= j) {
                                U64_SWAP_(i, j);
                                i++;
                                if (j == 0)
                                        break;
                                j--;
                        }
                }
                /* [lo, j] <= pivot, [i, hi] >= pivot, anything between == pivot. */
                if (k <= j)
                        hi = j;
                else if (k >= i)
                        lo = i;
                else
                        break;
        }
#undef U64_SWAP_
        return v[k];
}

/* Whether process pid is gone: no such process, or a zombie whose threads have all exited
 * and whose files are closed.  A zombie leader alone is not enough: the leader of a
 * killed multithreaded process turns Z while its other threads still exit, and a file
 * lock it held (a daemon's role lock) is released only when the last of them closed its
 * files -- a successor started before then finds the lock held.  Reaps pid when it is
 * the caller's child. */
bool proc_gone(pid_t pid);

/* Parse a whole decimal unsigned number; -EINVAL on junk, -ERANGE above max. */
int parse_u64(const char *s, uint64_t max, uint64_t *ret);
/* The number N of "key=N" in a list of space-separated key=value pairs (a daemon's
 * status detail), or UINT64_MAX when the list has no such key. */
uint64_t kv_u64(const char *list, const char *key);

/* Room for `need` elements of `size` bytes in the array *p of capacity *cap (elements),
 * doubling from 8: 0, or -ENOMEM with *p and *cap unchanged. */
int grow_array(void **p, size_t *cap, size_t need, size_t size);
/* The same for an array p of any element type (p may move). */
#define GROW_ARRAY(p, cap, need) ({                                             \
        void *_ga_ = (p);                                                       \
        int _gr_ = grow_array(&_ga_, &(cap), (need), sizeof(*(p)));             \
        (p) = _ga_;                                                             \
        _gr_;                                                                   \
})

/* The varint fields of an encoded protobuf message whose numbers are set in want
 * (bit f: field f, 1 <= f <= 31), top level only, without decoding the rest or
 * allocating: vals[f] = field f's last value (protobuf's rule for a singular field),
 * untouched when absent; other fields are skipped by wire type.  0, or -EBADMSG:
 * malformed (truncated, a group, a field number 0 or too large, or a wanted field that
 * is not a varint, which protobuf-c refuses too).  For hot loads of records of which a
 * few scalars are needed (lifecycle-load.c). */
int pb_varints(const void *msg, size_t len, uint32_t want, uint64_t *vals);

/* pthread_create() with the thread named (pthread_setname_np(); at most 15 bytes, so
 * `top -H`, `ps -L`, perf and gdb tell a daemon's threads apart).  0 or -errno; a name
 * the kernel refuses leaves the thread unnamed, nothing worse. */
int thread_start(pthread_t *t, const char *name, void *(*fn)(void *), void *arg);

/* Write a small file dir/name durably: a temporary file, fsync, rename over name, fsync
 * the directory.  0 or -errno (then name is the old file or none). */
int write_file_durable(const char *dir, const char *name, const char *content);

/* Read dir/name, a decimal u64 on its first line (as write_file_durable() writes it),
 * into *ret: 0, -ENOENT (no file, *ret untouched), -EBADMSG (not a number <= max: a
 * corrupt file must not read as a fresh start), -errno. */
int read_u64_file(const char *dir, const char *name, uint64_t max, uint64_t *ret);
