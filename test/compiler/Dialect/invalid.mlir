// RUN: maia-opt %s -split-input-file -verify-diagnostics

func.func @k() attributes {maia.kernel} {
  // expected-error @+1 {{'maia.program_id' op dimension 3 is out of range: the grid has dimensions 0, 1 and 2}}
  %0 = maia.program_id 3
  return
}

// -----

func.func @k() attributes {maia.kernel} {
  // expected-error @+1 {{'maia.num_programs' op dimension -1 is out of range}}
  %0 = maia.num_programs -1
  return
}

// -----

func.func @not_a_kernel() {
  // expected-error @+1 {{'maia.program_id' op must be inside a 'maia.kernel' function}}
  %0 = maia.program_id 0
  return
}

// -----

func.func @k() attributes {maia.kernel, maia.grid_rank = 1} {
  // expected-error @+1 {{'maia.program_id' op dimension 1 is not below the kernel's maia.grid_rank 1}}
  %0 = maia.program_id 1
  return
}

// -----

// expected-error @+1 {{'func.func' op kernel must not return values (it returns 1)}}
func.func @returns(%x: f32) -> f32 attributes {maia.kernel} {
  return %x : f32
}

// -----

// expected-error @+1 {{'func.func' op kernel argument #0 of type 'memref<?xcomplex<f32>>' has an unsupported element type}}
func.func @complex(%x: memref<?xcomplex<f32>>) attributes {maia.kernel} {
  return
}

// -----

// expected-error @+1 {{'func.func' op kernel argument #1 of type 'i128' is not a supported kernel argument}}
func.func @wide(%x: memref<?xf32>, %y: i128) attributes {maia.kernel} {
  return
}

// -----

// expected-error @+1 {{'func.func' op kernel argument #0 of type 'memref<*xf32>' is unranked}}
func.func @unranked(%x: memref<*xf32>) attributes {maia.kernel} {
  return
}

// -----

// expected-error @+1 {{has rank 9; at most 8 is supported}}
func.func @rank9(%x: memref<1x1x1x1x1x1x1x1x1xf32>) attributes {maia.kernel} {
  return
}

// -----

// expected-error @+1 {{is in memory space 1 : i64; kernels take device memory}}
func.func @space(%x: memref<?xf32, 1>) attributes {maia.kernel} {
  return
}

// -----

// expected-error @+1 {{does not have a strided layout}}
func.func @layout(%x: memref<4x4xf32, affine_map<(d0, d1) -> (d0 floordiv 2, d1)>>) attributes {maia.kernel} {
  return
}

// -----

// expected-error @+1 {{has the static offset 5; kernel arguments take offset 0 or a dynamic offset}}
func.func @static_offset(%x: memref<?xf32, strided<[1], offset: 5>>) attributes {maia.kernel} {
  return
}

// -----

// expected-error @+1 {{'func.func' op kernel must have a body}}
func.func @declaration(%x: memref<?xf32>) attributes {maia.kernel}

// -----

// expected-error @+1 {{'func.func' op kernel must be public: it is an entry point}}
func.func private @hidden() attributes {maia.kernel} {
  return
}

// -----

// expected-error @+1 {{'maia.kernel' must be a unit attribute}}
func.func @valued() attributes {maia.kernel = 1 : i32} {
  return
}

// -----

// expected-error @+1 {{'maia.grid_rank' must be an integer in 1..3}}
func.func @rank4() attributes {maia.kernel, maia.grid_rank = 4} {
  return
}

// -----

// expected-error @+1 {{'maia.grid_rank' is only valid on a 'maia.kernel' function}}
func.func @rank_without_kernel() attributes {maia.grid_rank = 1} {
  return
}

// -----

// expected-error @+1 {{unknown maia attribute 'maia.kernal'}}
func.func @typo() attributes {maia.kernal} {
  return
}

// -----

// expected-error @+1 {{'maia.kernel' is only valid on functions}}
module attributes {maia.kernel} {
}

// -----

// expected-error @+1 {{'maia.libm' is only valid on math operations}}
func.func @libm_on_a_function() attributes {maia.libm} {
  return
}

// -----

func.func @libm_not_unit(%x: f32) -> f32 {
  // expected-error @+1 {{'maia.libm' must be a unit attribute}}
  %0 = math.sin %x {maia.libm = 1 : i32} : f32
  return %0 : f32
}

// -----

// float64 erfc is libm's: the op takes f16, bf16 and f32 only.
func.func @erfc_f64(%x: f64) -> f64 {
  // expected-error @+1 {{'maia.erfc' op operand #0 must be}}
  %0 = maia.erfc %x : f64
  return %0 : f64
}
