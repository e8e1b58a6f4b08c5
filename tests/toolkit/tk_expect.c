/* SPDX-License-Identifier: MIT */
/* Integration-test driver: runs gputrace-check (or gputrace-dump) as a
 * process on one trace and checks its exit status and JSON report.
 *
 *   tk_expect --tool PATH --make MAKE_TRACES --dir DIR --case NAME [opts] [-- ARGS]
 *   tk_expect --tool PATH --file PATH... [opts] [-- ARGS]
 *
 * With --case the trace is written first (make_traces DIR NAME), the options
 * it needs are added (make_traces --args NAME) and the
 * expectations follow from its name: pass-* exits 0 with no violation,
 * warn-CODE exits 0 and reports CODE, fail-CODE exits 1 and reports CODE,
 * loss-CODE[-VARIANT] exits 1 and reports CODE with severity data_loss,
 * error-* exits 2 and reports input_error.
 * opts: --expect-exit N, --expect-code CODE, --expect-no-code CODE,
 *       --expect-stat NAME=VALUE, --expect-text TEXT, --raw (no --json),
 *       --expect-tp-stats FILE: trace_processor's stats rows for the input
 *         (CSV: name, idx, severity, source, value; tests/toolkit/conformance
 *         *.expected). Every name must be in the report's "stats" with the
 *         value summed over its rows (and over all such files, one per input
 *         file); every nonzero traced_* stat of the report must be among
 *         them (the service's TraceStats, which both read alike).
 *       --expect-figures FILE: NAME=VALUE lines (# comments), each as
 *         --expect-stat. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_LIST 64

static const char *tool, *make, *dir, *case_name;
static const char *files[MAX_LIST];
static int n_files;
static int expect_exit = -1;
static const char *codes[MAX_LIST], *no_codes[MAX_LIST], *stats[MAX_LIST], *texts[MAX_LIST];
static int n_codes, n_no_codes, n_stats, n_texts;
static bool no_violations, raw;
static char *extra[MAX_LIST];
static int n_extra;
static const char *tp_stats_files[MAX_LIST], *figure_files[MAX_LIST];
static int n_tp_stats_files, n_figure_files;

__attribute__((format(printf, 1, 2))) static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tk_expect: FAIL: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

/* Runs argv, returns the exit status (or -1) and stdout in *out. */
static int run(char *const argv[], char **out, size_t *out_len)
{
    int pipefd[2];
    if (pipe(pipefd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(pipefd[1], STDOUT_FILENO);
        close(pipefd[0]);
        close(pipefd[1]);
        execv(argv[0], argv);
        fprintf(stderr, "tk_expect: exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(pipefd[1]);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
        }
        ssize_t n = read(pipefd[0], buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(pipefd[0]);
    buf[len] = 0;
    *out = buf;
    *out_len = len;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "tk_expect: %s killed by signal %d\n", argv[0], WTERMSIG(status));
        return -2;
    }
    return WEXITSTATUS(status);
}

static bool has_code(const char *json, const char *code)
{
    char needle[256];
    snprintf(needle, sizeof needle, "\"code\": \"%s\"", code);
    return strstr(json, needle) != NULL;
}

static bool has_stat(const char *json, const char *spec)
{
    const char *eq = strchr(spec, '=');
    if (!eq)
        return false;
    char needle[256];
    snprintf(needle, sizeof needle, "\"%.*s\": %s", (int)(eq - spec), spec, eq + 1);
    for (const char *p = strstr(json, needle); p; p = strstr(p + 1, needle)) {
        char next = p[strlen(needle)];
        if (next < '0' || next > '9')
            return true;
    }
    return false;
}

/* Reads a whole text file; NULL (and a FAIL line) when it cannot. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fail("cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, len = 0, n;
    char *buf = malloc(cap);
    while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len < 2) {
            cap *= 2;
            char *grown = realloc(buf, cap);
            if (!grown)
                free(buf);
            buf = grown;
        }
    }
    fclose(f);
    if (!buf) {
        fail("out of memory reading %s", path);
        return NULL;
    }
    buf[len] = 0;
    return buf;
}

/* The report's "stats" object: name -> value, in the order printed. */
typedef struct stat_entry {
    char name[96];
    long long value;
    long long tp_value; /* summed over the trace_processor rows */
    bool in_tp;
} stat_entry;

static int report_stats(const char *json, stat_entry *out, int max)
{
    const char *p = strstr(json, "\"stats\": {");
    if (!p)
        return -1;
    p += strlen("\"stats\": {");
    const char *end = strchr(p, '}');
    if (!end)
        return -1;
    int n = 0;
    while (n < max) {
        const char *q = strchr(p, '"');
        if (!q || q > end)
            break;
        const char *qe = strchr(q + 1, '"');
        if (!qe || qe > end || (size_t)(qe - q - 1) >= sizeof out[n].name)
            return -1;
        snprintf(out[n].name, sizeof out[n].name, "%.*s", (int)(qe - q - 1), q + 1);
        char *num_end;
        out[n].value = strtoll(qe + 2, &num_end, 10);
        out[n].tp_value = 0;
        out[n].in_tp = false;
        n++;
        p = num_end;
    }
    return n;
}

static stat_entry *find_stat(stat_entry *s, int n, const char *name)
{
    for (int k = 0; k < n; k++)
        if (strcmp(s[k].name, name) == 0)
            return &s[k];
    return NULL;
}

/* trace_processor's word against the report: see --expect-tp-stats. */
static int check_tp_stats(const char *json)
{
    enum {
        MAX_STATS = 1024
    };
    static stat_entry reported[MAX_STATS];
    int n = report_stats(json, reported, MAX_STATS);
    if (n <= 0)
        return fail("no \"stats\" object in the report");
    int bad = 0;
    for (int k = 0; k < n_tp_stats_files; k++) {
        char *text = slurp(tp_stats_files[k]);
        if (!text)
            return 1;
        int rows = 0;
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
            /* "name","idx","severity","source",value */
            if (line[0] != '"' || strncmp(line, "\"name\",", 7) == 0)
                continue;
            char *close = strchr(line + 1, '"');
            char *last = strrchr(line, ',');
            if (!close || !last || last < close) {
                bad |= fail("%s: unreadable row: %s", tp_stats_files[k], line);
                continue;
            }
            *close = 0;
            rows++;
            stat_entry *e = find_stat(reported, n, line + 1);
            if (!e) {
                bad |= fail("trace_processor reports %s (%s); the report has no such stat",
                            line + 1, tp_stats_files[k]);
                continue;
            }
            e->in_tp = true;
            e->tp_value += strtoll(last + 1, NULL, 10);
        }
        free(text);
        if (rows == 0)
            bad |= fail("%s holds no stats rows", tp_stats_files[k]);
    }
    for (int k = 0; k < n; k++) {
        if (reported[k].in_tp && reported[k].value != reported[k].tp_value)
            bad |= fail("stat %s: report %lld, trace_processor %lld", reported[k].name,
                        reported[k].value, reported[k].tp_value);
        else if (!reported[k].in_tp && reported[k].value != 0 &&
                 strncmp(reported[k].name, "traced_", 7) == 0)
            bad |= fail("stat %s: report %lld, trace_processor 0 (no row)", reported[k].name,
                        reported[k].value);
    }
    return bad;
}

