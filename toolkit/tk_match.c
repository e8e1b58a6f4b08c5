/* SPDX-License-Identifier: MIT */
/* GPU render stages against the vkQueueSubmit that carries them, matched
 * by submission_id whatever their order in the file, in a bounded table
 * of in-flight submissions. */
#include <string.h>

#include "toolkit/tk_arith.h"
#include "toolkit/tk_checks_internal.h"
#include "toolkit/tk_fields.h"
#include "toolkit/tk_schema.h"

/* ---- GPU ------------------------------------------------------------------------------ */

static tk_submit_slot *submit_slot_for(tk_checker *c, uint32_t id)
{
    /* Submission ids count up: consecutive ones share cache lines. */
    tk_submit_slot *s = &c->subs[id & (TK_SUBMIT_SLOTS - 1)];
    if (s->state && s->id != id) {
        /* Evict: GPU stages whose submission never showed up stay unmatched. */
        if (!(s->state & 1))
            tk_stats_add(&c->st, TK_STAT_gpu_stage_unmatched_submission, (int64_t)s->gpu_count);
        memset(s, 0, sizeof *s);
    }
    s->id = id;
    return s;
}

/* submit_ts - gpu_ts > tolerance, without computing the difference in
 * int64_t (it may not fit). A negative tolerance asks for a gap. */
static bool starts_too_early(int64_t gpu_ts, int64_t submit_ts, int64_t tolerance)
{
    if (gpu_ts <= submit_ts)
        return tolerance < 0 || tk_distance_u64(submit_ts, gpu_ts) > (uint64_t)tolerance;
    return tolerance < 0 && tk_distance_u64(gpu_ts, submit_ts) < tk_abs_u64(tolerance);
}

static void judge_stage(tk_checker *c, const tk_submit_slot *s, int64_t gpu_ts)
{
    const uint64_t early = tk_lead(gpu_ts, s->submit_ts);
    const uint64_t late = tk_lead(s->submit_end, gpu_ts);
    if (starts_too_early(gpu_ts, s->submit_ts, c->o.submit_tolerance_ns)) {
        tk_stats_add(&c->st, TK_STAT_gpu_stage_before_submit, 1);
        if (early > c->worst_before_submit_ns)
            c->worst_before_submit_ns = early;
    } else if (c->o.max_submit_latency_ns >= 0 && late > (uint64_t)c->o.max_submit_latency_ns) {
        tk_stats_add(&c->st, TK_STAT_gpu_stage_after_submit_window, 1);
        if (late > c->worst_after_window_ns)
            c->worst_after_window_ns = late;
    }
}

/* The fields of GpuRenderStageEvent the importer looks at, read tag by tag
 * so that values nobody needs are skipped unassembled (the hottest nested
 * message of a GPU trace). */
