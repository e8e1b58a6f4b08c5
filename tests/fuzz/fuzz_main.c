/* SPDX-License-Identifier: MIT */
/* Standalone driver for fuzz targets when the compiler has no libFuzzer
 * (gcc builds, CI). Feeds LLVMFuzzerTestOneInput with the corpus files
 * given on the command line, then with mutations of them (bit flips, byte
 * overwrites, truncation, duplication of slices, splices of two inputs) and
 * plain random buffers, for a bounded wall time. Not coverage guided: the
 * libFuzzer build (scripts/run-fuzz) is for long runs; this one keeps every
 * parser exercised under the sanitizers on every test run.
 *
 * usage: fuzz-<target> [--seconds N] [--seed N] [--max-len N] [FILE|DIR ...] */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "tracing/util/util_time.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    uint8_t *data;
    size_t size;
} input;

static input *corpus;
static size_t corpus_len, corpus_cap;
static uint64_t rng_state;

static uint64_t rng(void)
{
    /* xorshift64*: deterministic per seed so a finding can be replayed. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static size_t below(size_t n)
{
    return n ? (size_t)(rng() % n) : 0;
}

static void add_input(uint8_t *data, size_t size)
{
    if (corpus_len == corpus_cap) {
        corpus_cap = corpus_cap ? corpus_cap * 2 : 16;
        corpus = realloc(corpus, corpus_cap * sizeof *corpus);
        if (!corpus) {
            perror("fuzz: realloc");
            exit(2);
        }
    }
    corpus[corpus_len].data = data;
    corpus[corpus_len].size = size;
    corpus_len++;
}

static void load_file(const char *path, size_t max_len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz: %s: %s\n", path, strerror(errno));
        exit(2);
    }
    uint8_t *buf = malloc(max_len ? max_len : 1);
    size_t n = buf ? fread(buf, 1, max_len, f) : 0;
    fclose(f);
    if (!buf) {
        perror("fuzz: malloc");
        exit(2);
    }
    add_input(buf, n);
}

static void load_path(const char *path, size_t max_len)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "fuzz: %s: %s\n", path, strerror(errno));
        exit(2);
    }
    if (!S_ISDIR(st.st_mode)) {
        load_file(path, max_len);
        return;
    }
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "fuzz: %s: %s\n", path, strerror(errno));
        exit(2);
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        load_path(sub, max_len);
    }
    closedir(d);
}

static size_t mutate(uint8_t *buf, size_t size, size_t max_len)
{
    int rounds = 1 + (int)below(8);
    for (int i = 0; i < rounds; i++) {
        switch (below(7)) {
        case 0: /* flip a bit */
            if (size)
                buf[below(size)] ^= (uint8_t)(1u << below(8));
            break;
        case 1: /* interesting byte */
            if (size) {
                static const uint8_t vals[] = { 0, 1, 0x7f, 0x80, 0xff, 0x0a, 0x12, 0x08 };
                buf[below(size)] = vals[below(sizeof vals)];
            }
            break;
        case 2: /* truncate */
            size = below(size + 1);
            break;
        case 3: /* duplicate a slice at another place */
            if (size) {
                size_t from = below(size), len = 1 + below(size - from);
                size_t to = below(size + 1);
                if (size + len <= max_len) {
                    uint8_t *slice = malloc(len);
                    if (slice) {
                        memcpy(slice, buf + from, len);
                        memmove(buf + to + len, buf + to, size - to);
                        memcpy(buf + to, slice, len);
                        size += len;
                        free(slice);
                    }
                }
            }
            break;
        case 4: /* splice with another corpus entry */
            if (corpus_len) {
                const input *o = &corpus[below(corpus_len)];
                size_t at = below(size + 1);
                size_t n = below(o->size + 1);
                if (at + n > max_len)
                    n = max_len - at;
                memcpy(buf + at, o->data + below(o->size - n + 1), n);
                if (at + n > size)
                    size = at + n;
            }
            break;
        case 5: /* random bytes appended */
        {
            size_t n = below(16);
            while (n-- && size < max_len)
                buf[size++] = (uint8_t)rng();
            break;
        }
        default: /* overwrite a random multi-byte window */
            if (size) {
                size_t at = below(size), n = 1 + below(8);
                for (size_t k = 0; k < n && at + k < size; k++)
                    buf[at + k] = (uint8_t)rng();
            }
            break;
        }
    }
    return size;
}

int main(int argc, char **argv)
{
    double seconds = 10;
    uint64_t seed = (uint64_t)time(NULL);
    size_t max_len = 1 << 16;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--max-len") && i + 1 < argc)
            max_len = strtoull(argv[++i], NULL, 0);
        else
            load_path(argv[i], max_len);
    }
    if (max_len < 64)
        max_len = 64;
    rng_state = seed ? seed : 1;
    printf("fuzz: seed %llu, %zu corpus inputs, %.0f s\n", (unsigned long long)seed, corpus_len,
           seconds);
    fflush(stdout);

    for (size_t i = 0; i < corpus_len; i++)
        LLVMFuzzerTestOneInput(corpus[i].data, corpus[i].size);

    uint8_t *buf = malloc(max_len);
    if (!buf)
        return 2;
    uint64_t runs = 0;
    double deadline = util_now_s() + seconds;
    while ((runs & 255) || util_now_s() < deadline) {
        size_t size;
        if (corpus_len && below(8) != 0) {
            const input *in = &corpus[below(corpus_len)];
            size = in->size < max_len ? in->size : max_len;
            memcpy(buf, in->data, size);
            size = mutate(buf, size, max_len);
        } else {
            size = below(512);
            for (size_t k = 0; k < size; k++)
                buf[k] = (uint8_t)rng();
        }
        /* Exact-size heap copy so ASan catches any read past the end. */
        uint8_t *exact = malloc(size ? size : 1);
        memcpy(exact, buf, size);
        LLVMFuzzerTestOneInput(exact, size);
        free(exact);
        runs++;
    }
    printf("fuzz: %llu runs, no crash\n", (unsigned long long)runs);
    free(buf);
    for (size_t i = 0; i < corpus_len; i++)
        free(corpus[i].data);
    free(corpus);
    return 0;
}
