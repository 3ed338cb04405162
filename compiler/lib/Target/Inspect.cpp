//===- Inspect.cpp - Validate a MAIA kernel binary ------------------------===//
//
// Checks a .maiabin the way the driver's loader will, without loading it:
// ELF shape, the exported symbols, the metadata schema, and the target
// features against the host CPU.
//
//===----------------------------------------------------------------------===//

#include "maia/Compiler/Compiler.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/TargetParser/Host.h"

namespace mc = maia::compiler;
using llvm::json::Array;
using llvm::json::Object;

namespace {

constexpr int64_t kMaxRank = 8;
const char *const kDtypes[] = {"i1",  "i8",   "i16", "i32", "i64",  "ui8",
                               "f16", "bf16", "f32", "f64", "index"};

/// Validates the metadata JSON; returns an empty string or the problem.
std::string checkMetadata(const llvm::json::Value &root,
                          const llvm::StringSet<> &exported,
                          const llvm::StringSet<> &functions) {
  const Object *object = root.getAsObject();
  if (!object)
    return "metadata: the top level is not a JSON object";
  if (object->getString("format") != llvm::StringRef("maia-kernel-binary"))
    return "metadata: 'format' is not \"maia-kernel-binary\"";
  if (object->getInteger("format_version") != int64_t(1))
    return "metadata: 'format_version' is not 1 (the version this compiler "
           "and driver read)";
  if (!object->getString("compiler"))
    return "metadata: 'compiler' is missing or not a string";
  const Object *target = object->getObject("target");
  if (!target || !target->getString("cpu") || !target->getArray("features"))
    return "metadata: 'target' needs a string 'cpu' and an array 'features'";
  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  for (const llvm::json::Value &feature : *target->getArray("features")) {
    std::optional<llvm::StringRef> name = feature.getAsString();
    if (!name || name->empty())
      return "metadata: target features must be non-empty strings";
    if (name->starts_with("-"))
      continue;
    llvm::StringRef bare = name->ltrim('+');
    if (!host.lookup(bare))
      return "the binary requires target feature '" + bare.str() +
             "' but the host CPU (" + llvm::sys::getHostCPUName().str() +
             ") lacks it";
  }
  const Array *kernels = object->getArray("kernels");
  if (!kernels)
    return "metadata: 'kernels' is missing or not an array";
  llvm::StringSet<> names;
  for (auto [index, value] : llvm::enumerate(*kernels)) {
    std::string where = "metadata: kernel " + std::to_string(index);
    const Object *kernel = value.getAsObject();
    if (!kernel)
      return where + " is not an object";
    std::optional<llvm::StringRef> name = kernel->getString("name");
    std::optional<llvm::StringRef> symbol = kernel->getString("symbol");
    if (!name || name->empty() || !symbol || symbol->empty())
      return where + " needs non-empty 'name' and 'symbol' strings";
    where += " ('" + name->str() + "')";
    if (!names.insert(*name).second)
      return where + ": duplicate kernel name";
    if (!exported.contains(*symbol))
      return where + ": symbol '" + symbol->str() +
             "' is not exported by the binary";
    if (!functions.contains(*symbol))
      return where + ": symbol '" + symbol->str() + "' is not a function";
    std::optional<int64_t> gridRank = kernel->getInteger("grid_rank");
    if (!gridRank || *gridRank < 1 || *gridRank > 3)
      return where + ": 'grid_rank' must be 1, 2 or 3";
    const Array *args = kernel->getArray("args");
    if (!args)
      return where + ": 'args' is missing or not an array";
    for (auto [argIndex, argValue] : llvm::enumerate(*args)) {
      std::string argWhere = where + ", arg " + std::to_string(argIndex);
      const Object *arg = argValue.getAsObject();
      if (!arg)
        return argWhere + " is not an object";
      std::optional<llvm::StringRef> kind = arg->getString("kind");
      std::optional<llvm::StringRef> dtype = arg->getString("dtype");
      if (!dtype || llvm::find(kDtypes, *dtype) == std::end(kDtypes))
        return argWhere + ": missing or unknown 'dtype'";
      if (kind == llvm::StringRef("scalar"))
        continue;
      if (kind != llvm::StringRef("memref"))
        return argWhere + ": 'kind' must be \"memref\" or \"scalar\"";
      std::optional<int64_t> rank = arg->getInteger("rank");
      const Array *strides = arg->getArray("strides");
      if (!rank || *rank < 0 || *rank > kMaxRank || !strides ||
          int64_t(strides->size()) != *rank)
        return argWhere + ": needs a 'rank' in 0..8 and that many 'strides'";
      for (const llvm::json::Value &stride : *strides)
        if (stride.kind() != llvm::json::Value::Null && !stride.getAsInteger())
          return argWhere + ": strides must be integers or null";
    }
  }
  return "";
}

template <typename ELFT>
bool inspectELF(const llvm::object::ELFObjectFile<ELFT> &file,
                std::string &metadata, std::string &error) {
  const auto &elf = file.getELFFile();
  const auto &header = elf.getHeader();
  if (header.e_type != llvm::ELF::ET_DYN) {
    error = "not a shared object (ELF type " + std::to_string(header.e_type) +
            "): kernel binaries are linked with -shared";
    return false;
  }
  if (header.e_machine != llvm::ELF::EM_X86_64) {
    error = "built for ELF machine " + std::to_string(header.e_machine) +
            ", not x86-64";
    return false;
  }
  auto segments = elf.program_headers();
  if (!segments) {
    error = "bad program headers: " + llvm::toString(segments.takeError());
    return false;
  }
  bool stack = false, dynamic = false;
  for (const auto &segment : *segments) {
    if (segment.p_type == llvm::ELF::PT_GNU_STACK) {
      stack = true;
      if (segment.p_flags & llvm::ELF::PF_X) {
        error = "the PT_GNU_STACK segment requests an executable stack";
        return false;
      }
    }
    dynamic |= segment.p_type == llvm::ELF::PT_DYNAMIC;
  }
  if (!stack || !dynamic) {
    error = stack ? "no PT_DYNAMIC segment: not a dynamic shared object"
                  : "no PT_GNU_STACK segment";
    return false;
  }

  std::optional<llvm::StringRef> section;
  for (const llvm::object::SectionRef &candidate : file.sections()) {
    llvm::Expected<llvm::StringRef> name = candidate.getName();
    if (!name) {
      error = "bad section name: " + llvm::toString(name.takeError());
      return false;
    }
    if (*name != ".maia.meta")
      continue;
    if (section) {
      error = "more than one .maia.meta section";
      return false;
    }
    llvm::Expected<llvm::StringRef> contents = candidate.getContents();
    if (!contents) {
      error = "unreadable .maia.meta section: " +
              llvm::toString(contents.takeError());
      return false;
    }
    section = *contents;
  }
  if (!section) {
    error = "no .maia.meta section: not a MAIA kernel binary";
    return false;
  }

  // Defined dynamic symbols: what dlsym can find.
  llvm::StringSet<> exported, functions;
  for (const llvm::object::ELFSymbolRef &symbol :
       file.getDynamicSymbolIterators()) {
    llvm::Expected<llvm::StringRef> name = symbol.getName();
    if (!name) {
      error = "bad dynamic symbol name: " + llvm::toString(name.takeError());
      return false;
    }
    llvm::Expected<llvm::object::section_iterator> where = symbol.getSection();
    if (!where) {
      error = "bad section of dynamic symbol '" + name->str() +
              "': " + llvm::toString(where.takeError());
      return false;
    }
    if (*where == file.section_end())
      continue;
    exported.insert(*name);
    if (symbol.getELFType() == llvm::ELF::STT_FUNC)
      functions.insert(*name);
  }
  if (!exported.contains("maia_metadata")) {
    error = "the binary does not export the symbol 'maia_metadata'";
    return false;
  }

  llvm::StringRef text = section->rtrim('\0');
  if (text.empty()) {
    error = "the .maia.meta section is empty";
    return false;
  }
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  if (!json) {
    error = "metadata is not valid JSON: " + llvm::toString(json.takeError());
    return false;
  }
  error = checkMetadata(*json, exported, functions);
  if (!error.empty())
    return false;
  metadata = llvm::formatv("{0:2}", *json).str();
  return true;
}

} // namespace

bool mc::inspectBinary(std::string_view bytes, std::string &metadata,
                       std::string &error) {
  if (bytes.empty()) {
    error = "the file is empty: not a MAIA kernel binary";
    return false;
  }
  llvm::MemoryBufferRef buffer(llvm::StringRef(bytes.data(), bytes.size()),
                               "binary");
  auto object = llvm::object::ObjectFile::createObjectFile(buffer);
  if (!object) {
    error = "not a valid ELF file: " + llvm::toString(object.takeError());
    return false;
  }
  auto *elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(object->get());
  if (!elf) {
    error = "not a 64-bit little-endian ELF file";
    return false;
  }
  return inspectELF(*elf, metadata, error);
}
