#include "MaiaCachingAllocator.h"

#include <c10/util/flat_hash_map.h>

#include <array>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "MaiaCheck.h"
#include "MaiaFunctions.h"
#include "MaiaStream.h"

namespace torch_maia {
namespace {

using c10::CachingAllocator::format_size;
using c10::CachingAllocator::StatArray;
using c10::CachingAllocator::StatType;
using c10::CachingAllocator::StatTypes;
using c10::CachingDeviceAllocator::DeviceStats;

// The size classes of CUDA's caching allocator: users tune their models
// against these numbers, so matching them makes memory behaviour portable.
constexpr size_t kMinBlockSize = 512;          // every size is a multiple of this
constexpr size_t kSmallSize = 1 << 20;         // largest request of the small pool
constexpr size_t kSmallBuffer = 2 << 20;       // segments of the small pool
constexpr size_t kLargeBuffer = 20 << 20;      // segments for 1-10 MiB requests
constexpr size_t kMinLargeAlloc = 10 << 20;    // from here a request gets its own segment
constexpr size_t kRoundLarge = 2 << 20;        // ... rounded up to this
constexpr int kMaxDevices = 16;                // the driver's limit

size_t roundUp(size_t size, size_t step) { return (size + step - 1) / step * step; }

/// MAIA_ALLOC_FILL=<byte> (0-255, decimal or 0x..): every allocation is
/// filled with it on the current stream before the caller gets it, so that
/// a kernel reading memory nothing wrote (an output it does not fully
/// write, a read past a view) reads the same garbage every run instead of
/// whatever the block held (0xff: NaN in every float dtype, -1 in the
/// signed integers). -1: off (the default). A debugging aid: each
/// allocation costs a fill.
int allocationFill() {
  static const int fill = [] {
    const char* value = std::getenv("MAIA_ALLOC_FILL");
    if (value == nullptr || *value == '\0') return -1;
    char* end = nullptr;
    long byte = std::strtol(value, &end, 0);
    TORCH_CHECK(*end == '\0' && byte >= 0 && byte <= 255, "MAIA_ALLOC_FILL='", value,
                "' is not a byte value (0-255, e.g. 0xff)");
    return static_cast<int>(byte);
  }();
  return fill;
}

size_t roundSize(size_t size) {
  return size < kMinBlockSize ? kMinBlockSize : roundUp(size, kMinBlockSize);
}

/// How much to ask the driver for when no cached block fits a rounded size.
size_t segmentSize(size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return roundUp(size, kRoundLarge);
}

struct Pool;

/// A range of one segment (one maiaMalloc): allocated, cached, or waiting for
/// the events of the streams that used it.
struct Block {
  Block(size_t size_, char* ptr_, c10::StreamId stream_, Pool* pool_)
      : size(size_), ptr(ptr_), stream(stream_), pool(pool_) {}
  size_t size;
  char* ptr;
  c10::StreamId stream;  // allocation stream: all blocks of a segment share it
  Pool* pool;
  size_t requested = 0;  // what the user asked for (reported unrounded)
  bool allocated = false;
  int event_count = 0;  // free-time events still pending
  std::vector<std::pair<c10::Stream, maiaStream_t>> stream_uses;  // from recordStream
  Block* prev = nullptr;  // neighbours in the segment
  Block* next = nullptr;