static int check_figures(const char *json, const char *path)
{
    char *text = slurp(path);
    if (!text)
        return 1;
    int bad = 0, figures = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#' || line[0] == 0)
            continue;
        figures++;
        if (!strchr(line, '='))
            bad |= fail("%s: not NAME=VALUE: %s", path, line);
        else if (!has_stat(json, line))
            bad |= fail("%s from %s not found", line, path);
    }
    free(text);
    if (figures == 0)
        bad |= fail("%s holds no figures", path);
    return bad;
}

int main(int argc, char **argv)
{
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (!v && strcmp(a, "--raw") != 0) {
            fprintf(stderr, "tk_expect: %s needs a value\n", a);
            return 2;
        }
        if (strcmp(a, "--tool") == 0)
            tool = argv[++i];
        else if (strcmp(a, "--make") == 0)
            make = argv[++i];
        else if (strcmp(a, "--dir") == 0)
            dir = argv[++i];
        else if (strcmp(a, "--case") == 0)
            case_name = argv[++i];
        else if (strcmp(a, "--file") == 0)
            files[n_files++] = argv[++i];
        else if (strcmp(a, "--expect-tp-stats") == 0)
            tp_stats_files[n_tp_stats_files++] = argv[++i];
        else if (strcmp(a, "--expect-figures") == 0)
            figure_files[n_figure_files++] = argv[++i];
        else if (strcmp(a, "--expect-exit") == 0)
            expect_exit = atoi(argv[++i]);
        else if (strcmp(a, "--expect-code") == 0)
            codes[n_codes++] = argv[++i];
        else if (strcmp(a, "--expect-no-code") == 0)
            no_codes[n_no_codes++] = argv[++i];
        else if (strcmp(a, "--expect-stat") == 0)
            stats[n_stats++] = argv[++i];
        else if (strcmp(a, "--expect-text") == 0)
            texts[n_texts++] = argv[++i];
        else if (strcmp(a, "--raw") == 0)
            raw = true;
        else {
            fprintf(stderr, "tk_expect: unknown option %s\n", a);
            return 2;
        }
        if (n_files >= MAX_LIST || n_codes >= MAX_LIST || n_stats >= MAX_LIST ||
            n_no_codes >= MAX_LIST || n_texts >= MAX_LIST || n_tp_stats_files >= MAX_LIST ||
            n_figure_files >= MAX_LIST)
            return 2;
    }
    for (; i < argc && n_extra < MAX_LIST - 1; i++)
        extra[n_extra++] = argv[i];
    if (!tool) {
        fprintf(stderr, "tk_expect: --tool is required\n");
        return 2;
    }

    static char case_path[4096];
    if (case_name) {
        if (!make || !dir) {
            fprintf(stderr, "tk_expect: --case needs --make and --dir\n");
            return 2;
        }
        char *margv[] = { (char *)make, (char *)dir, (char *)case_name, NULL };
        char *mout;
        size_t mlen;
        int rc = run(margv, &mout, &mlen);
        free(mout);
        if (rc != 0)
            return fail("make_traces %s exited with %s", case_name,
                        rc < 0 ? "an error" : "non-zero");
        /* Options the case needs come from the case registry. */
        char *aargv[] = { (char *)make, "--args", (char *)case_name, NULL };
        rc = run(aargv, &mout, &mlen);
        if (rc != 0)
            return fail("make_traces --args %s failed", case_name);
        for (char *line = strtok(mout, "\n"); line && n_extra < MAX_LIST - 1;
             line = strtok(NULL, "\n"))
            extra[n_extra++] = strdup(line);
        free(mout);
        snprintf(case_path, sizeof case_path, "%s/%s.pftrace", dir, case_name);
        files[n_files++] = case_path;

        static char code_buf[256];
        if (strncmp(case_name, "pass-", 5) == 0) {
            if (expect_exit < 0)
                expect_exit = 0;
            no_violations = !raw;
        } else if (strncmp(case_name, "warn-", 5) == 0 || strncmp(case_name, "fail-", 5) == 0) {
            if (expect_exit < 0)
                expect_exit = case_name[0] == 'w' ? 0 : 1;
            /* fail-CODE[-VARIANT]: codes have no dashes. */
            const char *code = case_name + 5;
            const char *dash = strchr(code, '-');
            int n = dash ? (int)(dash - code) : (int)strlen(code);
            snprintf(code_buf, sizeof code_buf, "%.*s", n, code);
            if (!raw)
                codes[n_codes++] = code_buf;
        } else if (strncmp(case_name, "loss-", 5) == 0) {
            /* loss-CODE[-VARIANT]: CODE reported as data_loss. */
            if (expect_exit < 0)
                expect_exit = 1;
            const char *code = case_name + 5;
            const char *dash = strchr(code, '-');
            int n = dash ? (int)(dash - code) : (int)strlen(code);
            snprintf(code_buf, sizeof code_buf, "\"code\": \"%.*s\", \"severity\": \"data_loss\"",
                     n, code);
            if (!raw)
                texts[n_texts++] = code_buf;
        } else if (strncmp(case_name, "error-", 6) == 0) {
            if (expect_exit < 0)
                expect_exit = 2;
            if (!raw)
                codes[n_codes++] = "input_error";
        }
    }
    if (!n_files) {
        fprintf(stderr, "tk_expect: no input\n");
        return 2;
    }

    char *targv[MAX_LIST * 2 + 4];
    int t = 0;
    targv[t++] = (char *)tool;
    if (!raw)
        targv[t++] = "--json";
    for (int k = 0; k < n_extra; k++)
        targv[t++] = extra[k];
    for (int k = 0; k < n_files; k++)
        targv[t++] = (char *)files[k];
    targv[t] = NULL;

    char *out;
    size_t len;
    int rc = run(targv, &out, &len);
    int bad = 0;
    if (rc == -2) {
        bad = 1;
    } else if (expect_exit >= 0 && rc != expect_exit) {
        bad |= fail("exit status %d, expected %d", rc, expect_exit);
    }
    if (no_violations && !strstr(out, "\"violations\": []"))
        bad |= fail("expected no violations");
    for (int k = 0; k < n_codes; k++)
        if (!has_code(out, codes[k]))
            bad |= fail("violation %s missing", codes[k]);
    for (int k = 0; k < n_no_codes; k++)
        if (has_code(out, no_codes[k]))
            bad |= fail("violation %s present", no_codes[k]);
    for (int k = 0; k < n_stats; k++)
        if (!has_stat(out, stats[k]))
            bad |= fail("stat %s not found", stats[k]);
    for (int k = 0; k < n_texts; k++)
        if (!strstr(out, texts[k]))
            bad |= fail("text \"%s\" not in the output", texts[k]);
    for (int k = 0; k < n_figure_files; k++)
        bad |= check_figures(out, figure_files[k]);
    if (n_tp_stats_files)
        bad |= check_tp_stats(out);
    if (bad)
        fprintf(stderr, "---- output of %s ----\n%s\n", tool, out);
    free(out);
    return bad;
}
