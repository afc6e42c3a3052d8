/* bench-publication-report.c -- a row's CSV line and markdown row, and --report /
 * --plot over a results file (columns found by header name). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench-publication.h"
#include "util.h"

/* ---- one row -------------------------------------------------------------------- */


struct column {
        const char *name;
        size_t off;
        int prec;               /* -1: a string field */
};

#define S(f) { #f, offsetof(struct row, f), -1 }
#define N(f, p) { #f, offsetof(struct row, f), p }
static const struct column COLUMNS[] = {
        S(shape), N(collections, 0), N(active, 0), S(filler), N(interval_ms, 0), N(rounds, 0),
        N(observe_s, 2), N(ddl_rate_hz, 2), S(observer), N(setup_s, 3), N(setup_applied_s, 3),
        N(catalog_items, 0), N(inserts_per_s, 1), N(table_write_interval_ms, 1), N(publications, 0),
        N(pubs_per_s, 3), N(records_per_pub, 2), N(records_per_pub_max, 0), N(bytes_per_pub, 1),
        N(bytes_per_pub_max, 0), N(bytes_per_s, 1), N(bytes_per_s_min, 1), N(bytes_per_s_max, 1),
        N(records_per_s, 2), N(touched_per_pub, 1), N(touched_per_pub_max, 0),
        N(catalog_wal_bps, 1), N(catalog_written_bps, 1), N(storage_wal_bps, 1),
        N(storage_written_bps, 1), N(ddl_completed, 0), N(ddl_offered, 0), N(ddl_late, 0),
        N(ddl_p50_us, 0), N(ddl_p95_us, 0), N(ddl_p99_us, 0), N(ddl_p95_min_us, 0),
        N(ddl_p95_max_us, 0), N(ddl_max_us, 0), N(observer_polls_per_s, 1),
        N(observer_rows_per_poll, 1), N(observer_errors, 0), N(lag_p50_us, 0), N(lag_p99_us, 0),
        N(lag_n, 0), N(setup_lag_p50_us, 0), N(setup_lag_p99_us, 0), N(commits_per_s, 2),
        N(syncs_per_s, 2), N(cpu_adapter_pct, 1), N(cpu_lifecycle_pct, 1), N(cpu_controller_pct, 1),
        N(stall_setup_adapter_us, 0), N(stall_setup_lifecycle_us, 0), N(stall_setup_controller_us, 0),
        N(stall_adapter_us, 0), N(stall_lifecycle_us, 0), N(stall_controller_us, 0),
        N(cat_state_bytes_before, 0), N(cat_state_keys_before, 0), N(cat_log_bytes_before, 0),
        N(cat_log_keys_before, 0), N(cat_state_bytes_after, 0), N(cat_state_keys_after, 0),
        N(cat_log_bytes_after, 0), N(cat_log_keys_after, 0), N(cat_disk_bytes_before, 0),
        N(cat_disk_bytes_after, 0), N(restart_adapter_ms, 1),
        N(restart_lifecycle_ms, 1), N(restart_controller_ms, 1), N(pub_errors, 0),
        N(load1_start, 2), N(load1_end, 2), N(nproc, 0), N(setup_connections, 0),
        N(sync_catalog_us, 0), N(sync_storage_us, 0), N(rss_adapter_kb, 0), N(rss_lifecycle_kb, 0),
        N(rss_controller_kb, 0), N(rss_adapter_end_kb, 0), N(rss_lifecycle_end_kb, 0),
        N(rss_controller_end_kb, 0),
};
#undef S
#undef N

void csv_header(FILE *f)
{
        for (size_t i = 0; i < ELEMENTSOF(COLUMNS); i++)
                fprintf(f, "%s%s", i ? "," : "", COLUMNS[i].name);
        fprintf(f, "\n");
}

void csv_line(FILE *f, const struct row *r)
{
        for (size_t i = 0; i < ELEMENTSOF(COLUMNS); i++) {
                const char *p = (const char *)r + COLUMNS[i].off;
                if (i)
                        fputc(',', f);
                if (COLUMNS[i].prec < 0)
                        fputs(p, f);
                else
                        fprintf(f, "%.*f", COLUMNS[i].prec, *(const double *)p);
        }
        fputc('\n', f);
}