  bool isSplit() const { return prev != nullptr || next != nullptr; }
};

/// Free blocks ordered by (stream, size, address): lower_bound finds the
/// best fit on the right stream.
struct BlockOrder {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return a->stream < b->stream;
    if (a->size != b->size) return a->size < b->size;
    return std::less<const char*>()(a->ptr, b->ptr);
  }
};

using BlockSet = std::set<Block*, BlockOrder>;

struct Pool {
  Pool(c10::DeviceIndex device_, bool small) : device(device_), is_small(small) {}
  const c10::DeviceIndex device;
  const bool is_small;
  BlockSet free_blocks;
};

/// The memory of captured graphs (MaiaGraph.cpp): what a capture allocates
/// comes from here, and its blocks, freed or not, never serve allocations
/// outside the pool, because every replay writes them again. Graphs that
/// share a pool id share its memory. Once no graph holds the pool (uses ==
/// 0), its free segments go back to the driver, now and at emptyCache.
struct PrivatePool {
  explicit PrivatePool(c10::DeviceIndex device) : small(device, true), large(device, false) {}
  Pool small;
  Pool large;
  int uses = 0;
};

/// The pools, pending events and statistics of one device, under one mutex.
class DeviceCache {
 public:
  explicit DeviceCache(c10::DeviceIndex device)
      : device_(device), small_(device, true), large_(device, false) {}

  /// Must run with device_ current (maiaMalloc allocates there).
  Block* malloc(size_t request, c10::StreamId stream);
  void free(Block* block);
  void recordStream(Block* block, const c10::Stream& stream, maiaStream_t handle);
  void emptyCache();
  DeviceStats stats();
  void resetPeakStats();
  void resetAccumulatedStats();
  size_t cachedBlockCount();

  /// Graph capture: allocations from `stream` come from the private pool
  /// `id` (created on first use) until endAllocateToPool; the pool is held
  /// until releasePool.
  void beginAllocateToPool(c10::MempoolId_t id, c10::StreamId stream);
  void endAllocateToPool(c10::MempoolId_t id);
  void releasePool(c10::MempoolId_t id);

 private:
  Block* takeFreeBlock(Pool& pool, c10::StreamId stream, size_t size);
  Block* reclaimIdleSegment(Pool& pool, c10::StreamId stream, size_t size);
  Block* allocSegment(Pool& pool, c10::StreamId stream, size_t size, size_t request);
  [[noreturn]] void throwOutOfMemory(size_t request, const std::string& driver_message);
  Block* claim(Block* block, size_t size, size_t request);
  void freeBlock(Block* block);
  size_t tryMerge(Block* block, Block* neighbour);
  void insertEvents(Block* block);
  void eventDone(maiaEvent_t event, Block* block);
  void processEvents();
  void synchronizeEvents();
  void releaseCachedBlocks();
  void releaseSegment(Block* block);
  StatTypes statTypes(const Pool& pool) const;
  // Blocks and set nodes are recycled: a split and a merge per allocate/free
  // cycle would otherwise cost four heap operations on the hot path.
  Block* newBlock(size_t size, char* ptr, c10::StreamId stream, Pool* pool);
  void deleteBlock(Block* block);
  void insertFree(Block* block);
  BlockSet::iterator eraseFree(BlockSet& set, BlockSet::iterator it);

  template <typename F>
  void forEachStat(const Pool& pool, F f) {
    c10::CachingAllocator::for_each_selected_stat_type(statTypes(pool), f);
  }

