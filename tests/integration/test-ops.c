/* test-ops -- what an operator and a service manager see of the real daemons: the
 * sd_notify protocol, --metrics-port, `coordctl metrics`, `coordctl status`.
 *
 * Cases, in order:
 *   a controller started by hand with NOTIFY_SOCKET naming a datagram socket the test
 *   bound (a path, then an abstract name): READY=1 arrives from the daemon's pid once
 *   its status says ready, WATCHDOG=1 follows at half of WATCHDOG_USEC, STOPPING=1
 *   at SIGTERM, exit 0;
 *   bad input: --metrics-port out of range or not a number, a missing or malformed
 *   config file, an unknown key -> exit 64 with a message naming it; a metrics port
 *   already taken -> exit 1 and the log line metrics_listen_failed;
 *   the three daemons started by tools/coord up with --metrics-port each, some DDL and
 *   INSERTs; a real scrape by curl of each: valid exposition (checked here, and by
 *   prometheus_client's parser where python3-prometheus-client is installed), the
 *   counters and the four latency histograms with samples in them;
 *   other paths 404, other methods 405, garbage 400, idle connections past the limit:
 *   the daemon serves SQL on, and the endpoint answers again;
 *   `coordctl metrics`: every daemon's counters, valid; `coordctl status`: the table,
 *   --verbose, --json (valid JSON by python3 -m json.tool);
 *   the lifecycle killed: status exit 1, metrics exit 1 with coord_lifecycle_up 0.
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "itest.h"
#include "itest-notify.h"

static int mport[3];            /* adapter, lifecycle, controller */
static const char *const mrole[3] = { "adapter", "lifecycle", "controller" };

/* ---- sd_notify ---- */

/* Start build/controller/coord-controller on a data directory of its own with env
 * NOTIFY_SOCKET=addr and WATCHDOG_USEC=200000; its pid. */
static pid_t start_notified_controller(const char *addr, const char *dir)
{
        char *data = NULL, *run = NULL, *exe = NULL, *log = NULL, inst[64];
        pid_t pid;

        snprintf(inst, sizeof(inst), "ntf%d", (int)getpid());
        if (asprintf(&data, "%s/data", dir) < 0 || asprintf(&run, "%s/run", dir) < 0 ||
            asprintf(&exe, "%s/controller/coord-controller", build_dir) < 0 ||
            asprintf(&log, "%s/controller.log", dir) < 0)
                return -1;
        pid = fork();
        if (pid == 0) {
                int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
                if (fd >= 0) {
                        dup2(fd, 2);
                        dup2(fd, 1);
                }
                setenv("NOTIFY_SOCKET", addr, 1);
                setenv("WATCHDOG_USEC", "200000", 1);
                unsetenv("WATCHDOG_PID");
                execl(exe, exe, "--data-dir", data, "--run-dir", run, "--instance", inst,
                      "--ring-slots", "64", "--ring-records", "64", (char *)NULL);
                _exit(127);
        }
        free(data);
        free(exe);
        free(log);
        free(run);
        return pid;
}

static bool controller_ready_in(const char *dir)
{
        char *run = NULL;
        Coord__StatusReply *s = NULL;
        bool ready = false;

        if (asprintf(&run, "%s/run", dir) < 0)
                return false;
        if (node_query_status(run, COORD__ROLE__ROLE_CONTROLLER, 2000, &s) == 0) {
                ready = s->ready;
                coord__status_reply__free_unpacked(s, NULL);
        }
        free(run);
        return ready;
}

static void notify_case(const char *addr, const char *dir)
{
        int fd = notify_bind(addr), status = -1;
        pid_t pid;

        CU_ASSERT_FATAL(fd >= 0);
        pid = start_notified_controller(addr, dir);
        CU_ASSERT_FATAL(pid > 0);
        CU_ASSERT(notify_wait(fd, "READY=1", pid, 20000));
        /* READY=1 is sent after the node is ready: its status agrees at once. */
        CU_ASSERT(controller_ready_in(dir));
        /* WATCHDOG_USEC=200000: a ping every 100 ms from the loop. */
        CU_ASSERT(notify_wait(fd, "WATCHDOG=1", pid, 2000));
        CU_ASSERT(notify_wait(fd, "WATCHDOG=1", pid, 2000));
        CU_ASSERT_EQUAL(kill(pid, SIGTERM), 0);
        CU_ASSERT(notify_wait(fd, "STOPPING=1", pid, 5000));
        CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
        CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        close(fd);
        /* The ring outlives its controller by design; this one is the test's. */
        (void)!t_sh("rm -f /dev/shm/coord-ntf%d-*", (int)getpid());
}

