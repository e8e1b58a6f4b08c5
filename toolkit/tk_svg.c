/* SPDX-License-Identifier: MIT */
/* SVG plot of clock offsets and residuals (see tk_svg.h). One panel per
 * custom clock: offset on the left, residual on the right, trace time on
 * both x axes, value ranges written next to the axes. Then one wide panel
 * per frames track: frame interval and GPU frame time over the run, with
 * the interval's p50, p90 and p99 drawn across. */
#include "toolkit/tk_svg.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#define PANEL_W  460
#define PANEL_H  200
#define MARGIN_L 70
#define MARGIN_T 40
#define PLOT_W   (PANEL_W - MARGIN_L - 20)
#define PLOT_H   (PANEL_H - MARGIN_T - 40)

static void xml_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", out);
        else if (*s == '>')
            fputs("&gt;", out);
        else if (*s == '&')
            fputs("&amp;", out);
        else
            fputc(*s, out);
    }
}

typedef int64_t (*value_fn)(const tk_plot_point *p);
static int64_t get_offset(const tk_plot_point *p)
{
    return p->offset_ns;
}
static int64_t get_residual(const tk_plot_point *p)
{
    return p->residual_ns;
}

static void plot(FILE *out, const tk_clock_report *c, int x0, int y0, const char *title,
                 value_fn value, const char *colour)
{
    int64_t tmin = c->points[0].t_ns, tmax = tmin, vmin = value(&c->points[0]), vmax = vmin;
    for (size_t i = 1; i < c->n_points; i++) {
        const tk_plot_point *p = &c->points[i];
        if (p->t_ns < tmin)
            tmin = p->t_ns;
        if (p->t_ns > tmax)
            tmax = p->t_ns;
        if (value(p) < vmin)
            vmin = value(p);
        if (value(p) > vmax)
            vmax = value(p);
    }
    double tspan = tmax > tmin ? (double)tmax - (double)tmin : 1.0;
    double vspan = vmax > vmin ? (double)vmax - (double)vmin : 1.0;
    int px = x0 + MARGIN_L, py = y0 + MARGIN_T;
    fprintf(out, "<text x=\"%d\" y=\"%d\" class=\"t\">%s</text>\n", px, py - 8, title);
    fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" class=\"frame\"/>\n", px, py,
            PLOT_W, PLOT_H);
    fprintf(out, "<text x=\"%d\" y=\"%d\" class=\"a\" text-anchor=\"end\">%" PRId64 "</text>\n",
            px - 4, py + 10, vmax);
    fprintf(out, "<text x=\"%d\" y=\"%d\" class=\"a\" text-anchor=\"end\">%" PRId64 "</text>\n",
            px - 4, py + PLOT_H, vmin);
    fprintf(out, "<text x=\"%d\" y=\"%d\" class=\"a\">%.3f s</text>\n", px, py + PLOT_H + 14,
            (double)tmin / 1e9);
    fprintf(out, "<text x=\"%d\" y=\"%d\" class=\"a\" text-anchor=\"end\">%.3f s</text>\n",
            px + PLOT_W, py + PLOT_H + 14, (double)tmax / 1e9);
    fprintf(out,
            "<text x=\"%d\" y=\"%d\" class=\"a\" text-anchor=\"middle\">trace time; "
            "values in ns</text>\n",
            px + PLOT_W / 2, py + PLOT_H + 28);
    if (vmin < 0 && vmax > 0) {
        double zy = py + PLOT_H - ((0 - (double)vmin) / vspan) * PLOT_H;
        fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" class=\"zero\"/>\n", px, zy,
                px + PLOT_W, zy);
    }
    fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.2\" points=\"", colour);
    for (size_t i = 0; i < c->n_points; i++) {
        const tk_plot_point *p = &c->points[i];
        double x = px + ((double)p->t_ns - (double)tmin) / tspan * PLOT_W;
        double y = py + PLOT_H - ((double)value(p) - (double)vmin) / vspan * PLOT_H;
        fprintf(out, "%.1f,%.1f ", x, y);
    }
    fputs("\"/>\n", out);
    for (size_t i = 0; i < c->n_points && c->n_points <= 200; i++) {
        const tk_plot_point *p = &c->points[i];
        double x = px + ((double)p->t_ns - (double)tmin) / tspan * PLOT_W;
        double y = py + PLOT_H - ((double)value(p) - (double)vmin) / vspan * PLOT_H;
        fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2\" fill=\"%s\"/>\n", x, y, colour);
    }
}