  const c10::DeviceIndex device_;
  std::mutex mutex_;
  Pool small_;
  Pool large_;
  DeviceStats stats_;
  // Events recorded at free time on each used stream, oldest first: a
  // stream's events complete in order, so scanning stops at the first
  // pending one.
  std::unordered_map<c10::Stream, std::deque<std::pair<maiaEvent_t, Block*>>> pending_;
  std::vector<maiaEvent_t> spare_events_;  // completed events, recorded again later
  std::vector<Block*> spare_blocks_;
  std::vector<BlockSet::node_type> spare_nodes_;
  std::map<c10::MempoolId_t, std::unique_ptr<PrivatePool>> private_pools_;
  PrivatePool* capture_pool_ = nullptr;  // where allocations of capture_stream_ go
  c10::StreamId capture_stream_ = 0;
};

Block* DeviceCache::newBlock(size_t size, char* ptr, c10::StreamId stream, Pool* pool) {
  if (spare_blocks_.empty()) return new Block(size, ptr, stream, pool);
  Block* block = spare_blocks_.back();
  spare_blocks_.pop_back();
  *block = Block(size, ptr, stream, pool);
  return block;
}

void DeviceCache::deleteBlock(Block* block) { spare_blocks_.push_back(block); }

void DeviceCache::insertFree(Block* block) {
  BlockSet& set = block->pool->free_blocks;
  if (spare_nodes_.empty()) {
    set.insert(block);
    return;
  }
  BlockSet::node_type node = std::move(spare_nodes_.back());
  spare_nodes_.pop_back();
  node.value() = block;
  set.insert(std::move(node));
}

BlockSet::iterator DeviceCache::eraseFree(BlockSet& set, BlockSet::iterator it) {
  BlockSet::iterator next = std::next(it);
  spare_nodes_.push_back(set.extract(it));
  return next;
}

StatTypes DeviceCache::statTypes(const Pool& pool) const {
  StatTypes types{};
  types[static_cast<size_t>(StatType::AGGREGATE)] = true;
  types[static_cast<size_t>(pool.is_small ? StatType::SMALL_POOL : StatType::LARGE_POOL)] = true;
  return types;
}

Block* DeviceCache::malloc(size_t request, c10::StreamId stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  processEvents();
  size_t size = roundSize(request);
  const bool captured = capture_pool_ != nullptr && stream == capture_stream_;
  Pool& pool = captured ? (size <= kSmallSize ? capture_pool_->small : capture_pool_->large)
                        : (size <= kSmallSize ? small_ : large_);
  Block* block = takeFreeBlock(pool, stream, size);
  if (block == nullptr && !captured) block = reclaimIdleSegment(pool, stream, size);
  if (block == nullptr) block = allocSegment(pool, stream, size, request);
  return claim(block, size, request);
}

Block* DeviceCache::takeFreeBlock(Pool& pool, c10::StreamId stream, size_t size) {
  Block key(size, nullptr, stream, &pool);
  auto it = pool.free_blocks.lower_bound(&key);
  if (it == pool.free_blocks.end() || (*it)->stream != stream) return nullptr;
  Block* block = *it;
  eraseFree(pool.free_blocks, it);
  return block;
}

/// A whole free segment of another stream may move to this one once that
/// stream is idle: everything queued there before the free has then run.
/// Only whole segments move, so the blocks of a segment keep one stream.
Block* DeviceCache::reclaimIdleSegment(Pool& pool, c10::StreamId stream, size_t size) {
  std::unordered_map<c10::StreamId, bool> idle;
  for (auto it = pool.free_blocks.begin(); it != pool.free_blocks.end(); ++it) {
    Block* block = *it;
    if (block->stream == stream || block->isSplit() || block->size < size) continue;
    auto [known, inserted] = idle.try_emplace(block->stream, false);
    if (inserted) {
      c10::Stream owner(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device_),
                        block->stream);
      maiaError_t status = maiaStreamQuery(driverStream(owner));
      if (status != maiaSuccess && status != maiaErrorNotReady) maiaGetLastError();
      known->second = status == maiaSuccess;
    }
    if (!known->second) continue;
    eraseFree(pool.free_blocks, it);
    block->stream = stream;
    return block;
  }
  return nullptr;
}

Block* DeviceCache::allocSegment(Pool& pool, c10::StreamId stream, size_t size,
                                 size_t request) {
  size_t bytes = segmentSize(size);
  void* ptr = nullptr;
  maiaError_t error = maiaMalloc(&ptr, bytes);
  if (error == maiaErrorOutOfMemory) {
    // Cached segments count as used memory to the driver: give them back
    // and try once more, as CUDA's allocator does.
    maiaGetLastError();
    releaseCachedBlocks();
    stats_.num_alloc_retries += 1;
    error = maiaMalloc(&ptr, bytes);
  }
  if (error == maiaErrorOutOfMemory) {
    std::string driver_message = maiaGetLastErrorMessage();
    maiaGetLastError();
    throwOutOfMemory(request, driver_message);
  }
  MAIA_CHECK(error);
  stats_.num_device_alloc += 1;
  forEachStat(pool, [&](size_t t) {
    stats_.segment[t].increase(1);
    stats_.reserved_bytes[t].increase(bytes);
  });
  return newBlock(bytes, static_cast<char*>(ptr), stream, &pool);
}

