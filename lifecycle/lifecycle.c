/* coord-lifecycle -- the lifecycle follower (DESIGN section 1): follows the catalog,
 * enacts maintained objects on the controller, publishes read protection.
 *
 * This milestone: the daemon body (node), the catalog opened as a RocksDB secondary
 * instance of the adapter's primary and caught up when the adapter (re)connects or
 * status is asked, and the frontier ring followed read-only.  The follower owns nothing
 * durable but its incarnation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "fring.h"
#include "log.h"
#include "loop.h"
#include "node.h"
#include "util.h"

struct lifecycle {
        struct node *node;
        struct catalog *catalog;        /* secondary; NULL until the primary exists */
        char *primary_path, *secondary_path;
        struct loop_timer *open_retry;
        char detail[160];
};

static void lifecycle_catch_up(struct lifecycle *lc)
{
        int r;

        if (!lc->catalog)
                return;
        r = catalog_catch_up(lc->catalog);
        if (r < 0)
                log_warn_errno(r, "catalog_catch_up_failed", "");
}

static void lifecycle_try_open(struct loop *l, void *userdata)
{
        struct lifecycle *lc = userdata;
        int r;

        lc->open_retry = NULL;
        r = catalog_open_secondary(lc->primary_path, lc->secondary_path, &lc->catalog);
        if (r >= 0) {
                log_info("catalog_followed", "primary=%s last_seq=%llu", lc->primary_path,
                         (unsigned long long)catalog_last_seq(lc->catalog));
                node_set_ready(lc->node, true);
                return;
        }
        /* The adapter creates the catalog on its first start; until then, wait. */
        log_debug("catalog_not_yet", "primary=%s", lc->primary_path);
        r = loop_timer_add(l, 100ull * 1000000ull, lifecycle_try_open, lc, &lc->open_retry);
        if (r < 0)
                log_error_errno(r, "timer_failed", "");
}

static void lifecycle_peer_up(struct node *n, Coord__Role role, uint64_t incarnation, void *userdata)
{
        if (role == COORD__ROLE__ROLE_ADAPTER)
                lifecycle_catch_up(userdata);
}

static void lifecycle_status(struct node *n, Coord__StatusReply *reply, void *userdata)
{
        struct lifecycle *lc = userdata;
        struct fring_reader *rd = node_ring(n);

        lifecycle_catch_up(lc);
        reply->catalog_seq = lc->catalog ? catalog_last_seq(lc->catalog) : 0;
        reply->ring_generation = rd ? fring_reader_generation(rd) : 0;
        snprintf(lc->detail, sizeof(lc->detail), "catalog=%s ring=%s",
                 lc->catalog ? "secondary" : "waiting", rd ? "attached" : "waiting");
        reply->detail = lc->detail;
}

static const struct node_handler lifecycle_handler = {
        .on_peer_up = lifecycle_peer_up,
        .on_status = lifecycle_status,
};

int main(int argc, char **argv)
{
        struct lifecycle lc = { 0 };
        struct node_args a;
        struct node_config cfg;
                int r, ex = NODE_EXIT_FAILURE;

        if (node_args_parse(argc, argv, COORD__ROLE__ROLE_LIFECYCLE, NULL, 0, &a, &ex))
                return ex;
        cfg = (struct node_config){
                .role = COORD__ROLE__ROLE_LIFECYCLE, .instance = a.instance,
                .data_dir = a.data_dir, .run_dir = a.run_dir, .max_frame = (uint32_t)a.max_frame,
        };
        r = node_new(&cfg, &lifecycle_handler, &lc, &lc.node);
        if (r < 0) {
                ex = r == -EBUSY ? NODE_EXIT_RUNNING : NODE_EXIT_FAILURE;
                goto out;
        }
        if (asprintf(&lc.primary_path, "%s/adapter/catalog", a.data_dir) < 0 ||
            asprintf(&lc.secondary_path, "%s/catalog-secondary", node_dir(lc.node)) < 0) {
                log_error("out_of_memory", "");
                goto out;
        }
        lifecycle_try_open(node_loop(lc.node), &lc);
        r = node_follow_ring(lc.node);
        if (r < 0)
                goto out;
        r = node_run(lc.node);
        if (r < 0) {
                log_error_errno(r, "loop_failed", "");
                goto out;
        }
        log_info("daemon_stopped", "role=lifecycle");
        ex = 0;
out:
        if (lc.node)
                loop_timer_cancel(node_loop(lc.node), lc.open_retry);
        lc.node = node_free(lc.node);
        lc.catalog = catalog_close(lc.catalog);
        free(lc.primary_path);
        free(lc.secondary_path);
        node_args_done(&a);
        return ex;
}
