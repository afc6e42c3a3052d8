/* test-metrics -- common/hist.h buckets at their edges, common/sdnotify.c against a
 * socket the test binds (path and abstract; none set; an address it does not speak),
 * common/node/metrics.c on a made-up status reply: names, types, counters against
 * gauges, labels, cumulative histogram buckets, one family never twice. */
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "hist.h"
#include "node/metrics.h"
#include "sdnotify.h"
#include "t.h"
#include "util.h"

static void test_hist_buckets(void)
{
        struct hist h = { 0 };
        uint64_t c[HIST_BUCKETS], sum;

        CU_ASSERT_EQUAL(hist_bucket(0), 0);
        CU_ASSERT_EQUAL(hist_bucket(1), 0);
        CU_ASSERT_EQUAL(hist_bucket(2), 1);
        CU_ASSERT_EQUAL(hist_bucket(3), 2);
        CU_ASSERT_EQUAL(hist_bucket(4), 2);
        CU_ASSERT_EQUAL(hist_bucket(5), 3);
        CU_ASSERT_EQUAL(hist_bucket(1024), 10);
        CU_ASSERT_EQUAL(hist_bucket(1025), 11);
        CU_ASSERT_EQUAL(hist_bucket(1ull << 26), 26);
        CU_ASSERT_EQUAL(hist_bucket((1ull << 26) + 1), HIST_BUCKETS - 1);
        CU_ASSERT_EQUAL(hist_bucket(UINT64_MAX), HIST_BUCKETS - 1);
        /* Every value is at most its bucket's bound, and above the one before. */
        for (uint64_t us = 2; us < 100000; us += 7) {
                unsigned b = hist_bucket(us);
                CU_ASSERT(us <= (1ull << b) && us > (1ull << (b - 1)));
        }
        hist_record(&h, 3);
        hist_record(&h, 4);
        hist_record(&h, 1000);
        hist_read(&h, c, &sum);
        CU_ASSERT_EQUAL(c[2], 2);
        CU_ASSERT_EQUAL(c[10], 1);
        CU_ASSERT_EQUAL(sum, 1007);
}

static int bind_dgram(const char *addr)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t len = strlen(addr);
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

        memcpy(sa.sun_path, addr, len);
        if (addr[0] == '@')
                sa.sun_path[0] = '\0';
        if (fd < 0 || bind(fd, (struct sockaddr *)&sa,
                           (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (addr[0] != '@'))) < 0)
                return -1;
        return fd;
}

static bool got(int fd, const char *want)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };
        char buf[64];
        ssize_t n;

        if (poll(&p, 1, 1000) != 1 || (n = recv(fd, buf, sizeof(buf) - 1, 0)) < 0)
                return false;
        buf[n] = '\0';
        return strcmp(buf, want) == 0;
}

static void test_sdnotify(void)
{
        char *dir = t_mkdtemp("sdnotify"), path[256], abs[64];
        uint64_t usec = 0;
        int fd;

        CU_ASSERT_FATAL(dir != NULL);
        unsetenv("NOTIFY_SOCKET");
        CU_ASSERT_EQUAL(sdnotify_send("READY=1"), 0);
        snprintf(path, sizeof(path), "%s/n.sock", dir);
        fd = bind_dgram(path);
        CU_ASSERT_FATAL(fd >= 0);
        setenv("NOTIFY_SOCKET", path, 1);
        CU_ASSERT_EQUAL(sdnotify_send("READY=1"), 1);
        CU_ASSERT(got(fd, "READY=1"));
        close(fd);
        snprintf(abs, sizeof(abs), "@coord-test-sdnotify-%d", (int)getpid());
        fd = bind_dgram(abs);
        CU_ASSERT_FATAL(fd >= 0);
        setenv("NOTIFY_SOCKET", abs, 1);
        CU_ASSERT_EQUAL(sdnotify_send("STOPPING=1"), 1);
        CU_ASSERT(got(fd, "STOPPING=1"));
        close(fd);
        setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);
        CU_ASSERT_EQUAL(sdnotify_send("READY=1"), -EAFNOSUPPORT);
        setenv("NOTIFY_SOCKET", "/nonexistent/socket", 1);
        CU_ASSERT_EQUAL(sdnotify_send("READY=1"), -ENOENT);
        unsetenv("NOTIFY_SOCKET");

        unsetenv("WATCHDOG_USEC");
        CU_ASSERT_EQUAL(sdnotify_watchdog_usec(&usec), 0);
        setenv("WATCHDOG_USEC", "30000000", 1);
        unsetenv("WATCHDOG_PID");
        CU_ASSERT_EQUAL(sdnotify_watchdog_usec(&usec), 1);
        CU_ASSERT_EQUAL(usec, 30000000);
        setenv("WATCHDOG_PID", "1", 1);         /* someone else's */
        CU_ASSERT_EQUAL(sdnotify_watchdog_usec(&usec), 0);
        unsetenv("WATCHDOG_USEC");
        unsetenv("WATCHDOG_PID");
        t_rmrf(dir);
        free(dir);
}

static char *render(const Coord__StatusReply *s)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        if (!f)
                return NULL;
        CU_ASSERT_EQUAL(metrics_render(f, s), 0);
        fclose(f);
        return buf;
}