/* ---- frames ---------------------------------------------------------------------------- */

#define FRAMES_W (2 * PANEL_W - MARGIN_L - 30)

static void frames_series(FILE *out, const tk_frames_track *t, bool gpu, int px, int py,
                          int64_t tmin, double tspan, double vmax, const char *colour)
{
    fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1\" points=\"", colour);
    for (size_t i = 0; i < t->n_points; i++) {
        const float v = gpu ? t->points[i].gpu_ms : t->points[i].interval_ms;
        if (v < 0)
            continue;
        double x = px + ((double)t->points[i].t_ns - (double)tmin) / tspan * FRAMES_W;
        double y = py + PLOT_H - (v > vmax ? vmax : v) / vmax * PLOT_H;
        fprintf(out, "%.1f,%.1f ", x, y);
    }
    fputs("\"/>\n", out);
}

static void frames_panel(FILE *out, const char *file, const tk_frames_track *t, int y0)
{
    int64_t tmin = t->points[0].t_ns, tmax = tmin;
    double vmax = 0;
    for (size_t i = 0; i < t->n_points; i++) {
        const tk_frames_point *p = &t->points[i];
        tmin = p->t_ns < tmin ? p->t_ns : tmin;
        tmax = p->t_ns > tmax ? p->t_ns : tmax;
        vmax = p->interval_ms > vmax ? p->interval_ms : vmax;
        vmax = p->gpu_ms > vmax ? p->gpu_ms : vmax;
    }
    vmax = vmax > 0 ? vmax * 1.05 : 1.0;
    const double tspan = tmax > tmin ? (double)tmax - (double)tmin : 1.0;
    const int px = MARGIN_L, py = y0 + MARGIN_T;
    fprintf(out, "<text x=\"10\" y=\"%d\" class=\"t\">", y0 + 14);
    xml_text(out, file);
    fputs(": ", out);
    xml_text(out, t->name);
    fprintf(out,
            " (pid %lld) — %llu frame(s)%s; <tspan fill=\"#1f77b4\">frame interval</tspan>, "
            "<tspan fill=\"#ff7f0e\">GPU frame time</tspan></text>\n",
            (long long)t->pid, (unsigned long long)t->frames,
            t->n_points < t->frames ? " (the first ones)" : "");
    fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" class=\"frame\"/>\n", px, py,
            FRAMES_W, PLOT_H);
    fprintf(out, "<text x=\"%d\" y=\"%d\" class=\"a\" text-anchor=\"end\">%.1f ms</text>\n", px - 4,
            py + 10, vmax);
    fprintf(out, "<text x=\"%d\" y=\"%d\" class=\"a\" text-anchor=\"end\">0</text>\n", px - 4,
            py + PLOT_H);
    fprintf(out, "<text x=\"%d\" y=\"%d\" class=\"a\">%.3f s</text>\n", px, py + PLOT_H + 14,
            (double)tmin / 1e9);
    fprintf(out, "<text x=\"%d\" y=\"%d\" class=\"a\" text-anchor=\"end\">%.3f s</text>\n",
            px + FRAMES_W, py + PLOT_H + 14, (double)tmax / 1e9);
    const struct {
        const char *name;
        double v;
    } marks[] = { { "p50", t->interval.p50_ms },
                  { "p90", t->interval.p90_ms },
                  { "p99", t->interval.p99_ms } };
    for (size_t k = 0; t->interval.count && k < sizeof marks / sizeof marks[0]; k++) {
        const double y = py + PLOT_H - (marks[k].v > vmax ? vmax : marks[k].v) / vmax * PLOT_H;
        fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" class=\"zero\"/>\n", px, y,
                px + FRAMES_W, y);
        fprintf(out, "<text x=\"%d\" y=\"%.1f\" class=\"a\">%s %.2f ms</text>\n", px + FRAMES_W + 2,
                y + 4, marks[k].name, marks[k].v);
    }
    frames_series(out, t, false, px, py, tmin, tspan, vmax, "#1f77b4");
    frames_series(out, t, true, px, py, tmin, tspan, vmax, "#ff7f0e");
}

