// The fallback for passing device memfds between processes when
// pidfd_getfd is refused (no ptrace access to the exporter: Yama
// ptrace_scope >= 1, a non-dumpable exporter, another user): every
// exporting process serves its shareable files over an abstract Unix
// socket with SCM_RIGHTS. Measured here: ~15 us per file against ~1.5 us
// for pidfd_getfd, and a thread per exporter, so it is only the fallback.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>

#include "error.h"

namespace maia::driver::ipc {

/// Starts this process's server (once). shareable(fd) says whether fd may
/// be handed out: only the device memfds and the IPC table, and only to
/// processes of the same effective user.
Status startFdServer(uint64_t instance, std::function<bool(int)> shareable);

/// Asks process pid's server (of the given instance) for its file fd.
Status requestFd(pid_t pid, uint64_t instance, int fd, const char* what, int* out_fd);

}  // namespace maia::driver::ipc
