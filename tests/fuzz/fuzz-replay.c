/* fuzz-replay.c -- main() of a harness built without libFuzzer: run it on every file of
 * the corpus directories (and single files) named on the command line, in name order.
 *
 * The replay is a meson test (tests/fuzz/meson.build): a crash, a sanitizer report or a
 * failed FUZZ_CHECK() fails it.  An empty or missing corpus is an error (exit 99): a
 * replay of nothing could not fail.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int read_file(const char *path, uint8_t **ret, size_t *ret_len)
{
        uint8_t *buf = NULL;
        size_t len = 0, cap = 0;
        FILE *f = fopen(path, "rbe");
        int r = 0;

        if (!f)
                return -errno;
        for (;;) {
                size_t n;

                if (len == cap) {
                        uint8_t *nb = realloc(buf, cap ? cap * 2 : 4096);

                        if (!nb) {
                                r = -ENOMEM;
                                goto out;
                        }
                        buf = nb;
                        cap = cap ? cap * 2 : 4096;
                }
                n = fread(buf + len, 1, cap - len, f);
                len += n;
                if (n == 0) {
                        if (ferror(f))
                                r = -EIO;
                        break;
                }
        }
out:
        fclose(f);
        if (r < 0) {
                free(buf);
                return r;
        }
        *ret = buf;
        *ret_len = len;
        return 0;
}

static int run_file(const char *path)
{
        uint8_t *data = NULL;
        size_t len = 0;
        int r;

        r = read_file(path, &data, &len);
        if (r < 0) {
                fprintf(stderr, "fuzz-replay: %s: %s\n", path, strerror(-r));
                return r;
        }
        /* A private copy of exactly len bytes, so that ASan sees a read past the end. */
        LLVMFuzzerTestOneInput(data, len);
        free(data);
        return 0;
}

static int name_cmp(const struct dirent **a, const struct dirent **b)
{
        return strcmp((*a)->d_name, (*b)->d_name);
}

/* Every regular file of dir, in name order: the count run, or -errno. */
static int run_dir(const char *dir)
{
        struct dirent **names = NULL;
        int n, runs = 0, r = 0;

        n = scandir(dir, &names, NULL, name_cmp);
        if (n < 0)
                return -errno;
        for (int i = 0; i < n; i++) {
                char path[4096];
                struct stat st;

                if (r == 0 && names[i]->d_name[0] != '.' &&
                    snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name) < (int)sizeof(path) &&
                    stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                        r = run_file(path);
                        runs++;
                }
                free(names[i]);
        }
        free(names);
        return r < 0 ? r : runs;
}

int main(int argc, char **argv)
{
        int total = 0;

        if (argc < 2) {
                fprintf(stderr, "usage: %s CORPUS-DIR|FILE...\n", argv[0]);
                return 64;
        }
        for (int i = 1; i < argc; i++) {
                struct stat st;
                int r;

                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "fuzz-replay: %s: %s\n", argv[i], strerror(errno));
                        return 99;
                }
                r = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]) < 0 ? -EIO : 1;
                if (r < 0) {
                        fprintf(stderr, "fuzz-replay: %s: %s\n", argv[i], strerror(-r));
                        return 99;
                }
                total += r;
        }
        if (total == 0) {
                fprintf(stderr, "fuzz-replay: no input found: nothing was tested\n");
                return 99;
        }
        printf("fuzz-replay: %d inputs, no failure\n", total);
        return 0;
}
