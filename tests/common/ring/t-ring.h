/* t-ring.h -- what test-fring and test-lring share: ring names that main() can unlink
 * when a test failed, forked children and their checks, shared pages, mapping a ring's
 * region, whether a process sleeps, the attach checks beyond the header, and main().  Helpers are named t_* as in t.h (static, not
 * inline: inlined, t_region_map() makes gcc see its callers' regions as maybe unset).
 */
#pragma once

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ring/fring-layout.h"
#include "ring/lring-layout.h"
#include "t.h"
#include "util.h"

/* Every name handed out, so that t_ring_main() can unlink what a failed test left
 * behind (with the test's ring's unlink). */
static char t_ring_names[32][64];
static unsigned t_ring_counter;

static __attribute__((unused)) void t_ring_name(char *buf, size_t size, const char *tag)
{
        assert(t_ring_counter < ELEMENTSOF(t_ring_names) && size <= sizeof t_ring_names[0]);
        snprintf(buf, size, "/coord-test-%d-%s-%u", (int)getpid(), tag, t_ring_counter);
        snprintf(t_ring_names[t_ring_counter++], sizeof t_ring_names[0], "%s", buf);
}

/* POSIX shm and shared futexes must work here, or the test skips. */
static __attribute__((unused)) bool t_ring_supported(void)
{
        char name[64];
        uint32_t word = 0;
        int fd;

        t_ring_name(name, sizeof name, "probe");
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
                return false;
        close(fd);
        shm_unlink(name);
        return syscall(SYS_futex, &word, FUTEX_WAKE, 1, NULL, NULL, 0) >= 0;
}

/* A child's failed check: say where, exit 1.  Children never touch CUnit. */
#define C_ASSERT(cond)                                                                  \
        do {                                                                            \
                if (!(cond)) {                                                          \
                        fprintf(stderr, "child %d: %s:%d: %s\n", (int)getpid(),         \
                                __FILE__, __LINE__, #cond);                             \
                        _exit(T_EXIT_FAIL);                                             \
                }                                                                       \
        } while (0)

static __attribute__((unused)) pid_t t_fork(void)
{
        fflush(stdout);
        fflush(stderr);
        return fork();
}

/* The child's exit status, 128 + the signal that killed it, or -errno. */
static __attribute__((unused)) int t_wait_child(pid_t pid)
{
        int status;

        if (waitpid(pid, &status, 0) < 0)
                return -errno;
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* A MAP_SHARED anonymous page children write their results to. */
static __attribute__((unused)) void *t_shared_page(size_t size)
{
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

        return p == MAP_FAILED ? NULL : p;
}

/* A shared memory object mapped read-write, whole. */
struct t_region {
        uint8_t *p;
        size_t size;
};

static __attribute__((unused)) bool t_region_map(const char *name, struct t_region *ret)
{
        struct stat st;
        void *p;
        int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);

        if (fd < 0)
                return false;
        if (fstat(fd, &st) < 0) {
                close(fd);
                return false;
        }
        p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (p == MAP_FAILED)
                return false;
        *ret = (struct t_region) { .p = p, .size = (size_t)st.st_size };
        return true;
}

/* Whether pid is asleep (state S in /proc/PID/stat). */
static __attribute__((unused)) bool t_proc_sleeping(pid_t pid)
{
        char path[64], buf[512];
        const char *p;
        ssize_t n;
        int fd;

        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
                return false;
        buf[n] = '\0';
        p = strrchr(buf, ')');
        return p && p[1] == ' ' && p[2] == 'S';
}

/* What both rings' NAME.wait pages begin with. */
struct t_waitpage_head {
        uint64_t magic;
        uint32_t version;
};
_Static_assert(offsetof(struct fring_waitpage, magic) == offsetof(struct t_waitpage_head, magic) &&
               offsetof(struct fring_waitpage, version) == offsetof(struct t_waitpage_head, version) &&
               offsetof(struct lring_waitpage, magic) == offsetof(struct t_waitpage_head, magic) &&
               offsetof(struct lring_waitpage, version) == offsetof(struct t_waitpage_head, version),
               "the wait pages begin alike");

/* What the attach of ring name (its result: attach_result) refuses beyond a damaged
 * header, name's wait page (name + wait_suffix) taken away on the way: that page of
 * another version (-EPROTO) or magic (-EBADMSG), or missing (-ENOENT); an object too
 * small for a header, being created (-EAGAIN) or of 10 bytes (-EBADMSG). */
static __attribute__((unused)) void t_bad_wait_and_small(const char *name, const char *wait_suffix,
                                                         int (*attach_result)(const char *))
{
        char other[64], wname[NAME_MAX + 2];
        struct t_region w;
        int fd;

        /* NAME.wait damaged or missing. */
        snprintf(wname, sizeof wname, "%s%s", name, wait_suffix);
        CU_ASSERT_TRUE_FATAL(t_region_map(wname, &w));
        ((struct t_waitpage_head *)w.p)->version = 7;
        CU_ASSERT_EQUAL(attach_result(name), -EPROTO);
        ((struct t_waitpage_head *)w.p)->magic = 7;
        CU_ASSERT_EQUAL(attach_result(name), -EBADMSG);
        munmap(w.p, w.size);
        CU_ASSERT_EQUAL(shm_unlink(wname), 0);
        CU_ASSERT_EQUAL(attach_result(name), -ENOENT);

        /* Objects too small to hold a header. */
        t_ring_name(other, sizeof other, "small");
        fd = shm_open(other, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        CU_ASSERT_FATAL(fd >= 0);
        CU_ASSERT_EQUAL(attach_result(other), -EAGAIN);         /* being created */
        CU_ASSERT_EQUAL(ftruncate(fd, 10), 0);
        CU_ASSERT_EQUAL(attach_result(other), -EBADMSG);
        close(fd);
        CU_ASSERT_EQUAL(shm_unlink(other), 0);
}

/* main(): skip where POSIX shm or shared futexes do not work, else run the suites; then
 * unlink (the ring's) every name handed out. */
static __attribute__((unused)) int t_ring_main(const struct t_suite *suites,
                                               int (*unlink_ring)(const char *))
{
        int k;

        if (!t_ring_supported()) {
                fprintf(stderr, "POSIX shared memory or futexes unavailable: skipping\n");
                return T_EXIT_SKIP;
        }
        k = t_run(suites);
        for (unsigned i = 0; i < t_ring_counter; i++)
                (void)unlink_ring(t_ring_names[i]);
        return k;
}
