#include "fault.h"

#include <setjmp.h>
#include <signal.h>
#include <ucontext.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <sstream>

namespace maia::driver {
namespace {

constexpr int kFaultSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};

thread_local sigjmp_buf* t_jump = nullptr;
thread_local int t_signal = 0;
thread_local void* t_address = nullptr;

struct sigaction g_previous[NSIG];

/// Code ranges of loaded kernel binaries, read by the signal handler:
/// fixed slots of atomics, so the handler takes no lock and allocates
/// nothing. A free slot has begin 0. Registration (module load and
/// unload) is rare and serialized.
constexpr size_t kCodeRangeSlots = 8192;
struct CodeRange {
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};
};
CodeRange g_code[kCodeRangeSlots];
std::mutex g_code_mutex;

bool inKernelCode(uintptr_t address) {
  for (const CodeRange& range : g_code) {
    uintptr_t begin = range.begin.load(std::memory_order_acquire);
    if (begin != 0 && address >= begin && address < range.end.load(std::memory_order_relaxed))
      return true;
  }
  return false;
}

/// Whether the fault interrupted kernel code: the faulting instruction is
/// in a kernel binary, or in a leaf function it called (return address on
/// top of the stack). The stack is read only between the stack pointer and
/// the guard's frame: memory of this thread's stack that a core's own
/// frames occupy.
bool inDeviceCode(const ucontext_t* context) {
  auto pc = static_cast<uintptr_t>(context->uc_mcontext.gregs[REG_RIP]);
  if (inKernelCode(pc)) return true;
  auto sp = static_cast<uintptr_t>(context->uc_mcontext.gregs[REG_RSP]);
  auto guard = reinterpret_cast<uintptr_t>(t_jump);
  if (sp % alignof(uintptr_t) != 0 || sp >= guard || guard - sp > (uintptr_t{8} << 20))
    return false;
  return inKernelCode(*reinterpret_cast<const uintptr_t*>(sp));
}

void onFault(int signal, siginfo_t* info, void* context) {
  if (t_jump != nullptr && inDeviceCode(static_cast<const ucontext_t*>(context))) {
    t_signal = signal;
    t_address = info->si_addr;
    siglongjmp(*t_jump, 1);
  }
  // Not device code (a driver copy or fill, a host function, a host
  // thread): behave as if we had never been installed, so it crashes.
  const struct sigaction& previous = g_previous[signal];
  if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(signal, info, context);
    return;
  }
  if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signal);
    return;
  }
  ::signal(signal, SIG_DFL);
  raise(signal);
}

const char* signalName(int signal) {
  switch (signal) {
    case SIGSEGV: return "SIGSEGV (invalid memory access)";
    case SIGBUS: return "SIGBUS (bus error)";
    case SIGILL: return "SIGILL (illegal instruction)";
    case SIGFPE: return "SIGFPE (arithmetic fault)";
    default: return "an unexpected signal";
  }
}

}  // namespace

bool registerKernelCode(uintptr_t begin, uintptr_t end) {
  std::lock_guard lock(g_code_mutex);
  for (CodeRange& range : g_code) {
    if (range.begin.load(std::memory_order_relaxed) != 0) continue;
    range.end.store(end, std::memory_order_relaxed);
    range.begin.store(begin, std::memory_order_release);
    return true;
  }
  return false;
}

void unregisterKernelCode(uintptr_t begin) {
  std::lock_guard lock(g_code_mutex);
  for (CodeRange& range : g_code)
    if (range.begin.load(std::memory_order_relaxed) == begin) {
      range.begin.store(0, std::memory_order_release);
      return;
    }
}

void installFaultHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int signal : kFaultSignals) {
      struct sigaction action = {};
      action.sa_sigaction = onFault;
      // SA_NODEFER: the signal stays unblocked while we jump out of the
      // handler, so sigsetjmp need not save the mask (a syscall per chunk).
      action.sa_flags = SA_SIGINFO | SA_NODEFER;
      sigemptyset(&action.sa_mask);
      sigaction(signal, &action, &g_previous[signal]);
    }
  });
}

bool runGuardedImpl(void (*fn)(void*), void* context, std::string* fault) {
  sigjmp_buf jump;
  sigjmp_buf* const outer = t_jump;
  if (sigsetjmp(jump, /*savemask=*/0) != 0) {
    t_jump = outer;
    // SA_NODEFER should have left the signal unblocked, but interposers
    // (ThreadSanitizer's handler wrapper) may not honour it; a fault signal
    // left blocked would kill the process at the next fault. Only faults
    // pay this syscall.
    sigset_t faults;
    sigemptyset(&faults);
    for (int signal : kFaultSignals) sigaddset(&faults, signal);
    pthread_sigmask(SIG_UNBLOCK, &faults, nullptr);
    std::ostringstream os;
    os << "device code raised " << signalName(t_signal) << " at address " << t_address;
    *fault = os.str();
    return false;
  }
  t_jump = &jump;
  fn(context);
  t_jump = outer;
  return true;
}

}  // namespace maia::driver
