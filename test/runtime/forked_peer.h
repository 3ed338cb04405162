// A second process for the driver's inter-process tests, forked before
// either process touches the driver (a child of an initialized driver is
// refused), talking to the test over a socket pair.
#pragma once

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>

#include "test_util.h"

namespace maia_test {

/// The other process of a test, forked before the driver is initialized;
/// the two talk over a socket pair. The child's gtest failures are printed
/// by the child and turn into its exit status.
class Peer {
 public:
  explicit Peer(const std::function<void(Peer&)>& body) {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) std::abort();
    pid_ = fork();
    if (pid_ == 0) {
      close(fds[0]);
      fd_ = fds[1];
      body(*this);
      _exit(::testing::Test::HasFailure() ? 1 : 0);
    }
    close(fds[1]);
    fd_ = fds[0];
  }
  ~Peer() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(fd_);
  }

  template <typename T>
  void send(const T& value) {
    ASSERT_EQ(write(fd_, &value, sizeof(T)), static_cast<ssize_t>(sizeof(T)));
  }
  template <typename T>
  T receive() {
    T value{};
    size_t got = 0;
    while (got < sizeof(T)) {
      ssize_t n = read(fd_, reinterpret_cast<char*>(&value) + got, sizeof(T) - got);
      if (n <= 0) {
        ADD_FAILURE() << "the other process hung up";
        return value;
      }
      got += n;
    }
    return value;
  }

  /// Waits for the child; true if it exited cleanly with no failure.
  bool join() {
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  /// Waits for the child to exit, leaving it a zombie (not reaped).
  void waitExited() {
    siginfo_t info{};
    waitid(P_PID, pid_, &info, WEXITED | WNOWAIT);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  bool reaped_ = false;
};

enum Signal : int { kReady = 1, kEnqueued, kDone, kExit };

}  // namespace maia_test
