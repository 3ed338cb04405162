//===- Server.cpp - The maia-compile worker -------------------------------===//
//
// Line-delimited JSON over a pipe: JSON strings escape newlines, so one
// request or reply is exactly one line. Every request gets exactly one reply,
// in order; errors are replies, and the worker keeps serving.
//
//===----------------------------------------------------------------------===//

#include "Server.h"

#include "maia/Compiler/Compiler.h"

#include "llvm/Support/Base64.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <chrono>
#include <string>
#include <unistd.h>

namespace mc = maia::compiler;
using llvm::json::Object;
using llvm::json::Value;

namespace {

/// Reads lines of bounded length from a file descriptor.
class LineReader {
public:
  LineReader(int fd, size_t maxBytes) : fd(fd), maxBytes(maxBytes) {}

  enum class Status { Line, TooLong, End };

  /// The next line (without its newline) in `line`. A line longer than
  /// maxBytes is consumed and reported as TooLong, with `line` empty.
  Status next(std::string &line) {
    line.clear();
    bool tooLong = false;
    while (true) {
      size_t newline = buffer.find('\n', scanned);
      if (newline != std::string::npos) {
        if (!tooLong)
          line.assign(buffer, 0, newline);
        buffer.erase(0, newline + 1);
        scanned = 0;
        return tooLong ? Status::TooLong : Status::Line;
      }
      if (buffer.size() > maxBytes) {
        // Drop what we hold; keep discarding until the end of the line.
        tooLong = true;
        buffer.clear();
      }
      scanned = buffer.size();
      char chunk[1 << 16];
      ssize_t count = ::read(fd, chunk, sizeof(chunk));
      if (count < 0 && errno == EINTR)
        continue;
      if (count <= 0) {
        // A last line without a newline still counts.
        if (tooLong) {
          buffer.clear();
          return Status::TooLong;
        }
        if (buffer.empty())
          return Status::End;
        line.swap(buffer);
        buffer.clear();
        scanned = 0;
        return Status::Line;
      }
      buffer.append(chunk, size_t(count));
    }
  }

private:
  int fd;
  size_t maxBytes;
  std::string buffer;
  size_t scanned = 0;
};

bool writeAll(int fd, const std::string &text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t count = ::write(fd, text.data() + done, text.size() - done);
    if (count < 0 && errno == EINTR)
      continue;
    if (count <= 0)
      return false;
    done += size_t(count);
  }
  return true;
}

Object errorReply(const Value &id, const std::string &message) {
  return Object{{"id", id}, {"ok", false}, {"error", message}};
}

/// Writes `bytes` to `path` atomically (a temporary file, then a rename), so
/// that a reader never sees a partial binary.
std::string writeOutputFile(const std::string &path, const std::string &bytes) {
  std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(temporary, ec);
    if (ec)
      return "cannot write '" + temporary + "': " + ec.message();
    os << bytes;
    os.close();
    if (os.has_error()) {
      std::string message = os.error().message();
      os.clear_error();
      llvm::sys::fs::remove(temporary);
      return "cannot write '" + temporary + "': " + message;
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(temporary, path)) {
    llvm::sys::fs::remove(temporary);
    return "cannot rename the output to '" + path + "': " + ec.message();
  }
  return "";
}

/// Reads an optional string member; false (with `error`) if it has another
/// type.
bool getString(const Object &request, llvm::StringRef key, std::string &out,
               std::string &error) {
  const Value *value = request.get(key);
  if (!value || value->kind() == Value::Null)
    return true;
  std::optional<llvm::StringRef> text = value->getAsString();
  if (!text) {
    error = "'" + key.str() + "' must be a string";
    return false;
  }
  out = text->str();
  return true;
}

