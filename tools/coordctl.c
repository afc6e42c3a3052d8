/* coordctl -- operator's command line for a running Coord instance.
 *
 *   coordctl [--run-dir DIR] [--timeout-ms N] status [--json] [--verbose] [--rate-ms N]
 *   coordctl [--run-dir DIR] [--timeout-ms N] metrics
 *   coordctl [--run-dir DIR] [--timeout-ms N] check [--json]
 *   coordctl [--run-dir DIR] [--timeout-ms N] lease claim|renew|commit|release KEY ...
 *                                                      (coordctl-lease.c)
 *
 * status: a short table per daemon -- pid, incarnation, uptime, readiness, peers, and the
 * figures an operator watches (catalog commits/s, publications and follower lag,
 * appends/s, errors); rates are taken over --rate-ms (two status samples; 0: the average
 * since the daemon started).  --verbose adds every counter and histogram; --json prints
 * all of it as one JSON object.  Exit status 0 when all three daemons answer and are
 * ready, 1 when any is down or not ready, 64 on a usage error.  Standby adapters
 * (coord-adapter --standby) waiting for the primary to exit are listed below the table
 * (JSON: "standbys"), and the fleet's other followers (coord-lifecycle --instance-id K)
 * have rows of their own (JSON: "followers"); neither changes the exit status.
 *
 * metrics: every counter of every daemon in the Prometheus text format
 * (common/node/metrics.h); a daemon that does not answer shows coord_<role>_up 0.  Exit
 * status 0 when all three answered, 1 otherwise.
 *
 * check: the diagnostic reconstruction (I10, adapter/adapter-check.h).  The adapter
 * rebuilds its catalog state from the durable log at an aligned sequence number and
 * compares it with its memory.  Exit status 0 only on a match; 1 on a mismatch, when
 * the adapter is down or does not answer, or when the check could not run; 64 on a
 * usage error.
 */
#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "coordctl-lease.h"
#include "node/metrics.h"
#include "node/node.h"
#include "util.h"

static const Coord__Role daemons[] = {
        COORD__ROLE__ROLE_ADAPTER, COORD__ROLE__ROLE_LIFECYCLE, COORD__ROLE__ROLE_CONTROLLER,
};

static void usage(FILE *f)
{
        fprintf(f, "Usage: coordctl [--run-dir DIR] [--timeout-ms N] status [--json] [--verbose] [--rate-ms N]\n"
                   "       coordctl [--run-dir DIR] [--timeout-ms N] metrics\n"
                   "       coordctl [--run-dir DIR] [--timeout-ms N] check [--json]\n"
                   "       coordctl [--run-dir DIR] [--timeout-ms N] lease claim KEY HOLDER TTL_MS\n"
                   "       coordctl ... lease renew|release KEY HOLDER EPOCH\n"
                   "       coordctl ... lease commit KEY HOLDER EPOCH COMMIT_ID VERSION\n"
                   "\n"
                   "  status            each daemon's pid, incarnation, uptime, readiness, peers and\n"
                   "                    figures (commits/s, publications and follower lag, appends/s,\n"
                   "                    errors); --verbose adds every counter and histogram\n"
                   "  metrics           every counter of every daemon, Prometheus text format\n"
                   "  check             the adapter rebuilds the catalog from its durable log and\n"
                   "                    compares it with its memory at one sequence number (I10)\n"
                   "  lease ...         claim, renew, commit or release a lease in the catalog\n"
                   "                    (issue 33); prints status=ok|fenced|busy key=value ...\n"
                   "  --run-dir DIR     the instance's run directory (default $COORD_RUN_DIR or ./var/run)\n"
                   "  --timeout-ms N    how long to wait for each daemon (default 2000; check: 30000)\n"
                   "  --json            one JSON object instead of the table (all counters)\n"
                   "  --verbose         status: every counter under the table\n"
                   "  --rate-ms N       status: take rates over N ms, two samples (default 500;\n"
                   "                    0: the average since each daemon started, no wait)\n"
                   "\n"
                   "Exit status: status: 0 all three daemons up and ready, 1 otherwise;\n"
                   "metrics: 0 all three answered, 1 otherwise;\n"
                   "check: 0 match, 1 mismatch, adapter down or check failed; 64 usage error;\n"
                   "lease: 0 ok, 2 fenced, 3 busy, 1 adapter down or error.\n");
}

