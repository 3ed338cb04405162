#include "metadata.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <unordered_map>

namespace maia::driver {
namespace {

using Json = nlohmann::json;

struct DtypeInfo {
  maiaDtype dtype;
  const char* name;
  size_t size;
};

// Indexed by maiaDtype.
constexpr DtypeInfo kDtypes[] = {
    {maiaDtypeI1, "i1", 1},     {maiaDtypeI8, "i8", 1},       {maiaDtypeI16, "i16", 2},
    {maiaDtypeI32, "i32", 4},   {maiaDtypeI64, "i64", 8},     {maiaDtypeU8, "ui8", 1},
    {maiaDtypeF16, "f16", 2},   {maiaDtypeBF16, "bf16", 2},   {maiaDtypeF32, "f32", 4},
    {maiaDtypeF64, "f64", 8},   {maiaDtypeIndex, "index", 8},
    {maiaDtypeC64, "c64", 8},   {maiaDtypeC128, "c128", 16},
};
constexpr size_t kDtypeCount = sizeof(kDtypes) / sizeof(kDtypes[0]);

constexpr bool dtypesIndexedByEnum() {
  for (size_t i = 0; i < kDtypeCount; ++i)
    if (static_cast<size_t>(kDtypes[i].dtype) != i) return false;
  return true;
}
static_assert(dtypesIndexedByEnum(), "kDtypes must be indexed by maiaDtype");

const DtypeInfo* findDtype(maiaDtype dtype) {
  auto index = static_cast<size_t>(dtype);
  return index < kDtypeCount ? &kDtypes[index] : nullptr;
}

std::string dtypeNameList() {
  std::string list;
  for (const DtypeInfo& info : kDtypes) list += std::string(list.empty() ? "" : ", ") + info.name;
  return list;
}

/// Walks the parsed JSON. `where` strings locate a value for messages, e.g.
/// "kernel 2 ('add_f32'), arg 1".
class MetadataParser {
 public:
  explicit MetadataParser(const std::string& origin) : origin_(origin) {}

  Status parse(const Json& root, Metadata* out) {
    if (!root.is_object())
      return fail("", "the top level must be a JSON object, not ", root.type_name());
    std::string format;
    MAIA_RETURN_IF_ERROR(getString(root, "format", "", &format));
    if (format != kMetadataFormat)
      return fail("", "format is '", format, "', expected '", kMetadataFormat, "'");
    // The version is checked before anything else in the schema: a future
    // version may lay out everything below differently.
    int64_t version;
    MAIA_RETURN_IF_ERROR(getInt(root, "format_version", "", &version));
    if (version != MAIA_METADATA_FORMAT_VERSION)
      return makeError(maiaErrorUnsupportedImage, origin_, ": metadata format_version ", version,
                       " is not supported: this driver reads format_version ",
                       MAIA_METADATA_FORMAT_VERSION);
    MAIA_RETURN_IF_ERROR(getString(root, "compiler", "", &out->compiler));
    MAIA_RETURN_IF_ERROR(parseTarget(root, out));

    const Json* kernels;
    MAIA_RETURN_IF_ERROR(member(root, "kernels", Json::value_t::array, "", &kernels));
    std::unordered_map<std::string, size_t> index_of_name;
    out->kernels.resize(kernels->size());
    for (size_t i = 0; i < kernels->size(); ++i) {
      maiaKernel& kernel = out->kernels[i];
      MAIA_RETURN_IF_ERROR(parseKernel((*kernels)[i], i, &kernel));
      auto [it, inserted] = index_of_name.emplace(kernel.name, i);
      if (!inserted)
        return fail(kernelLabel(i, kernel.name), "duplicate kernel name (kernel ", it->second,
                    " has it too)");
    }
    return {};
  }

 private:
  template <typename... Parts>
  Status fail(const std::string& where, const Parts&... parts) const {
    return makeError(maiaErrorInvalidImage, origin_, ": metadata: ", where,
                     where.empty() ? "" : ": ", parts...);
  }

  static std::string kernelLabel(size_t index, const std::string& name) {
    std::string label = "kernel " + std::to_string(index);
    if (!name.empty()) label += " ('" + name + "')";
    return label;
  }

  static const char* typeName(Json::value_t type) {
    switch (type) {
      case Json::value_t::object: return "an object";
      case Json::value_t::array: return "an array";
      case Json::value_t::string: return "a string";
      case Json::value_t::number_integer: return "an integer";
      default: return "a value";
    }
  }

  Status member(const Json& object, const char* key, Json::value_t type,
                const std::string& where, const Json** out) const {
    auto it = object.find(key);
    if (it == object.end()) return fail(where, "missing key '", key, "'");
    bool matches = type == Json::value_t::number_integer ? it->is_number_integer()
                                                         : it->type() == type;
    if (!matches)
      return fail(where, "key '", key, "' must be ", typeName(type), ", not ", it->type_name());
    *out = &*it;
    return {};
  }

  /// A non-empty string without NUL characters: the driver hands names to C
  /// callers and to dlsym as C strings.
  Status getString(const Json& object, const char* key, const std::string& where,
                   std::string* out) const {
    const Json* value;
    MAIA_RETURN_IF_ERROR(member(object, key, Json::value_t::string, where, &value));
    const auto& text = value->get_ref<const std::string&>();
    if (text.empty()) return fail(where, "key '", key, "' must not be empty");
    if (text.find('\0') != std::string::npos)
      return fail(where, "key '", key, "' contains a NUL character");
    *out = text;
    return {};
  }

  Status toInt(const Json& value, const std::string& what, const std::string& where,
               int64_t* out) const {
    if (!value.is_number_integer())
      return fail(where, what, " must be an integer, not ", value.type_name());
    if (value.is_number_unsigned() &&
        value.get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()})
      return fail(where, what, " is out of range");
    *out = value.get<int64_t>();
    return {};
  }

