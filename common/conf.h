/* conf.h -- configuration from command-line flags and an optional INI file.
 *
 * A program describes its options once, in a table of conf_option.  conf_parse() reads
 * `--config FILE` first (INI, parsed by inih; keys are the long option names, in the
 * section [coord] or in the program's own section, e.g. [adapter]), then applies the
 * flags, so a flag always wins over the file.  Flags are `--name value` or
 * `--name=value`; a CONF_BOOL flag alone means true (a value only with `=`).  Unknown names, bad numbers and
 * missing values are errors with a message in `err`; nothing is printed here.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum conf_type {
        CONF_STR,       /* char *: strdup'ed, freed by conf_done() */
        CONF_U64,       /* uint64_t, at most .max (0 = no limit) */
        CONF_BOOL,      /* bool: true/false/yes/no/1/0 */
        _CONF_TYPE_MAX,
};

struct conf_option {
        const char *name;       /* long option and INI key, e.g. "data-dir" */
        enum conf_type type;
        void *ptr;
        uint64_t max;
        const char *help;
};

/* Returns 0, 1 when --help was given (usage is the caller's), or -EINVAL with `err` set.
 * Positional arguments are left in *ret_args / *ret_nargs (pointing into argv). */
int conf_parse(int argc, char **argv, const char *section, const struct conf_option *opts,
               size_t n_opts, char **ret_args, int *ret_nargs, char *err, size_t errlen);

/* Set one option from a string.  -ENOENT unknown name, -EINVAL/-ERANGE bad value. */
int conf_set(const struct conf_option *opts, size_t n_opts, const char *name, const char *value);

/* Print "  --name  help" lines. */
void conf_usage(FILE *f, const struct conf_option *opts, size_t n_opts);

/* Free the CONF_STR values. */
void conf_done(const struct conf_option *opts, size_t n_opts);
