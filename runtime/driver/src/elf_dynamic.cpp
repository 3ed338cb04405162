#include "elf_dynamic.h"

#include "elf_bytes.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>

namespace maia::driver {
namespace {

std::string hex(uint64_t value) {
  std::ostringstream os;
  os << "0x" << std::hex << value;
  return os.str();
}

std::string tagName(int64_t tag) {
  switch (tag) {
#define MAIA_TAG(name) \
  case name: return #name;
    MAIA_TAG(DT_NULL) MAIA_TAG(DT_NEEDED) MAIA_TAG(DT_PLTRELSZ) MAIA_TAG(DT_PLTGOT)
    MAIA_TAG(DT_HASH) MAIA_TAG(DT_STRTAB) MAIA_TAG(DT_SYMTAB) MAIA_TAG(DT_RELA)
    MAIA_TAG(DT_RELASZ) MAIA_TAG(DT_RELAENT) MAIA_TAG(DT_STRSZ) MAIA_TAG(DT_SYMENT)
    MAIA_TAG(DT_INIT) MAIA_TAG(DT_FINI) MAIA_TAG(DT_SONAME) MAIA_TAG(DT_RPATH)
    MAIA_TAG(DT_SYMBOLIC) MAIA_TAG(DT_REL) MAIA_TAG(DT_RELSZ) MAIA_TAG(DT_RELENT)
    MAIA_TAG(DT_PLTREL) MAIA_TAG(DT_DEBUG) MAIA_TAG(DT_TEXTREL) MAIA_TAG(DT_JMPREL)
    MAIA_TAG(DT_BIND_NOW) MAIA_TAG(DT_INIT_ARRAY) MAIA_TAG(DT_FINI_ARRAY)
    MAIA_TAG(DT_INIT_ARRAYSZ) MAIA_TAG(DT_FINI_ARRAYSZ) MAIA_TAG(DT_RUNPATH)
    MAIA_TAG(DT_FLAGS) MAIA_TAG(DT_PREINIT_ARRAY) MAIA_TAG(DT_PREINIT_ARRAYSZ)
    MAIA_TAG(DT_RELR) MAIA_TAG(DT_GNU_HASH) MAIA_TAG(DT_VERSYM) MAIA_TAG(DT_RELACOUNT)
    MAIA_TAG(DT_FLAGS_1) MAIA_TAG(DT_VERDEF) MAIA_TAG(DT_VERDEFNUM) MAIA_TAG(DT_VERNEED)
    MAIA_TAG(DT_VERNEEDNUM) MAIA_TAG(DT_AUDIT) MAIA_TAG(DT_DEPAUDIT) MAIA_TAG(DT_FILTER)
    MAIA_TAG(DT_AUXILIARY) MAIA_TAG(DT_TLSDESC_PLT) MAIA_TAG(DT_TLSDESC_GOT)
#undef MAIA_TAG
  }
  return "tag " + hex(static_cast<uint64_t>(tag));
}

/// The tags linkers (lld for maia-compile, GNU ld for host-built kernels)
/// emit in a kernel binary. Anything else asks the loader for something a
/// kernel binary never needs (search paths, audit libraries, filters, text
/// relocations, REL or RELR relocations, preinitializers).
bool acceptedTag(int64_t tag) {
  switch (tag) {
    case DT_NEEDED: case DT_PLTRELSZ: case DT_PLTGOT: case DT_HASH: case DT_STRTAB:
    case DT_SYMTAB: case DT_RELA: case DT_RELASZ: case DT_RELAENT: case DT_STRSZ:
    case DT_SYMENT: case DT_INIT: case DT_FINI: case DT_SONAME: case DT_PLTREL:
    case DT_JMPREL: case DT_BIND_NOW: case DT_INIT_ARRAY: case DT_FINI_ARRAY:
    case DT_INIT_ARRAYSZ: case DT_FINI_ARRAYSZ: case DT_FLAGS: case DT_GNU_HASH:
    case DT_VERSYM: case DT_RELACOUNT: case DT_FLAGS_1: case DT_VERDEF: case DT_VERDEFNUM:
    case DT_VERNEED: case DT_VERNEEDNUM:
      return true;
  }
  return false;
}

/// The toolchain's load and unload hooks, which the driver does not map.
bool isLoadTimeHook(int64_t tag) {
  return tag == DT_INIT || tag == DT_FINI || tag == DT_INIT_ARRAY || tag == DT_INIT_ARRAYSZ ||
         tag == DT_FINI_ARRAY || tag == DT_FINI_ARRAYSZ;
}

const char* relocationName(uint32_t type) {
  switch (type) {
    case R_X86_64_NONE: return "R_X86_64_NONE";
    case R_X86_64_64: return "R_X86_64_64";
    case R_X86_64_GLOB_DAT: return "R_X86_64_GLOB_DAT";
    case R_X86_64_JUMP_SLOT: return "R_X86_64_JUMP_SLOT";
    case R_X86_64_RELATIVE: return "R_X86_64_RELATIVE";
    case R_X86_64_DTPMOD64: return "R_X86_64_DTPMOD64";
    case R_X86_64_DTPOFF64: return "R_X86_64_DTPOFF64";
    case R_X86_64_IRELATIVE: return "R_X86_64_IRELATIVE (runs code at load)";
    case R_X86_64_COPY: return "R_X86_64_COPY";
    case R_X86_64_TPOFF64: return "R_X86_64_TPOFF64 (static TLS)";
  }
  return nullptr;
}

// Walks of version chains stop here: no kernel binary has nearly as many
// entries, and a corrupt link must not make validation itself spin.
constexpr uint64_t kMaxVersionEntries = 4096;

class DynamicChecker : private UntrustedElfBytes {
 public:
  DynamicChecker(std::span<const std::byte> bytes, std::span<const Elf64_Phdr> segments,
                 const Elf64_Phdr& dynamic, const Elf64_Phdr* tls, const std::string& origin)
      : UntrustedElfBytes(bytes, origin), segments_(segments), dynamic_(dynamic), tls_(tls) {}

