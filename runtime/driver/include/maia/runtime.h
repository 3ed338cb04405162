/*
 * maia/runtime.h - the C API of the simulated MAIA device (the "driver").
 *
 * The driver behaves like a vendor accelerator runtime: a separate device
 * address space, in-order asynchronous streams, events, a pool of compute
 * cores and a loader/launcher for MAIA kernel binaries (.maiabin).
 *
 * Conventions (apply to every function below):
 *  - Every function returns a maiaError_t. On failure, a message naming the
 *    problem is kept per host thread: maiaGetLastErrorMessage().
 *  - Outputs go through out_ parameters, which are written only on success.
 *  - Handles (maiaStream_t, maiaEvent_t, maiaModule_t) are opaque. Each
 *    create/load has one matching destroy/unload; a handle that was never
 *    created, or already destroyed, is rejected with maiaErrorInvalidHandle.
 *  - A NULL maiaStream_t means the default stream of the current device.
 *  - Device pointers are addresses in the device address space: the host
 *    cannot dereference them (it faults, as on silicon). Only the driver
 *    reads or writes device memory.
 *  - Asynchronous functions (...Async, maiaLaunchKernel, maiaEventRecord,
 *    maiaStreamWaitEvent, maiaLaunchHostFunc) only enqueue. Errors raised by
 *    device work are sticky per device: they are reported, with the message
 *    of the failing command, by every later synchronizing call and launch on
 *    that device until maiaDeviceReset(). Work queued after the fault is
 *    skipped, never run on a broken device.
 *  - All functions are thread-safe. The current device is per host thread.
 *  - After fork(), a child process must not use the driver state inherited
 *    from its parent: every call returns maiaErrorInitialization.
 */
#ifndef MAIA_RUNTIME_H
#define MAIA_RUNTIME_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MAIA_RUNTIME_API __attribute__((visibility("default")))

/* ------------------------------------------------------------------ errors */

typedef enum maiaError_t {
  maiaSuccess = 0,
  maiaErrorInvalidValue = 1,         /* a bad argument (null out pointer, ...) */
  maiaErrorInvalidDevice = 2,        /* device index out of range */
  maiaErrorOutOfMemory = 3,          /* device or pinned memory exhausted */
  maiaErrorInvalidDevicePointer = 4, /* null, foreign, freed or overrun pointer */
  maiaErrorInvalidHandle = 5,        /* unknown or destroyed stream/event/module */
  maiaErrorNotReady = 6,             /* query: work still pending (not a failure) */
  maiaErrorStreamBusy = 7,           /* destroy of a stream with pending work */
  maiaErrorEventNotRecorded = 8,     /* wait/sync/time on an event never recorded */
  maiaErrorEventNoTiming = 9,        /* elapsed time of an event made without timing */
  maiaErrorFileNotFound = 10,        /* kernel binary path cannot be read */
  maiaErrorInvalidImage = 11,        /* not a valid MAIA kernel binary */
  maiaErrorUnsupportedImage = 12,    /* metadata version or CPU features unsupported */
  maiaErrorNotFound = 13,            /* kernel name not in the module */
  maiaErrorInvalidLaunch = 14,       /* arguments or grid do not match the kernel */
  maiaErrorLaunchFailure = 15,       /* device work faulted (sticky) */
  maiaErrorInitialization = 16,      /* bad configuration, or use after fork */
  maiaErrorPeerExited = 17,          /* the process that exported an IPC handle exited */
  maiaErrorStreamCaptureUnsupported = 18, /* not allowed while a stream captures (invalidates it) */
  maiaErrorStreamCaptureInvalidated = 19, /* the capture was invalidated by an earlier call */
} maiaError_t;

/** Short constant name of an error code, e.g. "maiaErrorInvalidDevice". */
MAIA_RUNTIME_API const char* maiaGetErrorName(maiaError_t error);
/** One-line generic description of an error code. */
MAIA_RUNTIME_API const char* maiaGetErrorString(maiaError_t error);
/** The detailed message of the most recent failed call on this host thread
 *  ("" if none). Valid until the next driver call on this thread. */
