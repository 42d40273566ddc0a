// A pass failure that does not name an op has no location: match it with @unknown.
// expected-error @unknown {{could not find a nested named sequence with name: __transform_main}}
func.func @f() {
  func.return
}
