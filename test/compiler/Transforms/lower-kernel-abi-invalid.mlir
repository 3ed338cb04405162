// RUN: maia-opt %s -split-input-file -maia-lower-kernel-abi -verify-diagnostics

// expected-error @+1 {{'func.func' op kernel is referenced in the module; kernels are entry points that only the driver calls}}
func.func @k() attributes {maia.kernel} {
  return
}
func.func private @caller() {
  func.call @k() : () -> ()
  return
}