MAIA_RUNTIME_API const char* maiaGetLastErrorMessage(void);
/** The code of the most recent failed call on this thread; clears it. */
MAIA_RUNTIME_API maiaError_t maiaGetLastError(void);
/** Like maiaGetLastError, without clearing. */
MAIA_RUNTIME_API maiaError_t maiaPeekAtLastError(void);

/* ----------------------------------------------------------------- devices */

typedef struct maiaDeviceProp {
  char name[64];                 /* "MAIA simulated device" */
  char compute_capability[32];   /* e.g. "maia-sim-1.0+x86-64-v4" */
  size_t total_memory;           /* capacity in bytes */
  int core_count;                /* compute cores (host CPUs, shared) */
  int device_index;
  int stream_priority_least;     /* numerically largest (lowest) priority */
  int stream_priority_greatest;  /* numerically smallest (highest) priority */
} maiaDeviceProp;

/** Number of devices: MAIA_VISIBLE_DEVICES (a count) or 2. */
MAIA_RUNTIME_API maiaError_t maiaGetDeviceCount(int* out_count);
MAIA_RUNTIME_API maiaError_t maiaGetDevice(int* out_device);
MAIA_RUNTIME_API maiaError_t maiaSetDevice(int device);
MAIA_RUNTIME_API maiaError_t maiaGetDeviceProperties(maiaDeviceProp* out_prop, int device);
/** Waits for all work on all streams of the current device. */
MAIA_RUNTIME_API maiaError_t maiaDeviceSynchronize(void);
/** Waits for the device's work, then clears its sticky error. Allocations
 *  stay valid. */
MAIA_RUNTIME_API maiaError_t maiaDeviceReset(int device);
MAIA_RUNTIME_API maiaError_t maiaDeviceGetStreamPriorityRange(int* out_least, int* out_greatest);

/* ------------------------------------------------------------------ memory */

/* The async copies below take streams: declared here because in C a struct
 * first named in a parameter list is a different type from maiaStream_t. */
struct maiaStream;

typedef enum maiaMemcpyKind {
  maiaMemcpyHostToHost = 0,
  maiaMemcpyHostToDevice = 1,
  maiaMemcpyDeviceToHost = 2,
  maiaMemcpyDeviceToDevice = 3,
  maiaMemcpyDefault = 4, /* inferred from the pointers */
} maiaMemcpyKind;

typedef enum maiaMemoryType {
  maiaMemoryTypeUnregistered = 0, /* ordinary (pageable) host memory */
  maiaMemoryTypeHost = 1,         /* pinned host memory from maiaHostAlloc */
  maiaMemoryTypeDevice = 2,
} maiaMemoryType;

typedef struct maiaPointerAttributes {
  maiaMemoryType type;
  int device;       /* owning device, or -1 for host memory */
  void* base;       /* start of the allocation holding the pointer */
  size_t size;      /* size of that allocation in bytes */
} maiaPointerAttributes;

/** Allocates device memory on the current device (256-byte aligned). A size
 *  of 0 returns NULL and succeeds. */
MAIA_RUNTIME_API maiaError_t maiaMalloc(void** out_ptr, size_t size);
/** Frees device memory; waits for the device's pending work first. NULL is
 *  a no-op. */
MAIA_RUNTIME_API maiaError_t maiaFree(void* ptr);
/** Bytes free and total on the current device. */
MAIA_RUNTIME_API maiaError_t maiaMemGetInfo(size_t* out_free, size_t* out_total);
/** Pinned (page-locked, pre-faulted) host memory: copies from/to it are
 *  asynchronous. */
