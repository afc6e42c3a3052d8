/* bench-wire.c -- round trip of a 64-byte request between two processes: framed IPC on
 * the io_uring loop versus a plain blocking ping-pong.  Prints figures, asserts nothing.
 *
 *   bench-wire [--iterations N] [--placement same|cross|both|free]
 *
 * Cases (the responders are forked processes):
 *   plain            write(64) / read(64) over a socketpair, blocking, both sides
 *   ipc loop<->loop  ipc_connect + loop on the requester, ipc_listen + loop echoing
 *   ipc sync->loop   ipc_sync_send/ipc_sync_recv requester, the same loop server
 * The ipc cases carry the 64 bytes as an Envelope payload (PING -> PONG).
 *
 * Method: the three cases run interleaved in rounds of ROUND round trips against
 * long-lived responders, so a noisy stretch of the VM hits all of them alike instead of
 * skewing one case's figures; the first round of each is a warm-up.
 *
 * Placement matters more than anything measured here, so it is explicit: "same" pins
 * both sides to CPU 0 (a wake-up is a context switch), "cross" pins the requester to
 * CPU 0 and the responders to CPU 1 (a wake-up crosses vCPUs: the ~25 us VM wake-up of
 * DESIGN.md section 11), "free" lets the scheduler choose (bimodal, hence not the
 * default).  Default: both.  The goal (issue): the ipc round trip within 1.5x of plain.
 */
#include "ipc/ipc.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loop/loop.h"
#include "t.h"
#include "util.h"

#define PAYLOAD 64
#define ROUND   500

static uint64_t iterations = 20000;
static int parent_cpu = -1, child_cpu = -1;     /* -1: not pinned */
static char path[256];

static void pin_to(int cpu)
{
        cpu_set_t set;

        CPU_ZERO(&set);
        if (cpu >= 0)
                CPU_SET((size_t)cpu, &set);
        else
                for (int i = 0; i < CPU_SETSIZE; i++)
                        CPU_SET((size_t)i, &set);
        if (sched_setaffinity(0, sizeof(set), &set) < 0)
                fprintf(stderr, "sched_setaffinity(%d): %s\n", cpu, strerror(errno));
}

struct stats {
        double p50, p99, mean;
};

static struct stats summarize(uint64_t *ns, size_t n)
{
        struct stats s = { 0 };
        double sum = 0;

        qsort(ns, n, sizeof(ns[0]), t_cmp_u64);
        for (size_t i = 0; i < n; i++)
                sum += (double)ns[i];
        s.p50 = (double)ns[n / 2] / 1000.0;
        s.p99 = (double)ns[(n * 99) / 100] / 1000.0;
        s.mean = sum / (double)n / 1000.0;
        return s;
}

static int read_full(int fd, void *buf, size_t n)
{
        uint8_t *p = buf;

        while (n > 0) {
                ssize_t k = read(fd, p, n);
                if (k <= 0) {
                        if (k < 0 && errno == EINTR)
                                continue;
                        return -1;
                }
                p += k;
                n -= (size_t)k;
        }
        return 0;
}

/* --- Responders (children) ---------------------------------------------------------- */

/* Plain echo over a socketpair; returns the pid, *ret_fd our end. */
static pid_t plain_start(int *ret_fd)
{
        uint8_t buf[PAYLOAD];
        int sv[2];
        pid_t pid;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                pin_to(child_cpu);
                close(sv[0]);
                while (read_full(sv[1], buf, sizeof(buf)) == 0)
                        if (write(sv[1], buf, sizeof(buf)) != sizeof(buf))
                                break;
                _exit(0);
        }
        close(sv[1]);
        *ret_fd = sv[0];
        return pid;
}

static void echo_frame(struct ipc_conn *c, const Coord__Envelope *env, void *userdata)
{
        Coord__Envelope reply = *env;

        reply.type = COORD__MSG_TYPE__MSG_PONG;
        (void)ipc_conn_send(c, &reply);
}

static void echo_close(struct ipc_conn *c, int reason, void *userdata)
{
}

static const struct ipc_conn_ops echo_ops = { .on_frame = echo_frame, .on_close = echo_close };

static void echo_accept(struct ipc_server *s, struct ipc_conn *c, void *userdata)
{
        ipc_conn_set_ops(c, &echo_ops, NULL);
}

static void on_term(struct loop *l, int signo, void *userdata)
{
        loop_stop(l);
}

/* The loop echo server; returns its pid once it listens.  close_fd: our end of the
 * plain socketpair, which the child must not keep open (fork copies it; only exec
 * would close it), or the plain responder would never see EOF. */
