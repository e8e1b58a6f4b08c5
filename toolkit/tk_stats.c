/* SPDX-License-Identifier: MIT */
/* Storage for tk_stats: plain counters, plus per-index lists found through
 * one hash index. */
#include "toolkit/tk_stats.h"

#include <stdlib.h>
#include <string.h>

#include "toolkit/tk_arith.h"

static const tk_stat_desc descs[TK_STAT_COUNT] = {
#define TK_STAT_DESC(name, indexed, sev, src) { #name, indexed, sev, src },
    TK_STAT_LIST(TK_STAT_DESC)
#undef TK_STAT_DESC
};

const tk_stat_desc *tk_stat_describe(tk_stat_id id)
{
    return &descs[id];
}

const char *tk_stat_severity_name(tk_stat_severity s)
{
    switch (s) {
    case TK_STAT_INFO:
        return "info";
    case TK_STAT_DATA_LOSS:
        return "data_loss";
    case TK_STAT_ERROR:
        return "error";
    case TK_STAT_NOTICE:
        return "notice";
    }
    return "?";
}

void tk_stats_init(tk_stats *s)
{
    memset(s, 0, sizeof *s);
    tk_map_init(&s->index);
}

void tk_stats_free(tk_stats *s)
{
    for (int i = 0; i < TK_STAT_COUNT; i++) {
        free(s->slots[i]);
        free(s->direct[i]);
    }
    tk_map_free(&s->index);
    tk_stats_init(s);
}

static inline bool is_direct(int32_t idx)
{
    return idx >= 0 && idx < TK_STAT_MAX_INDICES;
}

static inline uint64_t slot_key(tk_stat_id id, int32_t idx)
{
    return (uint64_t)id << 32 | (uint32_t)idx;
}

/* Counts one probe for a direct lookup, the map's probes for a hashed one. */
static tk_stat_slot *find_slot(tk_stats *s, tk_stat_id id, int32_t idx)
{
    s->probes++;
    if (is_direct(idx)) {
        const uint16_t pos = s->direct[id] ? s->direct[id][idx] : 0;
        return pos ? &s->slots[id][pos - 1] : NULL;
    }
    if (!s->n_hashed[id])
        return NULL;
    const uint64_t before = s->index.probes;
    const uint64_t *pos = tk_map_find(&s->index, slot_key(id, idx));
    s->probes += s->index.probes - before;
    return pos ? &s->slots[id][*pos] : NULL;
}

void tk_stats_set_indexed(tk_stats *s, tk_stat_id id, int32_t idx, int64_t v)
{
    _Static_assert(TK_STAT_MAX_INDICES < UINT16_MAX, "positions fit the direct table");
    s->present[id] = true;
    tk_stat_slot *slot = find_slot(s, id, idx);
    if (slot) {
        slot->value = v;
        return;
    }
    if (s->n_slots[id] >= TK_STAT_MAX_INDICES) {
        s->dropped_indices++;
        return;
    }
    if (s->n_slots[id] == s->cap_slots[id]) {
        uint32_t ncap = s->cap_slots[id] ? s->cap_slots[id] * 2 : 4;
        tk_stat_slot *ns = realloc(s->slots[id], ncap * sizeof *ns);
        if (!ns) {
            s->dropped_indices++;
            return;
        }
        s->slots[id] = ns;
        s->cap_slots[id] = ncap;
    }
    const uint32_t pos = s->n_slots[id];
    if (is_direct(idx)) {
        if (!s->direct[id] &&
            !(s->direct[id] = calloc(TK_STAT_MAX_INDICES, sizeof *s->direct[id]))) {
            s->dropped_indices++;
            return;
        }
        s->direct[id][idx] = (uint16_t)(pos + 1);
    } else {
        bool inserted;
        const uint64_t before = s->index.probes;
        const bool stored = tk_map_insert(&s->index, slot_key(id, idx), pos, &inserted) != NULL;
        s->probes += s->index.probes - before;
        if (!stored) {
            s->dropped_indices++;
            return;
        }
        s->n_hashed[id]++;
    }
    s->slots[id][pos].idx = idx;
    s->slots[id][pos].value = v;
    s->n_slots[id]++;
}

bool tk_stats_get_indexed(tk_stats *s, tk_stat_id id, int32_t idx, int64_t *v)
{
    const tk_stat_slot *slot = find_slot(s, id, idx);
    if (!slot)
        return false;
    *v = slot->value;
    return true;
}

int64_t tk_stats_total(const tk_stats *s, tk_stat_id id)
{
    if (!descs[id].indexed)
        return s->single[id];
    int64_t sum = 0;
    for (uint32_t i = 0; i < s->n_slots[id]; i++)
        sum = tk_sat_add(sum, s->slots[id][i].value);
    return sum;
}

bool tk_stats_nonzero(const tk_stats *s, tk_stat_id id)
{
    if (!descs[id].indexed)
        return s->single[id] != 0;
    for (uint32_t i = 0; i < s->n_slots[id]; i++)
        if (s->slots[id][i].value != 0)
            return true;
    return false;
}

void tk_stats_merge(tk_stats *into, const tk_stats *from)
{
    for (int id = 0; id < TK_STAT_COUNT; id++) {
        if (!from->present[id])
            continue;
        if (!descs[id].indexed) {
            tk_stats_add(into, (tk_stat_id)id, from->single[id]);
            continue;
        }
        for (uint32_t i = 0; i < from->n_slots[id]; i++) {
            int64_t cur = 0;
            tk_stats_get_indexed(into, (tk_stat_id)id, from->slots[id][i].idx, &cur);
            tk_stats_set_indexed(into, (tk_stat_id)id, from->slots[id][i].idx,
                                 tk_sat_add(cur, from->slots[id][i].value));
        }
        into->present[id] = true;
    }
    into->dropped_indices += from->dropped_indices;
}