static size_t count_of(const char *text, const char *s)
{
        size_t n = 0;

        for (const char *p = text; (p = strstr(p, s)); p += strlen(s))
                n++;
        return n;
}

static void test_render(void)
{
        Coord__StatusReply s = COORD__STATUS_REPLY__INIT;
        Coord__PeerStatus p = COORD__PEER_STATUS__INIT, *pp = &p;
        Coord__Histogram h = COORD__HISTOGRAM__INIT, *hp = &h;
        uint64_t counts[HIST_BUCKETS] = { 0 };
        char *t;

        s.role = COORD__ROLE__ROLE_CONTROLLER;
        s.pid = 42;
        s.incarnation = 7;
        s.uptime_ms = 1500;
        s.ready = true;
        s.instance = (char *)"in\"st";
        s.detail = (char *)"ring=/coord-x-frontiers appends=12 held_max_us=5 collections=3 "
                           "appends_per_sync=1.50 sync_window_max_us=9 append_sync=thread appends=13 "
                           "Bad-Key=1 novalue 9lives=1";
        p.role = COORD__ROLE__ROLE_ADAPTER;
        p.connected = true;
        p.incarnation = 3;
        p.reconnects = 2;
        s.n_peers = 1;
        s.peers = &pp;
        counts[0] = 1;
        counts[3] = 2;
        counts[HIST_BUCKETS - 1] = 1;
        h.name = (char *)"append_duration_seconds";
        h.help = (char *)"appends";
        h.counts = counts;
        h.n_counts = HIST_BUCKETS;
        h.sum_us = 1500000;
        s.n_histograms = 1;
        s.histograms = &hp;

        t = render(&s);
        CU_ASSERT_FATAL(t != NULL);
        CU_ASSERT(strstr(t, "# TYPE coord_controller_appends_total counter\ncoord_controller_appends_total 12\n") != NULL);
        /* A key repeated in the detail line is printed once, its first value. */
        CU_ASSERT_EQUAL(count_of(t, "# TYPE coord_controller_appends_total "), 1);
        CU_ASSERT(strstr(t, "# TYPE coord_controller_held_max_us gauge\ncoord_controller_held_max_us 5\n") != NULL);
        CU_ASSERT(strstr(t, "# TYPE coord_controller_collections gauge\n") != NULL);
        CU_ASSERT(strstr(t, "coord_controller_appends_per_sync 1.5\n") != NULL);
        CU_ASSERT(strstr(t, "window") == NULL);
        CU_ASSERT(strstr(t, "Bad") == NULL && strstr(t, "9lives") == NULL && strstr(t, "novalue") == NULL);
        CU_ASSERT(strstr(t, "coord_controller_info{instance=\"in\\\"st\",pid=\"42\",ring=\"/coord-x-frontiers\","
                            "append_sync=\"thread\"} 1\n") != NULL);
        CU_ASSERT(strstr(t, "coord_controller_uptime_seconds 1.5\n") != NULL);
        CU_ASSERT(strstr(t, "coord_controller_peer_connected{peer=\"adapter\"} 1\n") != NULL);
        CU_ASSERT(strstr(t, "coord_controller_peer_connects_total{peer=\"adapter\"} 2\n") != NULL);
        /* Cumulative buckets, le in seconds; +Inf and _count agree. */
        CU_ASSERT(strstr(t, "# TYPE coord_controller_append_duration_seconds histogram\n") != NULL);
        CU_ASSERT(strstr(t, "coord_controller_append_duration_seconds_bucket{le=\"0.000001\"} 1\n") != NULL);
        CU_ASSERT(strstr(t, "coord_controller_append_duration_seconds_bucket{le=\"0.000004\"} 1\n") != NULL);
        CU_ASSERT(strstr(t, "coord_controller_append_duration_seconds_bucket{le=\"0.000008\"} 3\n") != NULL);
        CU_ASSERT(strstr(t, "coord_controller_append_duration_seconds_bucket{le=\"67.108864\"} 3\n") != NULL);
        CU_ASSERT(strstr(t, "coord_controller_append_duration_seconds_bucket{le=\"+Inf\"} 4\n") != NULL);
        CU_ASSERT(strstr(t, "coord_controller_append_duration_seconds_count 4\n") != NULL);
        CU_ASSERT(strstr(t, "coord_controller_append_duration_seconds_sum 1.500000\n") != NULL);
        /* The controller keeps no catalog. */
        CU_ASSERT(strstr(t, "catalog_seq") == NULL);
        free(t);

        CU_ASSERT(metrics_key_is_gauge("lag_p99_us"));
        CU_ASSERT(metrics_key_is_gauge("catalog_state_mem_bytes"));
        CU_ASSERT(metrics_key_is_gauge("last_records"));
        CU_ASSERT(!metrics_key_is_gauge("catalog_commits"));
        CU_ASSERT(!metrics_key_is_gauge("catalog_wal_bytes"));
}

int main(void)
{
        static const struct t_case cases[] = {
                { "hist buckets at their edges", test_hist_buckets },
                { "sd_notify: path, abstract, unset, unsupported, watchdog", test_sdnotify },
                { "a status reply as Prometheus text", test_render },
                { NULL, NULL },
        };

        return t_run((const struct t_suite[]){ { "metrics", cases }, { NULL, NULL } });
}
