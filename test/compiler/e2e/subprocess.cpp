#include "subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace maia_e2e {
namespace {

std::vector<char*> cArgv(const std::vector<std::string>& argv) {
  std::vector<char*> result;
  for (const std::string& arg : argv) result.push_back(const_cast<char*>(arg.c_str()));
  result.push_back(nullptr);
  return result;
}

/// Spawns argv with the given child ends of pipes (-1: inherit).
int spawn(const std::vector<std::string>& argv, int childIn, int childOut, int childErr,
          const std::vector<int>& closeInChild) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (childIn >= 0) posix_spawn_file_actions_adddup2(&actions, childIn, 0);
  if (childOut >= 0) posix_spawn_file_actions_adddup2(&actions, childOut, 1);
  if (childErr >= 0) posix_spawn_file_actions_adddup2(&actions, childErr, 2);
  for (int fd : closeInChild) posix_spawn_file_actions_addclose(&actions, fd);
  pid_t pid = -1;
  std::vector<char*> args = cArgv(argv);
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  return pid;
}

void fillStatus(int status, ProcessResult* result) {
  if (WIFSIGNALED(status)) {
    result->signaled = true;
    result->signal = WTERMSIG(status);
  } else {
    result->exitCode = WEXITSTATUS(status);
  }
}

}  // namespace

ProcessResult runProcess(const std::vector<std::string>& argv, const std::string& input,
                         int timeoutSeconds) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
    throw std::runtime_error("pipe failed");
  int pid = spawn(argv, in[0], out[1], err[1], {});
  close(in[0]);
  close(out[1]);
  close(err[1]);
  ProcessResult result;
  if (pid < 0) {
    close(in[1]);
    close(out[0]);
    close(err[0]);
    result.exitCode = 127;
    result.err = "cannot spawn " + argv[0];
    return result;
  }
  signal(SIGPIPE, SIG_IGN);
  size_t written = 0;
  int inFd = in[1];
  if (input.empty()) {
    close(inFd);
    inFd = -1;
  } else {
    fcntl(inFd, F_SETFL, O_NONBLOCK);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSeconds);
  bool outOpen = true, errOpen = true;
  while (outOpen || errOpen) {
    pollfd fds[3];
    int count = 0;
    if (outOpen) fds[count++] = {out[0], POLLIN, 0};
    if (errOpen) fds[count++] = {err[0], POLLIN, 0};
    if (inFd >= 0) fds[count++] = {inFd, POLLOUT, 0};
    int ready = poll(fds, count, 1000);
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      result.err += "\n[test] killed after timeout\n";
      break;
    }
    if (ready <= 0) continue;
    for (int i = 0; i < count; ++i) {
      if (!fds[i].revents) continue;
      if (fds[i].fd == inFd) {
        ssize_t n = write(inFd, input.data() + written, input.size() - written);
        if (n > 0) written += size_t(n);
        if (n < 0 && errno != EAGAIN) written = input.size();
        if (written == input.size()) {
          close(inFd);
          inFd = -1;
        }
        continue;
      }
      char buffer[65536];
      ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      std::string& sink = fds[i].fd == out[0] ? result.out : result.err;
      if (n > 0) {
        sink.append(buffer, size_t(n));
      } else if (n == 0 || errno != EINTR) {
        (fds[i].fd == out[0] ? outOpen : errOpen) = false;
      }
    }
  }
  if (inFd >= 0) close(inFd);
  close(out[0]);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  fillStatus(status, &result);
  return result;
}

Worker::Worker(const std::vector<std::string>& argv) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) throw std::runtime_error("pipe failed");
  signal(SIGPIPE, SIG_IGN);
  pid_ = spawn(argv, in[0], out[1], -1, {});
  close(in[0]);
  close(out[1]);
  in_ = in[1];
  out_ = out[0];
}

Worker::~Worker() {
  if (pid_ > 0) finish();
}

bool Worker::send(const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(in_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

bool Worker::readLine(std::string* line) {
  while (true) {
    size_t newline = buffered_.find('\n');
    if (newline != std::string::npos) {
      *line = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      return true;
    }
    char buffer[65536];
    ssize_t n = read(out_, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffered_.append(buffer, size_t(n));
  }
}

bool Worker::request(const std::string& line, std::string* reply) {
  return send(line + "\n") && readLine(reply);
}

ProcessResult Worker::finish() {
  ProcessResult result;
  if (in_ >= 0) close(in_);
  in_ = -1;
  std::string rest;
  while (readLine(&rest)) result.out += rest + "\n";
  if (out_ >= 0) close(out_);
  out_ = -1;
  int status = 0;
  if (pid_ > 0) waitpid(pid_, &status, 0);
  pid_ = -1;
  fillStatus(status, &result);
  return result;
}

std::string compilerPath() { return MAIA_COMPILE_PATH; }

std::string readFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << bytes;
}

}  // namespace maia_e2e