MAIA_RUNTIME_API maiaError_t maiaHostAlloc(void** out_ptr, size_t size);
MAIA_RUNTIME_API maiaError_t maiaFreeHost(void* ptr);
MAIA_RUNTIME_API maiaError_t maiaPointerGetAttributes(maiaPointerAttributes* out_attr,
                                                      const void* ptr);

/** Synchronous copy: ordered after all work on the involved devices' default
 *  streams, returns when the copy is complete. */
MAIA_RUNTIME_API maiaError_t maiaMemcpy(void* dst, const void* src, size_t bytes,
                                        maiaMemcpyKind kind);
/** Asynchronous copy on a stream. A copy that involves pageable host memory
 *  is synchronous with the host (as on silicon, it must be staged). */
MAIA_RUNTIME_API maiaError_t maiaMemcpyAsync(void* dst, const void* src, size_t bytes,
                                             maiaMemcpyKind kind, struct maiaStream* stream);
MAIA_RUNTIME_API maiaError_t maiaMemset(void* device_ptr, int value, size_t bytes);
MAIA_RUNTIME_API maiaError_t maiaMemsetAsync(void* device_ptr, int value, size_t bytes,
                                             struct maiaStream* stream);

/** Fills count elements of pattern_bytes (1, 2, 4, 8 or 16) each with the value
 *  at pattern, on a stream; the pattern is copied at the call. */
MAIA_RUNTIME_API maiaError_t maiaMemsetPatternAsync(void* device_ptr, const void* pattern,
                                                    size_t pattern_bytes, size_t count,
                                                    struct maiaStream* stream);

/* ------------------------------------------------------------ streams/events */

typedef struct maiaStream* maiaStream_t;
typedef struct maiaEvent* maiaEvent_t;

/** Creates a stream on the current device; priority is clamped to the range. */
MAIA_RUNTIME_API maiaError_t maiaStreamCreate(maiaStream_t* out_stream, int priority);
/** Fails with maiaErrorStreamBusy (stream untouched) if work is pending. */
MAIA_RUNTIME_API maiaError_t maiaStreamDestroy(maiaStream_t stream);
MAIA_RUNTIME_API maiaError_t maiaStreamGetDefault(maiaStream_t* out_stream, int device);
MAIA_RUNTIME_API maiaError_t maiaStreamGetDevice(maiaStream_t stream, int* out_device);
MAIA_RUNTIME_API maiaError_t maiaStreamGetPriority(maiaStream_t stream, int* out_priority);
/** maiaSuccess if all work is complete, maiaErrorNotReady otherwise. */
MAIA_RUNTIME_API maiaError_t maiaStreamQuery(maiaStream_t stream);
MAIA_RUNTIME_API maiaError_t maiaStreamSynchronize(maiaStream_t stream);
/** Later work on stream waits until the event's recorded work completes. */
MAIA_RUNTIME_API maiaError_t maiaStreamWaitEvent(maiaStream_t stream, maiaEvent_t event);

typedef void (*maiaHostFn_t)(void* user_data);
/** Runs fn(user_data) on a driver thread, in stream order. fn must not call
 *  the driver's synchronizing functions. */
MAIA_RUNTIME_API maiaError_t maiaLaunchHostFunc(maiaStream_t stream, maiaHostFn_t fn,
                                                void* user_data);
/** maiaLaunchHostFunc whose profiler record (maia/profiler.h) and error
 *  messages carry name (copied; NULL or "" behaves as maiaLaunchHostFunc),
 *  e.g. the collective a communication library runs in fn. */
MAIA_RUNTIME_API maiaError_t maiaLaunchHostFuncNamed(maiaStream_t stream, maiaHostFn_t fn,
                                                     void* user_data, const char* name);

/* Stream operations on a 64-bit word of device memory (CUDA's
 * cuStreamWaitValue64 / cuStreamWriteValue64): a flag one stream, or
 * another process's stream, sets and another stream waits for, with no
 * host round trip. The word must be 8-byte aligned, in a live allocation of
 * the stream's device: its own, or opened there with maiaIpcOpenMemHandle. */
