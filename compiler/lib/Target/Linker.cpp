//===- Linker.cpp - Link MAIA kernel objects with lld ---------------------===//
//
// Runs lld's ELF driver (linked into the compiler, so no ld.lld needs to be
// installed next to it) in a forked child per link, and reads the linked
// shared object back. Undefined
// symbols are resolved against libc and libm and the micro-kernel archive
// (whose members only a kernel calling them pulls in, with the C++ runtime
// and TLS support they need), so a kernel calling anything else fails here
// rather than when the driver loads it.
//
//===----------------------------------------------------------------------===//

#include "Linker.h"

#include "lld/Common/Driver.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

LLD_HAS_DRIVER(elf)

namespace mc = ::maia::compiler;

namespace {

/// Runs lld in a forked child, which exits afterwards, so the link leaves
/// nothing behind in this process. lld 19 keeps global state between
/// in-process runs: after a link with a TLS segment, a later in-process
/// link corrupted a few bytes of unrelated outputs (their .maia.meta JSON;
/// 2-4 binaries in 300 alternating compiles), a failed link can leave it
/// unable to run again, and every run resets the process's llvm::cl
/// options. The fork costs about 4 ms per kernel (docs/compiler.md). The
/// child is single-threaded: one lld thread.
lld::Result linkInChild(std::vector<const char *> args,
                        const std::string &logPath, std::string &messages) {
  args.push_back("--threads=1");
  lld::Result result;
  result.retCode = 1;
  pid_t child = fork();
  if (child < 0) {
    messages = "cannot fork the linker process: " +
               std::string(std::strerror(errno)) + "\n";
    return result;
  }
  if (child == 0) {
    std::error_code ec;
    llvm::raw_fd_ostream log(logPath, ec);
    lld::Result childResult =
        ec ? lld::Result{1, false}
           : lld::lldMain(args, log, log, {{lld::Gnu, &lld::elf::link}});
    log.flush();
    _exit(childResult.retCode == 0 ? 0 : 1);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (auto log = llvm::MemoryBuffer::getFile(logPath))
    messages = (*log)->getBuffer().str();
  llvm::sys::fs::remove(logPath);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    result.retCode = 0;
  else if (WIFSIGNALED(status))
    messages += "the linker process died of signal " +
                std::to_string(WTERMSIG(status)) + "\n";
  return result;
}

} // namespace

mc::Linker::~Linker() {
  if (!tempDir.empty())
    llvm::sys::fs::remove_directories(tempDir);
}

bool mc::Linker::link(llvm::StringRef object, const UkernelLibrary &ukernels,
                      std::string &binary, std::string &error) {
  if (tempDir.empty()) {
    llvm::SmallString<128> dir;
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory("maia-compile", dir)) {
      error = "cannot create a temporary directory: " + ec.message();
      return false;
    }
    tempDir = dir.str().str();
  }
  std::string stem = tempDir + "/k" + std::to_string(linkCounter++);
  std::string objectPath = stem + ".o", outputPath = stem + ".maiabin";
  auto cleanup = llvm::make_scope_exit([&] {
    llvm::sys::fs::remove(objectPath);
    llvm::sys::fs::remove(outputPath);
  });
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(objectPath, ec);
    if (ec) {
      error = "cannot write " + objectPath + ": " + ec.message();
      return false;
    }
    os << object;
    os.close();
    if (os.has_error()) {
      error = "cannot write " + objectPath + ": " + os.error().message();
      os.clear_error();
      return false;
    }
  }
  std::vector<const char *> args = {
      "ld.lld", "-shared",     "--hash-style=gnu", "-z",  "noexecstack",
      "-z",     "relro",       "-z",               "now", "--build-id=none",
      "-o",     outputPath.c_str(), objectPath.c_str()};
  // Kernels may call the C and math libraries (memref.alloc -> malloc, math
  // ops without an approximation -> libm); any other undefined symbol (a
  // runtime helper such as printF32 or memrefCopy) is a link error here
  // rather than a load failure in the driver.
  std::vector<const char *> systemLibraries = {
      "/lib/x86_64-linux-gnu/libm.so.6", "/lib/x86_64-linux-gnu/libc.so.6"};
  // A kernel calling a micro-kernel names it in its string table. Only such
  // kernels link the archive and what its code needs (it is the eager
  // GEMM's: per-thread packing buffers, TLS freed at thread exit through
  // libstdc++), so every other kernel links as before.
  bool callsUkernel = object.contains("maia_ukernel_");
  if (callsUkernel && !ukernels.path.empty()) {
    args.push_back(ukernels.path.c_str());
    systemLibraries.push_back("/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
    systemLibraries.push_back("/lib64/ld-linux-x86-64.so.2");
    // With TLS, lld 19 sizes PT_PHDR for one more segment than it emits
    // when -z now leaves the writable non-RELRO segment empty, and the
    // driver refuses a PT_PHDR that disagrees with the header. Lazy binding
    // keeps .got.plt in that segment; the driver binds every symbol at load
    // time regardless.
    args.push_back("-z");
    args.push_back("lazy");
  }
  bool haveSystemLibraries = true;
  for (const char *library : systemLibraries)
    haveSystemLibraries &= llvm::sys::fs::exists(library);
  if (haveSystemLibraries) {
    args.push_back("--no-undefined");
    args.push_back("--as-needed");
    for (const char *library : systemLibraries)
      args.push_back(library);
  }
  std::string messages;
  lld::Result result = linkInChild(args, stem + ".log", messages);
  if (result.retCode != 0) {
    error = "linking with lld failed: " + messages;
    if (callsUkernel && ukernels.path.empty())
      error += "the kernel calls a micro-kernel, but " +
               ukernels.missingReason + "\n";
    return false;
  }
  auto buffer = llvm::MemoryBuffer::getFile(outputPath, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = "cannot read the linked binary: " + buffer.getError().message();
    return false;
  }
  binary = (*buffer)->getBuffer().str();
  return true;
}
