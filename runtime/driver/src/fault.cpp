#include "fault.h"

#include <setjmp.h>
#include <signal.h>

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

/// Whether this thread is inside a KernelCodeScope: read by the signal
/// handler on the same thread (a plain thread-local, async-signal-safe).
thread_local bool t_in_kernel = false;

void onFault(int signal, siginfo_t* info, void* context) {
  if (t_jump != nullptr && t_in_kernel) {
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

KernelCodeScope::KernelCodeScope() { t_in_kernel = true; }

KernelCodeScope::~KernelCodeScope() { t_in_kernel = false; }

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
    t_in_kernel = false;  // the fault skipped the scope's destructor
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
