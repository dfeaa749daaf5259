// Element lifetime in TypedTensor<T> host storage for a user type that counts
// constructions and destructions and detects double destruction.

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <stdexcept>

#include "tenferro/tensor/tensor.h"

namespace tenferro {
namespace {

// Tracks every live object by address: a double destruction or a destruction of an
// object never constructed fails the test.
class Counted {
 public:
  static inline int64_t constructed = 0;
  static inline int64_t destroyed = 0;
  static inline int64_t bad_destroys = 0;
  static inline int64_t throw_after = -1;  // throw on the n-th construction from now
  static std::set<const Counted*>& live() {
    static std::set<const Counted*> s;
    return s;
  }
  static void reset() {
    constructed = destroyed = bad_destroys = 0;
    throw_after = -1;
    live().clear();
  }

  Counted() : value_(0) { born(); }
  explicit Counted(int v) : value_(v) { born(); }
  Counted(const Counted& o) : value_(o.value_) { born(); }
  Counted(Counted&& o) noexcept : value_(o.value_) { born_noexcept(); }
  Counted& operator=(const Counted&) = default;
  ~Counted() {
    if (live().erase(this) != 1) ++bad_destroys;
    ++destroyed;
  }
  int value() const { return value_; }

 private:
  void born() {
    if (throw_after == 0) {
      throw_after = -1;
      throw std::runtime_error("construction failed");
    }
    if (throw_after > 0) --throw_after;
    born_noexcept();
  }
  void born_noexcept() noexcept {
    live().insert(this);
    ++constructed;
  }
  int value_;
};

class ElementLifetime : public ::testing::Test {
 protected:
  void SetUp() override { Counted::reset(); }
  void TearDown() override {
    EXPECT_EQ(Counted::constructed, Counted::destroyed) << "every element destroyed exactly once";
    EXPECT_EQ(Counted::bad_destroys, 0);
    EXPECT_TRUE(Counted::live().empty());
  }
};

TEST_F(ElementLifetime, FullCloneMove) {
  {
    auto t = TypedTensor<Counted>::full({3, 4}, Counted(7)).value();
    EXPECT_EQ(Counted::constructed - Counted::destroyed, 12);
    auto copy = t;  // shares storage
    EXPECT_EQ(Counted::constructed - Counted::destroyed, 12);
    auto cl = t.clone().value();
    EXPECT_EQ(Counted::constructed - Counted::destroyed, 24);
    EXPECT_FALSE(cl.shares_storage_with(t));
    EXPECT_EQ(cl.get({2, 3}).value().value(), 7);
    auto moved = std::move(t);
    EXPECT_EQ(Counted::constructed - Counted::destroyed, 24 + 0) << "moving a handle builds nothing";
    auto strided = moved.permute({1, 0}).value().slice(0, 3, -1, -2).value().clone().value();
    EXPECT_EQ(strided.numel(), 6);
    EXPECT_EQ(Counted::constructed - Counted::destroyed, 30);
  }
}

TEST_F(ElementLifetime, AdoptedVector) {
  {
    std::vector<Counted> v;
    v.reserve(5);
    for (int i = 0; i < 5; ++i) v.emplace_back(i);
    const int64_t before = Counted::constructed;
    auto t = TypedTensor<Counted>::from_col_major({5}, std::move(v)).value();
    EXPECT_EQ(Counted::constructed, before) << "adoption constructs nothing";
    EXPECT_EQ(t.get({4}).value().value(), 4);
  }
}

TEST_F(ElementLifetime, PooledRecycling) {
  auto pool = HostBufferPool::create();
  for (int round = 0; round < 5; ++round) {
    auto t = TypedTensor<Counted>::full({64}, Counted(round), pool).value();
    EXPECT_EQ(t.storage()->kind(), StorageKind::kPooled);
    EXPECT_EQ(t.get({63}).value().value(), round);
    auto c = t.to_col_major(pool).value();
    EXPECT_EQ(Counted::constructed - Counted::destroyed, 128);  // the argument temporary is gone
  }
  HostBufferPoolStats s = pool->stats();
  EXPECT_EQ(s.misses, 2);
  EXPECT_EQ(s.hits, 8);
  EXPECT_EQ(s.outstanding_buffers, 0);
}

TEST_F(ElementLifetime, ThrowingConstructorLeavesNothingBehind) {
  Counted::throw_after = 10;
  EXPECT_THROW((void)TypedTensor<Counted>::zeros({20}), std::runtime_error);
  Counted::throw_after = 3;
  auto pool = HostBufferPool::create();
  EXPECT_THROW((void)TypedTensor<Counted>::zeros({20}, pool), std::runtime_error);
  EXPECT_EQ(pool->stats().outstanding_buffers, 0) << "the lease went back";
  EXPECT_EQ(pool->stats().retained_buffers, 1);
}

// Note [Inline small storage]: up to 128 bytes of data live inside the storage object,
// with or without a pool; one element more goes to the pool (or a plain allocation).
TEST(InlineStorage, SmallDataLivesInsideTheStorageObject) {
  auto pool = HostBufferPool::create();
  for (const bool pooled : {false, true}) {
    const std::shared_ptr<HostBufferPool> p = pooled ? pool : nullptr;
    for (DType d : {DType::kBool, DType::kI32, DType::kF64, DType::kC128}) {
      const int64_t fit = 128 / dtype_size(d);
      for (const int64_t n : {int64_t{0}, int64_t{1}, fit, fit + 1}) {
        Tensor t = Tensor::uninitialized(d, {n}, p).value();
        const auto* object = reinterpret_cast<const char*>(t.storage().get());
        const auto* data = static_cast<const char*>(t.storage()->data());
        visit_dtype(d, [&]<class T>() {
          const bool inline_kind = dynamic_cast<const InlineStorage<T>*>(t.storage().get()) != nullptr;
          EXPECT_EQ(inline_kind, n <= fit) << dtype_name(d) << " n=" << n << " pool " << pooled;
          if (inline_kind) {
            EXPECT_TRUE(data > object && data + n * dtype_size(d) <= object + sizeof(InlineStorage<T>));
          }
        });
        EXPECT_EQ(t.storage()->kind(), n <= fit || !pooled ? StorageKind::kPlain : StorageKind::kPooled);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % 16, 0u);
        EXPECT_EQ(t.storage()->byte_size(), n * dtype_size(d));
      }
    }
    // Values written through the handle read back (bool starts false, as documented).
    Tensor b = Tensor::uninitialized(DType::kBool, {5}, p).value();
    for (int64_t i = 0; i < 5; ++i) EXPECT_FALSE(static_cast<const bool*>(b.storage()->data())[i]);
    TypedTensor<double> x = TypedTensor<double>::full({2, 3}, 2.5, p).value();
    EXPECT_EQ(x.get({1, 2}).value(), 2.5);
  }
  const HostBufferPoolStats st = pool->stats();
  EXPECT_EQ(st.misses + st.hits, 4) << "only the four tensors one element past the inline size used the pool";
}

TEST(ExternalStorage, ManagedDeleterRunsOnce) {
  int deleted = 0;
  double* raw = new double[6]{1, 2, 3, 4, 5, 6};
  {
    auto t = TypedTensor<double>::adopt({2, 3}, raw, 6, [&](double* p) {
      ++deleted;
      delete[] p;
    }).value();
    EXPECT_EQ(t.storage()->kind(), StorageKind::kManaged);
    auto view = t.transpose().value();
    EXPECT_EQ(view.get({2, 1}).value(), 6.0);
    t = TypedTensor<double>();
    EXPECT_EQ(deleted, 0) << "a view keeps the storage";
  }
  EXPECT_EQ(deleted, 1);
  // Adoption failing validation still releases the memory exactly once.
  int deleted2 = 0;
  auto bad = TypedTensor<double>::adopt({4}, new double[2], 2, [&](double* p) {
    ++deleted2;
    delete[] p;
  });
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidLayout);
  EXPECT_EQ(deleted2, 1);
}