static const char *err_word(int r)
{
        switch (r) {
        case -ENOENT: return "down (no socket)";
        case -ECONNREFUSED: return "down (socket refused)";
        case -ETIMEDOUT: return "not answering";
        default: return "error";
        }
}

static void print_json_string(const char *s)
{
        putchar('"');
        for (; s && *s; s++) {
                unsigned char ch = (unsigned char)*s;
                if (ch == '"' || ch == '\\')
                        printf("\\%c", ch);
                else if (ch < 0x20)
                        printf("\\u%04x", ch);
                else
                        putchar(ch);
        }
        putchar('"');
}

/* A number of a daemon's detail line (key=value ...); false when absent. */
static bool kv_num(const Coord__StatusReply *s, const char *key, double *ret)
{
        size_t k = strlen(key);

        for (const char *p = s && s->detail ? s->detail : ""; (p = strstr(p, key)); p += k) {
                char *end;
                double v;

                if ((p != s->detail && p[-1] != ' ') || p[k] != '=')
                        continue;
                v = strtod(p + k + 1, &end);
                if (end == p + k + 1 || (*end && *end != ' '))
                        return false;
                *ret = v;
                return true;
        }
        return false;
}

/* A word of a daemon's detail line into buf ("" when absent). */
static void kv_word(const Coord__StatusReply *s, const char *key, char *buf, size_t n)
{
        size_t k = strlen(key);

        buf[0] = '\0';
        for (const char *p = s && s->detail ? s->detail : ""; (p = strstr(p, key)); p += k)
                if ((p == s->detail || p[-1] == ' ') && p[k] == '=') {
                        snprintf(buf, n, "%.*s", (int)strcspn(p + k + 1, " "), p + k + 1);
                        return;
                }
}

static double kv_or0(const Coord__StatusReply *s, const char *key)
{
        double v = 0;
        return kv_num(s, key, &v) ? v : 0;
}

/* What the operator watches, per role (docs/operations.md, Status). */
struct figures {
        double rate;            /* adapter: catalog commits/s; controller: appends/s */
        double publications;    /* lifecycle */
        double lag_us, lag_p99_us;
        double errors;
        char duty[16];          /* lifecycle of a fleet: "active", "standby"; else "" */
};

/* The counter a rate is taken of, per role. */
static const char *rate_key(Coord__Role role)
{
        return role == COORD__ROLE__ROLE_ADAPTER ? "catalog_commits"
             : role == COORD__ROLE__ROLE_CONTROLLER ? "appends" : NULL;
}

/* Errors an operator should look at: rejected frames and stale incarnations everywhere,
 * failed publications (lifecycle), replies failed by a sync, sink and source errors
 * (controller). */
static double errors_of(const Coord__StatusReply *s)
{
        double e = (double)s->frames_rejected + (double)s->stale_rejected;

        e += kv_or0(s, "publication_errors") + kv_or0(s, "held_failed") +
             kv_or0(s, "sink_errors") + kv_or0(s, "source_errors");
        return e;
}

/* first may be NULL (no second sample: the average since start). */
static void figures_of(const Coord__StatusReply *first, const Coord__StatusReply *s,
                       struct figures *f)
{
        const char *rk = rate_key(s->role);