  Status run(std::vector<std::byte>* out_mapped_dynamic) {
    MAIA_RETURN_IF_ERROR(readEntries());
    MAIA_RETURN_IF_ERROR(checkStrings());
    MAIA_RETURN_IF_ERROR(checkHashTables());
    MAIA_RETURN_IF_ERROR(checkSymbols());
    MAIA_RETURN_IF_ERROR(checkVersions());
    MAIA_RETURN_IF_ERROR(checkRelocations());
    MAIA_RETURN_IF_ERROR(checkHooksAndFlags());
    writeMappedDynamic(out_mapped_dynamic);
    return {};
  }

 private:

  std::optional<uint64_t> value(int64_t tag) const {
    auto it = values_.find(tag);
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }

  /// File offset of the bytes the loader maps at [vaddr, vaddr + size) from
  /// the file, within one readable PT_LOAD; none if memory there is not
  /// file-backed (the loader would read other bytes, or unmapped memory).
  std::optional<uint64_t> fileOffset(uint64_t vaddr, uint64_t size) const {
    for (const Elf64_Phdr& p : segments_) {
      if (p.p_type != PT_LOAD || !(p.p_flags & PF_R)) continue;
      if (vaddr < p.p_vaddr || vaddr - p.p_vaddr > p.p_filesz ||
          size > p.p_filesz - (vaddr - p.p_vaddr))
        continue;
      return p.p_offset + (vaddr - p.p_vaddr);
    }
    return std::nullopt;
  }

  /// True if [vaddr, vaddr + size) lies in one segment of the given flags.
  bool mappedWith(uint32_t flags, uint64_t vaddr, uint64_t size) const {
    for (const Elf64_Phdr& p : segments_) {
      if (p.p_type != PT_LOAD || (p.p_flags & flags) != flags) continue;
      if (vaddr >= p.p_vaddr && vaddr - p.p_vaddr <= p.p_memsz &&
          size <= p.p_memsz - (vaddr - p.p_vaddr))
        return true;
    }
    return false;
  }

  Status table(const std::string& what, uint64_t vaddr, uint64_t size, uint64_t* offset) const {
    std::optional<uint64_t> found = fileOffset(vaddr, size);
    if (!found)
      return fail(what, " at address ", hex(vaddr), " (", size,
                  " bytes) is not inside the file contents of a readable PT_LOAD segment");
    *offset = *found;
    return {};
  }

