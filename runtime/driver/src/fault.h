// Faults in device code: a kernel that executes an illegal instruction or
// touches memory it must not is reported as a sticky device error, the way
// an accelerator reports a kernel fault, instead of killing the process.
#pragma once

#include <string>

namespace maia::driver {

/// Installs the SIGSEGV/SIGBUS/SIGILL/SIGFPE handlers once. Faults outside
/// device code are passed to the previous handler (so a host dereference of
/// a device pointer still crashes the host, as on silicon).
void installFaultHandlers();

/// Runs fn(context) as device code. Returns false and describes the fault
/// if it faulted. No syscall on the normal path.
bool runGuardedImpl(void (*fn)(void*), void* context, std::string* fault);

template <typename Fn>
bool runGuarded(Fn&& fn, std::string* fault) {
  return runGuardedImpl([](void* f) { (*static_cast<Fn*>(f))(); }, &fn, fault);
}

}  // namespace maia::driver