void md_header(void)
{
        printf("| shape | collections | setup (applied) | payload (rounds) | records/s | catalog WAL "
               "(all writes) | storage WAL (all writes) | DDL pairs done / offered | pair p50 / p95 / "
               "p99 (p95 rounds) | follower lag p50 / p99 (n) | observer polls/s | longest stall "
               "adapter / lifecycle / controller, rounds (setup) | longest sync catalog / storage, "
               "rounds | catalog state / log (disk), after "
               "setup → after rounds | restart adapter / lifecycle / controller | CPU adapter / lifecycle / "
               "controller | load avg | RSS adapter / lifecycle / controller after setup (bytes per catalog item) |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
}

void md_row(const struct row *r)
{
        char restarts[96];

        if (r->restart_adapter_ms == 0 && r->restart_lifecycle_ms == 0 && r->restart_controller_ms == 0)
                snprintf(restarts, sizeof(restarts), "not run");
        else
                snprintf(restarts, sizeof(restarts), "%.0f / %.0f / %.0f ms", r->restart_adapter_ms,
                         r->restart_lifecycle_ms, r->restart_controller_ms);
        printf("| %s (%.0f advancing, filler %s; every %.0f ms; DDL %.1f Hz; observer %s) | %.0f | "
               "%.2f s (%.2f s) | %.2f kB/s (%.2f–%.2f) | %.1f | %.2f kB/s (%.2f) | %.2f kB/s (%.2f) | "
               "%.0f / %.0f | %.2f / %.2f / %.2f ms (%.2f–%.2f) | %.0f / %.0f µs (%.0f) | %.1f | "
               "%.1f / %.1f / %.1f ms (%.1f / %.1f / %.1f) | %.1f / %.1f ms | "
               "%.0f / %.0f keys, %.1f / %.1f kB (%.1f kB) "
               "→ %.0f / %.0f keys, %.1f / %.1f kB (%.1f kB) | %s | %.1f%% / %.1f%% / %.1f%% | %.2f–%.2f | "
               "%.0f / %.0f / %.0f MB (%.0f) |\n",
               r->shape, r->active, r->filler, r->interval_ms, r->ddl_rate_hz, r->observer,
               r->collections, r->setup_s, r->setup_applied_s, r->bytes_per_s / 1e3,
               r->bytes_per_s_min / 1e3, r->bytes_per_s_max / 1e3, r->records_per_s,
               r->catalog_wal_bps / 1e3, r->catalog_written_bps / 1e3, r->storage_wal_bps / 1e3,
               r->storage_written_bps / 1e3, r->ddl_completed, r->ddl_offered, r->ddl_p50_us / 1e3,
               r->ddl_p95_us / 1e3, r->ddl_p99_us / 1e3, r->ddl_p95_min_us / 1e3,
               r->ddl_p95_max_us / 1e3, r->lag_p50_us, r->lag_p99_us, r->lag_n, r->observer_polls_per_s,
               r->stall_adapter_us / 1e3, r->stall_lifecycle_us / 1e3, r->stall_controller_us / 1e3,
               r->stall_setup_adapter_us / 1e3, r->stall_setup_lifecycle_us / 1e3,
               r->stall_setup_controller_us / 1e3, r->sync_catalog_us / 1e3, r->sync_storage_us / 1e3,
               r->cat_state_keys_before, r->cat_log_keys_before,
               r->cat_state_bytes_before / 1e3, r->cat_log_bytes_before / 1e3,
               r->cat_disk_bytes_before / 1e3, r->cat_state_keys_after, r->cat_log_keys_after,
               r->cat_state_bytes_after / 1e3, r->cat_log_bytes_after / 1e3,
               r->cat_disk_bytes_after / 1e3, restarts, r->cpu_adapter_pct, r->cpu_lifecycle_pct,
               r->cpu_controller_pct, r->load1_start, r->load1_end, r->rss_adapter_kb / 1024,
               r->rss_lifecycle_kb / 1024, r->rss_controller_kb / 1024,
               r->catalog_items > 0 ? (r->rss_adapter_kb + r->rss_lifecycle_kb + r->rss_controller_kb) * 1024 /
                                              r->catalog_items
                                    : 0.0);
}


/* ---- the report and the plot ----------------------------------------------------- */

static int cmp_rows(const void *a, const void *b)
{
        const struct row *x = a, *y = b;
        int k = strcmp(x->shape, y->shape);

        return k ? k : (x->collections > y->collections) - (x->collections < y->collections);
}

/* Every row of the CSV file at path (columns by the names of the last header line seen). */
static int read_rows(const char *path, struct row **ret, size_t *ret_n)
{
        FILE *f = fopen(path, "r");
        char line[8192];
        int map[256];
        size_t n = 0, ncols = 0;
        struct row *rows = NULL;

        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                char *save = NULL, *tok;
                size_t k = 0;
                bool header = strncmp(line, "shape,", 6) == 0;
                struct row r = { 0 };

                for (tok = strtok_r(line, ",\n", &save); tok && k < ELEMENTSOF(map);
                     tok = strtok_r(NULL, ",\n", &save), k++) {
                        if (header) {
                                map[k] = -1;
                                for (size_t i = 0; i < ELEMENTSOF(COLUMNS); i++)
                                        if (strcmp(COLUMNS[i].name, tok) == 0)
                                                map[k] = (int)i;
                                continue;
                        }
                        if (k >= ncols || map[k] < 0)
                                continue;
                        const struct column *col = &COLUMNS[map[k]];
                        char *p = (char *)&r + col->off;
                        if (col->prec < 0)
                                snprintf(p, 16, "%s", tok);
                        else
                                *(double *)p = strtod(tok, NULL);
                }
                if (header) {
                        ncols = k;
                        continue;
                }
                if (!ncols || k < 2)
                        continue;
                struct row *nr = realloc(rows, (n + 1) * sizeof(*rows));
                if (!nr) {
                        free(rows);
                        fclose(f);
                        return -ENOMEM;
                }
                rows = nr;
                rows[n++] = r;
        }
        fclose(f);
        *ret = rows;
        *ret_n = n;
        return 0;
}