  /// The NUL-terminated string at index of the dynamic string table.
  Status string(const std::string& what, uint64_t index, std::string_view* out) const {
    if (index >= strsz_)
      return fail(what, ": name offset ", index, " lies outside the dynamic string table (",
                  strsz_, " bytes)");
    const char* start = reinterpret_cast<const char*>(bytes_.data() + strtab_ + index);
    const void* nul = std::memchr(start, '\0', strsz_ - index);
    if (nul == nullptr)
      return fail(what, ": name at offset ", index,
                  " is not NUL-terminated inside the dynamic string table");
    *out = std::string_view(start, static_cast<const char*>(nul) - start);
    return {};
  }

  Status readEntries() {
    uint64_t count = dynamic_.p_filesz / sizeof(Elf64_Dyn);
    for (uint64_t i = 0; i < count; ++i) {
      Elf64_Dyn entry = read<Elf64_Dyn>(dynamic_.p_offset + i * sizeof(Elf64_Dyn));
      if (entry.d_tag == DT_NULL) {
        array_entries_ = i + 1;
        break;
      }
      std::string label = "dynamic entry " + std::to_string(i) + " (" + tagName(entry.d_tag) + ")";
      if (entry.d_tag == DT_PREINIT_ARRAY || entry.d_tag == DT_PREINIT_ARRAYSZ)
        return fail(label, ": the binary runs code at load, which a kernel binary must not");
      if (entry.d_tag == DT_TEXTREL)
        return fail(label, ": the binary needs its code relocated (not position-independent)");
      if (!acceptedTag(entry.d_tag))
        return fail(label, ": not an entry the driver accepts in a kernel binary");
      entries_.push_back(entry);
      if (entry.d_tag == DT_NEEDED) continue;
      if (!values_.emplace(entry.d_tag, entry.d_un.d_val).second)
        return fail(label, ": the tag appears more than once");
    }
    if (array_entries_ == 0)
      return fail("the dynamic array has no DT_NULL terminator inside its PT_DYNAMIC segment (",
                  count, " entries)");
    return {};
  }

  Status checkStrings() {
    std::optional<uint64_t> address = value(DT_STRTAB), size = value(DT_STRSZ);
    if (!address || !size || *size == 0)
      return fail("no dynamic string table (DT_STRTAB and a non-zero DT_STRSZ)");
    MAIA_RETURN_IF_ERROR(table("the dynamic string table", *address, *size, &strtab_));
    strsz_ = *size;
    std::string allowed;
    for (const char* name : kAllowedDependencies) allowed += (allowed.empty() ? "" : ", ") + std::string(name);
    for (const Elf64_Dyn& entry : entries_) {
      if (entry.d_tag != DT_NEEDED && entry.d_tag != DT_SONAME) continue;
      std::string_view name;
      MAIA_RETURN_IF_ERROR(string(tagName(entry.d_tag), entry.d_un.d_val, &name));
      if (entry.d_tag == DT_SONAME) continue;
      if (std::find(std::begin(kAllowedDependencies), std::end(kAllowedDependencies), name) ==
          std::end(kAllowedDependencies))
        return fail("depends on library '", name,
                    "' (DT_NEEDED); a kernel binary may depend only on ", allowed);
      needed_.push_back(name);
    }
    return {};
  }

  /// Sets symbol_count_ from the hash tables, the only record of how many
  /// symbols the loader may index; checks every index and chain in them.
  Status checkHashTables() {
    std::optional<uint64_t> sysv = value(DT_HASH), gnu = value(DT_GNU_HASH);
    if (!sysv && !gnu) return fail("no symbol hash table (DT_HASH or DT_GNU_HASH)");
    if (sysv) MAIA_RETURN_IF_ERROR(checkSysvHash(*sysv));
    if (gnu) MAIA_RETURN_IF_ERROR(checkGnuHash(*gnu));
    return {};
  }

