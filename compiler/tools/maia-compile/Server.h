//===- Server.h - The maia-compile worker protocol --------------*- C++ -*-===//

#ifndef MAIA_TOOLS_MAIA_COMPILE_SERVER_H
#define MAIA_TOOLS_MAIA_COMPILE_SERVER_H

#include <cstddef>

namespace maia::compiler {

/// Serves compile requests, one JSON object per line on fd `in`, one reply
/// line per request on fd `out`, until end of input or a "shutdown" request
/// (docs/compiler.md, "The compile worker"). A request longer than
/// `maxRequestBytes` is answered with an error and skipped. Returns the
/// process exit code.
int runServer(int in, int out, size_t maxRequestBytes);

} // namespace maia::compiler

#endif // MAIA_TOOLS_MAIA_COMPILE_SERVER_H
