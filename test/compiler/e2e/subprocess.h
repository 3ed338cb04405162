// Runs maia-compile as a child process: the end-to-end tests use the
// compiler only through its command line and worker protocol.
#pragma once

#include <string>
#include <vector>

namespace maia_e2e {

struct ProcessResult {
  bool signaled = false;   ///< the child died from a signal
  int signal = 0;
  int exitCode = -1;       ///< valid when !signaled
  std::string out, err;
};

/// Runs argv[0] with argv, feeding `input` on stdin; collects stdout and
/// stderr. Kills the child after timeoutSeconds.
ProcessResult runProcess(const std::vector<std::string>& argv, const std::string& input = "",
                         int timeoutSeconds = 120);

/// A long-lived child with pipes on stdin and stdout (the compile worker).
class Worker {
 public:
  explicit Worker(const std::vector<std::string>& argv);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  /// Sends one request line (a newline is appended) and returns the reply
  /// line; false if the worker closed its output (died or exited).
  bool request(const std::string& line, std::string* reply);
  /// Sends raw bytes without waiting for a reply.
  bool send(const std::string& bytes);
  /// Reads one reply line.
  bool readLine(std::string* line);
  /// Closes stdin and waits; the exit status like runProcess.
  ProcessResult finish();

 private:
  int pid_ = -1;
  int in_ = -1, out_ = -1;
  std::string buffered_;
};

/// The path of the built maia-compile.
std::string compilerPath();

/// Reads a whole file ("" if missing).
std::string readFile(const std::string& path);
void writeFile(const std::string& path, const std::string& bytes);

}  // namespace maia_e2e
