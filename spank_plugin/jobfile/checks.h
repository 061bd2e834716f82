/* Leaf checks of a job file's values, shared by both formats (job.c, azureml.c) and translation: durations,
 * paths the batch script quotes, image references and commands a step execs. Each reads only its argument;
 * none knows the job model. */
#ifndef BAI_CHECKS_H
#define BAI_CHECKS_H

#include <stdbool.h>

#include "batchai_jobfile.h" /* the bounds of a job file (BAI_JOB_MAX_*), diag */

/* Parse a Batch AI duration into seconds: .NET TimeSpan style "d.hh:mm:ss" or "hh:mm:ss" (hours 0-23,
 * minutes and seconds 0-59), at most BAI_JOB_MAX_DAYS days and not zero. Returns -1 when malformed or out
 * of range. */
long bai_parse_duration(const char *s);

/* Whether s, written between double quotes, is one shell word in which only $NAME and ${NAME} expand (Batch
 * AI expanded variables in paths): no ", \ or `, and every $ starts such a reference. The validator holds
 * pythonScriptFilePath, pythonInterpreterPath and configFilePath to it, and translation renders them so. */
bool bai_shell_path_ok(const char *s);

/* A name that is an identifier (a letter or _, then letters, digits and _): an Azure ML input, output,
 * step or search-space parameter, which becomes part of a variable's name. */
bool bai_identifier_ok(const char *s);

/* Fault at `path` unless the string v is an image reference; `what` names what was expected (NULL: an image
 * reference such as "registry.example.com/name:tag"). */
struct cJSON;
void bai_check_image(struct bai_diag *d, const char *path, const struct cJSON *v, const char *what);
/* Fault at `path` unless the string v is a registry host[:port] or http(s) URL. */
void bai_check_registry(struct bai_diag *d, const char *path, const struct cJSON *v);

/* A checkpointable main step's command (batchai_jobfile.h: checkpointable) is exec'd, so that Slurm's signals reach
 * the program itself: the text must be one simple command that `exec` can prefix. Fault at `path` naming what is in
 * the way: ; & | or a newline (several commands), a leading ( { ! or shell keyword, a leading NAME=value
 * assignment. A command that already starts with exec is taken as it is. */
void bai_check_one_command(struct bai_diag *d, const char *path, const char *command);
/* Whether the command starts with the word exec (after blanks): it is then exec'd as it is. */
bool bai_command_execs(const char *command);
/* Whether a step's command can be exec'd by the shell that runs it: one command (bai_check_one_command finds
 * nothing) that is not a shell builtin. Such a command is exec'd in every job, so that the signals Slurm
 * sends the step (batchai-job terminate's SIGTERM, the time-limit warning) reach the program itself: under
 * proctrack/cgroup only the task gets them, and a shell between would die of SIGTERM, ending the task and
 * taking the program with it. */
bool bai_command_can_exec(const char *command);

#endif
