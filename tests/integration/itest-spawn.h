/* itest-spawn.h -- one daemon of an itest.h instance started by the test itself, with
 * extra environment (COORD_KILLPOINT, LD_PRELOAD of faultfs), so that the test is its
 * parent and sees how it ended (waitpid: killed by which signal, or its exit status).
 * `tools/coord up` restarts it afterwards without that environment.
 *
 * Include after itest.h; itest_main()'s prefix must be passed to spawn_set_prefix().
 */
#pragma once

#include <fcntl.h>
#include <sys/wait.h>

#include "itest.h"

static const char *spawn_prefix = "";

static __attribute__((unused)) void spawn_set_prefix(const char *p)
{
        spawn_prefix = p;
}

static const char *role_str(Coord__Role role)
{
        switch (role) {
        case COORD__ROLE__ROLE_ADAPTER:
                return "adapter";
        case COORD__ROLE__ROLE_LIFECYCLE:
                return "lifecycle";
        default:
                return "controller";
        }
}

/* SIGTERM the running daemon of role and wait until it is gone (up to 15 s). */
static bool stop_role(Coord__Role role)
{
        pid_t pid = pid_of(role);

        if (pid <= 0)
                return true;
        kill(pid, SIGTERM);
        for (int w = 0; w < 15000 && kill(pid, 0) == 0; w++) {
                (void)waitpid(pid, NULL, WNOHANG);      /* ours, if the test started it */
                usleep(1000);
        }
        if (kill(pid, 0) == 0) {
                fprintf(stderr, "\n    %s (pid %d) did not stop", role_str(role), (int)pid);
                return false;
        }
        return true;
}

/* Start the daemon of role, its output appended to its log, with env (NULL-terminated
 * "NAME=value" strings) added; its pid, or -1.  Does not wait for it to serve. */
static pid_t spawn_role(Coord__Role role, const char *const *env)
{
        char exe[512], data[512], port[16], inst[96], logp[512];
        pid_t pid;

        snprintf(exe, sizeof(exe), "%s/%s/coord-%s", build_dir, role_str(role), role_str(role));
        snprintf(data, sizeof(data), "%s/data", home);
        snprintf(port, sizeof(port), "%d", pg_port);
        snprintf(inst, sizeof(inst), "%s%d", spawn_prefix, (int)getpid());
        snprintf(logp, sizeof(logp), "%s/log/%s.log", home, role_str(role));
        pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0) {
                int fd = open(logp, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
                int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);

                if (fd < 0 || nul < 0)
                        _exit(127);
                dup2(nul, 0);
                dup2(fd, 1);
                dup2(fd, 2);
                setsid();
                for (const char *const *e = env; e && *e; e++)
                        putenv((char *)*e);
                if (role == COORD__ROLE__ROLE_ADAPTER)
                        execl(exe, exe, "--data-dir", data, "--run-dir", run_dir, "--instance", inst,
                              "--pg-port", port, (char *)NULL);
                else
                        execl(exe, exe, "--data-dir", data, "--run-dir", run_dir, "--instance", inst,
                              (char *)NULL);
                _exit(127);
        }
        return pid;
}

/* Whether child pid serves (answers a status request as that pid), or -1 once it has
 * exited (its wait status in *status); waits up to ms. */
static __attribute__((unused)) int spawn_wait_serving(Coord__Role role, pid_t pid, unsigned ms, int *status)
{
        for (unsigned w = 0; w < ms / 20; w++) {
                if (waitpid(pid, status, WNOHANG) == pid)
                        return -1;
                if (pid_of(role) == pid)
                        return 1;
                sleep_ms(20);
        }
        return 0;
}

/* Wait up to ms for child pid to end; true with its wait status in *status. */
static __attribute__((unused)) bool spawn_wait_exit(pid_t pid, unsigned ms, int *status)
{
        for (unsigned w = 0; w < ms / 10; w++) {
                if (waitpid(pid, status, WNOHANG) == pid)
                        return true;
                sleep_ms(10);
        }
        return false;
}

/* Whether the role's log contains text. */
static __attribute__((unused)) bool log_has(Coord__Role role, const char *text)
{
        return t_sh("grep -qF -- '%s' %s/log/%s.log", text, home, role_str(role)) == 0;
}
