/* metrics.c -- status replies as Prometheus text.  See metrics.h.
 *
 * Invariant: one name is never printed twice in one reply's text (a repeated # TYPE is
 * invalid exposition): seen[] keeps the names printed, and a detail key that collides
 * with one is skipped.
 */
#include "metrics.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "node.h"
#include "util.h"

#define METRICS_NAMES_MAX 256

struct render {
        FILE *f;
        const char *role;
        char *seen[METRICS_NAMES_MAX];
        size_t n_seen;
};

static bool ends_with(const char *s, const char *suffix)
{
        size_t n = strlen(s), k = strlen(suffix);
        return n >= k && strcmp(s + n - k, suffix) == 0;
}

bool metrics_key_is_gauge(const char *key)
{
        static const char *const gauges[] = {
                /* sizes and states now */
                "items", "requirements", "collections", "dataflows", "mvs", "sinks", "sources",
                "held", "installing", "deferred", "peeks_parked", "peeks_in_thread",
                "peeks_streaming", "allowed", "allow_pending", "unsynced_appends",
                "lag_samples", "tables_frontier", "catalog_generation",
                /* positions and marks */
                "last_commit_seq", "oracle_hwm_sync", "oracle_hwm_async", "builtin_mark",
                /* maxima and ratios */
                "held_max", "allow_max", "appends_per_sync",
        };
        static const char *const suffixes[] = {
                "_max_us", "_last_us", "_p50_us", "_p99_us", "_mem_bytes", "_sst_bytes", "_keys",
        };

        for (size_t i = 0; i < ELEMENTSOF(gauges); i++)
                if (strcmp(key, gauges[i]) == 0)
                        return true;
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++)
                if (ends_with(key, suffixes[i]))
                        return true;
        return strncmp(key, "last_", 5) == 0;
}

/* Claim a name; false when it was printed before. */
static bool claim(struct render *r, const char *name)
{
        for (size_t i = 0; i < r->n_seen; i++)
                if (strcmp(r->seen[i], name) == 0)
                        return false;
        if (r->n_seen < METRICS_NAMES_MAX) {
                char *s = strdup(name);
                if (s)
                        r->seen[r->n_seen++] = s;
        }
        return true;
}

static void head(struct render *r, const char *name, const char *type, const char *help)
{
        fprintf(r->f, "# HELP coord_%s_%s %s\n# TYPE coord_%s_%s %s\n", r->role, name, help,
                r->role, name, type);
}

static void one(struct render *r, const char *name, const char *type, const char *help, double v)
{
        if (!claim(r, name))
                return;
        head(r, name, type, help);
        /* Integers as such; others with the digits a double holds meaningfully. */
        if (v == floor(v) && fabs(v) < 1e15)
                fprintf(r->f, "coord_%s_%s %.0f\n", r->role, name, v);
        else
                fprintf(r->f, "coord_%s_%s %.9g\n", r->role, name, v);
}

static void label_value(FILE *f, const char *s)
{
        fputc('"', f);
        for (; s && *s; s++) {
                if (*s == '\\' || *s == '"')
                        fprintf(f, "\\%c", *s);
                else if (*s == '\n')
                        fputs("\\n", f);
                else
                        fputc(*s, f);
        }
        fputc('"', f);
}

/* A detail value that is a number: all of it parses. */
static bool numeric(const char *v, double *ret)
{
        char *end;

        if (!*v)
                return false;
        *ret = strtod(v, &end);
        return *end == '\0' && isfinite(*ret);
}

static bool key_ok(const char *k)
{
        if (!*k || (*k >= '0' && *k <= '9'))
                return false;
        return strspn(k, "abcdefghijklmnopqrstuvwxyz0123456789_") == strlen(k);
}

/* The detail line's tokens in a writable copy; calls fn for each key=value. */
static void each_kv(const char *detail, void (*fn)(struct render *, const char *, const char *),
                    struct render *r)
{
        char *copy = strdup(detail ? detail : ""), *save = NULL, *tok;

        if (!copy)
                return;
        for (tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
                char *eq = strchr(tok, '=');
                if (!eq)
                        continue;
                *eq = '\0';
                if (key_ok(tok))
                        fn(r, tok, eq + 1);
        }
        free(copy);
}

static void kv_number(struct render *r, const char *k, const char *v)
{
        char name[160], help[256];
        double d;

        if (!numeric(v, &d) || strstr(k, "window"))
                return;
        snprintf(help, sizeof(help), "%s= of the %s's status (docs/operations.md)", k, r->role);
        if (metrics_key_is_gauge(k)) {
                one(r, k, "gauge", help, d);
                return;
        }
        snprintf(name, sizeof(name), "%s%s", k, ends_with(k, "_total") ? "" : "_total");
        one(r, name, "counter", help, d);
}

