// LlamaModel's decode step (one row of forward(), or decode_batch's rows) as one pool call
// (kernels/team.h): the threads split each step and meet at a barrier before the next reads what they
// wrote. Each thread normalizes and rounds a product's input itself (into its own buffer) rather
// than waiting while one thread does it; every value is computed by the kernels the op-by-op step
// calls, on the same inputs, so it has their bits.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/attention.h"
#include "kernels/ops.h"
#include "kernels/team.h"
#include "model/llama.h"

namespace smolvlm {

void LlamaModel::position_heads(const Layer& l, float* q_row, float* k_row, int64_t h0, int64_t h1,
                                const float* rope_row, ThreadPool& pool) const {
  const int64_t D = cfg_.head_dim, qh = cfg_.num_attention_heads, kvh = cfg_.num_key_value_heads;
  const float eps = static_cast<float>(cfg_.rms_norm_eps);
  const auto heads = [&](float* first, int64_t n, int64_t row_heads, const std::vector<float>& norm) {
    if (n <= 0) return;
    rope_rotate_half(first, 1, row_heads * D, n, D, rope_row, pool);
    if (cfg_.qk_norm) rms_norm(first, n, D, norm.data(), eps, first, pool);
  };
  const int64_t q0 = std::min(h0, qh), q1 = std::min(h1, qh);
  const int64_t k0 = std::clamp<int64_t>(h0 - qh, 0, kvh), k1 = std::clamp<int64_t>(h1 - qh, 0, kvh);
  heads(q_row + q0 * D, q1 - q0, qh, l.q_norm);
  heads(k_row + k0 * D, k1 - k0, kvh, l.k_norm);
}

void LlamaModel::decode_team(float* x, int64_t rows, const int64_t* positions, const KvView* kvs, Scratch& s,
                             ThreadPool& pool, float* logits) const {
  const int64_t H = cfg_.hidden_size, I = cfg_.intermediate_size, D = cfg_.head_dim;
  const int64_t qh = cfg_.num_attention_heads, kvh = cfg_.num_key_value_heads, qd = qh * D, kvd = kvh * D;
  const float eps = static_cast<float>(cfg_.rms_norm_eps);
  if (rows > kMaxDecodeRows) throw internal_error("LlamaModel::decode_team: " + std::to_string(rows) + " rows");
  run_team(pool, [&](Team& team) {
    thread_local std::vector<float> normed;  // this thread's RMSNorm of x, the input it rounds
    normed.resize(static_cast<size_t>(rows * H));
    const int64_t h0 = team.first(H), h1 = team.last(H);  // this thread's columns of o, down and x
    // The residual on this thread's columns of every row.
    const auto add_columns = [&](const float* y) {
      for (int64_t m = 0; m < rows; ++m) add_inplace(x + m * H + h0, y + m * H + h0, h1 - h0, pool);
    };
    for (size_t li = 0; li < layers_.size(); ++li) {
      const Layer& l = layers_[li];
      const int64_t layer = static_cast<int64_t>(li);
      rms_norm(x, rows, H, l.input_norm.data(), eps, normed.data(), pool);
      const LinearOutput qkv[] = {{l.q, optional_bias(l.q_b), s.q.data()},
                                  {l.k, optional_bias(l.k_b), s.k_new.data()},
                                  {l.v, optional_bias(l.v_b), s.v_new.data()}};
      linear_shared_input_share(normed.data(), rows, qkv, pool, team.first(qd + 2 * kvd), team.last(qd + 2 * kvd));
      team.sync();
      // RoPE (and the heads' norms) by (row, head); a kv head's key and value then go to the row's cache.
      const int64_t heads = qh + kvh;
      for (int64_t item = team.first(rows * heads); item < team.last(rows * heads);) {
        const int64_t m = item / heads, h = item % heads, end = std::min(team.last(rows * heads), (m + 1) * heads);
        const int64_t last = h + (end - item);
        position_heads(l, s.q.data() + m * qd, s.k_new.data() + m * kvd, h, last, s.rope.data() + m * D, pool);
        const int64_t k0 = std::clamp<int64_t>(h - qh, 0, kvh), k1 = std::clamp<int64_t>(last - qh, 0, kvh);
        const KvView& kv = kvs[m];
        const int64_t at = (layer * kv.capacity + positions[m]) * kvd + k0 * D;
        const size_t bytes = static_cast<size_t>((k1 - k0) * D) * sizeof(float);
        if (bytes > 0) {
          std::memcpy(kv.k + at, s.k_new.data() + m * kvd + k0 * D, bytes);
          std::memcpy(kv.v + at, s.v_new.data() + m * kvd + k0 * D, bytes);
        }
        item = end;
      }
      team.sync();
      AttentionArgs args[kMaxDecodeRows];
      for (int64_t m = 0; m < rows; ++m)
        args[m] = attention_args(layer, 1, positions[m], kvs[m], s.q.data() + m * qd, s.attn.data() + m * qd);
      attention_single_rows_part({args, static_cast<size_t>(rows)}, AttentionShape{qh, kvh, D}, team.index(),
                                 team.size());
      team.sync();
      const LinearOutput o[] = {{l.o, optional_bias(l.o_b), s.proj.data()}};
      linear_shared_input_share(s.attn.data(), rows, o, pool, h0, h1);
      add_columns(s.proj.data());
      team.sync();
      // gate and up on this thread's columns, then silu(gate) * up on them.
      rms_norm(x, rows, H, l.post_norm.data(), eps, normed.data(), pool);
      const LinearOutput gate_up[] = {{l.gate, optional_bias(l.gate_b), s.gate.data()},
                                      {l.up, optional_bias(l.up_b), s.up.data()}};
      const int64_t i0 = team.first(I), i1 = team.last(I);
      linear_shared_input_share(normed.data(), rows, gate_up, pool, i0, i1, /*columns=*/true);
      for (int64_t m = 0; m < rows; ++m) silu_mul(s.gate.data() + m * I + i0, s.up.data() + m * I + i0, i1 - i0, pool);
      team.sync();
      const LinearOutput down[] = {{l.down, optional_bias(l.down_b), s.proj.data()}};
      linear_shared_input_share(s.gate.data(), rows, down, pool, h0, h1);
      add_columns(s.proj.data());
      team.sync();
    }
    rms_norm(x, rows, H, final_norm_.data(), eps, normed.data(), pool);
    const LinearOutput head[] = {{lm_head_, nullptr, logits}};
    linear_shared_input_share(normed.data(), rows, head, pool, team.first(lm_head_.rows), team.last(lm_head_.rows));
  });
}

}  // namespace smolvlm
