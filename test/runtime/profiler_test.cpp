// The activity records of maia/profiler.h for host functions: named ones
// carry their name (what a communication library's collectives show in a
// trace), unnamed ones the kind's name; both are timed on the stream.
#include <maia/profiler.h>

#include <string>
#include <vector>

#include "test_util.h"

using namespace maia_test;

namespace {

void noop(void*) {}

std::vector<maiaActivityRecord> flushAll() {
  size_t waiting = 0;
  EXPECT_EQ(maiaProfilerFlush(nullptr, 0, &waiting), maiaSuccess);
  std::vector<maiaActivityRecord> records(waiting);
  size_t got = 0;
  EXPECT_EQ(maiaProfilerFlush(records.data(), records.size(), &got), maiaSuccess);
  records.resize(got);
  return records;
}

TEST(ProfilerTest, HostFunctionRecordsCarryTheirName) {
  maiaStream_t stream;
  MAIA_ASSERT_OK(maiaStreamCreate(&stream, 0));
  MAIA_ASSERT_OK(maiaProfilerStart());
  MAIA_ASSERT_OK(maiaLaunchHostFuncNamed(stream, noop, nullptr, "allreduce seq 7"));
  MAIA_ASSERT_OK(maiaLaunchHostFunc(stream, noop, nullptr));
  MAIA_ASSERT_OK(maiaLaunchHostFuncNamed(stream, noop, nullptr, ""));
  MAIA_ASSERT_OK(maiaStreamSynchronize(stream));
  MAIA_ASSERT_OK(maiaProfilerStop());
  std::vector<maiaActivityRecord> records = flushAll();
  ASSERT_EQ(records.size(), 3u);
  std::vector<std::string> names;
  for (const maiaActivityRecord& record : records) {
    EXPECT_EQ(record.kind, maiaActivityHostFunction);
    EXPECT_LE(record.enqueue_ns, record.start_ns);
    EXPECT_LE(record.start_ns, record.end_ns);
    names.emplace_back(record.name);
  }
  // One stream: completion order is enqueue order.
  EXPECT_EQ(names, (std::vector<std::string>{"allreduce seq 7", "Host function",
                                             "Host function"}));
  MAIA_ASSERT_OK(maiaStreamDestroy(stream));
}

TEST(ProfilerTest, LongHostFunctionNamesAreCutNotOverrun) {
  MAIA_ASSERT_OK(maiaProfilerStart());
  const std::string name(3 * MAIA_ACTIVITY_NAME_BYTES, 'x');
  MAIA_ASSERT_OK(maiaLaunchHostFuncNamed(nullptr, noop, nullptr, name.c_str()));
  MAIA_ASSERT_OK(maiaStreamSynchronize(nullptr));
  MAIA_ASSERT_OK(maiaProfilerStop());
  std::vector<maiaActivityRecord> records = flushAll();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(std::string(records[0].name), name.substr(0, MAIA_ACTIVITY_NAME_BYTES - 1));
}

TEST(ProfilerTest, NamedHostFunctionRejectsNullFunction) {
  EXPECT_EQ(maiaLaunchHostFuncNamed(nullptr, nullptr, nullptr, "x"), maiaErrorInvalidValue);
  EXPECT_NE(std::string(maiaGetLastErrorMessage()).find("fn is NULL"), std::string::npos);
}

}  // namespace