static void test_notify_path(void)
{
        char *dir = NULL, *addr = NULL;

        CU_ASSERT_FATAL(asprintf(&dir, "%s/notify-path", home) >= 0);
        CU_ASSERT_FATAL(asprintf(&addr, "%s/notify.sock", home) >= 0);
        CU_ASSERT_FATAL(mkdir(dir, 0700) == 0);
        notify_case(addr, dir);
        free(addr);
        free(dir);
}

static void test_notify_abstract(void)
{
        char *dir = NULL, addr[64];

        snprintf(addr, sizeof(addr), "@coord-test-notify-%d", (int)getpid());
        CU_ASSERT_FATAL(asprintf(&dir, "%s/notify-abstract", home) >= 0);
        CU_ASSERT_FATAL(mkdir(dir, 0700) == 0);
        notify_case(addr, dir);
        free(dir);
}

/* ---- bad input ---- */

/* Run the controller with args (a shell fragment) on a fresh data dir; its exit status,
 * its stderr in err. */
static int run_controller(const char *args, char *err, size_t size)
{
        char *cmd = NULL, *errf = NULL;
        int r;
        FILE *f;
        size_t n = 0;

        if (asprintf(&errf, "%s/bad.err", home) < 0 ||
            asprintf(&cmd, "timeout 20 %s/controller/coord-controller --data-dir %s/bad/data "
                           "--run-dir %s/bad/run --instance bad%d %s >/dev/null 2>%s",
                     build_dir, home, home, (int)getpid(), args, errf) < 0)
                return -1;
        r = system(cmd);
        err[0] = '\0';
        if ((f = fopen(errf, "r"))) {
                n = fread(err, 1, size - 1, f);
                err[n] = '\0';
                fclose(f);
        }
        free(cmd);
        free(errf);
        return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
}

static bool write_file(const char *path, const char *text)
{
        FILE *f = fopen(path, "w");

        if (!f)
                return false;
        fputs(text, f);
        return fclose(f) == 0;
}

