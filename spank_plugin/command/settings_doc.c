/* settings-doc man|md: the settings section of spank_batchai(8) (mdoc), or the same as a Markdown table,
 * printed from the one settings table (jobfile/settings.c). `make settings-doc` splices the first into the
 * manual page; tests/jobfile/test_settings_doc.sh fails when the committed section differs from it. */
#include <stdio.h>
#include <string.h>

#include "jobfile/batchai_jobfile.h"

/* Help text in mdoc: `code` spans bold, '\n' separates sentences (one per line, as mdoc wants). */
static void man_text(const char *t)
{
    bool code = false, bol = true;

    for (; *t; t++) {
        if (bol && (*t == '.' || *t == '\''))
            fputs("\\&", stdout);
        bol = false;
        if (*t == '`') {
            fputs(code ? "\\fP" : "\\fB", stdout);
            code = !code;
        } else if (*t == '\\')
            fputs("\\e", stdout);
        else {
            putchar(*t);
            bol = *t == '\n';
        }
    }
    putchar('\n');
}

/* A value's placeholder: words of a choice as literals ("Cm oci | pyxis | none"), else an argument. */
static void man_arg(const char *arg)
{
    if (!strchr(arg, '|')) {
        printf("Ar %s", arg);
        return;
    }
    fputs("Cm ", stdout);
    for (; *arg; arg++)
        fputs(*arg == '|' ? " | " : (char[2]){ *arg, '\0' }, stdout);
}

static void man(void)
{
    puts(".Bl -tag -width Ds");
    for (size_t i = 0; i < bai_setting_count; i++) {
        const struct bai_setting *r = &bai_setting_table[i];
        printf(".It Cm %s Ns = Ns ", r->key);
        man_arg(r->arg);
        putchar('\n');
        man_text(r->help);
        if (r->def)
            printf("Default\n.Cm %s .\n", r->def);
    }
    puts(".El");
}

/* Markdown table cell: '|' escaped (also inside `code`), sentences joined. */
static void md_text(const char *t)
{
    for (; *t; t++)
        fputs(*t == '|' ? "\\|" : *t == '\n' ? " " : (char[2]){ *t, '\0' }, stdout);
}

static void md(void)
{
    puts("| key | default | meaning |\n| --- | --- | --- |");
    for (size_t i = 0; i < bai_setting_count; i++) {
        const struct bai_setting *r = &bai_setting_table[i];
        fputs("| `", stdout);
        md_text(r->key);
        putchar('=');
        md_text(r->arg);
        fputs("` | ", stdout);
        if (r->def) {
            putchar('`');
            md_text(r->def);
            putchar('`');
        } else
            putchar('-');
        fputs(" | ", stdout);
        md_text(r->help);
        puts(" |");
    }
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "man") == 0)
        man();
    else if (argc == 2 && strcmp(argv[1], "md") == 0)
        md();
    else {
        fputs("usage: settings-doc man|md\n", stderr);
        return 2;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