  Status checkSysvHash(uint64_t address) {
    uint64_t offset;
    MAIA_RETURN_IF_ERROR(table("the DT_HASH table header", address, 8, &offset));
    uint64_t buckets = read<uint32_t>(offset), chains = read<uint32_t>(offset + 4);
    if (buckets == 0) return fail("the DT_HASH table has no buckets");
    MAIA_RETURN_IF_ERROR(table("the DT_HASH table", address, 8 + 4 * (buckets + chains), &offset));
    // Lookups follow a chain from its bucket until index 0: each symbol on
    // exactly one chain, so a cycle (an endless lookup) is caught too.
    std::vector<bool> seen(chains, false);
    for (uint64_t b = 0; b < buckets; ++b) {
      uint64_t steps = 0;
      for (uint64_t i = read<uint32_t>(offset + 8 + 4 * b); i != STN_UNDEF;
           i = read<uint32_t>(offset + 8 + 4 * (buckets + i))) {
        if (i >= chains)
          return fail("the DT_HASH table names symbol ", i, " but has ", chains, " symbols");
        if (seen[i] || ++steps > chains)
          return fail("the DT_HASH table's chains share or loop through symbol ", i);
        seen[i] = true;
      }
    }
    symbol_count_ = std::max<uint64_t>(symbol_count_, chains);
    return {};
  }

  Status checkGnuHash(uint64_t address) {
    uint64_t offset;
    MAIA_RETURN_IF_ERROR(table("the DT_GNU_HASH table header", address, 16, &offset));
    uint64_t buckets = read<uint32_t>(offset), first = read<uint32_t>(offset + 4);
    uint64_t bloom_words = read<uint32_t>(offset + 8), bloom_shift = read<uint32_t>(offset + 12);
    if (buckets == 0) return fail("the DT_GNU_HASH table has no buckets");
    // The loader masks bloom indexes with bloom_words - 1.
    if (bloom_words == 0 || (bloom_words & (bloom_words - 1)) != 0 || bloom_shift >= 64)
      return fail("the DT_GNU_HASH table has a Bloom filter of ", bloom_words,
                  " words with shift ", bloom_shift, " (a power of two and a shift below 64)");
    uint64_t buckets_at = 16 + 8 * bloom_words, chains_at = buckets_at + 4 * buckets;
    MAIA_RETURN_IF_ERROR(table("the DT_GNU_HASH table", address, chains_at, &offset));
    // Chains are consecutive runs of the chain array (symbols first..),
    // each ended by a value with bit 0 set. The run of the highest bucket
    // ends last; every other run ends before it.
    uint64_t last_start = 0;
    for (uint64_t b = 0; b < buckets; ++b) {
      uint64_t start = read<uint32_t>(offset + buckets_at + 4 * b);
      if (start == 0) continue;
      if (start < first)
        return fail("the DT_GNU_HASH table's bucket ", b, " starts at symbol ", start,
                    ", below its first hashed symbol ", first);
      last_start = std::max(last_start, start);
    }
    uint64_t count = first;
    if (last_start != 0) {
      for (uint64_t i = last_start;; ++i) {
        uint64_t at;
        MAIA_RETURN_IF_ERROR(
            table("the DT_GNU_HASH chain of symbol " + std::to_string(i),
                  address + chains_at + 4 * (i - first), 4, &at));
        if (read<uint32_t>(at) & 1) {
          count = i + 1;
          break;
        }
      }
    }
    symbol_count_ = std::max(symbol_count_, count);
    return {};
  }

