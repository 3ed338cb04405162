//===- Linker.h - Link MAIA kernel objects with lld -------------*- C++ -*-===//
//
// Private to libMaiaCompiler: turns a relocatable object into a .maiabin
// with lld running inside this process.
//
//===----------------------------------------------------------------------===//

#ifndef MAIA_LIB_TARGET_LINKER_H
#define MAIA_LIB_TARGET_LINKER_H

#include "Ukernels.h"

#include "llvm/ADT/StringRef.h"

#include <string>

namespace maia::compiler {

/// Links objects into shared objects through a private temporary directory
/// (lld reads and writes files), which lives as long as the linker.
class Linker {
public:
  Linker() = default;
  ~Linker();
  Linker(const Linker &) = delete;
  Linker &operator=(const Linker &) = delete;

  /// Links `object` into a shared object, with the members of the
  /// micro-kernel archive it calls (if any); returns false with `error` set.
  bool link(llvm::StringRef object, const UkernelLibrary &ukernels,
            std::string &binary, std::string &error);

private:
  std::string tempDir;
  unsigned linkCounter = 0;
};

} // namespace maia::compiler

#endif // MAIA_LIB_TARGET_LINKER_H
