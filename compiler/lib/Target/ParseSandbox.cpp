//===- ParseSandbox.cpp - Parse MLIR in a forked child --------------------===//
//
// MLIR 19's parser can free memory it later writes to when it recovers from
// some syntax errors (llvm-project #127778, #128011, fixed in 20). The child
// parses first and reports its diagnostics and a verdict over a pipe; only
// input it parsed cleanly is parsed again in the compiler's process.
//
//===----------------------------------------------------------------------===//

#include "ParseSandbox.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <fcntl.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

using namespace mlir;
namespace mc = ::maia::compiler;

namespace {

/// Last byte a preparse child sends after its diagnostics.
constexpr char kPreparseSucceeded = '\x01';
constexpr char kPreparseFailed = '\x02';

} // namespace

mc::ParseSandbox::~ParseSandbox() { reapChildren(/*wait=*/true); }

bool mc::ParseSandbox::preparse(llvm::SourceMgr &sourceMgr,
                                MLIRContext &context,
                                llvm::raw_ostream &diagnostics) {
  reapChildren(/*wait=*/false);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return true; // No isolation available: parse in process.
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return true;
  }
  if (pid == 0) {
    ::close(fds[0]);
    bool parsed;
    {
      // Unbuffered: each diagnostic reaches the parent even if the parser's
      // error recovery then crashes this child.
      llvm::raw_fd_ostream os(fds[1], /*shouldClose=*/false,
                              /*unbuffered=*/true);
      SourceMgrDiagnosticHandler handler(sourceMgr, &context, os);
      parsed = static_cast<bool>(
          parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context)));
      // The verdict trails the diagnostics; closing before _exit lets the
      // parent go on without waiting for this process to be torn down.
      os << (parsed ? kPreparseSucceeded : kPreparseFailed);
    }
    ::close(fds[1]);
    ::_exit(parsed ? 0 : 1);
  }
  ::close(fds[1]);
  children.push_back(pid);
  std::string output;
  char buffer[4096];
  while (true) {
    ssize_t count = ::read(fds[0], buffer, sizeof(buffer));
    if (count < 0 && errno == EINTR)
      continue;
    if (count <= 0)
      break;
    output.append(buffer, size_t(count));
  }
  ::close(fds[0]);
  if (!output.empty() && output.back() == kPreparseSucceeded)
    return true;
  // Without a verdict the child died, possibly in the parser's error
  // recovery after it reported the error: the diagnostics still say why.
  if (!output.empty() && output.back() == kPreparseFailed)
    output.pop_back();
  diagnostics << output;
  if (output.empty())
    diagnostics << "error: internal compiler error: the MLIR parser crashed "
                   "on this input\n";
  return false;
}

void mc::ParseSandbox::reapChildren(bool wait) {
  llvm::erase_if(children, [&](pid_t pid) {
    int status;
    pid_t done;
    while ((done = ::waitpid(pid, &status, wait ? 0 : WNOHANG)) < 0 &&
           errno == EINTR) {
    }
    return done != 0;
  });
}