int report(const char *path)
{
        struct row *rows = NULL;
        size_t n = 0;
        int r = read_rows(path, &rows, &n);

        if (r < 0) {
                fprintf(stderr, "bench-publication: %s: %s\n", path, strerror(-r));
                return 1;
        }
        md_header();
        for (size_t i = 0; i < n; i++)
                md_row(&rows[i]);
        free(rows);
        return n ? 0 : 1;
}

/* DDL pair p95, setup time and follower lag p99 against the collection count, one
 * series per shape (and filler, cadence, DDL rate, observer), log x; with gnuplot. */
int plot(const char *path, const char *png)
{
        struct row *rows = NULL;
        size_t n = 0, groups = 0;
        char key[128], prev[128] = "";
        FILE *g;
        int r = read_rows(path, &rows, &n), st;
        static const char *const panel[3] = { "DDL pair p95 (ms)", "setup, to applied (s)",
                                              "follower lag p99 (ms)" };

        if (r < 0 || n == 0) {
                fprintf(stderr, "bench-publication: %s: no rows\n", path);
                free(rows);
                return 1;
        }
        qsort(rows, n, sizeof(*rows), cmp_rows);
        if (!(g = popen("gnuplot", "w"))) {
                fprintf(stderr, "bench-publication: gnuplot: %s\n", strerror(errno));
                free(rows);
                return 1;
        }
        /* One datablock per series: collections, p95 ms, setup s, lag p99 ms. */
        for (size_t i = 0; i < n; i++) {
                const struct row *x = &rows[i];
                snprintf(key, sizeof(key), "%s, %.0f advancing, filler %s, %.0f ms, DDL %.1f Hz, observer %s",
                         x->shape, x->active, x->filler, x->interval_ms, x->ddl_rate_hz, x->observer);
                if (strcmp(key, prev) != 0) {
                        fprintf(g, "%s$g%zu << EOD\n# %s\n", groups ? "EOD\n" : "", groups, key);
                        snprintf(prev, sizeof(prev), "%s", key);
                        groups++;
                }
                fprintf(g, "%.0f %.4f %.4f %.4f\n", x->collections, x->ddl_p95_us / 1e3, x->setup_applied_s,
                        x->lag_p99_us / 1e3);
        }
        fprintf(g, "EOD\n"
                   "set terminal png size 1500,480\n"
                   "set output '%s'\n"
                   "set multiplot layout 1,3 title 'tools/coord bench publication'\n"
                   "set logscale x\nset grid\nset xlabel 'collections'\nset key top left font ',8'\n"
                   "set yrange [0:*]\n", png);
        for (int p = 0; p < 3; p++) {
                fprintf(g, "set title '%s'\nplot ", panel[p]);
                for (size_t k = 0; k < groups; k++) {
                        /* The series' name is the comment line of its block. */
                        const struct row *x = NULL;
                        size_t seen = 0;
                        prev[0] = 0;
                        for (size_t i = 0; i < n && !x; i++) {
                                snprintf(key, sizeof(key), "%s %.0f %s %.0f %.1f %s", rows[i].shape,
                                         rows[i].active, rows[i].filler, rows[i].interval_ms,
                                         rows[i].ddl_rate_hz, rows[i].observer);
                                if (strcmp(key, prev) != 0) {
                                        snprintf(prev, sizeof(prev), "%s", key);
                                        if (seen++ == k)
                                                x = &rows[i];
                                }
                        }
                        fprintf(g, "%s$g%zu using 1:%d with linespoints title '%s, %.0f advancing, %s, "
                                   "DDL %.1f Hz, observer %s'", k ? ", " : "", k, p + 2, x->shape,
                                x->active, x->filler, x->ddl_rate_hz, x->observer);
                }
                fprintf(g, "\n");
        }
        fprintf(g, "unset multiplot\n");
        st = pclose(g);
        free(rows);
        if (st != 0) {
                fprintf(stderr, "bench-publication: gnuplot failed (status %d)\n", st);
                return 1;
        }
        printf("plot: %s\n", png);
        return 0;
}