        *f = (struct figures){ .errors = errors_of(s) };
        if (rk) {
                double now = kv_or0(s, rk);
                if (first && first->incarnation == s->incarnation && s->uptime_ms > first->uptime_ms)
                        f->rate = (now - kv_or0(first, rk)) * 1000.0 /
                                  (double)(s->uptime_ms - first->uptime_ms);
                else if (s->uptime_ms)
                        f->rate = now * 1000.0 / (double)s->uptime_ms;
        }
        f->publications = kv_or0(s, "publications");
        kv_word(s, "duty", f->duty, sizeof(f->duty));
        f->lag_us = kv_or0(s, "lag_last_us");
        f->lag_p99_us = kv_or0(s, "lag_p99_us");
}

static void fmt_us(char *buf, size_t n, double us)
{
        if (us < 1000)
                snprintf(buf, n, "%.0fus", us);
        else if (us < 1e6)
                snprintf(buf, n, "%.1fms", us / 1000);
        else
                snprintf(buf, n, "%.2fs", us / 1e6);
}

static void fmt_uptime(char *buf, size_t n, uint64_t ms)
{
        if (ms < 60000)
                snprintf(buf, n, "%.1fs", (double)ms / 1000.0);
        else if (ms < 3600000)
                snprintf(buf, n, "%llum%02llus", (unsigned long long)(ms / 60000),
                         (unsigned long long)(ms / 1000 % 60));
        else
                snprintf(buf, n, "%lluh%02llum", (unsigned long long)(ms / 3600000),
                         (unsigned long long)(ms / 60000 % 60));
}

/* The role's figure column: "commits/s 12.0", "pubs 40 lag 1.2ms (p99 3.0ms)", ... */
static void fmt_figures(char *buf, size_t n, Coord__Role role, const struct figures *f)
{
        char a[32], b[32];

        switch (role) {
        case COORD__ROLE__ROLE_ADAPTER:
                snprintf(buf, n, "commits/s %.1f", f->rate);
                break;
        case COORD__ROLE__ROLE_CONTROLLER:
                snprintf(buf, n, "appends/s %.1f", f->rate);
                break;
        default:
                fmt_us(a, sizeof(a), f->lag_us);
                fmt_us(b, sizeof(b), f->lag_p99_us);
                snprintf(buf, n, "pubs %.0f lag %s (p99 %s)%s%s", f->publications, a, b,
                         f->duty[0] ? " duty " : "", f->duty);
                break;
        }
}

/* A histogram's quantile q, as the upper bound of its bucket, in us. */
static double hist_quantile_us(const Coord__Histogram *h, double q)
{
        uint64_t total = 0, acc = 0;

        for (size_t i = 0; i < h->n_counts; i++)
                total += h->counts[i];
        if (!total)
                return 0;
        for (size_t i = 0; i < h->n_counts; i++) {
                acc += h->counts[i];
                if ((double)acc >= q * (double)total)
                        return (double)(1ull << i);
        }
        return (double)(1ull << (h->n_counts - 1));
}

static void print_json_detail(const char *detail)
{
        char *copy = strdup(detail ? detail : ""), *save = NULL, *tok;
        bool first = true;

        putchar('{');
        for (tok = copy ? strtok_r(copy, " ", &save) : NULL; tok; tok = strtok_r(NULL, " ", &save)) {
                char *eq = strchr(tok, '='), *end;
                double v;

                if (!eq)
                        continue;
                *eq = '\0';
                printf("%s", first ? "" : ",");
                first = false;
                print_json_string(tok);
                putchar(':');
                /* A JSON number: digits, at most one '.', not first or last. */
                v = strtod(eq + 1, &end);
                if (eq[1] && !*end && isfinite(v) &&
                    strspn(eq + 1, "0123456789.") == strlen(eq + 1) && eq[1] != '.' &&
                    end[-1] != '.' && strchr(eq + 1, '.') == strrchr(eq + 1, '.'))
                        printf("%s", eq + 1);
                else
                        print_json_string(eq + 1);
        }
        putchar('}');
        free(copy);
}

