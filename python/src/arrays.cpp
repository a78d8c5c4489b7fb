#include "arrays.h"

#include <cstdint>
#include <vector>

#include "ir/error.h"

namespace fusor::python {

namespace {
// NPY_ARRAY_C_CONTIGUOUS and NPY_ARRAY_ALIGNED of numpy's C API (stable since numpy 1.7).
constexpr int kCContiguous = 0x0001;
constexpr int kAligned = 0x0100;
}  // namespace

DType dtype_from_numpy(const py::dtype& dt, const std::string& what) {
  const char kind = dt.kind();
  const auto size = dt.itemsize();
  if (kind == 'f' && size == 4) return DType::F32;
  if (kind == 'f' && size == 2) return DType::F16;
  if (kind == 'i' && size == 8) return DType::I64;
  if (kind == 'i' && size == 4) return DType::I32;
  if (kind == 'b' && size == 1) return DType::Bool;
  if (kind == 'u' && size == 2) return DType::BF16;
  if (size == 2 && py::str(dt.attr("name")).cast<std::string>() == "bfloat16") return DType::BF16;
  fail(ErrorCode::DTypeMismatch, what, ": numpy dtype ", py::str(dt.attr("name")).cast<std::string>(),
       " has no fusor element type (float32, float16, int64, int32, bool; bf16 as uint16 or ml_dtypes.bfloat16)");
}

py::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::F32: return py::dtype::of<float>();
    case DType::F16: return py::dtype("float16");
    case DType::BF16: return py::dtype::of<uint16_t>();
    case DType::I64: return py::dtype::of<int64_t>();
    case DType::I32: return py::dtype::of<int32_t>();
    case DType::Bool: return py::dtype::of<bool>();
  }
  fail(ErrorCode::Internal, "a dtype without a numpy type: ", int(t));
}

Feed to_feed(py::handle obj, const std::string& name) {
  Feed feed;
  if (py::isinstance<py::array>(obj)) {
    feed.keep = py::reinterpret_borrow<py::array>(obj);
  } else {
    py::object converted = py::module_::import("numpy").attr("asarray")(obj);
    feed.keep = py::reinterpret_borrow<py::array>(converted);
  }
  const std::string what = "input '" + name + "'";
  py::dtype dt = feed.keep.dtype();
  const DType dtype = dtype_from_numpy(dt, what);
  const bool native = dt.attr("isnative").cast<bool>();
  const int flags = feed.keep.flags();
  const bool aligned = (flags & kAligned) != 0 &&
                       reinterpret_cast<uintptr_t>(feed.keep.data()) % uintptr_t(dt.itemsize()) == 0;
  if (!native || !aligned || (flags & kCContiguous) == 0) {
    py::object target = native ? py::object(dt) : dt.attr("newbyteorder")("=");
    py::object copy = feed.keep.attr("astype")(target, py::arg("order") = "C", py::arg("copy") = true);
    feed.keep = py::reinterpret_borrow<py::array>(copy);
    feed.copied = true;
  }
  std::vector<int64_t> dims(size_t(feed.keep.ndim()));
  for (size_t i = 0; i < dims.size(); ++i) dims[i] = int64_t(feed.keep.shape(py::ssize_t(i)));
  // The engine only reads its inputs: a read-only array is borrowed as well.
  feed.tensor = Tensor::borrow(const_cast<void*>(feed.keep.data()), dtype, Shape(std::move(dims)));
  return feed;
}

py::array to_numpy(const Tensor& t) {
  FUSOR_CHECK(t.device() == Device::Host, InvalidArgument, "a tensor in device memory cannot become a numpy array");
  if (t.numel() == 0) {
    std::vector<py::ssize_t> shape(t.shape().dims().begin(), t.shape().dims().end());
    return py::array(numpy_dtype(t.dtype()), std::move(shape));
  }
  auto* held = new Tensor(t.owns_memory() ? t : t.clone());
  py::capsule owner(held, [](void* p) { delete static_cast<Tensor*>(p); });
  const auto& dims = held->shape().dims();
  std::vector<py::ssize_t> shape(dims.begin(), dims.end());
  std::vector<py::ssize_t> strides;
  for (int64_t s : held->shape().strides()) strides.push_back(py::ssize_t(s * int64_t(dtype_size(held->dtype()))));
  return py::array(numpy_dtype(held->dtype()), std::move(shape), std::move(strides), held->raw(), owner);
}

}  // namespace fusor::python