bool tk_svg_write(const char *path, const tk_file_result *files, size_t n)
{
    size_t panels = 0;
    for (size_t i = 0; i < n; i++) {
        const tk_result *r = files[i].result;
        for (size_t k = 0; r && k < r->n_clocks; k++)
            if (r->clocks[k].info.scope != TK_SCOPE_BUILTIN && r->clocks[k].n_points > 0)
                panels++;
    }
    size_t frame_panels = 0;
    for (size_t i = 0; i < n; i++) {
        const tk_result *r = files[i].result;
        for (size_t k = 0; r && k < r->frames.n_tracks; k++)
            frame_panels += r->frames.tracks[k].n_points > 0;
    }
    FILE *out = fopen(path, "w");
    if (!out)
        return false;
    int height = panels + frame_panels ? (int)(panels + frame_panels) * (PANEL_H + 30) + 20 : 80;
    fprintf(out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\">\n",
            2 * PANEL_W, height, 2 * PANEL_W, height);
    fputs("<style>text{font-family:sans-serif;font-size:11px}.t{font-weight:bold;font-size:12px}"
          ".a{fill:#555}.frame{fill:none;stroke:#999}.zero{stroke:#ccc;stroke-dasharray:3 3}"
          "</style>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
          out);
    if (!panels && !frame_panels)
        fputs("<text x=\"20\" y=\"40\">no custom clock with two or more snapshots against the "
              "trace clock</text>\n",
              out);
    int y = 10;
    for (size_t i = 0; i < n; i++) {
        const tk_result *r = files[i].result;
        for (size_t k = 0; r && k < r->n_clocks; k++) {
            const tk_clock_report *c = &r->clocks[k];
            if (c->info.scope == TK_SCOPE_BUILTIN || c->n_points == 0)
                continue;
            char label[160];
            if (c->info.scope == TK_SCOPE_SEQUENCE)
                snprintf(label, sizeof label, "clock %u (sequence %u)", c->info.raw_id,
                         c->info.seq_id);
            else
                snprintf(label, sizeof label, "clock %u%s%s", c->info.raw_id, c->name ? " " : "",
                         c->name ? c->name : "");
            fprintf(out, "<text x=\"10\" y=\"%d\" class=\"t\">", y + 14);
            xml_text(out, files[i].path);
            fputs(": ", out);
            xml_text(out, label);
            fprintf(out, " — drift %.3f ppm, %zu point(s)</text>\n", c->info.drift_ppm,
                    c->n_points);
            plot(out, c, 0, y + 10, "offset (trace time − clock)", get_offset, "#1f77b4");
            plot(out, c, PANEL_W, y + 10, "residual (offset change per snapshot)", get_residual,
                 "#d62728");
            y += PANEL_H + 30;
        }
    }
    for (size_t i = 0; i < n; i++) {
        const tk_result *r = files[i].result;
        for (size_t k = 0; r && k < r->frames.n_tracks; k++) {
            if (!r->frames.tracks[k].n_points)
                continue;
            frames_panel(out, files[i].path, &r->frames.tracks[k], y);
            y += PANEL_H + 30;
        }
    }
    fputs("</svg>\n", out);
    int err = ferror(out);
    if (fclose(out) != 0 || err) {
        if (!errno)
            errno = EIO;
        return false;
    }
    return true;
}
