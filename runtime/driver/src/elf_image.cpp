#include "elf_image.h"

#include <elf.h>

#include "elf_bytes.h"
#include "elf_dynamic.h"

#include <cstdint>
#include <cstring>
#include <iomanip>
#include <optional>
#include <sstream>
#include <vector>

namespace maia::driver {
namespace {

// No kernel binary comes near these; corrupt sizes beyond them would make
// the loader reserve absurd address ranges or per-thread TLS blocks.
constexpr uint64_t kMaxImageSpan = uint64_t{1} << 30;
constexpr uint64_t kMaxTlsBytes = uint64_t{1} << 20;
constexpr uint64_t kMaxTlsAlign = 4096;

std::string hex(uint64_t value) {
  std::ostringstream os;
  os << "0x" << std::hex << value;
  return os.str();
}

std::string segmentTypeName(uint32_t type) {
  switch (type) {
    case PT_LOAD: return "PT_LOAD";
    case PT_DYNAMIC: return "PT_DYNAMIC";
    case PT_INTERP: return "PT_INTERP";
    case PT_NOTE: return "PT_NOTE";
    case PT_PHDR: return "PT_PHDR";
    case PT_TLS: return "PT_TLS";
    case PT_GNU_EH_FRAME: return "PT_GNU_EH_FRAME";
    case PT_GNU_STACK: return "PT_GNU_STACK";
    case PT_GNU_RELRO: return "PT_GNU_RELRO";
    case PT_GNU_PROPERTY: return "PT_GNU_PROPERTY";
  }
  return "type " + hex(type);
}

/// One pass over untrusted ELF bytes. Every read is range-checked first and
/// copied out (the caller's buffer need not be aligned for ELF structures).
class ElfChecker : private UntrustedElfBytes {
 public:
  ElfChecker(std::span<const std::byte> bytes, const std::string& origin)
      : UntrustedElfBytes(bytes, origin) {}

  Status run(ValidatedElf* out) {
    MAIA_RETURN_IF_ERROR(checkHeader());
    MAIA_RETURN_IF_ERROR(readSections());
    MAIA_RETURN_IF_ERROR(readSectionNames());
    MAIA_RETURN_IF_ERROR(readSegments());
    MAIA_RETURN_IF_ERROR(checkSegmentsAgainstSections());
    MAIA_RETURN_IF_ERROR(findMetadata(&out->metadata));
    // Last: it reads the tables the checks above proved to be in bounds.
    out->dynamic_offset = dynamic_segment_->p_offset;
    return validateDynamic(bytes_, segments_, *dynamic_segment_, tls_segment_, origin_,
                           &out->mapped_dynamic);
  }

 private:

  /// Fails unless [offset, offset + size) lies inside the file.
  Status checkInFile(const std::string& what, uint64_t offset, uint64_t size) const {
    uint64_t end;
    if (__builtin_add_overflow(offset, size, &end))
      return fail(what, " at offset ", hex(offset), " with size ", size,
                  " overflows the 64-bit range");
    if (end > bytes_.size())
      return fail("truncated: ", what, " ends at byte ", end, " but the file has ",
                  bytes_.size(), " bytes");
    return {};
  }

  std::string sectionLabel(size_t index) const {
    std::string label = "section " + std::to_string(index);
    if (index < names_.size()) label += " ('" + names_[index] + "')";
    return label;
  }