static void print_json_daemon(Coord__Role role, int err, const Coord__StatusReply *s,
                              const struct figures *f, uint64_t rate_ms)
{
        printf("{\"role\":\"%s\",\"up\":%s", node_role_name(role), err < 0 ? "false" : "true");
        if (err < 0) {
                printf(",\"error\":");
                print_json_string(err_word(err));
                printf("}");
                return;
        }
        printf(",\"pid\":%d,\"incarnation\":%llu,\"uptime_ms\":%llu,\"ready\":%s,\"instance\":",
               s->pid, (unsigned long long)s->incarnation, (unsigned long long)s->uptime_ms,
               s->ready ? "true" : "false");
        print_json_string(s->instance);
        printf(",\"catalog_seq\":%llu,\"ring_generation\":%llu,"
               "\"frames_rejected\":%llu,\"stale_rejected\":%llu,\"max_stall_us\":%llu,"
               "\"window_stall_us\":%llu,\"detail\":",
               (unsigned long long)s->catalog_seq, (unsigned long long)s->ring_generation,
               (unsigned long long)s->frames_rejected, (unsigned long long)s->stale_rejected,
               (unsigned long long)s->max_stall_us, (unsigned long long)s->window_stall_us);
        print_json_string(s->detail);
        printf(",\"figures\":{\"rate_ms\":%llu,\"errors\":%.0f", (unsigned long long)rate_ms,
               f->errors);
        if (role == COORD__ROLE__ROLE_ADAPTER)
                printf(",\"catalog_commits_per_s\":%.3f", f->rate);
        else if (role == COORD__ROLE__ROLE_CONTROLLER)
                printf(",\"appends_per_s\":%.3f", f->rate);
        else
                printf(",\"publications\":%.0f,\"follower_lag_us\":%.0f,\"follower_lag_p99_us\":%.0f",
                       f->publications, f->lag_us, f->lag_p99_us);
        printf("},\"counters\":");
        print_json_detail(s->detail);
        printf(",\"histograms\":{");
        for (size_t i = 0; i < s->n_histograms; i++) {
                const Coord__Histogram *h = s->histograms[i];
                uint64_t total = 0;

                for (size_t k = 0; k < h->n_counts; k++)
                        total += h->counts[k];
                printf("%s", i ? "," : "");
                print_json_string(h->name);
                printf(":{\"count\":%llu,\"sum_us\":%llu,\"p50_us\":%.0f,\"p99_us\":%.0f,\"counts\":[",
                       (unsigned long long)total, (unsigned long long)h->sum_us,
                       hist_quantile_us(h, 0.5), hist_quantile_us(h, 0.99));
                for (size_t k = 0; k < h->n_counts; k++)
                        printf("%s%llu", k ? "," : "", (unsigned long long)h->counts[k]);
                printf("]}");
        }
        printf("},\"peers\":[");
        for (size_t k = 0; k < s->n_peers; k++) {
                Coord__PeerStatus *p = s->peers[k];
                printf("%s{\"role\":\"%s\",\"instance_id\":%u,\"connected\":%s,\"incarnation\":%llu,"
                       "\"since_ms\":%llu,\"connects\":%u}",
                       k ? "," : "", node_role_name(p->role), p->instance_id, p->connected ? "true" : "false",
                       (unsigned long long)p->incarnation, (unsigned long long)p->since_ms,
                       p->reconnects);
        }
        printf("]}");
}