void DeviceCache::throwOutOfMemory(size_t request, const std::string& driver_message) {
  stats_.num_ooms += 1;
  auto allocated = static_cast<size_t>(stats_.allocated_bytes[0].current);
  auto reserved = static_cast<size_t>(stats_.reserved_bytes[0].current);
  size_t free_bytes = 0, total = 0;
  if (maiaMemGetInfo(&free_bytes, &total) != maiaSuccess) maiaGetLastError();
  c10::Device device(c10::DeviceType::PrivateUse1, device_);
  c10::reportOutOfMemoryToProfiler(static_cast<int64_t>(request), allocated, reserved, device);
  TORCH_CHECK_WITH(OutOfMemoryError, false, "MAIA out of memory. Tried to allocate ",
                   format_size(request), " (", request, " bytes) on ", device,
                   ", which has a total capacity of ", format_size(total), " of which ",
                   format_size(free_bytes), " is free. Of the memory in use, ",
                   format_size(allocated), " is allocated by PyTorch and ", format_size(reserved),
                   " is reserved by PyTorch (cached segments were already released "
                   "and the allocation retried). Driver: ", driver_message);
}

/// Splits what the request does not need off block (if worth keeping) and
/// marks it allocated, with CUDA's accounting of inactive split blocks.
Block* DeviceCache::claim(Block* block, size_t size, size_t request) {
  Pool& pool = *block->pool;
  bool already_split = block->isSplit();
  size_t remaining = block->size - size;
  bool split = pool.is_small ? remaining >= kMinBlockSize : remaining > kSmallSize;
  if (split) {
    Block* rest = newBlock(remaining, block->ptr + size, block->stream, &pool);
    rest->prev = block;
    rest->next = block->next;
    if (rest->next != nullptr) rest->next->prev = rest;
    block->next = rest;
    block->size = size;
    insertFree(rest);
    forEachStat(pool, [&](size_t t) {
      if (already_split) {
        stats_.inactive_split_bytes[t].decrease(size);  // an inactive block shrank
      } else {
        stats_.inactive_split[t].increase(1);  // an unsplit block became two
        stats_.inactive_split_bytes[t].increase(remaining);
      }
    });
  } else if (already_split) {
    forEachStat(pool, [&](size_t t) {
      stats_.inactive_split[t].decrease(1);
      stats_.inactive_split_bytes[t].decrease(block->size);
    });
  }
  block->allocated = true;
  block->requested = request;
  forEachStat(pool, [&](size_t t) {
    stats_.allocation[t].increase(1);
    stats_.allocated_bytes[t].increase(block->size);
    stats_.active[t].increase(1);
    stats_.active_bytes[t].increase(block->size);
    stats_.requested_bytes[t].increase(request);
  });
  return block;
}

void DeviceCache::free(Block* block) {
  std::lock_guard<std::mutex> lock(mutex_);
  block->allocated = false;
  forEachStat(*block->pool, [&](size_t t) {
    stats_.allocation[t].decrease(1);
    stats_.allocated_bytes[t].decrease(block->size);
  });
  // A block used on other streams stays active until their work is done.
  if (!block->stream_uses.empty()) {
    insertEvents(block);
    if (block->event_count > 0) return;
  }
  freeBlock(block);
}