static void test_bad_input(void)
{
        char err[4096], *conf = NULL, *args = NULL;
        int busy_fd, port;
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t alen = sizeof(a);

        CU_ASSERT_EQUAL(run_controller("--metrics-port 70000", err, sizeof(err)), 64);
        CU_ASSERT(strstr(err, "--metrics-port") && strstr(err, "out of range"));
        CU_ASSERT_EQUAL(run_controller("--metrics-port http", err, sizeof(err)), 64);
        CU_ASSERT(strstr(err, "--metrics-port") != NULL);
        CU_ASSERT_EQUAL(run_controller("--config /nonexistent/coord.conf", err, sizeof(err)), 64);
        CU_ASSERT(strstr(err, "cannot open config file") != NULL);

        CU_ASSERT_FATAL(asprintf(&conf, "%s/bad.conf", home) >= 0);
        CU_ASSERT_FATAL(asprintf(&args, "--config %s", conf) >= 0);
        CU_ASSERT_FATAL(write_file(conf, "[coord]\nlog-level = info\nthis line is no key\n"));
        CU_ASSERT_EQUAL(run_controller(args, err, sizeof(err)), 64);
        CU_ASSERT(strstr(err, "syntax error on line 3") != NULL);
        CU_ASSERT_FATAL(write_file(conf, "[coord]\npg-port = 6875\n"));  /* the adapter's, in [coord] */
        CU_ASSERT_EQUAL(run_controller(args, err, sizeof(err)), 64);
        CU_ASSERT(strstr(err, "config key 'pg-port' in [coord]: unknown option") != NULL);
        CU_ASSERT_FATAL(write_file(conf, "[controller]\nmetrics-port = -1\n"));
        CU_ASSERT_EQUAL(run_controller(args, err, sizeof(err)), 64);
        CU_ASSERT(strstr(err, "config key 'metrics-port' in [controller]: bad value") != NULL);

        /* A port someone else holds: the daemon exits 1 and says why. */
        busy_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CU_ASSERT_FATAL(busy_fd >= 0);
        CU_ASSERT_FATAL(bind(busy_fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(busy_fd, 1) == 0);
        CU_ASSERT_FATAL(getsockname(busy_fd, (struct sockaddr *)&a, &alen) == 0);
        port = ntohs(a.sin_port);
        free(args);
        CU_ASSERT_FATAL(asprintf(&args, "--metrics-port %d", port) >= 0);
        CU_ASSERT_EQUAL(run_controller(args, err, sizeof(err)), 1);
        CU_ASSERT(strstr(err, "event=metrics_listen_failed") && strstr(err, "Address already in use"));
        close(busy_fd);
        free(args);
        free(conf);
}

/* ---- metrics ---- */

/* Checks of the text exposition format (0.0.4) that a scraper relies on: every sample's
 * family has one # TYPE before it, no family twice, values parse, a histogram's buckets
 * never decrease and its +Inf bucket equals its _count.  Prints the first problem. */
static bool exposition_ok(const char *text)
{
        char *copy = strdup(text), *save = NULL, *line;
        char families[512][128];
        size_t nf = 0;
        char hist[128] = "";
        double last_bucket = -1, inf_bucket = -1;
        bool ok = copy != NULL;

        for (line = copy ? strtok_r(copy, "\n", &save) : NULL; ok && line; line = strtok_r(NULL, "\n", &save)) {
                char name[128], type[32];

                if (strncmp(line, "# HELP ", 7) == 0)
                        continue;
                if (sscanf(line, "# TYPE %127s %31s", name, type) == 2) {
                        for (size_t i = 0; i < nf; i++)
                                if (strcmp(families[i], name) == 0) {
                                        fprintf(stderr, "\n    family %s declared twice", name);
                                        ok = false;
                                }
                        if (nf < 512)
                                snprintf(families[nf++], sizeof(families[0]), "%s", name);
                        snprintf(hist, sizeof(hist), "%s", strcmp(type, "histogram") == 0 ? name : "");
                        last_bucket = inf_bucket = -1;
                        if (strcmp(type, "counter") && strcmp(type, "gauge") && strcmp(type, "histogram")) {
                                fprintf(stderr, "\n    %s: type %s", name, type);
                                ok = false;
                        }
                        continue;
                }
                if (line[0] == '#') {
                        fprintf(stderr, "\n    stray comment: %s", line);
                        ok = false;
                        continue;
                }
                {
                        size_t nl = strcspn(line, "{ ");
                        const char *val = strrchr(line, ' ');
                        char *end;
                        double v;
                        bool known = false;

                        snprintf(name, sizeof(name), "%.*s", (int)nl, line);
                        for (size_t i = 0; i < nf; i++) {
                                size_t fl = strlen(families[i]);
                                if (strncmp(name, families[i], fl) == 0 &&
                                    (name[fl] == '\0' || strcmp(name + fl, "_bucket") == 0 ||
                                     strcmp(name + fl, "_sum") == 0 || strcmp(name + fl, "_count") == 0))
                                        known = true;
                        }
                        v = val ? strtod(val + 1, &end) : 0;
                        if (!known || !val || *end) {
                                fprintf(stderr, "\n    bad sample line: %s", line);
                                ok = false;
                                continue;
                        }
                        if (hist[0] && strstr(name, "_bucket")) {
                                if (v < last_bucket) {
                                        fprintf(stderr, "\n    %s: bucket decreases: %s", hist, line);
                                        ok = false;
                                }
                                last_bucket = v;
                                if (strstr(line, "le=\"+Inf\""))
                                        inf_bucket = v;
                        }
                        if (hist[0] && strstr(name, "_count") && v != inf_bucket) {
                                fprintf(stderr, "\n    %s: _count %g but +Inf bucket %g", hist, v, inf_bucket);
                                ok = false;
                        }
                }
        }
        free(copy);
        return ok;
}

/* The value of the sample line that starts with `prefix` followed by a space; -1 when
 * absent. */
static double sample(const char *text, const char *prefix)
{
        size_t n = strlen(prefix);

        for (const char *p = text; (p = strstr(p, prefix)); p += n)
                if ((p == text || p[-1] == '\n') && p[n] == ' ')
                        return strtod(p + n + 1, NULL);
        return -1;
}

/* Output of a shell command (malloc'ed, NUL-terminated) and its exit status. */
static char *capture(int *ret_status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *capture(int *ret_status, const char *fmt, ...)
{
        char *cmd = NULL, *buf = NULL;
        size_t len = 0, cap = 0;
        va_list ap;
        FILE *f;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&cmd, fmt, ap);
        va_end(ap);
        if (r < 0)
                return NULL;
        f = popen(cmd, "r");
        free(cmd);
        if (!f)
                return NULL;
        for (;;) {
                if (len + 4096 + 1 > cap) {
                        char *nb = realloc(buf, cap = cap * 2 + 8192);
                        if (!nb)
                                break;
                        buf = nb;
                }
                size_t n = fread(buf + len, 1, 4096, f);
                if (n == 0)
                        break;
                len += n;
        }
        if (buf)
                buf[len] = '\0';
        r = pclose(f);
        if (ret_status)
                *ret_status = WIFEXITED(r) ? WEXITSTATUS(r) : -1;
        return buf;
}

static char *scrape(int i, int *ret_status)
{
        return capture(ret_status, "curl -sf --max-time 5 http://127.0.0.1:%d/metrics", mport[i]);
}

/* python3-prometheus-client's parser, where it is installed (Debian's python3). */
static int python_parse(const char *path)
{
        if (t_sh("/usr/bin/python3 -c 'import prometheus_client' 2>/dev/null") != 0)
                return 77;
        return t_sh("/usr/bin/python3 -c 'import sys; from prometheus_client.parser import "
                    "text_string_to_metric_families as p; n = len(list(p(open(sys.argv[1]).read()))); "
                    "sys.exit(0 if n > 20 else 1)' %s", path);
}

static void test_up_with_metrics(void)
{
        for (int i = 0; i < 3 && !mport[2]; i++)       /* once: the daemons keep them */
                CU_ASSERT_FATAL((mport[i] = t_free_port()) > 0);
        CU_ASSERT_EQUAL_FATAL(t_sh("COORD_ADAPTER_ARGS='--metrics-port %d' COORD_LIFECYCLE_ARGS='--metrics-port %d' "
                                   "COORD_CONTROLLER_ARGS='--metrics-port %d' %s up >/dev/null",
                                   mport[0], mport[1], mport[2], coord_cmd), 0);
}

static bool ops_worked;

static void test_workload(void)
{
        PGconn *c;

        if (pid_of(COORD__ROLE__ROLE_ADAPTER) <= 0)
                test_up_with_metrics();         /* alone: the case before is this one's setup */
        c = db();
        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT(ok(c, "DROP TABLE IF EXISTS ops_t, ops_u"));
        CU_ASSERT(ok(c, "CREATE TABLE ops_t (id int, v text)"));
        for (int i = 0; i < 20; i++)
                CU_ASSERT(okf(c, "INSERT INTO ops_t VALUES (%d, 'x')", i));
        CU_ASSERT(ok(c, "CREATE TABLE ops_u (id int)"));
        CU_ASSERT(ok(c, "SELECT * FROM ops_t"));
        PQfinish(c);
        /* At least one publication done (every second by default). */
        for (int w = 0; w < 50 && lc_stat("publications") < 2; w++)
                sleep_ms(100);
        CU_ASSERT(lc_stat("publications") >= 2);
        ops_worked = true;
}

/* The daemons up with their metrics ports and test_workload()'s counters behind them:
 * what the cases below read, made here when those two did not run (T_CASES, T_REVERSE,
 * tools/test-alone). */
static void ops_ready(void)
{
        if (!ops_worked)
                test_workload();
}

static void test_scrape(void)
{
        static const char *const need[3][4] = {
                { "coord_adapter_catalog_commits_total", "coord_adapter_statement_duration_seconds_count",
                  "coord_adapter_catalog_commit_duration_seconds_count", "coord_adapter_ready" },
                { "coord_lifecycle_publications_total", "coord_lifecycle_publication_duration_seconds_count",
                  "coord_lifecycle_follower_lag_seconds_count", "coord_lifecycle_applied_total" },
                { "coord_controller_appends_total", "coord_controller_append_duration_seconds_count",
                  "coord_controller_collections", "coord_controller_syncs_total" },
        };

        ops_ready();
        for (int i = 0; i < 3; i++) {
                int st = -1;
                char *m = scrape(i, &st), *path = NULL;

                CU_ASSERT_EQUAL(st, 0);
                CU_ASSERT_FATAL(m != NULL);
                CU_ASSERT(exposition_ok(m));
                for (int k = 0; k < 4; k++) {
                        double v = sample(m, need[i][k]);
                        if (v <= 0)
                                fprintf(stderr, "\n    %s: %s = %g", mrole[i], need[i][k], v);
                        CU_ASSERT(v > 0);
                }
                CU_ASSERT(strstr(m, "_bucket{le=\"+Inf\"}") != NULL);
                CU_ASSERT_FATAL(asprintf(&path, "%s/scrape-%s.txt", home, mrole[i]) >= 0);
                CU_ASSERT(write_file(path, m));
                {
                        int r = python_parse(path);
                        if (r == 77)
                                printf("\n    (python3-prometheus-client not installed: own checks only)");
                        else
                                CU_ASSERT_EQUAL(r, 0);
                }
                free(path);
                free(m);
        }
}

/* A raw request; the status code of the answer, or -1. */
static int raw_http(int port, const char *req)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        char buf[256];
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), code = -1;
        ssize_t n;

        if (fd < 0)
                return -1;
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && write(fd, req, strlen(req)) >= 0) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                if (poll(&p, 1, 5000) == 1 && (n = read(fd, buf, sizeof(buf) - 1)) > 0) {
                        buf[n] = '\0';
                        if (sscanf(buf, "HTTP/1.1 %d", &code) != 1)
                                code = -1;
                }
        }
        close(fd);
        return code;
}

