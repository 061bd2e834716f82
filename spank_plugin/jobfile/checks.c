/* Leaf checks of a job's values: see checks.h. */
#include "checks.h"

#include <ctype.h>
#include <regex.h>
#include <string.h>

#include <cJSON.h>

#include "jsonv.h"

static bool is_name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

static size_t name_length(const char *s)
{
    size_t n = 0;

    if (isalpha((unsigned char)s[0]) || s[0] == '_')
        for (n = 1; is_name_char(s[n]); n++)
            ;
    return n;
}

bool bai_shell_path_ok(const char *s)
{
    for (const char *p = s; *p; p++) {
        if (*p == '"' || *p == '\\' || *p == '`')
            return false;
        if (*p == '$') {
            bool brace = p[1] == '{';
            size_t n = name_length(p + 1 + brace);
            if (n == 0 || (brace && p[2 + n] != '}'))
                return false;
            p += n + 2 * brace; /* the last character of the reference */
        }
    }
    return true;
}

/* Image references as distribution/reference's regexp.go defines them (domain with optional port, lower-case
 * path components, tag [\w][\w.-]{0,127}, digest algorithm:hex), and registry servers as a host[:port] or an
 * http(s) URL of plain path segments, as POSIX extended regular expressions; schemas/job.schema.json states
 * the same patterns. The batch script quotes both anyway: this check refuses, naming the field, what no
 * container runtime would take, and keeps shell syntax out of jobs before they queue. */
#define RE_HOST "([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*" \
                "|\\[[a-fA-F0-9:]+\\])(:[0-9]+)?"
#define RE_PATH_COMPONENT "[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*"
static const char image_re[] = "^(" RE_HOST "/)?" RE_PATH_COMPONENT "(/" RE_PATH_COMPONENT ")*"
                               "(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
                               "(@[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$";
static const char server_re[] = "^(https?://)?" RE_HOST "(/[A-Za-z0-9._~-]*)*$";

/* Fault "<value> is not <what>" unless the string member v matches the extended regular expression re. */
static void check_match(struct bai_diag *d, const char *path, const struct cJSON *v, const char *re, const char *what)
{
    regex_t rx;
    char got[96];
    int rc = regcomp(&rx, re, REG_EXTENDED | REG_NOSUB);

    if (rc == 0) {
        rc = regexec(&rx, v->valuestring, 0, NULL, 0);
        regfree(&rx);
    }
    if (rc == REG_NOMATCH) {
        jv_describe(v, got, sizeof got);
        bai_diag_add(d, path, "%s is not %s", got, what);
    } else if (rc != 0) {
        bai_diag_add(d, path, "cannot check the value: out of memory");
    }
}

void bai_check_image(struct bai_diag *d, const char *path, const struct cJSON *v, const char *what)
{
    check_match(d, path, v, image_re, what ? what : "an image reference such as \"registry.example.com/name:tag\"");
}

void bai_check_registry(struct bai_diag *d, const char *path, const struct cJSON *v)
{
    check_match(d, path, v, server_re, "a registry server (expected host[:port] or http(s)://host[:port][/path])");
}

static bool read_2digits(const char **p, int max, int *out)
{
    const char *s = *p;

    if (!isdigit((unsigned char)s[0]) || !isdigit((unsigned char)s[1]))
        return false;
    *out = (s[0] - '0') * 10 + (s[1] - '0');
    *p = s + 2;
    return *out <= max;
}

long bai_parse_duration(const char *s)
{
    long days = 0;
    int h, m, sec;
    const char *p = s, *dot = strchr(s, '.');

    if (dot) {
        if (dot == s || dot - s > 4)
            return -1;
        for (; p < dot; p++) {
            if (!isdigit((unsigned char)*p))
                return -1;
            days = days * 10 + (*p - '0');
        }
        if (days > BAI_JOB_MAX_DAYS)
            return -1;
        p++;
    }
    /* One-digit hours are common in hand-written files ("1:30:00"). */
    if (isdigit((unsigned char)p[0]) && p[1] == ':') {
        h = p[0] - '0';
        p++;
    } else if (!read_2digits(&p, 23, &h)) {
        return -1;
    }
    if (*p++ != ':' || !read_2digits(&p, 59, &m) || *p++ != ':' || !read_2digits(&p, 59, &sec) || *p)
        return -1;
    long total = ((days * 24 + h) * 60 + m) * 60 + sec;
    return total > 0 ? total : -1;
}

