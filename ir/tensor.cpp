#include "ir/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace fusor {

namespace {
std::shared_ptr<void> allocate(size_t bytes, const std::string& what) {
  size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  if (rounded == 0) rounded = kTensorAlignment;
  void* p = std::aligned_alloc(kTensorAlignment, rounded);
  if (!p) fail(ErrorCode::OutOfMemory, "cannot allocate ", bytes, " bytes for ", what);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}
}  // namespace

Tensor Tensor::empty(DType dtype, Shape shape) {
  Tensor t;
  t.numel_ = checked_numel_by(shape.dims(), [&] { return "tensor " + std::string(dtype_name(dtype)) + shape.str(); });
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.owner_ = allocate(t.nbytes(), t.type_str());
  t.data_ = t.owner_.get();
  t.defined_ = true;
  return t;
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor t = empty(dtype, std::move(shape));
  std::memset(t.data_, 0, t.nbytes());
  return t;
}

Tensor Tensor::borrow(void* data, DType dtype, Shape shape) {
  Tensor t;
  t.numel_ = checked_numel_by(shape.dims(), [&] { return "tensor " + std::string(dtype_name(dtype)) + shape.str(); });
  FUSOR_CHECK(data != nullptr || t.numel_ == 0, InvalidArgument,
              "Tensor::borrow: null data for ", dtype_name(dtype), shape.str());
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.data_ = data;
  t.defined_ = true;
  return t;
}

Tensor Tensor::wrap_device(uint64_t address, DType dtype, Shape shape, std::shared_ptr<void> owner) {
  Tensor t;
  t.numel_ = checked_numel_by(shape.dims(), [&] { return "tensor " + std::string(dtype_name(dtype)) + shape.str(); });
  FUSOR_CHECK(address != 0 || t.numel_ == 0, InvalidArgument, "Tensor::wrap_device: null device address for ",
              dtype_name(dtype), shape.str());
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.address_ = address;
  t.owner_ = std::move(owner);
  t.device_ = Device::Cuda;
  t.defined_ = true;
  return t;
}

const char* device_name(Device d) { return d == Device::Host ? "host" : "cuda"; }

void Tensor::check_host(const char* what) const {
  if (device_ != Device::Host)
    fail(ErrorCode::InvalidArgument, "tensor ", type_str(), " is in ", device_name(device_), " device memory: ", what,
         " reads host memory (copy it to the host first, e.g. Engine::to_host)");
}

Tensor Tensor::from_doubles(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t = empty(dtype, std::move(shape));
  FUSOR_CHECK(int64_t(values.size()) == t.numel_, ShapeMismatch, "Tensor::from_doubles: ",
              values.size(), " values for ", t.type_str());
  for (int64_t i = 0; i < t.numel_; ++i) t.set(i, values[size_t(i)]);
  return t;
}

void Tensor::check_type(size_t size, int tag) const {
  check_host("data()");
  bool ok = false;
  switch (dtype_) {
    case DType::F32: ok = tag == 1; break;
    case DType::I64: ok = tag == 2; break;
    case DType::I32: ok = tag == 3; break;
    case DType::Bool: ok = tag == 4; break;
    case DType::F16:
    case DType::BF16: ok = tag == 5; break;
  }
  if (!ok || size != dtype_size(dtype_))
    fail(ErrorCode::DTypeMismatch, "tensor ", type_str(), " accessed with an element type of ",
         size, " bytes that does not match ", dtype_name(dtype_));
}

double Tensor::at(int64_t i) const {
  check_host("at()");
  FUSOR_ASSERT(i >= 0 && i < numel_, "element ", i, " of ", type_str());
  const char* p = static_cast<const char*>(data_);
  switch (dtype_) {
    case DType::F32: return double(reinterpret_cast<const float*>(p)[i]);
    case DType::F16: return double(f16_to_f32(reinterpret_cast<const uint16_t*>(p)[i]));
    case DType::BF16: return double(bf16_to_f32(reinterpret_cast<const uint16_t*>(p)[i]));
    case DType::I64: return double(reinterpret_cast<const int64_t*>(p)[i]);
    case DType::I32: return double(reinterpret_cast<const int32_t*>(p)[i]);
    case DType::Bool: return reinterpret_cast<const uint8_t*>(p)[i] ? 1.0 : 0.0;
  }
  return 0;
}

void Tensor::set(int64_t i, double v) {
  check_host("set()");
  FUSOR_ASSERT(i >= 0 && i < numel_, "element ", i, " of ", type_str());
  char* p = static_cast<char*>(data_);
  switch (dtype_) {
    case DType::F32: reinterpret_cast<float*>(p)[i] = float(v); break;
    case DType::F16: reinterpret_cast<uint16_t*>(p)[i] = f32_to_f16(float(v)); break;
    case DType::BF16: reinterpret_cast<uint16_t*>(p)[i] = f32_to_bf16(float(v)); break;
    case DType::I64: reinterpret_cast<int64_t*>(p)[i] = int64_t(v); break;
    case DType::I32: reinterpret_cast<int32_t*>(p)[i] = int32_t(v); break;
    case DType::Bool: reinterpret_cast<uint8_t*>(p)[i] = v != 0.0; break;
  }
}

Tensor Tensor::clone() const {
  FUSOR_CHECK(defined_, InvalidArgument, "clone of an undefined tensor");
  check_host("clone()");
  Tensor t = empty(dtype_, shape_);
  if (nbytes()) std::memcpy(t.data_, data_, nbytes());
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  int64_t n = checked_numel_by(shape.dims(), [&] { return "reshape target " + shape.str(); });
  FUSOR_CHECK(n == numel_, ShapeMismatch, "cannot view ", type_str(), " as ", shape.str(),
              ": element counts differ");
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

std::string Tensor::type_str() const { return std::string(dtype_name(dtype_)) + shape_.str(); }

}  // namespace fusor
