// Faults in device code: a kernel that executes an illegal instruction or
// touches memory it must not is reported as a sticky device error, the way
// an accelerator reports a kernel fault, instead of killing the process.
#pragma once

#include <cstdint>
#include <string>

namespace maia::driver {

/// Installs the SIGSEGV/SIGBUS/SIGILL/SIGFPE handlers once. Only a fault
/// while a core runs a kernel's entry point (inside a KernelCodeScope of a
/// guarded command: the kernel, or anything it calls) is a device error.
/// Any other fault (a host dereference of a device pointer, a bug in a
/// driver copy or fill, a host function that faults) goes to the previous
/// handler and crashes loudly, as a host bug should.
void installFaultHandlers();

/// Marks the calling core as running kernel code for its lifetime: wrap
/// exactly the call of a kernel's entry point. A thread-local store, no
/// syscall. A fault unwinds past it; runGuarded clears the mark then.
class KernelCodeScope {
 public:
  KernelCodeScope();
  ~KernelCodeScope();
  KernelCodeScope(const KernelCodeScope&) = delete;
  KernelCodeScope& operator=(const KernelCodeScope&) = delete;
};

/// Runs fn(context) as a command chunk on a core. Returns false and
/// describes the fault if kernel code faulted (see installFaultHandlers).
/// The fault unwinds with siglongjmp, skipping the kernel's frames and the
/// driver's frames between here and the kernel entry call: those frames
/// must hold no lock and own nothing with a destructor (the kernel-side
/// contract is in maia/kernel_abi.h). No syscall on the normal path.
bool runGuardedImpl(void (*fn)(void*), void* context, std::string* fault);

template <typename Fn>
bool runGuarded(Fn&& fn, std::string* fault) {
  return runGuardedImpl([](void* f) { (*static_cast<Fn*>(f))(); }, &fn, fault);
}

}  // namespace maia::driver
