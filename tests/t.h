/* t.h -- what every CUnit test binary shares (test helpers are named t_*).
 *
 * Exit codes follow meson and liburing's test/helpers.h: 0 pass, 1 fail, 77 skip,
 * 99 setup error.  CU_basic_run_tests() only reports framework errors, so t_run() maps
 * the failure count to the exit code.
 */
#pragma once

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum {
        T_EXIT_PASS = 0,
        T_EXIT_FAIL = 1,
        T_EXIT_SKIP = 77,
        T_EXIT_ERROR = 99,
};

struct t_case {
        const char *name;
        void (*fn)(void);
};

struct t_suite {
        const char *name;
        const struct t_case *cases;     /* terminated by {NULL, NULL} */
};

/* Whether the comma-separated list names the case: by its name, or as "#i", i its
 * place in the binary (from 0, across suites, as T_LIST prints it). */
static inline bool t_listed(const char *list, const char *name, unsigned i)
{
        char num[16];

        snprintf(num, sizeof(num), "#%u", i);
        for (const char *p = list; p; ) {
                const char *e = strchr(p, ',');
                size_t len = e ? (size_t)(e - p) : strlen(p);

                if ((len == strlen(name) && strncmp(p, name, len) == 0) ||
                    (len == strlen(num) && strncmp(p, num, len) == 0))
                        return true;
                p = e ? e + 1 : NULL;
        }
        return false;
}

/* Each entry of list names some case of suites; else say which does not. */
static inline bool t_list_known(const char *list, const struct t_suite *suites)
{
        bool good = true;

        for (const char *p = list; p; ) {
                const char *e = strchr(p, ',');
                size_t len = e ? (size_t)(e - p) : strlen(p);
                char *one = strndup(p, len);
                bool found = false;
                unsigned i = 0;

                for (const struct t_suite *s = suites; one && s->name && !found; s++)
                        for (const struct t_case *c = s->cases; c->name && !found; c++, i++)
                                found = t_listed(one, c->name, i);
                if (!found) {
                        fprintf(stderr, "T_CASES: no case %.*s\n", (int)len, p);
                        good = false;
                }
                free(one);
                p = e ? e + 1 : NULL;
        }
        return good;
}

/* t_run_opts() flags. */
enum {
        /* A suite's first case sets up (daemons up) and its last one ends: T_CASES
         * keeps the first always, T_REVERSE leaves both where they are. */
        T_RUN_FIXTURES = 1 << 0,
};

/* Register the suites (terminated by {NULL, NULL}), run them, return the exit code.
 * The environment chooses what runs (docs/operations.md, "Running the tests"):
 * T_LIST=1 prints the cases ("#i suite: name") and runs none; T_CASES=a,b,... (names,
 * or "#i") registers those cases only; T_REVERSE=1 registers each suite's cases in
 * reverse order. */
static inline int t_run_opts(const struct t_suite *suites, unsigned flags)
{
        const char *only = getenv("T_CASES"), *rev = getenv("T_REVERSE"), *list = getenv("T_LIST");
        bool reverse = rev && strcmp(rev, "1") == 0;
        unsigned failed, i = 0;

        if (list && strcmp(list, "1") == 0) {
                for (const struct t_suite *s = suites; s->name; s++)
                        for (const struct t_case *c = s->cases; c->name; c++)
                                printf("#%u %s: %s\n", i++, s->name, c->name);
                return T_EXIT_PASS;
        }
        if (only && !*only)
                only = NULL;
        if (only && !t_list_known(only, suites))
                return T_EXIT_ERROR;
        if (CU_initialize_registry() != CUE_SUCCESS)
                return T_EXIT_ERROR;
        for (const struct t_suite *s = suites; s->name; s++) {
                CU_pSuite su = CU_add_suite(s->name, NULL, NULL);
                size_t n = 0, lo, hi;

                if (!su)
                        goto error;
                while (s->cases[n].name)
                        n++;
                /* [lo, hi) may be reordered */
                lo = (flags & T_RUN_FIXTURES) && n > 0 ? 1 : 0;
                hi = (flags & T_RUN_FIXTURES) && n > 1 ? n - 1 : n;
                for (size_t k = 0; k < n; k++) {
                        size_t j = reverse && k >= lo && k < hi ? lo + hi - 1 - k : k;
                        const struct t_case *c = &s->cases[j];

                        if (only && !((flags & T_RUN_FIXTURES) && j == 0) &&
                            !t_listed(only, c->name, i + (unsigned)j))
                                continue;
                        if (!CU_add_test(su, c->name, c->fn))
                                goto error;
                }
                i += (unsigned)n;
        }
        CU_basic_set_mode(CU_BRM_VERBOSE);
        if (CU_basic_run_tests() != CUE_SUCCESS)
                goto error;
        failed = CU_get_number_of_tests_failed() + CU_get_number_of_failures();
        CU_cleanup_registry();
        return failed ? T_EXIT_FAIL : T_EXIT_PASS;
error:
        CU_cleanup_registry();
        return T_EXIT_ERROR;
}

static inline int t_run(const struct t_suite *suites)
{
        return t_run_opts(suites, 0);
}