enum { maiaStreamWaitValueGeq = 0, maiaStreamWaitValueEq = 1 };
/** Later work on stream waits until the word at device_ptr is >= value
 *  (maiaStreamWaitValueGeq) or == value (maiaStreamWaitValueEq). The wait
 *  occupies no core. It fails instead of hanging -- the device gets a
 *  sticky error naming the wait and the work behind it is skipped -- when
 *  the word is in memory opened from another process's handle and that
 *  process exits first, or, with timeout_ms > 0, when the value is not
 *  there timeout_ms after the stream reached the wait (0: no timeout).
 *  Not allowed while the stream captures a graph. */
MAIA_RUNTIME_API maiaError_t maiaStreamWaitValue64(maiaStream_t stream, void* device_ptr,
                                                   uint64_t value, unsigned flags,
                                                   uint32_t timeout_ms);
/** Writes value to the word at device_ptr once the work queued before it on
 *  stream completed (a release store: what that work wrote is visible to
 *  whoever sees the value), and wakes the waits on it in every process. */
MAIA_RUNTIME_API maiaError_t maiaStreamWriteValue64(maiaStream_t stream, void* device_ptr,
                                                    uint64_t value);

/* maiaEventInterprocess: the event can be shared with maiaIpcGetEventHandle. */
enum { maiaEventDefault = 0, maiaEventDisableTiming = 1, maiaEventInterprocess = 2 };
MAIA_RUNTIME_API maiaError_t maiaEventCreate(maiaEvent_t* out_event, unsigned flags);
MAIA_RUNTIME_API maiaError_t maiaEventDestroy(maiaEvent_t event);
MAIA_RUNTIME_API maiaError_t maiaEventRecord(maiaEvent_t event, maiaStream_t stream);
/** maiaSuccess if the recorded work completed, maiaErrorNotReady if not. */
MAIA_RUNTIME_API maiaError_t maiaEventQuery(maiaEvent_t event);
MAIA_RUNTIME_API maiaError_t maiaEventSynchronize(maiaEvent_t event);
MAIA_RUNTIME_API maiaError_t maiaEventElapsedTime(float* out_ms, maiaEvent_t start,
                                                  maiaEvent_t end);

/* ------------------------------------------------- inter-process (IPC) */

/* Handles are plain bytes: copy them through any channel (a pipe, a c10d
 * Store) to another process of the same host, which opens them. See
 * docs/runtime.md, "Inter-process memory and events". */
#define MAIA_IPC_HANDLE_SIZE 64
typedef struct maiaIpcMemHandle_t {
  unsigned char reserved[MAIA_IPC_HANDLE_SIZE];
} maiaIpcMemHandle_t;
typedef struct maiaIpcEventHandle_t {
  unsigned char reserved[MAIA_IPC_HANDLE_SIZE];
} maiaIpcEventHandle_t;

enum { maiaIpcMemLazyEnablePeerAccess = 1 }; /* accepted for CUDA parity; no effect */

/** A handle naming the allocation that holds device_ptr (the whole
 *  allocation: opening it yields its base). Valid until the allocation is
 *  freed; the exporter's free is deferred while other processes have it
 *  open, so their view never changes under them. */
MAIA_RUNTIME_API maiaError_t maiaIpcGetMemHandle(maiaIpcMemHandle_t* out_handle,
                                                 void* device_ptr);
/** Maps another process's allocation into the current device's address
 *  space: the pointer works for copies and kernels on this device like any
 *  allocation of it. Opening the same handle again returns the same pointer
 *  and needs one more close. A handle of this process is refused. */
MAIA_RUNTIME_API maiaError_t maiaIpcOpenMemHandle(void** out_device_ptr,
                                                  maiaIpcMemHandle_t handle, unsigned flags);
