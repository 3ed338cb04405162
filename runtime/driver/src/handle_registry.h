// HandleRegistry: the live handles of one kind, so that the C API can tell a
// valid handle from a destroyed or foreign one without dereferencing it.
#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>

namespace maia::driver {

template <typename T>
class HandleRegistry {
 public:
  void add(std::shared_ptr<T> object) {
    std::lock_guard<std::mutex> lock(mutex_);
    T* key = object.get();
    live_.emplace(key, std::move(object));
  }

  /// The object for handle, or null if it is not live.
  std::shared_ptr<T> find(const T* handle) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(const_cast<T*>(handle));
    return it == live_.end() ? nullptr : it->second;
  }

  /// Removes handle; returns the object (null if it was not live).
  std::shared_ptr<T> remove(const T* handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(const_cast<T*>(handle));
    if (it == live_.end()) return nullptr;
    std::shared_ptr<T> object = std::move(it->second);
    live_.erase(it);
    return object;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<T*, std::shared_ptr<T>> live_;
};

}  // namespace maia::driver