Object handle(mc::Compiler &compiler, const Object &request, bool &shutdown) {
  Value id = request.get("id") ? *request.get("id") : Value(nullptr);
  std::string command = "compile", error;
  if (!getString(request, "command", command, error))
    return errorReply(id, error);
  if (command == "shutdown") {
    shutdown = true;
    return Object{{"id", id}, {"ok", true}};
  }
  if (command == "version")
    return Object{{"id", id},
                  {"ok", true},
                  {"version", mc::getVersion()},
                  {"host_cpu", mc::getHostCPU()}};
  if (command != "compile")
    return errorReply(id, "unknown command '" + command +
                              "' (expected compile, version or shutdown)");

  mc::CompileOptions options;
  options.sourceName = "<request>";
  std::string source, emit = "binary", output;
  const Value *sourceValue = request.get("source");
  if (!sourceValue || !sourceValue->getAsString())
    return errorReply(id, "a compile request needs 'source', a string of MLIR");
  source = sourceValue->getAsString()->str();
  if (!getString(request, "source_name", options.sourceName, error) ||
      !getString(request, "target_cpu", options.targetCPU, error) ||
      !getString(request, "target_features", options.targetFeatures, error) ||
      !getString(request, "emit", emit, error) ||
      !getString(request, "output", output, error))
    return errorReply(id, error);
  if (const Value *level = request.get("opt_level")) {
    std::optional<int64_t> value = level->getAsInteger();
    if (!value || *value < 0 || *value > 3)
      return errorReply(id, "'opt_level' must be an integer in 0..3");
    options.optLevel = int(*value);
  }
  if (!mc::parseEmitKind(emit, options.emit))
    return errorReply(id, "unknown 'emit' kind '" + emit +
                              "' (binary, mlir-lowered, llvm, asm, obj)");

  auto start = std::chrono::steady_clock::now();
  mc::CompileResult result = compiler.compile(source, options);
  double total = std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - start)
                     .count();
  Object timings;
  for (const mc::PhaseTime &phase : result.phases)
    timings[phase.name] = phase.milliseconds;
  timings["total"] = total;
  Object reply{{"id", id},
               {"ok", result.succeeded},
               {"diagnostics", result.diagnostics},
               {"timings_ms", std::move(timings)}};
  if (!result.succeeded) {
    reply["error"] = "compilation failed";
    return reply;
  }
  if (!result.metadata.empty()) {
    if (auto metadata = llvm::json::parse(result.metadata))
      reply["metadata"] = std::move(*metadata);
    else
      llvm::consumeError(metadata.takeError());
  }
  bool binary = options.emit == mc::EmitKind::Binary ||
                options.emit == mc::EmitKind::Object;
  if (!output.empty()) {
    std::string problem = writeOutputFile(output, result.output);
    if (!problem.empty())
      return errorReply(id, problem);
    reply["output_path"] = output;
  } else if (binary) {
    reply["output_base64"] = llvm::encodeBase64(result.output);
  } else {
    reply["output"] = result.output;
  }
  return reply;
}

} // namespace

int mc::runServer(int in, int out, size_t maxRequestBytes) {
  Compiler compiler;
  LineReader reader(in, maxRequestBytes);
  std::string line;
  bool shutdown = false;
  while (!shutdown) {
    LineReader::Status status = reader.next(line);
    if (status == LineReader::Status::End)
      break;
    Object reply;
    if (status == LineReader::Status::TooLong) {
      reply = errorReply(nullptr, "request too large: a request line may have "
                                  "at most " +
                                      std::to_string(maxRequestBytes) +
                                      " bytes");
    } else if (llvm::StringRef(line).trim().empty()) {
      continue;
    } else if (llvm::Expected<Value> request = llvm::json::parse(line)) {
      if (const Object *object = request->getAsObject())
        reply = handle(compiler, *object, shutdown);
      else
        reply = errorReply(nullptr, "a request must be a JSON object");
    } else {
      reply = errorReply(nullptr, "malformed request (not JSON): " +
                                      llvm::toString(request.takeError()));
    }
    std::string text;
    llvm::raw_string_ostream os(text);
    os << Value(std::move(reply)) << "\n";
    os.flush();
    if (!writeAll(out, text))
      return 1;
  }
  return 0;
}