/** maiaIpcOpenMemHandle of bytes [offset, offset + bytes) of the handle's
 *  allocation only (the whole pages around them): *out_device_ptr is the
 *  byte at offset, and only that range takes room in the device's import
 *  window (as large as its memory). Opening the same range again returns
 *  the same pointer; other ranges are mappings of their own. Each open
 *  needs a maiaIpcCloseMemHandle of the pointer it returned. */
MAIA_RUNTIME_API maiaError_t maiaIpcOpenMemHandleRange(void** out_device_ptr,
                                                       maiaIpcMemHandle_t handle, size_t offset,
                                                       size_t bytes, unsigned flags);
/** Drops one open; the last one waits for the device's queued work, then
 *  unmaps. */
MAIA_RUNTIME_API maiaError_t maiaIpcCloseMemHandle(void* device_ptr);
/** maiaIpcCloseMemHandle without waiting: the last close unmaps once the
 *  work queued on stream (of the device the handle was opened on) before
 *  it has completed -- before returning when stream has no work left. The
 *  caller guarantees that no other stream's queued work reads the memory.
 *  Refused during a stream capture. */
MAIA_RUNTIME_API maiaError_t maiaIpcCloseMemHandleAsync(void* device_ptr, maiaStream_t stream);
/** *freed = 1 when the process that exported the allocation opened at
 *  device_ptr has freed it since (its pages stay reserved there until
 *  every process that opened it closes it), else 0. */
MAIA_RUNTIME_API maiaError_t maiaIpcMemHandleFreedByOwner(const void* device_ptr, int* freed);

/** A handle for an event created with maiaEventInterprocess. */
MAIA_RUNTIME_API maiaError_t maiaIpcGetEventHandle(maiaIpcEventHandle_t* out_handle,
                                                   maiaEvent_t event);
/** An event of this process mirroring another process's interprocess event:
 *  maiaStreamWaitEvent, maiaEventQuery and maiaEventSynchronize on it refer
 *  to the owner's latest record. It cannot be recorded or timed here.
 *  Destroy it with maiaEventDestroy. A wait whose owner exits before the
 *  awaited record completes fails (the stream's device gets a sticky error
 *  naming the owner) instead of hanging. */
MAIA_RUNTIME_API maiaError_t maiaIpcOpenEventHandle(maiaEvent_t* out_event,
                                                    maiaIpcEventHandle_t handle);

/* ----------------------------------------------------------------- kernels */

typedef struct maiaModule* maiaModule_t;
typedef struct maiaKernel* maiaKernel_t; /* owned by its module */

/** Element types of kernel arguments (names as in the binary's metadata). */
typedef enum maiaDtype {
  maiaDtypeI1 = 0,   /* "i1": bool, one byte */
  maiaDtypeI8 = 1,   /* "i8" */
  maiaDtypeI16 = 2,  /* "i16" */
  maiaDtypeI32 = 3,  /* "i32" */
  maiaDtypeI64 = 4,  /* "i64" */
  maiaDtypeU8 = 5,   /* "ui8" */
  maiaDtypeF16 = 6,  /* "f16" */
  maiaDtypeBF16 = 7, /* "bf16" */
  maiaDtypeF32 = 8,  /* "f32" */
  maiaDtypeF64 = 9,  /* "f64" */
  maiaDtypeIndex = 10, /* "index": a 64-bit integer */
  maiaDtypeC64 = 11,   /* "c64": complex of two f32 (memrefs only) */
  maiaDtypeC128 = 12,  /* "c128": complex of two f64 (memrefs only) */
} maiaDtype;

typedef enum maiaArgKind { maiaArgMemref = 0, maiaArgScalar = 1 } maiaArgKind;

#define MAIA_MAX_RANK 8