static void test_bad_requests(void)
{
        int idle[12];
        uint64_t start;
        bool back = false;

        ops_ready();
        CU_ASSERT_EQUAL(t_sh("test \"$(curl -s -o /dev/null -w '%%{http_code}' http://127.0.0.1:%d/)\" = 404", mport[0]), 0);
        CU_ASSERT_EQUAL(t_sh("test \"$(curl -s -o /dev/null -w '%%{http_code}' http://127.0.0.1:%d/metricsx)\" = 404", mport[1]), 0);
        CU_ASSERT_EQUAL(t_sh("test \"$(curl -s -o /dev/null -w '%%{http_code}' -X POST http://127.0.0.1:%d/metrics)\" = 405", mport[2]), 0);
        CU_ASSERT_EQUAL(raw_http(mport[0], "garbage\r\n\r\n"), 400);
        CU_ASSERT_EQUAL(raw_http(mport[0], "GET metrics HTTP/1.1\r\n\r\n"), 400);
        CU_ASSERT_EQUAL(raw_http(mport[0], "GET /metrics SMTP/1.0\r\n\r\n"), 400);
        {
                char big[6000];
                memset(big, 'a', sizeof(big) - 1);
                big[sizeof(big) - 1] = '\0';
                memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
                CU_ASSERT_EQUAL(raw_http(mport[0], big), 400);
        }
        CU_ASSERT_EQUAL(raw_http(mport[0], "GET /metrics HTTP/1.0\r\n\r\n"), 200);

        /* More idle connections than the endpoint keeps: the daemon serves SQL on, and
         * the endpoint answers again once they time out (5 s). */
        for (int i = 0; i < 12; i++) {
                struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)mport[0]),
                                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
                idle[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                CU_ASSERT(idle[i] >= 0 && connect(idle[i], (struct sockaddr *)&a, sizeof(a)) == 0);
        }
        {
                PGconn *c = db();
                CU_ASSERT(c && ok(c, "SELECT 1"));
                PQfinish(c);
        }
        start = now_ms();
        while (now_ms() - start < 10000 && !back) {
                int st = -1;
                char *m = scrape(0, &st);
                back = st == 0 && m && sample(m, "coord_adapter_up") == 1;
                free(m);
                if (!back)
                        sleep_ms(200);
        }
        CU_ASSERT(back);
        printf("\n    endpoint answered again %llu ms after 12 idle connections",
               (unsigned long long)(now_ms() - start));
        for (int i = 0; i < 12; i++)
                if (idle[i] >= 0)
                        close(idle[i]);
        CU_ASSERT_EQUAL(t_sh("%s status --rate-ms 0 >/dev/null", coord_cmd), 0);
}

