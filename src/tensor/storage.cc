#include "tenferro/tensor/storage.h"

namespace tenferro {

std::string_view storage_kind_name(StorageKind kind) noexcept {
  switch (kind) {
    case StorageKind::kPlain: return "plain";
    case StorageKind::kPooled: return "pooled";
    case StorageKind::kManaged: return "managed";
    case StorageKind::kForeign: return "foreign";
  }
  return "unknown";
}

std::shared_ptr<ExternalStorage> ExternalStorage::managed(void* data, int64_t byte_size,
                                                          std::function<void(void*)> deleter) {
  // Note [Managed deleter runs once]: the deleter lives in the storage from its
  // construction, so it runs exactly once whenever the storage dies; if even the
  // allocation of the storage fails, it runs here before the exception propagates.
  std::unique_ptr<ExternalStorage> owned;
  try {
    owned.reset(new ExternalStorage(data, byte_size, StorageKind::kManaged, true, deleter, nullptr));
  } catch (...) {
    if (deleter) deleter(data);
    throw;
  }
  // If the control block cannot be allocated, `owned` keeps the storage and its
  // destructor runs the deleter.
  return std::shared_ptr<ExternalStorage>(std::move(owned));
}

std::shared_ptr<ExternalStorage> ExternalStorage::foreign(void* data, int64_t byte_size,
                                                          std::shared_ptr<const void> keep_alive,
                                                          bool writable) {
  return std::shared_ptr<ExternalStorage>(
      new ExternalStorage(data, byte_size, StorageKind::kForeign, writable, nullptr, std::move(keep_alive)));
}

ExternalStorage::~ExternalStorage() {
  if (deleter_) deleter_(data());
}

}  // namespace tenferro