/** One kernel argument as the caller passes it to maiaLaunchKernel. */
typedef struct maiaKernelArg {
  maiaArgKind kind;
  maiaDtype dtype;
  /* memref: a strided view of device memory, in elements */
  void* data;      /* device pointer of element 0 of the allocation's view */
  int64_t offset;  /* element offset of the view's first element from data;
                      the kernel's descriptor gets aligned = data + offset and
                      offset 0 (kernels take offset 0 or a dynamic offset) */
  int32_t rank;
  int64_t sizes[MAIA_MAX_RANK];
  int64_t strides[MAIA_MAX_RANK];
  /* scalar: the value, read as the dtype says */
  union {
    int64_t i;
    double f;
  } scalar;
} maiaKernelArg;

/** Convenience constructors for kernel arguments. */
static inline maiaKernelArg maiaKernelArgVector(void* data, maiaDtype dtype, int64_t count,
                                                int64_t stride) {
  maiaKernelArg arg;
  memset(&arg, 0, sizeof(arg));
  arg.kind = maiaArgMemref;
  arg.dtype = dtype;
  arg.data = data;
  arg.rank = 1;
  arg.sizes[0] = count;
  arg.strides[0] = stride;
  return arg;
}

static inline maiaKernelArg maiaKernelArgInt(maiaDtype dtype, int64_t value) {
  maiaKernelArg arg;
  memset(&arg, 0, sizeof(arg));
  arg.kind = maiaArgScalar;
  arg.dtype = dtype;
  arg.scalar.i = value;
  return arg;
}

static inline maiaKernelArg maiaKernelArgFloat(maiaDtype dtype, double value) {
  maiaKernelArg arg;
  memset(&arg, 0, sizeof(arg));
  arg.kind = maiaArgScalar;
  arg.dtype = dtype;
  arg.scalar.f = value;
  return arg;
}

/** What the metadata declares about one kernel argument. */
typedef struct maiaKernelArgInfo {
  maiaArgKind kind;
  maiaDtype dtype;
  int32_t rank;                     /* memref only */
  int64_t strides[MAIA_MAX_RANK];   /* static strides; INT64_MIN means dynamic */
} maiaKernelArgInfo;

/** Loads a MAIA kernel binary from a file / from memory (the bytes are
 *  copied). The binary is validated before any of its code is mapped. */
MAIA_RUNTIME_API maiaError_t maiaModuleLoad(maiaModule_t* out_module, const char* path);
MAIA_RUNTIME_API maiaError_t maiaModuleLoadData(maiaModule_t* out_module, const void* data,
                                                size_t size);
/** Launches already queued keep the module alive until they complete. */
MAIA_RUNTIME_API maiaError_t maiaModuleUnload(maiaModule_t module);
/** The module's metadata JSON (valid while the module is loaded). */
MAIA_RUNTIME_API maiaError_t maiaModuleGetMetadata(maiaModule_t module, const char** out_json);
MAIA_RUNTIME_API maiaError_t maiaModuleGetKernelCount(maiaModule_t module, int* out_count);
MAIA_RUNTIME_API maiaError_t maiaModuleGetKernelByIndex(maiaModule_t module, int index,
                                                        maiaKernel_t* out_kernel);
MAIA_RUNTIME_API maiaError_t maiaModuleGetKernel(maiaModule_t module, const char* name,
                                                 maiaKernel_t* out_kernel);
MAIA_RUNTIME_API maiaError_t maiaKernelGetName(maiaKernel_t kernel, const char** out_name);
MAIA_RUNTIME_API maiaError_t maiaKernelGetArgCount(maiaKernel_t kernel, int* out_count);
MAIA_RUNTIME_API maiaError_t maiaKernelGetArgInfo(maiaKernel_t kernel, int index,
                                                  maiaKernelArgInfo* out_info);

/** Enqueues kernel over grid[0] x grid[1] x grid[2] program ids on stream.
 *  Arguments are validated against the metadata (count, kinds, dtypes,
 *  ranks, static strides, device, bounds of every memref within its
 *  allocation) and copied: the caller may reuse args immediately. */