  Status checkHeader() {
    if (bytes_.empty()) return fail("the file is empty (0 bytes): not a MAIA kernel binary");
    size_t magic_bytes = std::min<size_t>(bytes_.size(), SELFMAG);
    if (std::memcmp(bytes_.data(), ELFMAG, magic_bytes) != 0) {
      std::ostringstream os;
      for (size_t i = 0; i < magic_bytes; ++i)
        os << (i ? " " : "") << std::hex << std::setw(2) << std::setfill('0')
           << static_cast<unsigned>(bytes_[i]);
      return fail("not an ELF file: it starts with bytes ", os.str(),
                  ", not the ELF magic 7f 45 4c 46");
    }
    if (bytes_.size() < sizeof(Elf64_Ehdr))
      return fail("truncated: the ELF header needs ", sizeof(Elf64_Ehdr),
                  " bytes but the file has ", bytes_.size(), " bytes");
    header_ = read<Elf64_Ehdr>(0);
    const unsigned char* ident = header_.e_ident;
    if (ident[EI_CLASS] != ELFCLASS64)
      return fail("not a 64-bit ELF file (EI_CLASS is ", int(ident[EI_CLASS]), ")");
    if (ident[EI_DATA] != ELFDATA2LSB)
      return fail("not a little-endian ELF file (EI_DATA is ", int(ident[EI_DATA]), ")");
    if (ident[EI_VERSION] != EV_CURRENT)
      return fail("unsupported ELF identification version ", int(ident[EI_VERSION]));
    if (header_.e_version != EV_CURRENT)
      return fail("unsupported ELF version ", header_.e_version);
    if (header_.e_machine != EM_X86_64)
      return fail("built for ELF machine ", header_.e_machine, ", not x86-64 (", EM_X86_64, ")");
    if (header_.e_type != ET_DYN)
      return fail("ELF type ", header_.e_type,
                  " is not a shared object (ET_DYN); kernel binaries are linked with -shared");
    if (header_.e_ehsize != sizeof(Elf64_Ehdr))
      return fail("ELF header size is ", header_.e_ehsize, " bytes, expected ",
                  sizeof(Elf64_Ehdr));
    return {};
  }

  Status readSections() {
    if (header_.e_shnum == 0 && header_.e_shoff != 0)
      return fail("extended section numbering (e_shnum 0) is not supported");
    if (header_.e_shnum == 0 || header_.e_shoff == 0)
      return fail("no section header table (e_shoff ", header_.e_shoff, ", e_shnum ",
                  header_.e_shnum, ")");
    if (header_.e_shentsize != sizeof(Elf64_Shdr))
      return fail("section header size is ", header_.e_shentsize, " bytes, expected ",
                  sizeof(Elf64_Shdr));
    MAIA_RETURN_IF_ERROR(checkInFile("section header table", header_.e_shoff,
                                     uint64_t{header_.e_shnum} * sizeof(Elf64_Shdr)));
    sections_.reserve(header_.e_shnum);
    for (size_t i = 0; i < header_.e_shnum; ++i) {
      sections_.push_back(read<Elf64_Shdr>(header_.e_shoff + i * sizeof(Elf64_Shdr)));
      const Elf64_Shdr& s = sections_.back();
      if (s.sh_type == SHT_NOBITS || s.sh_type == SHT_NULL) continue;
      MAIA_RETURN_IF_ERROR(checkInFile("section " + std::to_string(i) + " (type " +
                                           std::to_string(s.sh_type) + ")",
                                       s.sh_offset, s.sh_size));
    }
    return {};
  }

  Status readSectionNames() {
    size_t index = header_.e_shstrndx;
    if (index == SHN_UNDEF) return fail("no section name table (e_shstrndx is 0)");
    if (index >= sections_.size())
      return fail("section name table index ", index, " is out of range (the file has ",
                  sections_.size(), " sections)");
    const Elf64_Shdr& table = sections_[index];
    if (table.sh_type != SHT_STRTAB)
      return fail("section name table (section ", index, ") has type ", table.sh_type,
                  ", not SHT_STRTAB");
    // Its range was checked in readSections (SHT_STRTAB has file contents).
    const char* strings = reinterpret_cast<const char*>(bytes_.data() + table.sh_offset);
    names_.reserve(sections_.size());
    for (size_t i = 0; i < sections_.size(); ++i) {
      uint64_t offset = sections_[i].sh_name;
      if (offset >= table.sh_size)
        return fail("section ", i, ": name offset ", offset,
                    " lies outside the section name table (", table.sh_size, " bytes)");
      const void* nul = std::memchr(strings + offset, '\0', table.sh_size - offset);
      if (nul == nullptr)
        return fail("section ", i, ": name at offset ", offset,
                    " is not NUL-terminated inside the section name table");
      names_.emplace_back(strings + offset, static_cast<const char*>(nul));
    }
    return {};
  }

