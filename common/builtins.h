/* builtins.h -- the built-in relations' GlobalIds, the same in every process: the
 * adapter writes coord_objects, coord_bounds and coord_requirements, the controller
 * coord_frontiers, the lifecycle follower publishes their bounds (they compact only as
 * the catalog allows, like every collection: I2). */
#pragma once

#define COORD_GID_OBJECTS       1u      /* coord_objects; its upper is the tables' T */
#define COORD_GID_FRONTIERS     2u      /* coord_frontiers */
#define COORD_GID_BOUNDS        3u      /* coord_bounds */
#define COORD_GID_REQUIREMENTS  4u      /* coord_requirements */
#define COORD_N_BUILTINS        4u
#define COORD_FIRST_USER_GID    1000u   /* catalog items from here on */