TEST(ExternalStorage, ForeignKeepAliveAndReadOnly) {
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4});
  std::weak_ptr<std::vector<float>> weak = owner;
  auto t = TypedTensor<float>::wrap({2, 2}, owner->data(), 4, owner).value();
  owner.reset();
  EXPECT_FALSE(weak.expired()) << "the tensor keeps the foreign owner alive";
  EXPECT_EQ(t.get({1, 1}).value(), 4.0f);
  {
    auto m = t.view_mut().value();
    ASSERT_TRUE(m.set({0, 0}, 10.0f).has_value());
  }
  EXPECT_EQ((*weak.lock())[0], 10.0f) << "writes reach the foreign buffer";
  t = TypedTensor<float>();
  EXPECT_TRUE(weak.expired());

  const std::vector<float> constant{1, 2};
  auto ro = TypedTensor<float>::wrap({2}, constant.data(), 2, nullptr).value();
  EXPECT_EQ(ro.view_mut().error().code(), ErrorCode::kReadOnly);
  EXPECT_EQ(TypedTensor<float>::wrap({3}, constant.data(), 2, nullptr).error().code(), ErrorCode::kInvalidLayout);
  EXPECT_EQ(TypedTensor<float>::wrap({3}, static_cast<const float*>(nullptr), 3, nullptr).error().code(),
            ErrorCode::kInvalidArgument);
}

TEST(ExternalStorage, StorageKindsAreNamed) {
  EXPECT_EQ(storage_kind_name(StorageKind::kPooled), "pooled");
  EXPECT_EQ(storage_kind_name(StorageKind::kForeign), "foreign");
}

}  // namespace
}  // namespace tenferro
