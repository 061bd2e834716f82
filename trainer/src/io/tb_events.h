/* tb_events: TensorBoard event files, written without TensorFlow or Python.
 *
 * A file is a sequence of TFRecords: uint64 length (little-endian), the masked CRC-32C of those 8 bytes,
 * `length` bytes of data, the masked CRC-32C of the data (io/crc32c.h). Each record's data is a serialized
 * tensorflow.Event (tensorflow/core/util/event.proto), encoded here by hand:
 *   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5;
 *             SessionLog session_log = 6; }
 *   Summary { repeated Value value = 1; }   Value { string tag = 1; float simple_value = 2; }
 *   SessionLog { SessionStatus status = 1; }   (START = 1)
 * The first record is file_version "brain.Event:2", as TensorFlow's EventsWriter writes it.
 *
 * The file is named as TensorFlow names it, events.out.tfevents.<seconds, 10 digits>.<host>, in `dir`
 * (made if missing); a name taken already (a restart within the same second) gets ".<pid>" after it.
 * A resumed run opens a new file and starts it with SessionLog START at the step it resumes from:
 * TensorBoard then drops what an earlier file holds at or after that step (values of an epoch whose
 * checkpoint was never written), so the curves continue without a duplicate step.
 *
 * Each record is appended whole or not at all (io/append_whole.h). Functions return 0, or -1
 * with the file and the failing call in err. */
#ifndef TRAINER_TB_EVENTS_H
#define TRAINER_TB_EVENTS_H

#include <stddef.h>
#include <stdint.h>

struct tb_events {
    int fd;             /* -1: closed */
    char path[4096];
};

/* resume_step >= 0: this run continues a run from that step (SessionLog START there); -1: a new run. */
int tb_events_open(struct tb_events *t, const char *dir, int64_t resume_step, char *err, size_t errlen);

/* One Event at `step` holding n scalars tags[i] = values[i], stamped with the current time. */
int tb_events_scalars(struct tb_events *t, int64_t step, const char *const *tags, const float *values, int n,
                      char *err, size_t errlen);

void tb_events_close(struct tb_events *t);

#endif