  Status checkSymbols() {
    std::optional<uint64_t> address = value(DT_SYMTAB), entry_size = value(DT_SYMENT);
    if (!address) return fail("no dynamic symbol table (DT_SYMTAB)");
    if (entry_size != sizeof(Elf64_Sym))
      return fail("DT_SYMENT is ", entry_size.value_or(0), ", expected ", sizeof(Elf64_Sym));
    MAIA_RETURN_IF_ERROR(table("the dynamic symbol table (" + std::to_string(symbol_count_) +
                                   " symbols by its hash tables)",
                               *address, symbol_count_ * sizeof(Elf64_Sym), &symtab_));
    for (uint64_t i = 1; i < symbol_count_; ++i) {
      Elf64_Sym sym = read<Elf64_Sym>(symtab_ + i * sizeof(Elf64_Sym));
      std::string label = "dynamic symbol " + std::to_string(i);
      std::string_view name;
      MAIA_RETURN_IF_ERROR(string(label, sym.st_name, &name));
      label += " ('" + std::string(name) + "')";
      unsigned type = ELF64_ST_TYPE(sym.st_info), binding = ELF64_ST_BIND(sym.st_info);
      if (type == STT_GNU_IFUNC)
        return fail(label, " is an STT_GNU_IFUNC symbol: the loader would run its resolver");
      if (type > STT_TLS)
        return fail(label, " has symbol type ", type, ", which kernel binaries do not use");
      if (binding != STB_LOCAL && binding != STB_GLOBAL && binding != STB_WEAK &&
          binding != STB_GNU_UNIQUE)
        return fail(label, " has binding ", binding, ", which kernel binaries do not use");
      if (sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS) continue;
      if (type == STT_TLS) {
        if (!tls_ || sym.st_value > tls_->p_memsz)
          return fail(label, " is thread-local at offset ", sym.st_value,
                      " outside the PT_TLS segment");
        continue;
      }
      uint32_t flags = type == STT_FUNC ? PF_X : 0;
      if (!mappedWith(flags, sym.st_value, 0))
        return fail(label, " at address ", hex(sym.st_value), " is not inside a PT_LOAD segment",
                    flags ? " that is executable" : "");
    }
    return {};
  }

  /// The loader sizes its version array by the highest index the
  /// DT_VERNEED and DT_VERDEF entries declare, then indexes it with every
  /// DT_VERSYM entry (and dereferences it whenever DT_VERSYM exists).
  Status checkVersions() {
    uint64_t highest = 0;
    if (std::optional<uint64_t> address = value(DT_VERNEED)) {
      uint64_t at = *address;
      for (uint64_t n = 0;; ++n) {
        if (n == kMaxVersionEntries) return fail("DT_VERNEED has more than ", n, " entries");
        std::string label = "version requirement " + std::to_string(n);
        uint64_t offset;
        MAIA_RETURN_IF_ERROR(table(label, at, sizeof(Elf64_Verneed), &offset));
        auto need = read<Elf64_Verneed>(offset);
        if (need.vn_version != 1)
          return fail(label, " has version ", need.vn_version, ", expected 1");
        std::string_view file;
        MAIA_RETURN_IF_ERROR(string(label, need.vn_file, &file));
        if (std::find(needed_.begin(), needed_.end(), file) == needed_.end())
          return fail(label, " names library '", file, "', which is not a DT_NEEDED dependency");
        uint64_t aux = at, link = need.vn_aux;
        for (uint64_t a = 0;; ++a) {
          if (a == kMaxVersionEntries) return fail(label, " has more than ", a, " versions");
          if (__builtin_add_overflow(aux, link, &aux))
            return fail(label, ": a version link overflows");
          MAIA_RETURN_IF_ERROR(table(label + ", version " + std::to_string(a), aux,
                                     sizeof(Elf64_Vernaux), &offset));
          auto version = read<Elf64_Vernaux>(offset);
          std::string_view name;
          MAIA_RETURN_IF_ERROR(string(label, version.vna_name, &name));
          highest = std::max<uint64_t>(highest, version.vna_other & 0x7fff);
          if (version.vna_next == 0) break;
          link = version.vna_next;
        }
        if (need.vn_next == 0) break;
        if (__builtin_add_overflow(at, uint64_t{need.vn_next}, &at))
          return fail(label, ": the link to the next requirement overflows");
      }
    }
    if (std::optional<uint64_t> address = value(DT_VERDEF)) {
      uint64_t at = *address;
      for (uint64_t n = 0;; ++n) {
        if (n == kMaxVersionEntries) return fail("DT_VERDEF has more than ", n, " entries");
        std::string label = "version definition " + std::to_string(n);
        uint64_t offset;
        MAIA_RETURN_IF_ERROR(table(label, at, sizeof(Elf64_Verdef), &offset));
        auto def = read<Elf64_Verdef>(offset);
        if (def.vd_version != 1)
          return fail(label, " has version ", def.vd_version, ", expected 1");
        uint64_t aux;
        if (def.vd_cnt == 0 || __builtin_add_overflow(at, uint64_t{def.vd_aux}, &aux))
          return fail(label, " has no name");
        MAIA_RETURN_IF_ERROR(table(label + " name", aux, sizeof(Elf64_Verdaux), &offset));
        std::string_view name;
        MAIA_RETURN_IF_ERROR(string(label, read<Elf64_Verdaux>(offset).vda_name, &name));
        highest = std::max<uint64_t>(highest, def.vd_ndx & 0x7fff);
        if (def.vd_next == 0) break;
        if (__builtin_add_overflow(at, uint64_t{def.vd_next}, &at))
          return fail(label, ": the link to the next definition overflows");
      }
    }
    // The loader reads DT_VERSYM as soon as a version is declared, and
    // the versions as soon as DT_VERSYM exists.
    std::optional<uint64_t> versym = value(DT_VERSYM);
    if (highest != 0 && !versym)
      return fail("versions are declared (DT_VERNEED or DT_VERDEF) but there is no symbol "
                  "version table (DT_VERSYM)");
    if (!versym) return {};
    if (highest == 0)
      return fail("DT_VERSYM without any version (DT_VERNEED or DT_VERDEF) to refer to");
    uint64_t offset;
    MAIA_RETURN_IF_ERROR(table("the symbol version table (DT_VERSYM)", *versym,
                               symbol_count_ * sizeof(Elf64_Half), &offset));
    for (uint64_t i = 0; i < symbol_count_; ++i) {
      unsigned index = read<Elf64_Half>(offset + 2 * i) & 0x7fff;
      if (index > highest)
        return fail("symbol ", i, " has version index ", index, " but the binary declares ",
                    highest, " versions");
    }
    return {};
  }