static pid_t server_start(int close_fd)
{
        int ready[2];
        pid_t pid;
        char c;

        if (pipe2(ready, O_CLOEXEC) < 0)
                return -errno;
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                struct ipc_server *s;
                struct loop *l;

                pin_to(child_cpu);
                close(ready[0]);
                close(close_fd);
                if (loop_new(64, &l) < 0 || loop_signal_add(l, SIGTERM, on_term, NULL) < 0 ||
                    ipc_listen(l, path, 0, echo_accept, NULL, &s) < 0)
                        _exit(1);
                if (write(ready[1], "r", 1) != 1)
                        _exit(1);
                close(ready[1]);
                loop_run(l);
                ipc_server_free(s);
                loop_free(l);
                _exit(0);
        }
        close(ready[1]);
        if (read(ready[0], &c, 1) != 1) {
                close(ready[0]);
                waitpid(pid, NULL, 0);
                return -EIO;
        }
        close(ready[0]);
        return pid;
}

/* --- Requesters: one round of n round trips each, times into ns[0, n) ------------------ */

static int round_plain(int fd, uint64_t *ns, uint64_t n)
{
        uint8_t buf[PAYLOAD] = { 1 };

        for (uint64_t i = 0; i < n; i++) {
                uint64_t t0 = now_ns();
                if (write(fd, buf, sizeof(buf)) != sizeof(buf) || read_full(fd, buf, sizeof(buf)) < 0)
                        return -EIO;
                ns[i] = now_ns() - t0;
        }
        return 0;
}

static void fill_ping(Coord__Envelope *env, uint8_t *payload, uint64_t req)
{
        *env = (Coord__Envelope)COORD__ENVELOPE__INIT;
        env->type = COORD__MSG_TYPE__MSG_PING;
        env->sender = COORD__ROLE__ROLE_CTL;
        env->incarnation = 1;
        env->request_id = req;
        env->payload.data = payload;
        env->payload.len = PAYLOAD;
}

struct pinger {
        struct loop *l;
        struct ipc_conn *c;
        uint64_t *ns;
        uint64_t i, n;          /* this round: i done of n */
        uint64_t req;
        uint64_t t0;
        uint8_t payload[PAYLOAD];
        int err;
        bool closed;
};

static void pinger_send(struct pinger *p)
{
        Coord__Envelope env;

        fill_ping(&env, p->payload, p->req);
        p->t0 = now_ns();
        p->err = ipc_conn_send(p->c, &env);
        if (p->err < 0)
                loop_stop(p->l);
}

static void pinger_frame(struct ipc_conn *c, const Coord__Envelope *env, void *userdata)
{
        struct pinger *p = userdata;
        uint64_t t = now_ns();

        if (env->request_id != p->req || env->payload.len != PAYLOAD) {
                p->err = -EBADMSG;
                loop_stop(p->l);
                return;
        }
        p->ns[p->i] = t - p->t0;
        p->req++;
        if (++p->i == p->n) {
                loop_stop(p->l);
                return;
        }
        pinger_send(p);
}

static void pinger_close(struct ipc_conn *c, int reason, void *userdata)
{
        struct pinger *p = userdata;

        if (p->err == 0 && p->i < p->n)
                p->err = reason ? reason : -ECONNRESET;
        p->closed = true;
        loop_stop(p->l);
}

static const struct ipc_conn_ops pinger_ops = { .on_frame = pinger_frame,
                                                .on_close = pinger_close };

static int round_loop(struct pinger *p, uint64_t *ns, uint64_t n)
{
        int r;

        p->ns = ns;
        p->i = 0;
        p->n = n;
        pinger_send(p);
        r = loop_run(p->l);
        return r < 0 ? r : p->err;
}

static int round_sync(int fd, uint64_t *ns, uint64_t n)
{
        uint8_t payload[PAYLOAD] = { 2 };

        for (uint64_t i = 0; i < n; i++) {
                Coord__Envelope env, *rep;
                uint64_t t0 = now_ns();
                int r;

                fill_ping(&env, payload, i);
                r = ipc_sync_send(fd, &env, 0);
                if (r < 0)
                        return r;
                r = ipc_sync_recv(fd, 0, -1, &rep);
                if (r < 0)
                        return r;
                ns[i] = now_ns() - t0;
                coord__envelope__free_unpacked(rep, NULL);
        }
        return 0;
}

/* --- One placement --------------------------------------------------------------------- */

static void row(const char *name, struct stats s, struct stats base, bool ratio)
{
        printf("wire %-16s p50=%6.1f us  p99=%6.1f us  mean=%6.1f us", name, s.p50, s.p99, s.mean);
        if (ratio)
                printf("  ratio p50=%.2fx p99=%.2fx", s.p50 / base.p50, s.p99 / base.p99);
        printf("\n");
}