void tk_match_gpu_stage(tk_checker *c, tk_seq_state *s, pb_bytes b, int64_t ts)
{
    pb_reader r;
    bool has_event_id = false, has_queue_iid = false, has_stage_iid = false, has_context = false;
    uint64_t queue_iid = 0, stage_iid = 0, context = 0, hw_queue_id = 0, event_id = 0;
    uint32_t submission_id = 0;
    uint32_t id;
    uint8_t wt;
    pb_reader_init(&r, b.data, b.size);
    while (pb_reader_tag(&r, &id, &wt)) {
        uint64_t v;
        if (wt == PB_WIRE_VARINT) {
            switch (id) {
            case TK_GRS_EVENT_ID:
                /* Present is all the importer asks; the value is only
                 * for on_gpu_stage. */
                has_event_id = true;
                if (!pb_reader_varint(&r, &event_id))
                    goto done;
                continue;
            case TK_GRS_HW_QUEUE_IID:
            case TK_GRS_STAGE_IID:
            case TK_GRS_CONTEXT:
            case TK_GRS_HW_QUEUE_ID:
            case TK_GRS_SUBMISSION_ID:
                if (!pb_reader_varint(&r, &v))
                    goto done;
                if (id == TK_GRS_HW_QUEUE_IID) {
                    has_queue_iid = true;
                    queue_iid = v;
                } else if (id == TK_GRS_STAGE_IID) {
                    has_stage_iid = true;
                    stage_iid = v;
                } else if (id == TK_GRS_CONTEXT) {
                    has_context = true;
                    context = v;
                } else if (id == TK_GRS_HW_QUEUE_ID) {
                    hw_queue_id = v;
                } else {
                    submission_id = (uint32_t)v;
                }
                continue;
            default:
                break;
            }
        }
        if (!pb_reader_skip(&r, wt))
            break;
    }
done:
    /* The lookups trace_processor's GpuEventParser makes, in its order. */
    if (has_context)
        tk_import_lookup_interned(c, &s->contexts, context);
    if (!has_event_id) {
        c->gpu_dropped_no_event_id++;
        tk_stats_add(&c->st, TK_STAT_gpu_render_stage_events_dropped, 1);
        return;
    }
    if (has_queue_iid) {
        if (!tk_import_lookup_interned(c, &s->specs, queue_iid)) {
            c->gpu_dropped_unknown_queue++;
            tk_stats_add(&c->st, TK_STAT_gpu_render_stage_events_dropped, 1);
            return;
        }
    } else if ((uint32_t)(int32_t)hw_queue_id > 1024) {
        tk_stats_add(&c->st, TK_STAT_gpu_render_stage_parser_errors, 1);
    }
    if (has_stage_iid) {
        /* Once for the name, once for the args. */
        tk_import_lookup_interned(c, &s->specs, stage_iid);
        tk_import_lookup_interned(c, &s->specs, stage_iid);
    }
    c->gpu_events++;
    if (c->o.on_gpu_stage)
        c->o.on_gpu_stage(c->o.on_gpu_stage_ctx, event_id, ts, submission_id);

    if (!submission_id)
        return;
    tk_submit_slot *sl = submit_slot_for(c, submission_id);
    if (sl->state & 1)
        judge_stage(c, sl, ts);
    if (!(sl->state & 2) || ts < sl->gpu_min)
        sl->gpu_min = ts;
    if (!(sl->state & 2) || ts > sl->gpu_max)
        sl->gpu_max = ts;
    sl->gpu_count++;
    sl->state |= 2;
}

void tk_match_vulkan_api_event(tk_checker *c, pb_bytes b, int64_t ts)
{
    perfetto_protos_VulkanApiEvent_view v;
    c->vk_events++;
    (void)perfetto_protos_VulkanApiEvent_decode(&v, b.data, b.size);
    if (!v.has_vk_queue_submit)
        return;
    perfetto_protos_VulkanApiEvent_VkQueueSubmit_view q;
    (void)perfetto_protos_VulkanApiEvent_VkQueueSubmit_decode(&q, v.vk_queue_submit.data,
                                                              v.vk_queue_submit.size);
    c->vk_submits++;
    if (!q.submission_id)
        return;
    tk_submit_slot *sl = submit_slot_for(c, q.submission_id);
    bool had_gpu = (sl->state & 2) != 0;
    sl->submit_ts = ts;
    /* An absurd duration ends the submission at the end of time, not at a
     * wrapped-around negative instant. */
    sl->submit_end = tk_sat_add(ts, tk_sat_from_u64(q.duration_ns));
    sl->state |= 1;
    if (had_gpu) {
        /* Stages that arrived first: judge the extremes. */
        judge_stage(c, sl, sl->gpu_min);
        if (sl->gpu_max != sl->gpu_min)
            judge_stage(c, sl, sl->gpu_max);
    }
}

void tk_match_finish(tk_checker *c)
{
    for (uint32_t i = 0; i < TK_SUBMIT_SLOTS; i++)
        if (c->subs[i].state == 2)
            tk_stats_add(&c->st, TK_STAT_gpu_stage_unmatched_submission,
                         (int64_t)c->subs[i].gpu_count);
}