MAIA_RUNTIME_API maiaError_t maiaLaunchKernel(maiaKernel_t kernel, const int64_t grid[3],
                                              const maiaKernelArg* args, int num_args,
                                              maiaStream_t stream);

/* ------------------------------------------------------ graph capture */

/* A stream in capture mode records the work enqueued on it (kernel
 * launches, device-device copies, async copies from/to pinned host memory,
 * memsets and fills, host functions, event records, and waits on events
 * recorded earlier in the same capture) into a graph instead of running it.
 * Kernel arguments are kept by value, as maiaLaunchKernel copies them: a
 * replay reads whatever the captured pointers hold at that time.
 * An instantiated graph (maiaGraphExec_t) is replayed by maiaGraphLaunch as
 * ONE command on a stream: the recorded commands run in capture order, each
 * on as many cores as it was split for, the next starting when the previous
 * one is complete.
 * While a stream captures, calls that would wait for its recorded work or
 * run it at once fail with maiaErrorStreamCaptureUnsupported and invalidate
 * the capture: maiaStreamSynchronize of it, maiaDeviceSynchronize (and
 * maiaFree, maiaDeviceReset) on its device, synchronous copies ordered on
 * it (maiaMemcpy on the default stream, copies with pageable host memory),
 * waits on events not recorded in the capture, interprocess events. Later
 * work on an invalidated capture fails with
 * maiaErrorStreamCaptureInvalidated until maiaStreamEndCapture. A device's
 * default stream cannot capture (synchronous calls order on it). */

typedef struct maiaGraph* maiaGraph_t;
typedef struct maiaGraphExec* maiaGraphExec_t;

/** Puts stream (not a default stream) in capture mode. Work already queued
 *  on it keeps running; it is not part of the graph. */
MAIA_RUNTIME_API maiaError_t maiaStreamBeginCapture(maiaStream_t stream);
/** Ends capture mode and returns the recorded graph (destroy it with
 *  maiaGraphDestroy). If the capture was invalidated, capture mode still
 *  ends, no graph is made, and the error names the call that invalidated it. */
MAIA_RUNTIME_API maiaError_t maiaStreamEndCapture(maiaStream_t stream, maiaGraph_t* out_graph);
/** *out_capturing: 1 while stream is in capture mode (also once invalidated). */
MAIA_RUNTIME_API maiaError_t maiaStreamIsCapturing(maiaStream_t stream, int* out_capturing);
/** Number of commands a graph recorded. */
MAIA_RUNTIME_API maiaError_t maiaGraphGetNodeCount(maiaGraph_t graph, size_t* out_count);
/** Makes a graph replayable. The executable shares the graph's commands:
 *  the graph may be destroyed right after. */
MAIA_RUNTIME_API maiaError_t maiaGraphInstantiate(maiaGraphExec_t* out_exec, maiaGraph_t graph);
/** Enqueues one replay of exec on stream (a stream of the graph's device,
 *  not capturing). Asynchronous; its host cost does not depend on the
 *  number of recorded commands (only on the number of event records). */
MAIA_RUNTIME_API maiaError_t maiaGraphLaunch(maiaGraphExec_t exec, maiaStream_t stream);
MAIA_RUNTIME_API maiaError_t maiaGraphDestroy(maiaGraph_t graph);
/** Replays already queued keep what they need alive until they complete. */
MAIA_RUNTIME_API maiaError_t maiaGraphExecDestroy(maiaGraphExec_t exec);

/* ---------------------------------------------------------- kernel ABI (5) */

/** What a kernel entry point receives for each program id. */
typedef struct maia_grid_t {
  int64_t program_id[3];
  int64_t num_programs[3];
} maia_grid_t;

typedef void (*maia_kernel_fn)(void* const* args, const maia_grid_t* grid);

/** Version of the metadata format this driver reads. */
#define MAIA_METADATA_FORMAT_VERSION 1

#ifdef __cplusplus
}
#endif

#endif /* MAIA_RUNTIME_H */