  Status getInt(const Json& object, const char* key, const std::string& where,
                int64_t* out) const {
    const Json* value;
    MAIA_RETURN_IF_ERROR(member(object, key, Json::value_t::number_integer, where, &value));
    return toInt(*value, std::string("key '") + key + "'", where, out);
  }

  Status parseTarget(const Json& root, Metadata* out) const {
    const Json* target;
    MAIA_RETURN_IF_ERROR(member(root, "target", Json::value_t::object, "", &target));
    MAIA_RETURN_IF_ERROR(getString(*target, "cpu", "target", &out->target_cpu));
    const Json* features;
    MAIA_RETURN_IF_ERROR(member(*target, "features", Json::value_t::array, "target", &features));
    for (size_t i = 0; i < features->size(); ++i) {
      const Json& feature = (*features)[i];
      if (!feature.is_string() || feature.get_ref<const std::string&>().empty())
        return fail("target", "features[", i, "] must be a non-empty string");
      out->target_features.push_back(feature.get<std::string>());
    }
    return {};
  }

  Status parseKernel(const Json& json, size_t index, maiaKernel* out) const {
    std::string where = kernelLabel(index, "");
    if (!json.is_object()) return fail(where, "must be an object, not ", json.type_name());
    MAIA_RETURN_IF_ERROR(getString(json, "name", where, &out->name));
    where = kernelLabel(index, out->name);
    MAIA_RETURN_IF_ERROR(getString(json, "symbol", where, &out->symbol));
    int64_t grid_rank;
    MAIA_RETURN_IF_ERROR(getInt(json, "grid_rank", where, &grid_rank));
    if (grid_rank < 1 || grid_rank > 3)
      return fail(where, "grid_rank ", grid_rank, " is not 1, 2 or 3");
    out->grid_rank = static_cast<int>(grid_rank);

    const Json* args;
    MAIA_RETURN_IF_ERROR(member(json, "args", Json::value_t::array, where, &args));
    out->args.resize(args->size());
    for (size_t i = 0; i < args->size(); ++i)
      MAIA_RETURN_IF_ERROR(
          parseArg((*args)[i], where + ", arg " + std::to_string(i), &out->args[i]));
    return {};
  }

  Status parseArg(const Json& json, const std::string& where, ArgSpec* out) const {
    if (!json.is_object()) return fail(where, "must be an object, not ", json.type_name());
    std::string kind, dtype;
    MAIA_RETURN_IF_ERROR(getString(json, "kind", where, &kind));
    MAIA_RETURN_IF_ERROR(getString(json, "dtype", where, &dtype));
    const DtypeInfo* info = nullptr;
    for (const DtypeInfo& candidate : kDtypes)
      if (dtype == candidate.name) info = &candidate;
    if (!info)
      return fail(where, "unknown dtype '", dtype, "' (known: ", dtypeNameList(), ")");
    out->dtype = info->dtype;
    out->strides.fill(0);
    if (kind == "scalar") {
      out->kind = maiaArgScalar;
      out->rank = 0;
      return {};
    }
    if (kind != "memref")
      return fail(where, "unknown kind '", kind, "' (expected 'memref' or 'scalar')");
    out->kind = maiaArgMemref;

    int64_t rank;
    MAIA_RETURN_IF_ERROR(getInt(json, "rank", where, &rank));
    if (rank < 0 || rank > MAIA_MAX_RANK)
      return fail(where, "rank ", rank, " is outside 0..", MAIA_MAX_RANK);
    out->rank = static_cast<int32_t>(rank);
    const Json* strides;
    MAIA_RETURN_IF_ERROR(member(json, "strides", Json::value_t::array, where, &strides));
    if (strides->size() != static_cast<size_t>(rank))
      return fail(where, "has ", strides->size(), " strides for rank ", rank);
    for (size_t d = 0; d < strides->size(); ++d) {
      const Json& stride = (*strides)[d];
      if (stride.is_null()) {
        out->strides[d] = kDynamicStride;
        continue;
      }
      std::string what = "strides[" + std::to_string(d) + "]";
      MAIA_RETURN_IF_ERROR(toInt(stride, what + " (an integer, or null for dynamic)", where,
                                 &out->strides[d]));
      if (out->strides[d] == kDynamicStride)
        return fail(where, what, " is the reserved value INT64_MIN (use null for dynamic)");
    }
    return {};
  }

  const std::string& origin_;
};

}  // namespace

size_t dtypeSize(maiaDtype dtype) {
  const DtypeInfo* info = findDtype(dtype);
  return info ? info->size : 0;
}

const char* dtypeName(maiaDtype dtype) {
  const DtypeInfo* info = findDtype(dtype);
  return info ? info->name : "unknown";
}

Status parseMetadata(std::span<const std::byte> section, const std::string& origin,
                     Metadata* out) {
  // The section holds a C string: drop its terminator (and any padding).
  size_t length = section.size();
  while (length > 0 && section[length - 1] == std::byte{0}) --length;
  if (length == 0)
    return makeError(maiaErrorInvalidImage, origin, ": metadata: section .maia.meta is empty");
  Metadata metadata;
  metadata.json.assign(reinterpret_cast<const char*>(section.data()), length);
  Json root;
  try {
    root = Json::parse(metadata.json);
  } catch (const Json::exception& e) {
    return makeError(maiaErrorInvalidImage, origin, ": metadata is not valid JSON: ", e.what());
  }
  MAIA_RETURN_IF_ERROR(MetadataParser(origin).parse(root, &metadata));
  *out = std::move(metadata);
  return {};
}

}  // namespace maia::driver