/// Returns a block to its pool, merged with free neighbours.
void DeviceCache::freeBlock(Block* block) {
  Pool& pool = *block->pool;
  size_t original_size = block->size;
  int64_t split_blocks_change = 0;
  int64_t split_bytes_change = 0;
  for (Block* neighbour : {block->prev, block->next}) {
    size_t subsumed = tryMerge(block, neighbour);
    if (subsumed > 0) {
      split_blocks_change -= 1;
      split_bytes_change -= static_cast<int64_t>(subsumed);
    }
  }
  insertFree(block);
  if (block->isSplit()) {
    split_blocks_change += 1;
    split_bytes_change += static_cast<int64_t>(block->size);
  }
  forEachStat(pool, [&](size_t t) {
    auto apply = [](c10::CachingAllocator::Stat& stat, int64_t change) {
      if (change > 0) stat.increase(static_cast<size_t>(change));
      if (change < 0) stat.decrease(static_cast<size_t>(-change));
    };
    apply(stats_.inactive_split[t], split_blocks_change);
    apply(stats_.inactive_split_bytes[t], split_bytes_change);
    stats_.active[t].decrease(1);
    stats_.active_bytes[t].decrease(original_size);
    stats_.requested_bytes[t].decrease(block->requested);
  });
  block->requested = 0;
}

/// Absorbs neighbour into block if it is free; returns the bytes absorbed.
size_t DeviceCache::tryMerge(Block* block, Block* neighbour) {
  if (neighbour == nullptr || neighbour->allocated || neighbour->event_count > 0) return 0;
  BlockSet& set = block->pool->free_blocks;
  auto it = set.find(neighbour);
  TORCH_INTERNAL_ASSERT_DEBUG_ONLY(it != set.end(), "a free neighbour is not cached");
  eraseFree(set, it);  // before block's key changes
  if (neighbour == block->prev) {
    block->ptr = neighbour->ptr;
    block->prev = neighbour->prev;
    if (block->prev != nullptr) block->prev->next = block;
  } else {
    block->next = neighbour->next;
    if (block->next != nullptr) block->next->prev = block;
  }
  size_t subsumed = neighbour->size;
  block->size += subsumed;
  deleteBlock(neighbour);
  return subsumed;
}

/// Records, on every stream the block was used on, an event that marks the
/// end of the work queued so far. Never throws: it runs in a deleter.
void DeviceCache::insertEvents(Block* block) {
  auto uses = std::move(block->stream_uses);
  block->stream_uses.clear();
  for (auto& [stream, handle] : uses) {
    maiaEvent_t event = nullptr;
    if (!spare_events_.empty()) {
      event = spare_events_.back();
      spare_events_.pop_back();
    } else if (maiaEventCreate(&event, maiaEventDisableTiming) != maiaSuccess) {
      event = nullptr;
    }
    if (event != nullptr && maiaEventRecord(event, handle) == maiaSuccess) {
      block->event_count += 1;
      pending_[stream].emplace_back(event, block);
      continue;
    }
    // No event (e.g. the stream's device has a sticky error and refuses new
    // work): wait for the stream instead, which is always safe.
    maiaGetLastError();
    if (event != nullptr) spare_events_.push_back(event);
    if (maiaStreamSynchronize(handle) != maiaSuccess) maiaGetLastError();
  }
}

void DeviceCache::eventDone(maiaEvent_t event, Block* block) {
  spare_events_.push_back(event);
  block->event_count -= 1;
  if (block->event_count == 0) freeBlock(block);
}

void DeviceCache::processEvents() {
  if (pending_.empty()) return;
  for (auto it = pending_.begin(); it != pending_.end();) {
    auto& events = it->second;
    while (!events.empty()) {
      maiaError_t status = maiaEventQuery(events.front().first);
      if (status == maiaErrorNotReady) break;
      if (status != maiaSuccess) maiaGetLastError();  // the record ran or was skipped
      auto [event, block] = events.front();
      events.pop_front();
      eventDone(event, block);
    }
    it = events.empty() ? pending_.erase(it) : std::next(it);
  }
}

