/* fuzz.h -- what every harness of tests/fuzz provides.
 *
 * A harness is one file fuzz-<name>.c defining LLVMFuzzerTestOneInput().  It is built
 * twice: with -Dfuzz=true (clang) linked with libFuzzer's main, for `tools/coord fuzz
 * <name>`; otherwise linked with fuzz-replay.c, a main() that runs the harness on every
 * file of tests/fuzz/corpus/<name>/ -- the replay every test run does.
 *
 * Contract of a harness: any input may be given, in any order, any number of times, in
 * one process; it returns 0, and a bug shows as a crash, a sanitizer report, or a
 * failed FUZZ_CHECK() (which aborts in every build, NDEBUG or not).  Set-up that is too
 * slow per input (a loop, a server) is made once, on the first input, and kept.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant the code under test promises; checked in every build. */
#define FUZZ_CHECK(expr)                                                                \
        do {                                                                            \
                if (!(expr)) {                                                          \
                        fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed\n", __FILE__,     \
                                __LINE__, #expr);                                       \
                        abort();                                                        \
                }                                                                       \
        } while (0)
