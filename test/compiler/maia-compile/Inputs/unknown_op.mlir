func.func @k(%x: memref<?xf32>) attributes {maia.kernel} {
  "foo.bar"() : () -> ()
  return
}