static void test_coordctl_metrics(void)
{
        int st = -1;
        char *m, *path = NULL;

        ops_ready();
        m = capture(&st, "%s/tools/coordctl --run-dir %s metrics", build_dir, run_dir);
        CU_ASSERT_EQUAL(st, 0);
        CU_ASSERT_FATAL(m != NULL);
        CU_ASSERT(exposition_ok(m));
        for (int i = 0; i < 3; i++) {
                char name[64];
                snprintf(name, sizeof(name), "coord_%s_up", mrole[i]);
                CU_ASSERT(sample(m, name) == 1);
        }
        CU_ASSERT(sample(m, "coord_adapter_catalog_commits_total") > 0);
        CU_ASSERT(sample(m, "coord_controller_append_duration_seconds_count") > 0);
        CU_ASSERT_FATAL(asprintf(&path, "%s/coordctl-metrics.txt", home) >= 0);
        CU_ASSERT(write_file(path, m));
        if (python_parse(path) != 77)
                CU_ASSERT_EQUAL(python_parse(path), 0);
        free(path);
        free(m);
}

static void test_status(void)
{
        int st = -1;
        char *out;

        ops_ready();
        out = capture(&st, "%s status --rate-ms 200", coord_cmd);
        CU_ASSERT_EQUAL(st, 0);
        CU_ASSERT_FATAL(out != NULL);
        CU_ASSERT(strstr(out, "ROLE") && strstr(out, "INC") && strstr(out, "UPTIME") && strstr(out, "ERRORS"));
        CU_ASSERT(strstr(out, "commits/s") && strstr(out, "appends/s") && strstr(out, "lag"));
        CU_ASSERT(strstr(out, "all daemons ready and connected") != NULL);
        /* Short: a header, three rows, the verdict -- no counter dump. */
        CU_ASSERT(strstr(out, "catalog_commits=") == NULL);
        printf("\n%s", out);
        free(out);

        out = capture(&st, "%s status --verbose --rate-ms 0", coord_cmd);
        CU_ASSERT_EQUAL(st, 0);
        CU_ASSERT(out && strstr(out, "catalog_commits=") && strstr(out, "appends=") &&
                  strstr(out, "publications=") && strstr(out, "statement_duration_seconds: count"));
        free(out);

        CU_ASSERT_EQUAL(t_sh("%s status --json --rate-ms 0 | python3 -m json.tool >/dev/null", coord_cmd), 0);
        CU_ASSERT_EQUAL(t_sh("%s status --json --rate-ms 0 | python3 -c 'import json,sys; d=json.load(sys.stdin); "
                             "a,l,c=d[\"daemons\"]; "
                             "assert d[\"ok\"] and a[\"counters\"][\"catalog_commits\"] > 0; "
                             "assert c[\"counters\"][\"append_sync\"] == \"thread\"; "
                             "assert a[\"histograms\"][\"statement_duration_seconds\"][\"count\"] > 0; "
                             "assert l[\"figures\"][\"publications\"] >= 2; "
                             "assert \"appends_per_s\" in c[\"figures\"]'", coord_cmd), 0);
}