void DeviceCache::synchronizeEvents() {
  if (pending_.empty()) return;
  stats_.num_sync_all_streams += 1;
  for (auto& [stream, events] : pending_) {
    for (auto [event, block] : events) {
      // Waits even on a device with a sticky error; the error is not ours.
      if (maiaEventSynchronize(event) != maiaSuccess) maiaGetLastError();
      eventDone(event, block);
    }
  }
  pending_.clear();
}

/// Gives every free whole segment back to the driver (not those of private
/// pools that graphs still hold).
void DeviceCache::releaseCachedBlocks() {
  synchronizeEvents();
  std::vector<Pool*> pools = {&small_, &large_};
  for (auto& [id, pool] : private_pools_) {
    if (pool->uses > 0) continue;
    pools.push_back(&pool->small);
    pools.push_back(&pool->large);
  }
  for (Pool* pool : pools) {
    for (auto it = pool->free_blocks.begin(); it != pool->free_blocks.end();) {
      Block* block = *it;
      if (block->isSplit()) {
        ++it;
        continue;
      }
      it = eraseFree(pool->free_blocks, it);
      releaseSegment(block);
    }
  }
  for (maiaEvent_t event : spare_events_) maiaEventDestroy(event);
  spare_events_.clear();
}

void DeviceCache::releaseSegment(Block* block) {
  maiaError_t error = maiaFree(block->ptr);
  if (error != maiaSuccess) {
    insertFree(block);  // still ours: keep the accounting true
    MAIA_CHECK(error);
  }
  stats_.num_device_free += 1;
  forEachStat(*block->pool, [&](size_t t) {
    stats_.segment[t].decrease(1);
    stats_.reserved_bytes[t].decrease(block->size);
  });
  deleteBlock(block);
}

void DeviceCache::recordStream(Block* block, const c10::Stream& stream, maiaStream_t handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  // The allocation stream is ordered with the free already.
  if (stream.device_index() == device_ && stream.id() == block->stream) return;
  for (const auto& use : block->stream_uses)
    if (use.first == stream) return;
  block->stream_uses.emplace_back(stream, handle);
}

void DeviceCache::emptyCache() {
  std::lock_guard<std::mutex> lock(mutex_);
  releaseCachedBlocks();
}

DeviceStats DeviceCache::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

template <typename F>
void forEachStatArray(DeviceStats& stats, F f) {
  for (StatArray* array : {&stats.allocation, &stats.segment, &stats.active,
                           &stats.inactive_split, &stats.allocated_bytes, &stats.reserved_bytes,
                           &stats.active_bytes, &stats.inactive_split_bytes,
                           &stats.requested_bytes})
    for (auto& stat : *array) f(stat);
  f(stats.oversize_allocations);
  f(stats.oversize_segments);
}

void DeviceCache::resetPeakStats() {
  std::lock_guard<std::mutex> lock(mutex_);
  forEachStatArray(stats_, [](c10::CachingAllocator::Stat& stat) { stat.reset_peak(); });
}

void DeviceCache::resetAccumulatedStats() {
  std::lock_guard<std::mutex> lock(mutex_);
  forEachStatArray(stats_, [](c10::CachingAllocator::Stat& stat) { stat.reset_accumulated(); });
  stats_.num_alloc_retries = 0;
  stats_.num_ooms = 0;
  stats_.num_sync_all_streams = 0;
  stats_.num_device_alloc = 0;
  stats_.num_device_free = 0;
}

void DeviceCache::beginAllocateToPool(c10::MempoolId_t id, c10::StreamId stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(capture_pool_ == nullptr, "maia:", static_cast<int>(device_),
              " is already capturing a graph; maia captures one graph per device at a time");
  std::unique_ptr<PrivatePool>& pool = private_pools_[id];
  if (!pool) pool = std::make_unique<PrivatePool>(device_);
  pool->uses += 1;
  capture_pool_ = pool.get();
  capture_stream_ = stream;
}

