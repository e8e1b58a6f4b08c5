/* Storage for tk_stats: plain counters plus small per-index lists. */
#include "tk_stats.h"

#include <stdlib.h>
#include <string.h>

static const tk_stat_desc descs[TK_STAT_COUNT] = {
#define TK_STAT_DESC(name, indexed, sev, src) {#name, indexed, sev, src},
    TK_STAT_LIST(TK_STAT_DESC)
#undef TK_STAT_DESC
};

const tk_stat_desc *tk_stat_describe(tk_stat_id id) { return &descs[id]; }

const char *tk_stat_severity_name(tk_stat_severity s)
{
    switch (s) {
    case TK_STAT_INFO:
        return "info";
    case TK_STAT_DATA_LOSS:
        return "data_loss";
    case TK_STAT_ERROR:
        return "error";
    }
    return "?";
}

void tk_stats_init(tk_stats *s) { memset(s, 0, sizeof *s); }

void tk_stats_free(tk_stats *s)
{
    for (int i = 0; i < TK_STAT_COUNT; i++)
        free(s->slots[i]);
    memset(s, 0, sizeof *s);
}

static tk_stat_slot *find_slot(const tk_stats *s, tk_stat_id id, int32_t idx)
{
    for (uint32_t i = 0; i < s->n_slots[id]; i++)
        if (s->slots[id][i].idx == idx)
            return &s->slots[id][i];
    return NULL;
}

void tk_stats_set_indexed(tk_stats *s, tk_stat_id id, int32_t idx, int64_t v)
{
    s->present[id] = true;
    tk_stat_slot *slot = find_slot(s, id, idx);
    if (slot) {
        slot->value = v;
        return;
    }
    if (s->n_slots[id] >= TK_STAT_MAX_INDICES)
        return;
    if (s->n_slots[id] == s->cap_slots[id]) {
        uint32_t ncap = s->cap_slots[id] ? s->cap_slots[id] * 2 : 4;
        tk_stat_slot *ns = realloc(s->slots[id], ncap * sizeof *ns);
        if (!ns)
            return;
        s->slots[id] = ns;
        s->cap_slots[id] = ncap;
    }
    s->slots[id][s->n_slots[id]].idx = idx;
    s->slots[id][s->n_slots[id]].value = v;
    s->n_slots[id]++;
}

bool tk_stats_get_indexed(const tk_stats *s, tk_stat_id id, int32_t idx, int64_t *v)
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
    uint64_t sum = 0;
    for (uint32_t i = 0; i < s->n_slots[id]; i++)
        sum += (uint64_t)s->slots[id][i].value;
    return (int64_t)sum;
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
                                 (int64_t)((uint64_t)cur + (uint64_t)from->slots[id][i].value));
        }
        into->present[id] = true;
    }
}