  Status readSegments() {
    if (header_.e_phnum == 0 || header_.e_phoff == 0)
      return fail("no program headers: not a loadable shared object");
    if (header_.e_phnum == PN_XNUM)
      return fail("extended program header numbering is not supported");
    if (header_.e_phentsize != sizeof(Elf64_Phdr))
      return fail("program header size is ", header_.e_phentsize, " bytes, expected ",
                  sizeof(Elf64_Phdr));
    MAIA_RETURN_IF_ERROR(checkInFile("program header table", header_.e_phoff,
                                     uint64_t{header_.e_phnum} * sizeof(Elf64_Phdr)));
    std::optional<uint64_t> previous_load_end;
    segments_.reserve(header_.e_phnum);  // tls_segment_ points into it
    for (size_t i = 0; i < header_.e_phnum; ++i) {
      segments_.push_back(read<Elf64_Phdr>(header_.e_phoff + i * sizeof(Elf64_Phdr)));
      const Elf64_Phdr& p = segments_.back();
      std::string label = "segment " + std::to_string(i) + " (" + segmentTypeName(p.p_type) + ")";
      MAIA_RETURN_IF_ERROR(checkInFile(label, p.p_offset, p.p_filesz));
      MAIA_RETURN_IF_ERROR(checkSegmentType(label, p));
      if (p.p_type == PT_GNU_STACK) {
        has_stack_segment_ = true;
        if (p.p_flags & PF_X)
          return fail(label, " requests an executable stack, which the driver refuses");
      }
      if (p.p_type != PT_LOAD) continue;
      ++load_count_;
      uint64_t end;
      if (p.p_filesz > p.p_memsz || __builtin_add_overflow(p.p_vaddr, p.p_memsz, &end))
        return fail(label, " has file size ", p.p_filesz, " and memory size ", p.p_memsz,
                    " at address ", hex(p.p_vaddr), ", which is inconsistent");
      if (p.p_align > 1 && ((p.p_align & (p.p_align - 1)) != 0 ||
                            (p.p_vaddr - p.p_offset) % p.p_align != 0))
        return fail(label, " has address ", hex(p.p_vaddr), " and offset ", hex(p.p_offset),
                    " which are not congruent modulo its alignment ", p.p_align);
      // The ELF specification orders loadable segments by address; the
      // loader reserves one span from the first to the last.
      if (previous_load_end && p.p_vaddr < *previous_load_end)
        return fail(label, " at address ", hex(p.p_vaddr),
                    " overlaps or precedes the previous PT_LOAD segment");
      previous_load_end = end;
    }
    if (load_count_ == 0) return fail("no PT_LOAD segment: nothing to map");
    uint64_t first_load = 0;
    for (const Elf64_Phdr& p : segments_)
      if (p.p_type == PT_LOAD) {
        first_load = p.p_vaddr;
        break;
      }
    if (*previous_load_end - first_load > kMaxImageSpan)
      return fail("the PT_LOAD segments span ", *previous_load_end - first_load,
                  " bytes of address space, more than a kernel binary's limit of ", kMaxImageSpan);
    return {};
  }

  /// Only the segment types the loader handles without trusting more than
  /// these checks prove; TLS bounded (the loader allocates it per thread).
  Status checkSegmentType(const std::string& label, const Elf64_Phdr& p) {
    switch (p.p_type) {
      case PT_NULL: case PT_LOAD: case PT_DYNAMIC: case PT_NOTE: case PT_PHDR:
      case PT_GNU_EH_FRAME: case PT_GNU_STACK: case PT_GNU_RELRO: case PT_GNU_PROPERTY:
        return {};
      case PT_INTERP:
        return fail(label, ": the file names a program interpreter: it is a program, not a "
                    "kernel binary");
      case PT_TLS:
        if (tls_segment_) return fail(label, ": more than one PT_TLS segment");
        if (p.p_filesz > p.p_memsz || p.p_memsz > kMaxTlsBytes || p.p_align > kMaxTlsAlign ||
            (p.p_align & (p.p_align - 1)) != 0)
          return fail(label, " has file size ", p.p_filesz, ", memory size ", p.p_memsz,
                      " and alignment ", p.p_align, " (at most ", kMaxTlsBytes,
                      " bytes aligned to a power of two up to ", kMaxTlsAlign, ")");
        tls_segment_ = &p;
        return {};
    }
    return fail(label, ": a segment type the driver does not accept in a kernel binary");
  }