void DeviceCache::endAllocateToPool(c10::MempoolId_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = private_pools_.find(id);
  if (it != private_pools_.end() && it->second.get() == capture_pool_) capture_pool_ = nullptr;
}

void DeviceCache::releasePool(c10::MempoolId_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = private_pools_.find(id);
  if (it == private_pools_.end() || it->second->uses == 0) return;
  it->second->uses -= 1;
  // The segments go back at the next emptyCache (or out-of-memory retry),
  // as cached segments of the ordinary pools do.
}

size_t DeviceCache::cachedBlockCount() {
  std::lock_guard<std::mutex> lock(mutex_);
  return small_.free_blocks.size() + large_.free_blocks.size();
}

/// Pointer -> block for the deleter, which gets only the pointer. Sharded so
/// that threads freeing different tensors rarely meet on one mutex.
class BlockMap {
 public:
  void insert(Block* block) {
    Shard& shard = shardOf(block->ptr);
    std::lock_guard<std::mutex> lock(shard.mutex);
    shard.blocks.emplace(block->ptr, block);
  }
  Block* find(const void* ptr) {
    Shard& shard = shardOf(ptr);
    std::lock_guard<std::mutex> lock(shard.mutex);
    auto it = shard.blocks.find(const_cast<void*>(ptr));
    return it == shard.blocks.end() ? nullptr : it->second;
  }
  Block* take(void* ptr) {
    Shard& shard = shardOf(ptr);
    std::lock_guard<std::mutex> lock(shard.mutex);
    auto it = shard.blocks.find(ptr);
    if (it == shard.blocks.end()) return nullptr;
    Block* block = it->second;
    shard.blocks.erase(it);
    return block;
  }

 private:
  static constexpr size_t kShards = 16;
  struct alignas(64) Shard {
    std::mutex mutex;
    ska::flat_hash_map<void*, Block*> blocks;
  };
  Shard& shardOf(const void* ptr) {
    return shards_[(reinterpret_cast<uintptr_t>(ptr) / kMinBlockSize) % kShards];
  }
  std::array<Shard, kShards> shards_;
};

void deleteMaiaBlock(void* ptr);

class MaiaCachingAllocator final : public c10::DeviceAllocator {
 public:
  MaiaCachingAllocator() {
    for (int i = 0; i < kMaxDevices; ++i)
      caches_[i] = std::make_unique<DeviceCache>(static_cast<c10::DeviceIndex>(i));
  }

  c10::DataPtr allocate(size_t n) override {
    c10::DeviceIndex device = currentDevice();
    c10::Device where(c10::DeviceType::PrivateUse1, device);
    if (n == 0) return {nullptr, nullptr, &deleteMaiaBlock, where};
    c10::StreamId stream = currentStream(device).id();
    DeviceCache& cache = *caches_[device];
    Block* block = cache.malloc(n, stream);
    blocks_.insert(block);
    if (C10_UNLIKELY(allocationFill() >= 0))
      MAIA_CHECK(maiaMemsetAsync(block->ptr, allocationFill(), n,
                                 driverStream(currentStream(device))));
    if (C10_UNLIKELY(c10::memoryProfilingEnabled())) {
      DeviceStats stats = cache.stats();
      c10::reportMemoryUsageToProfiler(block->ptr, static_cast<int64_t>(block->size),
                                       stats.allocated_bytes[0].current,
                                       stats.reserved_bytes[0].current, where);
    }
    return {block->ptr, block->ptr, &deleteMaiaBlock, where};
  }

