// Graph capture: a stream in capture mode records commands into a graph;
// an instantiated graph replays them as one command (maiaGraph_t,
// maiaGraphExec_t). See docs/runtime.md, "Graph capture and replay".
//
// What a graph holds: the commands the ordinary API calls built (a launch's
// KernelCommand with its argument words, a CopyCommand, ...), taken by
// enqueue() instead of being queued. A command's runChunk(i) only reads
// what it was built with, so a replay calls it again for every chunk; the
// commands' own chunk counters and finish() are not used by a replay.
// Event records are the exception: a record completes a new EventRecord per
// replay, made at maiaGraphLaunch, so they are kept as the event itself.
#pragma once

#include <maia/runtime.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "command.h"
#include "error.h"
#include "event.h"
#include "stream.h"

namespace maia::driver {

/// One recorded command: work to rerun, or an event record.
struct GraphNode {
  std::unique_ptr<Command> command;  // null for an event record
  std::shared_ptr<Event> event;      // the recorded event, for an event record
  int64_t chunks = 1;                // cores the command was split for
};

/// What a capture recorded; immutable once the capture ended (shared by the
/// graph, its executables and the replays in flight).
struct GraphBody {
  Device* device = nullptr;
  std::vector<GraphNode> nodes;
};

/// The state of one stream's capture, owned by the stream while it
/// captures (Stream::capture).
class Capture {
 public:
  explicit Capture(Device* device) : body_(std::make_shared<GraphBody>()) {
    body_->device = device;
  }

  /// Records cmd (taking it); fails once the capture is invalidated.
  Status add(std::unique_ptr<Command> cmd);
  /// Records an event record of event.
  Status addEventRecord(std::shared_ptr<Event> event);
  /// A wait on event: ordering is implicit (commands replay in order) if the
  /// event was recorded earlier in this capture; anything else cannot be
  /// replayed and invalidates the capture.
  Status addEventWait(Stream* stream, const Event& event);

  /// Marks the capture invalid (the first reason is kept) and returns the
  /// error for the call that did it.
  Status invalidate(Stream* stream, const std::string& what);
  /// The recorded body, or the error that invalidated the capture.
  Status finish(std::shared_ptr<GraphBody>* out);

 private:
  Status invalidError() const;  // mutex_ held

  std::mutex mutex_;
  std::shared_ptr<GraphBody> body_;
  std::vector<const Event*> recorded_events_;
  std::string invalid_reason_;  // empty while valid
};

/// The Capture of stream (null if it is not capturing).
std::shared_ptr<Capture> captureOf(Stream* stream);

/// A call that cannot be made while stream captures: invalidates the
/// capture and returns maiaErrorStreamCaptureUnsupported naming `what`
/// (success if the capture ended meanwhile).
Status captureViolation(Stream* stream, const char* what);

}  // namespace maia::driver