static void kv_label(struct render *r, const char *k, const char *v)
{
        double d;

        if (numeric(v, &d))
                return;
        fprintf(r->f, ",%s=", k);
        label_value(r->f, v);
}

static void render_hist(struct render *r, const Coord__Histogram *h)
{
        uint64_t total = 0;
        char name[160];

        if (!h->name || !key_ok(h->name) || !claim(r, h->name))
                return;
        snprintf(name, sizeof(name), "%s", h->name);
        head(r, name, "histogram", h->help && *h->help ? h->help : "latency");
        for (size_t i = 0; i < h->n_counts; i++) {
                total += h->counts[i];
                if (i + 1 < h->n_counts)
                        fprintf(r->f, "coord_%s_%s_bucket{le=\"%.6f\"} %llu\n", r->role, name,
                                (double)(1ull << i) / 1e6, (unsigned long long)total);
        }
        fprintf(r->f, "coord_%s_%s_bucket{le=\"+Inf\"} %llu\n", r->role, name,
                (unsigned long long)total);
        fprintf(r->f, "coord_%s_%s_sum %.6f\n", r->role, name, (double)h->sum_us / 1e6);
        fprintf(r->f, "coord_%s_%s_count %llu\n", r->role, name, (unsigned long long)total);
}

int metrics_render(FILE *f, const Coord__StatusReply *s)
{
        struct render r = { .f = f, .role = node_role_name(s->role) };

        one(&r, "up", "gauge", "1: the daemon answered", 1);
        one(&r, "ready", "gauge", "1: serving (startup done)", s->ready);
        one(&r, "incarnation", "gauge", "this life's number (bumped at every start)", (double)s->incarnation);
        one(&r, "uptime_seconds", "gauge", "seconds since the daemon started", (double)s->uptime_ms / 1000.0);
        one(&r, "frames_rejected_total", "counter", "malformed, oversized or wrong-uid IPC connections closed",
            (double)s->frames_rejected);
        one(&r, "stale_rejected_total", "counter", "hellos and messages from an older peer incarnation",
            (double)s->stale_rejected);
        one(&r, "loop_stall_max_us", "gauge", "longest event-loop busy stretch since start, us",
            (double)s->max_stall_us);
        if (s->role != COORD__ROLE__ROLE_CONTROLLER)
                one(&r, "catalog_seq", "gauge",
                    s->role == COORD__ROLE__ROLE_ADAPTER ? "last committed catalog seq"
                                                         : "last catalog seq caught up",
                    (double)s->catalog_seq);
        one(&r, "ring_generation", "gauge", "frontier ring generation (controller: written; others: seen)",
            (double)s->ring_generation);
        if (s->n_peers && claim(&r, "peer_connected")) {
                head(&r, "peer_connected", "gauge", "1: connected to the peer");
                for (size_t k = 0; k < s->n_peers; k++)
                        fprintf(f, "coord_%s_peer_connected{peer=\"%s\"} %d\n", r.role,
                                node_role_name(s->peers[k]->role), s->peers[k]->connected ? 1 : 0);
                head(&r, "peer_incarnation", "gauge", "the peer's last incarnation seen");
                for (size_t k = 0; k < s->n_peers; k++)
                        fprintf(f, "coord_%s_peer_incarnation{peer=\"%s\"} %llu\n", r.role,
                                node_role_name(s->peers[k]->role),
                                (unsigned long long)s->peers[k]->incarnation);
                head(&r, "peer_connects_total", "counter", "connections made to the peer since start");
                for (size_t k = 0; k < s->n_peers; k++)
                        fprintf(f, "coord_%s_peer_connects_total{peer=\"%s\"} %u\n", r.role,
                                node_role_name(s->peers[k]->role), s->peers[k]->reconnects);
                claim(&r, "peer_incarnation");
                claim(&r, "peer_connects_total");
        }
        if (claim(&r, "info")) {
                head(&r, "info", "gauge", "constant 1; the labels say what the daemon is and its modes");
                fprintf(f, "coord_%s_info{instance=", r.role);
                label_value(f, s->instance);
                fprintf(f, ",pid=\"%d\"", s->pid);
                each_kv(s->detail, kv_label, &r);
                fprintf(f, "} 1\n");
        }
        each_kv(s->detail, kv_number, &r);
        for (size_t i = 0; i < s->n_histograms; i++)
                render_hist(&r, s->histograms[i]);
        for (size_t i = 0; i < r.n_seen; i++)
                free(r.seen[i]);
        return ferror(f) ? -EIO : 0;
}

int metrics_render_down(FILE *f, Coord__Role role)
{
        const char *name = node_role_name(role);

        fprintf(f, "# HELP coord_%s_up 1: the daemon answered\n# TYPE coord_%s_up gauge\ncoord_%s_up 0\n",
                name, name, name);
        return ferror(f) ? -EIO : 0;
}
