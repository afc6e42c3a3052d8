/* probes.d -- USDT probes of Coord, provider "coord".
 *
 * Naming: subsystem__object__event, paired __start/__done where a duration matters.
 * Call sites use the generated macros: COORD_RING_PUSH(slot, upper, since).  bpftrace
 * shows them as usdt:BINARY:coord:ring__push.  Arguments stay plain C types.
 * Where <sys/sdt.h> or dtrace is missing, tools/gen-dummy-probes.sh makes every macro a
 * no-op and every _ENABLED() false.
 */
provider coord {
        /* io_uring event loop */
        probe uring__submit(int);                       /* sqes submitted */
        probe loop__stall(unsigned long long);          /* ns spent in one callback batch over threshold */
        probe loop__callback(void *);                   /* a completion callback starts: fn (only while loop__callback__slow is traced) */
        probe loop__callback__slow(void *, unsigned long long); /* it ran over 1 ms: fn, ns (timed only while traced) */

        /* framed IPC */
        probe ipc__frame__recv(int, unsigned int, unsigned int);  /* fd, type, bytes */
        probe ipc__frame__send(int, unsigned int, unsigned int);  /* fd, type, bytes */
        probe ipc__frame__reject(int, int);             /* fd, -errno */
        probe ipc__peer__connect(int, unsigned long long);   /* role, incarnation */
        probe ipc__peer__disconnect(int, unsigned long long);
        probe ipc__peer__stale(int, unsigned long long, unsigned long long); /* role, got, seen */

        /* shared-memory frontier ring */
        probe ring__push(unsigned long long, unsigned long long, unsigned long long); /* id, upper, since */
        probe ring__resync(unsigned long long, unsigned long long); /* generation, records lapped */
        probe ring__wake(unsigned int);
        probe ring__grow(unsigned int, unsigned int, int); /* slots from, slots to, 0 begun / 1 flipped */

        /* shared-memory catalog log ring (lring.c) */
        probe lring__publish(unsigned long long, unsigned int, unsigned int); /* seq, payload bytes, flags (1: omitted) */
        probe lring__resync(unsigned long long, int);   /* reader: generation, -ESTALE lapped / -EPIPE producer restart */
        probe lring__wake(unsigned int);                /* readers woken */

        /* PostgreSQL wire protocol (adapter): one request of a client -- a simple Query
         * (kind 'Q', every statement of its string), a Parse ('P') or an Execute ('E') --
         * from its message to its answer (ReadyForQuery for 'Q').  conn is the
         * connection's BackendKeyData pid; text the query string ('Q', 'P') or "". */
        probe pgwire__request__start(int, int, char *);                   /* conn, kind, text */
        probe pgwire__request__done(int, int, int, unsigned long long);   /* conn, kind, failed, ns */

        /* adapter catalog: a consumer refused by admission (I4): as-of, the input's bound */
        probe admission__refuse(unsigned long long, unsigned long long);

        /* catalog store */
        probe catalog__commit__start(unsigned long long, unsigned int);  /* seq, ops */
        probe catalog__commit__done(unsigned long long, int);            /* seq, result */
        probe catalog__sync__fail(int);
        probe catalog__catchup(unsigned long long);                      /* secondary: last seq */
        probe catalog__synclog__switch(unsigned long long, unsigned long long); /* new segno, us waited for the store sync */
        probe catalog__synclog__replay(unsigned long long, unsigned int);      /* a record at open: first seq, transactions */

        /* controller storage: group commit (controller-storage-write.c NOTE 14) */
        probe storage__sync__start(unsigned long long);                  /* target write seq */
        probe storage__sync__done(unsigned long long, int, unsigned long long); /* target, result, ns */
        probe controller__release(unsigned long long, unsigned int, unsigned int); /* durable seq, messages, ring records released */
        probe storage__compact(unsigned long long, unsigned long long, unsigned long long); /* gid, updates read, written */

        /* lifecycle follower (issue 5) */
        probe lifecycle__publish(unsigned long long, unsigned int, unsigned int, unsigned int); /* based_on_seq, bounds, requirements, bytes */
        probe lifecycle__applied(unsigned long long, unsigned long long); /* catalog seq applied, us since its commit */
        probe lifecycle__fallback(unsigned long long, int);     /* state seq, why the catalog log ring could not vouch (-errno) */

        /* leases in the catalog (issue 33, adapter-lease.c) */
        probe lease__claim(const char *, const char *, unsigned long long); /* key, holder, new epoch (durable) */
        probe lease__fenced(const char *, const char *, unsigned long long, int); /* key, holder, epoch asked, MsgType */

        /* daemons */
        probe daemon__start(int, unsigned long long);  /* role, incarnation */
        probe daemon__ready(int);
};