  Status checkRelocations() {
    std::optional<uint64_t> rela = value(DT_RELA), rela_size = value(DT_RELASZ);
    if (rela || rela_size || value(DT_RELACOUNT)) {
      if (!rela || !rela_size) return fail("DT_RELA and DT_RELASZ must come together");
      if (value(DT_RELAENT) != sizeof(Elf64_Rela))
        return fail("DT_RELAENT is ", value(DT_RELAENT).value_or(0), ", expected ",
                    sizeof(Elf64_Rela));
      MAIA_RETURN_IF_ERROR(checkRelocationTable("DT_RELA", *rela, *rela_size, false,
                                                value(DT_RELACOUNT).value_or(0)));
    }
    std::optional<uint64_t> jmprel = value(DT_JMPREL), plt_size = value(DT_PLTRELSZ);
    if (jmprel || plt_size || value(DT_PLTREL)) {
      if (!jmprel || !plt_size || value(DT_PLTREL) != uint64_t{DT_RELA})
        return fail("DT_JMPREL, DT_PLTRELSZ and DT_PLTREL (DT_RELA) must come together");
      MAIA_RETURN_IF_ERROR(checkRelocationTable("DT_JMPREL", *jmprel, *plt_size, true, 0));
    }
    if (std::optional<uint64_t> got = value(DT_PLTGOT);
        got && !mappedWith(PF_W, *got, 3 * sizeof(uint64_t)))
      return fail("DT_PLTGOT at ", hex(*got), " is not inside a writable PT_LOAD segment");
    return {};
  }

