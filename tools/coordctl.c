/* coordctl -- operator's command line for a running Coord instance.
 *
 *   coordctl [--run-dir DIR] [--timeout-ms N] status [--json]
 *   coordctl [--run-dir DIR] [--timeout-ms N] check [--json]
 *
 * status: each daemon's pid, incarnation, uptime, readiness and peer connections.
 * Exit status 0 when all three daemons answer and are ready, 1 when any is down or not
 * ready, 64 on a usage error.
 *
 * check: the diagnostic reconstruction (I10, adapter/adapter-check.h).  The adapter
 * rebuilds its catalog state from the durable log at an aligned sequence number and
 * compares it with its memory.  Exit status 0 only on a match; 1 on a mismatch, when
 * the adapter is down or does not answer, or when the check could not run; 64 on a
 * usage error.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "node.h"
#include "util.h"

static const Coord__Role daemons[] = {
        COORD__ROLE__ROLE_ADAPTER, COORD__ROLE__ROLE_LIFECYCLE, COORD__ROLE__ROLE_CONTROLLER,
};

static void usage(FILE *f)
{
        fprintf(f, "Usage: coordctl [--run-dir DIR] [--timeout-ms N] status [--json]\n"
                   "       coordctl [--run-dir DIR] [--timeout-ms N] check [--json]\n"
                   "\n"
                   "  status            each daemon's pid, incarnation, readiness and peers\n"
                   "  check             the adapter rebuilds the catalog from its durable log and\n"
                   "                    compares it with its memory at one sequence number (I10)\n"
                   "  --run-dir DIR     the instance's run directory (default $COORD_RUN_DIR or ./var/run)\n"
                   "  --timeout-ms N    how long to wait for each daemon (default 2000; check: 30000)\n"
                   "  --json            one JSON object instead of the table\n"
                   "\n"
                   "Exit status: status: 0 all three daemons up and ready, 1 otherwise;\n"
                   "check: 0 match, 1 mismatch, adapter down or check failed; 64 usage error.\n");
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

static int cmd_status(const char *run_dir, int timeout_ms, bool json)
{
        Coord__StatusReply *st[ELEMENTSOF(daemons)] = { NULL };
        int err[ELEMENTSOF(daemons)];
        bool all_ok = true, all_connected = true;

        for (size_t i = 0; i < ELEMENTSOF(daemons); i++) {
                err[i] = node_query_status(run_dir, daemons[i], timeout_ms, &st[i]);
                if (err[i] < 0 || !st[i]->ready)
                        all_ok = false;
                if (err[i] < 0)
                        all_connected = false;
                else
                        for (size_t k = 0; k < st[i]->n_peers; k++)
                                if (!st[i]->peers[k]->connected)
                                        all_connected = false;
        }

        if (json) {
                printf("{\"run_dir\":");
                print_json_string(run_dir);
                printf(",\"ok\":%s,\"all_connected\":%s,\"daemons\":[", all_ok ? "true" : "false",
                       all_connected ? "true" : "false");
                for (size_t i = 0; i < ELEMENTSOF(daemons); i++) {
                        Coord__StatusReply *s = st[i];
                        printf("%s{\"role\":\"%s\",\"up\":%s", i ? "," : "",
                               node_role_name(daemons[i]), err[i] < 0 ? "false" : "true");
                        if (err[i] < 0) {
                                printf(",\"error\":");
                                print_json_string(err_word(err[i]));
                                printf("}");
                                continue;
                        }
                        printf(",\"pid\":%d,\"incarnation\":%llu,\"uptime_ms\":%llu,\"ready\":%s,"
                               "\"instance\":",
                               s->pid, (unsigned long long)s->incarnation,
                               (unsigned long long)s->uptime_ms, s->ready ? "true" : "false");
                        print_json_string(s->instance);
                        printf(",\"catalog_seq\":%llu,\"ring_generation\":%llu,"
                               "\"frames_rejected\":%llu,\"stale_rejected\":%llu,\"max_stall_us\":%llu,"
                               "\"detail\":",
                               (unsigned long long)s->catalog_seq,
                               (unsigned long long)s->ring_generation,
                               (unsigned long long)s->frames_rejected,
                               (unsigned long long)s->stale_rejected,
                               (unsigned long long)s->max_stall_us);
                        print_json_string(s->detail);
                        printf(",\"peers\":[");
                        for (size_t k = 0; k < s->n_peers; k++) {
                                Coord__PeerStatus *p = s->peers[k];
                                printf("%s{\"role\":\"%s\",\"connected\":%s,\"incarnation\":%llu,"
                                       "\"since_ms\":%llu,\"connects\":%u}",
                                       k ? "," : "", node_role_name(p->role),
                                       p->connected ? "true" : "false",
                                       (unsigned long long)p->incarnation,
                                       (unsigned long long)p->since_ms, p->reconnects);
                        }
                        printf("]}");
                }
                printf("]}\n");
        } else {
                printf("%-11s %-8s %-11s %-9s %-6s %s\n", "DAEMON", "PID", "INCARNATION", "UPTIME",
                       "READY", "PEERS");
                for (size_t i = 0; i < ELEMENTSOF(daemons); i++) {
                        Coord__StatusReply *s = st[i];
                        if (err[i] < 0) {
                                printf("%-11s %-8s %-11s %-9s %-6s %s\n", node_role_name(daemons[i]),
                                       "-", "-", "-", "no", err_word(err[i]));
                                continue;
                        }
                        char up[32];
                        snprintf(up, sizeof(up), "%.1fs", (double)s->uptime_ms / 1000.0);
                        printf("%-11s %-8d %-11llu %-9s %-6s", node_role_name(daemons[i]), s->pid,
                               (unsigned long long)s->incarnation, up, s->ready ? "yes" : "no");
                        for (size_t k = 0; k < s->n_peers; k++) {
                                Coord__PeerStatus *p = s->peers[k];
                                printf(" %s=%s(inc %llu)", node_role_name(p->role),
                                       p->connected ? "connected" : "DISCONNECTED",
                                       (unsigned long long)p->incarnation);
                        }
                        printf("  [%s]\n", s->detail ? s->detail : "");
                }
                printf("%s\n", all_ok ? (all_connected ? "all daemons ready and connected"
                                                       : "all daemons ready; some peers not connected")
                                      : "NOT all daemons are up and ready");
        }
        for (size_t i = 0; i < ELEMENTSOF(daemons); i++)
                if (st[i])
                        coord__status_reply__free_unpacked(st[i], NULL);
        return all_ok ? 0 : 1;
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
        bool json = false, check;
        const struct conf_option opts[] = {
                { "run-dir", CONF_STR, &run_dir, 0, "run directory" },
                { "timeout-ms", CONF_U64, &timeout_ms, 600000, "per-daemon timeout" },
                { "json", CONF_BOOL, &json, 0, "JSON output" },
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
        if (r < 0 || nargs != 1 || (strcmp(args[0], "status") != 0 && strcmp(args[0], "check") != 0)) {
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
        else
                ex = cmd_status(run_dir, (int)timeout_ms, json);
out:
        conf_done(opts, ELEMENTSOF(opts));
        return ex;
}