/* --verbose: every counter, wrapped, and each histogram's count, p50, p99. */
static void print_verbose(const Coord__StatusReply *s)
{
        char *copy = strdup(s->detail ? s->detail : ""), *save = NULL, *tok;
        size_t col = 0;

        printf("\n  %s: frames_rejected=%llu stale_rejected=%llu max_stall_us=%llu window_stall_us=%llu"
               " catalog_seq=%llu ring_generation=%llu\n ",
               node_role_name(s->role), (unsigned long long)s->frames_rejected,
               (unsigned long long)s->stale_rejected, (unsigned long long)s->max_stall_us,
               (unsigned long long)s->window_stall_us, (unsigned long long)s->catalog_seq,
               (unsigned long long)s->ring_generation);
        for (tok = copy ? strtok_r(copy, " ", &save) : NULL; tok; tok = strtok_r(NULL, " ", &save)) {
                if (col + strlen(tok) + 1 > 96) {
                        printf("\n ");
                        col = 0;
                }
                printf(" %s", tok);
                col += strlen(tok) + 1;
        }
        printf("\n");
        free(copy);
        for (size_t i = 0; i < s->n_histograms; i++) {
                const Coord__Histogram *h = s->histograms[i];
                uint64_t total = 0;
                char p50[32], p99[32];

                for (size_t k = 0; k < h->n_counts; k++)
                        total += h->counts[k];
                fmt_us(p50, sizeof(p50), hist_quantile_us(h, 0.5));
                fmt_us(p99, sizeof(p99), hist_quantile_us(h, 0.99));
                printf("  %s: count %llu, p50 <= %s, p99 <= %s\n", h->name,
                       (unsigned long long)total, p50, p99);
        }
}

/* One daemon's row of the table; err < 0: it did not answer. */
static void print_row(const char *name, Coord__Role role, int err, const Coord__StatusReply *s,
                      const struct figures *f)
{
        char up[32], peers[256] = "", figs[128];
        size_t off = 0;

        if (err < 0) {
                printf("%-11s %-8s %-4s %-8s %-5s %s\n", name, "-", "-", "-", "no", err_word(err));
                return;
        }
        fmt_uptime(up, sizeof(up), s->uptime_ms);
        for (size_t k = 0; k < s->n_peers && off < sizeof(peers); k++) {
                char id[16] = "";

                if (s->peers[k]->instance_id)   /* a follower of a fleet */
                        snprintf(id, sizeof(id), "-%u", s->peers[k]->instance_id);
                off += (size_t)snprintf(peers + off, sizeof(peers) - off, "%s%s%s=%s", k ? " " : "",
                                        node_role_name(s->peers[k]->role), id,
                                        s->peers[k]->connected ? "up" : "DOWN");
        }
        fmt_figures(figs, sizeof(figs), role, f);
        printf("%-11s %-8d %-4llu %-8s %-5s %-28s %-34s %.0f\n", name, s->pid,
               (unsigned long long)s->incarnation, up, s->ready ? "yes" : "no", peers, figs, f->errors);
}

/* The fleet's other followers (coord-lifecycle --instance-id K, K >= 1: the table's
 * lifecycle row is instance 0): a row each, or JSON objects with "instance_id", for
 * each socket in run_dir; one whose socket does not answer shows as down.  They do not
 * change the exit status: a fleet serves while any follower holds the duty
 * (docs/lifecycle.md, "A fleet of followers"). */
static void print_followers(const char *run_dir, int timeout_ms, bool json)
{
        size_t n = 0;

        if (json)
                printf(",\"followers\":[");
        for (uint32_t k = 1; k < NODE_FLEET_MAX; k++) {
                Coord__StatusReply *s = NULL;
                struct figures f = { 0 };
                char *path = node_socket_path_id(run_dir, COORD__ROLE__ROLE_LIFECYCLE, k), name[32];
                int err;

                if (!path || access(path, F_OK) < 0) {
                        free(path);
                        continue;
                }
                err = node_query_status_path(path, timeout_ms, &s);
                free(path);
                if (err == 0)
                        figures_of(NULL, s, &f);
                if (json) {
                        printf("%s{\"instance_id\":%u,\"daemon\":", n ? "," : "", k);
                        print_json_daemon(COORD__ROLE__ROLE_LIFECYCLE, err, s, &f, 0);
                        printf("}");
                } else {
                        snprintf(name, sizeof(name), "lifecycle-%u", k);
                        print_row(name, COORD__ROLE__ROLE_LIFECYCLE, err, s, &f);
                }
                n++;
                if (s)
                        coord__status_reply__free_unpacked(s, NULL);
        }
        if (json)
                printf("]");
}