static void test_lifecycle_down(void)
{
        int st = -1;
        char *m;

        ops_ready();
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_LIFECYCLE));
        CU_ASSERT_NOT_EQUAL(t_sh("%s status --rate-ms 0 >/dev/null", coord_cmd), 0);
        m = capture(&st, "%s/tools/coordctl --run-dir %s metrics 2>/dev/null", build_dir, run_dir);
        CU_ASSERT_EQUAL(st, 1);
        CU_ASSERT(m && sample(m, "coord_lifecycle_up") == 0 && sample(m, "coord_adapter_up") == 1);
        CU_ASSERT(m && exposition_ok(m));
        free(m);
        CU_ASSERT_EQUAL(t_sh("COORD_LIFECYCLE_ARGS='--metrics-port %d' %s up >/dev/null", mport[1], coord_cmd), 0);
        m = scrape(1, &st);
        CU_ASSERT(st == 0 && m && sample(m, "coord_lifecycle_incarnation") == 2);
        free(m);
}

static const struct t_case cases[] = {
        { "READY=1, WATCHDOG=1, STOPPING=1 on a NOTIFY_SOCKET path", test_notify_path },
        { "the same on an abstract NOTIFY_SOCKET", test_notify_abstract },
        { "bad --metrics-port, config file, busy port: clear error, exit status", test_bad_input },
        { "up with --metrics-port", test_up_with_metrics },
        { "DDL, INSERTs, a publication", test_workload },
        { "curl each daemon's /metrics: valid, counters, histograms", test_scrape },
        { "404, 405, 400, idle connections: the daemon unaffected", test_bad_requests },
        { "coordctl metrics", test_coordctl_metrics },
        { "coordctl status: table, --verbose, --json", test_status },
        { "lifecycle down: status 1, metrics up 0", test_lifecycle_down },
        { NULL, NULL },
};

int main(void)
{
        return itest_main("ops", "op", (const struct t_suite[]){ { "ops", cases }, { NULL, NULL } });
}
