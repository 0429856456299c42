// The fused CPU forward: y = softmax(min(conv3d(x, weight, bias), dim), 1) computed one conv
// output row at a time; the (B, C_out, D_out, H_out, W_out) conv output never exists.
//
// Per task (tiling.h): pack a slab of x (any strides, any float dtype -> compute dtype),
// then for each output row (d, h): the SIMD row kernel computes all C_out x W_out conv
// values and, still in registers, folds them into a running min (dim=2: over d, dim=3:
// over h) or takes their min along the row (dim=4). Finally the channel softmax of each
// finished min column is written to y (and torch.min's indices to `argmin` when asked).
// Tasks are handed out dynamically to at::parallel_for workers, each with its own small
// scratch buffers.
#include "cpu/forward_cpu.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "cpu/conv_row_kernel.h"
#include "cpu/min_softmax.h"
#include "cpu/pack.h"
#include "cpu/tiling.h"

namespace fusedconv {
namespace {

using cpu::RowKernel;
using cpu::TaskRange;
using cpu::TilePlan;

// Below this many multiply-adds a second thread costs more than it saves.
constexpr int64_t kMinParallelMacs = int64_t{1} << 20;

template <typename scalar_t>
class FusedForward {
  using T = at::opmath_type<scalar_t>;  // float for float/bf16/fp16, double for double
  using I = cpu::index_t<T>;            // running argmin, stored beside the values

  // Per-worker buffers, allocated once per worker and reused for all of its tasks.
  struct Scratch {
    std::vector<T> slab, minv, softmax;
    std::vector<I> index;
  };

 public:
  FusedForward(const Problem& p, const at::Tensor& x, const at::Tensor& weight,
               const std::optional<at::Tensor>& bias, at::Tensor& y, int32_t* argmin)
      : p_(p),
        kernel_(cpu::best_row_kernel<T>()),
        x_(x.const_data_ptr<scalar_t>()),
        y_(y.mutable_data_ptr<scalar_t>()),
        argmin_(argmin) {
    for (int i = 0; i < 5; ++i) x_strides_[i] = x.stride(i);
    threads_ = std::max<int64_t>(1, at::get_num_threads());
    plan_ = cpu::plan_tiles(p, kernel_.w_tile, threads_, sizeof(T));
    taps_ = p.c_in * p.k_d * p.k_h * p.k_w;
    offsets_.resize(taps_);
    cpu::tap_offsets(p, plan_, offsets_.data());
    weight_.resize(p.c_out * taps_);
    cpu::pack_weight<scalar_t, T>(p, weight, kernel_.co_block, weight_.data());
    bias_.resize(p.c_out);
    cpu::pack_bias<scalar_t, T>(p, bias, bias_.data());
    // Min-buffer layout per group: [c_out][pos_stride]; dims 2/3 fold whole padded rows.
    pos_stride_ = p.dim == 4 ? plan_.tile_h : plan_.w_padded;
    group_size_ = p.c_out * pos_stride_;
  }

  void run() {
    const int64_t macs = p_.batch * p_.d_out * p_.h_out * plan_.w_padded * p_.c_out * taps_;
    const int64_t workers =
        macs < kMinParallelMacs ? 1 : std::min(threads_, plan_.num_tasks);
    std::atomic<int64_t> next{0};
    at::parallel_for(0, workers, 1, [&](int64_t, int64_t) {
      Scratch s = make_scratch();
      for (int64_t t = next.fetch_add(1); t < plan_.num_tasks; t = next.fetch_add(1)) {
        run_task(t, s);
      }
    });
  }

 private:
  Scratch make_scratch() const {
    Scratch s;
    s.slab.assign(plan_.slab_elements(p_.c_in), T(0));  // zero padding columns once
    s.minv.resize(plan_.groups_per_task * group_size_);
    s.index.resize(plan_.groups_per_task * group_size_);  // the kernel always tracks it
    s.softmax.resize(2 * plan_.positions);
    return s;
  }