/* CLOCK_MONOTONIC in milliseconds. */
static inline uint64_t t_now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Sleep ms milliseconds, signals or not. */
static inline void t_sleep_ms(unsigned ms)
{
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

#define T_WAIT_STEP_MS 10

/* Wait for something to happen: ask pred(ctx) every T_WAIT_STEP_MS until it holds or
 * timeout_ms have passed; whether it held.  The last ask comes after the deadline, so
 * a slow poll is not a failure. */
static inline bool t_wait_until(bool (*pred)(void *ctx), void *ctx, unsigned timeout_ms)
{
        uint64_t deadline = t_now_ms() + timeout_ms;

        for (;;) {
                bool past = t_now_ms() >= deadline;

                if (pred(ctx))
                        return true;
                if (past)
                        return false;
                t_sleep_ms(T_WAIT_STEP_MS);
        }
}

/* t_wait_until() of an expression, evaluated again every step_ms: whether cond held
 * within timeout_ms.  t_wait_for() polls every T_WAIT_STEP_MS. */
#define t_wait_for_every(cond, timeout_ms, step_ms) ({                                  \
        uint64_t t_wait_end_ = t_now_ms() + (timeout_ms);                               \
        bool t_wait_ok_;                                                                \
                                                                                        \
        for (;;) {                                                                      \
                bool t_wait_past_ = t_now_ms() >= t_wait_end_;                          \
                                                                                        \
                if ((t_wait_ok_ = (cond)) || t_wait_past_)                              \
                        break;                                                          \
                t_sleep_ms(step_ms);                                                    \
        }                                                                               \
        t_wait_ok_;                                                                     \
})
#define t_wait_for(cond, timeout_ms) t_wait_for_every(cond, timeout_ms, T_WAIT_STEP_MS)

/* A fresh directory under $TMPDIR (or /tmp); the caller removes it with t_rmrf(). */
static inline char *t_mkdtemp(const char *tag)
{
        const char *base = getenv("TMPDIR");
        char *p = NULL;

        if (asprintf(&p, "%s/coord-%s-XXXXXX", base ? base : "/tmp", tag) < 0)
                return NULL;
        if (!mkdtemp(p)) {
                free(p);
                return NULL;
        }
        return p;
}

static inline void t_rmrf(const char *path)
{
        char *cmd = NULL;

        if (!path || asprintf(&cmd, "rm -rf '%s'", path) < 0)
                return;
        (void)!system(cmd);
        free(cmd);
}

/* A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick for port 0). */
static inline int t_free_port(void)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(a);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

        if (fd < 0)
                return -1;
        if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
            getsockname(fd, (struct sockaddr *)&a, &len) == 0)
                port = ntohs(a.sin_port);
        close(fd);
        return port;
}

/* Run a shell command built like printf; its exit status, or -1 when it did not exit. */
static inline int t_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int t_sh(const char *fmt, ...)
{
        char *cmd = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&cmd, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -1;
        r = system(cmd);
        free(cmd);
        return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
}

/* For qsort() of uint64_t. */
static inline int t_cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

/* "dir/name", malloc'ed; NULL when out of memory. */
static inline char *t_path_join(const char *dir, const char *name)
{
        char *p = NULL;

        if (asprintf(&p, "%s/%s", dir, name) < 0)
                return NULL;
        return p;
}

/* Run this test binary again with argv (a helper mode of its main()), keep_fd (if >= 0)
 * left open in it; the child's pid, or -1.  The child exits 99 if the exec fails. */
static inline pid_t t_spawn_self(char *const argv[], int keep_fd)
{
        pid_t pid = fork();

        if (pid != 0)
                return pid;
        if (keep_fd >= 0 && fcntl(keep_fd, F_SETFD, 0) < 0)
                _exit(T_EXIT_ERROR);
        execv("/proc/self/exe", argv);
        _exit(T_EXIT_ERROR);
}

/* Run this test binary again as "argv0 mode path FD", FD the write end of a new pipe
 * whose read end is *ret_fd (the caller closes it): a writer child that reports on the
 * pipe, for a test to kill -9 mid-stream.  The child's pid, or -1. */
static inline pid_t t_spawn_writer(const char *argv0, const char *mode, const char *path,
                                   int *ret_fd)
{
        char fd_arg[16];
        int fds[2];
        pid_t pid;

        if (pipe2(fds, O_CLOEXEC) < 0)
                return -1;
        snprintf(fd_arg, sizeof(fd_arg), "%d", fds[1]);
        fflush(stdout);
        pid = t_spawn_self((char *[]){ (char *)argv0, (char *)mode, (char *)path, fd_arg, NULL }, fds[1]);
        close(fds[1]);
        if (pid < 0) {
                close(fds[0]);
                return -1;
        }
        *ret_fd = fds[0];
        return pid;
}

/* kill -9 the child pid and reap it: it must have died of that signal. */
static inline void t_kill9_reap(pid_t pid)
{
        int status = 0;

        kill(pid, SIGKILL);
        CU_ASSERT_EQUAL_FATAL(waitpid(pid, &status, 0), pid);
        CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* PATH and its parent (a benchmark's default directory is two levels deep); those that
 * exist are fine.  0 or -errno. */
static inline int t_mkdir2(const char *path)
{
        char *parent = strdup(path), *slash;
        int r = 0;

        if (!parent)
                return -ENOMEM;
        slash = strrchr(parent, '/');
        if (slash && slash != parent) {
                *slash = 0;
                if (mkdir(parent, 0755) < 0 && errno != EEXIST)
                        r = -errno;
        }
        free(parent);
        if (r == 0 && mkdir(path, 0755) < 0 && errno != EEXIST)
                r = -errno;
        return r;
}
