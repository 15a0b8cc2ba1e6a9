// RUN: kiln-opt %s -split-input-file -verify-diagnostics
// Verifier errors of the fused ops.

func.func @rms_scale_length(%x: tensor<2x64xf32>, %w: tensor<32xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{x's last dim and scale must agree, got 64 and 32}}
  %0 = kiln.rms_norm %x, %w {epsilon = 1.0e-6 : f32} : (tensor<2x64xf32>, tensor<32xf32>) -> tensor<2x64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @rms_f64(%x: tensor<2x64xf64>, %w: tensor<64xf64>) -> tensor<2x64xf64> {
  // expected-error @+1 {{computes in f32, f16 or bf16, not 'f64'}}
  %0 = kiln.rms_norm %x, %w {epsilon = 1.0e-6 : f32} : (tensor<2x64xf64>, tensor<64xf64>) -> tensor<2x64xf64>
  return %0 : tensor<2x64xf64>
}

// -----

// Near-miss of a half norm's f32 scale: another half type is refused.
func.func @rms_scale_other_half(%x: tensor<2x64xbf16>, %w: tensor<64xf16>) -> tensor<2x64xbf16> {
  // expected-error @+1 {{scale must be 'bf16' or f32, got 'f16'}}
  %0 = kiln.rms_norm %x, %w {epsilon = 1.0e-6 : f32} : (tensor<2x64xbf16>, tensor<64xf16>) -> tensor<2x64xbf16>
  return %0 : tensor<2x64xbf16>
}

// -----

// f32 cos with a bf16 sin: the two tables share a type.
func.func @rotary_tables_differ(%x: tensor<1x2x3x16xbf16>, %c: tensor<1x1x3x16xf32>, %s: tensor<1x1x3x16xbf16>) -> tensor<1x2x3x16xbf16> {
  // expected-error @+1 {{operands and results must share the element type 'f32', got 'bf16'}}
  %0 = kiln.rotary %x, %c, %s {interleaved = 0 : i64, rotary_dim = 16 : i64} : (tensor<1x2x3x16xbf16>, tensor<1x1x3x16xf32>, tensor<1x1x3x16xbf16>) -> tensor<1x2x3x16xbf16>
  return %0 : tensor<1x2x3x16xbf16>
}

// -----

func.func @add_norm_shapes(%a: tensor<2x64xf32>, %b: tensor<1x64xf32>, %w: tensor<64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{a and b must have the same shape}}
  %0:2 = kiln.add_rms_norm %a, %b, %w {epsilon = 1.0e-6 : f32} : (tensor<2x64xf32>, tensor<1x64xf32>, tensor<64xf32>) -> (tensor<2x64xf32>, tensor<2x64xf32>)
  return %0#1 : tensor<2x64xf32>
}

// -----

func.func @gelu_mode(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{approximate must be 'none' or 'tanh', got 'fast'}}
  %0 = kiln.gelu %x {approximate = "fast"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @linear_activation(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{activation must be one of 'none' 'relu' 'gelu' 'gelu_tanh' 'silu', got 'swish'}}
  %0 = kiln.linear %x, %w {activation = "swish"} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @linear_k(%x: tensor<2x8xf32>, %w: tensor<16x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{x's last dim and w's rows must agree, got 8 and 16}}
  %0 = kiln.linear %x, %w {activation = "none"} : (tensor<2x8xf32>, tensor<16x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @gated_halves(%x: tensor<2x8xf32>, %wgu: tensor<8x12xf32>, %wd: tensor<4x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{w_gate_up's columns (12) must be twice w_down's rows (4)}}
  %0 = kiln.gated_mlp %x, %wgu, %wd {activation = "silu"} : (tensor<2x8xf32>, tensor<8x12xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @gated_relu(%x: tensor<2x8xf32>, %wgu: tensor<8x8xf32>, %wd: tensor<4x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{activation must be one of 'silu' 'gelu' 'gelu_tanh', got 'relu'}}
  %0 = kiln.gated_mlp %x, %wgu, %wd {activation = "relu"} : (tensor<2x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @rotary_odd(%x: tensor<1x2x3x16xf32>, %c: tensor<1x1x3x7xf32>) -> tensor<1x2x3x16xf32> {
  // expected-error @+1 {{rotary_dim must be positive and even, got 7}}
  %0 = kiln.rotary %x, %c, %c {interleaved = 0 : i64, rotary_dim = 7 : i64} : (tensor<1x2x3x16xf32>, tensor<1x1x3x7xf32>, tensor<1x1x3x7xf32>) -> tensor<1x2x3x16xf32>
  return %0 : tensor<1x2x3x16xf32>
}

// -----

func.func @rotary_too_wide(%x: tensor<1x2x3x16xf32>, %c: tensor<1x1x3x32xf32>) -> tensor<1x2x3x16xf32> {
  // expected-error @+1 {{rotary_dim 32 exceeds x's last dim 16}}
  %0 = kiln.rotary %x, %c, %c {interleaved = 0 : i64, rotary_dim = 32 : i64} : (tensor<1x2x3x16xf32>, tensor<1x1x3x32xf32>, tensor<1x1x3x32xf32>) -> tensor<1x2x3x16xf32>
  return %0 : tensor<1x2x3x16xf32>
}

// -----

func.func @rotary_table_dims(%x: tensor<1x2x3x16xf32>, %c: tensor<1x1x5x16xf32>) -> tensor<1x2x3x16xf32> {
  // expected-error @+1 {{cos dim 2 (5) must be 1 or x's (3)}}
  %0 = kiln.rotary %x, %c, %c {interleaved = 0 : i64, rotary_dim = 16 : i64} : (tensor<1x2x3x16xf32>, tensor<1x1x5x16xf32>, tensor<1x1x5x16xf32>) -> tensor<1x2x3x16xf32>
  return %0 : tensor<1x2x3x16xf32>
}

// -----

func.func @attention_heads(%q: tensor<1x6x3x16xf32>, %k: tensor<1x4x3x16xf32>) -> tensor<1x6x3x16xf32> {
  // expected-error @+1 {{q's heads (6) must be a multiple of k's (4)}}
  %0 = kiln.attention %q, %k, %k {causal = 0 : i64, scale = 0.25 : f32} : (tensor<1x6x3x16xf32>, tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>) -> tensor<1x6x3x16xf32>
  return %0 : tensor<1x6x3x16xf32>
}

// -----

func.func @attention_head_dim(%q: tensor<1x4x3x16xf32>, %k: tensor<1x4x3x8xf32>) -> tensor<1x4x3x8xf32> {
  // expected-error @+1 {{q's and k's head dims must agree, got 16 and 8}}
  %0 = kiln.attention %q, %k, %k {causal = 0 : i64, scale = 0.25 : f32} : (tensor<1x4x3x16xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>) -> tensor<1x4x3x8xf32>
  return %0 : tensor<1x4x3x8xf32>
}

// -----

func.func @attention_mask_type(%q: tensor<1x4x3x16xf32>, %m: tensor<1x1x3x3xi64>) -> tensor<1x4x3x16xf32> {
  // expected-error @+1 {{mask must be i1 or q's element type, got 'i64'}}
  %0 = kiln.attention %q, %q, %q, %m {causal = 0 : i64, scale = 0.25 : f32} : (tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>, tensor<1x1x3x3xi64>) -> tensor<1x4x3x16xf32>
  return %0 : tensor<1x4x3x16xf32>
}

// -----

func.func @attention_causal(%q: tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32> {
  // expected-error @+1 {{causal must be 0 or 1, got 2}}
  %0 = kiln.attention %q, %q, %q {causal = 2 : i64, scale = 0.25 : f32} : (tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %0 : tensor<1x4x3x16xf32>
}

// -----

func.func @paged_cache_heads(%q: tensor<1x4x3x16xf32>, %k: tensor<1x2x3x16xf32>, %kc: tensor<8x4x16x16xf32>, %i: tensor<3xi64>, %bt: tensor<1x4xi64>) -> tensor<1x4x3x16xf32> {
  // expected-error @+1 {{k_new's and k_cache's heads must agree, got 2 and 4}}
  %0 = kiln.paged_attention %q, %k, %k, %kc, %kc, %i, %i, %i, %bt {scale = 0.25 : f32} : (tensor<1x4x3x16xf32>, tensor<1x2x3x16xf32>, tensor<1x2x3x16xf32>, tensor<8x4x16x16xf32>, tensor<8x4x16x16xf32>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<1x4xi64>) -> tensor<1x4x3x16xf32>
  return %0 : tensor<1x4x3x16xf32>
}

// -----

func.func @paged_block_tables_rank(%q: tensor<1x4x3x16xf32>, %k: tensor<1x2x3x16xf32>, %kc: tensor<8x2x16x16xf32>, %i: tensor<3xi64>) -> tensor<1x4x3x16xf32> {
  // expected-error @+1 {{block_tables must have rank 2}}
  %0 = kiln.paged_attention %q, %k, %k, %kc, %kc, %i, %i, %i, %i {scale = 0.25 : f32} : (tensor<1x4x3x16xf32>, tensor<1x2x3x16xf32>, tensor<1x2x3x16xf32>, tensor<8x2x16x16xf32>, tensor<8x2x16x16xf32>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>) -> tensor<1x4x3x16xf32>
  return %0 : tensor<1x4x3x16xf32>
}

// -----

func.func @paged_layout(%q: tensor<1x4x3x16xf32>, %k: tensor<1x2x3x16xf32>, %kc: tensor<8x2x16x16xf32>, %i: tensor<3xi64>, %bt: tensor<1x4xi64>) -> tensor<1x4x3x16xf32> {
  // expected-error @+1 {{layout must be "bhsd" or "bshd", got "sbhd"}}
  %0 = kiln.paged_attention %q, %k, %k, %kc, %kc, %i, %i, %i, %bt {layout = "sbhd", scale = 0.25 : f32} : (tensor<1x4x3x16xf32>, tensor<1x2x3x16xf32>, tensor<1x2x3x16xf32>, tensor<8x2x16x16xf32>, tensor<8x2x16x16xf32>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<1x4xi64>) -> tensor<1x4x3x16xf32>
  return %0 : tensor<1x4x3x16xf32>
}

// -----

// bshd reads the heads from dim 2: k_new [1, T = 2, Hkv = 3, D] against a
// cache of 2 heads.
func.func @paged_bshd_heads(%q: tensor<1x2x6x16xf32>, %k: tensor<1x2x3x16xf32>, %kc: tensor<8x2x16x16xf32>, %i: tensor<2xi64>, %bt: tensor<1x4xi64>) -> tensor<1x2x6x16xf32> {
  // expected-error @+1 {{k_new's and k_cache's heads must agree, got 3 and 2}}
  %0 = kiln.paged_attention %q, %k, %k, %kc, %kc, %i, %i, %i, %bt {layout = "bshd", scale = 0.25 : f32} : (tensor<1x2x6x16xf32>, tensor<1x2x3x16xf32>, tensor<1x2x3x16xf32>, tensor<8x2x16x16xf32>, tensor<8x2x16x16xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<1x4xi64>) -> tensor<1x2x6x16xf32>
  return %0 : tensor<1x2x6x16xf32>
}

// -----

func.func @linear_q8_scale_length(%x: tensor<2x8xf32>, %w: tensor<8x4xi8>, %s: tensor<3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{w's columns and scale must agree, got 4 and 3}}
  %0 = kiln.linear_q8 %x, %w, %s {activation = "none"} : (tensor<2x8xf32>, tensor<8x4xi8>, tensor<3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @linear_q8_half_x(%x: tensor<2x8xf16>, %w: tensor<8x4xi8>, %s: tensor<4xf32>) -> tensor<2x4xf16> {
  // expected-error @+1 {{x must be f32, got 'f16'}}
  %0 = kiln.linear_q8 %x, %w, %s {activation = "none"} : (tensor<2x8xf16>, tensor<8x4xi8>, tensor<4xf32>) -> tensor<2x4xf16>
  return %0 : tensor<2x4xf16>
}

// -----

func.func @linear_q8_f32_weight(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>, %s: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{operand #1 must be tensor of 8-bit signless integer values}}
  %0 = kiln.linear_q8 %x, %w, %s {activation = "none"} : (tensor<2x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @linear_q8_k(%x: tensor<2x8xf32>, %w: tensor<16x4xi8>, %s: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{x's last dim and w's rows must agree, got 8 and 16}}
  %0 = kiln.linear_q8 %x, %w, %s {activation = "none"} : (tensor<2x8xf32>, tensor<16x4xi8>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @gated_mlp_q8_down_scale(%x: tensor<2x8xf32>, %wgu: tensor<8x6xi8>, %sgu: tensor<6xf32>, %wd: tensor<3x8xi8>, %sd: tensor<3xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{w_down's columns and scale must agree, got 8 and 3}}
  %0 = kiln.gated_mlp_q8 %x, %wgu, %sgu, %wd, %sd {activation = "silu"} : (tensor<2x8xf32>, tensor<8x6xi8>, tensor<6xf32>, tensor<3x8xi8>, tensor<3xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @gated_mlp_q8_activation(%x: tensor<2x8xf32>, %wgu: tensor<8x6xi8>, %sgu: tensor<6xf32>, %wd: tensor<3x8xi8>, %sd: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{activation must be one of}}
  %0 = kiln.gated_mlp_q8 %x, %wgu, %sgu, %wd, %sd {activation = "none"} : (tensor<2x8xf32>, tensor<8x6xi8>, tensor<6xf32>, tensor<3x8xi8>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @linear_q8_activations(%x: tensor<2x8xf32>, %w: tensor<8x4xi8>, %s: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{activations must be 'f32' or 'int8', got 'int4'}}
  %0 = kiln.linear_q8 %x, %w, %s {activation = "none", activations = "int4"} : (tensor<2x8xf32>, tensor<8x4xi8>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @paged_window(%q: tensor<1x4x3x16xf32>, %k: tensor<1x2x3x16xf32>, %kc: tensor<8x2x16x16xf32>, %i: tensor<3xi64>, %bt: tensor<1x4xi64>) -> tensor<1x4x3x16xf32> {
  // expected-error @+1 {{window must be positive (absent for none), got 0}}
  %0 = kiln.paged_attention %q, %k, %k, %kc, %kc, %i, %i, %i, %bt {scale = 0.25 : f32, window = 0 : i64} : (tensor<1x4x3x16xf32>, tensor<1x2x3x16xf32>, tensor<1x2x3x16xf32>, tensor<8x2x16x16xf32>, tensor<8x2x16x16xf32>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<1x4xi64>) -> tensor<1x4x3x16xf32>
  return %0 : tensor<1x4x3x16xf32>
}

// -----

func.func @attention_softcap(%q: tensor<1x4x3x16xf32>, %k: tensor<1x2x3x16xf32>) -> tensor<1x4x3x16xf32> {
  // expected-error @+1 {{softcap must be finite and positive (absent for none), got -5}}
  %0 = kiln.attention %q, %k, %k {causal = 1 : i64, scale = 0.25 : f32, softcap = -5.0 : f32} : (tensor<1x4x3x16xf32>, tensor<1x2x3x16xf32>, tensor<1x2x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %0 : tensor<1x4x3x16xf32>
}

// -----

func.func @moe_top_k(%x: tensor<?x64xf32>, %wr: tensor<64x8xf32>, %wgu: tensor<8x64x64xf32>, %wd: tensor<8x32x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{top_k must be in [1, experts], got 9}}
  %0 = kiln.moe %x, %wr, %wgu, %wd {activation = "silu", normalize = 1 : i64, top_k = 9 : i64} : (tensor<?x64xf32>, tensor<64x8xf32>, tensor<8x64x64xf32>, tensor<8x32x64xf32>) -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @moe_experts(%x: tensor<?x64xf32>, %wr: tensor<64x8xf32>, %wgu: tensor<4x64x64xf32>, %wd: tensor<4x32x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{router_w's experts and w_gate_up's must agree, got 8 and 4}}
  %0 = kiln.moe %x, %wr, %wgu, %wd {activation = "silu", normalize = 1 : i64, top_k = 2 : i64} : (tensor<?x64xf32>, tensor<64x8xf32>, tensor<4x64x64xf32>, tensor<4x32x64xf32>) -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}
