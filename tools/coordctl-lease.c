/* coordctl-lease.c -- leases for operators and tests (issue 33, docs/operations.md):
 *
 *   coordctl lease claim   KEY HOLDER TTL_MS
 *   coordctl lease renew   KEY HOLDER EPOCH
 *   coordctl lease commit  KEY HOLDER EPOCH COMMIT_ID VERSION
 *   coordctl lease release KEY HOLDER EPOCH
 *
 * One request to the adapter (adapter-lease.c); the answer as one line of key=value:
 * status=ok|fenced|busy key= holder= epoch= version= expires_in_ms= retried=0|1.
 * Exit status 0 ok, 2 fenced, 3 busy, 1 adapter down or an error answer (printed as
 * status=error sqlstate= message=), 64 usage.
 */
#include "coordctl-lease.h"

#include <stdio.h>
#include <string.h>

#include "node/node.h"
#include "util.h"

static int lease_usage(const char *why)
{
        fprintf(stderr, "coordctl: lease: %s\n"
                        "usage: coordctl lease claim KEY HOLDER TTL_MS\n"
                        "       coordctl lease renew KEY HOLDER EPOCH\n"
                        "       coordctl lease commit KEY HOLDER EPOCH COMMIT_ID VERSION\n"
                        "       coordctl lease release KEY HOLDER EPOCH\n", why);
        return NODE_EXIT_USAGE;
}

static int lease_print(const char *key, const Coord__Envelope *env)
{
        static const char *const names[] = { "ok", "fenced", "busy" };
        Coord__LeaseReply *rep;
        int ex;

        if (env->type == COORD__MSG_TYPE__MSG_ERROR) {
                Coord__Error *e = coord__error__unpack(NULL, env->payload.len, env->payload.data);

                printf("status=error sqlstate=%s message=\"%s\"\n", e ? e->sqlstate : "?",
                       e ? e->message : "malformed error");
                if (e)
                        coord__error__free_unpacked(e, NULL);
                return 1;
        }
        if (env->type != COORD__MSG_TYPE__MSG_LEASE_REPLY ||
            !(rep = coord__lease_reply__unpack(NULL, env->payload.len, env->payload.data))) {
                printf("status=error message=\"unexpected answer (type %d)\"\n", (int)env->type);
                return 1;
        }
        printf("status=%s key=%s holder=%s epoch=%llu version=%llu expires_in_ms=%llu retried=%d\n",
               (unsigned)rep->status < ELEMENTSOF(names) ? names[rep->status] : "?", key,
               rep->holder[0] ? rep->holder : "-", (unsigned long long)rep->epoch,
               (unsigned long long)rep->version, (unsigned long long)rep->expires_in_ms,
               rep->retried ? 1 : 0);
        ex = rep->status == COORD__LEASE_REPLY__STATUS__OK ? 0 :
             rep->status == COORD__LEASE_REPLY__STATUS__FENCED ? COORDCTL_LEASE_FENCED :
             COORDCTL_LEASE_BUSY;
        coord__lease_reply__free_unpacked(rep, NULL);
        return ex;
}

int coordctl_lease(const char *run_dir, int timeout_ms, char **args, int nargs)
{
        Coord__LeaseClaim claim = COORD__LEASE_CLAIM__INIT;
        Coord__LeaseRenew renew = COORD__LEASE_RENEW__INIT;
        Coord__LeaseCommit commit = COORD__LEASE_COMMIT__INIT;
        Coord__LeaseRelease release = COORD__LEASE_RELEASE__INIT;
        const ProtobufCMessage *msg;
        Coord__Envelope *env = NULL;
        Coord__MsgType type;
        uint64_t n = 0, v = 0;
        const char *op;
        int r, ex;

        if (nargs < 2)
                return lease_usage("an operation is needed");
        op = args[1];
        if (strcmp(op, "claim") == 0) {
                if (nargs != 5 || parse_u64(args[4], UINT32_MAX, &n) < 0)
                        return lease_usage("claim KEY HOLDER TTL_MS");
                claim.key = args[2];
                claim.holder = args[3];
                claim.ttl_ms = (uint32_t)n;
                type = COORD__MSG_TYPE__MSG_LEASE_CLAIM;
                msg = &claim.base;
        } else if (strcmp(op, "renew") == 0 || strcmp(op, "release") == 0) {
                bool rn = op[1] == 'e' && op[2] == 'n';

                if (nargs != 5 || parse_u64(args[4], UINT64_MAX, &n) < 0)
                        return lease_usage(rn ? "renew KEY HOLDER EPOCH" : "release KEY HOLDER EPOCH");
                if (rn) {
                        renew.key = args[2];
                        renew.holder = args[3];
                        renew.epoch = n;
                        type = COORD__MSG_TYPE__MSG_LEASE_RENEW;
                        msg = &renew.base;
                } else {
                        release.key = args[2];
                        release.holder = args[3];
                        release.epoch = n;
                        type = COORD__MSG_TYPE__MSG_LEASE_RELEASE;
                        msg = &release.base;
                }
        } else if (strcmp(op, "commit") == 0) {
                if (nargs != 7 || parse_u64(args[4], UINT64_MAX, &n) < 0 ||
                    parse_u64(args[6], UINT64_MAX, &v) < 0)
                        return lease_usage("commit KEY HOLDER EPOCH COMMIT_ID VERSION");
                commit.key = args[2];
                commit.holder = args[3];
                commit.epoch = n;
                commit.commit_id = args[5];
                commit.version = v;
                type = COORD__MSG_TYPE__MSG_LEASE_COMMIT;
                msg = &commit.base;
        } else {
                return lease_usage("unknown operation");
        }
        r = node_ctl_call(run_dir, COORD__ROLE__ROLE_ADAPTER, type, msg, timeout_ms, &env);
        if (r < 0) {
                printf("status=error message=\"adapter %s\"\n",
                       r == -ETIMEDOUT ? "not answering" : "down");
                return 1;
        }
        ex = lease_print(args[2], env);
        coord__envelope__free_unpacked(env, NULL);
        return ex;
}
