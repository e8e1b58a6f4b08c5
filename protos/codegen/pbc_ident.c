/* SPDX-License-Identifier: MIT */
/* protoc-gen-pbc's identifier log: every global C name the generated
 * headers define, with where it came from, checked for collisions once all
 * files are emitted (two schema names can flatten to one C name). */
#include "protos/codegen/pbc_model.h"

#include <stdlib.h>
#include <string.h>

void pbc_ident_add(pbc_ident_log *log, const char *ident, const char *origin, const char *file)
{
    if (log->n == log->cap) {
        size_t cap = log->cap ? log->cap * 2 : 256;
        pbc_ident *p = realloc(log->items, cap * sizeof *p);
        if (!p) {
            /* Treat as OOM like the arena does. */
            abort();
        }
        log->items = p;
        log->cap = cap;
    }
    pbc_ident *it = &log->items[log->n++];
    it->name = ident;
    it->origin = origin;
    it->file = file;
}

static int ident_cmp(const void *a, const void *b)
{
    const pbc_ident *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    /* Stable tie-break so the first reported pair is deterministic. */
    c = strcmp(x->file, y->file);
    return c ? c : strcmp(x->origin, y->origin);
}

const char *pbc_ident_check(pbc_arena *arena, pbc_ident_log *log)
{
    if (log->n < 2)
        return NULL;
    qsort(log->items, log->n, sizeof *log->items, ident_cmp);
    for (size_t i = 1; i < log->n; i++) {
        const pbc_ident *a = &log->items[i - 1], *b = &log->items[i];
        if (strcmp(a->name, b->name) != 0)
            continue;
        pbc_sb sb = { 0 };
        pbc_sb_printf(&sb, "C identifier '%s' would be defined twice: by %s (%s) and by %s (%s)",
                      a->name, a->origin, a->file, b->origin, b->file);
        char *msg = pbc_strdup(arena, sb.data);
        pbc_sb_free(&sb);
        return msg;
    }
    return NULL;
}

void pbc_ident_free(pbc_ident_log *log)
{
    free(log->items);
    log->items = NULL;
    log->n = log->cap = 0;
}
