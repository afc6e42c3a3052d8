/* builtins.h -- the built-in relations' GlobalIds, the same in every process: the
 * adapter writes coord_objects, coord_bounds and coord_requirements, the controller
 * coord_frontiers, the lifecycle follower publishes their bounds (they compact only as
 * the catalog allows, like every collection: I2).  coord_sources and coord_refreshes
 * are live status relations, not collections (below). */
#pragma once

#define COORD_GID_OBJECTS       1u      /* coord_objects; its upper is the tables' T */
#define COORD_GID_FRONTIERS     2u      /* coord_frontiers */
#define COORD_GID_BOUNDS        3u      /* coord_bounds */
#define COORD_GID_REQUIREMENTS  4u      /* coord_requirements */
#define COORD_N_BUILTINS        4u      /* the built-in collections are 1 .. this */
/* Live status relations: no collection, no history, no bound.  The controller answers
 * a read of one from its state at the moment it evaluates the read, whatever the read's
 * timestamp (controller-server-peek.c NOTE 21); the adapter refuses them as inputs of
 * maintained objects and under AS OF (adapter-sql-plan.c, sql_analyze()). */
#define COORD_GID_SOURCES       5u      /* coord_sources */
#define COORD_GID_REFRESHES     6u      /* coord_refreshes */

/* coord_leases (issue 33): not a collection either, and not the controller's: the
 * adapter, which owns the leases, lists them when it analyzes the read, as it does the
 * pg_catalog relations (adapter-pgcatalog.c, adapter-lease.c).  The id is reserved. */
#define COORD_GID_LEASES        7u

static inline int coord_gid_is_live(unsigned long long gid)
{
        return gid == COORD_GID_SOURCES || gid == COORD_GID_REFRESHES;
}
#define COORD_FIRST_USER_GID    1000u   /* catalog items from here on */