/* The standbys waiting in run_dir (node-standby.c note 2): one line each, or JSON
 * objects; those that do not answer are left out (one that has just taken over). */
static void print_standbys(const char *run_dir, int timeout_ms, bool json)
{
        DIR *d = opendir(run_dir);
        struct dirent *e;
        size_t k = 0;

        if (json)
                printf(",\"standbys\":[");
        while (d && (e = readdir(d))) {
                Coord__StatusReply *s = NULL;
                char *path = NULL;
                size_t len = strlen(e->d_name);

                if (!strstr(e->d_name, ".standby.") || len < 5 || strcmp(e->d_name + len - 5, ".sock"))
                        continue;
                if (asprintf(&path, "%s/%s", run_dir, e->d_name) < 0)
                        break;
                if (node_query_status_path(path, timeout_ms, &s) == 0) {
                        char up[32];

                        fmt_uptime(up, sizeof(up), s->uptime_ms);
                        if (json)
                                printf("%s{\"role\":\"%s\",\"pid\":%d,\"uptime_ms\":%llu,"
                                       "\"ready\":false,\"detail\":\"%s\"}", k ? "," : "",
                                       node_role_name(s->role), s->pid,
                                       (unsigned long long)s->uptime_ms, s->detail);
                        else
                                printf("%-11s %-8d %-4s %-8s %-5s %s\n", node_role_name(s->role),
                                       s->pid, "-", up, "no", s->detail);
                        k++;
                        coord__status_reply__free_unpacked(s, NULL);
                }
                free(path);
        }
        if (json)
                printf("]");
        if (d)
                closedir(d);
}

static int cmd_status(const char *run_dir, int timeout_ms, bool json, bool verbose, uint64_t rate_ms)
{
        Coord__StatusReply *first[ELEMENTSOF(daemons)] = { NULL }, *st[ELEMENTSOF(daemons)] = { NULL };
        struct figures fig[ELEMENTSOF(daemons)];
        int err[ELEMENTSOF(daemons)];
        bool all_ok = true, all_connected = true;

        /* The first sample as a scrape: it starts no new window, the second does, as a
         * status request always did. */
        if (rate_ms) {
                for (size_t i = 0; i < ELEMENTSOF(daemons); i++)
                        if (node_query_status_scrape(run_dir, daemons[i], timeout_ms, &first[i]) < 0)
                                first[i] = NULL;
                usleep((useconds_t)(rate_ms * 1000));
        }
        for (size_t i = 0; i < ELEMENTSOF(daemons); i++) {
                err[i] = node_query_status(run_dir, daemons[i], timeout_ms, &st[i]);
                if (err[i] < 0 || !st[i]->ready)
                        all_ok = false;
                if (err[i] < 0) {
                        all_connected = false;
                        continue;
                }
                for (size_t k = 0; k < st[i]->n_peers; k++)
                        if (!st[i]->peers[k]->connected)
                                all_connected = false;
                figures_of(first[i], st[i], &fig[i]);
        }

        if (json) {
                printf("{\"run_dir\":");
                print_json_string(run_dir);
                printf(",\"ok\":%s,\"all_connected\":%s,\"daemons\":[", all_ok ? "true" : "false",
                       all_connected ? "true" : "false");
                for (size_t i = 0; i < ELEMENTSOF(daemons); i++) {
                        printf("%s", i ? "," : "");
                        print_json_daemon(daemons[i], err[i], st[i], &fig[i], rate_ms);
                }
                printf("]");
                print_followers(run_dir, timeout_ms, true);
                print_standbys(run_dir, timeout_ms, true);
                printf("}\n");
        } else {
                printf("%-11s %-8s %-4s %-8s %-5s %-28s %-34s %s\n", "ROLE", "PID", "INC", "UPTIME",
                       "READY", "PEERS", rate_ms ? "FIGURES" : "FIGURES (since start)", "ERRORS");
                for (size_t i = 0; i < ELEMENTSOF(daemons); i++)
                        print_row(node_role_name(daemons[i]), daemons[i], err[i], st[i], &fig[i]);
                print_followers(run_dir, timeout_ms, false);
                print_standbys(run_dir, timeout_ms, false);
                if (verbose)
                        for (size_t i = 0; i < ELEMENTSOF(daemons); i++)
                                if (st[i])
                                        print_verbose(st[i]);
                printf("%s\n", all_ok ? (all_connected ? "all daemons ready and connected"
                                                       : "all daemons ready; some peers not connected")
                                      : "NOT all daemons are up and ready");
        }
        for (size_t i = 0; i < ELEMENTSOF(daemons); i++) {
                if (st[i])
                        coord__status_reply__free_unpacked(st[i], NULL);
                if (first[i])
                        coord__status_reply__free_unpacked(first[i], NULL);
        }
        return all_ok ? 0 : 1;
}