/* The first character of `command` that ends a command there (; & | or a newline), NULL when none. What is in
 * single or double quotes, or escaped by a backslash, ends nothing (sh -c 'a; b', python -c "import x; ..." are
 * one command each); neither does a redirection's & (2>&1, <&3). A quote never closed is left in *open_quote. */
static const char *separator(const char *command, char *open_quote)
{
    char quote = 0;
    for (const char *p = command; *p; p++) {
        if (quote == '\'') {
            if (*p == '\'')
                quote = 0;
        } else if (*p == '\\') {
            if (p[1])
                p++;
        } else if (quote == '"') {
            if (*p == '"')
                quote = 0;
        } else if (*p == '\'' || *p == '"') {
            quote = *p;
        } else if (strchr(";&|\n", *p) && !(*p == '&' && p > command && strchr("<>", p[-1]))) {
            return p;
        }
    }
    *open_quote = quote;
    return NULL;
}

void bai_check_one_command(struct bai_diag *d, const char *path, const char *command)
{
    static const char *const keywords[] = { "if", "for", "while", "until", "case", "select", "function", "time",
                                            "[[", NULL };
    const char *p = command + strspn(command, " \t");
    size_t word = strcspn(p, " \t");
    const char *bad = command;

    /* Several commands, a pipeline or a background one. */
    char open_quote = 0;
    bad = separator(command, &open_quote);
    if (open_quote) {
        bai_diag_add(d, path, "a checkpointable step's command is exec'd, so it must be one command: a %c quote "
                     "is never closed", open_quote);
        return;
    }
    if (bad) {
        bai_diag_add(d, path, "a checkpointable step's command is exec'd, so it must be one command: found "
                     "'%s' (put several commands in a script and run that)", *bad == '\n' ? "\\n" : (char[2]){ *bad, 0 });
        return;
    }
    if (!*p) {
        bai_diag_add(d, path, "a checkpointable step needs a command to exec");
        return;
    }
    if (strchr("({!", *p)) {
        bai_diag_add(d, path, "a checkpointable step's command is exec'd, so it cannot start with '%c'", *p);
        return;
    }
    for (size_t i = 0; keywords[i]; i++)
        if (word == strlen(keywords[i]) && strncmp(p, keywords[i], word) == 0) {
            bai_diag_add(d, path, "a checkpointable step's command is exec'd, so it cannot start with '%s'",
                         keywords[i]);
            return;
        }
    if (isalpha((unsigned char)*p) || *p == '_') {
        size_t n = 1;
        while (is_name_char(p[n]))
            n++;
        if (p[n] == '=')
            bai_diag_add(d, path, "a checkpointable step's command is exec'd, so it cannot start with a variable "
                         "assignment (set %.*s in the job's environment variables)", (int)n, p);
    }
}

bool bai_command_can_exec(const char *command)
{
    static const char *const builtins[] = { "cd", "exit", "export", ".", "source", "set", "unset", "eval", "return",
                                            "shift", "ulimit", "umask", "alias", "trap", "wait", "read", "local",
                                            "readonly", "break", "continue", "exec", ":", "command", "type", "hash", "getopts",
                                            "times", "jobs", "fg", "bg", "let", "declare", "typeset", "shopt",
                                            "builtin", "pushd", "popd", NULL };
    struct bai_diag d = { 0 };
    bai_check_one_command(&d, "", command);
    bool ok = bai_diag_total(&d) == 0;
    bai_diag_free(&d);
    const char *p = command + strspn(command, " \t");
    size_t word = strcspn(p, " \t");
    for (size_t i = 0; ok && builtins[i]; i++)
        if (word == strlen(builtins[i]) && strncmp(p, builtins[i], word) == 0)
            ok = false;
    return ok;
}

bool bai_command_execs(const char *command)
{
    const char *p = command + strspn(command, " \t");
    return strncmp(p, "exec", 4) == 0 && (p[4] == ' ' || p[4] == '\t');
}

bool bai_identifier_ok(const char *s)
{
    if (!isalpha((unsigned char)*s) && *s != '_')
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return false;
    return true;
}
