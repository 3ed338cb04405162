#include "ops/HostRouting.h"

#include <cstring>

namespace torch_maia::ops::routing {

c10::OperatorHandle findOperator(const char* name) {
  const char* dot = std::strchr(name, '.');
  const std::string base = "aten::" + (dot ? std::string(name, dot) : std::string(name));
  return c10::Dispatcher::singleton().findSchemaOrThrow(base.c_str(), dot ? dot + 1 : "");
}

}  // namespace torch_maia::ops::routing
