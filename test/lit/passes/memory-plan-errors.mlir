// RUN: kiln-opt %s --kiln-memory-plan --split-input-file --verify-diagnostics

// A static f32[2^61] is 2^63 bytes: no slot size can hold it. The planner
// refuses it by name instead of overflowing int64 (found by fuzzing).

func.func @too_large(%x: tensor<2305843009213693952xf32>) -> tensor<2305843009213693952xf32> {
  // expected-error @+1 {{result 0 of type 'tensor<2305843009213693952xf32>' needs more than 2^63 bytes; kiln cannot plan its memory}}
  %a = kiln.relu %x : (tensor<2305843009213693952xf32>) -> tensor<2305843009213693952xf32>
  return %a : tensor<2305843009213693952xf32>
}

// -----

// The static dims of a dynamic shape alone can overflow.

func.func @static_part_too_large(%x: tensor<?x2147483648x2147483648xf32>) -> tensor<?x2147483648x2147483648xf32> {
  // expected-error @+1 {{needs more than 2^63 bytes}}
  %a = kiln.relu %x : (tensor<?x2147483648x2147483648xf32>) -> tensor<?x2147483648x2147483648xf32>
  return %a : tensor<?x2147483648x2147483648xf32>
}

// -----

// Near miss: 2^60 f32 elements are 2^62 bytes, which fits, and a zero dim
// makes any other dims empty. Both are planned (--verify-diagnostics fails on
// any error not expected).

func.func @largest_that_fits(%x: tensor<1152921504606846976xf32>, %y: tensor<0x4611686018427387904xf32>) -> (tensor<1152921504606846976xf32>, tensor<0x4611686018427387904xf32>) {
  %a = kiln.relu %x : (tensor<1152921504606846976xf32>) -> tensor<1152921504606846976xf32>
  %b = kiln.relu %y : (tensor<0x4611686018427387904xf32>) -> tensor<0x4611686018427387904xf32>
  return %a, %b : tensor<1152921504606846976xf32>, tensor<0x4611686018427387904xf32>
}