/* Every daemon's status as a scrape (no window reset), rendered as Prometheus text. */
static int cmd_metrics(const char *run_dir, int timeout_ms)
{
        bool all = true;

        for (size_t i = 0; i < ELEMENTSOF(daemons); i++) {
                Coord__StatusReply *s = NULL;
                int r = node_query_status_scrape(run_dir, daemons[i], timeout_ms, &s);

                if (r < 0) {
                        all = false;
                        fprintf(stderr, "coordctl: %s %s\n", node_role_name(daemons[i]), err_word(r));
                        (void)metrics_render_down(stdout, daemons[i]);
                        continue;
                }
                (void)metrics_render(stdout, s);
                coord__status_reply__free_unpacked(s, NULL);
        }
        if (fflush(stdout) != 0)
                return NODE_EXIT_FAILURE;
        return all ? 0 : 1;
}

static int cmd_check(const char *run_dir, int timeout_ms, bool json)
{
        Coord__CheckCatalog req = COORD__CHECK_CATALOG__INIT;
        Coord__Envelope *env = NULL;
        Coord__CheckResult *res = NULL;
        int r, ex = 1;

        r = node_ctl_call(run_dir, COORD__ROLE__ROLE_ADAPTER, COORD__MSG_TYPE__MSG_CHECK_CATALOG,
                          &req.base, timeout_ms, &env);
        if (r < 0) {
                if (json) {
                        printf("{\"ok\":false,\"match\":false,\"error\":");
                        print_json_string(err_word(r));
                        printf("}\n");
                } else
                        printf("adapter %s\n", err_word(r));
                return 1;
        }
        if (env->type == COORD__MSG_TYPE__MSG_ERROR) {
                Coord__Error *e = coord__error__unpack(NULL, env->payload.len, env->payload.data);
                const char *msg = e && e->message ? e->message : "malformed error";

                if (json) {
                        printf("{\"ok\":false,\"match\":false,\"error\":");
                        print_json_string(msg);
                        printf("}\n");
                } else
                        printf("check failed: %s\n", msg);
                if (e)
                        coord__error__free_unpacked(e, NULL);
                goto out;
        }
        if (env->type != COORD__MSG_TYPE__MSG_CHECK_RESULT ||
            !(res = coord__check_result__unpack(NULL, env->payload.len, env->payload.data))) {
                printf("check failed: unexpected answer (type %d)\n", (int)env->type);
                goto out;
        }
        if (json) {
                printf("{\"ok\":true,\"match\":%s,\"seq\":%llu,\"records\":%llu,\"took_us\":%llu,"
                       "\"differences\":[", res->match ? "true" : "false",
                       (unsigned long long)res->seq, (unsigned long long)res->records,
                       (unsigned long long)res->took_us);
                for (size_t i = 0; i < res->n_differences; i++) {
                        printf("%s", i ? "," : "");
                        print_json_string(res->differences[i]);
                }
                printf("]}\n");
        } else if (res->match) {
                printf("match at seq %llu (%llu records, %.1f ms)\n", (unsigned long long)res->seq,
                       (unsigned long long)res->records, (double)res->took_us / 1000.0);
        } else {
                printf("MISMATCH at seq %llu (%llu records, %.1f ms): memory differs from the log\n",
                       (unsigned long long)res->seq, (unsigned long long)res->records,
                       (double)res->took_us / 1000.0);
                for (size_t i = 0; i < res->n_differences; i++)
                        printf("  %s\n", res->differences[i]);
        }
        ex = res->match ? 0 : 1;
out:
        if (res)
                coord__check_result__free_unpacked(res, NULL);
        coord__envelope__free_unpacked(env, NULL);
        return ex;
}

