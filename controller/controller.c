/* coord-controller -- storage collections, compute, frontiers (DESIGN section 1).
 *
 * This milestone: the daemon body (node), and the shared-memory frontier ring it owns:
 * created at start with generation = this incarnation, so readers that keep their
 * mapping across our restart see the generation change and resync.
 */
#include <stdio.h>
#include <stdlib.h>

#include "conf.h"
#include "fring.h"
#include "log.h"
#include "node.h"
#include "util.h"

struct controller {
        struct node *node;
        struct fring *ring;
        char ring_name[128];
        uint64_t ring_slots, ring_records;
};

static void controller_status(struct node *n, Coord__StatusReply *reply, void *userdata)
{
        struct controller *c = userdata;

        reply->ring_generation = node_incarnation(n);
        reply->detail = c->ring ? c->ring_name : (char *)"frontier ring not created";
}

static const struct node_handler controller_handler = {
        .on_status = controller_status,
};

int main(int argc, char **argv)
{
        struct controller c = { .ring_slots = 65536, .ring_records = 65536 };
        const struct conf_option extra[] = {
                { "ring-slots", CONF_U64, &c.ring_slots, 1u << 24, "frontier ring slot table capacity (collections)" },
                { "ring-records", CONF_U64, &c.ring_records, 1u << 24, "frontier ring change records" },
        };
        struct node_args a;
        struct node_config cfg;
        int r, ex = NODE_EXIT_FAILURE;

        if (node_args_parse(argc, argv, COORD__ROLE__ROLE_CONTROLLER, extra, ELEMENTSOF(extra), &a, &ex))
                return ex;
        if (c.ring_slots < 16 || c.ring_records < 16) {
                fprintf(stderr, "coord-controller: --ring-slots and --ring-records must be at least 16\n");
                ex = NODE_EXIT_USAGE;
                goto out;
        }
        cfg = (struct node_config){
                .role = COORD__ROLE__ROLE_CONTROLLER, .instance = a.instance,
                .data_dir = a.data_dir, .run_dir = a.run_dir, .max_frame = (uint32_t)a.max_frame,
        };
        r = node_new(&cfg, &controller_handler, &c, &c.node);
        if (r < 0) {
                ex = r == -EBUSY ? NODE_EXIT_RUNNING : NODE_EXIT_FAILURE;
                goto out;
        }
        r = fring_name(a.instance, c.ring_name, sizeof(c.ring_name));
        if (r < 0) {
                log_error_errno(r, "ring_name_failed", "instance=%s", a.instance);
                goto out;
        }
        /* Same shm object across restarts; the generation tells readers we restarted. */
        r = fring_create(c.ring_name, (uint32_t)c.ring_slots, (uint32_t)c.ring_records,
                         node_incarnation(c.node), &c.ring);
        if (r < 0) {
                log_error_errno(r, "ring_create_failed", "name=%s", c.ring_name);
                goto out;
        }
        log_info("ring_created", "name=%s generation=%llu slots=%llu records=%llu", c.ring_name,
                 (unsigned long long)node_incarnation(c.node), (unsigned long long)c.ring_slots,
                 (unsigned long long)c.ring_records);
        node_set_ready(c.node, true);
        r = node_run(c.node);
        if (r < 0) {
                log_error_errno(r, "loop_failed", "");
                goto out;
        }
        log_info("daemon_stopped", "role=controller");
        ex = 0;
out:
        c.ring = fring_free(c.ring);
        c.node = node_free(c.node);
        node_args_done(&a);
        return ex;
}
