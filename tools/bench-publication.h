/* bench-publication.h -- one row of the publication benchmark (one collection count on
 * one instance): its figures, written as CSV and markdown, and the report of a results
 * file (bench-publication-report.c).  The workflow itself: bench-publication.c. */
#pragma once

#include <stdio.h>

/* Every figure of a row; the CSV columns are the fields in COLUMNS order. */
struct row {
        char shape[16], filler[16], observer[16];
        double collections, active, interval_ms, rounds, observe_s, ddl_rate_hz;
        double setup_s, setup_applied_s, catalog_items, inserts_per_s, table_write_interval_ms;
        double publications, pubs_per_s, records_per_pub, records_per_pub_max, bytes_per_pub,
                bytes_per_pub_max, bytes_per_s, bytes_per_s_min, bytes_per_s_max, records_per_s,
                touched_per_pub, touched_per_pub_max;
        double catalog_wal_bps, catalog_written_bps, storage_wal_bps, storage_written_bps;
        double ddl_completed, ddl_offered, ddl_late, ddl_p50_us, ddl_p95_us, ddl_p99_us,
                ddl_p95_min_us, ddl_p95_max_us, ddl_max_us;
        double observer_polls_per_s, observer_rows_per_poll, observer_errors;
        double lag_p50_us, lag_p99_us, lag_n, setup_lag_p50_us, setup_lag_p99_us;
        double commits_per_s, syncs_per_s, cpu_adapter_pct, cpu_lifecycle_pct, cpu_controller_pct;
        double stall_setup_adapter_us, stall_setup_lifecycle_us, stall_setup_controller_us;
        double stall_adapter_us, stall_lifecycle_us, stall_controller_us;
        double sync_catalog_us, sync_storage_us;
        double cat_state_bytes_before, cat_state_keys_before, cat_log_bytes_before, cat_log_keys_before;
        double cat_state_bytes_after, cat_state_keys_after, cat_log_bytes_after, cat_log_keys_after;
        double cat_disk_bytes_before, cat_disk_bytes_after;
        double restart_adapter_ms, restart_lifecycle_ms, restart_controller_ms;
        double pub_errors, load1_start, load1_end, nproc;
        double setup_connections;
        double rss_adapter_kb, rss_lifecycle_kb, rss_controller_kb;     /* after setup */
        double rss_adapter_end_kb, rss_lifecycle_end_kb, rss_controller_end_kb; /* after rounds */
};

/* bench-publication-report.c */
void csv_header(FILE *f);
void csv_line(FILE *f, const struct row *r);
void md_header(void);
void md_row(const struct row *r);
int report(const char *path);
int plot(const char *path, const char *png);
