/* coord-adapter -- SQL front end, timestamp oracle and the only writer of the catalog
 * (DESIGN section 1).
 *
 * This milestone: the daemon body (node), the catalog opened as the RocksDB primary
 * (its writer epoch, this incarnation, committed at start), and the frontier ring
 * followed read-only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "fring.h"
#include "log.h"
#include "node.h"
#include "util.h"

struct adapter {
        struct node *node;
        struct catalog *catalog;
        char detail[160];
};

static void adapter_status(struct node *n, Coord__StatusReply *reply, void *userdata)
{
        struct adapter *ad = userdata;
        struct fring_reader *rd = node_ring(n);

        reply->catalog_seq = ad->catalog ? catalog_last_seq(ad->catalog) : 0;
        reply->ring_generation = rd ? fring_reader_generation(rd) : 0;
        snprintf(ad->detail, sizeof(ad->detail), "catalog=primary ring=%s",
                 rd ? "attached" : "waiting");
        reply->detail = ad->detail;
}

static const struct node_handler adapter_handler = {
        .on_status = adapter_status,
};

/* The writer epoch: the incarnation of the adapter that writes the catalog now.  Made
 * durable before the adapter reports ready, through the same commit path as DDL. */
static int adapter_commit_epoch(struct adapter *ad)
{
        uint8_t v[8];
        uint64_t seq = 0;
        struct catalog_op op = {
                .kind = CATALOG_OP_PUT, .cf = CATALOG_CF_META,
                .key = "writer_epoch", .key_len = strlen("writer_epoch"),
                .value = v, .value_len = sizeof(v),
        };
        int r;

        be64_put(v, node_incarnation(ad->node));
        r = catalog_commit(ad->catalog, &op, 1, &seq);
        if (r < 0)
                return r;
        log_info("writer_epoch_committed", "epoch=%llu seq=%llu",
                 (unsigned long long)node_incarnation(ad->node), (unsigned long long)seq);
        return 0;
}

int main(int argc, char **argv)
{
        struct adapter ad = { 0 };
        struct node_args a;
        struct node_config cfg;
        _cleanup_free_ char *cat_path = NULL;
        int r, ex = NODE_EXIT_FAILURE;

        if (node_args_parse(argc, argv, COORD__ROLE__ROLE_ADAPTER, NULL, 0, &a, &ex))
                return ex;
        cfg = (struct node_config){
                .role = COORD__ROLE__ROLE_ADAPTER, .instance = a.instance,
                .data_dir = a.data_dir, .run_dir = a.run_dir, .max_frame = (uint32_t)a.max_frame,
        };
        r = node_new(&cfg, &adapter_handler, &ad, &ad.node);
        if (r < 0) {
                ex = r == -EBUSY ? NODE_EXIT_RUNNING : NODE_EXIT_FAILURE;
                goto out;
        }
        if (asprintf(&cat_path, "%s/catalog", node_dir(ad.node)) < 0) {
                log_error("out_of_memory", "");
                goto out;
        }
        r = catalog_open(cat_path, &ad.catalog);
        if (r < 0) {
                log_error_errno(r, "catalog_open_failed", "path=%s", cat_path);
                goto out;
        }
        log_info("catalog_opened", "path=%s last_seq=%llu", cat_path,
                 (unsigned long long)catalog_last_seq(ad.catalog));
        r = adapter_commit_epoch(&ad);
        if (r < 0) {
                log_error_errno(r, "catalog_commit_failed", "what=writer_epoch");
                goto out;
        }
        r = node_follow_ring(ad.node);
        if (r < 0)
                goto out;
        node_set_ready(ad.node, true);
        r = node_run(ad.node);
        if (r < 0) {
                log_error_errno(r, "loop_failed", "");
                goto out;
        }
        log_info("daemon_stopped", "role=adapter");
        ex = 0;
out:
        ad.node = node_free(ad.node);
        ad.catalog = catalog_close(ad.catalog);
        node_args_done(&a);
        return ex;
}
