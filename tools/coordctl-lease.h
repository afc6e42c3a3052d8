/* coordctl-lease.h -- `coordctl lease ...` (coordctl-lease.c, issue 33). */
#pragma once

/* args[0] is "lease"; returns the exit status (COORDCTL_LEASE_*, or NODE_EXIT_USAGE). */
#define COORDCTL_LEASE_FENCED 2
#define COORDCTL_LEASE_BUSY   3
int coordctl_lease(const char *run_dir, int timeout_ms, char **args, int nargs);