  void free(void* ptr) {
    if (ptr == nullptr) return;
    Block* block = blocks_.take(ptr);
    TORCH_CHECK(block != nullptr, "maia caching allocator: free of ", ptr,
                ", which it did not allocate (or already freed)");
    c10::DeviceIndex device = block->pool->device;
    int64_t size = static_cast<int64_t>(block->size);
    caches_[device]->free(block);  // block may be merged away from here on
    if (C10_UNLIKELY(c10::memoryProfilingEnabled())) {
      DeviceStats stats = caches_[device]->stats();
      c10::reportMemoryUsageToProfiler(ptr, -size, stats.allocated_bytes[0].current,
                                       stats.reserved_bytes[0].current,
                                       c10::Device(c10::DeviceType::PrivateUse1, device));
    }
  }

  c10::DeleterFnPtr raw_deleter() const override { return &deleteMaiaBlock; }

  void copy_data(void* dest, const void* src, size_t count) const override {
    MAIA_CHECK(maiaMemcpy(dest, src, count, maiaMemcpyDeviceToDevice));
  }

  bool initialized() override { return true; }

  // Every pool: the ordinary ones, and private pools no graph holds.
  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {
    for (c10::DeviceIndex d = 0; d < deviceCount(); ++d) caches_[d]->emptyCache();
  }

  void recordStream(const c10::DataPtr& ptr, c10::Stream stream) override {
    // Empty tensors and memory this allocator did not hand out (from_blob)
    // have nothing to protect.
    if (ptr.get() == nullptr || ptr.get_deleter() != &deleteMaiaBlock) return;
    Block* block = blocks_.find(ptr.get());
    TORCH_CHECK(block != nullptr, "recordStream: ", ptr.get(),
                " is not a live allocation of the maia caching allocator");
    maiaStream_t handle = driverStream(stream);  // validates the stream
    caches_[block->pool->device]->recordStream(block, stream, handle);
  }

  DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    return caches_[resolveDevice(device)]->stats();
  }
  void resetAccumulatedStats(c10::DeviceIndex device) override {
    caches_[resolveDevice(device)]->resetAccumulatedStats();
  }
  void resetPeakStats(c10::DeviceIndex device) override {
    caches_[resolveDevice(device)]->resetPeakStats();
  }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    device = resolveDevice(device);
    // maiaMemGetInfo answers for the current device; restore it even if it throws.
    struct Restore {
      c10::DeviceIndex previous;
      ~Restore() {
        if (maiaSetDevice(previous) != maiaSuccess) maiaGetLastError();
      }
    } restore{exchangeDevice(device)};
    size_t free_bytes = 0, total = 0;
    MAIA_CHECK(maiaMemGetInfo(&free_bytes, &total));
    return {free_bytes, total};
  }

  size_t cachedBlockCount(c10::DeviceIndex device) {
    return caches_[resolveDevice(device)]->cachedBlockCount();
  }

  DeviceCache& cache(c10::DeviceIndex device) { return *caches_[resolveDevice(device)]; }

 private:
  std::array<std::unique_ptr<DeviceCache>, kMaxDevices> caches_;
  BlockMap blocks_;
};

MaiaCachingAllocator* allocator() {
  static auto* instance = new MaiaCachingAllocator();  // outlives static destruction
  return instance;
}

void deleteMaiaBlock(void* ptr) { allocator()->free(ptr); }

}  // namespace

c10::DeviceAllocator* getMaiaCachingAllocator() { return allocator(); }

size_t cachedBlockCount(c10::DeviceIndex device) { return allocator()->cachedBlockCount(device); }

void beginAllocateToPool(c10::DeviceIndex device, c10::MempoolId_t pool, c10::StreamId stream) {
  allocator()->cache(device).beginAllocateToPool(pool, stream);
}

void endAllocateToPool(c10::DeviceIndex device, c10::MempoolId_t pool) {
  allocator()->cache(device).endAllocateToPool(pool);
}

void releasePool(c10::DeviceIndex device, c10::MempoolId_t pool) {
  allocator()->cache(device).releasePool(pool);
}

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, getMaiaCachingAllocator())

}  // namespace torch_maia
