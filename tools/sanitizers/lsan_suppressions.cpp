// LeakSanitizer suppressions of the test/torch gtest executable in the asan
// build (test/torch/CMakeLists.txt): only for code we do not write.
extern "C" const char* __lsan_default_suppressions() {
  // torch's CachingHostAllocatorImpl (a header template our pinned host
  // allocator instantiates) never deletes its blocks nor their stream sets:
  // its destructor at exit leaves them, by design (as CUDA's does).
  return "leak:CachingHostAllocator.h\n";
}
