#include "ipc_fd_server.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

namespace maia::driver::ipc {
namespace {

/// An abstract socket (no file to clean up after a crash); the instance in
/// the name keeps a reused pid from answering for the exporter.
sockaddr_un addressOf(pid_t pid, uint64_t instance, socklen_t* out_length) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  int length = std::snprintf(address.sun_path + 1, sizeof(address.sun_path) - 1,
                             "maia-ipc-%d-%016llx", static_cast<int>(pid),
                             static_cast<unsigned long long>(instance));
  *out_length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + length);
  return address;
}

/// One request: the file number (int32); the reply: 0 and the file, or
/// errno without one.
void serve(int connection, const std::function<bool(int)>& shareable) {
  ucred peer{};
  socklen_t size = sizeof(peer);
  int32_t wanted = -1;
  if (getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 ||
      recv(connection, &wanted, sizeof(wanted), MSG_WAITALL) != sizeof(wanted))
    return;
  const bool allowed = (peer.uid == geteuid() || peer.uid == 0) && shareable(wanted);
  int32_t reply = allowed ? 0 : EPERM;
  iovec payload{&reply, sizeof(reply)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &payload;
  message.msg_iovlen = 1;
  if (allowed) {
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &wanted, sizeof(int));
  }
  sendmsg(connection, &message, MSG_NOSIGNAL);
}

}  // namespace

Status startFdServer(uint64_t instance, std::function<bool(int)> shareable) {
  int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  socklen_t length = 0;
  sockaddr_un address = addressOf(getpid(), instance, &length);
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      listen(listener, 16) != 0) {
    const int error = errno;
    if (listener >= 0) close(listener);
    return makeError(maiaErrorInitialization, "cannot start the IPC file server: ",
                     std::strerror(error));
  }
  // Detached: it lives as long as the process, blocked in accept.
  std::thread([listener, shareable = std::move(shareable)] {
    while (true) {
      int connection = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (connection < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;
      }
      serve(connection, shareable);
      close(connection);
    }
  }).detach();
  return {};
}

Status requestFd(pid_t pid, uint64_t instance, int fd, const char* what, int* out_fd) {
  int connection = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  socklen_t length = 0;
  sockaddr_un address = addressOf(pid, instance, &length);
  if (connection < 0 ||
      connect(connection, reinterpret_cast<sockaddr*>(&address), length) != 0) {
    const int error = errno;
    if (connection >= 0) close(connection);
    return makeError(maiaErrorInvalidValue, what, ": no ptrace access to process ", pid,
                     " for pidfd_getfd, and its IPC file server cannot be reached: ",
                     std::strerror(error));
  }
  int32_t wanted = fd, reply = -1;
  iovec payload{&reply, sizeof(reply)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &payload;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  const bool exchanged = send(connection, &wanted, sizeof(wanted), MSG_NOSIGNAL) ==
                             sizeof(wanted) &&
                         recvmsg(connection, &message, MSG_WAITALL | MSG_CMSG_CLOEXEC) ==
                             sizeof(reply);
  close(connection);
  cmsghdr* header = exchanged ? CMSG_FIRSTHDR(&message) : nullptr;
  if (reply != 0 || header == nullptr || header->cmsg_type != SCM_RIGHTS)
    return makeError(maiaErrorInvalidValue, what, ": process ", pid,
                     "'s IPC file server refused file ", fd,
                     " (it serves only its device memory and IPC table, to its own user)");
  std::memcpy(out_fd, CMSG_DATA(header), sizeof(int));
  return {};
}

}  // namespace maia::driver::ipc