  Status checkRelocationTable(const char* what, uint64_t address, uint64_t size, bool plt,
                              uint64_t relative_count) {
    if (size % sizeof(Elf64_Rela) != 0)
      return fail(what, ": size ", size, " is not a multiple of ", sizeof(Elf64_Rela));
    uint64_t offset, count = size / sizeof(Elf64_Rela);
    MAIA_RETURN_IF_ERROR(table(std::string("the relocations of ") + what, address, size, &offset));
    // The loader applies the first DT_RELACOUNT entries as relative ones
    // without looking at their type.
    if (relative_count > count)
      return fail("DT_RELACOUNT ", relative_count, " exceeds the ", count, " relocations");
    for (uint64_t i = 0; i < count; ++i) {
      auto r = read<Elf64_Rela>(offset + i * sizeof(Elf64_Rela));
      uint32_t type = ELF64_R_TYPE(r.r_info);
      uint64_t symbol = ELF64_R_SYM(r.r_info);
      std::string label = std::string(what) + " relocation " + std::to_string(i);
      bool accepted = plt ? type == R_X86_64_JUMP_SLOT
                          : type == R_X86_64_NONE || type == R_X86_64_64 ||
                                type == R_X86_64_GLOB_DAT || type == R_X86_64_RELATIVE ||
                                type == R_X86_64_DTPMOD64 || type == R_X86_64_DTPOFF64;
      if (!accepted) {
        const char* name = relocationName(type);
        return fail(label, " has type ", name ? name : std::to_string(type).c_str(),
                    ", which kernel binaries do not use");
      }
      if (i < relative_count && type != R_X86_64_RELATIVE)
        return fail(label, " is counted by DT_RELACOUNT but is not R_X86_64_RELATIVE");
      if ((type == R_X86_64_DTPMOD64 || type == R_X86_64_DTPOFF64) && !tls_)
        return fail(label, " is thread-local but the binary has no PT_TLS segment");
      // The loader reads the symbol (and its version) of every relocation.
      if (symbol >= symbol_count_)
        return fail(label, " refers to symbol ", symbol, " but the binary has ", symbol_count_,
                    " symbols");
      if (type != R_X86_64_NONE && !mappedWith(PF_W, r.r_offset, sizeof(uint64_t)))
        return fail(label, " writes to address ", hex(r.r_offset),
                    ", which is not inside a writable PT_LOAD segment");
    }
    return {};
  }

  Status checkHooksAndFlags() const {
    for (auto [array, size] : {std::pair{DT_INIT_ARRAY, DT_INIT_ARRAYSZ},
                               std::pair{DT_FINI_ARRAY, DT_FINI_ARRAYSZ}}) {
      if (value(array).has_value() != value(size).has_value())
        return fail(tagName(array), " and ", tagName(size), " must come together");
      // One entry is the toolchain's (crtbegin's frame_dummy or
      // __do_global_dtors_aux); more are the binary's own static
      // constructors or destructors, which the driver would not run.
      uint64_t bytes = value(size).value_or(0);
      if (bytes > sizeof(uint64_t))
        return fail(tagName(size), " is ", bytes, " bytes: the binary has static ",
                    array == DT_INIT_ARRAY ? "constructors" : "destructors",
                    ", code that would run at load or unload, which a kernel binary must not have");
    }
    uint64_t flags = value(DT_FLAGS).value_or(0), flags_1 = value(DT_FLAGS_1).value_or(0);
    if (flags & ~uint64_t{DF_BIND_NOW})
      return fail("DT_FLAGS ", hex(flags), " asks for more than DF_BIND_NOW");
    if (flags_1 & ~uint64_t{DF_1_NOW})
      return fail("DT_FLAGS_1 ", hex(flags_1), " asks for more than DF_1_NOW");
    return {};
  }

  /// The array without the load-time hooks, padded with DT_NULL to the
  /// binary's length: what the driver maps at the same place.
  void writeMappedDynamic(std::vector<std::byte>* out) const {
    out->assign(array_entries_ * sizeof(Elf64_Dyn), std::byte{0});
    size_t kept = 0;
    for (const Elf64_Dyn& entry : entries_) {
      if (isLoadTimeHook(entry.d_tag)) continue;
      std::memcpy(out->data() + kept++ * sizeof(Elf64_Dyn), &entry, sizeof entry);
    }
  }

  std::span<const Elf64_Phdr> segments_;
  const Elf64_Phdr& dynamic_;
  const Elf64_Phdr* tls_;
  std::vector<Elf64_Dyn> entries_;  // without the terminator
  uint64_t array_entries_ = 0;      // with the terminator
  std::map<int64_t, uint64_t> values_;
  std::vector<std::string_view> needed_;
  uint64_t strtab_ = 0, strsz_ = 0;  // file offset and size
  uint64_t symtab_ = 0, symbol_count_ = 0;
};

}  // namespace

Status validateDynamic(std::span<const std::byte> bytes, std::span<const Elf64_Phdr> segments,
                       const Elf64_Phdr& dynamic, const Elf64_Phdr* tls,
                       const std::string& origin, std::vector<std::byte>* out_mapped_dynamic) {
  return DynamicChecker(bytes, segments, dynamic, tls, origin).run(out_mapped_dynamic);
}

}  // namespace maia::driver
