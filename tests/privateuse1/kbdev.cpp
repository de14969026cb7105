// "kbdev": a PrivateUse1 test device whose memory is plain host memory.
//
// It implements only what it takes to create tensors, view them and copy them to and from the CPU, plus one
// arithmetic operator (add.Tensor). Every other operator goes through PyTorch's own boxed CPU fallback, which
// warns once per operator in the words MPS uses (aten/src/ATen/mps/MPSFallback.mm), so tests see a real fallback.

#include <ATen/EmptyTensor.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/add.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/Allocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/library.h>

#include <cstring>
#include <mutex>
#include <string>
#include <unordered_set>

namespace {

constexpr c10::DispatchKeySet kDeviceKeys(c10::DispatchKey::PrivateUse1);

struct HostAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    void* data = nbytes ? c10::alloc_cpu(nbytes) : nullptr;
    return {data, data, &Delete, c10::Device(c10::DeviceType::PrivateUse1, 0)};
  }
  static void Delete(void* ptr) {
    if (ptr) c10::free_cpu(ptr);
  }
  c10::DeleterFnPtr raw_deleter() const override { return &Delete; }
  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }
};

HostAllocator allocator;

// A CPU tensor over the same host memory, so the native kernels and copies can reuse CPU code without copying.
at::Tensor host_alias(const at::Tensor& t) {
  if (t.device().type() != c10::DeviceType::PrivateUse1) return t;
  c10::Storage storage(c10::Storage::use_byte_size_t(), t.storage().nbytes(),
                       c10::DataPtr(t.storage().mutable_data(), c10::Device(c10::DeviceType::CPU)),
                       /*allocator=*/nullptr, /*resizable=*/false);
  auto alias = at::detail::make_tensor<c10::TensorImpl>(std::move(storage), c10::DispatchKeySet(c10::DispatchKey::CPU),
                                                        t.dtype());
  alias.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
  return alias;
}

at::Tensor empty_memory_format(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout>, std::optional<at::Device>, std::optional<bool>,
                               std::optional<at::MemoryFormat> memory_format) {
  return at::detail::empty_generic(size, &allocator, kDeviceKeys, c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout>, std::optional<at::Device>, std::optional<bool>) {
  return at::detail::empty_strided_generic(size, stride, &allocator, kDeviceKeys, c10::dtype_or_default(dtype));
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool /*non_blocking*/) {
  host_alias(dst).copy_(host_alias(self));
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

const at::Tensor& resize_(const at::Tensor& self, at::IntArrayRef size, std::optional<at::MemoryFormat> format) {
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(size);
  at::native::maybe_resize_storage_cpu(
      impl, at::detail::computeStorageNbytesContiguous(size, impl->dtype().itemsize(), impl->storage_offset()));
  if (format.has_value() && *format != at::MemoryFormat::Preserve) impl->empty_tensor_restride(*format);
  return self;
}

// The one arithmetic operator the device runs itself.
at::Tensor add_tensor(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  const auto result = at::add(host_alias(self), host_alias(other), alpha);
  at::Tensor out = at::detail::empty_strided_generic(result.sizes(), result.strides(), &allocator, kDeviceKeys,
                                                     result.scalar_type());
  host_alias(out).copy_(result);
  return out;
}

void cpu_fallback_with_warning(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  static std::mutex mutex;
  static std::unordered_set<std::string> warned;
  const auto name = c10::toString(op.operator_name());
  bool first;
  {
    std::lock_guard<std::mutex> lock(mutex);
    first = warned.insert(name).second;
  }
  if (first) {
    TORCH_WARN("The operator '", name, "' is not currently supported on the kbdev backend and will fall back to ",
               "run on the CPU. This may have performance implications.");
  }
  at::native::cpu_fallback(op, stack);
}

struct Hooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  at::Device getDeviceFromPtr(void*) const override { return c10::Device(c10::DeviceType::PrivateUse1, 0); }
};

const bool hooks_registered = [] {
  static Hooks hooks;
  at::RegisterPrivateUse1HooksInterface(&hooks);
  return true;
}();

}  // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, c10::impl::NoOpDeviceGuardImpl<c10::DeviceType::PrivateUse1>);
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &allocator);

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", &empty_memory_format);
  m.impl("empty_strided", &empty_strided);
  m.impl("_copy_from", &copy_from);
  m.impl("_copy_from_and_resize", &copy_from_and_resize);
  m.impl("resize_", &resize_);
  m.impl("as_strided", &at::native::as_strided_tensorimpl);
  m.impl("view", &at::native::view);
  m.impl("_reshape_alias", &at::native::_reshape_alias);
  m.impl("add.Tensor", &add_tensor);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback_with_warning>());
}