  /// The loader walks notes (PT_GNU_PROPERTY for CPU features) by the sizes
  /// they declare: each must end inside its segment.
  Status checkNotes(size_t index, const Elf64_Phdr& p) const {
    std::string label = "segment " + std::to_string(index) + " (" + segmentTypeName(p.p_type) + ")";
    if (p.p_filesz != p.p_memsz)
      return fail(label, " has file size ", p.p_filesz, " but memory size ", p.p_memsz);
    uint64_t align = p.p_align == 8 ? 8 : 4;
    auto padded = [align](uint64_t size) { return (size + align - 1) & ~(align - 1); };
    for (uint64_t at = 0; p.p_filesz - at >= sizeof(Elf64_Nhdr);) {
      auto note = read<Elf64_Nhdr>(p.p_offset + at);
      uint64_t size = sizeof(Elf64_Nhdr) + padded(note.n_namesz) + padded(note.n_descsz);
      if (size > p.p_filesz - at)
        return fail(label, ": the note at offset ", at, " (name ", note.n_namesz,
                    " bytes, description ", note.n_descsz, " bytes) runs past the segment");
      at += size;
    }
    return {};
  }

  /// The PT_LOAD that maps the file bytes [offset, offset + file_size) at
  /// vaddr and spans the memory [vaddr, vaddr + memory_size), i.e. the loader
  /// will put those bytes where the headers say they are; null if none does.
  const Elf64_Phdr* loadHolding(uint64_t offset, uint64_t vaddr, uint64_t file_size,
                                uint64_t memory_size) const {
    for (const Elf64_Phdr& load : segments_) {
      if (load.p_type != PT_LOAD) continue;
      if (offset < load.p_offset || offset - load.p_offset > load.p_filesz ||
          file_size > load.p_filesz - (offset - load.p_offset))
        continue;
      if (vaddr < load.p_vaddr || vaddr - load.p_vaddr > load.p_memsz ||
          memory_size > load.p_memsz - (vaddr - load.p_vaddr))
        continue;
      if (vaddr - offset == load.p_vaddr - load.p_offset) return &load;
    }
    return nullptr;
  }

  /// The dynamic loader trusts program headers completely; cross-checking
  /// them against the section headers means a corrupted header is refused
  /// here instead of making the loader read or write through it.
  Status checkSegmentsAgainstSections() {
    for (size_t i = 0; i < segments_.size(); ++i) {
      const Elf64_Phdr& p = segments_[i];
      // The loader reads (PT_DYNAMIC, PT_NOTE, ...) or mprotects
      // (PT_GNU_RELRO) these ranges of the mapped image. PT_TLS is only the
      // initialization image: its zero-filled tail is not mapped at vaddr.
      uint64_t memory_size = p.p_type == PT_TLS ? p.p_filesz : p.p_memsz;
      if (p.p_type == PT_NOTE || p.p_type == PT_GNU_PROPERTY) MAIA_RETURN_IF_ERROR(checkNotes(i, p));
      if (p.p_type == PT_LOAD || (p.p_filesz == 0 && memory_size == 0)) continue;
      if (!loadHolding(p.p_offset, p.p_vaddr, p.p_filesz, memory_size))
        return fail("segment ", i, " (", segmentTypeName(p.p_type), ") at offset ",
                    hex(p.p_offset), ", address ", hex(p.p_vaddr),
                    " is not inside any PT_LOAD segment");
      if (p.p_type == PT_PHDR &&
          (p.p_offset != header_.e_phoff ||
           p.p_filesz != uint64_t{header_.e_phnum} * sizeof(Elf64_Phdr)))
        return fail("the PT_PHDR segment (offset ", hex(p.p_offset),
                    ") does not describe the program header table (offset ",
                    hex(header_.e_phoff), ")");
    }
    for (size_t i = 0; i < sections_.size(); ++i) {
      const Elf64_Shdr& s = sections_[i];
      if (!(s.sh_flags & SHF_ALLOC) || s.sh_type == SHT_NOBITS || s.sh_size == 0) continue;
      const Elf64_Phdr* load = loadHolding(s.sh_offset, s.sh_addr, s.sh_size, s.sh_size);
      if (!load)
        return fail(sectionLabel(i), " at offset ", hex(s.sh_offset), ", address ",
                    hex(s.sh_addr), " is not inside any PT_LOAD segment");
      // The loader reads the tables in allocated sections and writes
      // relocations into writable ones, and kernels jump into executable
      // ones: the mapping must allow all of that.
      if (!(load->p_flags & PF_R))
        return fail(sectionLabel(i), " lies in a PT_LOAD segment that is not readable");
      if ((s.sh_flags & SHF_WRITE) && !(load->p_flags & PF_W))
        return fail(sectionLabel(i), " is writable but its PT_LOAD segment is not");
      if ((s.sh_flags & SHF_EXECINSTR) && !(load->p_flags & PF_X))
        return fail(sectionLabel(i), " holds code but its PT_LOAD segment is not executable");
    }
    MAIA_RETURN_IF_ERROR(checkDynamicSegment());
    // Without one, the loader would make every thread's stack executable.
    if (!has_stack_segment_)
      return fail("no PT_GNU_STACK segment: loading it would make the stacks executable");
    return {};
  }

