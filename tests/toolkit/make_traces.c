/* SPDX-License-Identifier: MIT */
/* Writes the crafted traces of the toolkit tests (trace_cases.c) as
 * OUTDIR/CASE.pftrace, named by the outcome gputrace-check must report.
 *
 * usage: make_traces OUTDIR [CASE...]   write all cases, or the named ones
 *        make_traces --list             print the case names
 *        make_traces --args CASE        print the options the case needs
 *        make_traces --corpus DIR       write the fuzzer seeds of the hostile
 *                                       cases (their small variants), e.g.
 *                                       into tests/toolkit/corpus
 *        make_traces --inflate-seeds DIR  write the seeds of
 *                                       fuzz_toolkit_inflate, e.g. into
 *                                       tests/fuzz/corpus/toolkit_inflate */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/toolkit/trace_cases.h"

static int write_case(const char *dir, const tk_case *c, bool seed, const char *ext)
{
    tk_case_out r = { 0 };
    (seed ? c->make_seed : c->make)(&r);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s%s", dir, c->name, ext);
    FILE *f = fopen(path, "wb");
    if (!f || (r.len && fwrite(r.data, 1, r.len, f) != r.len) || fclose(f) != 0) {
        fprintf(stderr, "make_traces: %s: %s\n", path, strerror(errno));
        free(r.data);
        return 1;
    }
    free(r.data);
    return 0;
}

static const tk_case *find(const char *name)
{
    for (size_t i = 0; i < tk_n_cases; i++)
        if (strcmp(tk_cases[i].name, name) == 0)
            return &tk_cases[i];
    fprintf(stderr, "make_traces: unknown case %s\n", name);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < tk_n_cases; i++)
            puts(tk_cases[i].name);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--args") == 0) {
        const tk_case *c = find(argv[2]);
        if (!c)
            return 2;
        for (const char *const *a = c->args; a && *a; a++)
            puts(*a);
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: make_traces OUTDIR [CASE...] | --list | --args CASE | "
                        "--corpus DIR | --inflate-seeds DIR\n");
        return 2;
    }
    if (argc == 3 && strcmp(argv[1], "--corpus") == 0) {
        int rc = 0;
        for (size_t i = 0; i < tk_n_cases; i++)
            if (tk_cases[i].make_seed)
                rc |= write_case(argv[2], &tk_cases[i], true, ".pftrace");
        return rc;
    }
    if (argc == 3 && strcmp(argv[1], "--inflate-seeds") == 0) {
        if (mkdir(argv[2], 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "make_traces: %s: %s\n", argv[2], strerror(errno));
            return 1;
        }
        int rc = 0;
        for (size_t i = 0; i < tk_n_inflate_seeds; i++)
            rc |= write_case(argv[2], &tk_inflate_seeds[i], false, ".bin");
        return rc;
    }
    if (mkdir(argv[1], 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "make_traces: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    int rc = 0;
    if (argc == 2) {
        for (size_t i = 0; i < tk_n_cases; i++)
            rc |= write_case(argv[1], &tk_cases[i], false, ".pftrace");
        return rc;
    }
    for (int a = 2; a < argc; a++) {
        const tk_case *c = find(argv[a]);
        if (!c)
            return 2;
        rc |= write_case(argv[1], c, false, ".pftrace");
    }
    return rc;
}
