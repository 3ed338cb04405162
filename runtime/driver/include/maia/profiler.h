/*
 * maia/profiler.h - device activity records for profilers (the driver's
 * CUPTI-like activity API).
 *
 * While a profiler is active (between maiaProfilerStart and
 * maiaProfilerStop), every command queued on any stream (kernel launch,
 * copy, memset/fill, host function, event record) produces one
 * maiaActivityRecord when it completes, with device-side start and end
 * times taken on the core that ran it. A graph replay (maiaGraphLaunch)
 * produces one maiaActivityGraph record for the replay and one record per
 * command it runs, all on the stream it was launched on and carrying the
 * correlation id active when maiaGraphLaunch was called. With no profiler active nothing is
 * recorded and enqueueing costs one relaxed atomic load more than without
 * this API.
 *
 * Conventions are those of maia/runtime.h. Times are nanoseconds of the
 * host's monotonic (steady) clock, the clock maiaProfilerGetTimestamp
 * reads: a profiler maps them to its own time base once per session.
 *
 * Correlation: a host thread names the work it is about to enqueue with
 * maiaProfilerPushCorrelationId (e.g. the id a framework gave the operator
 * being run); every command that thread enqueues until the matching pop
 * carries the innermost id. Ids are per host thread, like the current
 * device. maiaProfilerStart empties every thread's stack (at the thread's
 * next push, pop or enqueue), so ids left by an earlier session never tag
 * later work.
 */
#ifndef MAIA_PROFILER_H
#define MAIA_PROFILER_H

#include <maia/runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum maiaActivityKind {
  maiaActivityKernel = 1,       /* maiaLaunchKernel */
  maiaActivityMemcpyHtoD = 2,   /* maiaMemcpy* host -> device */
  maiaActivityMemcpyDtoH = 3,   /* device -> host */
  maiaActivityMemcpyDtoD = 4,   /* device -> device */
  maiaActivityMemcpyHtoH = 5,   /* host -> host, ordered on a stream */
  maiaActivityMemset = 6,       /* maiaMemset*, maiaMemsetPatternAsync */
  maiaActivityHostFunction = 7, /* maiaLaunchHostFunc */
  maiaActivityEventRecord = 8,  /* maiaEventRecord */
  maiaActivityGraph = 9,        /* maiaGraphLaunch: the whole replay, first
                                   command's start to last command's end */
} maiaActivityKind;

/** Longest name kept, terminator included; longer kernel names are cut. */
#define MAIA_ACTIVITY_NAME_BYTES 128

typedef struct maiaActivityRecord {
  maiaActivityKind kind;
  int device;              /* device index */
  uint64_t stream_id;      /* 0: the device's default stream; others numbered
                              from 1 in creation order, process-wide */
  uint64_t correlation_id; /* innermost id pushed by the enqueueing thread, 0 if none */
  int64_t enqueue_ns;      /* when the host enqueued it */
  int64_t start_ns;        /* when a core started it (first chunk) */
  int64_t end_ns;          /* when its last chunk finished */
  uint64_t bytes;          /* copies and fills: bytes written; 0 otherwise */
  uint64_t host_thread;    /* the enqueueing thread's Linux thread id */
  char name[MAIA_ACTIVITY_NAME_BYTES]; /* kernel symbol name, or the kind's name */
} maiaActivityRecord;

/** Starts recording. Records left from an earlier session are discarded.
 *  maiaErrorInvalidValue if a profiler is already active. */
MAIA_RUNTIME_API maiaError_t maiaProfilerStart(void);
/** Stops recording new commands. Commands enqueued before still produce
 *  their record when they complete: synchronize first to have them all. */
MAIA_RUNTIME_API maiaError_t maiaProfilerStop(void);
/** Moves up to capacity completed records, oldest completion first, into
 *  records and writes how many to *out_count. With records NULL (capacity
 *  ignored), only counts the records waiting. */
MAIA_RUNTIME_API maiaError_t maiaProfilerFlush(maiaActivityRecord* records, size_t capacity,
                                               size_t* out_count);
/** Records dropped since maiaProfilerStart because the buffer was full
 *  (MAIA_PROFILER_MAX_RECORDS, default 1048576). */
MAIA_RUNTIME_API maiaError_t maiaProfilerGetDroppedCount(uint64_t* out_count);
/** The clock activity times are in. */
MAIA_RUNTIME_API maiaError_t maiaProfilerGetTimestamp(int64_t* out_ns);

/** Correlation ids of this host thread (a stack; see above). Cheap: no lock,
 *  no initialization; allowed with no profiler active. Popping an empty
 *  stack is maiaErrorInvalidValue. out_id may be NULL. */
MAIA_RUNTIME_API maiaError_t maiaProfilerPushCorrelationId(uint64_t id);
MAIA_RUNTIME_API maiaError_t maiaProfilerPopCorrelationId(uint64_t* out_id);

#ifdef __cplusplus
}
#endif

#endif /* MAIA_PROFILER_H */
