func.func @maia_metadata() attributes {maia.kernel} {
  return
}