static int run_placement(const char *title)
{
        uint64_t *ns[3] = { NULL }, done = 0;
        struct pinger p = { 0 };
        pid_t plain_pid, srv_pid = -1;
        int plain_fd = -1, sync_fd = -1, r;

        pin_to(parent_cpu);
        plain_pid = plain_start(&plain_fd);
        if (plain_pid < 0)
                return (int)plain_pid;
        srv_pid = server_start(plain_fd);
        if (srv_pid < 0) {
                r = (int)srv_pid;
                goto out;
        }
        for (int k = 0; k < 3; k++) {
                ns[k] = calloc(iterations, sizeof(uint64_t));
                if (!ns[k]) {
                        r = -ENOMEM;
                        goto out;
                }
        }
        r = loop_new(64, &p.l);
        if (r < 0)
                goto out;
        r = ipc_connect(p.l, path, 0, &pinger_ops, &p, &p.c);
        if (r < 0)
                goto out;
        sync_fd = ipc_sync_connect(path);
        if (sync_fd < 0) {
                r = sync_fd;
                goto out;
        }

        /* Round 0 is the warm-up: written at the start and overwritten by round 1. */
        for (bool warm = true; done < iterations; warm = false) {
                uint64_t n = iterations - done < ROUND ? iterations - done : ROUND;

                if ((r = round_plain(plain_fd, ns[0] + done, n)) < 0 ||
                    (r = round_loop(&p, ns[1] + done, n)) < 0 ||
                    (r = round_sync(sync_fd, ns[2] + done, n)) < 0)
                        goto out;
                if (!warm)
                        done += n;
        }

        printf("-- %s\n", title);
        {
                struct stats plain = summarize(ns[0], iterations);
                row("plain", plain, plain, false);
                row("ipc loop<->loop", summarize(ns[1], iterations), plain, true);
                row("ipc sync->loop", summarize(ns[2], iterations), plain, true);
        }
        printf("     requester loop max stall %.1f us\n",
               (double)loop_max_stall_ns(p.l) / 1000.0);

out:
        /* Let on_close run before loop_free(), which runs no callbacks. */
        if (p.c && !p.closed) {
                ipc_conn_close(p.c);
                while (!p.closed && loop_run(p.l) == 0)
                        ;
        }
        p.l = loop_free(p.l);
        if (sync_fd >= 0)
                close(sync_fd);
        if (srv_pid > 0) {
                kill(srv_pid, SIGTERM);
                waitpid(srv_pid, NULL, 0);
        }
        close(plain_fd);        /* EOF: the plain responder exits */
        waitpid(plain_pid, NULL, 0);
        for (int k = 0; k < 3; k++)
                free(ns[k]);
        return r;
}

int main(int argc, char **argv)
{
        const char *placement = "both";
        char *dir;
        int r = 0;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
                        if (parse_u64(argv[++i], 10000000, &iterations) < 0 || iterations == 0) {
                                fprintf(stderr, "bad --iterations\n");
                                return 2;
                        }
                } else if (strcmp(argv[i], "--placement") == 0 && i + 1 < argc) {
                        placement = argv[++i];
                } else {
                        fprintf(stderr, "usage: %s [--iterations N] "
                                "[--placement same|cross|both|free]\n", argv[0]);
                        return 2;
                }
        }
        if (strcmp(placement, "same") && strcmp(placement, "cross") &&
            strcmp(placement, "both") && strcmp(placement, "free")) {
                fprintf(stderr, "bad --placement\n");
                return 2;
        }

        dir = t_mkdtemp("bench-wire");
        if (!dir)
                return T_EXIT_ERROR;
        snprintf(path, sizeof(path), "%s/wire.sock", dir);

        printf("bench-wire: %d-byte request/response between two processes, %llu round "
               "trips per case, interleaved in rounds of %d (+1 warm-up round); "
               "goal: ipc p50 within 1.5x of plain\n",
               PAYLOAD, (unsigned long long)iterations, ROUND);
        if (!strcmp(placement, "same") || !strcmp(placement, "both")) {
                parent_cpu = child_cpu = 0;
                r = run_placement("same vCPU (both pinned to CPU 0)");
        }
        if (r >= 0 && (!strcmp(placement, "cross") || !strcmp(placement, "both"))) {
                if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
                        printf("-- different vCPUs: skipped, one CPU online\n");
                } else {
                        parent_cpu = 0;
                        child_cpu = 1;
                        r = run_placement("different vCPUs (requester on CPU 0, responders on CPU 1)");
                }
        }
        if (r >= 0 && !strcmp(placement, "free")) {
                parent_cpu = child_cpu = -1;
                r = run_placement("scheduler's choice (unpinned)");
        }
        if (r < 0)
                fprintf(stderr, "bench-wire: %s\n", strerror(-r));
        t_rmrf(dir);
        free(dir);
        return r < 0 ? 1 : 0;
}