int main(int argc, char **argv)
{
        char *run_dir = NULL;
        uint64_t timeout_ms = 0;
        uint64_t rate_ms = 500;
        bool json = false, verbose = false, check;
        const struct conf_option opts[] = {
                { "run-dir", CONF_STR, &run_dir, 0, "run directory" },
                { "timeout-ms", CONF_U64, &timeout_ms, 600000, "per-daemon timeout" },
                { "json", CONF_BOOL, &json, 0, "JSON output" },
                { "verbose", CONF_BOOL, &verbose, 0, "every counter" },
                { "rate-ms", CONF_U64, &rate_ms, 60000, "rate window" },
        };
        char *args[64], err[256] = "";
        int nargs = 0, r, ex;

        if (argc > (int)ELEMENTSOF(args)) {
                fprintf(stderr, "coordctl: too many arguments\n");
                return NODE_EXIT_USAGE;
        }
        r = conf_parse(argc, argv, "coordctl", opts, ELEMENTSOF(opts), args, &nargs, err, sizeof(err));
        if (r == 1) {
                usage(stdout);
                ex = 0;
                goto out;
        }
        if (r == 0 && nargs >= 1 && strcmp(args[0], "lease") == 0) {
                if (!run_dir) {
                        const char *e = getenv("COORD_RUN_DIR");
                        run_dir = strdup(e && *e ? e : "./var/run");
                }
                ex = run_dir ? coordctl_lease(run_dir, timeout_ms ? (int)timeout_ms : 2000, args, nargs)
                             : NODE_EXIT_FAILURE;
                goto out;
        }
        if (r < 0 || nargs != 1 || (strcmp(args[0], "status") != 0 && strcmp(args[0], "check") != 0 &&
                                    strcmp(args[0], "metrics") != 0)) {
                if (r < 0)
                        fprintf(stderr, "coordctl: %s\n", err);
                else if (nargs == 0)
                        fprintf(stderr, "coordctl: a command is needed\n");
                else
                        fprintf(stderr, "coordctl: unknown command '%s'\n", args[0]);
                usage(stderr);
                ex = NODE_EXIT_USAGE;
                goto out;
        }
        if (!run_dir) {
                const char *e = getenv("COORD_RUN_DIR");
                run_dir = strdup(e && *e ? e : "./var/run");
                if (!run_dir) {
                        ex = NODE_EXIT_FAILURE;
                        goto out;
                }
        }
        check = strcmp(args[0], "check") == 0;
        /* A check waits for an aligned point (up to 10 s) and then replays the log. */
        if (!timeout_ms)
                timeout_ms = check ? 30000 : 2000;
        if (check)
                ex = cmd_check(run_dir, (int)timeout_ms, json);
        else if (strcmp(args[0], "metrics") == 0)
                ex = cmd_metrics(run_dir, (int)timeout_ms);
        else
                ex = cmd_status(run_dir, (int)timeout_ms, json, verbose, rate_ms);
out:
        conf_done(opts, ELEMENTSOF(opts));
        return ex;
}