  void run_task(int64_t t, Scratch& s) const {
    const TaskRange r = cpu::task_range(p_, plan_, t);
    cpu::pack_slab<scalar_t, T>(p_, plan_, r, x_, x_strides_, s.slab.data());
    const int64_t groups = p_.dim == 2 ? r.nh : r.nd;
    if (p_.dim != 4) cpu::init_min(s.minv.data(), s.index.data(), groups * group_size_);

    cpu::ConvRowArgs<T> a;
    a.tap_offsets = offsets_.data();
    a.taps = taps_;
    a.weight = weight_.data();
    a.bias = bias_.data();
    a.c_out = p_.c_out;
    a.w_tiles = plan_.w_padded / kernel_.w_tile;
    a.out_stride = pos_stride_;
    a.w_valid = p_.w_out;
    for (int64_t dl = 0; dl < r.nd; ++dl) {
      for (int64_t hl = 0; hl < r.nh; ++hl) {
        a.input = s.slab.data() + (dl * plan_.slab_h + hl) * plan_.slab_w;
        int64_t offset;
        if (p_.dim == 4) {  // min along this row, into position h of group d
          a.epilogue = cpu::RowEpilogue::MinAlongW;
          offset = dl * group_size_ + hl;
        } else {  // dim=2 folds rows over d (the task spans all of it), dim=3 over h
          a.epilogue = cpu::RowEpilogue::FoldMin;
          offset = (p_.dim == 2 ? hl : dl) * group_size_;
          a.at = static_cast<I>(p_.dim == 2 ? dl : hl);
        }
        a.out = s.minv.data() + offset;
        a.index = s.index.data() + offset;
        kernel_.run(a);
      }
    }
    write_groups(s, r, groups);
  }

  // Softmax of each finished min group into y viewed as (B, C_out, G, P) (see tiling.h).
  void write_groups(Scratch& s, const TaskRange& r, int64_t groups) const {
    const int64_t g0 = p_.dim == 2 ? r.h0 : r.d0;
    const int64_t G = plan_.groups, P = plan_.positions;
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t y_offset = (r.b * p_.c_out * G + g0 + g) * P;
      cpu::softmax_channels(s.minv.data() + g * group_size_, pos_stride_, p_.c_out, P,
                            s.softmax.data(), y_ + y_offset, G * P);
      if (argmin_ == nullptr) continue;
      for (int64_t co = 0; co < p_.c_out; ++co) {
        const I* src = s.index.data() + g * group_size_ + co * pos_stride_;
        int32_t* dst = argmin_ + y_offset + co * G * P;
        for (int64_t pos = 0; pos < P; ++pos) dst[pos] = static_cast<int32_t>(src[pos]);
      }
    }
  }

  const Problem& p_;
  const RowKernel<T>& kernel_;
  const scalar_t* x_;
  int64_t x_strides_[5];
  scalar_t* y_;
  int32_t* argmin_;
  int64_t threads_ = 1;
  TilePlan plan_;
  int64_t taps_ = 0, pos_stride_ = 0, group_size_ = 0;
  std::vector<int64_t> offsets_;
  std::vector<T> weight_, bias_;
};

}  // namespace

at::Tensor fused_forward_cpu(const Problem& p, const at::Tensor& x, const at::Tensor& weight,
                             const std::optional<at::Tensor>& bias, at::Tensor* argmin) {
  at::Tensor y = at::empty(p.output_sizes(), x.options());
  int32_t* argmin_ptr = nullptr;
  if (argmin != nullptr) {
    *argmin = at::empty(p.output_sizes(), x.options().dtype(at::kInt));
    argmin_ptr = argmin->mutable_data_ptr<int32_t>();
  }
  if (p.batch == 0) return y;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x.scalar_type(), "fusedconv_cpu", [&] {
    FusedForward<scalar_t>(p, x, weight, bias, y, argmin_ptr).run();
  });
  return y;
}

namespace {

at::Tensor forward_cpu(const at::Tensor& x, const at::Tensor& weight,
                       const std::optional<at::Tensor>& bias, int64_t dim) {
  const Problem p = check_inputs(x, weight, bias, dim);
  return fused_forward_cpu(p, x, weight, bias, nullptr);
}

std::string kernel_path_cpu(const at::Tensor& x, const at::Tensor& weight,
                            const std::optional<at::Tensor>& bias, int64_t dim) {
  check_inputs(x, weight, bias, dim);
  return "cpu-fused";  // every valid input: all dims, dtypes and layouts
}

}  // namespace

TORCH_LIBRARY_IMPL(fusedconv, CPU, m) {
  m.impl("forward", &forward_cpu);
  m.impl("kernel_path", &kernel_path_cpu);
}

}  // namespace fusedconv