  Status checkDynamicSegment() {
    const Elf64_Phdr* dynamic_segment = nullptr;
    for (const Elf64_Phdr& p : segments_) {
      if (p.p_type != PT_DYNAMIC) continue;
      if (dynamic_segment) return fail("more than one PT_DYNAMIC segment");
      dynamic_segment = &p;
    }
    if (!dynamic_segment) return fail("no PT_DYNAMIC segment: not a dynamic shared object");
    const Elf64_Shdr* dynamic_section = nullptr;
    for (const Elf64_Shdr& s : sections_) {
      if (s.sh_type != SHT_DYNAMIC) continue;
      if (dynamic_section) return fail("more than one SHT_DYNAMIC section");
      dynamic_section = &s;
    }
    if (!dynamic_section ||
        dynamic_section->sh_offset != dynamic_segment->p_offset ||
        dynamic_section->sh_addr != dynamic_segment->p_vaddr ||
        dynamic_section->sh_size != dynamic_segment->p_filesz)
      return fail("the PT_DYNAMIC segment (offset ", hex(dynamic_segment->p_offset), ", size ",
                  dynamic_segment->p_filesz, ") does not match the .dynamic section");
    // The loader adds the load address to the array's pointers in place.
    const Elf64_Phdr* load =
        loadHolding(dynamic_segment->p_offset, dynamic_segment->p_vaddr,
                    dynamic_segment->p_filesz, dynamic_segment->p_filesz);
    if (!load || !(load->p_flags & PF_W))
      return fail("the PT_DYNAMIC segment is not inside a writable PT_LOAD segment");
    dynamic_segment_ = dynamic_segment;
    return {};
  }

  Status findMetadata(std::span<const std::byte>* out) const {
    std::optional<size_t> found;
    for (size_t i = 0; i < sections_.size(); ++i) {
      if (names_[i] != kMetadataSectionName) continue;
      if (found) return fail("more than one ", kMetadataSectionName, " section");
      found = i;
    }
    if (!found)
      return fail("no ", kMetadataSectionName,
                  " section: not a MAIA kernel binary (it carries no kernel metadata)");
    const Elf64_Shdr& s = sections_[*found];
    if (s.sh_type == SHT_NOBITS || s.sh_type == SHT_NULL)
      return fail(sectionLabel(*found), " has no contents in the file (section type ",
                  s.sh_type, ")");
    *out = bytes_.subspan(s.sh_offset, s.sh_size);
    return {};
  }

  Elf64_Ehdr header_{};
  std::vector<Elf64_Shdr> sections_;
  std::vector<std::string> names_;
  std::vector<Elf64_Phdr> segments_;
  size_t load_count_ = 0;
  bool has_stack_segment_ = false;
  const Elf64_Phdr* tls_segment_ = nullptr;
  const Elf64_Phdr* dynamic_segment_ = nullptr;
};

}  // namespace

Status validateElfImage(std::span<const std::byte> bytes, const std::string& origin,
                        ValidatedElf* out) {
  return ElfChecker(bytes, origin).run(out);
}

}  // namespace maia::driver
