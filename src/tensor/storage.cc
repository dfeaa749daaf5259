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
  auto s = std::shared_ptr<ExternalStorage>(new ExternalStorage(data, byte_size, StorageKind::kManaged, true));
  s->deleter_ = std::move(deleter);
  return s;
}

std::shared_ptr<ExternalStorage> ExternalStorage::foreign(void* data, int64_t byte_size,
                                                          std::shared_ptr<const void> keep_alive,
                                                          bool writable) {
  auto s = std::shared_ptr<ExternalStorage>(new ExternalStorage(data, byte_size, StorageKind::kForeign, writable));
  s->keep_alive_ = std::move(keep_alive);
  return s;
}

ExternalStorage::~ExternalStorage() {
  if (deleter_) deleter_(data());
}

}  // namespace tenferro
